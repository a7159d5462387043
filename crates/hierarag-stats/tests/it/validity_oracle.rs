//! Oracle test of the statistics that set a synthetic benchmark beside a human-written one:
//! scipy's `chisquare`, `mannwhitneyu`, `kendalltau`, `spearmanr` and `norm.ppf` on the committed
//! cases of
//! `tests/data/validity_cases.json` (written by `scripts/oracles/validity_oracle.py`; no Python
//! at test time). Values 1e-9 (absolute below 1, relative above), p-values 1e-10 relative (the
//! tolerances of `tags_oracle`);
//! `None`-ness must match scipy's NaN or refusal, and every case is counted.

use std::path::PathBuf;

use hierarag_stats::{
    Correlation, chisquare, kendall, mann_whitney_u, normal_quantile, pearson, spearman,
};
use serde::Deserialize;

use crate::tags_oracle::{close, close_p};

#[derive(Deserialize)]
struct Cases {
    chisquare: Vec<ChiCase>,
    mannwhitneyu: Vec<MwuCase>,
    kendalltau: Vec<CorrelationCase>,
    spearmanr: Vec<CorrelationCase>,
    norm_ppf: Vec<QuantileCase>,
    pearsonr: Vec<CorrelationCase>,
    bootstrap_mean: Vec<BootstrapCase>,
}

#[derive(Deserialize)]
struct BootstrapCase {
    name: String,
    x: Vec<f64>,
    lo: f64,
    hi: f64,
}

#[derive(Deserialize)]
struct QuantileCase {
    q: f64,
    z: f64,
}

#[derive(Deserialize)]
struct ChiCase {
    name: String,
    observed: Vec<u64>,
    expected: Vec<f64>,
    statistic: Option<f64>,
    p: Option<f64>,
}

#[derive(Deserialize)]
struct MwuCase {
    name: String,
    x: Vec<f64>,
    y: Vec<f64>,
    u: f64,
    p: f64,
    exact: bool,
}

#[derive(Deserialize)]
struct CorrelationCase {
    name: String,
    x: Vec<f64>,
    y: Vec<f64>,
    statistic: Option<f64>,
    p: Option<f64>,
}

fn cases() -> Cases {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/validity_cases.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("the committed fixture"))
        .expect("validity_cases.json parses")
}

#[test]
fn chisquare_equals_scipy() {
    let cases = cases().chisquare;
    assert_eq!(cases.len(), 16, "the fixture's chisquare cases");
    for case in &cases {
        let ours = chisquare(&case.observed, &case.expected);
        match (ours, case.statistic, case.p) {
            (Some(ours), Some(statistic), Some(p)) => {
                close(ours.statistic, statistic, &case.name);
                close_p(ours.p, p, &case.name);
                assert_eq!(ours.dof, case.observed.len() - 1, "{}", case.name);
            }
            (None, None, None) => {}
            (ours, statistic, _) => panic!("{}: {ours:?} against {statistic:?}", case.name),
        }
    }
}

#[test]
fn mann_whitney_u_equals_scipy() {
    let cases = cases().mannwhitneyu;
    assert_eq!(cases.len(), 40, "the fixture's mannwhitneyu cases");
    let exact = cases.iter().filter(|c| c.exact).count();
    assert!(
        exact >= 20 && exact < cases.len(),
        "both methods: {exact} exact"
    );
    for case in &cases {
        let ours = mann_whitney_u(&case.x, &case.y).expect(&case.name);
        assert_eq!(ours.exact, case.exact, "{}: method", case.name);
        close(ours.u, case.u, &case.name);
        close_p(ours.p, case.p, &case.name);
        let n = (case.x.len() * case.y.len()) as f64;
        close(ours.rank_biserial, 2.0 * case.u / n - 1.0, &case.name);
    }
}

fn check_correlations(
    cases: &[CorrelationCase],
    ours: fn(&[f64], &[f64]) -> Option<Correlation>,
    what: &str,
) {
    assert_eq!(cases.len(), 22, "the fixture's {what} cases");
    for case in cases {
        let name = format!("{what} {}", case.name);
        match (ours(&case.x, &case.y), case.statistic, case.p) {
            (Some(ours), Some(statistic), Some(p)) => {
                close(ours.r, statistic, &name);
                if 1.0 - statistic.abs() < 1e-15 && p < 1e-15 {
                    // A perfect order: scipy's coefficient is 1 less a rounding error, whose p
                    // (1e-24 for five pairs) is the rounding error's, where ours is exactly 0.
                    assert!(
                        ours.p < 1e-20 && p < 1e-20,
                        "{name}: p {} against {p}",
                        ours.p
                    );
                } else {
                    close_p(ours.p, p, &name);
                }
            }
            // scipy's NaN statistic (a constant side), or its NaN p of two pairs (spearmanr
            // gives ±1 with no test there; ours gives nothing).
            (None, None, _) | (None, _, None) => {}
            (ours, statistic, p) => panic!("{name}: {ours:?} against {statistic:?}, {p:?}"),
        }
    }
}

#[test]
fn kendall_equals_scipy() {
    check_correlations(&cases().kendalltau, kendall, "kendalltau");
}

#[test]
fn spearman_equals_scipy() {
    check_correlations(&cases().spearmanr, spearman, "spearmanr");
}

#[test]
fn normal_quantile_equals_scipy() {
    let cases = cases().norm_ppf;
    assert_eq!(cases.len(), 10, "the fixture's norm_ppf cases");
    for case in &cases {
        close(
            normal_quantile(case.q),
            case.z,
            &format!("norm.ppf({})", case.q),
        );
    }
}

#[test]
fn pearson_equals_scipy() {
    check_correlations(&cases().pearsonr, pearson, "pearsonr");
}

/// The seeded bootstrap of a mean (as hierarag-validity draws it: a ChaCha8 stream per
/// statistic, `resample_indices`, `percentile_interval`) against numpy's own 1,000 resamples:
/// independent streams, so the endpoints agree within a tenth of the interval's width (about
/// three Monte-Carlo standard errors of their difference), not exactly.
#[test]
fn the_bootstrap_interval_of_a_mean_agrees_with_an_independent_resampling() {
    use rand::SeedableRng;
    let cases = cases().bootstrap_mean;
    assert_eq!(cases.len(), 6, "the fixture's bootstrap_mean cases");
    for case in &cases {
        let seed = hierarag_stats::derive_seed(11, &case.name);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut indices = Vec::new();
        let n = case.x.len();
        let replicates: Vec<f64> = (0..1000)
            .map(|_| {
                hierarag_stats::resample_indices(&mut rng, n, &mut indices);
                indices.iter().map(|&i| case.x[i]).sum::<f64>() / n as f64
            })
            .collect();
        let ours = hierarag_stats::percentile_interval(&replicates, 0.95).unwrap();
        let width = case.hi - case.lo;
        for (what, a, b) in [("lower", ours.lo, case.lo), ("upper", ours.hi, case.hi)] {
            assert!(
                (a - b).abs() <= 0.1 * width,
                "{} {what}: {a} against numpy's {b} (width {width})",
                case.name
            );
        }
    }
}
