//! Information between labellings (entropy, MI, NMI as scikit-learn) and equal-frequency bins.

use std::collections::BTreeMap;

/// Bins `values` into `n_bins` equal-frequency bins: the bin of `x` is
/// `floor(n_bins · r / n)`, where `r` is the number of values strictly less than `x`.
///
/// Tied values therefore always share a bin, and with no ties every bin holds `n / n_bins`
/// values ± 1. Bins are in `0..n_bins` and never decrease as the value grows. `n_bins = 0` is
/// treated as 1 (every value in bin 0). Values should be finite: a NaN is less than nothing and
/// nothing is less than it, so it lands in bin 0 and does not move the others.
pub fn equal_frequency_bins(values: &[f64], n_bins: usize) -> Vec<usize> {
    let n = values.len();
    let n_bins = n_bins.max(1);
    let mut sorted: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    sorted.sort_by(f64::total_cmp);
    values
        .iter()
        .map(|&x| {
            let rank = sorted.partition_point(|&s| s < x);
            // rank < n, so the bin is < n_bins; u128 keeps n_bins · rank from overflowing.
            ((n_bins as u128 * rank as u128) / n as u128) as usize
        })
        .collect()
}

/// The entropy (natural log) of a labelling, as `sklearn.metrics.cluster.entropy`:
/// `−Σ p_k ln p_k` over the labels' frequencies.
///
/// A single label gives 0. An empty labelling gives 1.0, scikit-learn's convention.
pub fn entropy(labels: &[usize]) -> f64 {
    if labels.is_empty() {
        return 1.0;
    }
    let counts = label_counts(labels);
    if counts.len() == 1 {
        return 0.0;
    }
    let total = labels.len() as f64;
    let ln_total = total.ln();
    // ln(a) − ln(b) rather than ln(a / b), as scikit-learn does, for the same last digits.
    -counts
        .values()
        .map(|&count| {
            let count = count as f64;
            (count / total) * (count.ln() - ln_total)
        })
        .sum::<f64>()
}

/// The mutual information (natural log) between two labellings of the same items, as
/// `sklearn.metrics.mutual_info_score`.
///
/// It is 0 when either labelling has a single label (or none). Like scikit-learn, terms smaller
/// than machine epsilon are dropped and a negative rounding residue is clipped to 0, so
/// independent labellings give exactly 0.
///
/// # Panics
///
/// When `a` and `b` differ in length (a caller's bug; [`nmi`] returns `None` instead).
pub fn mutual_info(a: &[usize], b: &[usize]) -> f64 {
    assert_eq!(
        a.len(),
        b.len(),
        "mutual_info: the labellings differ in length"
    );
    let counts_a = label_counts(a);
    let counts_b = label_counts(b);
    if counts_a.len() <= 1 || counts_b.len() <= 1 {
        return 0.0;
    }
    // The contingency table's non-zero cells in row-major order, as scipy's `find` lists them.
    let mut contingency: BTreeMap<(usize, usize), u64> = BTreeMap::new();
    for (&x, &y) in a.iter().zip(b) {
        *contingency.entry((x, y)).or_default() += 1;
    }
    let total = a.len() as f64;
    let ln_total = total.ln();
    let mi: f64 = contingency
        .iter()
        .map(|(&(x, y), &count)| {
            let share = count as f64 / total;
            // The product of the marginals is an integer, as in scikit-learn (int64 there).
            let outer = (counts_a[&x] * counts_b[&y]) as f64;
            let log_outer = -outer.ln() + ln_total + ln_total;
            let term = share * ((count as f64).ln() - ln_total) + share * log_outer;
            if term.abs() < f64::EPSILON { 0.0 } else { term }
        })
        .sum();
    mi.max(0.0)
}

/// The normalised mutual information of two labellings, as
/// `sklearn.metrics.normalized_mutual_info_score(a, b, average_method="arithmetic")`:
/// `MI / ((H(a) + H(b)) / 2)`, in `[0, 1]` (clamped: scikit-learn can exceed 1 by an ulp) and
/// symmetric.
///
/// Its special cases are scikit-learn's: when both labellings have a single label (or both are
/// empty) it is 1.0 (a perfect match); otherwise when the mutual information is 0 (in particular
/// when just one labelling has a single label) it is 0.0.
///
/// Returns `None` only when `a` and `b` differ in length.
pub fn nmi(a: &[usize], b: &[usize]) -> Option<f64> {
    if a.len() != b.len() {
        return None;
    }
    let n_a = label_counts(a).len();
    let n_b = label_counts(b).len();
    if n_a == n_b && n_a <= 1 {
        return Some(1.0);
    }
    let mi = mutual_info(a, b);
    if mi == 0.0 {
        return Some(0.0);
    }
    let normalizer = (entropy(a) + entropy(b)) / 2.0;
    // Rounding can push MI / normaliser of two identical partitions an ulp above 1 (scikit-learn
    // returns 1.0000000000000002 for some); the bound is worth more to callers than that ulp.
    Some((mi / normalizer).min(1.0))
}

/// How often each label occurs, by label.
fn label_counts(labels: &[usize]) -> BTreeMap<usize, u64> {
    let mut counts = BTreeMap::new();
    for &label in labels {
        *counts.entry(label).or_default() += 1;
    }
    counts
}
