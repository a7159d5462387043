//! Two-way ANOVA with interaction (Type III, unequal n) and the 2×2 contrasts in closed form.

use std::collections::BTreeMap;

use crate::StatsError;

/// One row of an ANOVA table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AnovaTerm {
    /// The term's (Type III) sum of squares.
    pub sum_sq: f64,
    /// The term's degrees of freedom.
    pub df: f64,
    /// `F = (sum_sq / df) / (residual_sum_sq / residual_df)`.
    pub f: f64,
    /// `P(F(df, residual_df) > f)`.
    pub p: f64,
}

/// A two-way ANOVA table: the main effects of factors a and b, their interaction, and the
/// residual.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TwoWayAnova {
    /// The main effect of factor a.
    pub a: AnovaTerm,
    /// The main effect of factor b.
    pub b: AnovaTerm,
    /// The a × b interaction.
    pub interaction: AnovaTerm,
    /// The within-cell sum of squares.
    pub residual_sum_sq: f64,
    /// `n − (levels of a) · (levels of b)`.
    pub residual_df: f64,
}

/// Two-way ANOVA of `y` on the categorical factors `a` and `b` with their interaction, for
/// unequal cell sizes, with Type III sums of squares: the same table as statsmodels'
/// `anova_lm(ols("y ~ C(a, Sum) * C(b, Sum)", data).fit(), typ=3)` (its rows `C(a, Sum)`,
/// `C(b, Sum)`, `C(a, Sum):C(b, Sum)` and `Residual`).
///
/// The levels of a factor are the distinct labels it uses (they need not be `0..k`). Every
/// combination of a level of a with a level of b must have at least one observation.
///
/// # Errors
///
/// [`StatsError::LengthMismatch`] when `y`, `a` and `b` differ in length;
/// [`StatsError::NonFinite`] for a NaN or infinite response; [`StatsError::TooFewLevels`] when a
/// factor has a single level; [`StatsError::EmptyCell`] when a combination of levels has no
/// observation; [`StatsError::NoResidualDf`] when every cell holds exactly one observation;
/// [`StatsError::ZeroResidualVariance`] when every observation equals its cell mean.
pub fn two_way_anova(y: &[f64], a: &[usize], b: &[usize]) -> Result<TwoWayAnova, StatsError> {
    if y.len() != a.len() || y.len() != b.len() {
        return Err(StatsError::LengthMismatch {
            y: y.len(),
            a: a.len(),
            b: b.len(),
        });
    }
    if let Some((index, &value)) = y.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(StatsError::NonFinite { index, value });
    }
    let levels_a = levels(a, "a")?;
    let levels_b = levels(b, "b")?;
    let (n_a, n_b) = (levels_a.len(), levels_b.len());

    // Cell means, two-pass like every variance here.
    let cell_of = |i: usize| levels_a[&a[i]] * n_b + levels_b[&b[i]];
    let mut cell_n = vec![0usize; n_a * n_b];
    let mut cell_sum = vec![0.0; n_a * n_b];
    for (i, &value) in y.iter().enumerate() {
        cell_n[cell_of(i)] += 1;
        cell_sum[cell_of(i)] += value;
    }
    if let Some(empty) = cell_n.iter().position(|&n| n == 0) {
        let label = |levels: &BTreeMap<usize, usize>, index: usize| {
            levels.iter().find(|&(_, &k)| k == index).map(|(&l, _)| l)
        };
        return Err(StatsError::EmptyCell {
            a: label(&levels_a, empty / n_b).unwrap_or_default(),
            b: label(&levels_b, empty % n_b).unwrap_or_default(),
        });
    }
    let cell_mean: Vec<f64> = cell_sum
        .iter()
        .zip(&cell_n)
        .map(|(sum, &n)| sum / n as f64)
        .collect();
    let residual_sum_sq: f64 = y
        .iter()
        .enumerate()
        .map(|(i, value)| (value - cell_mean[cell_of(i)]).powi(2))
        .sum();
    let n_cells = n_a * n_b;
    if y.len() <= n_cells {
        return Err(StatsError::NoResidualDf {
            n: y.len(),
            cells: n_cells,
        });
    }
    if residual_sum_sq == 0.0 {
        return Err(StatsError::ZeroResidualVariance);
    }
    let residual_df = (y.len() - n_cells) as f64;

    // We do not fit the sum-coded regression itself. With every cell non-empty the model with
    // interaction is saturated: its fitted values are the cell means, and each Type III
    // hypothesis (the sum-coded columns of one term are zero) is a set of contrasts L·μ = 0 on
    // the cell means. Its sum of squares, the extra residual SS from dropping those columns, is
    // then (Lμ̂)ᵀ (L D Lᵀ)⁻¹ (Lμ̂) with D = diag(1/n_ij) (the Wald form statsmodels' typ=3 uses).
    // That leaves one q×q solve per term, q ≤ (levels − 1)², done with the small hand-written
    // Cholesky below rather than a linear-algebra dependency.
    let inverse_n: Vec<f64> = cell_n.iter().map(|&n| 1.0 / n as f64).collect();
    let mean_square_error = residual_sum_sq / residual_df;
    let term = |contrasts: Vec<Vec<f64>>| -> AnovaTerm {
        let df = contrasts.len() as f64;
        let sum_sq = wald_sum_sq(&contrasts, &cell_mean, &inverse_n);
        let f = sum_sq / df / mean_square_error;
        AnovaTerm {
            sum_sq,
            df,
            f,
            p: f_survival(f, df, residual_df),
        }
    };
    Ok(TwoWayAnova {
        a: term(main_effect_contrasts(n_a, n_b, true)),
        b: term(main_effect_contrasts(n_b, n_a, false)),
        interaction: term(interaction_contrasts(n_a, n_b)),
        residual_sum_sq,
        residual_df,
    })
}

