//! The analysis of a scored benchmark (docs/design.md, "Analysis"): which question dimension and which
//! granularity reveal the most about a RAG system, and how sure we are.
//!
//! Input is one [`Observation`] per scored question (its set, categories and scores) and the
//! taxonomy (for category order and parents); output is an [`Analysis`], written as
//! `analysis.json`:
//!
//! - per (set, dimension, level) — a [`LevelStats`]: n and the mean of every metric per
//!   category, DiscPow (the standard deviation of the category means of the analysed metric),
//!   range, NMI between categories and equal-frequency bins of the metric, Δ against the
//!   coarser level, a permutation p-value for DiscPow;
//! - per split (a parent with its children one level down) — σ_sib, δ_vert and the Coherence
//!   Ratio ρ = σ_sib / (δ_vert + ε) with its class; per dimension the mean ρ and the
//!   recommended granularity with the reason in words;
//! - the paper's Tables 1–3 for the user's run, and per factorial set (Table 4) the cells,
//!   gaps, pooled and unweighted marginal means, main effects, the interaction contrast and a
//!   two-way ANOVA;
//! - 95% bootstrap percentile intervals (resampling within categories, seeded) for category
//!   means, DiscPow, range, Δ, σ_sib, δ_vert, ρ and the factorial effects.
//!
//! Whatever cannot be computed (a level with one category, a split without its children, an
//! empty factorial cell) is left out and said in [`Analysis::notes`]; nothing here fails on
//! the shape of the data.
//!
//! ```
//! use hierarag_analysis::{Observation, Scores, Settings, analyze};
//! use hierarag_records::CategoryRef;
//! use hierarag_taxonomy::{Granularity, Taxonomy};
//!
//! let question = |id: &str, category: &str, cs: f64| Observation {
//!     id: id.into(),
//!     set: "qc".into(),
//!     categories: vec![CategoryRef {
//!         dimension: "qc".into(),
//!         level: Granularity::Coarse,
//!         category: category.into(),
//!     }],
//!     unanswerable: false,
//!     scores: Scores { cs, ..Scores::default() },
//!     texts: None,
//! };
//! let observations = [
//!     question("a", "simple", 0.6),
//!     question("b", "simple", 0.8),
//!     question("c", "complex", 0.5),
//!     question("d", "complex", 0.7),
//! ];
//! let analysis = analyze(&observations, &Taxonomy::default_taxonomy(), &Settings::default());
//! let level = &analysis.levels[0];
//! // Category means 0.7 and 0.6: population standard deviation 0.05.
//! assert!((level.discpow.unwrap().value - 0.05).abs() < 1e-12);
//! ```

mod compare;
mod factorial;
mod hierarchy;
mod input;
mod levels;
mod means;
mod model;
mod noise;
mod power;
mod refusals;
mod tags;

use std::collections::BTreeMap;

use hierarag_taxonomy::{Granularity, Taxonomy};

pub use compare::{
    AnovaRow, CategoryCount, CategoryDifference, CategoryRank, Comparison, Difference,
    DimensionComparison, LevelComparison, LevelMetric, MetricOverall, MixedAnova, PairLevel,
    PairOverall, RankChanges, Separating, SystemCount, SystemLevel, SystemRecommendation,
    SystemScores, Unanswered, compare, default_threshold,
};
pub use hierarag_records::{
    Agreement, BaselineTest, CategoryAgreement, CoherenceLink, JudgeAgreement, JudgeScale,
    JudgeVsPerson, MetricAgreement, PairKappa, PickAgreement, Quality, ScaleAgreement, Share,
    TaskAgreement,
};
pub use hierarchy::format_delta;
pub use input::{Metric, Observation, Scores, Settings, Texts};
pub use model::{
    Analysis, Anova, AnovaTerm, Calibration, CategoryStats, Counts, Delta, DimensionSummary,
    Effect, Estimate, Factor, Factorial, FactorialCell, Gap, LeftOut, LevelStats, Marginal, Means,
    Recommendation, SplitStats, Step, Table1Row, Table2Row, Table3Block, Table3Row,
};
pub use power::{Detectable, PowerAnalysis, PowerSettings, StepPower, power};
pub use refusals::{CategoryRefusals, RefusalCounts, Refusals, refusals};
pub use tags::{
    AdjustedFactor, AdjustedModel, Confounder, SplitTagAgreement, TagAgreement, TagAnalysis,
    TaggedQuestion, TaggerAnnotator, analyze_tags,
};

