//! Two independent samples: the Mann–Whitney U test as scipy's `mannwhitneyu`.

use crate::paired::average_ranks;

/// The Mann–Whitney U test of two independent samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannWhitney {
    /// U of the first sample: the pairs `(x, y)` with `x > y`, ties counted a half (scipy's
    /// statistic).
    pub u: f64,
    /// The two-sided p-value.
    pub p: f64,
    /// Whether `p` is from the exact null distribution (otherwise the normal approximation).
    pub exact: bool,
    /// The rank-biserial correlation `2U / (n₁n₂) − 1`, in `[−1, 1]`: positive when the first
    /// sample tends to be larger.
    pub rank_biserial: f64,
}

/// The two-sided Mann–Whitney U test of `x` against `y`, as `scipy.stats.mannwhitneyu(x, y)`
/// with its defaults (`method="auto"`, continuity correction): the exact distribution of U
/// when one sample has at most 8 values and there are no ties, otherwise the normal
/// approximation with the tie correction.
///
/// Returns `None` when a sample is empty or a value is not finite.
pub fn mann_whitney_u(x: &[f64], y: &[f64]) -> Option<MannWhitney> {
    let (n1, n2) = (x.len(), y.len());
    if n1 == 0 || n2 == 0 || x.iter().chain(y).any(|v| !v.is_finite()) {
        return None;
    }
    let both: Vec<f64> = x.iter().chain(y).copied().collect();
    let (ranks, tie_sizes) = average_ranks(&both);
    let r1: f64 = ranks[..n1].iter().sum();
    let (f1, f2) = (n1 as f64, n2 as f64);
    let u1 = r1 - f1 * (f1 + 1.0) / 2.0;
    let u = u1.max(f1 * f2 - u1);
    let ties = tie_sizes.iter().any(|&t| t > 1);
    let exact = n1.min(n2) <= 8 && !ties;
    let p = if exact {
        2.0 * u_cdf(n1.min(n2), n1.max(n2), (f1 * f2 - u) as usize)
    } else {
        let n = f1 + f2;
        let tie_term: f64 = tie_sizes
            .iter()
            .map(|&t| (t as f64).powi(3) - t as f64)
            .sum();
        let s = (f1 * f2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)))).sqrt();
        if s > 0.0 {
            // 2·Φ(−z), scipy's ndtr(−z) doubled; z is negative at U = n₁n₂/2 (p above 1,
            // clipped below).
            let z = (u - f1 * f2 / 2.0 - 0.5) / s;
            statrs::function::erf::erfc(z / std::f64::consts::SQRT_2)
        } else {
            1.0
        }
    };
    Some(MannWhitney {
        u: u1,
        p: p.clamp(0.0, 1.0),
        exact,
        rank_biserial: 2.0 * u1 / (f1 * f2) - 1.0,
    })
}

/// `P(U ≤ k)` under the null for samples of `m ≤ n` values without ties: the coefficients of
/// the Gaussian binomial `[m + n choose m]_q = Π_{i=1..m} (1 − q^{n+i}) / (1 − q^i)` up to
/// `q^k`, over `C(m + n, m)`; the same distribution scipy's `_MWU` builds by another recursion.
fn u_cdf(m: usize, n: usize, k: usize) -> f64 {
    let mut counts = vec![0.0f64; k + 1];
    counts[0] = 1.0;
    for i in 1..=m {
        // ÷ (1 − q^i): a running sum with stride i; then × (1 − q^{n+i}).
        for d in i..=k {
            counts[d] += counts[d - i];
        }
        for d in (n + i..=k).rev() {
            counts[d] -= counts[d - n - i];
        }
    }
    let arrangements: f64 = (1..=m).map(|i| (n + i) as f64 / i as f64).product();
    counts.iter().sum::<f64>() / arrangements
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_null_distribution_of_two_against_two() {
        // The 6 arrangements of {x, x, y, y} give U = 0, 1, 2, 2, 3, 4.
        let cdf: Vec<f64> = (0..=4).map(|k| u_cdf(2, 2, k)).collect();
        assert_eq!(cdf, [1.0 / 6.0, 2.0 / 6.0, 4.0 / 6.0, 5.0 / 6.0, 1.0]);
    }

    #[test]
    fn separated_samples_by_hand() {
        let test = mann_whitney_u(&[4.0, 5.0, 6.0], &[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(test.u, 9.0);
        assert!(test.exact);
        assert_eq!(test.rank_biserial, 1.0);
        // Only one of the C(6, 3) = 20 arrangements is as extreme, on each side.
        assert!((test.p - 0.1).abs() < 1e-15);
        assert_eq!(mann_whitney_u(&[], &[1.0]), None);
    }
}
