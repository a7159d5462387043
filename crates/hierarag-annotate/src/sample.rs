//! Which benchmark questions people rate: a stratified, seeded sample with a category task on
//! a subset.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use hierarag_records::CategoryRef;
use hierarag_stats::derive_seed;
use hierarag_taxonomy::{Granularity, Taxonomy};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::agreement::CategoryParents;
use crate::store::Item;

/// A benchmark question as the sampler needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    pub id: String,
    pub set: String,
    /// One category; several for a factorial question, of which the sample uses the first.
    pub categories: Vec<CategoryRef>,
    pub question: String,
    /// The reference answer.
    pub reference: String,
    pub doc_ids: Vec<String>,
}

/// How many items to sample and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleOptions {
    /// Items to sample (all questions when the benchmark has fewer).
    pub n: usize,
    /// Sampled items that also get the category task (all eligible ones when fewer).
    pub category_subset: usize,
    pub seed: u64,
}

/// One (dimension, level) stratum: how many benchmark questions it has and how many of them
/// were sampled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stratum {
    pub dimension: String,
    pub level: Granularity,
    /// Questions of the benchmark in this stratum.
    pub benchmark: usize,
    pub sampled: usize,
    /// Sampled items with the category task.
    pub category_task: usize,
}

impl Stratum {
    /// `qc/medium`.
    pub fn label(&self) -> String {
        format!("{}/{}", self.dimension, self.level)
    }
}

/// The outcome of [`sample`]: the items (documents still without their text) and the strata.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// By position. Each document is `(doc_id, "")` until [`Sample::fill_documents`].
    pub items: Vec<Item>,
    /// By dimension, then level (coarsest first).
    pub strata: Vec<Stratum>,
    /// What the sample could not do as asked (fewer questions than requested, categories
    /// unknown to the taxonomy).
    pub notes: Vec<String>,
    /// The parent of every category of the taxonomy, kept in the store for the agreement.
    pub parents: CategoryParents,
    pub options: SampleOptions,
}

/// What makes a benchmark unusable for sampling.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SampleError {
    #[error("the benchmark has no questions")]
    Empty,
    #[error("--n must be at least 1")]
    NothingToSample,
    #[error("question `{id}` has no category")]
    NoCategory { id: String },
    #[error("question id `{id}` appears more than once in the benchmark")]
    DuplicateId { id: String },
}

/// Draws the items to annotate from the benchmark.
///
/// - **Strata** are the (dimension, level) pairs of the questions' categories; a factorial
///   question counts in the stratum of its first category (and is rated against that category).
/// - **Allocation** is proportional to the strata's sizes with largest remainders
///   ([`allocate`]), with at least one item in every stratum when `n` is at least the number
///   of strata.
/// - **Within a stratum** items are drawn uniformly without replacement, from a ChaCha8 stream
///   seeded with `derive_seed(seed, "annotate/<dimension>/<level>")` over the questions in id
///   order, so the file order of the benchmark does not matter.
/// - **Positions** (the annotation order) are a shuffle of the sample
///   (`derive_seed(seed, "annotate/positions")`).
/// - **The category task** goes to `category_subset` sampled items, allocated over the strata
///   and drawn the same way (`annotate/category/<dimension>/<level>`), among items whose level
///   has at least two categories in the taxonomy and contains the item's category. Their
///   `choices` are all categories of that level, shuffled per item
///   (`annotate/choices/<item_id>`).
pub fn sample(
    questions: &[Question],
    taxonomy: &Taxonomy,
    options: &SampleOptions,
) -> Result<Sample, SampleError> {
    sample_with_first(questions, taxonomy, options, &[])
}

