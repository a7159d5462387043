//! The record of human validation, `agreement.json`: agreement of annotators with each other and
//! with the benchmark (docs/design.md, "Human validation"). `hierarag-annotate` computes it from
//! the ratings; the analysis carries it into `analysis.json` and the report.

use serde::{Deserialize, Serialize};

/// Human validation of a benchmark (computed by `hierarag-annotate`), as written to
/// `agreement.json` and into the analysis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agreement {
    /// Items in the store, and those with the category task.
    pub n_items: usize,
    pub n_category_task: usize,
    /// Annotators with at least one rating, by name.
    pub annotators: Vec<String>,
    pub n_ratings: usize,
    /// Fleiss' κ per rating scale: correctness, hallucination, answerability.
    pub scales: Vec<ScaleAgreement>,
    pub quality: Quality,
    /// Agreement on the category task; `None` when no item has a category pick.
    pub category: Option<CategoryAgreement>,
    /// What could not be computed, and why; the definitions used.
    pub notes: Vec<String>,
    /// Items of the answer task (people rate one system's answer), beside the benchmark's.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub n_answer_items: usize,
    /// The LLM judge and the automatic metrics against the people, on the items both rated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeAgreement>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The LLM judge, and each automatic metric, against the people who rated the same items
/// (docs/design.md, "The judge against people").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeAgreement {
    /// The judge's model, `model (backend)`, when it rated any item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<String>,
    /// `benchmark` (the QA pairs) and `answers` (system answers), where people rated some.
    pub tasks: Vec<TaskAgreement>,
    /// The answer task: Spearman's ρ of each automatic metric with the people's mean
    /// correctness, over all rated answers (`all`) and per dimension.
    pub metrics: Vec<MetricAgreement>,
    /// The metric the analysis ranks categories by.
    pub analysed_metric: String,
    /// In words: whether the analysed metric follows the people here, and which to use if not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    pub notes: Vec<String>,
}

/// The judge against the people on one task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskAgreement {
    pub task: String,
    pub scales: Vec<JudgeScale>,
}

/// The judge against the people on one scale of a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeScale {
    pub scale: String,
    pub max: u8,
    /// Items the judge and at least one person rated on the scale.
    pub n_items: usize,
    /// The judge against each annotator, on the items both rated.
    pub annotators: Vec<JudgeVsPerson>,
    /// The judge against the people's mean: κ against the mean rounded half up, ρ against
    /// the mean itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean: Option<JudgeVsPerson>,
    /// The mean quadratic-weighted κ over pairs of annotators, each on the items both rated:
    /// the agreement a judge can hope for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub human_kappa: Option<f64>,
}

/// Quadratic-weighted Cohen's κ and Spearman's ρ of the judge against one rater (a person,
/// or the people's mean, named `mean`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeVsPerson {
    pub annotator: String,
    pub n: usize,
    pub kappa: Option<f64>,
    pub spearman: Option<f64>,
    pub p: Option<f64>,
}

/// Spearman's ρ of one automatic metric with the people's mean correctness of the answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricAgreement {
    pub metric: String,
    /// `all`, or a dimension key (the dimension of the answered question's category).
    pub dimension: String,
    pub n: usize,
    pub rho: Option<f64>,
    pub p: Option<f64>,
}

/// Fleiss' κ of one scale, over the items rated on it by every annotator who used it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScaleAgreement {
    pub scale: String,
    /// The scale runs 0..=max.
    pub max: u8,
    /// Annotators with at least one rating on this scale.
    pub raters: Vec<String>,
    /// Items rated on this scale by all of them: the subjects of κ.
    pub n_items: usize,
    pub kappa: Option<f64>,
}

/// A count out of a total.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Share {
    pub count: usize,
    pub n: usize,
    pub share: f64,
}

impl Share {
    /// `count` of `n`; `None` when `n` is 0.
    pub fn of(count: usize, n: usize) -> Option<Share> {
        (n > 0).then(|| Share {
            count,
            n,
            share: count as f64 / n as f64,
        })
    }
}

/// The benchmark's quality as the annotators saw it, per item over the raters it has on a
/// scale.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Quality {
    /// Items whose mean correctness is ≥ 2.
    pub acceptable: Option<Share>,
    /// Items every rater gave hallucination 0.
    pub hallucination_free: Option<Share>,
    /// The mean over items of the mean answerability.
    pub answerability_mean: Option<f64>,
    /// Items whose mean answerability is ≥ 2.
    pub answerable: Option<Share>,
}

/// Picks that hit the intended category (or its parent), against the rate of a random pick.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineTest {
    pub hits: usize,
    pub n: usize,
    pub rate: f64,
    /// The chance rate of a uniform random pick among the choices, averaged over the items
    /// when their number of choices differs.
    pub baseline: f64,
    /// One-sided binomial p-value of `hits` or more out of `n` at the baseline rate.
    pub p: Option<f64>,
}

/// One annotator's (or all annotators' pooled) category picks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PickAgreement {
    /// `None` for the pooled picks of all annotators.
    pub annotator: Option<String>,
    pub n: usize,
    /// The pick is the intended category.
    pub exact: BaselineTest,
    /// The pick is the intended category or one of its siblings (same parent).
    pub parent: BaselineTest,
}

/// Cohen's κ between two annotators' category picks on the items both picked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairKappa {
    pub a: String,
    pub b: String,
    pub n: usize,
    /// Items both picked the same category for.
    pub same: usize,
    pub kappa: Option<f64>,
}

/// The point-biserial correlation between an item's agreement (every pick on it a
/// parent-match) and the Coherence Ratio ρ of the split its category belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoherenceLink {
    /// Items in the correlation, and how many of them agreed.
    pub n: usize,
    pub agreed: usize,
    /// Items with picks left out because their category is in no split of the analysis
    /// (coarse categories, or splits the analysis could not compute).
    pub without_split: usize,
    pub r: Option<f64>,
    pub p: Option<f64>,
}

/// Agreement on the category task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CategoryAgreement {
    /// Category-task items with at least one pick.
    pub n_items: usize,
    pub per_annotator: Vec<PickAgreement>,
    pub pooled: PickAgreement,
    pub pairs: Vec<PairKappa>,
    /// `None` without an analysis.
    pub coherence: Option<CoherenceLink>,
}
