//! What an LLM tagger's labels add to an analysis (docs/design.md, "Tagging"): how often the
//! tagger agrees with the category a question was made for, whether a set's questions differ on
//! the dimensions they were not made for (confounders), and each dimension's effect on the
//! metric adjusted for the others.

use std::collections::{BTreeMap, BTreeSet};

use hierarag_records::CategoryRef;
use hierarag_stats::{additive_anova, binomial_greater, chi2_contingency, point_biserial};
use hierarag_taxonomy::{Granularity, Taxonomy};
use serde::{Deserialize, Serialize};

use crate::{Analysis, Scores, Settings};
use hierarag_records::{BaselineTest, CoherenceLink, Share};

/// One benchmark question with its tags, as the tag analysis reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaggedQuestion {
    pub id: String,
    pub set: String,
    /// The categories it was made for (generated), or labelled with in the file it came from
    /// (imported); may be empty.
    pub intended: Vec<CategoryRef>,
    /// Imported: its labels are compared with the tags, but its set has no intended factor.
    pub imported: bool,
    /// `None` when the question has no score.
    pub scores: Option<Scores>,
    /// Per tagged dimension, the category at each level.
    pub tags: BTreeMap<String, BTreeMap<Granularity, String>>,
}

/// The tag analysis written as `tags` in `analysis.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TagAnalysis {
    /// The model that tagged, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tagger: Option<String>,
    /// Benchmark questions with tags, and those without.
    pub n_tagged: usize,
    pub n_untagged: usize,
    /// The tagged dimensions, in taxonomy order.
    pub dimensions: Vec<String>,
    /// Tagger against the intended category, per dimension and level.
    pub agreement: Vec<TagAgreement>,
    /// Tagger against the intended category, per split (a parent and its children).
    pub splits: Vec<SplitTagAgreement>,
    /// Point-biserial r between a question's parent-match and the ρ of its category's split.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coherence: Option<CoherenceLink>,
    /// The tagger as one more annotator of the human category task, when there are picks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotator: Option<TaggerAnnotator>,
    /// Per set and other dimension: the other dimension's coarse tags by intended category.
    pub confounders: Vec<Confounder>,
    /// Per set: the metric on every dimension at once (type II ANOVA).
    pub adjusted: Vec<AdjustedModel>,
    /// Sets analysed on tags instead of categories of their own (`tags/<dimension>`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tag_sets: Vec<String>,
    /// What could not be computed, and why; the definitions used.
    pub notes: Vec<String>,
}

/// Agreement of the tagger with the intended categories of one dimension's level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TagAgreement {
    pub dimension: String,
    pub level: Granularity,
    pub n: usize,
    /// The tag is the intended category; chance 1/|categories of the level|.
    pub exact: BaselineTest,
    /// The tag is the intended category or a sibling; chance |siblings and itself|/|level|.
    pub parent: BaselineTest,
}

/// Agreement on the questions of one split's children.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SplitTagAgreement {
    pub dimension: String,
    pub parent_level: Granularity,
    pub parent: String,
    pub children: Vec<String>,
    pub exact: Share,
    pub parent_match: Share,
    /// ρ of the split in the analysis, when it has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rho: Option<f64>,
}

/// The tagger beside the people of the category task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaggerAnnotator {
    /// Items with a human pick and a tag at the item's level.
    pub n_items: usize,
    /// The tagger's picks against the intended categories of those items.
    pub exact: Share,
    /// Cohen's κ of the tagger with each annotator, on the items both picked for.
    pub pairs: Vec<crate::PairKappa>,
    /// Fleiss' κ over the items every annotator picked for: the people alone, and with the
    /// tagger as one more rater.
    pub n_common: usize,
    pub fleiss_humans: Option<f64>,
    pub fleiss_with_tagger: Option<f64>,
}

/// Whether a set's questions differ, by intended category, on another dimension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Confounder {
    pub set: String,
    /// The set's dimension and level (its intended categories are the rows).
    pub dimension: String,
    pub level: Granularity,
    pub categories: Vec<String>,
    /// The other dimension (its coarse tags are the columns).
    pub other: String,
    pub other_categories: Vec<String>,
    /// Questions per (intended category, other dimension's tag).
    pub counts: Vec<Vec<u64>>,
    pub chi2: Option<f64>,
    pub dof: usize,
    pub p: Option<f64>,
    /// More than a fifth of the expected counts are below 5: the χ² p-value is rough.
    pub sparse: bool,
    /// p below 1 − confidence: the other dimension is not spread evenly over the categories.
    pub flagged: bool,
}

