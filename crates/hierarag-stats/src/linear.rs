//! An additive linear model of categorical factors with type II sums of squares, as
//! statsmodels' `anova_lm(ols("y ~ C(f0) + C(f1) + …").fit(), typ=2)`.

use crate::anova::{AnovaTerm, f_survival};

/// The type II ANOVA table of an additive model: one row per factor, and the residual.
#[derive(Debug, Clone, PartialEq)]
pub struct AdditiveAnova {
    /// One term per factor, in the order given: its sum of squares adjusted for every other
    /// factor, degrees of freedom, F and p (F and p NaN when the factor adds nothing the others
    /// do not already explain: 0 degrees of freedom).
    pub terms: Vec<AnovaTerm>,
    pub residual_sum_sq: f64,
    pub residual_df: f64,
}

/// Columns whose part orthogonal to the earlier ones is below this share of their length are
/// taken as dependent (the design's rank is what is left).
const RANK_TOLERANCE: f64 = 1e-10;

/// The type II ANOVA of `y` on the categorical `factors` (each a label per observation; labels
/// need not be `0..k`), in an additive model with an intercept and no interactions: each
/// factor's sum of squares is the residual sum of squares of the model without it minus that of
/// the full model, its degrees of freedom the rank it adds; F over the full model's residual
/// mean square. For a full-rank design this equals statsmodels' `anova_lm(…, typ=2)`; with
/// a factor collinear with others its df is the rank it adds (0 for an exact copy).
///
/// Returns `None` when a factor's length differs from `y`'s, there is no factor, a value is
/// not finite, or no degree of freedom is left for the residual.
pub fn additive_anova(y: &[f64], factors: &[Vec<usize>]) -> Option<AdditiveAnova> {
    let n = y.len();
    if factors.is_empty()
        || factors.iter().any(|f| f.len() != n)
        || y.iter().any(|v| !v.is_finite())
    {
        return None;
    }
    // Treatment-coded dummies per factor: one column per label after the smallest.
    let dummies: Vec<Vec<Vec<f64>>> = factors
        .iter()
        .map(|labels| {
            let mut levels: Vec<usize> = labels.to_vec();
            levels.sort_unstable();
            levels.dedup();
            levels[1..]
                .iter()
                .map(|&level| {
                    labels
                        .iter()
                        .map(|&l| if l == level { 1.0 } else { 0.0 })
                        .collect()
                })
                .collect()
        })
        .collect();
    let fit = |left_out: Option<usize>| {
        let mut columns: Vec<&[f64]> = Vec::new();
        let intercept = vec![1.0; n];
        columns.push(&intercept);
        for (i, factor) in dummies.iter().enumerate() {
            if Some(i) != left_out {
                columns.extend(factor.iter().map(Vec::as_slice));
            }
        }
        residual(y, &columns)
    };
    let (full_ss, full_rank) = fit(None);
    let residual_df = n as f64 - full_rank as f64;
    if residual_df <= 0.0 {
        return None;
    }
    let mean_square = full_ss / residual_df;
    let terms = (0..factors.len())
        .map(|i| {
            let (reduced_ss, reduced_rank) = fit(Some(i));
            let df = (full_rank - reduced_rank) as f64;
            let sum_sq = (reduced_ss - full_ss).max(0.0);
            let f = if df > 0.0 && mean_square > 0.0 {
                (sum_sq / df) / mean_square
            } else {
                f64::NAN
            };
            AnovaTerm {
                sum_sq,
                df,
                f,
                p: f_survival(f, df, residual_df),
            }
        })
        .collect();
    Some(AdditiveAnova {
        terms,
        residual_sum_sq: full_ss,
        residual_df,
    })
}

/// The residual sum of squares of `y` regressed on `columns`, and the columns' rank: modified
/// Gram–Schmidt with one reorthogonalisation pass, a column dropped when what is left of it is
/// below [`RANK_TOLERANCE`] of its length.
fn residual(y: &[f64], columns: &[&[f64]]) -> (f64, usize) {
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    let project_out = |v: &mut Vec<f64>, basis: &[Vec<f64>]| {
        for _ in 0..2 {
            for q in basis {
                let c = dot(v, q);
                for (x, qx) in v.iter_mut().zip(q) {
                    *x -= c * qx;
                }
            }
        }
    };
    let mut basis: Vec<Vec<f64>> = Vec::new();
    for column in columns {
        let norm = dot(column, column).sqrt();
        if norm == 0.0 {
            continue;
        }
        let mut v = column.to_vec();
        project_out(&mut v, &basis);
        let left = dot(&v, &v).sqrt();
        if left > RANK_TOLERANCE * norm {
            for x in &mut v {
                *x /= left;
            }
            basis.push(v);
        }
    }
    let mut r = y.to_vec();
    project_out(&mut r, &basis);
    (dot(&r, &r), basis.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_factor_is_the_one_way_anova() {
        // Groups {1, 2, 3} and {5, 6, 7}: between SS 2 · 3 · 2² = 24, within 4, df 1 and 4.
        let y = [1.0, 2.0, 3.0, 5.0, 6.0, 7.0];
        let anova = additive_anova(&y, &[vec![0, 0, 0, 1, 1, 1]]).unwrap();
        assert!((anova.terms[0].sum_sq - 24.0).abs() < 1e-12);
        assert_eq!((anova.terms[0].df, anova.residual_df), (1.0, 4.0));
        assert!((anova.residual_sum_sq - 4.0).abs() < 1e-12);
        assert!((anova.terms[0].f - 24.0).abs() < 1e-9);
    }

    #[test]
    fn a_copy_of_a_factor_adds_nothing() {
        let y = [1.0, 2.0, 3.0, 5.0, 6.0, 7.0];
        let a = vec![0, 0, 0, 1, 1, 1];
        let anova = additive_anova(&y, &[a.clone(), a]).unwrap();
        for term in &anova.terms {
            assert_eq!(term.df, 0.0);
            assert!(term.f.is_nan());
        }
    }
}
