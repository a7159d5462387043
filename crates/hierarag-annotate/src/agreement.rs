//! Agreement of the annotators with each other and with the benchmark (docs/design.md,
//! "Human validation"): Fleiss' κ per scale, answer quality, category agreement against chance, and its
//! link to the Coherence Ratio.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use hierarag_analysis::Analysis;
pub use hierarag_analysis::{
    Agreement, BaselineTest, CategoryAgreement, CoherenceLink, PairKappa, PickAgreement, Quality,
    ScaleAgreement, Share, TaggerAnnotator,
};
use hierarag_stats::{
    aggregate_raters, binomial_greater, cohen_kappa, fleiss_kappa, point_biserial,
};
use hierarag_taxonomy::Taxonomy;
use serde::{Deserialize, Serialize};

use crate::store::{Item, MAX_ANSWERABILITY, MAX_CORRECTNESS, MAX_HALLUCINATION, Rating};

pub use hierarag_records::AGREEMENT_FILE;

/// The parent of every category that has one, per dimension: the taxonomy as it was when the
/// sample was drawn (kept in the store's meta under [`CategoryParents::META_KEY`]), so that a
/// pick's parent is known even for categories no sampled question was generated for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CategoryParents(pub BTreeMap<String, BTreeMap<String, String>>);

impl CategoryParents {
    /// The store meta key holding these parents as JSON.
    pub const META_KEY: &'static str = "category_parents";

    pub fn from_taxonomy(taxonomy: &Taxonomy) -> CategoryParents {
        let mut parents: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for dimension in &taxonomy.dimensions {
            for level in &dimension.levels {
                for category in &level.categories {
                    if let Some(parent) = &category.parent {
                        parents
                            .entry(dimension.key.clone())
                            .or_default()
                            .insert(category.name.clone(), parent.clone());
                    }
                }
            }
        }
        CategoryParents(parents)
    }

    /// The parents kept in a store's meta entries, if there (and readable).
    pub fn from_meta(meta: &[(String, String)]) -> Option<CategoryParents> {
        meta.iter()
            .find(|(key, _)| key == Self::META_KEY)
            .and_then(|(_, value)| serde_json::from_str(value).ok())
    }

    /// The parent of a category of a dimension.
    pub fn parent(&self, dimension: &str, category: &str) -> Option<&str> {
        self.0.get(dimension)?.get(category).map(String::as_str)
    }
}

