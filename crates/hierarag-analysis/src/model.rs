//! What the analysis produces: `analysis.json`.

use hierarag_taxonomy::Granularity;
use serde::{Deserialize, Serialize};

use crate::input::Settings;

/// The whole analysis of one run (`analysis.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    pub settings: Settings,
    /// Questions analysed, and those left out with the reason.
    pub counts: Counts,
    /// One entry per (set, dimension, level) of single-category questions: the unit whose
    /// categories are compared.
    pub levels: Vec<LevelStats>,
    /// Every parent with its children one level down where both levels were generated.
    pub splits: Vec<SplitStats>,
    /// Per dimension: the mean ρ and the recommended granularity.
    pub dimensions: Vec<DimensionSummary>,
    /// The paper's Table 1: the coarse levels compared.
    pub table1: Vec<Table1Row>,
    /// The paper's Table 2: DiscPow, NMI and Δ over the levels of each dimension.
    pub table2: Vec<Table2Row>,
    /// The paper's Table 3: the best two and worst two categories at the finest level.
    pub table3: Vec<Table3Block>,
    /// The paper's Table 4: factorial sets.
    pub factorials: Vec<Factorial>,
    /// What could not be computed, and why, in words.
    pub notes: Vec<String>,
    /// Refusal precision and recall, when the benchmark has questions marked unanswerable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusals: Option<crate::Refusals>,
    /// The human validation of the benchmark (`hierarag annotate agreement`), when there is
    /// one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub human_validation: Option<crate::Agreement>,
    /// What the tagger's labels add (`hierarag tag`), when the run has tags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<crate::TagAnalysis>,
}

impl Analysis {
    /// The analysed split whose children, one level below its parent, include `category` of
    /// `dimension` at `level`: the split a question of that category belongs to.
    pub fn split_containing(
        &self,
        dimension: &str,
        level: Granularity,
        category: &str,
    ) -> Option<&SplitStats> {
        self.splits.iter().find(|split| {
            split.dimension == dimension
                && split.parent_level.below() == Some(level)
                && split.children.iter().any(|child| child == category)
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Scored questions given to the analysis.
    pub questions: usize,
    pub analysed: usize,
    /// Benchmark questions without a score (not answered or not evaluated), left out; counted
    /// by the caller, which sees the benchmark.
    #[serde(default)]
    pub unscored: usize,
    /// Questions left out (unknown shape), with the reason.
    pub left_out: Vec<LeftOut>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeftOut {
    pub id: String,
    pub reason: String,
}

/// The mean of every metric over a group of questions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Means {
    /// The retrieval means are over the questions whose system named documents; `None` when
    /// none of the group's did.
    pub map: Option<f64>,
    pub ndcg_10: Option<f64>,
    pub recall_10: Option<f64>,
    pub mrr: Option<f64>,
    /// NaN for an empty group (a factorial cell no question fills), written as `null`.
    #[serde(deserialize_with = "nan_if_null")]
    pub cs: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub rouge1: f64,
    /// Mean sentence BLEU (0–100).
    #[serde(deserialize_with = "nan_if_null")]
    pub bleu: f64,
    /// Corpus BLEU (0–100) over the group, when the texts were given.
    pub corpus_bleu: Option<f64>,
    #[serde(deserialize_with = "nan_if_null")]
    pub refusal_rate: f64,
    /// The LLM judge's mean grades, over the questions it graded; absent when it graded none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_correctness: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_hallucination: Option<f64>,
}

impl Means {
    /// The mean of `metric` (sentence BLEU for [`Metric::Bleu`]); NaN for a retrieval mean of
    /// a group whose questions have none.
    pub fn of(&self, metric: crate::Metric) -> f64 {
        use crate::Metric;
        let absent = f64::NAN;
        match metric {
            Metric::Ap => self.map.unwrap_or(absent),
            Metric::Ndcg10 => self.ndcg_10.unwrap_or(absent),
            Metric::Recall10 => self.recall_10.unwrap_or(absent),
            Metric::Rr => self.mrr.unwrap_or(absent),
            Metric::Cs => self.cs,
            Metric::Rouge1 => self.rouge1,
            Metric::Bleu => self.bleu,
            Metric::Refused => self.refusal_rate,
            Metric::Judge => self.judge.unwrap_or(absent),
            Metric::JudgeCorrectness => self.judge_correctness.unwrap_or(absent),
            Metric::JudgeHallucination => self.judge_hallucination.unwrap_or(absent),
        }
    }
}

/// A statistic with its bootstrap percentile interval (absent when resampling is off or the
/// replicates were degenerate).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// NaN where there is nothing to estimate (an empty factorial cell): written as `null`,
    /// read back as NaN.
    #[serde(deserialize_with = "nan_if_null")]
    pub value: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci: Option<[f64; 2]>,
}

/// One category of a level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CategoryStats {
    pub category: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    pub n: usize,
    pub means: Means,
    /// The mean of the analysed metric with its interval.
    pub metric: Estimate,
}

/// One (set, dimension, level): its categories and how well they discriminate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelStats {
    pub set: String,
    pub dimension: String,
    pub level: Granularity,
    pub n: usize,
    pub means: Means,
    pub categories: Vec<CategoryStats>,
    /// Standard deviation of the category means of the metric (None with < 2 categories).
    pub discpow: Option<Estimate>,
    /// Permutation p-value of DiscPow against labels shuffled within the level.
    pub discpow_p: Option<f64>,
    /// DiscPow without the sampling noise of the category means: the spread of the true means,
    /// √max(0, DiscPow² − the noise's expected share), with the bootstrap interval mapped the
    /// same way (None when a category has fewer than two questions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discpow_corrected: Option<Estimate>,
    /// The DiscPow expected with no category effect at these category sizes and
    /// within-category variances (seeded simulation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discpow_noise_floor: Option<f64>,
    /// max − min of the category means.
    pub range: Option<Estimate>,
    /// NMI between category labels and equal-frequency bins of the metric.
    pub nmi: Option<f64>,
    /// DiscPow relative to the next coarser level of the same dimension.
    pub delta: Option<Delta>,
}

