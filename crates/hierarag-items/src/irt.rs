//! A two-parameter logistic (2PL) item response theory fit, equal to girth 0.8.0's `twopl_mml`.
//!
//! In the 2PL model a respondent of ability θ passes item i with probability
//! `1 / (1 + exp(-a_i (θ - b_i)))`: `b_i` is the item's **difficulty** (the ability that passes
//! it half the time) and `a_i` its **discrimination** (how sharply it separates abilities below
//! and above `b_i`). Here the items are benchmark questions and the respondents RAG systems.
//!
//! The fit is girth's marginal maximum likelihood (girth 0.8.0, MIT licence, whose `twopl_mml`
//! is its graded-response `grm_mml` on two categories), step for step, so that its numbers are
//! girth's (`tests/it/irt_oracle.rs`):
//!
//! - the ability is integrated out over a standard normal with Gauss-Legendre quadrature
//!   (`quadrature_n` points on `quadrature_bounds`, by default 41 on [-4.5, 4.5]);
//! - each pass over the items (at most `max_iteration`, by default 25) fits one item at a time,
//!   the others held, by a bounded Brent search of its discrimination on [0.2, 5] (scipy's
//!   `fminbound`, tolerance 1e-5); for a candidate discrimination the difficulty is the one
//!   whose expected pass rate over the ability distribution equals the item's pass rate, read by
//!   linear interpolation from girth's look-up table (500 discriminations on [0.15, 5.05] x 500
//!   difficulties on [-6, 6]). Like girth, the item keeps the *last* candidate the search
//!   evaluated (girth's objective stores each candidate as it goes), not the best one;
//! - the passes stop when no discrimination moved by 1e-3 or more.
//!
//! One difference, on purpose: an item that every respondent passes, or every respondent fails,
//! has no finite estimate, and girth's answers for it are artefacts (a saturated item gets
//! difficulty +6, as hard as the table goes; a failed item other than the first is read as
//! saturated). [`twopl_mml`] leaves such items out of the fit and gives `None` for them; the
//! other items' estimates are girth's on the matrix without them.
//!
//! A limit, girth's: each respondent's likelihood is a plain product over the items, which
//! underflows double precision past roughly a thousand items (fewer the more decisive the
//! respondents' answers). girth then returns every discrimination at a bound; [`twopl_mml`]
//! returns [`IrtError::LikelihoodUnderflow`] instead, and a larger benchmark is fitted on a
//! sample of its questions.

use serde::{Deserialize, Serialize};

/// How the fit runs; the defaults are girth's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IrtOptions {
    /// At most this many passes over the items.
    pub max_iteration: usize,
    /// The number of Gauss-Legendre points the ability is integrated over (more than 7).
    pub quadrature_n: usize,
    /// The ability range integrated over.
    pub quadrature_bounds: (f64, f64),
}

impl Default for IrtOptions {
    fn default() -> Self {
        Self {
            max_iteration: 25,
            quadrature_n: 41,
            quadrature_bounds: (-4.5, 4.5),
        }
    }
}

/// One item's estimates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct IrtItem {
    /// In [0.2, 5]; at 0.2 for an item unrelated to ability or ordering it the wrong way.
    pub discrimination: f64,
    /// The ability that passes the item half the time, in [-6, 6].
    pub difficulty: f64,
}

/// The fit of every item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TwoPl {
    /// Per item, in the order given; `None` for an item every respondent passes or every
    /// respondent fails (left out of the fit).
    pub items: Vec<Option<IrtItem>>,
    /// The passes over the items that ran.
    pub iterations: usize,
    /// Whether the last pass moved no discrimination by 1e-3 or more (else the fit stopped at
    /// `max_iteration`).
    pub converged: bool,
}