/// Computes the agreement statistics of these ratings of these items.
///
/// - **κ per scale**: Fleiss' κ (statsmodels' definition) over the items rated on the scale by
///   every annotator who rated anything on it, with categories 0..=max of the scale.
/// - **Quality**: per item over its raters: acceptable when the mean correctness is ≥ 2,
///   hallucination-free when every rater said 0, answerable when the mean answerability is ≥ 2.
/// - **Category agreement** on category-task items: *exact* when the pick is the intended
///   category; *parent-match* when the pick is the intended category or shares its parent
///   (a sibling; on a level without parents, parent-match is exact). Chance rates are
///   1/|choices| and |intended and its siblings among the choices|/|choices| (1/8 and 2/8 for
///   eight fine categories in pairs); the binomial p-value uses their mean over the picked items.
///   Pooled picks treat each annotator's pick as one trial, though picks of one item are not
///   independent.
/// - **Coherence link**: point-biserial r between "every pick on the item is a parent-match"
///   and ρ of the split (from `analysis`) whose children include the item's category.
///
/// Whatever cannot be computed (one annotator, no ratings, a constant variable) is `None` with
/// a note saying why; nothing here fails.
pub fn agreement(
    items: &[Item],
    ratings: &[Rating],
    parents: &CategoryParents,
    analysis: Option<&Analysis>,
) -> Agreement {
    let mut notes = Vec::new();
    // The answer task's items rate system answers, not the benchmark: they are measured
    // against the judge and the metrics (`judge_agreement`), not here.
    let answer_items: std::collections::HashSet<&str> = items
        .iter()
        .filter(|item| item.answer.is_some())
        .map(|item| item.item_id.as_str())
        .collect();
    let items: Vec<Item> = items
        .iter()
        .filter(|item| item.answer.is_none())
        .cloned()
        .collect();
    let items = items.as_slice();
    let ratings: Vec<Rating> = ratings
        .iter()
        .filter(|r| !answer_items.contains(r.item_id.as_str()))
        .cloned()
        .collect();
    let ratings = ratings.as_slice();
    let by_id: HashMap<&str, &Item> = items
        .iter()
        .map(|item| (item.item_id.as_str(), item))
        .collect();
    let unknown = ratings
        .iter()
        .filter(|r| !by_id.contains_key(r.item_id.as_str()))
        .count();
    if unknown > 0 {
        notes.push(format!(
            "{unknown} rating(s) of items not in the sample are left out"
        ));
    }
    let ratings: Vec<&Rating> = ratings
        .iter()
        .filter(|r| by_id.contains_key(r.item_id.as_str()))
        .collect();
    let annotators: Vec<String> = ratings
        .iter()
        .map(|r| r.annotator.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if ratings.is_empty() {
        notes.push("no ratings yet: nothing to compute".into());
    } else if annotators.len() == 1 {
        notes.push(format!(
            "one annotator ({}): κ needs two or more",
            annotators[0]
        ));
    }

    let scales = vec![
        scale_kappa(
            "correctness",
            MAX_CORRECTNESS,
            items,
            &ratings,
            |r| r.correctness,
            &mut notes,
        ),
        scale_kappa(
            "hallucination",
            MAX_HALLUCINATION,
            items,
            &ratings,
            |r| r.hallucination,
            &mut notes,
        ),
        scale_kappa(
            "answerability",
            MAX_ANSWERABILITY,
            items,
            &ratings,
            |r| r.answerability,
            &mut notes,
        ),
    ];
    let quality = quality(items, &ratings);
    let category = category_agreement(items, &ratings, parents, analysis, &mut notes);
    Agreement {
        n_items: items.len(),
        n_category_task: items.iter().filter(|item| item.category_task).count(),
        annotators,
        n_ratings: ratings.len(),
        scales,
        quality,
        category,
        notes,
        n_answer_items: answer_items.len(),
        judge: None,
    }
}

/// The values of one scale per item (in item order) and annotator.
pub(crate) fn scale_values<'a>(
    items: impl IntoIterator<Item = &'a Item>,
    ratings: impl IntoIterator<Item = &'a Rating>,
    value: impl Fn(&Rating) -> Option<u8>,
) -> Vec<(&'a Item, BTreeMap<&'a str, u8>)> {
    let mut values: HashMap<&str, BTreeMap<&str, u8>> = HashMap::new();
    for rating in ratings {
        if let Some(v) = value(rating) {
            values
                .entry(rating.item_id.as_str())
                .or_default()
                .insert(rating.annotator.as_str(), v);
        }
    }
    items
        .into_iter()
        .filter_map(|item| {
            values
                .remove(item.item_id.as_str())
                .map(|by_annotator| (item, by_annotator))
        })
        .collect()
}

fn scale_kappa(
    scale: &str,
    max: u8,
    items: &[Item],
    ratings: &[&Rating],
    value: impl Fn(&Rating) -> Option<u8>,
    notes: &mut Vec<String>,
) -> ScaleAgreement {
    let values = scale_values(items, ratings.iter().copied(), value);
    let raters: BTreeSet<&str> = values
        .iter()
        .flat_map(|(_, by_annotator)| by_annotator.keys().copied())
        .collect();
    let complete: Vec<Vec<usize>> = values
        .iter()
        .filter(|(_, by_annotator)| by_annotator.len() == raters.len())
        .map(|(_, by_annotator)| by_annotator.values().map(|&v| usize::from(v)).collect())
        .collect();
    let kappa = if raters.len() < 2 {
        None
    } else if complete.is_empty() {
        notes.push(format!(
            "κ of {scale}: no item is rated on it by all {} annotators who used it",
            raters.len()
        ));
        None
    } else {
        let kappa = fleiss_kappa(&aggregate_raters(&complete, usize::from(max) + 1));
        if kappa.is_none() {
            notes.push(format!(
                "κ of {scale}: undefined (every rating on the {} items is the same)",
                complete.len()
            ));
        }
        kappa
    };
    ScaleAgreement {
        scale: scale.to_string(),
        max,
        n_items: if raters.len() < 2 { 0 } else { complete.len() },
        raters: raters.into_iter().map(str::to_string).collect(),
        kappa,
    }
}

