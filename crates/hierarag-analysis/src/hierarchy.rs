//! Across levels of one dimension: Δ, the Coherence Ratio of each split, and the recommended
//! granularity.

use hierarag_stats as stats;
use hierarag_taxonomy::{Granularity, Taxonomy};

use crate::input::Settings;
use crate::levels::{LevelGroup, interval};
use crate::model::{
    Calibration, Delta, DimensionSummary, Estimate, LevelStats, Recommendation, SplitStats,
};

/// The one group of each level of a dimension, or None (with a note) when a level has groups
/// from several sets (then levels cannot be paired).
pub(crate) fn levels_of<'g, 'a>(
    groups: &'g [LevelGroup<'a>],
    dimension: &str,
    notes: &mut Vec<String>,
) -> Vec<(Granularity, usize)> {
    let mut found: Vec<(Granularity, usize)> = Vec::new();
    for level in Granularity::ALL {
        let indices: Vec<usize> = groups
            .iter()
            .enumerate()
            .filter(|(_, g)| g.dimension == dimension && g.level == level)
            .map(|(i, _)| i)
            .collect();
        match indices.as_slice() {
            [] => {}
            [one] => found.push((level, *one)),
            several => {
                let sets: Vec<&str> = several.iter().map(|&i| groups[i].set.as_str()).collect();
                notes.push(format!(
                    "{dimension} {level}: questions from several sets ({}); Δ, splits and the \
recommendation compare one set per level, so they are left out for this dimension",
                    sets.join(", ")
                ));
                return Vec::new();
            }
        }
    }
    found
}

