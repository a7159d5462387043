//! Pearson's χ² tests: independence of a contingency table, as scipy's `chi2_contingency`, and
//! goodness of fit, as its `chisquare`.

/// The χ² test of a contingency table.
#[derive(Debug, Clone, PartialEq)]
pub struct ChiSquare {
    /// Pearson's χ² (with Yates' correction when `dof` is 1).
    pub statistic: f64,
    /// `P(χ²(dof) > statistic)`.
    pub p: f64,
    /// `(rows − 1) · (columns − 1)`.
    pub dof: usize,
    /// The counts expected under independence: row total × column total / total.
    pub expected: Vec<Vec<f64>>,
}

/// The χ² test of independence of the rows and columns of `table`, as
/// `scipy.stats.chi2_contingency(table)` with its defaults: expected counts from the margins,
/// Pearson's statistic, and with one degree of freedom (a 2×2 table) Yates' continuity
/// correction (each observed count moved towards its expected one by at most 0.5). A table of
/// one row or one column has no degree of freedom: statistic 0, p 1.
///
/// Returns `None` when the table is empty or ragged, or an expected count is zero (a row or
/// column of zeros; scipy raises).
pub fn chi2_contingency(table: &[Vec<u64>]) -> Option<ChiSquare> {
    let rows = table.len();
    let columns = table.first()?.len();
    if columns == 0 || table.iter().any(|row| row.len() != columns) {
        return None;
    }
    let row_sums: Vec<f64> = table.iter().map(|r| r.iter().sum::<u64>() as f64).collect();
    let column_sums: Vec<f64> = (0..columns)
        .map(|c| table.iter().map(|r| r[c]).sum::<u64>() as f64)
        .collect();
    let total: f64 = row_sums.iter().sum();
    let expected: Vec<Vec<f64>> = row_sums
        .iter()
        .map(|r| column_sums.iter().map(|c| r * c / total).collect())
        .collect();
    if expected
        .iter()
        .flatten()
        .any(|&e| e == 0.0 || !e.is_finite())
    {
        return None;
    }
    let dof = (rows - 1) * (columns - 1);
    if dof == 0 {
        return Some(ChiSquare {
            statistic: 0.0,
            p: 1.0,
            dof,
            expected,
        });
    }
    let mut statistic = 0.0;
    for (row, expected_row) in table.iter().zip(&expected) {
        for (&o, &e) in row.iter().zip(expected_row) {
            let mut o = o as f64;
            if dof == 1 {
                // Yates: towards the expected count by min(0.5, |E − O|).
                let diff = e - o;
                o += diff.signum() * diff.abs().min(0.5);
            }
            statistic += (o - e) * (o - e) / e;
        }
    }
    // The upper tail of χ²(dof) is the regularised upper incomplete gamma Q(dof/2, x/2).
    let p = if statistic > 0.0 {
        statrs::function::gamma::gamma_ur(dof as f64 / 2.0, statistic / 2.0)
    } else {
        1.0
    };
    Some(ChiSquare {
        statistic,
        p,
        dof,
        expected,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_two_by_two_by_hand() {
        // Margins 20/20 × 20/20: every expected count 10; |O − E| = 5, Yates makes it 4.5.
        let chi = chi2_contingency(&[vec![15, 5], vec![5, 15]]).unwrap();
        assert_eq!(chi.dof, 1);
        assert_eq!(chi.expected, [[10.0, 10.0], [10.0, 10.0]]);
        assert!((chi.statistic - 4.0 * 4.5 * 4.5 / 10.0).abs() < 1e-12);
        assert!(chi2_contingency(&[vec![1, 2], vec![0, 0]]).is_none());
        assert!(chi2_contingency(&[]).is_none());
    }
}

/// Pearson's χ² goodness-of-fit test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GoodnessOfFit {
    /// `Σ (O − E)² / E`.
    pub statistic: f64,
    /// `P(χ²(dof) > statistic)`.
    pub p: f64,
    /// The number of categories − 1.
    pub dof: usize,
}

/// The χ² goodness-of-fit test of the `observed` counts against the `expected` ones, as
/// `scipy.stats.chisquare(observed, expected)`; scale expected proportions to the observed total
/// first, since scipy refuses expected counts whose total differs from the observed one by more
/// than a relative √ε (1.5e-8).
///
/// Returns `None` when the lengths differ, there are fewer than two categories, an expected
/// count is not positive and finite, or the totals differ.
pub fn chisquare(observed: &[u64], expected: &[f64]) -> Option<GoodnessOfFit> {
    if observed.len() != expected.len()
        || observed.len() < 2
        || expected.iter().any(|&e| !(e > 0.0 && e.is_finite()))
    {
        return None;
    }
    let observed_total = observed.iter().sum::<u64>() as f64;
    let expected_total: f64 = expected.iter().sum();
    if (observed_total - expected_total).abs()
        > f64::EPSILON.sqrt() * observed_total.min(expected_total)
    {
        return None;
    }
    let statistic: f64 = observed
        .iter()
        .zip(expected)
        .map(|(&o, &e)| (o as f64 - e) * (o as f64 - e) / e)
        .sum();
    let dof = observed.len() - 1;
    let p = if statistic > 0.0 {
        statrs::function::gamma::gamma_ur(dof as f64 / 2.0, statistic / 2.0)
    } else {
        1.0
    };
    Some(GoodnessOfFit { statistic, p, dof })
}