/// Analyses scored questions against a taxonomy (see the crate docs).
pub fn analyze(observations: &[Observation], taxonomy: &Taxonomy, settings: &Settings) -> Analysis {
    let mut notes = Vec::new();
    let mut left_out = Vec::new();
    let mut single = Vec::new();
    let mut factorial_sets: BTreeMap<&str, Vec<&Observation>> = BTreeMap::new();
    let without_documents = observations
        .iter()
        .filter(|o| o.scores.ap.is_none())
        .count();
    if without_documents > 0 {
        notes.push(format!(
            "{without_documents} of {} questions have no retrieval metrics: their system named \
no document (no document ids, and no context text found in the index); AP, nDCG@10, Recall@10 \
and RR are over the others{}",
            observations.len(),
            if settings.metric.is_retrieval() {
                format!(
                    ", and the comparison of {} leaves them out",
                    settings.metric
                )
            } else {
                String::new()
            }
        ));
    }
    for observation in observations {
        if settings.metric.value(&observation.scores).is_none() {
            left_out.push(LeftOut {
                id: observation.id.clone(),
                reason: format!(
                    "no {}: {}",
                    settings.metric,
                    settings.metric.absent_because()
                ),
            });
            continue;
        }
        match observation.categories.len() {
            0 => left_out.push(LeftOut {
                id: observation.id.clone(),
                reason: "no category".into(),
            }),
            1 => single.push(observation),
            _ => factorial_sets
                .entry(observation.set.as_str())
                .or_default()
                .push(observation),
        }
    }

    // Levels.
    let mut groups = levels::group(&single, taxonomy);
    if settings.bootstrap > 0 {
        for group in &mut groups {
            levels::bootstrap(group, settings);
        }
    }
    let mut level_stats: Vec<LevelStats> = groups
        .iter()
        .map(|g| levels::level_stats(g, settings, &mut notes))
        .collect();

    // Across levels, per dimension in taxonomy order.
    let dimension_keys = levels::dimension_keys(&groups);
    let mut splits = Vec::new();
    let mut dimensions = Vec::new();
    let mut presents = Vec::new();
    for dimension in dimension_keys {
        let present = hierarchy::levels_of(&groups, dimension, &mut notes);
        if present.is_empty() {
            continue;
        }
        hierarchy::deltas(&groups, &mut level_stats, &present, settings);
        let dimension_splits =
            hierarchy::splits(taxonomy, &groups, dimension, &present, settings, &mut notes);
        dimensions.push(hierarchy::summary(
            taxonomy,
            dimension,
            &present,
            &dimension_splits,
        ));
        splits.extend(dimension_splits);
        presents.push(present);
    }
    let recommendations = hierarchy::recommend_all(&level_stats, &presents, settings);
    for (summary, recommendation) in dimensions.iter_mut().zip(recommendations) {
        summary.recommendation = recommendation;
    }

    // Factorial sets.
    let mut factorials = Vec::new();
    for (set, members) in factorial_sets {
        let shape: Vec<(&str, Granularity)> = members[0]
            .categories
            .iter()
            .map(|c| (c.dimension.as_str(), c.level))
            .collect();
        let (same, other): (Vec<&Observation>, Vec<&Observation>) =
            members.into_iter().partition(|o| {
                o.categories.len() == shape.len()
                    && o.categories
                        .iter()
                        .zip(&shape)
                        .all(|(c, (d, l))| c.dimension == *d && c.level == *l)
            });
        for o in other {
            left_out.push(LeftOut {
                id: o.id.clone(),
                reason: format!(
                    "its categories do not have the factors of set {set} ({})",
                    shape
                        .iter()
                        .map(|(d, l)| format!("{d} {l}"))
                        .collect::<Vec<_>>()
                        .join(" × ")
                ),
            });
        }
        factorials.push(factorial::factorial(set, &same, taxonomy, settings));
    }

    let analysed = observations.len() - left_out.len();
    Analysis {
        settings: settings.clone(),
        counts: Counts {
            questions: observations.len(),
            analysed,
            unscored: 0,
            left_out,
        },
        table1: table1(&level_stats),
        table2: table2(&level_stats, &dimensions),
        table3: table3(&level_stats, &dimensions),
        levels: level_stats,
        splits,
        dimensions,
        factorials,
        notes,
        refusals: refusals::refusals(observations),
        human_validation: None,
        tags: None,
    }
}