/// [`sample`] with the questions `first` (ids, in their order; unknown ones and repeats
/// skipped, at most `n`) sampled for sure and placed first in the annotation order: the
/// questions `hierarag compare` found no system answers, checked before the rest. The other
/// `n − |first|` items are drawn as [`sample`] draws them, from the remaining questions.
pub fn sample_with_first(
    questions: &[Question],
    taxonomy: &Taxonomy,
    options: &SampleOptions,
    first: &[String],
) -> Result<Sample, SampleError> {
    if questions.is_empty() {
        return Err(SampleError::Empty);
    }
    if options.n == 0 {
        return Err(SampleError::NothingToSample);
    }
    let mut seen = HashSet::new();
    let mut by_stratum: BTreeMap<(String, Granularity), Vec<&Question>> = BTreeMap::new();
    for question in questions {
        if !seen.insert(question.id.as_str()) {
            return Err(SampleError::DuplicateId {
                id: question.id.clone(),
            });
        }
        let first = question
            .categories
            .first()
            .ok_or_else(|| SampleError::NoCategory {
                id: question.id.clone(),
            })?;
        by_stratum
            .entry((first.dimension.clone(), first.level))
            .or_default()
            .push(question);
    }
    // The questions sampled for sure, out of the strata the rest is drawn from.
    let known: HashMap<&str, &Question> = questions.iter().map(|q| (q.id.as_str(), q)).collect();
    let mut pinned: Vec<&Question> = Vec::new();
    for id in first {
        if pinned.len() == options.n {
            break;
        }
        if let Some(question) = known.get(id.as_str())
            && !pinned.iter().any(|p| p.id == *id)
        {
            pinned.push(question);
        }
    }
    let pinned_ids: HashSet<&str> = pinned.iter().map(|q| q.id.as_str()).collect();
    let mut pinned_per_stratum: BTreeMap<(String, Granularity), usize> = BTreeMap::new();
    for question in &pinned {
        let c = &question.categories[0];
        *pinned_per_stratum
            .entry((c.dimension.clone(), c.level))
            .or_default() += 1;
    }
    let mut totals: BTreeMap<(String, Granularity), usize> = BTreeMap::new();
    for (key, members) in by_stratum.iter_mut() {
        totals.insert(key.clone(), members.len());
        members.retain(|q| !pinned_ids.contains(q.id.as_str()));
        members.sort_by(|a, b| a.id.cmp(&b.id));
    }
    let mut notes = Vec::new();
    if options.n > questions.len() {
        notes.push(format!(
            "the benchmark has {} questions, fewer than the {} asked for: all are sampled",
            questions.len(),
            options.n
        ));
    }

    let counts: Vec<usize> = by_stratum.values().map(Vec::len).collect();
    let quotas = allocate(&counts, options.n.saturating_sub(pinned.len()));
    let mut chosen: Vec<&Question> = pinned.clone();
    let mut strata = Vec::new();
    for ((key, members), quota) in by_stratum.iter().zip(&quotas) {
        let label = format!("{}/{}", key.0, key.1);
        let picked = draw(members, *quota, options.seed, &format!("annotate/{label}"));
        chosen.extend(picked);
        strata.push(Stratum {
            dimension: key.0.clone(),
            level: key.1,
            benchmark: totals[key],
            sampled: *quota + pinned_per_stratum.get(key).copied().unwrap_or(0),
            category_task: 0,
        });
    }

    // The category task: among sampled items whose level offers a real choice.
    let mut unknown: BTreeSet<String> = BTreeSet::new();
    let mut eligible: BTreeMap<(String, Granularity), Vec<&Question>> = BTreeMap::new();
    for question in &chosen {
        let first = &question.categories[0];
        match level_choices(taxonomy, first) {
            Some(choices) if choices.len() >= 2 => eligible
                .entry((first.dimension.clone(), first.level))
                .or_default()
                .push(question),
            Some(_) => {}
            None => {
                unknown.insert(format!(
                    "{}/{}/{}",
                    first.dimension, first.level, first.category
                ));
            }
        }
    }
    if !unknown.is_empty() {
        notes.push(format!(
            "categories not in the taxonomy get no category task and no parent: {}",
            unknown.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    let n_eligible: usize = eligible.values().map(Vec::len).sum();
    if options.category_subset > n_eligible {
        notes.push(format!(
            "{n_eligible} sampled items can carry the category task (their level has two or more \
             categories), fewer than the {} asked for: all of them do",
            options.category_subset
        ));
    }
    let eligible_counts: Vec<usize> = eligible.values().map(Vec::len).collect();
    let task_quotas = allocate(&eligible_counts, options.category_subset);
    let mut with_task: HashSet<&str> = HashSet::new();
    for ((key, members), quota) in eligible.iter().zip(&task_quotas) {
        let label = format!("{}/{}", key.0, key.1);
        let picked = draw(
            members,
            *quota,
            options.seed,
            &format!("annotate/category/{label}"),
        );
        with_task.extend(picked.iter().map(|q| q.id.as_str()));
        if let Some(stratum) = strata
            .iter_mut()
            .find(|s| s.dimension == key.0 && s.level == key.1)
        {
            stratum.category_task = *quota;
        }
    }

    // The annotation order: the pinned questions first, as given, then a shuffle of the rest.
    let mut order: Vec<&Question> = chosen.split_off(pinned.len());
    let mut rng = ChaCha8Rng::seed_from_u64(derive_seed(options.seed, "annotate/positions"));
    order.shuffle(&mut rng);
    let order: Vec<&Question> = chosen.into_iter().chain(order).collect();
    let items = order
        .iter()
        .enumerate()
        .map(|(position, question)| {
            let first = &question.categories[0];
            let category_task = with_task.contains(question.id.as_str());
            let choices = if category_task {
                let mut choices = level_choices(taxonomy, first).unwrap_or_default();
                let label = format!("annotate/choices/{}", question.id);
                let mut rng = ChaCha8Rng::seed_from_u64(derive_seed(options.seed, &label));
                choices.shuffle(&mut rng);
                choices
            } else {
                Vec::new()
            };
            Item {
                item_id: question.id.clone(),
                position: u32::try_from(position).unwrap_or(u32::MAX),
                set: question.set.clone(),
                dimension: first.dimension.clone(),
                level: first.level,
                category: first.category.clone(),
                parent: taxonomy
                    .parent_of(&first.dimension, &first.category)
                    .map(|(_, parent)| parent.name.clone()),
                category_task,
                question: question.question.clone(),
                reference: question.reference.clone(),
                documents: question
                    .doc_ids
                    .iter()
                    .map(|id| (id.clone(), String::new()))
                    .collect(),
                choices,
                answer: None,
            }
        })
        .collect();
    Ok(Sample {
        items,
        strata,
        notes,
        parents: CategoryParents::from_taxonomy(taxonomy),
        options: *options,
    })
}

impl Sample {
    /// The documents the items need, each once.
    pub fn doc_ids(&self) -> BTreeSet<&str> {
        self.items
            .iter()
            .flat_map(|item| item.documents.iter().map(|(id, _)| id.as_str()))
            .collect()
    }

    /// Puts the documents' texts into the items; returns the ids not found in `texts`.
    pub fn fill_documents(&mut self, texts: &HashMap<String, String>) -> Vec<String> {
        let mut missing = BTreeSet::new();
        for item in &mut self.items {
            for (id, text) in &mut item.documents {
                match texts.get(id.as_str()) {
                    Some(found) => text.clone_from(found),
                    None => {
                        missing.insert(id.clone());
                    }
                }
            }
        }
        missing.into_iter().collect()
    }

    /// Number of items with the category task.
    pub fn n_category_task(&self) -> usize {
        self.items.iter().filter(|item| item.category_task).count()
    }

    /// The meta entries for the store: the seed, the sizes asked for, and the category parents.
    pub fn meta(&self) -> Vec<(&'static str, String)> {
        vec![
            ("seed", self.options.seed.to_string()),
            ("n", self.options.n.to_string()),
            ("category_subset", self.options.category_subset.to_string()),
            (
                CategoryParents::META_KEY,
                serde_json::to_string(&self.parents).unwrap_or_default(),
            ),
        ]
    }
}

/// The category names of the level of `category`, when the taxonomy has that level and the
/// category is on it.
fn level_choices(taxonomy: &Taxonomy, category: &CategoryRef) -> Option<Vec<String>> {
    let level = taxonomy
        .dimension(&category.dimension)?
        .level(category.level)?;
    let names: Vec<String> = level.categories.iter().map(|c| c.name.clone()).collect();
    names.contains(&category.category).then_some(names)
}

/// `k` of `members` drawn uniformly without replacement from the stream `label`, in their
/// original order.
fn draw<'a>(members: &[&'a Question], k: usize, seed: u64, label: &str) -> Vec<&'a Question> {
    let mut rng = ChaCha8Rng::seed_from_u64(derive_seed(seed, label));
    let mut indices =
        rand::seq::index::sample(&mut rng, members.len(), k.min(members.len())).into_vec();
    indices.sort_unstable();
    indices.into_iter().map(|i| members[i]).collect()
}

