//! Across levels of one dimension: Δ, the Coherence Ratio of each split, and the recommended
//! granularity.

use hierarag_stats as stats;
use hierarag_stats::derive_seed;
use hierarag_taxonomy::{Granularity, Taxonomy};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use crate::input::Settings;
use crate::levels::{LevelGroup, interval, label_means};
use crate::model::{
    Calibration, Delta, DimensionSummary, Estimate, LevelStats, Recommendation, SplitStats, Step,
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

/// Δ of each level against the next coarser level present, with its bootstrap p-values.
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
        let replicates: Vec<f64> = groups[coarse]
            .replicates
            .iter()
            .zip(&groups[fine].replicates)
            .map(|(c, f)| {
                stats::std_dev(f, settings.ddof).unwrap_or(f64::NAN)
                    / stats::std_dev(c, settings.ddof).unwrap_or(f64::NAN)
            })
            .collect();
        let (corrected, p_corrected) = corrected_delta(
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
                ci: interval(replicates.iter().copied(), settings),
            },
            corrected,
            p: stats::bootstrap_p(&replicates, 1.0),
            p_corrected,
        });
    }
}

/// Δ of the noise-corrected DiscPows, with its interval and p-value from the same replicates.
/// When the coarser level's corrected DiscPow is zero (all of its spread is noise) there is no
/// ratio, and the p-value is that of the finer level's corrected DiscPow being zero too.
fn corrected_delta(
    coarse: &LevelGroup<'_>,
    fine: &LevelGroup<'_>,
    coarse_stats: &LevelStats,
    fine_stats: &LevelStats,
    settings: &Settings,
) -> (Option<Estimate>, Option<f64>) {
    let (Some(upper), Some(lower)) = (coarse_stats.discpow_corrected, fine_stats.discpow_corrected)
    else {
        return (None, None);
    };
    let (Some(coarse_noise), Some(fine_noise)) = (coarse.noise(settings), fine.noise(settings))
    else {
        return (None, None);
    };
    let corrected = |noise: &NoiseModel, means: &[f64]| {
        stats::std_dev(means, settings.ddof)
            .and_then(|sd| noise.corrected(sd, settings.ddof))
            .unwrap_or(f64::NAN)
    };
    if upper.value <= 0.0 {
        let finer: Vec<f64> = fine
            .replicates
            .iter()
            .map(|f| corrected(&fine_noise, f))
            .collect();
        return (None, stats::bootstrap_p(&finer, 0.0));
    }
    let replicates: Vec<f64> = coarse
        .replicates
        .iter()
        .zip(&fine.replicates)
        .map(|(c, f)| corrected(&fine_noise, f) / corrected(&coarse_noise, c))
        .collect();
    let estimate = Estimate {
        value: lower.value / upper.value,
        ci: interval(replicates.iter().copied(), settings),
    };
    (Some(estimate), stats::bootstrap_p(&replicates, 1.0))
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

/// Mean ρ of one dimension; its recommendation comes from [`recommend_all`], which sees every
/// dimension.
pub(crate) fn summary(
    taxonomy: &Taxonomy,
    dimension: &str,
    levels: &[(Granularity, usize)],
    splits: &[SplitStats],
) -> DimensionSummary {
    let rhos: Vec<f64> = splits.iter().map(|s| s.rho.value).collect();
    DimensionSummary {
        dimension: dimension.to_owned(),
        name: taxonomy
            .dimension(dimension)
            .map_or_else(|| dimension.to_owned(), |d| d.name.clone()),
        levels: levels.iter().map(|(l, _)| *l).collect(),
        mean_rho: stats::mean(&rhos),
        recommendation: None,
    }
}

/// The p-value of one step: the larger of Δ's and Δ corrected's (a step must pass both), 1
/// where a point estimate shows no gain. None without the bootstrap or without Δ.
fn step_p(coarser: &LevelStats, finer: &LevelStats) -> Option<f64> {
    let delta = finer.delta?;
    let mut p = delta.p?;
    if delta.ratio.value <= 1.0 {
        p = 1.0;
    }
    if coarser.discpow_corrected.is_some() && finer.discpow_corrected.is_some() {
        let no_corrected_gain = match delta.corrected {
            Some(ratio) => ratio.value <= 1.0,
            None => finer.discpow_corrected.is_some_and(|c| c.value <= 0.0),
        };
        let corrected = if no_corrected_gain {
            1.0
        } else {
            delta.p_corrected.unwrap_or(1.0)
        };
        p = p.max(corrected);
    }
    Some(p)
}

/// The recommended level of every dimension (`dimensions[d]`: its levels present, coarse
/// first), holding the family-wise error rate at 1 − confidence over every step tested.
///
/// A step from a level to the next finer one is tested by its p-value ([`step_p`]: the gain
/// in DiscPow and the gain once the noise is taken out must both be beyond chance), made no
/// smaller than the previous step's so that a finer level is only reached through the coarser
/// one. Holm's adjustment runs over the steps of all dimensions together; a dimension walks
/// down while its steps' adjusted p-values are below 1 − confidence. Without the bootstrap
/// there are no p-values: steps are judged on the point estimates, without error control.
pub(crate) fn recommend_all(
    stats_of: &[LevelStats],
    dimensions: &[Vec<(Granularity, usize)>],
    settings: &Settings,
) -> Vec<Option<Recommendation>> {
    let chains: Vec<Vec<Option<f64>>> = dimensions
        .iter()
        .map(|levels| {
            let mut previous: Option<f64> = Some(0.0);
            levels
                .windows(2)
                .map(|pair| {
                    let p = previous.and_then(|before| {
                        step_p(&stats_of[pair[0].1], &stats_of[pair[1].1]).map(|p| p.max(before))
                    });
                    previous = p;
                    p
                })
                .collect()
        })
        .collect();
    let family: Vec<f64> = chains.iter().flatten().flatten().copied().collect();
    let adjusted = stats::holm(&family);
    let mut adjusted = adjusted.into_iter();
    let comparisons = family.len();
    dimensions
        .iter()
        .zip(&chains)
        .map(|(levels, chain)| {
            let chain: Vec<(Option<f64>, Option<f64>)> = chain
                .iter()
                .map(|p| (*p, p.and_then(|_| adjusted.next())))
                .collect();
            recommend(
                stats_of,
                levels,
                &chain,
                comparisons,
                dimensions.len(),
                settings,
            )
        })
        .collect()
}

/// The finest level of one dimension reached by steps whose adjusted p-value is below
/// 1 − confidence (`chain[i]`: the p-value and adjusted p-value of step i).
fn recommend(
    stats_of: &[LevelStats],
    levels: &[(Granularity, usize)],
    chain: &[(Option<f64>, Option<f64>)],
    comparisons: usize,
    n_dimensions: usize,
    settings: &Settings,
) -> Option<Recommendation> {
    let (first_level, first) = *levels.first()?;
    let alpha = 1.0 - settings.confidence;
    let pct = format!("{:.0}%", settings.confidence * 100.0);
    let recommendation = |level, reason| Recommendation {
        level,
        reason,
        comparisons,
        steps: Vec::new(),
    };
    let Some(first_discpow) = stats_of[first].discpow else {
        return Some(recommendation(
            first_level,
            format!(
                "{first_level}: DiscPow cannot be computed (fewer than two categories with \
questions), so finer levels cannot be compared with it"
            ),
        ));
    };
    if levels.len() == 1 {
        return Some(recommendation(
            first_level,
            format!(
                "only the {first_level} level was generated (DiscPow {:.3}); generate the other \
levels (design rq2) to compare granularities",
                first_discpow.value
            ),
        ));
    }
    let mut chosen = first_level;
    let mut reasons: Vec<String> = Vec::new();
    let mut steps = Vec::new();
    let mut walking = true;
    for (pair, &(p, p_adjusted)) in levels.windows(2).zip(chain) {
        let ((previous_level, previous), (level, index)) = (pair[0], pair[1]);
        let (Some(discpow), Some(delta)) = (stats_of[index].discpow, stats_of[index].delta) else {
            if walking {
                reasons.push(format!(
                    "{level}: DiscPow cannot be computed; stop at {chosen}"
                ));
            }
            walking = false;
            continue;
        };
        let previous_discpow = stats_of[previous].discpow.map_or(f64::NAN, |d| d.value);
        let mut text = format!(
            "{level}: DiscPow {:.3} vs {previous_discpow:.3} at {previous_level} (Δ {}",
            discpow.value,
            format_delta(delta.ratio.value)
        );
        if let Some([lo, hi]) = delta.ratio.ci {
            text.push_str(&format!(
                ", {pct} CI {}–{}",
                format_ratio(lo),
                format_ratio(hi)
            ));
        }
        match (delta.corrected, stats_of[index].discpow_corrected) {
            (Some(corrected), _) => {
                text.push_str(&format!("; Δ corrected {}", format_delta(corrected.value)));
                if let Some([lo, hi]) = corrected.ci {
                    text.push_str(&format!(", CI {}–{}", format_ratio(lo), format_ratio(hi)));
                }
            }
            (None, Some(corrected)) if stats_of[previous].discpow_corrected.is_some() => {
                text.push_str(&format!(
                    "; corrected DiscPow {:.3}, none at {previous_level}",
                    corrected.value
                ));
            }
            _ => {}
        }
        text.push(')');
        let taken = walking
            && match (p, p_adjusted) {
                (Some(p), Some(q)) => {
                    let verdict = if q < alpha {
                        "the gain is supported".to_owned()
                    } else {
                        format!(
                            "not below {}, so the gain may be chance or noise and \
{previous_level} stays",
                            format_p(alpha)
                        )
                    };
                    text.push_str(&format!(
                        ": p {}, {} after Holm over {comparisons} step{}: {verdict}",
                        format_p(p),
                        format_p(q),
                        if comparisons == 1 { "" } else { "s" },
                    ));
                    q < alpha
                }
                _ => {
                    let corrected_gain = match delta.corrected {
                        Some(corrected) => corrected.value > 1.0,
                        None => stats_of[index]
                            .discpow_corrected
                            .is_none_or(|c| c.value > 0.0),
                    };
                    let gain = delta.ratio.value > 1.0 && corrected_gain;
                    text.push_str(&format!(
                        ", judged on the point estimates (bootstrap off, so no error control): \
{}",
                        if gain { "a gain" } else { "no gain" }
                    ));
                    gain
                }
            };
        steps.push(Step {
            level,
            against: previous_level,
            p,
            p_adjusted,
            taken,
        });
        if walking {
            reasons.push(text);
        }
        walking = taken;
        if taken {
            chosen = level;
        }
    }
    if comparisons > 0 {
        reasons.push(format!(
            "{comparisons} step{} tested over {n_dimensions} dimension{}, so the chance that any \
is taken without a real gain is at most {}",
            if comparisons == 1 { "" } else { "s" },
            if n_dimensions == 1 { "" } else { "s" },
            format_percent(alpha)
        ));
    }
    Some(Recommendation {
        level: chosen,
        reason: reasons.join("; "),
        comparisons,
        steps,
    })
}

fn format_p(p: f64) -> String {
    if p < 0.001 {
        "< 0.001".into()
    } else {
        format!("{p:.3}")
    }
}

fn format_percent(share: f64) -> String {
    let pct = share * 100.0;
    if (pct - pct.round()).abs() < 1e-9 {
        format!("{pct:.0}%")
    } else {
        format!("{pct}%")
    }
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
