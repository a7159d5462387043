//! Paired tests as scipy: Student's t on the differences and the Wilcoxon signed-rank test.

use crate::hypothesis::normal_two_sided;

/// A paired t-test: `scipy.stats.ttest_rel(a, b)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairedT {
    /// `mean(d) / (sd(d) / √n)` with `d = a − b` and the sample standard deviation; NaN when
    /// every difference is the same value 0 (scipy's 0/0), ±∞ when every difference is the
    /// same non-zero value.
    pub t: f64,
    /// `n − 1`.
    pub df: f64,
    /// The two-sided p-value; NaN where `t` is.
    pub p: f64,
}

/// The paired t-test of `a − b` against 0, as `scipy.stats.ttest_rel(a, b)` with its defaults
/// (two-sided): `t = mean(d) / √(var(d, ddof=1) / n)` on `n − 1` degrees of freedom.
///
/// Returns `None` when the slices differ in length or are empty; a single pair gives NaN
/// (as scipy does).
pub fn paired_t(a: &[f64], b: &[f64]) -> Option<PairedT> {
    if a.len() != b.len() || a.is_empty() {
        return None;
    }
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    let n = d.len() as f64;
    let mean = crate::mean(&d)?;
    // scipy: var(d, ddof=1), then √(v / n): the same two steps keep the last digits equal.
    let var = if d.len() > 1 {
        d.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0)
    } else {
        f64::NAN
    };
    let t = mean / (var / n).sqrt();
    let df = n - 1.0;
    let p = if t.is_nan() {
        f64::NAN
    } else if t.is_infinite() {
        0.0
    } else {
        // 2·sf(|t|) of Student's t: I_{ν/(ν+t²)}(ν/2, 1/2).
        statrs::function::beta::beta_reg(df / 2.0, 0.5, df / (df + t * t))
    };
    Some(PairedT { t, df, p })
}

/// How [`wilcoxon`] computed its p-value: the branch scipy's `method="auto"` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WilcoxonMethod {
    /// The exact null distribution of the rank sum (n ≤ 50, no ties and no zero difference).
    Exact,
    /// Every sign flip of the differences enumerated (n ≤ 13 with ties or zero differences):
    /// scipy's `permutation_test`, which is exhaustive at that size.
    Permutation,
    /// The normal approximation with the tie correction and without continuity correction
    /// (n > 50, or ties or zeros with n > 13).
    Asymptotic,
}

/// A Wilcoxon signed-rank test: `scipy.stats.wilcoxon(a, b)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Wilcoxon {
    /// `min(R+, R−)`, the smaller sum of the ranks of |d| by sign (zero differences dropped).
    pub statistic: f64,
    /// The two-sided p-value; NaN when every difference is zero.
    pub p: f64,
    /// The branch that computed `p`.
    pub method: WilcoxonMethod,
    /// The number of non-zero differences the ranks are over.
    pub n: usize,
}

/// The Wilcoxon signed-rank test of `d = a − b`, as `scipy.stats.wilcoxon(a, b)` with its
/// defaults (`zero_method="wilcox"`: zero differences are dropped; `correction=False`;
/// `method="auto"`; two-sided), including the choice of method scipy 1.17 makes: with more than
/// 50 pairs, the normal approximation; otherwise the exact distribution when no |d| ties and no
/// d is zero, an exhaustive sign-flip permutation test with ties or zeros and at most 13 pairs,
/// and the normal approximation above that.
///
/// Returns `None` when the slices differ in length or are empty.
pub fn wilcoxon(a: &[f64], b: &[f64]) -> Option<Wilcoxon> {
    if a.len() != b.len() || a.is_empty() {
        return None;
    }
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    let n_all = d.len();
    let nonzero: Vec<f64> = d.iter().copied().filter(|&x| x != 0.0).collect();
    let n_zero = n_all - nonzero.len();
    let (ranks, tie_sizes) = average_ranks(&nonzero.iter().map(|x| x.abs()).collect::<Vec<_>>());
    let has_ties = tie_sizes.iter().any(|&t| t > 1);
    let r_plus: f64 = nonzero
        .iter()
        .zip(&ranks)
        .filter(|(x, _)| **x > 0.0)
        .map(|(_, r)| r)
        .sum();
    let r_minus: f64 = nonzero
        .iter()
        .zip(&ranks)
        .filter(|(x, _)| **x < 0.0)
        .map(|(_, r)| r)
        .sum();
    let statistic = r_plus.min(r_minus);
    let count = nonzero.len() as f64;
    let method = if n_all > 50 {
        WilcoxonMethod::Asymptotic
    } else if !has_ties && n_zero == 0 {
        WilcoxonMethod::Exact
    } else if n_all <= 13 {
        WilcoxonMethod::Permutation
    } else {
        WilcoxonMethod::Asymptotic
    };
    let p = match method {
        WilcoxonMethod::Asymptotic => {
            let mean = count * (count + 1.0) * 0.25;
            let tie_correct: f64 = tie_sizes
                .iter()
                .map(|&t| {
                    let t = t as f64;
                    t * t * t - t
                })
                .sum();
            let se =
                ((count * (count + 1.0) * (2.0 * count + 1.0) - tie_correct / 2.0) / 24.0).sqrt();
            normal_two_sided((r_plus - mean) / se)
        }
        WilcoxonMethod::Exact => {
            let pmf = signed_rank_pmf(nonzero.len());
            let mean = count * (count + 1.0) / 4.0;
            // r_plus is an integer here (no ties); scipy's floor/ceil are no-ops.
            let k = r_plus as usize;
            let sf = |k: usize| {
                if (k as f64) <= mean {
                    pmf[k.min(pmf.len())..].iter().sum::<f64>()
                } else {
                    1.0 - pmf[..k].iter().sum::<f64>()
                }
            };
            let cdf = |k: usize| {
                if (k as f64) <= mean {
                    pmf[..=k].iter().sum::<f64>()
                } else {
                    1.0 - pmf[(k + 1).min(pmf.len())..].iter().sum::<f64>()
                }
            };
            (2.0 * sf(k).min(cdf(k))).clamp(0.0, 1.0)
        }
        WilcoxonMethod::Permutation => sign_flip_p(&d, &ranks, r_plus),
    };
    Some(Wilcoxon {
        statistic,
        p,
        method,
        n: nonzero.len(),
    })
}

