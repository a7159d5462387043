//! Correlation and binomial tests as scipy: point-biserial r, Spearman's ρ, Kendall's τ-b with
//! its p-value and a one-sided binomial p-value.

use statrs::distribution::{Binomial, DiscreteCDF};

use crate::paired::average_ranks;

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
    if x.len() < 3 {
        return None;
    }
    let x: Vec<f64> = x.iter().map(|&b| if b { 1.0 } else { 0.0 }).collect();
    pearson(&x, y)
}

/// The two-sided p-value of a correlation `r` of `n` pairs, tested with Student's t on
/// `ν = n − 2` degrees of freedom.
fn t_test_p(r: f64, n: usize) -> f64 {
    // Two-sided p of t = r·√(ν/(1 − r²)) is I_{ν/(ν+t²)}(ν/2, 1/2), and ν/(ν + t²) = 1 − r².
    // Evaluating statrs' regularised incomplete beta (what its StudentsT uses) at
    // (1 − |r|)(1 + |r|) skips the round trip through t and the cancellation in 1 − r².
    let df = (n - 2) as f64;
    let abs_r = r.abs();
    statrs::function::beta::beta_reg(df / 2.0, 0.5, (1.0 - abs_r) * (1.0 + abs_r))
}

/// Pearson's r and its two-sided p-value, as `scipy.stats.pearsonr(x, y)`: tested with
/// Student's t on `n − 2` degrees of freedom (p 0 at r = ±1; two pairs give r = ±1 and p 1,
/// as scipy's).
///
/// Returns `None` when the slices differ in length, there are fewer than 2 pairs, a value is
/// not finite, or a side is constant (scipy returns NaN).
pub fn pearson(x: &[f64], y: &[f64]) -> Option<Correlation> {
    let n = x.len();
    if n != y.len() || n < 2 || x.iter().chain(y).any(|v| !v.is_finite()) {
        return None;
    }
    let (mx, my) = (crate::mean(x)?, crate::mean(y)?);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        let (dx, dy) = (a - mx, b - my);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    if sxx == 0.0 || syy == 0.0 {
        return None;
    }
    let r = (sxy / (sxx.sqrt() * syy.sqrt())).clamp(-1.0, 1.0);
    if n == 2 {
        return Some(Correlation {
            r: r.signum(),
            p: 1.0,
            n,
        });
    }
    Some(Correlation {
        r,
        p: t_test_p(r, n),
        n,
    })
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
    let (rx, ry) = (average_ranks(x).0, average_ranks(y).0);
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
    // P(|T| > t), 0 at |r| = 1.
    Some(Correlation {
        r,
        p: t_test_p(r, n),
        n,
    })
}

/// Kendall's τ-b and its two-sided p-value, as `scipy.stats.kendalltau(x, y)` with its
/// defaults: the exact null distribution of the discordant pairs when neither side has ties
/// and there are at most 33 pairs of values (or at most one discordant or concordant pair),
/// otherwise the normal approximation with scipy's tie-corrected variance.
///
/// Returns `None` when the slices differ in length, there are fewer than two pairs, a value is
/// NaN, or a side is constant (scipy's NaN).
pub fn kendall(x: &[f64], y: &[f64]) -> Option<Correlation> {
    let n = x.len();
    if n != y.len() || n < 2 || x.iter().chain(y).any(|v| v.is_nan()) {
        return None;
    }
    let (mut x_ties, mut y_ties, mut joint_ties, mut discordant) = (0u64, 0u64, 0u64, 0u64);
    for i in 0..n {
        for j in i + 1..n {
            let dx = x[i].partial_cmp(&x[j])?;
            let dy = y[i].partial_cmp(&y[j])?;
            x_ties += u64::from(dx.is_eq());
            y_ties += u64::from(dy.is_eq());
            joint_ties += u64::from(dx.is_eq() && dy.is_eq());
            discordant += u64::from(dx.is_ne() && dy.is_ne() && dx != dy);
        }
    }
    let total = (n * (n - 1) / 2) as u64;
    if x_ties == total || y_ties == total {
        return None;
    }
    let score =
        total as f64 - x_ties as f64 - y_ties as f64 + joint_ties as f64 - 2.0 * discordant as f64;
    let tau = (score / ((total - x_ties) as f64).sqrt() / ((total - y_ties) as f64).sqrt())
        .clamp(-1.0, 1.0);
    let p = if x_ties == 0 && y_ties == 0 && (n <= 33 || discordant.min(total - discordant) <= 1) {
        kendall_p_exact(n, total - discordant)
    } else {
        let (x0, x1) = tie_moments(x);
        let (y0, y1) = tie_moments(y);
        let m = n as f64 * (n as f64 - 1.0);
        let variance = (m * (2.0 * n as f64 + 5.0) - x1 - y1) / 18.0
            + (2.0 * x_ties as f64 * y_ties as f64) / m
            + x0 * y0 / (9.0 * m * (n as f64 - 2.0));
        normal_two_sided(score / variance.sqrt())
    };
    Some(Correlation { r: tau, p, n })
}

