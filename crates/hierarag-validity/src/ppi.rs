//! Prediction-powered judge means (issue 46): an LLM judge's grades of every answer and
//! people's ratings of a random few, combined into a mean with a valid interval (PPI++,
//! [`hierarag_stats::ppi_mean`]), beside the judge-only and people-only means, and how many
//! ratings a wanted interval width needs. The result types of `agreement.json`'s `ppi` and the
//! arithmetic on plain numbers live here; hierarag-annotate gathers the numbers from its store.
//!
//! Every interval here is a normal interval with the quantile `z = Φ⁻¹(1 − α/2)` that
//! `ppi_mean` uses, and every plain mean's standard error is `std(ddof = 0)/√n`, as
//! ppi-python's `classical_mean_ci`: with λ = 0 the PPI interval is then exactly the
//! people-only one, so the two widths compare like for like.

use hierarag_records::CategoryRef;
use hierarag_stats::{mean, normal_quantile, ppi_mean, std_dev};
use serde::{Deserialize, Serialize};

/// The PPI estimates of both scales of the answer task, per system and per pair of systems.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgePpi {
    /// Every interval is a two-sided `1 − alpha` interval.
    pub alpha: f64,
    /// Correctness, then hallucination.
    pub scales: Vec<ScalePpi>,
    /// How many ratings a wanted interval width needs, per scale and system (`hierarag
    /// annotate agreement --width`); empty when no width was asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plans: Vec<RatingsPlan>,
    pub notes: Vec<String>,
}

/// One scale's estimates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScalePpi {
    /// `correctness` or `hallucination`.
    pub scale: String,
    /// The scale's highest grade; every value here is a grade divided by it.
    pub max: u8,
    /// In the order the systems were given.
    pub systems: Vec<SystemPpi>,
    /// Each pair of systems `(A, B)` with A given before B: the mean of A − B.
    pub differences: Vec<DifferencePpi>,
}

/// One system's mean on one scale.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemPpi {
    pub system: String,
    pub overall: PpiRow,
    /// Every category of a question the system's judged answers answer, in the order of
    /// [`CategoryRef`].
    pub categories: Vec<CategoryPpi>,
}

/// The paired difference of two systems on one scale, over the questions both answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DifferencePpi {
    pub system_a: String,
    pub system_b: String,
    pub overall: PpiRow,
    pub categories: Vec<CategoryPpi>,
}

/// A row restricted to the questions of one category.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CategoryPpi {
    pub category: CategoryRef,
    pub row: PpiRow,
}

/// One mean three ways: PPI, the judge alone, the people alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PpiRow {
    /// Answers (or, for a difference, questions) that people rated and the judge graded.
    pub n_rated: usize,
    /// Answers (or questions) the judge graded, the rated ones included.
    pub n_judged: usize,
    /// `None` with a [`PpiRow::note`] when it cannot be computed.
    pub ppi: Option<PpiEstimate>,
    /// The mean of the judge's grades of all `n_judged` answers.
    pub judge_only: Option<MeanInterval>,
    /// The mean of the people's ratings of the `n_rated` answers.
    pub people_only: Option<MeanInterval>,
    /// Why an estimate is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A PPI++ mean (ppi-python's `ppi_mean_pointestimate` and `ppi_mean_ci`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PpiEstimate {
    pub estimate: f64,
    pub ci: [f64; 2],
    pub se: f64,
    /// The weight of the judge in `[0, 1]`, tuned for the narrowest interval: 0 is the
    /// people-only mean, 1 plain PPI.
    pub lambda: f64,
    /// How many ratings alone would give an interval this narrow: `n_rated × (people-only
    /// SE / PPI SE)²`; `None` when the PPI standard error is 0.
    pub effective_n_rated: Option<f64>,
    /// For a difference of two systems: whether the interval leaves out 0, i.e. the systems
    /// differ at level α.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excludes_zero: Option<bool>,
}

/// A plain mean with its normal interval (standard error `std(ddof = 0)/√n`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeanInterval {
    pub mean: f64,
    pub ci: [f64; 2],
    pub se: f64,
}

