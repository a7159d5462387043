//! Statistics for the analysis (docs/design.md, "Analysis"): dispersion, information between labellings,
//! two-way and mixed ANOVA, rater agreement, correlation, binomial and paired tests, and
//! resampling.
//!
//! Every function reproduces a reference implementation — numpy, scikit-learn, statsmodels,
//! scipy or pingouin, named in its docs — and `tests/it/oracle.rs` checks them against values
//! those packages computed (`scripts/oracles/stats_oracle.py`,
//! `scripts/oracles/compare_oracle.py`, `scripts/oracles/tags_oracle.py`). The crate is pure:
//! no I/O, no state, and no heavier dependency than `statrs` for the F, t, χ² and binomial
//! tails. Degenerate input (an empty
//! slice, `n ≤ ddof`, a constant variable, an empty ANOVA cell) gives `None` or a
//! [`StatsError`], never a panic; each function says when.
//!
//! - Description: [`mean`], [`std_dev`], [`range`], [`percentile`] (numpy).
//! - Information: [`equal_frequency_bins`] to turn a score into labels, then [`entropy`],
//!   [`mutual_info`] and [`nmi`] (scikit-learn).
//! - Factorial designs: [`two_way_anova`] → [`TwoWayAnova`] (statsmodels, Type III, unequal n),
//!   and the 2×2 closed form [`two_by_two`] / [`contrast`].
//! - Agreement: [`aggregate_raters`] and [`fleiss_kappa`] (statsmodels), [`cohen_kappa`]
//!   (scikit-learn).
//! - Tests: [`point_biserial`], [`spearman`] and [`kendall`] → [`Correlation`],
//!   [`binomial_greater`] (scipy); [`chi2_contingency`] → [`ChiSquare`] and the goodness of fit
//!   [`chisquare`] → [`GoodnessOfFit`] (scipy); two independent samples: [`mann_whitney_u`] →
//!   [`MannWhitney`] (scipy).
//! - Several factors at once: [`additive_anova`] → [`AdditiveAnova`], type II sums of squares
//!   (statsmodels).
//! - Resampling: [`resample_indices`] for a seeded bootstrap, [`percentile_interval`] →
//!   [`Interval`] over its replicates, [`bootstrap_p`] and [`permutation_p`].
//! - Paired comparisons: [`paired_t`] → [`PairedT`] and [`wilcoxon`] → [`Wilcoxon`] (scipy),
//!   [`mixed_anova`] → [`MixedAnova`] (pingouin), [`kendall_tau_b`] (scipy).
//! - Multiple comparisons: [`holm`] (statsmodels).
//! - Prediction-powered inference: [`ppi_mean`] → [`PpiMean`] (ppi-python's PPI++ mean).
//!
//! # Example
//!
//! ```
//! use hierarag_stats::{equal_frequency_bins, nmi, std_dev};
//!
//! // Mean context scores of four categories: their spread is the discriminative power.
//! let category_means = [0.61, 0.64, 0.58, 0.70];
//! let disc_pow = std_dev(&category_means, 0).unwrap();
//! assert!((disc_pow - 0.044_371).abs() < 1e-6);
//!
//! // How much do the category labels tell about a question's score bin?
//! let categories = [0, 0, 0, 1, 1, 1];
//! let scores = [0.2, 0.3, 0.1, 0.8, 0.9, 0.7];
//! let bins = equal_frequency_bins(&scores, 2);
//! assert_eq!(bins, [0, 0, 0, 1, 1, 1]);
//! assert_eq!(nmi(&categories, &bins), Some(1.0));
//!
//! // Degenerate input is an answer, not a panic.
//! assert_eq!(std_dev(&[0.5], 1), None);
//! ```

mod agreement;
mod anova;
mod contingency;
mod describe;
mod error;
mod hypothesis;
mod information;
mod linear;
mod mixed;
mod multiple;
mod paired;
mod ppi;
mod resample;
mod two_sample;

pub use agreement::{aggregate_raters, cohen_kappa, fleiss_kappa, quadratic_kappa};
pub use anova::{AnovaTerm, Contrast, TwoByTwo, TwoWayAnova, contrast, two_by_two, two_way_anova};
pub use contingency::{ChiSquare, GoodnessOfFit, chi2_contingency, chisquare};
pub use describe::{mean, percentile, range, std_dev};
pub use error::StatsError;
pub use hypothesis::{
    Correlation, binomial_greater, kendall, normal_quantile, pearson, point_biserial, spearman,
};
pub use information::{entropy, equal_frequency_bins, mutual_info, nmi};
pub use linear::{AdditiveAnova, additive_anova};
pub use mixed::{MixedAnova, MixedTerm, mixed_anova};
pub use multiple::holm;
pub use paired::{PairedT, Wilcoxon, WilcoxonMethod, kendall_tau_b, paired_t, wilcoxon};
pub use ppi::{PpiMean, ppi_mean};
pub use resample::{
    Interval, bootstrap_p, derive_seed, percentile_interval, permutation_p, resample_indices,
};
pub use two_sample::{MannWhitney, mann_whitney_u};