/// Σ t(t − 1)(t − 2) and Σ t(t − 1)(2t + 5) over the groups of `t` equal values.
fn tie_moments(values: &[f64]) -> (f64, f64) {
    let (_, sizes) = average_ranks(values);
    sizes
        .iter()
        .filter(|&&t| t > 1)
        .map(|&t| t as f64)
        .fold((0.0, 0.0), |(a, b), t| {
            (
                a + t * (t - 1.0) * (t - 2.0),
                b + t * (t - 1.0) * (2.0 * t + 5.0),
            )
        })
}

/// The two-sided exact p-value of `concordant` concordant pairs among `n` untied values, as
/// scipy's `_kendall_p_exact`: the left tail of the number of inversions of a random
/// permutation (Kendall, Rank Correlation Methods), doubled.
fn kendall_p_exact(n: usize, concordant: u64) -> f64 {
    let total = (n * (n - 1) / 2) as u64;
    let c = concordant.min(total - concordant) as usize;
    let factorial = |k: usize| (1..=k).map(|i| i as f64).product::<f64>();
    let p = if n <= 2 {
        1.0
    } else if c == 0 {
        if n < 171 { 2.0 / factorial(n) } else { 0.0 }
    } else if c == 1 {
        if n < 172 { 2.0 / factorial(n - 1) } else { 0.0 }
    } else if 4 * c == n * (n - 1) {
        1.0
    } else {
        // new[k]: permutations of j values with k inversions, k ≤ c, built one value at a time
        // (a running sum, less the terms that fall out of the window of j).
        let mut new = vec![0.0; c + 1];
        new[0] = 1.0;
        new[1] = 1.0;
        for j in 3..=n {
            let mut sum = 0.0;
            for v in new.iter_mut() {
                sum += *v;
                *v = sum;
            }
            if n >= 171 {
                new.iter_mut().for_each(|v| *v /= j as f64);
            }
            if j <= c {
                let before = new.clone();
                for (k, v) in new.iter_mut().enumerate().skip(j) {
                    *v -= before[k - j];
                }
            }
        }
        let sum: f64 = new.iter().sum();
        if n < 171 {
            2.0 * sum / factorial(n)
        } else {
            sum
        }
    };
    p.clamp(0.0, 1.0)
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

/// The `q`-quantile of the standard normal distribution, as `scipy.stats.norm.ppf(q)` (statrs'
/// inverse CDF): 1.959964 for 0.975, the half-width of a 95 % normal interval in standard
/// errors. NaN outside `[0, 1]`.
pub fn normal_quantile(q: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal};
    if !(0.0..=1.0).contains(&q) {
        return f64::NAN;
    }
    Normal::standard().inverse_cdf(q)
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
