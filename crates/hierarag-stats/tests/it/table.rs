//! Table tests: values computable by hand, the paper's Table 4 factorial, and the degenerate
//! inputs that must give `None` or an error instead of a panic.

use hierarag_stats::{
    StatsError, aggregate_raters, binomial_greater, cohen_kappa, contrast, entropy,
    equal_frequency_bins, fleiss_kappa, mean, mutual_info, nmi, percentile, percentile_interval,
    permutation_p, point_biserial, range, resample_indices, std_dev, two_by_two, two_way_anova,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn assert_close(actual: f64, expected: f64, tolerance: f64) {
    assert!(
        (actual - expected).abs() <= tolerance,
        "got {actual}, expected {expected} (± {tolerance})"
    );
}

#[test]
fn dispersion_by_hand() {
    let values = [1.0, 2.0, 3.0, 4.0];
    assert_eq!(mean(&values), Some(2.5));
    assert_close(std_dev(&values, 0).unwrap(), 1.25_f64.sqrt(), 1e-15);
    assert_close(std_dev(&values, 1).unwrap(), (5.0_f64 / 3.0).sqrt(), 1e-15);
    assert_eq!(range(&[3.0, 1.0, 2.0]), Some(2.0));
    assert_eq!(std_dev(&[0.6; 5], 0), Some(0.0));
}

#[test]
fn dispersion_of_degenerate_input() {
    assert_eq!(mean(&[]), None);
    assert_eq!(std_dev(&[], 0), None);
    assert_eq!(std_dev(&[0.5], 1), None);
    assert_eq!(std_dev(&[0.5, 0.7], 2), None);
    assert_eq!(std_dev(&[0.5], 0), Some(0.0));
    assert_eq!(range(&[]), None);
    assert!(range(&[1.0, f64::NAN]).unwrap().is_nan());
}

#[test]
fn percentiles_by_hand() {
    let values = [4.0, 1.0, 3.0, 2.0];
    assert_eq!(percentile(&values, 0.0), Some(1.0));
    assert_eq!(percentile(&values, 25.0), Some(1.75));
    assert_eq!(percentile(&values, 50.0), Some(2.5));
    assert_eq!(percentile(&values, 100.0), Some(4.0));
    assert_eq!(percentile(&[7.0], 33.0), Some(7.0));
    assert_eq!(percentile(&values, 100.5), None);
    assert_eq!(percentile(&values, -1.0), None);
    assert_eq!(percentile(&values, f64::NAN), None);
    assert_eq!(percentile(&[], 50.0), None);
    assert!(percentile(&[1.0, f64::NAN], 50.0).unwrap().is_nan());
}

#[test]
fn percentile_interval_skips_and_counts_non_finite_replicates() {
    let samples = [5.0, f64::NAN, 1.0, 3.0, f64::INFINITY, 2.0, 4.0];
    let interval = percentile_interval(&samples, 0.5).unwrap();
    assert_eq!(
        (interval.lo, interval.hi, interval.n_ignored),
        (2.0, 4.0, 2)
    );
    let full = percentile_interval(&samples, 1.0).unwrap();
    assert_eq!((full.lo, full.hi), (1.0, 5.0));
    assert_eq!(
        percentile_interval(&[f64::NAN, f64::NEG_INFINITY], 0.95),
        None
    );
    assert_eq!(percentile_interval(&[], 0.95), None);
    assert_eq!(percentile_interval(&[1.0, 2.0], 1.5), None);
}

#[test]
fn permutation_p_by_hand() {
    assert_eq!(permutation_p(5.0, &[1.0, 2.0, 3.0]), 0.25);
    assert_eq!(permutation_p(0.0, &[1.0, 2.0, 3.0]), 1.0);
    // Ties count as "at least as extreme".
    assert_eq!(permutation_p(2.0, &[1.0, 2.0, 3.0]), 0.75);
    assert_eq!(permutation_p(2.0, &[f64::NAN]), 0.5);
    assert_eq!(permutation_p(2.0, &[]), 1.0);
}

#[test]
fn equal_frequency_bins_by_hand() {
    assert_eq!(
        equal_frequency_bins(&[0.5, 0.1, 0.4, 0.2, 0.3], 5),
        [4, 0, 3, 1, 2]
    );
    // Ten distinct values, five bins: two per bin.
    let values: Vec<f64> = (0..10).map(|i| f64::from(i) / 10.0).collect();
    assert_eq!(
        equal_frequency_bins(&values, 5),
        [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    );
    // Ties share a bin: three values are below 2.0, so it goes to floor(2 · 3 / 4) = 1.
    assert_eq!(equal_frequency_bins(&[1.0, 1.0, 1.0, 2.0], 2), [0, 0, 0, 1]);
    assert_eq!(equal_frequency_bins(&[0.7; 4], 5), [0, 0, 0, 0]);
    assert_eq!(equal_frequency_bins(&[0.3, 0.1], 0), [0, 0]);
    assert!(equal_frequency_bins(&[], 5).is_empty());
}

#[test]
fn information_by_hand() {
    let ln2 = std::f64::consts::LN_2;
    assert_close(entropy(&[0, 0, 1, 1]), ln2, 1e-15);
    assert_close(entropy(&[0, 1, 2, 3]), 4.0_f64.ln(), 1e-15);
    assert_eq!(entropy(&[3, 3, 3]), 0.0);
    assert_eq!(entropy(&[]), 1.0); // scikit-learn's convention
    assert_close(mutual_info(&[0, 0, 1, 1], &[5, 5, 9, 9]), ln2, 1e-15);
    assert_eq!(mutual_info(&[0, 0, 1, 1], &[0, 1, 0, 1]), 0.0);
    assert_eq!(mutual_info(&[0, 0, 0], &[0, 1, 2]), 0.0);
}

#[test]
fn nmi_special_cases_follow_scikit_learn() {
    assert_eq!(nmi(&[0, 0, 1, 1], &[1, 1, 0, 0]), Some(1.0));
    assert_eq!(nmi(&[0, 0, 1, 1], &[0, 1, 0, 1]), Some(0.0));
    // Both a single cluster: a perfect match.
    assert_eq!(nmi(&[2, 2, 2], &[7, 7, 7]), Some(1.0));
    assert_eq!(nmi(&[], &[]), Some(1.0));
    // Only one a single cluster: no information.
    assert_eq!(nmi(&[2, 2, 2], &[0, 1, 2]), Some(0.0));
    assert_eq!(nmi(&[0, 1], &[0]), None);
    // H(a) = ln 2, H(b) = ln 4, MI = ln 2 → NMI = ln 2 / (1.5 ln 2) = 2/3.
    assert_close(nmi(&[0, 0, 1, 1], &[0, 1, 2, 3]).unwrap(), 2.0 / 3.0, 1e-15);
}

#[test]
fn kappas_by_hand() {
    // scikit-learn's docstring: negative/positive/neutral.
    let (neg, pos, neu) = (0, 1, 2);
    let y1 = [neg, pos, neg, neu, pos];
    let y2 = [neg, pos, neg, neu, neg];
    assert_close(cohen_kappa(&y1, &y2).unwrap(), 0.6875, 1e-15);
    assert_eq!(cohen_kappa(&[1, 2, 3], &[1, 2, 3]), Some(1.0));
    assert_eq!(cohen_kappa(&[0, 1, 0, 1], &[1, 0, 1, 0]), Some(-1.0));
    assert_eq!(cohen_kappa(&[4, 4], &[4, 4]), None);
    assert_eq!(cohen_kappa(&[], &[]), None);
    assert_eq!(cohen_kappa(&[0, 1], &[0]), None);

    // Fleiss (1971) as worked on Wikipedia: 10 subjects, 14 raters, 5 categories,
    // P̄ = 0.378, P̄e = 0.213, κ = 0.210.
    let table: Vec<Vec<u32>> = vec![
        vec![0, 0, 0, 0, 14],
        vec![0, 2, 6, 4, 2],
        vec![0, 0, 3, 5, 6],
        vec![0, 3, 9, 2, 0],
        vec![2, 2, 8, 1, 1],
        vec![7, 7, 0, 0, 0],
        vec![3, 2, 6, 3, 0],
        vec![2, 5, 3, 2, 2],
        vec![6, 5, 2, 1, 0],
        vec![0, 2, 2, 3, 7],
    ];
    assert_close(fleiss_kappa(&table).unwrap(), 0.210, 5e-4);
    assert_eq!(fleiss_kappa(&[vec![3, 0], vec![0, 3]]), Some(1.0));
}

#[test]
fn fleiss_of_degenerate_tables() {
    assert_eq!(fleiss_kappa(&[]), None);
    assert_eq!(fleiss_kappa(&[vec![], vec![]]), None);
    // Rows with different numbers of raters.
    assert_eq!(fleiss_kappa(&[vec![2, 1], vec![1, 1]]), None);
    // A single rater cannot agree with anyone.
    assert_eq!(fleiss_kappa(&[vec![1, 0], vec![0, 1]]), None);
    // Every rating in one category: chance agreement is 1.
    assert_eq!(fleiss_kappa(&[vec![3, 0], vec![3, 0]]), None);
    // Ragged rows.
    assert_eq!(fleiss_kappa(&[vec![2, 1], vec![3]]), None);
}

#[test]
fn aggregate_raters_counts_categories_per_subject() {
    let table = aggregate_raters(&[vec![0, 1, 1], vec![2, 2, 2]], 3);
    assert_eq!(table, [vec![1, 2, 0], vec![0, 0, 3]]);
    assert_eq!(aggregate_raters(&[vec![0, 0]], 4), [vec![2, 0, 0, 0]]);
}

#[test]
#[should_panic(expected = "not below n_categories")]
fn aggregate_raters_rejects_a_category_out_of_range() {
    aggregate_raters(&[vec![0, 3]], 3);
}

#[test]
fn point_biserial_by_hand() {
    // x = 0,0,1,1 and y = 1..4: r = 2/√5; with ν = 2, the two-sided p is 1 − |r|.
    let correlation = point_biserial(&[false, false, true, true], &[1.0, 2.0, 3.0, 4.0]).unwrap();
    let r = 2.0 / 5.0_f64.sqrt();
    assert_close(correlation.r, r, 1e-15);
    assert_close(correlation.p, 1.0 - r, 1e-14);
    assert_eq!(correlation.n, 4);
    // A perfect split: r = −1, p = 0.
    let perfect = point_biserial(&[true, true, false, false], &[0.0, 0.0, 1.0, 1.0]).unwrap();
    assert_eq!((perfect.r, perfect.p), (-1.0, 0.0));
}

#[test]
fn point_biserial_of_degenerate_input() {
    assert_eq!(point_biserial(&[true, false], &[1.0, 2.0]), None);
    assert_eq!(point_biserial(&[true, true, true], &[1.0, 2.0, 3.0]), None);
    assert_eq!(point_biserial(&[true, false, true], &[2.0, 2.0, 2.0]), None);
    assert_eq!(point_biserial(&[true, false, true], &[1.0, 2.0]), None);
    assert_eq!(
        point_biserial(&[true, false, true], &[1.0, f64::NAN, 2.0]),
        None
    );
}

#[test]
fn binomial_greater_by_hand() {
    // statrs' incomplete beta is accurate to a few 1e-15, not to the last bit.
    assert_close(binomial_greater(5, 5, 0.5).unwrap(), 1.0 / 32.0, 1e-14);
    assert_close(binomial_greater(1, 3, 0.5).unwrap(), 7.0 / 8.0, 1e-14);
    assert_close(binomial_greater(2, 3, 0.5).unwrap(), 0.5, 1e-14);
    assert_eq!(binomial_greater(0, 10, 0.3), Some(1.0));
    assert_eq!(binomial_greater(3, 10, 0.0), Some(0.0));
    assert_eq!(binomial_greater(11, 10, 0.3), None);
    assert_eq!(binomial_greater(1, 10, 1.5), None);
    assert_eq!(binomial_greater(1, 10, f64::NAN), None);
}

/// The paper's Table 4: (lexical variation, question complexity) → (mean CS, n).
const SIMILAR_SIMPLE: (f64, usize) = (0.637, 252);
const SIMILAR_COMPLEX: (f64, usize) = (0.672, 265);
const DISTANT_SIMPLE: (f64, usize) = (0.578, 265);
const DISTANT_COMPLEX: (f64, usize) = (0.578, 218);
const SPREAD: f64 = 0.1;

/// Per-question values whose cell means are exactly Table 4's: mean ± SPREAD in pairs, plus the
/// mean itself when n is odd. Factor a is lexical variation (0 distant, 1 similar), factor b
/// question complexity (0 simple, 1 complex), so that "level 1 − level 0" effects are positive.
fn table4() -> (Vec<f64>, Vec<usize>, Vec<usize>) {
    let (mut y, mut a, mut b) = (Vec::new(), Vec::new(), Vec::new());
    for ((mean, n), lv, qc) in [
        (DISTANT_SIMPLE, 0, 0),
        (DISTANT_COMPLEX, 0, 1),
        (SIMILAR_SIMPLE, 1, 0),
        (SIMILAR_COMPLEX, 1, 1),
    ] {
        for i in 0..n {
            let offset = match (i % 2, i + 1 == n && n % 2 == 1) {
                (_, true) => 0.0,
                (0, false) => SPREAD,
                _ => -SPREAD,
            };
            y.push(mean + offset);
            a.push(lv);
            b.push(qc);
        }
    }
    (y, a, b)
}

#[test]
fn table4_marginals_and_effects() {
    let (y, a, _) = table4();
    // Pooled (n-weighted) marginals: similar .655, distant .578 (3 d.p.).
    let similar: Vec<f64> = y
        .iter()
        .zip(&a)
        .filter(|(_, lv)| **lv == 1)
        .map(|(v, _)| *v)
        .collect();
    let distant: Vec<f64> = y
        .iter()
        .zip(&a)
        .filter(|(_, lv)| **lv == 0)
        .map(|(v, _)| *v)
        .collect();
    assert_close(mean(&similar).unwrap(), 0.655, 5e-4);
    assert_close(mean(&distant).unwrap(), 0.578, 5e-4);

    // Unweighted main effects from the cell means: LV .0765, QC .0175; the interaction is the
    // complexity gap among similar questions (.035) minus that among distant ones (0).
    let means = [
        [DISTANT_SIMPLE.0, DISTANT_COMPLEX.0],
        [SIMILAR_SIMPLE.0, SIMILAR_COMPLEX.0],
    ];
    let ns = [
        [DISTANT_SIMPLE.1, DISTANT_COMPLEX.1],
        [SIMILAR_SIMPLE.1, SIMILAR_COMPLEX.1],
    ];
    let effects = two_by_two(means, ns).unwrap();
    assert_close(effects.a.estimate, 0.0765, 1e-12);
    assert_close(effects.b.estimate, 0.0175, 1e-12);
    assert_close(effects.interaction.estimate, 0.035, 1e-12);
}

#[test]
fn table4_anova_equals_the_closed_form() {
    let (y, a, b) = table4();
    let table = two_way_anova(&y, &a, &b).unwrap();

    // Σ 1/n_i over the four cells: the closed form's denominator for ±1 coefficients.
    let inverse_n: f64 = [
        SIMILAR_SIMPLE,
        SIMILAR_COMPLEX,
        DISTANT_SIMPLE,
        DISTANT_COMPLEX,
    ]
    .iter()
    .map(|(_, n)| 1.0 / *n as f64)
    .sum();
    // Main effects use ±1/2 coefficients: SS = effect² / (Σ 1/n_i / 4).
    assert_close(
        table.a.sum_sq,
        0.0765_f64.powi(2) / (inverse_n / 4.0),
        1e-12,
    );
    assert_close(
        table.b.sum_sq,
        0.0175_f64.powi(2) / (inverse_n / 4.0),
        1e-12,
    );
    assert_close(
        table.interaction.sum_sq,
        0.035_f64.powi(2) / inverse_n,
        1e-12,
    );
    for term in [table.a, table.b, table.interaction] {
        assert_eq!(term.df, 1.0);
    }
    // Within-cell spread: ±SPREAD for all but the middle value of the two odd cells.
    assert_close(table.residual_sum_sq, SPREAD * SPREAD * 998.0, 1e-10);
    assert_eq!(table.residual_df, 996.0);
    let mse = table.residual_sum_sq / table.residual_df;
    assert_close(table.interaction.f, table.interaction.sum_sq / mse, 1e-9);

    // The same from the generic contrast on the cells (simple/complex × distant/similar).
    let interaction = contrast(
        &[0.578, 0.578, 0.637, 0.672],
        &[265, 218, 252, 265],
        &[1.0, -1.0, -1.0, 1.0],
    )
    .unwrap();
    assert_close(interaction.sum_sq, table.interaction.sum_sq, 1e-12);
}

#[test]
fn anova_p_values_by_hand() {
    // A 2×2 with two observations per cell (one-df terms, 4 residual df). Cell means 1, 2, 3, 5
    // with ±1 deviations: residual SS = 8, MSE = 2. Interaction (5 − 3) − (2 − 1) = 1, so
    // SS = 1² / (4 · 1/2) = 0.5 and F = 0.25.
    let y = [0.0, 2.0, 1.0, 3.0, 2.0, 4.0, 4.0, 6.0];
    let a = [0, 0, 0, 0, 1, 1, 1, 1];
    let b = [0, 0, 1, 1, 0, 0, 1, 1];
    let table = two_way_anova(&y, &a, &b).unwrap();
    assert_close(table.residual_sum_sq, 8.0, 1e-12);
    assert_close(table.interaction.sum_sq, 0.5, 1e-12);
    assert_close(table.interaction.f, 0.25, 1e-12);
    // F(1, 4) at F is the two-sided t(4) tail at t = √F, which has the closed form
    // P(|T| > t) = 1 − t (6 + t²) / (t² + 4)^(3/2).
    let t = 0.5_f64;
    let expected_p = 1.0 - t * (6.0 + t * t) / (t * t + 4.0).powf(1.5);
    assert_close(table.interaction.p, expected_p, 1e-12);
}

#[test]
fn anova_errors_name_the_problem() {
    let y = [1.0, 2.0, 3.0, 4.0, 5.0];
    assert_eq!(
        two_way_anova(&y, &[0, 0, 1, 1], &[0, 1, 0, 1, 0]),
        Err(StatsError::LengthMismatch { y: 5, a: 4, b: 5 })
    );
    assert_eq!(
        two_way_anova(&y, &[0; 5], &[0, 1, 0, 1, 0]),
        Err(StatsError::TooFewLevels {
            factor: "a",
            levels: 1
        })
    );
    // No observation has a = 4 together with b = 9.
    assert_eq!(
        two_way_anova(&y, &[2, 2, 4, 4, 2], &[0, 9, 0, 0, 0]),
        Err(StatsError::EmptyCell { a: 4, b: 9 })
    );
    assert_eq!(
        two_way_anova(&y[..4], &[0, 0, 1, 1], &[0, 1, 0, 1]),
        Err(StatsError::NoResidualDf { n: 4, cells: 4 })
    );
    assert_eq!(
        two_way_anova(
            &[1.0, 1.0, 2.0, 3.0, 4.0],
            &[0, 0, 0, 1, 1],
            &[0, 0, 1, 0, 1]
        ),
        Err(StatsError::ZeroResidualVariance)
    );
    assert!(matches!(
        two_way_anova(&[1.0, f64::NAN, 2.0], &[0, 0, 1], &[0, 1, 0]),
        Err(StatsError::NonFinite { index: 1, .. })
    ));
}

#[test]
fn contrast_of_degenerate_input() {
    assert_eq!(contrast(&[1.0, 2.0], &[3, 0], &[1.0, -1.0]), None);
    assert_eq!(contrast(&[1.0, 2.0], &[3, 3], &[0.0, 0.0]), None);
    assert_eq!(contrast(&[1.0, 2.0], &[3, 3], &[1.0]), None);
    assert_eq!(two_by_two([[1.0, 2.0], [3.0, 4.0]], [[1, 2], [0, 4]]), None);
}

#[test]
fn resample_indices_is_seeded_and_in_range() {
    let mut first = Vec::new();
    let mut second = vec![99; 3];
    resample_indices(&mut ChaCha8Rng::seed_from_u64(7), 50, &mut first);
    resample_indices(&mut ChaCha8Rng::seed_from_u64(7), 50, &mut second);
    assert_eq!(first, second);
    assert_eq!(first.len(), 50);
    assert!(first.iter().all(|&i| i < 50));
    // With replacement: 50 draws from 50 almost surely repeat some index.
    let mut distinct = first.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert!(distinct.len() < 50);
    resample_indices(&mut ChaCha8Rng::seed_from_u64(7), 0, &mut first);
    assert!(first.is_empty());
}