/// How many rated answers a system needs for a PPI interval of a wanted width.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RatingsNeeded {
    /// Rated answers in all (the pilot's included); `None` when no number reaches the width.
    pub n_rated: Option<usize>,
    pub method: PlanMethod,
    /// Rated answers of the pilot (0 without one).
    pub n_pilot: usize,
    /// Answers the judge graded.
    pub n_judged: usize,
    /// The pilot's λ, and the two variances of the PPI formula at it: `var(Y − λŶ)` over the
    /// pilot and `var(λŶ)` over all judged answers (both `ddof = 0`, as `ppi_mean`'s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lambda: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rectifier_variance: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_variance: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Which variances [`ratings_for_width`] planned with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanMethod {
    /// The PPI variance formula with the pilot's λ and variances.
    Pilot,
    /// The people-only bound `(2·z·σ/W)²` with σ = 0.5, the largest standard deviation of a
    /// value in `[0, 1]`: enough whatever the judge is worth.
    PeopleOnlyBound,
}

/// [`RatingsNeeded`] for one system on one scale.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RatingsPlan {
    pub scale: String,
    pub system: String,
    pub needed: RatingsNeeded,
}

/// Why a stratum whose judge values are all the same has no PPI estimate.
const SAME_GRADE: &str = "the judge gave every answer the same grade: its weight λ is undefined";

/// The three means of one stratum: `rated` holds (the people's value, the judge's value) of
/// each rated answer, `unrated` the judge's values of the others.
///
/// The PPI estimate is [`ppi_mean`] of the people's values, the judge's on the same answers and
/// the judge's on the others; it is `None` with a note when there are fewer than two rated
/// answers, no unrated one, or every judge value is the same (λ is then 0/0). The judge-only
/// mean is over all judged answers and the people-only mean over the rated ones, each with its
/// normal interval (`std(ddof = 0)/√n`, ppi-python's `classical_mean_ci`), `None` under two
/// values.
pub fn ppi_row(rated: &[(f64, f64)], unrated: &[f64], alpha: f64) -> PpiRow {
    let (y, yhat): (Vec<f64>, Vec<f64>) = rated.iter().copied().unzip();
    let all_judged: Vec<f64> = yhat.iter().chain(unrated).copied().collect();
    let people_only = mean_interval(&y, alpha);
    let judge_only = mean_interval(&all_judged, alpha);
    let mut note = None;
    let ppi = if rated.len() < 2 {
        note = Some(format!(
            "{} rated answer(s): PPI needs at least 2",
            rated.len()
        ));
        None
    } else if unrated.is_empty() {
        note = Some("every judged answer is rated: the judge has nothing to add".to_string());
        None
    } else if all_judged.iter().all(|&v| v == all_judged[0]) {
        // λ is 0/0 here; ppi_mean (like ppi-python) would return λ = 0 when rounding makes the
        // variances a few ulps instead of 0 (grades of 1/3, 2/3), and None when it does not.
        note = Some(SAME_GRADE.to_string());
        None
    } else {
        match ppi_mean(&y, &yhat, unrated, alpha) {
            Some(found) => Some(PpiEstimate {
                estimate: found.estimate,
                ci: found.ci,
                se: found.se,
                lambda: found.lambda,
                effective_n_rated: people_only.as_ref().and_then(|people| {
                    (found.se > 0.0).then(|| y.len() as f64 * (people.se / found.se).powi(2))
                }),
                excludes_zero: None,
            }),
            None => {
                note = Some(SAME_GRADE.to_string());
                None
            }
        }
    };
    PpiRow {
        n_rated: rated.len(),
        n_judged: all_judged.len(),
        ppi,
        judge_only,
        people_only,
        note,
    }
}

/// The mean of `values` with its normal `1 − alpha` interval, as ppi-python's
/// `classical_mean_ci`; `None` under two values.
fn mean_interval(values: &[f64], alpha: f64) -> Option<MeanInterval> {
    if values.len() < 2 {
        return None;
    }
    let mean = mean(values)?;
    let se = std_dev(values, 0)? / (values.len() as f64).sqrt();
    let z = normal_quantile(1.0 - alpha / 2.0);
    Some(MeanInterval {
        mean,
        ci: [mean - z * se, mean + z * se],
        se,
    })
}