/// The metric of one set on all its factors at once: `metric ~ C(intended) + C(other₁) + …`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdjustedModel {
    pub set: String,
    pub n: usize,
    pub residual_df: f64,
    pub factors: Vec<AdjustedFactor>,
}

/// One factor of an [`AdjustedModel`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdjustedFactor {
    pub dimension: String,
    pub level: Granularity,
    /// The set's own categories (`false`: the tags of another dimension).
    pub intended: bool,
    pub n_categories: usize,
    /// The standard deviation of the factor's category means of the metric, alone.
    pub discpow: Option<f64>,
    /// The factor alone (one-way ANOVA).
    pub one_way_p: Option<f64>,
    /// The factor adjusted for the others (type II).
    pub sum_sq: f64,
    pub df: f64,
    pub f: Option<f64>,
    pub adjusted_p: Option<f64>,
    /// Significant alone but not adjusted, or the reverse, at 1 − confidence.
    pub disagrees: bool,
}

/// Analyses the tags of `questions` (tagged against `taxonomy`) beside `analysis`, the
/// analysis of the same questions.
pub fn analyze_tags(
    questions: &[TaggedQuestion],
    taxonomy: &Taxonomy,
    analysis: &Analysis,
    settings: &Settings,
) -> TagAnalysis {
    let mut notes = Vec::new();
    let tagged: Vec<&TaggedQuestion> = questions.iter().filter(|q| !q.tags.is_empty()).collect();
    let dimensions: Vec<String> = taxonomy
        .dimensions
        .iter()
        .filter(|d| tagged.iter().any(|q| q.tags.contains_key(&d.key)))
        .map(|d| d.key.clone())
        .collect();
    let alpha = 1.0 - settings.confidence;
    let hits = hits(&tagged, taxonomy);
    notes.push(
        "agreement: exact = the tag at the intended category's level is that category; \
         parent-match = it is that category or a sibling (same parent), which on the coarse level \
         is exact; chance rates assume a uniform random pick among the level's categories"
            .into(),
    );
    let agreement = level_agreement(&hits, taxonomy);
    let splits = split_agreement(&hits, taxonomy, analysis);
    let coherence = coherence(&hits, analysis, &mut notes);
    let (confounders, adjusted) =
        confounders(&tagged, taxonomy, &dimensions, settings, alpha, &mut notes);
    TagAnalysis {
        tagger: None,
        n_tagged: tagged.len(),
        n_untagged: questions.len() - tagged.len(),
        dimensions,
        agreement,
        splits,
        coherence,
        annotator: None,
        confounders,
        adjusted,
        tag_sets: Vec::new(),
        notes,
    }
}

/// One intended category of a question, compared with its tag.
struct Hit<'a> {
    intended: &'a CategoryRef,
    exact: bool,
    parent_match: bool,
    exact_chance: f64,
    parent_chance: f64,
}

fn hits<'a>(questions: &[&'a TaggedQuestion], taxonomy: &Taxonomy) -> Vec<Hit<'a>> {
    let mut hits = Vec::new();
    for question in questions {
        for intended in &question.intended {
            let Some(tag) = question
                .tags
                .get(&intended.dimension)
                .and_then(|levels| levels.get(&intended.level))
            else {
                continue;
            };
            let Some(level) = taxonomy
                .dimension(&intended.dimension)
                .and_then(|d| d.level(intended.level))
            else {
                continue;
            };
            let Some(category) = level
                .categories
                .iter()
                .find(|c| c.name == intended.category)
            else {
                continue;
            };
            let family: Vec<&str> = level
                .categories
                .iter()
                .filter(|c| {
                    c.name == category.name || (c.parent.is_some() && c.parent == category.parent)
                })
                .map(|c| c.name.as_str())
                .collect();
            let n = level.categories.len() as f64;
            hits.push(Hit {
                intended,
                exact: *tag == category.name,
                parent_match: family.contains(&tag.as_str()),
                exact_chance: 1.0 / n,
                parent_chance: family.len() as f64 / n,
            });
        }
    }
    hits
}

