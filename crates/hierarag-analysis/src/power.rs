//! How many questions a granularity finding needs: the power of the recommendation's step test,
//! by seeded simulation from a pilot run (`hierarag power`).
//!
//! For each step of a dimension (a level against the next coarser one), the pilot gives each
//! category's mean, within-category standard deviation and size. The simulation takes as the
//! truth the pilot's category means shrunk towards their grand mean until their spread is the
//! noise-corrected DiscPow (the spread of the true means; the raw spread includes noise), with
//! the pilot's standard deviations. It then draws pilots of a given size — each category's mean
//! and sample variance as the sampling distributions give them — and applies the
//! recommendation's step test to each: Δ and Δ corrected above 1, and the step's bootstrap
//! p-value (the larger of the two, from bootstrap replicates of the category means) below the
//! threshold, which is (1 − confidence) divided by the comparisons of the family: Holm's first,
//! strictest threshold, so the plan holds whichever step Holm reaches first. The share of draws
//! that pass is the power; the questions per category for the wanted power are found by
//! bisection over the size (the same random numbers at every size, so power rises smoothly),
//! and the smallest detectable gain of a planned size by bisection over the finer level's true
//! spread.
//!
//! The bootstrap of a category mean is drawn from its normal approximation, N(m, s²(n − 1)/n²),
//! rather than by resampling questions: at the sizes planned here the two agree closely, and it
//! makes a simulated analysis thousands of times cheaper. The test suite checks the planner
//! against the analysis itself on raw simulated questions.

use hierarag_stats as stats;
use hierarag_taxonomy::{Granularity, Taxonomy};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use hierarag_stats::derive_seed;

use crate::input::{Observation, Settings};
use crate::levels::{self, LevelGroup};
use crate::noise::{NoiseModel, standard_normal};

/// What the planner is asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PowerSettings {
    /// The power wanted: the share of repeated studies whose recommendation takes the step.
    pub power: f64,
    /// Simulated studies per size tried.
    pub simulations: usize,
    /// Bootstrap replicates in each simulated analysis.
    pub bootstrap: usize,
    /// Comparisons in the recommendation's family (Holm); `None`: the pilot's steps.
    pub comparisons: Option<usize>,
    /// Planned questions per category, for the smallest detectable gain; `None`: the pilot's
    /// own category sizes.
    pub per_category: Option<usize>,
    /// The largest size searched.
    pub max_per_category: usize,
}

impl Default for PowerSettings {
    fn default() -> PowerSettings {
        PowerSettings {
            power: 0.8,
            simulations: 400,
            bootstrap: 1000,
            comparisons: None,
            per_category: None,
            max_per_category: 20_000,
        }
    }
}

impl PowerSettings {
    /// Why the planner cannot use these settings, if it cannot.
    pub fn check(&self) -> Result<(), String> {
        if !(self.power > 0.0 && self.power < 1.0) {
            return Err("the power (--power) must be between 0 and 1, e.g. 0.8".into());
        }
        if self.simulations < 20 {
            return Err("--simulations must be at least 20".into());
        }
        if self.bootstrap < 100 {
            return Err("--bootstrap must be at least 100 for the planner".into());
        }
        if self.comparisons == Some(0) {
            return Err("--comparisons must be at least 1".into());
        }
        if self.per_category.is_some_and(|n| n < 2) {
            return Err("--per-category must be at least 2".into());
        }
        if self.max_per_category < 2 {
            return Err("the largest size searched must be at least 2".into());
        }
        Ok(())
    }
}

/// The planner's answer for one run (`power.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PowerAnalysis {
    pub settings: PowerSettings,
    /// The analysis settings the pilot was read with (metric, confidence, ddof, seed).
    pub analysis: Settings,
    /// Comparisons the plan assumes for the steps between levels (the family of the
    /// recommendation's Holm adjustment).
    pub comparisons: usize,
    /// The p-value each step must reach: (1 − confidence) / comparisons (/ 1 without steps).
    pub alpha_step: f64,
    /// Tests of a dimension's coarsest level against no split at all (one per dimension), and
    /// the p-value each must reach: (1 − confidence) / level_comparisons.
    pub level_comparisons: usize,
    pub alpha_level: f64,
    pub steps: Vec<StepPower>,
    /// What could not be planned, and why.
    pub notes: Vec<String>,
}