/// DiscPow(level) / DiscPow(coarser level).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Delta {
    pub against: Granularity,
    pub ratio: Estimate,
    /// The same ratio of the noise-corrected DiscPows (None when the coarser one is zero).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corrected: Option<Estimate>,
    /// The bootstrap p-value of "no gain" (ratio ≤ 1): twice the share of replicates at or
    /// below 1 (None without the bootstrap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p: Option<f64>,
    /// The same for the corrected ratio; when the coarser corrected DiscPow is zero, of "no
    /// spread beyond noise at this level" (corrected DiscPow ≤ 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_corrected: Option<f64>,
}

/// How well a split's children subdivide their parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Calibration {
    /// ρ > 2: children discriminate and stay aligned with the parent.
    Well,
    /// 1 ≤ ρ ≤ 2.
    Moderate,
    /// ρ < 1.
    Poor,
    /// σ_sib is not clearly above what the children's sampling noise alone gives (only in
    /// [`SplitStats::calibration_against_chance`]).
    Noise,
}

impl Calibration {
    pub fn of(rho: f64) -> Calibration {
        if rho > 2.0 {
            Calibration::Well
        } else if rho >= 1.0 {
            Calibration::Moderate
        } else {
            Calibration::Poor
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Calibration::Well => "well calibrated (ρ > 2)",
            Calibration::Moderate => "moderate (1 ≤ ρ ≤ 2)",
            Calibration::Poor => "poor (ρ < 1)",
            Calibration::Noise => "indistinguishable from noise at this n",
        }
    }
}

/// One split: a parent and its children one level down (docs/design.md, "Analysis", Coherence Ratio).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SplitStats {
    pub dimension: String,
    pub parent_level: Granularity,
    pub parent: String,
    /// Mean of the metric over the parent's own questions at its level.
    pub parent_mean: f64,
    pub children: Vec<String>,
    pub children_means: Vec<f64>,
    /// Population standard deviation of the children's means.
    pub sigma_sib: Estimate,
    /// |parent mean − mean of the children's means|.
    pub delta_vert: Estimate,
    pub rho: Estimate,
    pub calibration: Calibration,
    /// The σ_sib expected when the children carry no effect of their own (their sampling
    /// noise alone, seeded simulation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sigma_sib_noise_floor: Option<f64>,
    /// The δ_vert expected when neither parent nor children carry an effect: E|N(0, v)|, v the
    /// noise variance of the parent's mean minus the mean of the children's means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta_vert_noise_floor: Option<f64>,
    /// The chance of a σ_sib at least this large when the children carry no effect of their own
    /// (child labels permuted among the children's questions, seeded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sigma_sib_p: Option<f64>,
    /// The chance of a ρ at least this large under the same permutations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rho_p: Option<f64>,
    /// The paper's label, given only when σ_sib is clearly above chance (`sigma_sib_p` below
    /// 1 − confidence); otherwise [`Calibration::Noise`]. None without permutations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration_against_chance: Option<Calibration>,
}

/// Per dimension: mean ρ and the recommendation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DimensionSummary {
    pub dimension: String,
    pub name: String,
    pub levels: Vec<Granularity>,
    /// Mean ρ over the dimension's splits.
    pub mean_rho: Option<f64>,
    pub recommendation: Option<Recommendation>,
}

/// The recommended granularity of a dimension with the reason in words (each step down the
/// levels, and why it was or was not taken).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recommendation {
    pub level: Granularity,
    pub reason: String,
    /// Steps tested across every dimension of the analysis: the family whose error rate the
    /// recommendation holds (Holm).
    #[serde(default)]
    pub comparisons: usize,
    /// Each step down this dimension's levels, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<Step>,
}

