//! The errors of the functions that need more than `None` to say what was wrong.

use thiserror::Error;

/// Why [`two_way_anova`](crate::two_way_anova) could not be computed.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum StatsError {
    /// The response and the two factors do not have one entry per observation each.
    #[error("length mismatch: y has {y} values, factor a {a} labels, factor b {b} labels")]
    LengthMismatch {
        /// Number of responses.
        y: usize,
        /// Number of labels of factor a.
        a: usize,
        /// Number of labels of factor b.
        b: usize,
    },
    /// A factor has fewer than two distinct levels, so it has no effect to test.
    #[error("factor {factor} has {levels} level(s); at least 2 are needed")]
    TooFewLevels {
        /// `"a"` or `"b"`.
        factor: &'static str,
        /// Number of distinct labels seen.
        levels: usize,
    },
    /// A combination of levels has no observation, so its cell mean (and the Type III
    /// hypotheses built on cell means) is undefined.
    #[error("cell (a = {a}, b = {b}) has no observations")]
    EmptyCell {
        /// The label of factor a.
        a: usize,
        /// The label of factor b.
        b: usize,
    },
    /// Every observation is its own cell mean: no degrees of freedom are left for the error.
    #[error("no residual degrees of freedom: {n} observations in {cells} cells")]
    NoResidualDf {
        /// Number of observations.
        n: usize,
        /// Number of cells (levels of a × levels of b).
        cells: usize,
    },
    /// All observations equal their cell mean, so F is undefined (or infinite).
    #[error("zero residual variance: every observation equals its cell mean")]
    ZeroResidualVariance,
    /// A response is NaN or infinite.
    #[error("y[{index}] is not finite ({value})")]
    NonFinite {
        /// Position of the value in `y`.
        index: usize,
        /// The value itself.
        value: f64,
    },
}
