//! Invariants that hold for any input: bounds, symmetry, monotonicity, and the ANOVA's agreement
//! with its 2×2 closed form.

use hierarag_stats::{
    aggregate_raters, cohen_kappa, equal_frequency_bins, fleiss_kappa, nmi, percentile,
    percentile_interval, permutation_p, std_dev, two_by_two, two_way_anova,
};
use proptest::prelude::*;

/// Finite values of the magnitudes the analysis sees (scores, ratios), with ties likely.
fn value() -> impl Strategy<Value = f64> {
    prop_oneof![-1e6..1e6_f64, (0u32..20).prop_map(|k| f64::from(k) / 10.0)]
}

/// Two labellings of the same items.
fn labelling_pair() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
    (1usize..60, 1usize..6, 1usize..6).prop_flat_map(|(n, k_a, k_b)| {
        (
            prop::collection::vec(0..k_a, n),
            prop::collection::vec(0..k_b, n),
        )
    })
}

proptest! {
    #[test]
    fn std_dev_is_non_negative(values in prop::collection::vec(value(), 0..50), ddof in 0u32..3) {
        match std_dev(&values, ddof) {
            Some(std) => prop_assert!(std >= 0.0),
            None => prop_assert!(values.len() <= ddof as usize),
        }
    }

    #[test]
    fn nmi_is_bounded_and_symmetric((a, b) in labelling_pair()) {
        let ab = nmi(&a, &b).unwrap();
        let ba = nmi(&b, &a).unwrap();
        prop_assert!((0.0..=1.0).contains(&ab), "nmi = {ab}");
        prop_assert!((ab - ba).abs() <= 1e-12, "nmi(a, b) = {ab}, nmi(b, a) = {ba}");
    }

    #[test]
    fn nmi_of_a_labelling_with_itself_is_one((a, _) in labelling_pair()) {
        let mut distinct = a.clone();
        distinct.sort_unstable();
        distinct.dedup();
        prop_assume!(distinct.len() >= 2);
        let own = nmi(&a, &a).unwrap();
        prop_assert!((own - 1.0).abs() <= 1e-12, "nmi(a, a) = {own}");
    }

    #[test]
    fn bins_are_in_range_and_monotone(
        values in prop::collection::vec(value(), 1..80),
        n_bins in 1usize..12,
    ) {
        let bins = equal_frequency_bins(&values, n_bins);
        prop_assert_eq!(bins.len(), values.len());
        for (i, (&x, &bin_x)) in values.iter().zip(&bins).enumerate() {
            prop_assert!(bin_x < n_bins);
            for (&y, &bin_y) in values.iter().zip(&bins).skip(i + 1) {
                if x < y {
                    prop_assert!(bin_x <= bin_y);
                } else if x > y {
                    prop_assert!(bin_x >= bin_y);
                } else {
                    prop_assert_eq!(bin_x, bin_y);
                }
            }
        }
    }

    #[test]
    fn bins_hold_equal_shares_without_ties(n in 1usize..200, n_bins in 1usize..10) {
        let values: Vec<f64> = (0..n).map(|i| (i as f64 * 0.618).fract()).collect();
        let bins = equal_frequency_bins(&values, n_bins);
        for bin in 0..n_bins {
            let size = bins.iter().filter(|&&b| b == bin).count();
            prop_assert!(size.abs_diff(n / n_bins) <= 1, "bin {bin} holds {size} of {n}");
        }
    }

    #[test]
    fn permutation_p_is_a_probability(
        observed in value(),
        null in prop::collection::vec(value(), 0..100),
    ) {
        let p = permutation_p(observed, &null);
        prop_assert!(p > 0.0 && p <= 1.0);
    }

    #[test]
    fn percentile_interval_is_ordered(
        samples in prop::collection::vec(value(), 1..100),
        level in 0.0..=1.0_f64,
    ) {
        let interval = percentile_interval(&samples, level).unwrap();
        prop_assert!(interval.lo <= interval.hi);
        prop_assert_eq!(interval.n_ignored, 0);
    }

    #[test]
    fn percentile_is_monotone_in_q(
        values in prop::collection::vec(value(), 1..50),
        q1 in 0.0..=100.0_f64,
        q2 in 0.0..=100.0_f64,
    ) {
        let (low, high) = if q1 <= q2 { (q1, q2) } else { (q2, q1) };
        prop_assert!(percentile(&values, low).unwrap() <= percentile(&values, high).unwrap());
    }

    #[test]
    fn cohen_kappa_is_at_most_one((a, b) in labelling_pair()) {
        if let Some(kappa) = cohen_kappa(&a, &b) {
            prop_assert!(kappa <= 1.0 + 1e-12, "kappa = {kappa}");
        }
    }

    #[test]
    fn fleiss_kappa_is_at_most_one(
        ratings in (2usize..6, 1usize..30)
            .prop_flat_map(|(raters, subjects)| {
                prop::collection::vec(prop::collection::vec(0usize..4, raters), subjects)
            }),
    ) {
        if let Some(kappa) = fleiss_kappa(&aggregate_raters(&ratings, 4)) {
            prop_assert!(kappa <= 1.0 + 1e-12, "kappa = {kappa}");
        }
    }

    #[test]
    fn anova_2x2_equals_its_closed_form(
        cells in prop::collection::vec(prop::collection::vec(0.0..1.0_f64, 2..12), 4),
    ) {
        let (mut y, mut a, mut b) = (Vec::new(), Vec::new(), Vec::new());
        let mut means = [[0.0; 2]; 2];
        let mut ns = [[0; 2]; 2];
        for (cell, values) in cells.iter().enumerate() {
            let (i, j) = (cell / 2, cell % 2);
            y.extend(values);
            a.extend(std::iter::repeat_n(i, values.len()));
            b.extend(std::iter::repeat_n(j, values.len()));
            means[i][j] = values.iter().sum::<f64>() / values.len() as f64;
            ns[i][j] = values.len();
        }
        let table = two_way_anova(&y, &a, &b).unwrap();
        let closed = two_by_two(means, ns).unwrap();
        for (anova, closed) in [
            (table.a.sum_sq, closed.a.sum_sq),
            (table.b.sum_sq, closed.b.sum_sq),
            (table.interaction.sum_sq, closed.interaction.sum_sq),
        ] {
            prop_assert!((anova - closed).abs() <= 1e-12 * closed.max(1.0));
        }
        for term in [table.a, table.b, table.interaction] {
            prop_assert!(term.sum_sq >= 0.0 && (0.0..=1.0).contains(&term.p));
        }
    }
}