/// Table 1: every coarse level, ranked by range (1 = largest).
fn table1(levels: &[LevelStats]) -> Vec<Table1Row> {
    let mut rows: Vec<Table1Row> = levels
        .iter()
        .filter(|l| l.level == Granularity::Coarse)
        .map(|l| Table1Row {
            dimension: l.dimension.clone(),
            set: l.set.clone(),
            n: l.n,
            map: l.means.map,
            metric: metric_mean(l),
            range: l.range.map(|r| r.value),
            rank: None,
        })
        .collect();
    let mut order: Vec<usize> = (0..rows.len())
        .filter(|&i| rows[i].range.is_some())
        .collect();
    order.sort_by(|&i, &j| {
        rows[j]
            .range
            .partial_cmp(&rows[i].range)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| rows[i].dimension.cmp(&rows[j].dimension))
    });
    for (rank, i) in order.into_iter().enumerate() {
        rows[i].rank = Some(rank + 1);
    }
    rows
}

/// The mean of the analysed metric over a level (the mean of its questions).
fn metric_mean(level: &LevelStats) -> f64 {
    let total: f64 = level
        .categories
        .iter()
        .map(|c| c.metric.value * c.n as f64)
        .sum();
    total / level.n as f64
}

/// Table 2: every level of the dimensions with more than one level.
fn table2(levels: &[LevelStats], dimensions: &[DimensionSummary]) -> Vec<Table2Row> {
    dimensions
        .iter()
        .filter(|d| d.levels.len() > 1)
        .flat_map(|d| {
            levels
                .iter()
                .filter(move |l| l.dimension == d.dimension && d.levels.contains(&l.level))
        })
        .map(|l| Table2Row {
            dimension: l.dimension.clone(),
            level: l.level,
            n_categories: l.categories.len(),
            n: l.n,
            map: l.means.map,
            metric: metric_mean(l),
            nmi: l.nmi,
            discpow: l.discpow,
            delta: l.delta.map(|d| d.ratio),
            discpow_corrected: l.discpow_corrected,
            discpow_noise_floor: l.discpow_noise_floor,
            delta_corrected: l.delta.and_then(|d| d.corrected),
        })
        .collect()
}

/// Table 3: the two best and two worst categories of each dimension's finest level, when it
/// has at least four categories.
fn table3(levels: &[LevelStats], dimensions: &[DimensionSummary]) -> Vec<Table3Block> {
    let mut blocks = Vec::new();
    for dimension in dimensions {
        let Some(&finest) = dimension.levels.last() else {
            continue;
        };
        let Some(level) = levels
            .iter()
            .find(|l| l.dimension == dimension.dimension && l.level == finest)
        else {
            continue;
        };
        if level.categories.len() < 4 {
            continue;
        }
        let mut ranked: Vec<&CategoryStats> = level.categories.iter().collect();
        ranked.sort_by(|x, y| {
            y.metric
                .value
                .partial_cmp(&x.metric.value)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then_with(|| x.category.cmp(&y.category))
        });
        let row = |c: &&CategoryStats| Table3Row {
            category: c.category.clone(),
            n: c.n,
            map: c.means.map,
            metric: c.metric,
        };
        blocks.push(Table3Block {
            dimension: dimension.dimension.clone(),
            level: finest,
            top: ranked[..2].iter().map(row).collect(),
            bottom: ranked[ranked.len() - 2..].iter().map(row).collect(),
        });
    }
    blocks
}