/// One step of one dimension: a level against the next coarser one, or a dimension's coarsest
/// level against no split (`against` None: do its categories differ beyond noise at all?).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepPower {
    pub dimension: String,
    pub level: Granularity,
    pub against: Option<Granularity>,
    /// The sets of questions of this level and of the coarser one (`qc/fine`, `qc/medium`).
    pub set: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub against_set: Option<String>,
    /// Categories at the coarser level (0 against no split) and at this one.
    pub against_categories: usize,
    pub categories: usize,
    /// The pilot's questions per category (mean) at the coarser level (0 against no split) and
    /// at this one.
    pub pilot_per_category: [f64; 2],
    /// The true spreads assumed: the pilot's noise-corrected DiscPow at each level.
    pub spread_against: f64,
    pub spread: f64,
    /// spread / spread_against: the gain to detect (None when the coarser level has no spread
    /// beyond noise; then the step tests the finer spread against none).
    pub gain: Option<f64>,
    /// The power of the pilot's own sizes against the assumed truth (where the pilot shows no
    /// gain, the share of studies that pass by chance).
    pub power_at_pilot: f64,
    /// The power of the planned sizes (`--per-category`) against the assumed truth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_at_planned: Option<f64>,
    /// Questions per category, at both levels, for the wanted power (None: no gain to detect,
    /// or more than the largest size searched).
    pub per_category: Option<usize>,
    /// per_category × (against_categories + categories).
    pub questions: Option<usize>,
    /// The smallest true gain the planned (or the pilot's) sizes detect with the wanted power.
    pub detectable: Option<Detectable>,
    /// The plan in words.
    pub note: String,
}

/// The smallest detectable gain of a design.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Detectable {
    /// Questions per category of the design (None: the pilot's own sizes).
    pub per_category: Option<usize>,
    /// The finer level's true spread (corrected DiscPow) that is detected.
    pub spread: f64,
    /// spread / spread_against (None when the coarser level has no spread).
    pub gain: Option<f64>,
}

/// The truth a simulated level is drawn from.
#[derive(Debug, Clone)]
struct LevelModel {
    means: Vec<f64>,
    sds: Vec<f64>,
    sizes: Vec<usize>,
    /// The deviations of the pilot's means from their grand mean, scaled to unit spread: the
    /// pattern a different true spread is given.
    pattern: Vec<f64>,
    grand: f64,
}

impl LevelModel {
    /// From the pilot's questions of one level: means shrunk to the corrected spread.
    fn of(samples: &[Vec<f64>], ddof: u32) -> Option<(LevelModel, f64)> {
        let noise = NoiseModel::of(samples)?;
        let observed: Vec<f64> = samples
            .iter()
            .map(|s| stats::mean(s))
            .collect::<Option<_>>()?;
        let grand = stats::mean(&observed)?;
        let raw = stats::std_dev(&observed, ddof)?;
        let corrected = noise.corrected(raw, ddof)?;
        let deviations: Vec<f64> = observed.iter().map(|m| m - grand).collect();
        let pattern = if raw > 0.0 {
            deviations.iter().map(|d| d / raw).collect()
        } else {
            alternating(samples.len(), ddof)
        };
        let sds = samples
            .iter()
            .map(|s| stats::std_dev(s, 1))
            .collect::<Option<Vec<f64>>>()?;
        let mut model = LevelModel {
            means: Vec::new(),
            sds,
            sizes: samples.iter().map(Vec::len).collect(),
            pattern,
            grand,
        };
        model.set_spread(corrected);
        Some((model, corrected))
    }

    fn set_spread(&mut self, spread: f64) {
        self.means = self
            .pattern
            .iter()
            .map(|d| self.grand + spread * d)
            .collect();
    }

    fn with_sizes(&self, n: usize) -> LevelModel {
        LevelModel {
            sizes: vec![n; self.sizes.len()],
            ..self.clone()
        }
    }

    fn mean_size(&self) -> f64 {
        self.sizes.iter().sum::<usize>() as f64 / self.sizes.len() as f64
    }
}

