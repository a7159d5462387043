//! Multiple comparisons: Holm's step-down adjustment.

/// Holm-adjusted p-values, in the order given: as statsmodels'
/// `multipletests(p, method="holm")[1]`. Sorted ascending, the i-th smallest (from 0) becomes
/// `min(1, max over j ≤ i of (m − j) · p_(j))`; rejecting where the adjusted value is below α
/// holds the family-wise error rate at α over the `m` hypotheses whatever their dependence.
/// NaN p-values stay NaN and are not counted in `m` (statsmodels refuses them).
pub fn holm(p: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..p.len()).filter(|&i| !p[i].is_nan()).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let m = order.len();
    let mut adjusted = vec![f64::NAN; p.len()];
    let mut running = 0.0f64;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max((m - rank) as f64 * p[i]);
        adjusted[i] = running.min(1.0);
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holm_by_hand() {
        // m = 4: sorted 0.01, 0.02, 0.03, 0.5 → 0.04, 0.06, 0.06 (monotone), 0.5.
        let adjusted = holm(&[0.03, 0.01, 0.5, 0.02]);
        let expected = [0.06, 0.04, 0.5, 0.06];
        for (a, e) in adjusted.iter().zip(expected) {
            assert!((a - e).abs() < 1e-15, "{adjusted:?}");
        }
        assert!(holm(&[]).is_empty());
        assert_eq!(holm(&[0.7, 0.9]), [1.0, 1.0]);
        let with_nan = holm(&[0.01, f64::NAN]);
        assert_eq!(with_nan[0], 0.01);
        assert!(with_nan[1].is_nan());
    }
}
