//! What the comparison produces: `comparison.json`.

use hierarag_records::CategoryRef;
use hierarag_taxonomy::Granularity;
use serde::{Deserialize, Serialize};

use crate::input::{Metric, Settings};
use crate::model::{Estimate, Recommendation};

/// The comparison of several RAG systems on one benchmark (`comparison.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The analysis settings every statistic used; `settings.metric` is the analysed metric
    /// (side by side, the granularity sentence, the questions no system answers).
    pub settings: Settings,
    /// A question counts as not answered by a system when it refused or scored below this on
    /// the analysed metric.
    pub threshold: f64,
    /// The systems in the order given; differences are `b − a` for `a` before `b`.
    pub systems: Vec<SystemCount>,
    /// The questions every system has a score for: what every statistic is over.
    pub common: usize,
    /// Per metric over all common questions: each system's mean and every pair's difference.
    pub overall: Vec<MetricOverall>,
    /// One entry per (set, dimension, level) of single-category questions.
    pub levels: Vec<LevelComparison>,
    /// Per dimension: each system's recommended granularity and the level that separates the
    /// systems most.
    pub dimensions: Vec<DimensionComparison>,
    /// Questions every system refused or scored below the threshold on: often bad questions.
    pub unanswered: Vec<Unanswered>,
    /// What could not be computed, and why.
    pub notes: Vec<String>,
}

/// One system of the comparison and how many of its questions were left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemCount {
    pub name: String,
    /// Questions it has a score for.
    pub scored: usize,
    /// Of those, how many some other system lacks (left out of every statistic).
    pub dropped: usize,
}

/// A paired difference `b − a` over some questions: its mean with the paired bootstrap
/// interval, both tests, and the wins, ties and losses of `b`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    pub n: usize,
    /// Mean of `b − a`, with the percentile interval of the questions resampled (within the
    /// category, or within every category of a level for a level's overall difference).
    pub mean: Estimate,
    /// scipy's `ttest_rel(b, a)`: t and its two-sided p (None when every difference is the
    /// same value, where t is 0/0 or infinite; p is 0 for a constant non-zero difference).
    pub t: Option<f64>,
    pub t_p: Option<f64>,
    /// scipy's `wilcoxon(b, a)` with its defaults: min(R+, R−) and the two-sided p (None
    /// where scipy's is NaN: every difference zero with more than 13 questions; with 13 or
    /// fewer its sign-flip test gives 1).
    pub w: Option<f64>,
    pub w_p: Option<f64>,
    /// Questions where `b` scored higher, the same, lower.
    pub wins: usize,
    pub ties: usize,
    pub losses: usize,
}

/// One pair's difference on one metric over all common questions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairOverall {
    pub a: String,
    pub b: String,
    pub diff: Difference,
}

/// One metric over all common questions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricOverall {
    pub metric: Metric,
    /// The systems that have the metric (a system that names no document has no AP).
    pub systems: Vec<String>,
    /// Their means over the questions all of them have it for, in `systems` order.
    pub means: Vec<f64>,
    pub n: usize,
    pub pairs: Vec<PairOverall>,
}

/// One (set, dimension, level): the systems side by side and, per metric, how they differ.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelComparison {
    pub set: String,
    pub dimension: String,
    pub level: Granularity,
    /// The level's categories in taxonomy order, with their question counts.
    pub categories: Vec<CategoryCount>,
    /// Side by side on the analysed metric: each system's own analysis of this level.
    pub side_by_side: Vec<SystemLevel>,
    /// Per metric: means, pairwise differences, the mixed ANOVA and rank changes.
    pub metrics: Vec<LevelMetric>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CategoryCount {
    pub category: String,
    pub n: usize,
}

/// One system's analysis of a level, on the analysed metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemLevel {
    pub system: String,
    /// Category means with their bootstrap intervals, in the level's category order (None
    /// where the system's analysis has no mean: the metric is absent there).
    pub means: Vec<Option<Estimate>>,
    pub discpow: Option<Estimate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discpow_p: Option<f64>,
}