/// +1, −1, +1, … scaled to unit spread (a pattern when the pilot's means are all equal).
fn alternating(k: usize, ddof: u32) -> Vec<f64> {
    let raw: Vec<f64> = (0..k)
        .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
        .collect();
    let mean = stats::mean(&raw).unwrap_or(0.0);
    let centred: Vec<f64> = raw.iter().map(|x| x - mean).collect();
    let sd = stats::std_dev(&centred, ddof).unwrap_or(1.0);
    centred.iter().map(|x| x / sd).collect()
}

/// One simulated level: the category means and the noise variances of the means.
fn draw_level(model: &LevelModel, rng: &mut ChaCha8Rng) -> (Vec<f64>, Vec<f64>) {
    let mut means = Vec::with_capacity(model.means.len());
    let mut variances = Vec::with_capacity(model.means.len());
    for ((&mu, &sd), &n) in model.means.iter().zip(&model.sds).zip(&model.sizes) {
        let n_f = n as f64;
        means.push(mu + sd / n_f.sqrt() * standard_normal(rng));
        // The sample variance: σ² χ²_ν / ν, ν = n − 1; χ² as a sum of squares for small ν,
        // by the Wilson–Hilferty approximation above.
        let nu = n.saturating_sub(1).max(1);
        let chi_share = if nu <= 30 {
            (0..nu).map(|_| standard_normal(rng).powi(2)).sum::<f64>() / nu as f64
        } else {
            let c = 2.0 / (9.0 * nu as f64);
            (1.0 - c + c.sqrt() * standard_normal(rng)).max(0.0).powi(3)
        };
        variances.push(sd * sd * chi_share / n_f);
    }
    (means, variances)
}

/// DiscPow and its corrected value of a set of means with noise variances `v`.
fn spreads(means: &[f64], v: &[f64], ddof: u32) -> (f64, f64) {
    let raw = stats::std_dev(means, ddof).unwrap_or(f64::NAN);
    let k = means.len() as f64;
    let expected = (1.0 - 1.0 / k) * v.iter().sum::<f64>() / (k - ddof as f64);
    (raw, (raw * raw - expected).max(0.0).sqrt())
}

/// Whether one simulated study takes the step: both gains above 1 and the step's bootstrap
/// p-value below `alpha`. Against no split (`coarser` None), whether the level's corrected
/// DiscPow is above 0 with a bootstrap p-value below `alpha`.
fn study_passes(
    coarser: Option<&LevelModel>,
    finer: &LevelModel,
    alpha: f64,
    bootstrap: usize,
    ddof: u32,
    rng: &mut ChaCha8Rng,
) -> bool {
    let coarse = coarser.map(|model| {
        let (means, v) = draw_level(model, rng);
        let (raw, corrected) = spreads(&means, &v, ddof);
        let sds = plug_in_sd(&v, &model.sizes);
        (means, v, raw, corrected, sds)
    });
    let (fine_means, fine_v) = draw_level(finer, rng);
    let (fine_raw, fine_corrected) = spreads(&fine_means, &fine_v, ddof);
    let against_none = coarse.as_ref().is_none_or(|c| c.3 <= 0.0);
    if coarse.as_ref().is_some_and(|c| fine_raw / c.2 <= 1.0)
        || (against_none && fine_corrected <= 0.0)
        || coarse
            .as_ref()
            .is_some_and(|c| c.3 > 0.0 && fine_corrected / c.3 <= 1.0)
    {
        return false;
    }
    // The bootstrap: replicate means from N(m, plug-in variance); a replicate's corrected
    // spread uses the study's own noise variances, as the analysis does.
    let fine_sd = plug_in_sd(&fine_v, &finer.sizes);
    let mut coarse_star = vec![0.0; coarse.as_ref().map_or(0, |c| c.0.len())];
    let mut fine_star = vec![0.0; fine_means.len()];
    // p ≥ alpha as soon as 2 · count ≥ alpha · bootstrap (see stats::bootstrap_p).
    let limit = alpha * bootstrap as f64;
    let (mut raw_at_most, mut corrected_at_most) = (0usize, 0usize);
    for _ in 0..bootstrap {
        for ((star, m), sd) in fine_star.iter_mut().zip(&fine_means).zip(&fine_sd) {
            *star = m + sd * standard_normal(rng);
        }
        let (f_raw, f_corrected) = spreads(&fine_star, &fine_v, ddof);
        let corrected_no_gain = match &coarse {
            Some((means, v, _, _, sds)) => {
                for ((star, m), sd) in coarse_star.iter_mut().zip(means).zip(sds) {
                    *star = m + sd * standard_normal(rng);
                }
                let (c_raw, c_corrected) = spreads(&coarse_star, v, ddof);
                if f_raw / c_raw <= 1.0 {
                    raw_at_most += 1;
                }
                if against_none {
                    f_corrected <= 0.0
                } else {
                    f_corrected / c_corrected <= 1.0
                }
            }
            None => f_corrected <= 0.0,
        };
        if corrected_no_gain {
            corrected_at_most += 1;
        }
        if 2.0 * raw_at_most.max(corrected_at_most) as f64 >= limit {
            return false;
        }
    }
    true
}