/// One step of a recommendation: from a level to the next finer one.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub level: Granularity,
    pub against: Granularity,
    /// The step's p-value: the larger of Δ's and Δ corrected's, and never below the previous
    /// step's (a finer level is only reached through the coarser one). None without the
    /// bootstrap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p: Option<f64>,
    /// `p` after Holm's adjustment over every step of every dimension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_adjusted: Option<f64>,
    pub taken: bool,
}

/// Table 1: one coarse level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Table1Row {
    pub dimension: String,
    pub set: String,
    pub n: usize,
    /// MAP; `None` when no question of the row has retrieval metrics.
    pub map: Option<f64>,
    /// Mean of the analysed metric.
    pub metric: f64,
    pub range: Option<f64>,
    /// 1 = the largest range.
    pub rank: Option<usize>,
}

/// Table 2: one level of a dimension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Table2Row {
    pub dimension: String,
    pub level: Granularity,
    pub n_categories: usize,
    pub n: usize,
    /// MAP; `None` when no question of the row has retrieval metrics.
    pub map: Option<f64>,
    pub metric: f64,
    pub nmi: Option<f64>,
    pub discpow: Option<Estimate>,
    pub delta: Option<Estimate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discpow_corrected: Option<Estimate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discpow_noise_floor: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta_corrected: Option<Estimate>,
}

/// Table 3: the best and worst categories of a dimension's finest level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Table3Block {
    pub dimension: String,
    pub level: Granularity,
    pub top: Vec<Table3Row>,
    pub bottom: Vec<Table3Row>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Table3Row {
    pub category: String,
    pub n: usize,
    /// MAP; `None` when no question of the row has retrieval metrics.
    pub map: Option<f64>,
    pub metric: Estimate,
}

/// A factorial set (Table 4): cells, marginal means, effects and the interaction test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Factorial {
    pub set: String,
    pub factors: Vec<Factor>,
    pub cells: Vec<FactorialCell>,
    /// Within each category of the first factor, each category of the second against the
    /// second factor's first category (the paper's "Gap").
    pub gaps: Vec<Gap>,
    pub marginals: Vec<Marginal>,
    /// One per factor, from the unweighted marginal means.
    pub main_effects: Vec<Effect>,
    /// The interaction contrast of a 2×2 design.
    pub interaction: Option<Effect>,
    /// Two-way ANOVA (unequal n, sum contrasts, type III) of the metric.
    pub anova: Option<Anova>,
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Factor {
    pub dimension: String,
    pub level: Granularity,
    pub categories: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FactorialCell {
    /// One category per factor, in factor order.
    pub categories: Vec<String>,
    pub n: usize,
    pub means: Means,
    pub metric: Estimate,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gap {
    /// The category of the first factor held fixed.
    pub within: String,
    pub from: String,
    pub to: String,
    /// Mean(to) − mean(from) of the metric.
    pub value: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Marginal {
    pub dimension: String,
    pub category: String,
    pub n: usize,
    /// n-weighted means over the cells of this category (the paper's "pooled").
    pub pooled: Means,
    /// Unweighted mean of the cell means of the metric; NaN (`null`) when a cell is empty.
    #[serde(deserialize_with = "nan_if_null")]
    pub unweighted: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Effect {
    /// What is compared, e.g. `lv: distant − similar`.
    pub contrast: String,
    pub value: Estimate,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AnovaTerm {
    pub sum_sq: f64,
    pub df: f64,
    pub f: f64,
    pub p: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Anova {
    pub first: AnovaTerm,
    pub second: AnovaTerm,
    pub interaction: AnovaTerm,
    pub residual_sum_sq: f64,
    pub residual_df: f64,
}

/// An `f64` that JSON wrote as `null` (serde_json writes NaN so) reads back as NaN.
fn nan_if_null<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(deserializer)?.unwrap_or(f64::NAN))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty factorial cell's NaN is written as `null` and read back (so that `hierarag
    /// report` reads an analysis.json with one); a value round-trips exactly.
    #[test]
    fn an_estimate_of_nothing_round_trips_through_null() {
        let empty = Estimate {
            value: f64::NAN,
            ci: None,
        };
        let json = serde_json::to_string(&empty).unwrap();
        assert_eq!(json, r#"{"value":null}"#);
        assert!(
            serde_json::from_str::<Estimate>(&json)
                .unwrap()
                .value
                .is_nan()
        );
        let some = Estimate {
            value: 0.25,
            ci: Some([0.125, 0.5]),
        };
        let back: Estimate = serde_json::from_str(&serde_json::to_string(&some).unwrap()).unwrap();
        assert_eq!(back, some);
    }
}
