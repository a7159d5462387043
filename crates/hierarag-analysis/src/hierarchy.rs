//! Across levels of one dimension: Δ, the Coherence Ratio of each split, and the recommended
//! granularity.

use hierarag_plan::derive_seed;
use hierarag_stats as stats;
use hierarag_taxonomy::{Granularity, Taxonomy};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use crate::input::Settings;
use crate::levels::{LevelGroup, interval, label_means};
use crate::model::{
    Calibration, Delta, DimensionSummary, Estimate, LevelStats, Recommendation, SplitStats,
};
use crate::noise::NoiseModel;

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
        let corrected = corrected_delta(
            &groups[coarse],
            &groups[fine],
            &stats_of[coarse],
            &stats_of[fine],
            settings,
        );
        stats_of[fine].delta = Some(Delta {
            against: coarse_level,
            ratio: Estimate {
                value: ratio,
                ci: interval(replicates, settings),
            },
            corrected,
        });
    }
}

/// Δ of the noise-corrected DiscPows, with its interval from the same replicates; None when the
/// coarser level's corrected DiscPow is zero (all of its spread is noise).
fn corrected_delta(
    coarse: &LevelGroup<'_>,
    fine: &LevelGroup<'_>,
    coarse_stats: &LevelStats,
    fine_stats: &LevelStats,
    settings: &Settings,
) -> Option<Estimate> {
    let upper = coarse_stats.discpow_corrected?;
    let lower = fine_stats.discpow_corrected?;
    if upper.value <= 0.0 {
        return None;
    }
    let (coarse_noise, fine_noise) = (coarse.noise(settings)?, fine.noise(settings)?);
    let corrected = |noise: &NoiseModel, means: &[f64]| {
        stats::std_dev(means, settings.ddof)
            .and_then(|sd| noise.corrected(sd, settings.ddof))
            .unwrap_or(f64::NAN)
    };
    let replicates = coarse
        .replicates
        .iter()
        .zip(&fine.replicates)
        .map(|(c, f)| corrected(&fine_noise, f) / corrected(&coarse_noise, c));
    Some(Estimate {
        value: lower.value / upper.value,
        ci: interval(replicates, settings),
    })
}

/// σ_sib, δ_vert and ρ of a parent mean and its children's means.
fn coherence(parent_mean: f64, children_means: &[f64], settings: &Settings) -> (f64, f64, f64) {
    let sigma = stats::std_dev(children_means, 0).unwrap_or(f64::NAN);
    let delta = (parent_mean - stats::mean(children_means).unwrap_or(f64::NAN)).abs();
    (sigma, delta, sigma / (delta + settings.epsilon))
}

/// What a split looks like by chance: noise floors of σ_sib and δ_vert, and the permutation
/// p-values of σ_sib and ρ with the children's labels shuffled among their questions.
struct Chance {
    sigma_floor: Option<f64>,
    delta_floor: Option<f64>,
    sigma_p: Option<f64>,
    rho_p: Option<f64>,
}