/// The standard deviation of a bootstrap mean: √(s² (n − 1) / n / n), from v = s² / n.
fn plug_in_sd(v: &[f64], sizes: &[usize]) -> Vec<f64> {
    v.iter()
        .zip(sizes)
        .map(|(v, &n)| (v * (n as f64 - 1.0) / n as f64).sqrt())
        .collect()
}

/// The share of `settings.simulations` studies that take the step, all drawn from `seed`.
fn power_of(
    coarser: Option<&LevelModel>,
    finer: &LevelModel,
    alpha: f64,
    settings: &PowerSettings,
    ddof: u32,
    seed: u64,
) -> f64 {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let passed = (0..settings.simulations)
        .filter(|_| study_passes(coarser, finer, alpha, settings.bootstrap, ddof, &mut rng))
        .count();
    passed as f64 / settings.simulations as f64
}

/// The smallest questions per category (both levels) reaching the wanted power, by bisection.
fn size_needed(
    coarser: Option<&LevelModel>,
    finer: &LevelModel,
    alpha: f64,
    settings: &PowerSettings,
    ddof: u32,
    seed: u64,
) -> Option<usize> {
    let enough = |n: usize| {
        let coarser = coarser.map(|c| c.with_sizes(n));
        power_of(
            coarser.as_ref(),
            &finer.with_sizes(n),
            alpha,
            settings,
            ddof,
            seed,
        ) >= settings.power
    };
    let (mut lo, mut hi) = (2usize, settings.max_per_category);
    if !enough(hi) {
        return None;
    }
    if enough(lo) {
        return Some(lo);
    }
    // enough(hi) and not enough(lo).
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if enough(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

/// The smallest true spread of the finer level that `coarser`/`finer` (at their sizes) detect
/// with the wanted power, by bisection; None when even 100 times the coarser spread (or a spread
/// of 1 against none) is not enough.
fn detectable_spread(
    coarser: Option<&LevelModel>,
    finer: &LevelModel,
    spread_against: f64,
    alpha: f64,
    settings: &PowerSettings,
    ddof: u32,
    seed: u64,
) -> Option<f64> {
    let enough = |spread: f64| {
        let mut model = finer.clone();
        model.set_spread(spread);
        power_of(coarser, &model, alpha, settings, ddof, seed) >= settings.power
    };
    let (mut lo, mut hi) = if spread_against > 0.0 {
        (spread_against, 100.0 * spread_against)
    } else {
        (0.0, 1.0)
    };
    if !enough(hi) {
        return None;
    }
    // Relative precision of 1 % (absolute 1e-4 against none).
    while hi - lo > (0.01 * lo).max(1e-4) {
        let mid = 0.5 * (lo + hi);
        if enough(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

/// Plans every step of every dimension of a pilot's questions (see the module docs);
/// `progress` is called once a step is done, with its index and the number of steps.
pub fn power(
    observations: &[Observation],
    taxonomy: &Taxonomy,
    settings: &Settings,
    power: &PowerSettings,
    progress: &dyn Fn(usize, usize),
) -> PowerAnalysis {
    let single: Vec<&Observation> = observations
        .iter()
        .filter(|o| o.categories.len() == 1)
        .collect();
    let groups = levels::group(&single, taxonomy);
    let mut notes = Vec::new();
    let dimension_keys = levels::dimension_keys(&groups);
    // The tests: each dimension's coarsest level against no split, then each pair of
    // adjacent levels present.
    let mut tests: Vec<(Option<&LevelGroup<'_>>, &LevelGroup<'_>)> = Vec::new();
    for dimension in dimension_keys {
        let present = crate::hierarchy::levels_of(&groups, dimension, &mut notes);
        if let Some(&(_, first)) = present.first() {
            tests.push((None, &groups[first]));
        }
        for pair in present.windows(2) {
            tests.push((Some(&groups[pair[0].1]), &groups[pair[1].1]));
        }
    }
    if tests.is_empty() {
        notes.push("no scored question has a single category: there is nothing to plan".into());
    }
    let steps_found = tests.iter().filter(|(c, _)| c.is_some()).count();
    let level_comparisons = (tests.len() - steps_found).max(1);
    let comparisons = power.comparisons.unwrap_or(steps_found);
    let alpha_step = (1.0 - settings.confidence) / comparisons.max(1) as f64;
    let alpha_level = (1.0 - settings.confidence) / level_comparisons as f64;
    let mut steps = Vec::new();
    for (i, (coarser, finer)) in tests.iter().enumerate() {
        steps.extend(plan_step(
            *coarser,
            finer,
            if coarser.is_some() {
                alpha_step
            } else {
                alpha_level
            },
            settings,
            power,
            &mut notes,
        ));
        progress(i + 1, tests.len());
    }
    PowerAnalysis {
        settings: power.clone(),
        analysis: settings.clone(),
        comparisons,
        alpha_step,
        level_comparisons,
        alpha_level,
        steps,
        notes,
    }
}

/// One test of [`power`]: `finer` against `coarser` (or against no split).
fn plan_step(
    coarser: Option<&LevelGroup<'_>>,
    finer: &LevelGroup<'_>,
    alpha: f64,
    settings: &Settings,
    power: &PowerSettings,
    notes: &mut Vec<String>,
) -> Option<StepPower> {
    let name = match coarser {
        Some(c) => format!("{} {} against {}", finer.dimension, finer.level, c.level),
        None => format!("{} {}", finer.dimension, finer.level),
    };
    let coarse = coarser.map(|group| LevelModel::of(&group.samples(settings), settings.ddof));
    let fine = LevelModel::of(&finer.samples(settings), settings.ddof);
    let (Some((fine_model, spread)), false) = (fine, matches!(coarse, Some(None))) else {
        notes.push(format!(
            "{name}: a category has fewer than two scored questions (or the level fewer than two \
categories), so its noise cannot be estimated and it is not planned"
        ));
        return None;
    };
    let (coarse_model, spread_against) = match coarse.flatten() {
        Some((model, spread)) => (Some(model), spread),
        None => (None, 0.0),
    };
    let seed = derive_seed(
        settings.seed,
        &format!(
            "power/{}/{}/{}",
            finer.dimension,
            coarser.map_or_else(|| "none".to_owned(), |c| c.level.to_string()),
            finer.level
        ),
    );
    let ddof = settings.ddof;
    let coarse_ref = coarse_model.as_ref();
    let power_at_pilot = power_of(coarse_ref, &fine_model, alpha, power, ddof, seed);
    let gain = (spread_against > 0.0).then(|| spread / spread_against);
    let has_gain = match gain {
        Some(gain) => gain > 1.0,
        None => spread > 0.0,
    };
    let per_category = if has_gain {
        size_needed(coarse_ref, &fine_model, alpha, power, ddof, seed)
    } else {
        None
    };
    let (planned_coarse, planned_fine) = match power.per_category {
        Some(n) => (
            coarse_model.as_ref().map(|c| c.with_sizes(n)),
            fine_model.with_sizes(n),
        ),
        None => (coarse_model.clone(), fine_model.clone()),
    };
    let power_at_planned = power.per_category.map(|_| {
        power_of(
            planned_coarse.as_ref(),
            &planned_fine,
            alpha,
            power,
            ddof,
            seed,
        )
    });
    let detectable = detectable_spread(
        planned_coarse.as_ref(),
        &planned_fine,
        spread_against,
        alpha,
        power,
        ddof,
        seed,
    )
    .map(|spread| Detectable {
        per_category: power.per_category,
        spread,
        gain: (spread_against > 0.0).then(|| spread / spread_against),
    });
    let against_categories = coarse_model.as_ref().map_or(0, |c| c.sizes.len());
    let pct = format!("{:.0}%", power.power * 100.0);
    let what = match coarser {
        Some(c) => format!(
            "the observed gain (corrected DiscPow {spread:.3} vs {spread_against:.3} at {})",
            c.level
        ),
        None => format!("the observed spread of its categories (corrected DiscPow {spread:.3})"),
    };
    let note = match (has_gain, per_category) {
        (false, _) if power_at_pilot > 2.0 * alpha => format!(
            "{name}: the pilot shows no {} beyond noise, so there is nothing observed to plan \
for; and at the pilot's sizes a study with no effect passes the test in {:.0}% of cases, far above \
the {:.1}% intended: too few questions a category for the bootstrap to be trusted",
            if coarser.is_some() { "gain" } else { "spread" },
            power_at_pilot * 100.0,
            alpha * 100.0
        ),
        (false, _) => match coarser {
            Some(c) => format!(
                "{name}: the pilot shows no gain over {} beyond noise (corrected DiscPow \
{spread:.3} vs {spread_against:.3}), so there is no observed gain to plan for",
                c.level
            ),
            None => format!(
                "{name}: the pilot's categories do not differ beyond noise (corrected DiscPow 0), \
so there is no observed spread to plan for"
            ),
        },
        (true, Some(n)) => format!(
            "{name}: detecting {what} with {pct} power needs {n} questions per category ({} in \
all); the pilot's sizes give {:.0}% power",
            n * (against_categories + fine_model.sizes.len()),
            power_at_pilot * 100.0
        ),
        (true, None) => format!(
            "{name}: {what} is too small to detect with {pct} power with up to {} questions per \
category",
            power.max_per_category
        ),
    };
    Some(StepPower {
        dimension: finer.dimension.clone(),
        level: finer.level,
        against: coarser.map(|c| c.level),
        set: finer.set.clone(),
        against_set: coarser.map(|c| c.set.clone()),
        against_categories,
        categories: fine_model.sizes.len(),
        pilot_per_category: [
            coarse_model.as_ref().map_or(0.0, LevelModel::mean_size),
            fine_model.mean_size(),
        ],
        spread_against,
        spread,
        gain,
        power_at_pilot,
        power_at_planned,
        per_category,
        questions: per_category.map(|n| n * (against_categories + fine_model.sizes.len())),
        detectable,
        note,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(means: &[f64], sd: f64, n: usize) -> LevelModel {
        let grand = stats::mean(means).unwrap();
        LevelModel {
            means: means.to_vec(),
            sds: vec![sd; means.len()],
            sizes: vec![n; means.len()],
            pattern: means.iter().map(|m| m - grand).collect(),
            grand,
        }
    }

    #[test]
    fn power_rises_with_size_and_is_reproducible() {
        let settings = PowerSettings {
            simulations: 100,
            bootstrap: 200,
            ..PowerSettings::default()
        };
        let coarse = model(&[0.685, 0.715], 0.15, 50);
        let fine = model(&[0.62, 0.66, 0.70, 0.74, 0.66, 0.70, 0.74, 0.78], 0.15, 50);
        let small = power_of(Some(&coarse), &fine, 0.05, &settings, 0, 1);
        let large = power_of(
            Some(&coarse.with_sizes(400)),
            &fine.with_sizes(400),
            0.05,
            &settings,
            0,
            1,
        );
        assert!(small < large, "{small} vs {large}");
        assert!(large > 0.9, "{large}");
        assert_eq!(small, power_of(Some(&coarse), &fine, 0.05, &settings, 0, 1));
    }

    #[test]
    fn no_gain_is_rarely_taken() {
        let settings = PowerSettings {
            simulations: 400,
            bootstrap: 200,
            ..PowerSettings::default()
        };
        // The same true spread at both levels: a step taken is a false move.
        let coarse = model(&[0.68, 0.72], 0.15, 100);
        let fine = model(&[0.68, 0.72, 0.68, 0.72], 0.15, 100);
        let power = power_of(Some(&coarse), &fine, 0.05, &settings, 0, 2);
        assert!(power <= 0.05, "{power}");
    }
}
