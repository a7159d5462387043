//! Per-category agreement (does the hardest category stay the hardest?) and the granularity
//! findings on both sides.

use hierarag_analysis::{Analysis, Estimate, LevelStats, Metric, Recommendation};
use hierarag_stats::{derive_seed, kendall, percentile_interval, resample_indices, spearman};
use hierarag_taxonomy::{Granularity, Taxonomy};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::coverage::categories;
use crate::{
    Benchmark, CategoryMeans, GranularityAgreement, LevelAgreement, LevelDiscrimination,
    RankCorrelation, Settings, Sides, SystemResult,
};

pub(crate) fn per_category(sides: &Sides, notes: &mut Vec<String>) -> Vec<LevelAgreement> {
    let Sides {
        pairs,
        synthetic,
        human,
        settings,
        ..
    } = *sides;
    let mut out = Vec::new();
    for &metric in &settings.metrics {
        let has = |b: &Benchmark, system: &SystemResult| {
            !crate::values(system, b.questions.iter(), metric).is_empty()
        };
        let (compared, missing): (Vec<_>, Vec<_>) = pairs
            .iter()
            .partition(|(s, h)| has(synthetic, s) && has(human, h));
        // Each system's levels on a thread of its own: the resamples are seeded per category,
        // so the result does not depend on the threads.
        let levels: Vec<Vec<LevelAgreement>> = std::thread::scope(|scope| {
            let handles: Vec<_> = compared
                .iter()
                .map(|&&(s, h)| scope.spawn(move || system_levels(sides, metric, s, h)))
                .collect();
            handles
                .into_iter()
                .map(|handle| {
                    handle
                        .join()
                        .expect("the agreement of a system does not panic")
                })
                .collect()
        });
        out.extend(levels.into_iter().flatten());
        if !missing.is_empty() {
            let names: Vec<&str> = missing.iter().map(|(s, _)| s.name.as_str()).collect();
            notes.push(format!(
                "{metric}: no per-category agreement for {} (one side has no {metric}: {})",
                names.join(", "),
                metric.absent_because()
            ));
        }
    }
    out
}

/// One system's per-category agreement on `metric`, level by level.
fn system_levels(
    sides: &Sides,
    metric: Metric,
    s: &SystemResult,
    h: &SystemResult,
) -> Vec<LevelAgreement> {
    let Sides {
        taxonomy,
        levels,
        synthetic,
        human,
        settings,
        ..
    } = *sides;
    let mut out = Vec::new();
    for (dimension, level) in levels {
        let mut rows = Vec::new();
        for category in categories(taxonomy, dimension, *level) {
            let of = |b: &Benchmark, system: &SystemResult| {
                crate::values(
                    system,
                    b.questions
                        .iter()
                        .filter(|q| q.category(dimension, *level) == Some(&category)),
                    metric,
                )
            };
            let (sv, hv) = (of(synthetic, s), of(human, h));
            if sv.is_empty() || hv.is_empty() {
                continue;
            }
            let label = format!("{}/{metric}/{dimension}/{level}/{category}", s.name);
            rows.push(CategoryMeans {
                synthetic_n: sv.len(),
                human_n: hv.len(),
                synthetic: mean_estimate(&sv, settings, &format!("synthetic/{label}")),
                human: mean_estimate(&hv, settings, &format!("human/{label}")),
                category,
            });
        }
        if rows.is_empty() {
            continue;
        }
        let sm: Vec<f64> = rows.iter().map(|r| r.synthetic.value).collect();
        let hm: Vec<f64> = rows.iter().map(|r| r.human.value).collect();
        let lowest = |means: &[f64]| {
            means
                .iter()
                .enumerate()
                .min_by(|a, b| a.1.total_cmp(b.1))
                .map(|(i, _)| rows[i].category.clone())
        };
        let as_rank = |c: hierarag_stats::Correlation| RankCorrelation { r: c.r, p: c.p };
        out.push(LevelAgreement {
            system: s.name.clone(),
            metric,
            dimension: dimension.clone(),
            level: *level,
            spearman: spearman(&sm, &hm).map(as_rank),
            kendall: kendall(&sm, &hm).map(as_rank),
            synthetic_lowest: lowest(&sm),
            human_lowest: lowest(&hm),
            categories: rows,
        });
    }
    out
}

