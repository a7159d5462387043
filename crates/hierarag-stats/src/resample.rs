//! Resampling: bootstrap percentile intervals, permutation p-values and seeded resampling
//! indices, and the seeds of every random choice.

use rand::Rng;
use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::describe::percentile_of_sorted;

/// A 64-bit seed for the random choice named `label` (xxh3 of the label, keyed by the seed):
/// every random choice has its own stream, so that one choice never shifts another.
pub fn derive_seed(seed: u64, label: &str) -> u64 {
    xxh3_64_with_seed(label.as_bytes(), seed)
}

/// A percentile interval of bootstrap replicates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// The lower bound.
    pub lo: f64,
    /// The upper bound, `≥ lo`.
    pub hi: f64,
    /// How many replicates were NaN or infinite and left out (a resample can be degenerate,
    /// e.g. a ratio over a zero dispersion); callers should report a non-zero count.
    pub n_ignored: usize,
}

/// The central `level` percentile interval of bootstrap `samples` (level 0.95 → the 2.5th and
/// 97.5th percentiles), as `numpy.percentile(finite_samples, [50·(1 − level), 50·(1 + level)])`
/// with numpy's default linear interpolation. Non-finite replicates are left out and counted in
/// [`Interval::n_ignored`].
///
/// Returns `None` when `level` is not in `[0, 1]` or no replicate is finite.
pub fn percentile_interval(samples: &[f64], level: f64) -> Option<Interval> {
    if !(0.0..=1.0).contains(&level) {
        return None;
    }
    let mut finite: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    if finite.is_empty() {
        return None;
    }
    finite.sort_by(f64::total_cmp);
    let tail = 50.0 * (1.0 - level);
    Some(Interval {
        lo: percentile_of_sorted(&finite, tail),
        hi: percentile_of_sorted(&finite, 100.0 - tail),
        n_ignored: samples.len() - finite.len(),
    })
}

/// The permutation p-value of `observed` against the statistics of the permuted data, with the
/// +1 correction that counts the observed arrangement among the permutations:
/// `(1 + #{null ≥ observed}) / (1 + null.len())`. It is in `(0, 1]`, and 1 for an empty null.
/// NaN statistics in `null` never count as `≥ observed`.
pub fn permutation_p(observed: f64, null: &[f64]) -> f64 {
    let at_least = null.iter().filter(|&&x| x >= observed).count();
    (1 + at_least) as f64 / (1 + null.len()) as f64
}

/// The two-sided bootstrap p-value of the hypothesis that a statistic is at most `null`:
/// twice the share of the finite `replicates` at or below `null`, capped at 1. It is the
/// smallest 1 − level at which the central percentile interval of [`percentile_interval`]
/// reaches down to `null`, so "p < α" and "the (1 − α) interval lies above `null`" agree (up to
/// the interpolation between replicates). `None` when no replicate is finite.
pub fn bootstrap_p(replicates: &[f64], null: f64) -> Option<f64> {
    let finite = replicates.iter().filter(|x| x.is_finite()).count();
    if finite == 0 {
        return None;
    }
    let at_or_below = replicates
        .iter()
        .filter(|&&x| x.is_finite() && x <= null)
        .count();
    Some((2.0 * at_or_below as f64 / finite as f64).min(1.0))
}

/// Fills `out` with `n` indices drawn uniformly with replacement from `0..n`: one bootstrap
/// resample. `out` is cleared first so that one buffer serves every replicate; with a seeded
/// generator (e.g. `rand_chacha::ChaCha8Rng::seed_from_u64`) the draws are reproducible.
pub fn resample_indices<R: Rng + ?Sized>(rng: &mut R, n: usize, out: &mut Vec<usize>) {
    out.clear();
    out.extend((0..n).map(|_| rng.random_range(0..n)));
}