/// Why a matrix cannot be fitted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum IrtError {
    #[error("a 2PL fit needs at least 2 items (questions), got {n_items}")]
    TooFewItems { n_items: usize },
    #[error("a 2PL fit needs at least 2 respondents (systems), got {n_respondents}")]
    TooFewRespondents { n_respondents: usize },
    #[error(
        "item {item} has {len} responses where item 0 has {expected}: every item needs one response per respondent"
    )]
    RaggedRows {
        item: usize,
        len: usize,
        expected: usize,
    },
    #[error("item {item}, respondent {respondent}: response {value} is neither 0 nor 1")]
    NotBinary {
        item: usize,
        respondent: usize,
        value: u8,
    },
    #[error("no item separates the respondents (each is passed by all or by none): nothing to fit")]
    NoInformativeItem,
    #[error(
        "respondent {respondent}'s likelihood over the {n_items} items underflows double \
precision: girth's twopl_mml multiplies the items' probabilities without logarithms, and \
with this many items its estimates are artefacts (every discrimination at a bound); fit a \
sample of the items (a few hundred)"
    )]
    LikelihoodUnderflow { respondent: usize, n_items: usize },
    #[error("invalid option: {0}")]
    InvalidOptions(String),
}

/// girth's bounds on the discrimination search.
const DISCRIMINATION_BOUNDS: (f64, f64) = (0.2, 5.0);
/// scipy's `fminbound` default tolerance on the discrimination.
const DISCRIMINATION_XTOL: f64 = 1e-5;
/// scipy's `fminbound` default bound on function evaluations.
const MAX_EVALUATIONS: usize = 500;
/// The passes stop when no discrimination moved by this much.
const CONVERGENCE: f64 = 1e-3;
/// girth's sentinel difficulties of the categories below 0 and above 1: the graded-response
/// probabilities are differences of two logistic curves, one of them at +-10,000.
const OUTER_DIFFICULTY: f64 = 10_000.0;

/// Fits the 2PL model to `responses[item][respondent]` (0 or 1) as girth 0.8.0's
/// `twopl_mml(responses, options)` does, items every respondent passes or fails left out.
pub fn twopl_mml(responses: &[Vec<u8>], options: &IrtOptions) -> Result<TwoPl, IrtError> {
    validate(responses, options)?;
    let informative: Vec<usize> = (0..responses.len())
        .filter(|&i| responses[i].iter().any(|&r| r != responses[i][0]))
        .collect();
    if informative.is_empty() {
        return Err(IrtError::NoInformativeItem);
    }
    let rows: Vec<&[u8]> = informative
        .iter()
        .map(|&i| responses[i].as_slice())
        .collect();
    let fit = fit(&rows, options)?;
    let mut items = vec![None; responses.len()];
    for (k, &item_idx) in informative.iter().enumerate() {
        items[item_idx] = Some(IrtItem {
            discrimination: fit.discrimination[k],
            difficulty: fit.difficulty[k],
        });
    }
    Ok(TwoPl {
        items,
        iterations: fit.iterations,
        converged: fit.converged,
    })
}

fn validate(responses: &[Vec<u8>], options: &IrtOptions) -> Result<(), IrtError> {
    if responses.len() < 2 {
        return Err(IrtError::TooFewItems {
            n_items: responses.len(),
        });
    }
    let expected = responses[0].len();
    for (item, row) in responses.iter().enumerate() {
        if row.len() != expected {
            return Err(IrtError::RaggedRows {
                item,
                len: row.len(),
                expected,
            });
        }
        if let Some(respondent) = row.iter().position(|&r| r > 1) {
            return Err(IrtError::NotBinary {
                item,
                respondent,
                value: row[respondent],
            });
        }
    }
    if expected < 2 {
        return Err(IrtError::TooFewRespondents {
            n_respondents: expected,
        });
    }
    // girth's validate_estimation_options.
    if options.max_iteration == 0 {
        return Err(IrtError::InvalidOptions(
            "max_iteration must be at least 1".into(),
        ));
    }
    if options.quadrature_n <= 7 {
        return Err(IrtError::InvalidOptions(format!(
            "quadrature_n must be more than 7, got {}",
            options.quadrature_n
        )));
    }
    let (lower, upper) = options.quadrature_bounds;
    if !(lower.is_finite() && upper.is_finite() && upper > lower) {
        return Err(IrtError::InvalidOptions(format!(
            "quadrature_bounds must be finite with lower < upper, got ({lower}, {upper})"
        )));
    }
    Ok(())
}

struct Fit {
    discrimination: Vec<f64>,
    difficulty: Vec<f64>,
    iterations: usize,
    converged: bool,
}

