//! Inter-rater agreement: Fleiss' κ (as statsmodels) and Cohen's κ (as scikit-learn).

use std::collections::BTreeMap;

/// Fleiss' κ from a subjects × categories count table, as
/// `statsmodels.stats.inter_rater.fleiss_kappa(table, method="fleiss")`: `table[s][c]` is how
/// many raters put subject `s` in category `c`, and every row sums to the same number of raters.
///
/// Returns `None` when the table is empty or has no categories, the rows do not all sum to the
/// same number, there are fewer than two raters per subject, or every rating falls in one
/// category (chance agreement is then 1 and κ is 0/0).
pub fn fleiss_kappa(table: &[Vec<u32>]) -> Option<f64> {
    let n_categories = table.first()?.len();
    if n_categories == 0 || table.iter().any(|row| row.len() != n_categories) {
        return None;
    }
    let raters = table[0].iter().map(|&c| u64::from(c)).sum::<u64>();
    if raters < 2
        || table
            .iter()
            .any(|row| row.iter().map(|&c| u64::from(c)).sum::<u64>() != raters)
    {
        return None;
    }
    let n_subjects = table.len() as f64;
    let n_raters = raters as f64;
    let total = n_subjects * n_raters;
    // Chance agreement: Σ_c p_c², with p_c the share of all ratings in category c.
    let expected: f64 = (0..n_categories)
        .map(|c| {
            let share = table.iter().map(|row| f64::from(row[c])).sum::<f64>() / total;
            share * share
        })
        .sum();
    // Observed agreement: the mean over subjects of the share of agreeing rater pairs.
    let observed = table
        .iter()
        .map(|row| {
            let squares: f64 = row.iter().map(|&c| f64::from(c) * f64::from(c)).sum();
            (squares - n_raters) / (n_raters * (n_raters - 1.0))
        })
        .sum::<f64>()
        / n_subjects;
    if expected >= 1.0 {
        return None;
    }
    Some((observed - expected) / (1.0 - expected))
}

/// The subjects × categories count table of [`fleiss_kappa`] from per-subject ratings
/// (`ratings[subject][rater]` = category index), as statsmodels'
/// `aggregate_raters(ratings, n_cat=n_categories)`.
///
/// Subjects may have different numbers of ratings here; [`fleiss_kappa`] then returns `None`.
///
/// # Panics
///
/// When a rating is not below `n_categories` (a caller's bug: the table would silently lose it).
pub fn aggregate_raters(ratings: &[Vec<usize>], n_categories: usize) -> Vec<Vec<u32>> {
    ratings
        .iter()
        .map(|subject| {
            let mut row = vec![0u32; n_categories];
            for &category in subject {
                assert!(
                    category < n_categories,
                    "aggregate_raters: category {category} is not below n_categories \
                     = {n_categories}"
                );
                row[category] += 1;
            }
            row
        })
        .collect()
}

/// Cohen's κ between two raters of the same items, as `sklearn.metrics.cohen_kappa_score(a, b)`
/// (unweighted): `1 − Σ_{i≠j} O_ij / Σ_{i≠j} E_ij`, with `O` the confusion counts and `E` their
/// expectation under independence, over the categories either rater used.
///
/// Returns `None` when the slices differ in length or are empty, or when κ is undefined: both
/// raters gave every item the same single category (scikit-learn returns NaN with a warning).
pub fn cohen_kappa(a: &[usize], b: &[usize]) -> Option<f64> {
    if a.len() != b.len() || a.is_empty() {
        return None;
    }
    let mut index: BTreeMap<usize, usize> = a.iter().chain(b).map(|&l| (l, 0)).collect();
    for (i, slot) in index.values_mut().enumerate() {
        *slot = i;
    }
    let k = index.len();
    let mut confusion = vec![0.0; k * k];
    for (x, y) in a.iter().zip(b) {
        confusion[index[x] * k + index[y]] += 1.0;
    }
    let (sum0, sum1) = margins(&confusion, k);
    let total: f64 = sum0.iter().sum();
    let mut disagreement = 0.0;
    let mut expected_disagreement = 0.0;
    for i in 0..k {
        for j in 0..k {
            if i != j {
                disagreement += confusion[i * k + j];
                expected_disagreement += sum0[i] * sum1[j] / total;
            }
        }
    }
    if expected_disagreement == 0.0 {
        return None;
    }
    Some(1.0 - disagreement / expected_disagreement)
}

/// Cohen's κ with quadratic weights between two raters of the same items on a `0..=max` scale,
/// as `sklearn.metrics.cohen_kappa_score(a, b, labels=range(max + 1), weights="quadratic")`:
/// `1 − Σ w_ij O_ij / Σ w_ij E_ij` with `w_ij = (i − j)²`, `O` the confusion counts and `E` their
/// expectation under independence. The labels are the whole scale, so a value neither rater
/// used still sets the distances.
///
/// Returns `None` when the slices differ in length or are empty, a rating is above `max`, or κ
/// is undefined: both raters gave every item the same rating (scikit-learn returns NaN).
pub fn quadratic_kappa(a: &[usize], b: &[usize], max: usize) -> Option<f64> {
    if a.len() != b.len() || a.is_empty() || a.iter().chain(b).any(|&r| r > max) {
        return None;
    }
    let k = max + 1;
    let mut confusion = vec![0.0; k * k];
    for (&x, &y) in a.iter().zip(b) {
        confusion[x * k + y] += 1.0;
    }
    let (sum0, sum1) = margins(&confusion, k);
    let total = a.len() as f64;
    let (mut observed, mut expected) = (0.0, 0.0);
    for i in 0..k {
        for j in 0..k {
            let w = ((i as f64) - (j as f64)).powi(2);
            observed += w * confusion[i * k + j];
            // scikit-learn's expected matrix is outer(sum0, sum1) / n; w is symmetric.
            expected += w * sum0[i] * sum1[j] / total;
        }
    }
    if expected == 0.0 {
        return None;
    }
    Some(1.0 - observed / expected)
}

/// The column sums (rater b's counts) and row sums (rater a's) of a k × k confusion matrix,
/// named `sum0` and `sum1` as in scikit-learn.
fn margins(confusion: &[f64], k: usize) -> (Vec<f64>, Vec<f64>) {
    let sum0 = (0..k)
        .map(|j| (0..k).map(|i| confusion[i * k + j]).sum())
        .collect();
    let sum1 = (0..k)
        .map(|i| confusion[i * k..(i + 1) * k].iter().sum())
        .collect();
    (sum0, sum1)
}