fn quality(items: &[Item], ratings: &[&Rating]) -> Quality {
    let mean = |values: &BTreeMap<&str, u8>| {
        values.values().map(|&v| f64::from(v)).sum::<f64>() / values.len() as f64
    };
    let correctness = scale_values(items, ratings.iter().copied(), |r| r.correctness);
    let acceptable = correctness.iter().filter(|(_, v)| mean(v) >= 2.0).count();
    let hallucination = scale_values(items, ratings.iter().copied(), |r| r.hallucination);
    let free = hallucination
        .iter()
        .filter(|(_, v)| v.values().all(|&h| h == 0))
        .count();
    let answerability = scale_values(items, ratings.iter().copied(), |r| r.answerability);
    let means: Vec<f64> = answerability.iter().map(|(_, v)| mean(v)).collect();
    Quality {
        acceptable: Share::of(acceptable, correctness.len()),
        hallucination_free: Share::of(free, hallucination.len()),
        answerability_mean: hierarag_stats::mean(&means),
        answerable: Share::of(means.iter().filter(|&&m| m >= 2.0).count(), means.len()),
    }
}

/// One category pick with what it is compared against.
struct Pick<'a> {
    item: &'a Item,
    annotator: &'a str,
    pick: &'a str,
    exact: bool,
    parent_match: bool,
    exact_baseline: f64,
    parent_baseline: f64,
}