/// girth's `grm_mml` on two categories, for items that every one have both responses.
fn fit(rows: &[&[u8]], options: &IrtOptions) -> Result<Fit, IrtError> {
    let (lower, upper) = options.quadrature_bounds;
    let (theta, weights) = gauss_legendre(options.quadrature_n, lower, upper);
    // The standard normal density times the quadrature weight (scipy's `norm.pdf`).
    let density_x_weight: Vec<f64> = theta
        .iter()
        .zip(&weights)
        .map(|(&t, &w)| (-(t * t) / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt() * w)
        .collect();
    let table = DifficultyTable::new(&theta, &density_x_weight);
    let n_q = theta.len();
    let n_respondents = rows[0].len();

    // girth's `_solve_for_constants`: the pass rate, as inv([[n]]) * n_passed.
    let pass_rate: Vec<f64> = rows
        .iter()
        .map(|row| {
            let n_passed = row.iter().filter(|&&r| r == 1).count();
            (1.0 / row.len() as f64) * n_passed as f64
        })
        .collect();
    // girth's start: every discrimination 1, every difficulty -1 (linspace(-1, 1, 1)).
    let mut discrimination = vec![1.0; rows.len()];
    let mut difficulty = vec![-1.0; rows.len()];
    let mut iterations = 0;
    let mut converged = false;
    // partial[p * n_q + q]: respondent p's likelihood at theta[q] over the items, times the
    // density and weight, updated one item at a time in the order girth does.
    let mut partial = vec![0.0; n_respondents * n_q];
    let mut scratch = vec![0.0; n_q];
    let mut log_likelihoods = vec![0.0; n_respondents];
    for iteration in 0..options.max_iteration {
        iterations = iteration + 1;
        let previous = discrimination.clone();
        partial.fill(1.0);
        for (item_idx, row) in rows.iter().enumerate() {
            let curves = Curves::new(&theta, discrimination[item_idx], difficulty[item_idx]);
            for (p, &r) in row.iter().enumerate() {
                let curve = curves.of(r);
                for (value, &c) in partial[p * n_q..(p + 1) * n_q].iter_mut().zip(curve) {
                    *value *= c;
                }
            }
        }
        for chunk in partial.chunks_mut(n_q) {
            for (value, &dw) in chunk.iter_mut().zip(&density_x_weight) {
                *value *= dw;
            }
        }
        for (item_idx, row) in rows.iter().enumerate() {
            let old = Curves::new(&theta, discrimination[item_idx], difficulty[item_idx]);
            for (p, &r) in row.iter().enumerate() {
                let curve = old.of(r);
                for (value, &c) in partial[p * n_q..(p + 1) * n_q].iter_mut().zip(curve) {
                    *value /= c;
                }
            }
            let rate = pass_rate[item_idx];
            let mut underflow = None;
            // The negative marginal log-likelihood with this item at discrimination `a`. Like
            // girth's, it stores its candidate: the item ends with the last one evaluated.
            let objective = |a: f64| {
                let b = table.difficulty(a, rate);
                discrimination[item_idx] = a;
                difficulty[item_idx] = b;
                let curves = Curves::new(&theta, a, b);
                for (p, &r) in row.iter().enumerate() {
                    let curve = curves.of(r);
                    for ((s, &c), &value) in scratch
                        .iter_mut()
                        .zip(curve)
                        .zip(&partial[p * n_q..(p + 1) * n_q])
                    {
                        *s = c * value;
                    }
                    let likelihood = pairwise_sum(&scratch);
                    if likelihood < f64::MIN_POSITIVE {
                        underflow.get_or_insert(p);
                    }
                    log_likelihoods[p] = likelihood.ln();
                }
                -pairwise_sum(&log_likelihoods)
            };
            minimize_bounded(
                objective,
                DISCRIMINATION_BOUNDS,
                DISCRIMINATION_XTOL,
                MAX_EVALUATIONS,
            );
            // girth goes on with zeros (log 0 = -inf) and returns every discrimination at a
            // bound; a likelihood this small has lost its precision already, so stop here.
            if let Some(respondent) = underflow {
                return Err(IrtError::LikelihoodUnderflow {
                    respondent,
                    n_items: rows.len(),
                });
            }
            let new = Curves::new(&theta, discrimination[item_idx], difficulty[item_idx]);
            for (p, &r) in row.iter().enumerate() {
                let curve = new.of(r);
                for (value, &c) in partial[p * n_q..(p + 1) * n_q].iter_mut().zip(curve) {
                    *value *= c;
                }
            }
        }
        let change = previous
            .iter()
            .zip(&discrimination)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        if change < CONVERGENCE {
            converged = true;
            break;
        }
    }
    Ok(Fit {
        discrimination,
        difficulty,
        iterations,
        converged,
    })
}

/// An item's probability of each response at the quadrature points, computed as girth's
/// `_graded_partial_integral` does: differences of logistic curves with the outer categories
/// at -+10,000, so that the rounding is girth's (`1 - expit(x)`, not `expit(-x)`).
struct Curves {
    fail: Vec<f64>,
    pass: Vec<f64>,
}

impl Curves {
    fn new(theta: &[f64], discrimination: f64, difficulty: f64) -> Self {
        let mut fail = Vec::with_capacity(theta.len());
        let mut pass = Vec::with_capacity(theta.len());
        for &t in theta {
            let middle = expit((t - difficulty) * discrimination);
            fail.push(expit((t + OUTER_DIFFICULTY) * discrimination) - middle);
            pass.push(middle - expit((t - OUTER_DIFFICULTY) * discrimination));
        }
        Self { fail, pass }
    }

    fn of(&self, response: u8) -> &[f64] {
        if response == 1 {
            &self.pass
        } else {
            &self.fail
        }
    }
}

/// scipy's `expit`, as it computes it.
fn expit(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// A sum in numpy's order (`pairwise_sum` of `np.sum` over a contiguous axis: eight running
/// sums up to 128 values, halves above), so that sums round as girth's do.
fn pairwise_sum(values: &[f64]) -> f64 {
    let n = values.len();
    if n < 8 {
        values.iter().fold(0.0, |acc, &v| acc + v)
    } else if n <= 128 {
        let mut r = [0.0; 8];
        r.copy_from_slice(&values[..8]);
        let whole = n - n % 8;
        let mut i = 8;
        while i < whole {
            for (j, acc) in r.iter_mut().enumerate() {
                *acc += values[i + j];
            }
            i += 8;
        }
        let mut sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for &v in &values[whole..] {
            sum += v;
        }
        sum
    } else {
        let half = n / 2;
        let half = half - half % 8;
        pairwise_sum(&values[..half]) + pairwise_sum(&values[half..])
    }
}

/// Gauss-Legendre points and weights on [lower, upper], shifted from [-1, 1] as girth's
/// `_get_quadrature_points` does.
fn gauss_legendre(n: usize, lower: f64, upper: f64) -> (Vec<f64>, Vec<f64>) {
    let (x, w) = if n == SCIPY_LEGENDRE_41.0.len() * 2 - 1 {
        let mirror = |half: &[f64], sign: f64| -> Vec<f64> {
            let mut full: Vec<f64> = half[1..].iter().rev().map(|&v| sign * v).collect();
            full.extend_from_slice(half);
            full
        };
        (
            mirror(&SCIPY_LEGENDRE_41.0, -1.0),
            mirror(&SCIPY_LEGENDRE_41.1, 1.0),
        )
    } else {
        legendre_rule(n)
    };
    let scale = (upper - lower) * 0.5;
    let theta = x.iter().map(|&v| scale * (v + 1.0) + lower).collect();
    let weights = w.iter().map(|&v| scale * v).collect();
    (theta, weights)
}

/// scipy 1.17.1's `roots_legendre(41)` (girth's default `quadrature_n`), from the middle point
/// out: its points and weights (the rule is symmetric). scipy starts from LAPACK's eigenvalues
/// and normalises the weights, which leaves them up to ~1e-13 from the exact rule and from
/// [`legendre_rule`]; girth's fit turns such differences into ~1e-5 ones (the search's
/// tolerance), so the default rule is scipy's own numbers. Other sizes use [`legendre_rule`].
const SCIPY_LEGENDRE_41: ([f64; 21], [f64; 21]) = (
    [
        0.0,
        0.07562325898916294,
        0.15081335486399217,
        0.22513960563342275,
        0.2981762773418247,
        0.36950502264048135,
        0.43871727705140706,
        0.5054165991994061,
        0.5692209416102159,
        0.6297648390721963,
        0.6867015020349512,
        0.7397048030699261,
        0.7884711450474093,
        0.8327212004013613,
        0.8722015116924415,
        0.9066859447581012,
        0.9359769874978539,
        0.9599068917303463,
        0.9783386735610834,
        0.9911671096990164,
        0.9983215885747715,
    ],
    [
        0.07569553564729853,
        0.0754787470927159,
        0.07482962317622167,
        0.07375188202722377,
        0.07225169686102327,
        0.0703376606208177,
        0.0680207367608768,
        0.0653141964535276,
        0.062233542580966514,
        0.058796420949872016,
        0.05502251924257909,
        0.05093345429461761,
        0.04655264836901411,
        0.04190519519590978,
        0.03701771670350769,
        0.03191821173169976,
        0.02663589920711025,
        0.021201063368779683,
        0.01564493840781921,
        0.009999938773904166,
        0.00430614035816413,
    ],
);

/// The n-point Gauss-Legendre rule on [-1, 1], ascending: Newton's method on the Legendre
/// polynomial from the usual starting guesses, symmetric about 0.
fn legendre_rule(n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut x = vec![0.0; n];
    let mut w = vec![0.0; n];
    let nf = n as f64;
    for i in 0..n.div_ceil(2) {
        let mut z = (std::f64::consts::PI * (i as f64 + 0.75) / (nf + 0.5)).cos();
        for _ in 0..100 {
            let (p, dp) = legendre(n, z);
            let step = p / dp;
            z -= step;
            if step.abs() <= 1e-16 {
                break;
            }
        }
        let (_, derivative) = legendre(n, z);
        if 2 * i + 1 == n {
            z = 0.0;
        }
        let weight = 2.0 / ((1.0 - z * z) * derivative * derivative);
        x[i] = -z;
        x[n - 1 - i] = z;
        w[i] = weight;
        w[n - 1 - i] = weight;
    }
    (x, w)
}

/// The Legendre polynomial of degree `n` at `z` and its derivative.
fn legendre(n: usize, z: f64) -> (f64, f64) {
    let (mut p0, mut p1) = (1.0, z);
    for k in 2..=n {
        let k = k as f64;
        let p2 = ((2.0 * k - 1.0) * z * p1 - (k - 1.0) * p0) / k;
        p0 = p1;
        p1 = p2;
    }
    let nf = n as f64;
    (p1, nf * (z * p1 - p0) / (z * z - 1.0))
}

/// numpy's `linspace(start, stop, num)`, rounding as it does.
fn linspace(start: f64, stop: f64, num: usize) -> Vec<f64> {
    if num == 1 {
        return vec![start];
    }
    let step = (stop - start) / (num - 1) as f64;
    let mut out: Vec<f64> = (0..num).map(|i| i as f64 * step + start).collect();
    out[num - 1] = stop;
    out
}

/// numpy's `interp(x, xs, ys)` for `xs[0] <= x <= xs[last]`, ascending `xs`.
fn interp(x: f64, xs: &[f64], ys: &[f64]) -> f64 {
    let j = xs.partition_point(|&v| v <= x).saturating_sub(1);
    if j == xs.len() - 1 || xs[j] == x {
        return ys[j];
    }
    let slope = (ys[j + 1] - ys[j]) / (xs[j + 1] - xs[j]);
    let y = slope * (x - xs[j]) + ys[j];
    if y.is_nan() {
        let y = slope * (x - xs[j + 1]) + ys[j + 1];
        if y.is_nan() && ys[j] == ys[j + 1] {
            return ys[j];
        }
        return y;
    }
    y
}

/// girth's `create_beta_LUT`: for 500 discriminations, the expected pass rate over the ability
/// distribution of 500 difficulties, read backwards by linear interpolation.
struct DifficultyTable {
    alpha: Vec<f64>,
    alpha_index: Vec<f64>,
    /// Per discrimination, the expected pass rates ascending and their difficulties (scipy's
    /// `interp1d` sorts its points with a stable sort).
    rows: Vec<(Vec<f64>, Vec<f64>)>,
    lowest_difficulty: f64,
    highest_difficulty: f64,
}

impl DifficultyTable {
    fn new(theta: &[f64], density_x_weight: &[f64]) -> Self {
        let alpha = linspace(0.15, 5.05, 500);
        let beta = linspace(-6.0, 6.0, 500);
        let mut terms = vec![0.0; theta.len()];
        let rows = alpha
            .iter()
            .map(|&a| {
                let rates: Vec<f64> = beta
                    .iter()
                    .map(|&b| {
                        for ((term, &t), &dw) in terms.iter_mut().zip(theta).zip(density_x_weight) {
                            *term = expit((t - b) * a) * dw;
                        }
                        terms.iter().sum()
                    })
                    .collect();
                let mut order: Vec<usize> = (0..beta.len()).collect();
                order.sort_by(|&i, &j| rates[i].total_cmp(&rates[j]));
                (
                    order.iter().map(|&i| rates[i]).collect(),
                    order.iter().map(|&i| beta[i]).collect(),
                )
            })
            .collect();
        Self {
            alpha_index: (0..alpha.len()).map(|i| i as f64).collect(),
            alpha,
            rows,
            lowest_difficulty: beta[0],
            highest_difficulty: beta[beta.len() - 1],
        }
    }

    /// The difficulty whose expected pass rate at `discrimination` is `pass_rate`. Outside the
    /// table girth's `fill_value=(beta[0], beta[-1])` applies: -6 below the lowest rate, +6
    /// above the highest (reversed from the difficulties those rates belong to; only items left
    /// out of the fit reach it).
    fn difficulty(&self, discrimination: f64, pass_rate: f64) -> f64 {
        let position = interp(discrimination, &self.alpha, &self.alpha_index);
        let low = position as usize;
        let high = (position + 1.0) as usize;
        let dx = position - low as f64;
        (1.0 - dx) * self.read(low, pass_rate) + dx * self.read(high, pass_rate)
    }

    fn read(&self, row: usize, pass_rate: f64) -> f64 {
        let (rates, difficulties) = &self.rows[row];
        if pass_rate < rates[0] {
            self.lowest_difficulty
        } else if pass_rate > rates[rates.len() - 1] {
            self.highest_difficulty
        } else {
            interp(pass_rate, rates, difficulties)
        }
    }
}

/// scipy's `fminbound` (`_minimize_scalar_bounded`): Brent's method on [lower, upper], golden
/// sections and parabolic steps, stopping when the bracket is within `xatol`. Written out here
/// rather than taken from a crate because girth's answer depends on the exact sequence of
/// points it evaluates (the last one is the one girth keeps). Returns the best point found.
fn minimize_bounded(
    mut f: impl FnMut(f64) -> f64,
    (lower, upper): (f64, f64),
    xatol: f64,
    max_evaluations: usize,
) -> f64 {
    let sqrt_eps = 2.2e-16_f64.sqrt();
    let golden_mean = 0.5 * (3.0 - 5.0_f64.sqrt());
    let (mut a, mut b) = (lower, upper);
    let mut fulc = a + golden_mean * (b - a);
    let mut nfc = fulc;
    let mut xf = fulc;
    let mut rat = 0.0;
    let mut e: f64 = 0.0;
    let mut fx = f(xf);
    let mut evaluations = 1;
    let mut ffulc = fx;
    let mut fnfc = fx;
    let mut xm = 0.5 * (a + b);
    let mut tol1 = sqrt_eps * xf.abs() + xatol / 3.0;
    let mut tol2 = 2.0 * tol1;
    // numpy's sign: 0 at 0; `sign(v) + (v == 0)` is then 1 there.
    let sign_or_one = |v: f64| {
        if v > 0.0 {
            1.0
        } else if v < 0.0 {
            -1.0
        } else {
            1.0
        }
    };
    while (xf - xm).abs() > tol2 - 0.5 * (b - a) {
        let mut golden = true;
        if e.abs() > tol1 {
            golden = false;
            let mut r = (xf - nfc) * (fx - ffulc);
            let mut q = (xf - fulc) * (fx - fnfc);
            let mut p = (xf - fulc) * q - (xf - nfc) * r;
            q = 2.0 * (q - r);
            if q > 0.0 {
                p = -p;
            }
            q = q.abs();
            r = e;
            e = rat;
            if p.abs() < (0.5 * q * r).abs() && p > q * (a - xf) && p < q * (b - xf) {
                rat = (p + 0.0) / q;
                let x = xf + rat;
                if (x - a) < tol2 || (b - x) < tol2 {
                    rat = tol1 * sign_or_one(xm - xf);
                }
            } else {
                golden = true;
            }
        }
        if golden {
            e = if xf >= xm { a - xf } else { b - xf };
            rat = golden_mean * e;
        }
        let step = if rat.abs().is_nan() || rat.abs() > tol1 {
            rat.abs()
        } else {
            tol1
        };
        let x = xf + sign_or_one(rat) * step;
        let fu = f(x);
        evaluations += 1;
        if fu <= fx {
            if x >= xf {
                a = xf;
            } else {
                b = xf;
            }
            (fulc, ffulc) = (nfc, fnfc);
            (nfc, fnfc) = (xf, fx);
            (xf, fx) = (x, fu);
        } else {
            if x < xf {
                a = x;
            } else {
                b = x;
            }
            if fu <= fnfc || nfc == xf {
                (fulc, ffulc) = (nfc, fnfc);
                (nfc, fnfc) = (x, fu);
            } else if fu <= ffulc || fulc == xf || fulc == nfc {
                (fulc, ffulc) = (x, fu);
            }
        }
        xm = 0.5 * (a + b);
        tol1 = sqrt_eps * xf.abs() + xatol / 3.0;
        tol2 = 2.0 * tol1;
        if evaluations >= max_evaluations {
            break;
        }
    }
    xf
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimize_bounded_finds_a_parabola_minimum() {
        let x = minimize_bounded(|x| (x - 1.3) * (x - 1.3), (0.2, 5.0), 1e-5, 500);
        assert!((x - 1.3).abs() < 1e-5, "{x}");
        let x = minimize_bounded(|x| x, (0.2, 5.0), 1e-5, 500);
        assert!((x - 0.2).abs() < 1e-4, "{x}");
    }

    #[test]
    fn pairwise_sum_equals_the_plain_sum_of_integers() {
        for n in [0_usize, 1, 7, 8, 9, 41, 128, 129, 300] {
            let values: Vec<f64> = (0..n).map(|i| i as f64).collect();
            assert_eq!(pairwise_sum(&values), (n * n.saturating_sub(1) / 2) as f64);
        }
    }

    /// The default rule is scipy's, bit for bit (the fixture's `quadrature`, written by girth's
    /// `_get_quadrature_points(41, -4.5, 4.5)`), and [`legendre_rule`] is within 1e-12 of it.
    #[test]
    fn default_quadrature_is_girths() {
        #[derive(serde::Deserialize)]
        struct Fixture {
            quadrature: Quadrature,
        }
        #[derive(serde::Deserialize)]
        struct Quadrature {
            theta: Vec<f64>,
            weights: Vec<f64>,
        }
        let fixture: Fixture =
            serde_json::from_str(include_str!("../tests/data/irt_cases.json")).unwrap();
        let (theta, weights) = gauss_legendre(41, -4.5, 4.5);
        assert_eq!(theta, fixture.quadrature.theta);
        assert_eq!(weights, fixture.quadrature.weights);
        let (x, w) = legendre_rule(41);
        let (scipy_x, scipy_w) = gauss_legendre(41, -1.0, 1.0);
        for i in 0..41 {
            assert!((x[i] - scipy_x[i]).abs() < 1e-12, "{i}");
            assert!((w[i] - scipy_w[i]).abs() < 1e-12, "{i}");
        }
    }

    #[test]
    fn gauss_legendre_integrates_polynomials_exactly() {
        let (theta, weights) = gauss_legendre(61, -4.5, 4.5);
        let integral = |f: &dyn Fn(f64) -> f64| -> f64 {
            theta.iter().zip(&weights).map(|(&t, &w)| f(t) * w).sum()
        };
        assert!((integral(&|_| 1.0) - 9.0).abs() < 1e-12);
        assert!(integral(&|t| t.powi(3)).abs() < 1e-10);
        assert!((integral(&|t| t * t) - 2.0 * 4.5_f64.powi(3) / 3.0).abs() < 1e-10);
    }
}