/// A single-degree-of-freedom contrast of cell means: its estimate and its sum of squares.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Contrast {
    /// `Σ c_i ȳ_i`.
    pub estimate: f64,
    /// `(Σ c_i ȳ_i)² / Σ (c_i² / n_i)`.
    pub sum_sq: f64,
}

/// The closed-form contrasts of a 2×2 layout, whose sums of squares equal the Type III ones of
/// [`two_way_anova`] on the same data.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TwoByTwo {
    /// Main effect of a from the unweighted marginal means: `(ȳ₁₀ + ȳ₁₁)/2 − (ȳ₀₀ + ȳ₀₁)/2`.
    pub a: Contrast,
    /// Main effect of b from the unweighted marginal means: `(ȳ₀₁ + ȳ₁₁)/2 − (ȳ₀₀ + ȳ₁₀)/2`.
    pub b: Contrast,
    /// The difference of differences: `(ȳ₁₁ − ȳ₁₀) − (ȳ₀₁ − ȳ₀₀)`.
    pub interaction: Contrast,
}

/// The sum of squares of the contrast `coefficients` on cell means with cell sizes `cell_ns`:
/// `(Σ c_i ȳ_i)² / Σ (c_i² / n_i)`, with its estimate `Σ c_i ȳ_i`.
///
/// Returns `None` when the three slices differ in length, a cell is empty (`n_i = 0`) or all
/// coefficients are zero.
pub fn contrast(cell_means: &[f64], cell_ns: &[usize], coefficients: &[f64]) -> Option<Contrast> {
    if cell_means.len() != coefficients.len()
        || cell_ns.len() != coefficients.len()
        || cell_ns.contains(&0)
    {
        return None;
    }
    let estimate: f64 = coefficients
        .iter()
        .zip(cell_means)
        .map(|(c, m)| c * m)
        .sum();
    let variance: f64 = coefficients
        .iter()
        .zip(cell_ns)
        .map(|(c, &n)| c * c / n as f64)
        .sum();
    (variance > 0.0).then(|| Contrast {
        estimate,
        sum_sq: estimate * estimate / variance,
    })
}

/// The main effects and the interaction of a 2×2 layout in closed form, from the cell means
/// `cell_means[level of a][level of b]` and the cell sizes `cell_ns` (same indexing).
/// Effects are "level 1 minus level 0".
///
/// Returns `None` when a cell is empty.
pub fn two_by_two(cell_means: [[f64; 2]; 2], cell_ns: [[usize; 2]; 2]) -> Option<TwoByTwo> {
    let means = cell_means.as_flattened();
    let ns = cell_ns.as_flattened();
    // Cells in the order (a0 b0, a0 b1, a1 b0, a1 b1).
    Some(TwoByTwo {
        a: contrast(means, ns, &[-0.5, -0.5, 0.5, 0.5])?,
        b: contrast(means, ns, &[-0.5, 0.5, -0.5, 0.5])?,
        interaction: contrast(means, ns, &[1.0, -1.0, -1.0, 1.0])?,
    })
}

/// The survival function of F(df1, df2) at `f`: `I_x(df2/2, df1/2)` with `x = df2/(df2 + df1·f)`.
/// statrs' `FisherSnedecor::sf` evaluates the same regularised incomplete beta but at
/// `1 − df1·f/(df1·f + df2)`, which loses digits in the far tail; forming `x` directly keeps them.
pub(crate) fn f_survival(f: f64, df1: f64, df2: f64) -> f64 {
    if f.is_nan() {
        return f64::NAN;
    }
    if f <= 0.0 {
        return 1.0;
    }
    if f.is_infinite() {
        return 0.0;
    }
    statrs::function::beta::beta_reg(df2 / 2.0, df1 / 2.0, df2 / (df2 + df1 * f))
}

/// Maps each distinct label to its index in sorted order; errs with fewer than two.
fn levels(labels: &[usize], factor: &'static str) -> Result<BTreeMap<usize, usize>, StatsError> {
    let mut levels: BTreeMap<usize, usize> = labels.iter().map(|&l| (l, 0)).collect();
    for (index, slot) in levels.values_mut().enumerate() {
        *slot = index;
    }
    if levels.len() < 2 {
        return Err(StatsError::TooFewLevels {
            factor,
            levels: levels.len(),
        });
    }
    Ok(levels)
}