/// The exhaustive sign-flip p-value of R+ as scipy's `permutation_test` gives it: every one of
/// the 2ⁿ flips of all `n` differences (zeros included, where a flip changes nothing), the
/// relative tolerance 100·ε·|R+| for ties with the observed value, and no +1 (the test is
/// exact).
fn sign_flip_p(d: &[f64], nonzero_ranks: &[f64], observed: f64) -> f64 {
    // The ranks of the differences in `d`'s order; 0 for a zero difference.
    let mut ranks = Vec::with_capacity(d.len());
    let mut next = nonzero_ranks.iter();
    for &x in d {
        ranks.push(if x == 0.0 {
            0.0
        } else {
            *next.next().expect("one rank per non-zero difference")
        });
    }
    let positive: Vec<bool> = d.iter().map(|&x| x > 0.0).collect();
    let gamma = (f64::EPSILON * 100.0 * observed).abs();
    let total = 1u64 << d.len();
    let (mut at_most, mut at_least) = (0u64, 0u64);
    for mask in 0..total {
        let r_plus: f64 = (0..d.len())
            .filter(|&i| positive[i] != (mask >> i & 1 == 1))
            .map(|i| ranks[i])
            .sum();
        if r_plus <= observed + gamma {
            at_most += 1;
        }
        if r_plus >= observed - gamma {
            at_least += 1;
        }
    }
    let total = total as f64;
    (2.0 * (at_most as f64 / total).min(at_least as f64 / total)).clamp(0.0, 1.0)
}

/// The probabilities of R+ = 0, 1, …, n(n+1)/2 under the null, built as scipy's
/// `_get_wilcoxon_distr`: halving and shifting, one rank at a time.
fn signed_rank_pmf(n: usize) -> Vec<f64> {
    let mut c = vec![1.0];
    for k in 1..=n {
        let mut next = vec![0.0; k * (k + 1) / 2 + 1];
        let m = c.len();
        for (slot, value) in next.iter_mut().zip(&c) {
            *slot = value * 0.5;
        }
        let offset = next.len() - m;
        for (i, value) in c.iter().enumerate() {
            next[offset + i] += value * 0.5;
        }
        c = next;
    }
    c
}

/// Average ranks (1-based, ties get the mean of their positions) of `values` in their order,
/// and the size of every group of equal values.
pub(crate) fn average_ranks(values: &[f64]) -> (Vec<f64>, Vec<usize>) {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&i, &j| values[i].total_cmp(&values[j]));
    let mut ranks = vec![0.0; values.len()];
    let mut sizes = Vec::new();
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        // Positions start+1 ..= end, averaged as scipy does: first + (count − 1) / 2.
        let rank = (start + 1) as f64 + (end - start - 1) as f64 / 2.0;
        for &i in &order[start..end] {
            ranks[i] = rank;
        }
        sizes.push(end - start);
        start = end;
    }
    (ranks, sizes)
}

/// Kendall's τ-b between `x` and `y`, as `scipy.stats.kendalltau(x, y).statistic`:
/// `(concordant − discordant) / √(n₀ − n_x) / √(n₀ − n_y)` with `n₀ = n(n − 1)/2` pairs and
/// `n_x`, `n_y` the pairs tied in `x` and in `y`, clipped to `[−1, 1]` as scipy does.
///
/// Returns `None` when the slices differ in length, there are fewer than two pairs, or `x` or
/// `y` is constant (scipy's NaN).
pub fn kendall_tau_b(x: &[f64], y: &[f64]) -> Option<f64> {
    crate::kendall(x, y).map(|c| c.r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_null_distribution_of_three_ranks() {
        // R+ over {1, 2, 3}: 0, 1, 2, 3, 3, 4, 5, 6 → counts 1 1 1 2 1 1 1 of 8.
        let pmf = signed_rank_pmf(3);
        let expected = [1.0, 1.0, 1.0, 2.0, 1.0, 1.0, 1.0].map(|c| c / 8.0);
        assert_eq!(pmf, expected);
    }

    #[test]
    fn average_ranks_share_their_positions() {
        let (ranks, sizes) = average_ranks(&[0.3, 0.1, 0.3, 0.2]);
        assert_eq!(ranks, [3.5, 1.0, 3.5, 2.0]);
        assert_eq!(sizes, [1, 1, 2]);
    }

    #[test]
    fn kendall_by_hand() {
        assert_eq!(kendall_tau_b(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]), Some(1.0));
        assert_eq!(
            kendall_tau_b(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]),
            Some(-1.0)
        );
        assert_eq!(kendall_tau_b(&[1.0, 1.0], &[1.0, 2.0]), None);
    }
}