fn category_agreement(
    items: &[Item],
    ratings: &[&Rating],
    parents: &CategoryParents,
    analysis: Option<&Analysis>,
    notes: &mut Vec<String>,
) -> Option<CategoryAgreement> {
    let by_id: HashMap<&str, &Item> = items
        .iter()
        .map(|item| (item.item_id.as_str(), item))
        .collect();
    let parent_of = |item: &Item, category: &str| -> Option<String> {
        parents
            .parent(&item.dimension, category)
            .map(str::to_string)
            .or_else(|| {
                (category == item.category)
                    .then(|| item.parent.clone())
                    .flatten()
            })
    };
    let mut picks: Vec<Pick<'_>> = Vec::new();
    for rating in ratings {
        let (Some(item), Some(pick)) = (
            by_id.get(rating.item_id.as_str()),
            rating.category_pick.as_deref(),
        ) else {
            continue;
        };
        if !item.category_task || item.choices.is_empty() {
            continue;
        }
        let intended_parent = parent_of(item, &item.category);
        let same_family = |category: &str| {
            category == item.category
                || intended_parent
                    .as_ref()
                    .is_some_and(|p| parent_of(item, category).as_ref() == Some(p))
        };
        let n_choices = item.choices.len() as f64;
        let family = item
            .choices
            .iter()
            .filter(|c| same_family(c))
            .count()
            .max(1);
        picks.push(Pick {
            item,
            annotator: rating.annotator.as_str(),
            pick,
            exact: pick == item.category,
            parent_match: same_family(pick),
            exact_baseline: 1.0 / n_choices,
            parent_baseline: family as f64 / n_choices,
        });
    }
    if picks.is_empty() {
        if items.iter().any(|item| item.category_task) {
            notes.push("category agreement: no category picks yet".into());
        }
        return None;
    }
    notes.push(
        "category agreement: exact = the pick is the intended category; parent-match = the pick \
         is the intended category or a sibling (same parent), which on a level without parents \
         is exact"
            .into(),
    );
    let baselines: BTreeSet<u64> = picks.iter().map(|p| p.exact_baseline.to_bits()).collect();
    if baselines.len() > 1 {
        notes.push(
            "category agreement: items offer different numbers of choices, so each baseline is \
             the mean chance rate over the picked items"
                .into(),
        );
    }

    let annotators: BTreeSet<&str> = picks.iter().map(|p| p.annotator).collect();
    let per_annotator = annotators
        .iter()
        .map(|&name| {
            let theirs: Vec<&Pick<'_>> = picks.iter().filter(|p| p.annotator == name).collect();
            pick_agreement(Some(name.to_string()), &theirs)
        })
        .collect();
    let all: Vec<&Pick<'_>> = picks.iter().collect();
    let pooled = pick_agreement(None, &all);

    // Annotator pairs on the items both picked for.
    let mut by_annotator: BTreeMap<&str, HashMap<&str, &str>> = BTreeMap::new();
    for pick in &picks {
        by_annotator
            .entry(pick.annotator)
            .or_default()
            .insert(pick.item.item_id.as_str(), pick.pick);
    }
    let labels: BTreeMap<&str, usize> = picks
        .iter()
        .map(|p| p.pick)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .enumerate()
        .map(|(i, label)| (label, i))
        .collect();
    let names: Vec<&str> = by_annotator.keys().copied().collect();
    let mut pairs = Vec::new();
    for (i, a) in names.iter().enumerate() {
        for b in &names[i + 1..] {
            let (picks_a, picks_b) = (&by_annotator[a], &by_annotator[b]);
            let mut x = Vec::new();
            let mut y = Vec::new();
            for item in items {
                let id = item.item_id.as_str();
                if let (Some(pa), Some(pb)) = (picks_a.get(id), picks_b.get(id)) {
                    x.push(labels[pa]);
                    y.push(labels[pb]);
                }
            }
            let kappa = cohen_kappa(&x, &y);
            if kappa.is_none() {
                notes.push(format!(
                    "Cohen's κ of {a} and {b}: undefined ({} common items{})",
                    x.len(),
                    if x.is_empty() {
                        ""
                    } else {
                        ", all picks the same category"
                    }
                ));
            }
            pairs.push(PairKappa {
                a: a.to_string(),
                b: b.to_string(),
                n: x.len(),
                same: x.iter().zip(&y).filter(|(p, q)| p == q).count(),
                kappa,
            });
        }
    }
    if names.len() < 2 {
        notes.push("Cohen's κ on category picks needs two annotators".into());
    }

    let mut picked_items: Vec<&Item> = picks.iter().map(|p| p.item).collect();
    picked_items.sort_by_key(|item| item.position);
    picked_items.dedup_by_key(|item| item.item_id.as_str());
    let coherence = analysis.map(|analysis| {
        let mut agreed_flags = Vec::new();
        let mut rhos = Vec::new();
        let mut without_split = 0;
        for item in &picked_items {
            let Some(split) =
                analysis.split_containing(&item.dimension, item.level, &item.category)
            else {
                without_split += 1;
                continue;
            };
            let agreed = picks
                .iter()
                .filter(|p| p.item.item_id == item.item_id)
                .all(|p| p.parent_match);
            agreed_flags.push(agreed);
            rhos.push(split.rho.value);
        }
        if without_split > 0 {
            notes.push(format!(
                "coherence link: {without_split} item(s) with picks left out, their category in \
                 no split of the analysis"
            ));
        }
        let correlation = point_biserial(&agreed_flags, &rhos);
        if correlation.is_none() {
            notes.push(format!(
                "coherence link: point-biserial r undefined over {} item(s) (needs three or more, \
                 with both agreement and disagreement, and ρ not constant)",
                agreed_flags.len()
            ));
        }
        CoherenceLink {
            n: agreed_flags.len(),
            agreed: agreed_flags.iter().filter(|&&a| a).count(),
            without_split,
            r: correlation.map(|c| c.r),
            p: correlation.map(|c| c.p),
        }
    });
    if analysis.is_none() {
        notes.push("coherence link: no analysis (run `hierarag analyze` first)".into());
    }
    Some(CategoryAgreement {
        n_items: picked_items.len(),
        per_annotator,
        pooled,
        pairs,
        coherence,
    })
}