/// One metric of one level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelMetric {
    pub metric: Metric,
    /// The systems that have the metric here, and the questions all of them have it for.
    pub systems: Vec<String>,
    pub n: usize,
    /// `means[s][k]`: system s's mean on category k (NaN-free: a category without questions
    /// for the metric has None).
    pub means: Vec<Vec<Option<f64>>>,
    /// Each system's mean over the level's `n` questions.
    pub level_means: Vec<f64>,
    /// Every pair `a` before `b`.
    pub pairs: Vec<PairLevel>,
    /// The mixed ANOVA (category between questions, system within): None with fewer than two
    /// categories or as many questions as categories.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anova: Option<MixedAnova>,
    /// With three or more systems: how each category's ranking of the systems agrees with the
    /// level's overall ranking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<RankChanges>,
}

/// One pair on one level and metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairLevel {
    pub a: String,
    pub b: String,
    /// Over all the level's questions.
    pub overall: Difference,
    /// Per category, in the level's order (None for a category without questions here).
    pub categories: Vec<Option<CategoryDifference>>,
    /// The standard deviation over categories of the mean difference (with the settings'
    /// ddof), with its bootstrap interval: how unevenly the two systems differ across the
    /// level's categories.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<Estimate>,
}

/// One pair on one category.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CategoryDifference {
    #[serde(flatten)]
    pub diff: Difference,
    /// The t and Wilcoxon p-values after Holm's adjustment over the level's categories.
    pub t_p_holm: Option<f64>,
    pub w_p_holm: Option<f64>,
}

/// pingouin's `mixed_anova` rows: category (between questions), system (within), interaction.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MixedAnova {
    pub category: AnovaRow,
    pub system: AnovaRow,
    pub interaction: AnovaRow,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AnovaRow {
    pub ss: f64,
    pub df1: f64,
    pub df2: f64,
    /// None where F is undefined (no variation left within questions, e.g. identical systems).
    pub f: Option<f64>,
    /// Uncorrected for sphericity (pingouin's `p_unc`).
    pub p: Option<f64>,
    /// Partial η².
    pub np2: Option<f64>,
}

/// Rank changes across a level's categories.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankChanges {
    /// The best system over the whole level.
    pub best: String,
    /// Per category (level order): Kendall's τ-b between its means and the overall means of
    /// the systems (None when either is constant), and its best system.
    pub categories: Vec<CategoryRank>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CategoryRank {
    pub category: String,
    pub tau: Option<f64>,
    pub best: Option<String>,
}

/// Per dimension, on the analysed metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DimensionComparison {
    pub dimension: String,
    /// Each system's own recommended granularity (None where its analysis has none).
    pub recommended: Vec<SystemRecommendation>,
    /// Whether every system's recommendation is the same level.
    pub same_for_all: bool,
    /// The level whose system × category interaction is largest, with the reason in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub separating: Option<Separating>,
}

impl DimensionComparison {
    /// Each system's recommended level in words: `bm25 coarse, hybrid fine` (`–` for none).
    pub fn recommended_levels(&self) -> String {
        self.recommended
            .iter()
            .map(|r| {
                let level = r
                    .recommendation
                    .as_ref()
                    .map_or_else(|| "–".to_owned(), |r| r.level.to_string());
                format!("{} {level}", r.system)
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemRecommendation {
    pub system: String,
    pub recommendation: Option<Recommendation>,
}

/// Which granularity separates the systems.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Separating {
    pub level: Granularity,
    /// The set the level's questions come from.
    pub set: String,
    /// Whether the interaction there is significant at α = 1 − confidence.
    pub significant: bool,
    pub reason: String,
}

/// A question no system answered: every one refused or scored below the threshold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unanswered {
    pub id: String,
    /// The question's text, when the caller has the benchmark.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    pub set: String,
    pub categories: Vec<CategoryRef>,
    /// Each system's value of the analysed metric (None where it has none), in systems order.
    pub scores: Vec<Option<f64>>,
    pub refused: Vec<bool>,
}