fn baseline_test(
    hits: &[&Hit<'_>],
    hit: fn(&Hit<'_>) -> bool,
    chance: fn(&Hit<'_>) -> f64,
) -> BaselineTest {
    let n = hits.len();
    let count = hits.iter().filter(|h| hit(h)).count();
    let baseline = hits.iter().map(|h| chance(h)).sum::<f64>() / n as f64;
    BaselineTest {
        hits: count,
        n,
        rate: count as f64 / n as f64,
        baseline,
        p: binomial_greater(count as u64, n as u64, baseline.clamp(0.0, 1.0)),
    }
}

fn level_agreement(hits: &[Hit<'_>], taxonomy: &Taxonomy) -> Vec<TagAgreement> {
    let mut out = Vec::new();
    for dimension in &taxonomy.dimensions {
        for level in &dimension.levels {
            let these: Vec<&Hit<'_>> = hits
                .iter()
                .filter(|h| {
                    h.intended.dimension == dimension.key && h.intended.level == level.granularity
                })
                .collect();
            if these.is_empty() {
                continue;
            }
            out.push(TagAgreement {
                dimension: dimension.key.clone(),
                level: level.granularity,
                n: these.len(),
                exact: baseline_test(&these, |h| h.exact, |h| h.exact_chance),
                parent: baseline_test(&these, |h| h.parent_match, |h| h.parent_chance),
            });
        }
    }
    out
}

fn split_agreement(
    hits: &[Hit<'_>],
    taxonomy: &Taxonomy,
    analysis: &Analysis,
) -> Vec<SplitTagAgreement> {
    let mut out = Vec::new();
    for dimension in &taxonomy.dimensions {
        for split in taxonomy.splits(&dimension.key) {
            let Some(child_level) = split.parent_level.below() else {
                continue;
            };
            let children: Vec<String> = split.children.iter().map(|c| c.name.clone()).collect();
            let these: Vec<&Hit<'_>> = hits
                .iter()
                .filter(|h| {
                    h.intended.dimension == dimension.key
                        && h.intended.level == child_level
                        && children.contains(&h.intended.category)
                })
                .collect();
            let (Some(exact), Some(parent_match)) = (
                Share::of(these.iter().filter(|h| h.exact).count(), these.len()),
                Share::of(these.iter().filter(|h| h.parent_match).count(), these.len()),
            ) else {
                continue;
            };
            out.push(SplitTagAgreement {
                dimension: dimension.key.clone(),
                parent_level: split.parent_level,
                parent: split.parent.name.clone(),
                rho: analysis
                    .splits
                    .iter()
                    .find(|s| {
                        s.dimension == dimension.key
                            && s.parent_level == split.parent_level
                            && s.parent == split.parent.name
                    })
                    .map(|s| s.rho.value),
                children,
                exact,
                parent_match,
            });
        }
    }
    out
}

/// The paper's r_pb on every tagged question: parent-match against the ρ of the split whose
/// children include the question's category (as the human category task computes it).
fn coherence(
    hits: &[Hit<'_>],
    analysis: &Analysis,
    notes: &mut Vec<String>,
) -> Option<CoherenceLink> {
    let mut agreed = Vec::new();
    let mut rhos = Vec::new();
    let mut without_split = 0;
    for hit in hits {
        let category = hit.intended;
        match analysis.split_containing(&category.dimension, category.level, &category.category) {
            Some(split) => {
                agreed.push(hit.parent_match);
                rhos.push(split.rho.value);
            }
            None => without_split += 1,
        }
    }
    if agreed.is_empty() {
        return None;
    }
    let correlation = point_biserial(&agreed, &rhos);
    if correlation.is_none() {
        notes.push(format!(
            "coherence link: point-biserial r undefined over {} question(s) (needs three or more, \
             with both agreement and disagreement, and ρ not constant)",
            agreed.len()
        ));
    }
    Some(CoherenceLink {
        n: agreed.len(),
        agreed: agreed.iter().filter(|&&a| a).count(),
        without_split,
        r: correlation.map(|c| c.r),
        p: correlation.map(|c| c.p),
    })
}

/// A factor of a set's questions: a label per question, in the order of `names`.
struct FactorColumn {
    dimension: String,
    level: Granularity,
    intended: bool,
    names: Vec<String>,
    labels: Vec<usize>,
}

impl FactorColumn {
    fn new(
        dimension: &str,
        level: Granularity,
        intended: bool,
        values: &[&str],
        order: &[String],
    ) -> FactorColumn {
        // The taxonomy's order first, then names it does not know (by name).
        let present: BTreeSet<&str> = values.iter().copied().collect();
        let mut names: Vec<String> = order
            .iter()
            .filter(|n| present.contains(n.as_str()))
            .cloned()
            .collect();
        for name in &present {
            if !names.iter().any(|n| n == name) {
                names.push((*name).to_string());
            }
        }
        let labels = values
            .iter()
            .map(|v| names.iter().position(|n| n == v).expect("a present name"))
            .collect();
        FactorColumn {
            dimension: dimension.to_string(),
            level,
            intended,
            names,
            labels,
        }
    }
}

/// A set, with the dimension and level of its questions' one intended category (none for an
/// imported set, analysed on tags alone).
type SetKey<'a> = (&'a str, Option<(&'a str, Granularity)>);

fn level_names(taxonomy: &Taxonomy, dimension: &str, level: Granularity) -> Vec<String> {
    taxonomy
        .dimension(dimension)
        .and_then(|d| d.level(level))
        .map(|l| l.categories.iter().map(|c| c.name.clone()).collect())
        .unwrap_or_default()
}

/// Per set of single-category questions (and per imported set, on tags alone): the χ² of its
/// categories against each other dimension's coarse tags, and the additive model of the metric.
fn confounders(
    questions: &[&TaggedQuestion],
    taxonomy: &Taxonomy,
    dimensions: &[String],
    settings: &Settings,
    alpha: f64,
    notes: &mut Vec<String>,
) -> (Vec<Confounder>, Vec<AdjustedModel>) {
    let mut sets: BTreeMap<SetKey<'_>, Vec<&TaggedQuestion>> = BTreeMap::new();
    let mut factorial: BTreeSet<&str> = BTreeSet::new();
    for question in questions {
        let key = if question.imported {
            None
        } else {
            match question.intended.as_slice() {
                [one] => Some((one.dimension.as_str(), one.level)),
                [] => None,
                _ => {
                    factorial.insert(question.set.as_str());
                    continue;
                }
            }
        };
        sets.entry((question.set.as_str(), key))
            .or_default()
            .push(question);
    }
    if !factorial.is_empty() {
        notes.push(format!(
            "confounders: factorial set(s) {} left out (their questions control two dimensions by \
             design; the factorial analysis compares them)",
            factorial.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    let mut confounders = Vec::new();
    let mut adjusted = Vec::new();
    for ((set, intended), members) in sets {
        // Every question needs a tag on every other dimension, and the metric.
        let others: Vec<&String> = dimensions
            .iter()
            .filter(|d| intended.is_none_or(|(own, _)| own != d.as_str()))
            .collect();
        let complete: Vec<&TaggedQuestion> = members
            .iter()
            .copied()
            .filter(|q| {
                others.iter().all(|d| {
                    q.tags
                        .get(*d)
                        .is_some_and(|t| t.contains_key(&Granularity::Coarse))
                })
            })
            .collect();
        if complete.len() < members.len() {
            notes.push(format!(
                "confounders of set {set}: {} of {} question(s) lack a tag on another dimension and \
                 are left out",
                members.len() - complete.len(),
                members.len()
            ));
        }
        let mut factors = Vec::new();
        if let Some((dimension, level)) = intended {
            let values: Vec<&str> = complete
                .iter()
                .map(|q| q.intended[0].category.as_str())
                .collect();
            factors.push(FactorColumn::new(
                dimension,
                level,
                true,
                &values,
                &level_names(taxonomy, dimension, level),
            ));
        }
        for other in &others {
            let values: Vec<&str> = complete
                .iter()
                .map(|q| q.tags[*other][&Granularity::Coarse].as_str())
                .collect();
            factors.push(FactorColumn::new(
                other,
                Granularity::Coarse,
                false,
                &values,
                &level_names(taxonomy, other, Granularity::Coarse),
            ));
        }
        if let Some((dimension, level)) = intended {
            let rows = &factors[0];
            for column in &factors[1..] {
                let mut counts = vec![vec![0u64; column.names.len()]; rows.names.len()];
                for (r, c) in rows.labels.iter().zip(&column.labels) {
                    counts[*r][*c] += 1;
                }
                let test = chi2_contingency(&counts);
                let sparse = test.as_ref().is_some_and(|t| {
                    let cells = t.expected.iter().flatten().count();
                    let low = t.expected.iter().flatten().filter(|&&e| e < 5.0).count();
                    low * 5 > cells
                });
                confounders.push(Confounder {
                    set: set.to_string(),
                    dimension: dimension.to_string(),
                    level,
                    categories: rows.names.clone(),
                    other: column.dimension.clone(),
                    other_categories: column.names.clone(),
                    counts,
                    chi2: test.as_ref().map(|t| t.statistic),
                    dof: test.as_ref().map_or(0, |t| t.dof),
                    p: test.as_ref().map(|t| t.p),
                    sparse,
                    flagged: test.as_ref().is_some_and(|t| t.dof > 0 && t.p < alpha),
                });
            }
        }
        // The model, on the questions with the metric.
        let scored: Vec<usize> = (0..complete.len())
            .filter(|&i| {
                complete[i]
                    .scores
                    .is_some_and(|s| settings.metric.value(&s).is_some())
            })
            .collect();
        let y: Vec<f64> = scored
            .iter()
            .map(|&i| {
                settings
                    .metric
                    .of(complete[i].scores.as_ref().expect("scored"))
            })
            .collect();
        let columns: Vec<Vec<usize>> = factors
            .iter()
            .map(|f| scored.iter().map(|&i| f.labels[i]).collect())
            .collect();
        // A factor with one category on the scored questions explains nothing: left out.
        let kept: Vec<usize> = (0..factors.len())
            .filter(|&i| columns[i].iter().collect::<BTreeSet<_>>().len() > 1)
            .collect();
        if kept.is_empty() || y.is_empty() {
            continue;
        }
        let model_columns: Vec<Vec<usize>> = kept.iter().map(|&i| columns[i].clone()).collect();
        let Some(model) = additive_anova(&y, &model_columns) else {
            notes.push(format!(
                "adjusted effects of set {set}: no model ({} scored question(s), no degree of \
                 freedom left for the residual)",
                y.len()
            ));
            continue;
        };
        let mut out = Vec::new();
        for (term, &i) in model.terms.iter().zip(&kept) {
            let factor = &factors[i];
            let one_way = additive_anova(&y, std::slice::from_ref(&columns[i]));
            let one_way_p = one_way.and_then(|m| finite(m.terms[0].p));
            let adjusted_p = finite(term.p);
            if term.df == 0.0 {
                notes.push(format!(
                    "adjusted effects of set {set}: {} {} adds nothing the other factors do not \
                     already explain (its categories coincide with theirs), so its effect cannot \
                     be told apart from theirs",
                    factor.dimension, factor.level
                ));
            }
            out.push(AdjustedFactor {
                dimension: factor.dimension.clone(),
                level: factor.level,
                intended: factor.intended,
                n_categories: factor.names.len(),
                discpow: discpow(&y, &columns[i], settings.ddof),
                one_way_p,
                sum_sq: term.sum_sq,
                df: term.df,
                f: finite(term.f),
                adjusted_p,
                disagrees: match (one_way_p, adjusted_p) {
                    (Some(a), Some(b)) => (a < alpha) != (b < alpha),
                    _ => false,
                },
            });
        }
        adjusted.push(AdjustedModel {
            set: set.to_string(),
            n: y.len(),
            residual_df: model.residual_df,
            factors: out,
        });
    }
    if !confounders.is_empty() || !adjusted.is_empty() {
        notes.push(format!(
            "confounders: χ² test of independence of a set's categories and another dimension's \
             coarse tags (flagged at p < {alpha:.2}); adjusted effects: type II ANOVA of {} on one \
             factor per dimension, beside each factor alone",
            settings.metric
        ));
    }
    (confounders, adjusted)
}

fn finite(value: f64) -> Option<f64> {
    value.is_finite().then_some(value)
}

/// The standard deviation of the category means of `y` grouped by `labels`.
fn discpow(y: &[f64], labels: &[usize], ddof: u32) -> Option<f64> {
    let mut sums: BTreeMap<usize, (f64, usize)> = BTreeMap::new();
    for (value, label) in y.iter().zip(labels) {
        let entry = sums.entry(*label).or_default();
        entry.0 += value;
        entry.1 += 1;
    }
    let means: Vec<f64> = sums.values().map(|(s, n)| s / *n as f64).collect();
    hierarag_stats::std_dev(&means, ddof)
}
