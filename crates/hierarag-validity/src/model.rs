//! What the validity check produces: `validity.json`.

use hierarag_analysis::{Estimate, Metric};
use hierarag_taxonomy::Granularity;
use serde::{Deserialize, Serialize};

use crate::Settings;

/// The synthetic benchmark beside the human-written one (`validity.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Validity {
    pub settings: Settings,
    /// Questions on each side, and the systems that answered both.
    pub synthetic_questions: usize,
    pub human_questions: usize,
    pub systems: Vec<String>,
    /// The findings in words, most important first, for a reader who is not a statistician.
    pub verdict: Vec<String>,
    /// The category mix of the human questions beside the synthetic design's.
    pub coverage: Vec<Coverage>,
    /// Human questions the tagger could not place confidently.
    pub unplaced: Vec<Unplaced>,
    /// The questions themselves, side by side: over all questions, then per category.
    pub properties: Vec<PropertyComparison>,
    /// Per system, metric and level: the category means on both sides and how their orders
    /// agree.
    pub agreement: Vec<LevelAgreement>,
    /// Per system and dimension: DiscPow on both sides and the recommended level.
    pub granularity: Vec<GranularityAgreement>,
    /// With two or more systems: their order and pairwise decisions on both sides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decisions: Option<Decisions>,
    /// Per system and level: the human mean the synthetic benchmark predicts under the human
    /// category mix, beside the one observed.
    pub predicted: Vec<Prediction>,
    /// What could not be computed, and why.
    pub notes: Vec<String>,
}

/// One category's share of each benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CategoryShare {
    pub category: String,
    pub synthetic: usize,
    pub human: usize,
    pub synthetic_share: f64,
    pub human_share: f64,
    /// `over`: frequent among people but rare in the benchmark (absent from it, or at least
    /// twice as frequent and 5 points more); `under`: the reverse; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flag: Option<Mix>,
}

/// Which way a category's share differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mix {
    /// More frequent among the human questions.
    Over,
    /// More frequent in the synthetic benchmark.
    Under,
}

/// One dimension's level: the two category mixes and the goodness of fit of the human mix to
/// the synthetic design's proportions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Coverage {
    pub dimension: String,
    pub level: Granularity,
    pub categories: Vec<CategoryShare>,
    /// scipy's `chisquare(human counts, synthetic shares × human total)` over the categories
    /// the benchmark has (absent with fewer than two, or no human question placed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chi2: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dof: Option<usize>,
}

/// A human question the tagger placed without confidence on some dimensions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unplaced {
    pub id: String,
    pub dimensions: Vec<String>,
}

/// A property of a question that needs no model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Property {
    /// The question's length in words.
    Words,
    /// The share of the question's words found in its relevant documents.
    Overlap,
    /// The best rank of a relevant document under BM25 with the question as the query.
    GoldRank,
    /// The reference answer's length in words.
    AnswerWords,
    /// 1 when the right answer is a refusal.
    RefusalExpected,
}

impl Property {
    pub const ALL: [Property; 5] = [
        Property::Words,
        Property::Overlap,
        Property::GoldRank,
        Property::AnswerWords,
        Property::RefusalExpected,
    ];

    /// Its name in words.
    pub fn describe(self) -> &'static str {
        match self {
            Property::Words => "length in words",
            Property::Overlap => "word overlap with the relevant document",
            Property::GoldRank => "BM25 rank of the relevant document",
            Property::AnswerWords => "reference answer length in words",
            Property::RefusalExpected => "share expecting a refusal",
        }
    }
}

/// One property on both sides, over some questions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PropertyComparison {
    pub property: Property,
    /// The category compared, absent over all questions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dimension: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<Granularity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    pub synthetic_n: usize,
    pub human_n: usize,
    pub synthetic_median: f64,
    pub human_median: f64,
    pub synthetic_mean: f64,
    pub human_mean: f64,
    /// scipy's `mannwhitneyu(synthetic, human)`: U of the synthetic side and the two-sided p.
    pub u: f64,
    pub p: f64,
    /// The rank-biserial correlation: positive when synthetic questions tend to score higher.
    pub effect: f64,
}

