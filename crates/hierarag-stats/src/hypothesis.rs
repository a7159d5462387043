//! Correlation and binomial tests as scipy: point-biserial r, Spearman's ρ and a one-sided
//! binomial p-value.

use statrs::distribution::{Binomial, DiscreteCDF};

/// A correlation coefficient with its two-sided p-value and the number of pairs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Correlation {
    /// The correlation coefficient, in `[−1, 1]`.
    pub r: f64,
    /// The two-sided p-value of `r ≠ 0`.
    pub p: f64,
    /// The number of pairs.
    pub n: usize,
}

/// The point-biserial correlation between a dichotomous `x` and a continuous `y`, and its
/// two-sided p-value, as `scipy.stats.pointbiserialr(x, y)` (Pearson's r with `x` as 0/1, tested
/// with Student's t on `n − 2` degrees of freedom).
///
/// Returns `None` when the slices differ in length, there are fewer than 3 pairs (scipy returns
/// r = ±1, p = 1 for 2), `x` is all `true` or all `false`, `y` is constant, or `y` has a NaN or
/// an infinity.
pub fn point_biserial(x: &[bool], y: &[f64]) -> Option<Correlation> {
    let n = x.len();
    if n != y.len() || n < 3 || y.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let x: Vec<f64> = x.iter().map(|&b| if b { 1.0 } else { 0.0 }).collect();
    let x_mean = crate::mean(&x)?;
    let y_mean = crate::mean(y)?;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (xi, yi) in x.iter().zip(y) {
        let (dx, dy) = (xi - x_mean, yi - y_mean);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    if sxx == 0.0 || syy == 0.0 {
        return None;
    }
    let r = (sxy / (sxx.sqrt() * syy.sqrt())).clamp(-1.0, 1.0);
    // Two-sided p of t = r·√(ν/(1 − r²)) with ν = n − 2 is I_{ν/(ν+t²)}(ν/2, 1/2), and
    // ν/(ν + t²) = 1 − r². Evaluating statrs' regularised incomplete beta (what its StudentsT
    // uses) at (1 − |r|)(1 + |r|) skips the round trip through t and the cancellation in 1 − r².
    let df = (n - 2) as f64;
    let abs_r = r.abs();
    let p = statrs::function::beta::beta_reg(df / 2.0, 0.5, (1.0 - abs_r) * (1.0 + abs_r));
    Some(Correlation { r, p, n })
}

/// Spearman's rank correlation ρ and its two-sided p-value, as `scipy.stats.spearmanr(x, y)`:
/// Pearson's r of the ranks (ties get their average rank), tested with Student's t on `n − 2`
/// degrees of freedom (p 0 at ρ = ±1).
///
/// Returns `None` when the slices differ in length, there are fewer than 3 pairs, a value is
/// not finite, or a side is constant (scipy returns NaN).
pub fn spearman(x: &[f64], y: &[f64]) -> Option<Correlation> {
    let n = x.len();
    if n != y.len() || n < 3 || x.iter().chain(y).any(|v| !v.is_finite()) {
        return None;
    }
    let (rx, ry) = (average_ranks(x), average_ranks(y));
    let (mx, my) = (crate::mean(&rx)?, crate::mean(&ry)?);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in rx.iter().zip(&ry) {
        let (dx, dy) = (a - mx, b - my);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    if sxx == 0.0 || syy == 0.0 {
        return None;
    }
    // One square root of the product: identical ranks give exactly ±1, as scipy does.
    let r = (sxy / (sxx * syy).sqrt()).clamp(-1.0, 1.0);
    let df = (n - 2) as f64;
    let abs_r = r.abs();
    // As point_biserial: P(|T| > t) = I_{1 − r²}(ν/2, 1/2), 0 at |r| = 1.
    let p = statrs::function::beta::beta_reg(df / 2.0, 0.5, (1.0 - abs_r) * (1.0 + abs_r));
    Some(Correlation { r, p, n })
}

/// Ranks from 1, ties sharing their average rank (`scipy.stats.rankdata`'s default).
fn average_ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&i, &j| values[i].total_cmp(&values[j]));
    let mut ranks = vec![0.0; values.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        // Positions start..end (0-based) share the mean of ranks start+1 ..= end.
        let rank = (start + end + 1) as f64 / 2.0;
        for &i in &order[start..end] {
            ranks[i] = rank;
        }
        start = end;
    }
    ranks
}

/// The one-sided binomial p-value `P(X ≥ k)` for `X ~ Bin(n, p)`, as
/// `scipy.stats.binomtest(k, n, p, alternative="greater").pvalue`.
///
/// Returns `None` when `k > n` or `p` is not in `[0, 1]`.
pub fn binomial_greater(k: u64, n: u64, p: f64) -> Option<f64> {
    if k > n || !(0.0..=1.0).contains(&p) {
        return None;
    }
    if k == 0 {
        return Some(1.0);
    }
    // P(X ≥ k) = P(X > k − 1), statrs' survival function: I_p(k, n − k + 1), evaluated directly
    // rather than as 1 − cdf, so that tiny p-values keep their relative precision.
    Some(Binomial::new(p, n).ok()?.sf(k - 1))
}

/// The two-sided p-value of a standard normal statistic, `2·Φ(−|z|)` as scipy's
/// `2 * special.ndtr(-abs(z))`: `erfc(|z|/√2)`, evaluated without the cancellation of
/// `1 − Φ(|z|)`. NaN for NaN.
pub(crate) fn normal_two_sided(z: f64) -> f64 {
    if z.is_nan() {
        return f64::NAN;
    }
    statrs::function::erf::erfc(z.abs() / std::f64::consts::SQRT_2)
}