/// The mean with the percentile interval of `settings.bootstrap` resamples (none with
/// resampling off or fewer than two values).
pub(crate) fn mean_estimate(values: &[f64], settings: &Settings, label: &str) -> Estimate {
    let value = hierarag_stats::mean(values).unwrap_or(f64::NAN);
    let ci = (settings.bootstrap > 0 && values.len() >= 2)
        .then(|| {
            let mut rng = ChaCha8Rng::seed_from_u64(derive_seed(settings.seed, label));
            let mut indices = Vec::with_capacity(values.len());
            let replicates: Vec<f64> = (0..settings.bootstrap)
                .map(|_| {
                    resample_indices(&mut rng, values.len(), &mut indices);
                    indices.iter().map(|&i| values[i]).sum::<f64>() / values.len() as f64
                })
                .collect();
            percentile_interval(&replicates, settings.confidence).map(|i| [i.lo, i.hi])
        })
        .flatten();
    Estimate { value, ci }
}

pub(crate) fn granularity(
    taxonomy: &Taxonomy,
    pairs: &[(&SystemResult, &SystemResult)],
) -> Vec<GranularityAgreement> {
    let mut out = Vec::new();
    for &(s, h) in pairs {
        for dimension in &taxonomy.dimensions {
            let key = dimension.key.as_str();
            let (synthetic, human) = (
                discrimination(&s.analysis, key),
                discrimination(&h.analysis, key),
            );
            if synthetic.is_empty() || human.is_empty() {
                continue;
            }
            let (sr, hr) = (recommended(&s.analysis, key), recommended(&h.analysis, key));
            let reason = match (sr, hr) {
                (Some(a), Some(b)) if a.level == b.level => {
                    format!("both benchmarks recommend the {} level of {key}", a.level)
                }
                (Some(a), Some(b)) => format!(
                    "the synthetic benchmark recommends {} and the human questions {}: {}",
                    a.level, b.level, b.reason
                ),
                (Some(a), None) => format!(
                    "the synthetic benchmark recommends {}; the human questions support no \
recommendation (fewer than two of {key}'s levels with two or more categories)",
                    a.level
                ),
                (None, Some(b)) => format!(
                    "the human questions recommend {}; the synthetic benchmark supports none",
                    b.level
                ),
                (None, None) => "neither benchmark supports a recommendation".to_owned(),
            };
            out.push(GranularityAgreement {
                system: s.name.clone(),
                dimension: key.to_owned(),
                synthetic,
                human,
                synthetic_recommended: sr.map(|r| r.level),
                human_recommended: hr.map(|r| r.level),
                agree: matches!((sr, hr), (Some(a), Some(b)) if a.level == b.level),
                reason,
            });
        }
    }
    out
}

fn recommended<'a>(analysis: &'a Analysis, dimension: &str) -> Option<&'a Recommendation> {
    analysis
        .dimensions
        .iter()
        .find(|d| d.dimension == dimension)
        .and_then(|d| d.recommendation.as_ref())
}

/// Per level of `dimension`, the analysis' largest set at that level.
fn discrimination(analysis: &Analysis, dimension: &str) -> Vec<LevelDiscrimination> {
    Granularity::ALL
        .iter()
        .filter_map(|&level| {
            let stats: &LevelStats = analysis
                .levels
                .iter()
                .filter(|l| l.dimension == dimension && l.level == level)
                .max_by_key(|l| l.n)?;
            Some(LevelDiscrimination {
                level,
                discpow: stats.discpow,
                discpow_corrected: stats.discpow_corrected,
                noise_floor: stats.discpow_noise_floor,
            })
        })
        .collect()
}

/// Whether a lower value of the metric is the better one.
pub(crate) fn lower_is_better(metric: Metric) -> bool {
    matches!(metric, Metric::JudgeHallucination | Metric::Refused)
}