fn chance(
    label: &str,
    parent: &[f64],
    children: &[Vec<f64>],
    observed: (f64, f64, f64),
    settings: &Settings,
) -> Chance {
    let parent_mean = stats::mean(parent).unwrap_or(f64::NAN);
    let noise = NoiseModel::of(children);
    let mut rng =
        ChaCha8Rng::seed_from_u64(derive_seed(settings.seed, &format!("chance-floor/{label}")));
    let sigma_floor = noise.as_ref().and_then(|n| n.floor(0, &mut rng));
    // δ_vert with no effect anywhere: |parent mean − mean of the children's means| is
    // N(0, v_parent + Σ v_k / K²), whose mean absolute value is √(2v/π).
    let delta_floor = stats::std_dev(parent, 1)
        .zip(noise.as_ref())
        .map(|(sd, noise)| {
            let k = children.len() as f64;
            let children_part = noise.total_variance() / (k * k);
            let v = sd * sd / parent.len() as f64 + children_part;
            (2.0 * v / std::f64::consts::PI).sqrt()
        });
    if settings.permutations == 0 {
        return Chance {
            sigma_floor,
            delta_floor,
            sigma_p: None,
            rho_p: None,
        };
    }
    let mut rng = ChaCha8Rng::seed_from_u64(derive_seed(settings.seed, &format!("chance/{label}")));
    let values: Vec<f64> = children.iter().flatten().copied().collect();
    let mut labels: Vec<usize> = children
        .iter()
        .enumerate()
        .flat_map(|(k, c)| std::iter::repeat_n(k, c.len()))
        .collect();
    let (mut sigmas, mut rhos) = (Vec::new(), Vec::new());
    for _ in 0..settings.permutations {
        labels.shuffle(&mut rng);
        let means = label_means(&labels, &values, children.len());
        let (sigma, _, rho) = coherence(parent_mean, &means, settings);
        // As for DiscPow's test: an arrangement that reproduces the observed one counts.
        sigmas.push(sigma + 1e-12);
        rhos.push(rho + 1e-12);
    }
    Chance {
        sigma_floor,
        delta_floor,
        sigma_p: Some(stats::permutation_p(observed.0, &sigmas)),
        rho_p: Some(stats::permutation_p(observed.2, &rhos)),
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
        let parent_mean = upper.category_mean(parent_k, settings);
        let children_means: Vec<f64> = child_ks
            .iter()
            .map(|&k| lower.category_mean(k, settings))
            .collect();
        let (sigma, delta, rho) = coherence(parent_mean, &children_means, settings);
        let replicates: Vec<(f64, f64, f64)> = upper
            .replicates
            .iter()
            .zip(&lower.replicates)
            .map(|(u, l)| {
                let children: Vec<f64> = child_ks.iter().map(|&k| l[k]).collect();
                coherence(u[parent_k], &children, settings)
            })
            .collect();
        let upper_samples = upper.samples(settings);
        let lower_samples = lower.samples(settings);
        let children_samples: Vec<Vec<f64>> =
            child_ks.iter().map(|&k| lower_samples[k].clone()).collect();
        let chance = chance(
            &format!(
                "{}/{dimension}/{}/{}",
                upper.set, split.parent_level, split.parent.name
            ),
            &upper_samples[parent_k],
            &children_samples,
            (sigma, delta, rho),
            settings,
        );
        let alpha = 1.0 - settings.confidence;
        let calibration_against_chance = chance.sigma_p.map(|p| {
            if p < alpha {
                Calibration::of(rho)
            } else {
                Calibration::Noise
            }
        });
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
            sigma_sib_noise_floor: chance.sigma_floor,
            delta_vert_noise_floor: chance.delta_floor,
            sigma_sib_p: chance.sigma_p,
            rho_p: chance.rho_p,
            calibration_against_chance,
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
    let mut previous_index = first;
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
        if !beyond_noise(
            &stats_of[previous_index],
            &stats_of[index],
            &pct,
            reasons.last_mut().expect("the step's reason was written"),
        ) {
            break;
        }
        chosen = level;
        previous = discpow;
        previous_index = index;
        previous_level = level;
    }
    Some(Recommendation {
        level: chosen,
        reason: reasons.join("; "),
    })
}

/// The second condition of a step: the gain holds once the sampling noise is taken out. Δ
/// corrected's interval must lie above 1 (without intervals, Δ corrected > 1); when the
/// coarser level's corrected DiscPow is 0 (all its spread is noise), the finer level's corrected
/// DiscPow must be above 0 (its interval's lower bound). Without a corrected DiscPow (a category
/// with one question) the step stands on Δ alone. Completes the step's reason `last` and says
/// whether the step is taken.
fn beyond_noise(coarser: &LevelStats, finer: &LevelStats, pct: &str, last: &mut String) -> bool {
    let (Some(delta), Some(corrected), Some(_)) = (
        finer.delta,
        finer.discpow_corrected,
        coarser.discpow_corrected,
    ) else {
        return true;
    };
    let previous_level = coarser.level;
    let (what, lo, value) = match delta.corrected {
        Some(ratio) => (
            format!("Δ corrected {}", format_delta(ratio.value)),
            ratio.ci.map(|[lo, _]| lo),
            ratio.value,
        ),
        // The coarser level's corrected DiscPow is 0: compare with no spread at all.
        None => (
            format!(
                "corrected DiscPow {:.3} (none at {previous_level})",
                corrected.value
            ),
            corrected.ci.map(|[lo, _]| lo + 1.0),
            corrected.value + 1.0,
        ),
    };
    let supported = match lo {
        Some(lo) => lo > 1.0,
        None => value > 1.0,
    };
    if supported {
        last.push_str(&format!(", and {what} is above the noise"));
    } else {
        last.truncate(last.rfind(':').unwrap_or(last.len()));
        let bound = match lo {
            Some(_) => format!("its {pct} interval"),
            None => "its point estimate".to_owned(),
        };
        last.push_str(&format!(
            ": the gain is within the sampling noise ({what}, {bound} includes no gain beyond \
noise), so {previous_level} stays"
        ));
    }
    supported
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