/// Contrasts "unweighted marginal mean of level k − that of the last level", for k below the
/// last, over cells indexed `a * n_b + b`. `first` says whether the factor is a (rows) or b.
fn main_effect_contrasts(n_levels: usize, n_other: usize, first: bool) -> Vec<Vec<f64>> {
    let (n_a, n_b) = if first {
        (n_levels, n_other)
    } else {
        (n_other, n_levels)
    };
    (0..n_levels - 1)
        .map(|k| {
            let mut row = vec![0.0; n_a * n_b];
            for other in 0..n_other {
                let (cell_k, cell_last) = if first {
                    (k * n_b + other, (n_levels - 1) * n_b + other)
                } else {
                    (other * n_b + k, other * n_b + n_levels - 1)
                };
                row[cell_k] += 1.0 / n_other as f64;
                row[cell_last] -= 1.0 / n_other as f64;
            }
            row
        })
        .collect()
}

/// The (n_a − 1)(n_b − 1) interaction contrasts `μ_ij − μ_iJ − μ_Ij + μ_IJ` (I, J the last
/// levels).
fn interaction_contrasts(n_a: usize, n_b: usize) -> Vec<Vec<f64>> {
    let mut rows = Vec::with_capacity((n_a - 1) * (n_b - 1));
    for i in 0..n_a - 1 {
        for j in 0..n_b - 1 {
            let mut row = vec![0.0; n_a * n_b];
            row[i * n_b + j] += 1.0;
            row[i * n_b + n_b - 1] -= 1.0;
            row[(n_a - 1) * n_b + j] -= 1.0;
            row[(n_a - 1) * n_b + n_b - 1] += 1.0;
            rows.push(row);
        }
    }
    rows
}

/// `(Lμ)ᵀ (L D Lᵀ)⁻¹ (Lμ)` for the contrast rows `l`, cell means `mu` and `D = diag(d)`.
fn wald_sum_sq(l: &[Vec<f64>], mu: &[f64], d: &[f64]) -> f64 {
    let q = l.len();
    let estimates: Vec<f64> = l.iter().map(|row| dot(row, mu)).collect();
    let mut gram = vec![0.0; q * q];
    for r in 0..q {
        for c in 0..=r {
            let value: f64 = (0..mu.len()).map(|k| l[r][k] * d[k] * l[c][k]).sum();
            gram[r * q + c] = value;
            gram[c * q + r] = value;
        }
    }
    let solved = cholesky_solve(&mut gram, q, &estimates);
    dot(&estimates, &solved)
}

fn dot(x: &[f64], y: &[f64]) -> f64 {
    x.iter().zip(y).map(|(a, b)| a * b).sum()
}

/// Solves `M x = v` for a symmetric positive definite `q×q` matrix `M` (row-major, overwritten
/// by its Cholesky factor). `L D Lᵀ` is positive definite whenever every cell is non-empty and
/// the contrast rows are independent, which the callers guarantee; a non-positive pivot could
/// only come from rounding and is clamped rather than reported.
fn cholesky_solve(m: &mut [f64], q: usize, v: &[f64]) -> Vec<f64> {
    for j in 0..q {
        let diagonal = m[j * q + j] - (0..j).map(|k| m[j * q + k].powi(2)).sum::<f64>();
        let pivot = diagonal.max(f64::MIN_POSITIVE).sqrt();
        m[j * q + j] = pivot;
        for i in j + 1..q {
            let off = m[i * q + j] - (0..j).map(|k| m[i * q + k] * m[j * q + k]).sum::<f64>();
            m[i * q + j] = off / pivot;
        }
    }
    // Forward substitution with the lower factor, then back substitution with its transpose.
    let mut x = v.to_vec();
    for i in 0..q {
        let s: f64 = (0..i).map(|k| m[i * q + k] * x[k]).sum();
        x[i] = (x[i] - s) / m[i * q + i];
    }
    for i in (0..q).rev() {
        let s: f64 = (i + 1..q).map(|k| m[k * q + i] * x[k]).sum();
        x[i] = (x[i] - s) / m[i * q + i];
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cholesky_solves_a_known_system() {
        // M = [[4, 2], [2, 3]], x = [1, 2] → v = [8, 8].
        let mut m = vec![4.0, 2.0, 2.0, 3.0];
        let x = cholesky_solve(&mut m, 2, &[8.0, 8.0]);
        assert!((x[0] - 1.0).abs() < 1e-15 && (x[1] - 2.0).abs() < 1e-15);
    }

    #[test]
    fn f_survival_matches_known_values() {
        // The 5% critical value of F(1, 10) is 4.964602743 (scipy.stats.f.ppf(0.95, 1, 10)).
        assert!((f_survival(4.964_602_743, 1.0, 10.0) - 0.05).abs() < 1e-9);
        assert_eq!(f_survival(0.0, 2.0, 10.0), 1.0);
    }
}