/// One category's mean on both sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CategoryMeans {
    pub category: String,
    pub synthetic_n: usize,
    pub human_n: usize,
    pub synthetic: Estimate,
    pub human: Estimate,
}

/// One system, metric and level: does the category the synthetic benchmark finds hardest
/// stay the hardest for people?
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelAgreement {
    pub system: String,
    pub metric: Metric,
    pub dimension: String,
    pub level: Granularity,
    /// The categories both sides have, in taxonomy order.
    pub categories: Vec<CategoryMeans>,
    /// scipy's `spearmanr` and `kendalltau` of the synthetic against the human means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spearman: Option<RankCorrelation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kendall: Option<RankCorrelation>,
    /// The lowest-scoring category on each side (the hardest, or for the hallucination grade
    /// and the refusal rate the best).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synthetic_lowest: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub human_lowest: Option<String>,
}

/// A rank correlation with its two-sided p-value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RankCorrelation {
    pub r: f64,
    pub p: f64,
}

/// One level's discrimination on one side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelDiscrimination {
    pub level: Granularity,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discpow: Option<Estimate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discpow_corrected: Option<Estimate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_floor: Option<f64>,
}

/// One system and dimension: the granularity findings on both sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GranularityAgreement {
    pub system: String,
    pub dimension: String,
    pub synthetic: Vec<LevelDiscrimination>,
    pub human: Vec<LevelDiscrimination>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synthetic_recommended: Option<Granularity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub human_recommended: Option<Granularity>,
    /// Both sides recommend the same level.
    pub agree: bool,
    /// Why, in words.
    pub reason: String,
}

/// The systems' order and pairwise decisions on both sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decisions {
    pub metric: Metric,
    /// Each system's mean on the questions every system scored, per side.
    pub synthetic_means: Vec<f64>,
    pub human_means: Vec<f64>,
    /// Kendall's τ-b between the two orders, with the percentile interval of the questions of
    /// both sides resampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tau: Option<Estimate>,
    /// The same within each category both sides have.
    pub per_category: Vec<CategoryOrder>,
    /// Every pair: what the synthetic benchmark decides and whether it holds on people's
    /// questions.
    pub pairs: Vec<PairDecision>,
    /// The share of pairs whose decision transfers (the headline number).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transfer: Option<f64>,
}

/// The systems' order within one category.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CategoryOrder {
    pub dimension: String,
    pub level: Granularity,
    pub category: String,
    pub synthetic_n: usize,
    pub human_n: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tau: Option<Estimate>,
}

/// What a benchmark decides about a pair of systems: `b` better, worse, or no significant
/// difference (scipy's paired t-test of `b − a` at the analysis' α, as `compare` tests it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Better,
    Worse,
    NoDifference,
}

/// How a synthetic decision fares on the human questions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transfer {
    /// The same decision (a difference, or none, on both).
    Holds,
    /// A significant difference on the synthetic questions, none on the human ones.
    Vanishes,
    /// Significant on both, in opposite directions.
    Flips,
    /// No difference on the synthetic questions, a significant one on the human ones.
    Appears,
}

/// One pair of systems on both sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairDecision {
    pub a: String,
    pub b: String,
    /// Mean of `b − a` and the paired t-test's p, per side.
    pub synthetic_difference: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synthetic_p: Option<f64>,
    pub human_difference: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub human_p: Option<f64>,
    pub synthetic: Decision,
    pub human: Decision,
    pub transfer: Transfer,
}

/// One system and level: the human mean predicted from the synthetic category means
/// (post-stratified to the human mix), beside the one observed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    pub system: String,
    pub metric: Metric,
    pub dimension: String,
    pub level: Granularity,
    /// Σ human share × synthetic mean over the categories both sides have, with the normal
    /// interval of its standard error √(Σ share² s²/n).
    pub predicted: Estimate,
    /// The mean of the human questions placed at this level, with its normal interval.
    pub observed: Estimate,
    /// The share of those human questions in categories the benchmark lacks (left out of the
    /// prediction).
    pub unpredicted_share: f64,
    /// The observed mean agrees with the prediction: their difference is within its normal
    /// interval, `z·√(se_predicted² + se_observed²)`.
    pub within: bool,
}