/// Δ of each level against the next coarser level present.
pub(crate) fn deltas(
    groups: &[LevelGroup<'_>],
    stats_of: &mut [LevelStats],
    levels: &[(Granularity, usize)],
    settings: &Settings,
) {
    for pair in levels.windows(2) {
        let (coarse_level, coarse) = pair[0];
        let (_, fine) = pair[1];
        let (Some(upper), Some(lower)) = (stats_of[coarse].discpow, stats_of[fine].discpow) else {
            continue;
        };
        let ratio = lower.value / upper.value;
        let replicates = groups[coarse]
            .replicates
            .iter()
            .zip(&groups[fine].replicates)
            .map(|(c, f)| {
                stats::std_dev(f, settings.ddof).unwrap_or(f64::NAN)
                    / stats::std_dev(c, settings.ddof).unwrap_or(f64::NAN)
            });
        stats_of[fine].delta = Some(Delta {
            against: coarse_level,
            ratio: Estimate {
                value: ratio,
                ci: interval(replicates, settings),
            },
        });
    }
}

/// The Coherence Ratio of every split of a dimension whose two levels were both generated.
pub(crate) fn splits(
    taxonomy: &Taxonomy,
    groups: &[LevelGroup<'_>],
    dimension: &str,
    levels: &[(Granularity, usize)],
    settings: &Settings,
    notes: &mut Vec<String>,
) -> Vec<SplitStats> {
    let group_at = |level: Granularity| {
        levels
            .iter()
            .find(|(l, _)| *l == level)
            .map(|&(_, i)| &groups[i])
    };
    let mut out = Vec::new();
    for split in taxonomy.splits(dimension) {
        let Some(child_level) = split.parent_level.below() else {
            continue;
        };
        let (Some(upper), Some(lower)) = (group_at(split.parent_level), group_at(child_level))
        else {
            continue;
        };
        let name = format!("{dimension} split {}", split.parent.name);
        let Some(parent_k) = upper.index_of(&split.parent.name) else {
            notes.push(format!(
                "{name}: the parent has no scored questions at {}",
                split.parent_level
            ));
            continue;
        };
        let child_ks: Vec<usize> = split
            .children
            .iter()
            .filter_map(|c| lower.index_of(&c.name))
            .collect();
        if child_ks.len() < 2 {
            notes.push(format!(
                "{name}: {} of its {} children have scored questions; ρ needs two",
                child_ks.len(),
                split.children.len()
            ));
            continue;
        }
        let coherence = |parent_mean: f64, children_means: &[f64]| {
            let sigma = stats::std_dev(children_means, 0).unwrap_or(f64::NAN);
            let delta = (parent_mean - stats::mean(children_means).unwrap_or(f64::NAN)).abs();
            (sigma, delta, sigma / (delta + settings.epsilon))
        };
        let parent_mean = upper.category_mean(parent_k, settings);
        let children_means: Vec<f64> = child_ks
            .iter()
            .map(|&k| lower.category_mean(k, settings))
            .collect();
        let (sigma, delta, rho) = coherence(parent_mean, &children_means);
        let replicates: Vec<(f64, f64, f64)> = upper
            .replicates
            .iter()
            .zip(&lower.replicates)
            .map(|(u, l)| {
                let children: Vec<f64> = child_ks.iter().map(|&k| l[k]).collect();
                coherence(u[parent_k], &children)
            })
            .collect();
        out.push(SplitStats {
            dimension: dimension.to_owned(),
            parent_level: split.parent_level,
            parent: split.parent.name.clone(),
            parent_mean,
            children: child_ks
                .iter()
                .map(|&k| lower.categories[k].0.clone())
                .collect(),
            children_means,
            sigma_sib: Estimate {
                value: sigma,
                ci: interval(replicates.iter().map(|r| r.0), settings),
            },
            delta_vert: Estimate {
                value: delta,
                ci: interval(replicates.iter().map(|r| r.1), settings),
            },
            rho: Estimate {
                value: rho,
                ci: interval(replicates.iter().map(|r| r.2), settings),
            },
            calibration: Calibration::of(rho),
        });
    }
    out
}

/// Mean ρ and the recommended level of one dimension.
pub(crate) fn summary(
    taxonomy: &Taxonomy,
    dimension: &str,
    stats_of: &[LevelStats],
    levels: &[(Granularity, usize)],
    splits: &[SplitStats],
    settings: &Settings,
) -> DimensionSummary {
    let rhos: Vec<f64> = splits.iter().map(|s| s.rho.value).collect();
    DimensionSummary {
        dimension: dimension.to_owned(),
        name: taxonomy
            .dimension(dimension)
            .map_or_else(|| dimension.to_owned(), |d| d.name.clone()),
        levels: levels.iter().map(|(l, _)| *l).collect(),
        mean_rho: stats::mean(&rhos),
        recommendation: recommend(stats_of, levels, settings),
    }
}

/// The finest level reached by steps whose DiscPow gain over the coarser level is supported
/// by the interval of Δ (its lower bound above 1); without intervals, by the point estimate.
fn recommend(
    stats_of: &[LevelStats],
    levels: &[(Granularity, usize)],
    settings: &Settings,
) -> Option<Recommendation> {
    let (first_level, first) = *levels.first()?;
    let pct = format!("{:.0}%", settings.confidence * 100.0);
    let mut chosen = first_level;
    let mut reasons: Vec<String> = Vec::new();
    let Some(first_discpow) = stats_of[first].discpow else {
        return Some(Recommendation {
            level: first_level,
            reason: format!(
                "{first_level}: DiscPow cannot be computed (fewer than two categories with \
questions), so finer levels cannot be compared with it"
            ),
        });
    };
    if levels.len() == 1 {
        return Some(Recommendation {
            level: first_level,
            reason: format!(
                "only the {first_level} level was generated (DiscPow {:.3}); generate the other \
levels (design rq2) to compare granularities",
                first_discpow.value
            ),
        });
    }
    let mut previous = first_discpow;
    let mut previous_level = first_level;
    for &(level, index) in &levels[1..] {
        let (Some(discpow), Some(delta)) = (stats_of[index].discpow, stats_of[index].delta) else {
            reasons.push(format!(
                "{level}: DiscPow cannot be computed; stop at {chosen}"
            ));
            break;
        };
        let head = format!(
            "{level}: DiscPow {:.3} vs {:.3} at {previous_level} (Δ {})",
            discpow.value,
            previous.value,
            format_delta(delta.ratio.value)
        );
        let supported = match delta.ratio.ci {
            Some([lo, hi]) => {
                let ci = format!("{pct} CI {}–{}", format_ratio(lo), format_ratio(hi));
                if lo > 1.0 {
                    reasons.push(format!("{head}, {ci}: the gain is supported"));
                    true
                } else if delta.ratio.value > 1.0 {
                    reasons.push(format!(
                        "{head}, {ci}: the interval includes no gain, so {previous_level} stays"
                    ));
                    false
                } else {
                    reasons.push(format!("{head}, {ci}: no gain, so {previous_level} stays"));
                    false
                }
            }
            None => {
                let gain = delta.ratio.value > 1.0;
                reasons.push(format!(
                    "{head}, judged on the point estimate (bootstrap off): {}",
                    if gain { "a gain" } else { "no gain" }
                ));
                gain
            }
        };
        if !supported {
            break;
        }
        chosen = level;
        previous = discpow;
        previous_level = level;
    }
    Some(Recommendation {
        level: chosen,
        reason: reasons.join("; "),
    })
}

/// Δ as the paper writes it: `4.8×` for a gain, `-16%` for a loss.
pub fn format_delta(ratio: f64) -> String {
    if !ratio.is_finite() {
        "–".into()
    } else if ratio >= 1.0 {
        format!("{ratio:.1}×")
    } else {
        format!("{:.0}%", (ratio - 1.0) * 100.0)
    }
}

fn format_ratio(ratio: f64) -> String {
    if ratio.is_finite() {
        format!("{ratio:.2}×")
    } else {
        "∞".into()
    }
}