/// How many rated answers a PPI interval of total width `width` at level `alpha` needs, for a
/// system whose judged answers are the `pilot` (people's value, judge's value; empty without a
/// pilot) and `unrated` (the judge's values), all on `[0, 1]`.
///
/// With a pilot of at least two ratings on which [`ppi_mean`] gives a λ, the PPI variance
/// `se² = var(λŶ)/(N − n) + var(Y − λŶ)/n` (N the judged answers, `var(λŶ)` over all of them,
/// `var(Y − λŶ)` over the pilot) is set to `(width / 2z)²` and solved for the smallest `n`
/// (at least 2); `None` when even the best split of the N answers is wider. A judge that gives
/// every answer the same grade gets λ = 0 (the pilot's people-only variance). The pilot's
/// variances are estimates: a small pilot can promise too few ratings, so plan again once some
/// are in. Without such a pilot, the people-only bound `n = ⌈(2·z·0.5/width)²⌉`, which holds
/// whatever the judge is worth.
pub fn ratings_for_width(
    pilot: &[(f64, f64)],
    unrated: &[f64],
    width: f64,
    alpha: f64,
) -> RatingsNeeded {
    let n_judged = pilot.len() + unrated.len();
    let mut needed = RatingsNeeded {
        n_rated: None,
        method: PlanMethod::PeopleOnlyBound,
        n_pilot: pilot.len(),
        n_judged,
        lambda: None,
        rectifier_variance: None,
        judge_variance: None,
        note: None,
    };
    if !(width > 0.0 && width.is_finite() && alpha > 0.0 && alpha < 1.0) {
        needed.note = Some(format!(
            "the width must be positive and alpha in (0, 1), not {width} and {alpha}"
        ));
        return needed;
    }
    let z = normal_quantile(1.0 - alpha / 2.0);
    let (y, yhat): (Vec<f64>, Vec<f64>) = pilot.iter().copied().unzip();
    // A judge that gives every answer the same grade is worth nothing: λ = 0, the pilot's
    // people-only variance (ppi_mean's λ would be 0/0).
    let constant = yhat
        .iter()
        .chain(unrated)
        .all(|&v| Some(v) == yhat.first().copied());
    let lambda = if pilot.len() >= 2 && !unrated.is_empty() && constant {
        needed.note = Some("the judge gave every answer the same grade: λ = 0".to_string());
        Some(0.0)
    } else {
        ppi_mean(&y, &yhat, unrated, alpha).map(|tuned| tuned.lambda)
    };
    let Some(lambda) = lambda else {
        let n = (2.0 * z * 0.5 / width).powi(2).ceil() as usize;
        needed.n_rated = Some(n.max(2));
        let why = if pilot.len() < 2 {
            format!("{} pilot rating(s), fewer than 2", pilot.len())
        } else {
            "no unrated judged answer".to_string()
        };
        let beyond = if n > n_judged {
            format!("; more than the system's {n_judged} judged answers")
        } else {
            String::new()
        };
        needed.note = Some(format!("{why}: the people-only bound{beyond}"));
        return needed;
    };
    let rectifier: Vec<f64> = pilot.iter().map(|(y, yhat)| y - lambda * yhat).collect();
    let scaled: Vec<f64> = yhat.iter().chain(unrated).map(|v| lambda * v).collect();
    // Both exist: the pilot has two ratings and there is an unrated answer.
    let rectifier_variance = std_dev(&rectifier, 0).unwrap_or(0.0).powi(2);
    let judge_variance = std_dev(&scaled, 0).unwrap_or(0.0).powi(2);
    needed.method = PlanMethod::Pilot;
    needed.lambda = Some(lambda);
    needed.rectifier_variance = Some(rectifier_variance);
    needed.judge_variance = Some(judge_variance);
    // v_r/n + v_j/(N − n) ≤ s² on 0 < n < N: s²·n² + (v_j − v_r − s²·N)·n + v_r·N ≤ 0, between
    // the roots of a parabola; the smaller root in the cancellation-free form 2c/(−b + √D).
    let target = (width / (2.0 * z)).powi(2);
    let total = n_judged as f64;
    let (a, b, c) = (
        target,
        judge_variance - rectifier_variance - target * total,
        rectifier_variance * total,
    );
    let discriminant = b * b - 4.0 * a * c;
    // g(0) = v_r·N ≥ 0 and g(N) = v_j·N ≥ 0: both roots lie in (0, N) or neither does.
    let smallest = (b < 0.0 && discriminant >= 0.0).then(|| 2.0 * c / (-b + discriminant.sqrt()));
    match smallest.map(|n| (n.ceil() as usize).max(2)) {
        Some(n) if n < n_judged => needed.n_rated = Some(n),
        _ => {
            needed.note = Some(format!(
                "no number of ratings among the {n_judged} judged answers gives an interval \
this narrow (rating nearly all of them would not be enough)"
            ))
        }
    }
    needed
}