/// Splits `n` over strata of these sizes in proportion (Hamilton's largest-remainder method,
/// ties to the earlier stratum), then moves single items so that every non-empty stratum has
/// at least one when `n` is at least their number: each empty one (largest first) takes one
/// from the stratum furthest above its proportional quota. Never more than a stratum holds;
/// `n` is capped at the total.
pub fn allocate(counts: &[usize], n: usize) -> Vec<usize> {
    let total: usize = counts.iter().sum();
    let n = n.min(total);
    let mut quotas = vec![0usize; counts.len()];
    if n == 0 {
        return quotas;
    }
    // Exact arithmetic: quota_i = n·c_i / total, remainder n·c_i mod total.
    let (n_wide, total_wide) = (n as u128, total as u128);
    for (quota, &count) in quotas.iter_mut().zip(counts) {
        *quota = (n_wide * count as u128 / total_wide) as usize;
    }
    let assigned: usize = quotas.iter().sum();
    let mut order: Vec<usize> = (0..counts.len()).collect();
    order.sort_by_key(|&i| (Reverse(n_wide * counts[i] as u128 % total_wide), i));
    for &i in order.iter().take(n - assigned) {
        quotas[i] += 1;
    }
    let non_empty = counts.iter().filter(|&&c| c > 0).count();
    if n >= non_empty {
        while let Some(needy) = (0..counts.len())
            .filter(|&i| counts[i] > 0 && quotas[i] == 0)
            .max_by_key(|&i| (counts[i], Reverse(i)))
        {
            // Some stratum has two or more: n ≥ non-empty strata, and this one has none.
            let Some(donor) = (0..counts.len())
                .filter(|&i| quotas[i] >= 2)
                .max_by_key(|&i| {
                    let above = quotas[i] as i128 * total as i128 - n as i128 * counts[i] as i128;
                    (above, quotas[i], Reverse(i))
                })
            else {
                break;
            };
            quotas[donor] -= 1;
            quotas[needy] += 1;
        }
    }
    quotas
}