fn pick_agreement(annotator: Option<String>, picks: &[&Pick<'_>]) -> PickAgreement {
    let test = |hit: fn(&Pick<'_>) -> bool, baseline: fn(&Pick<'_>) -> f64| {
        let n = picks.len();
        let hits = picks.iter().filter(|p| hit(p)).count();
        let baseline = picks.iter().map(|p| baseline(p)).sum::<f64>() / n as f64;
        BaselineTest {
            hits,
            n,
            rate: hits as f64 / n as f64,
            baseline,
            p: binomial_greater(hits as u64, n as u64, baseline.clamp(0.0, 1.0)),
        }
    };
    PickAgreement {
        annotator,
        n: picks.len(),
        exact: test(|p| p.exact, |p| p.exact_baseline),
        parent: test(|p| p.parent_match, |p| p.parent_baseline),
    }
}

/// The tagger as one more annotator of the category task: its tag at each item's level
/// (`tagger_picks`, by item id) against the intended category and against each person's pick
/// (Cohen's κ on the items both picked for), and Fleiss' κ over the items every person picked
/// for, without and with the tagger. `None` when no item has both a human pick and a tag.
pub fn tagger_as_annotator(
    items: &[Item],
    ratings: &[Rating],
    tagger_picks: &HashMap<String, String>,
) -> Option<TaggerAnnotator> {
    let category_items: Vec<&Item> = items
        .iter()
        .filter(|item| item.category_task && tagger_picks.contains_key(&item.item_id))
        .collect();
    let category_ids: BTreeSet<&str> = category_items
        .iter()
        .map(|item| item.item_id.as_str())
        .collect();
    let mut picks: BTreeMap<&str, HashMap<&str, &str>> = BTreeMap::new();
    for rating in ratings {
        if let Some(pick) = rating.category_pick.as_deref()
            && category_ids.contains(rating.item_id.as_str())
        {
            picks
                .entry(rating.annotator.as_str())
                .or_default()
                .insert(rating.item_id.as_str(), pick);
        }
    }
    let picked: Vec<&Item> = category_items
        .iter()
        .copied()
        .filter(|item| {
            picks
                .values()
                .any(|p| p.contains_key(item.item_id.as_str()))
        })
        .collect();
    if picked.is_empty() {
        return None;
    }
    // One label space over every pick, the tagger's included.
    let labels: BTreeMap<&str, usize> = picks
        .values()
        .flat_map(|p| p.values().copied())
        .chain(
            picked
                .iter()
                .map(|item| tagger_picks[&item.item_id].as_str()),
        )
        .collect::<BTreeSet<_>>()
        .into_iter()
        .enumerate()
        .map(|(i, label)| (label, i))
        .collect();
    let exact = picked
        .iter()
        .filter(|item| tagger_picks[&item.item_id] == item.category)
        .count();
    let pairs = picks
        .iter()
        .map(|(name, theirs)| {
            let (mut x, mut y) = (Vec::new(), Vec::new());
            for item in &picked {
                if let Some(pick) = theirs.get(item.item_id.as_str()) {
                    x.push(labels[tagger_picks[&item.item_id].as_str()]);
                    y.push(labels[pick]);
                }
            }
            PairKappa {
                a: TAGGER.to_string(),
                b: name.to_string(),
                n: x.len(),
                same: x.iter().zip(&y).filter(|(p, q)| p == q).count(),
                kappa: cohen_kappa(&x, &y),
            }
        })
        .collect();
    let common: Vec<&Item> = picked
        .iter()
        .copied()
        .filter(|item| {
            picks
                .values()
                .all(|p| p.contains_key(item.item_id.as_str()))
        })
        .collect();
    let humans: Vec<Vec<usize>> = common
        .iter()
        .map(|item| {
            picks
                .values()
                .map(|p| labels[p[item.item_id.as_str()]])
                .collect()
        })
        .collect();
    let with_tagger: Vec<Vec<usize>> = humans
        .iter()
        .zip(&common)
        .map(|(row, item)| {
            let mut row = row.clone();
            row.push(labels[tagger_picks[&item.item_id].as_str()]);
            row
        })
        .collect();
    let fleiss = |rows: &[Vec<usize>]| {
        (!rows.is_empty())
            .then(|| fleiss_kappa(&aggregate_raters(rows, labels.len())))
            .flatten()
    };
    Some(TaggerAnnotator {
        n_items: picked.len(),
        exact: Share::of(exact, picked.len()).expect("items were picked"),
        pairs,
        n_common: common.len(),
        // κ among the people needs two of them; with the tagger one is enough.
        fleiss_humans: (picks.len() >= 2).then(|| fleiss(&humans)).flatten(),
        fleiss_with_tagger: fleiss(&with_tagger),
    })
}

/// The name of the tagger among the annotators.
pub const TAGGER: &str = "tagger";