#[cfg(test)]
mod tests {
    use super::allocate;

    #[test]
    fn allocation_is_proportional_with_largest_remainders() {
        // Quotas 5.0, 3.0, 2.0.
        assert_eq!(allocate(&[50, 30, 20], 10), [5, 3, 2]);
        // Quotas 3.33, 3.33, 3.33: the remainder goes to the first.
        assert_eq!(allocate(&[10, 10, 10], 10), [4, 3, 3]);
        // Quotas 6.6, 2.7, 0.7: the two largest remainders (.7, .7) win over .6.
        assert_eq!(allocate(&[66, 27, 7], 10), [6, 3, 1]);
    }

    #[test]
    fn every_stratum_gets_one_when_n_allows() {
        // Quotas 9.8, 0.1, 0.1: plain Hamilton gives [10, 0, 0].
        assert_eq!(allocate(&[98, 1, 1], 10), [8, 1, 1]);
        // n smaller than the number of strata: proportional only.
        assert_eq!(allocate(&[98, 1, 1], 2), [2, 0, 0]);
    }

    #[test]
    fn allocation_is_capped_by_the_strata() {
        assert_eq!(allocate(&[3, 2], 10), [3, 2]);
        assert_eq!(allocate(&[0, 5], 3), [0, 3]);
        assert_eq!(allocate(&[], 3), Vec::<usize>::new());
    }
}
