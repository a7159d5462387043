//! Oracle test: every function equals numpy / scikit-learn / statsmodels / scipy on the committed
//! cases of `tests/data/stats_cases.json`.
//!
//! The cases and the expected values are written by `scripts/oracles/stats_oracle.py` (see its
//! header to regenerate them); this test needs no Python. Values must agree to 1e-9, absolute
//! below 1 and relative above (see [`value_difference`]). p-values must agree to 1e-10 relative:
//! statrs' incomplete beta (a continued fraction) and scipy's (Boost) differ in the last digits,
//! and relative error is what matters down to the far tails (p = 1e-182 here). Bins, rater
//! tables, degrees of freedom and `None`-ness must match exactly.
//!
//! The worst differences are printed per quantity
//! (`cargo test -p hierarag-stats --test it oracle -- --nocapture`). On the machine that wrote the
//! fixture they were: mean/std/range 6e-16; entropy, MI and NMI 3e-16; ANOVA sums of squares
//! 8e-15 relative (the 2×2 closed form too), F 6e-14, p 4e-13 relative; Fleiss 4e-16; Cohen
//! 2e-16; point-biserial r 4e-16, p 3e-13 relative; binomial 9e-13 relative; percentiles and
//! intervals 2e-16. The tolerances leave room for other platforms' `exp`/`ln` and for serde_json's
//! default float parsing (up to an ulp off for 17-digit numbers).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

use hierarag_stats::{
    AnovaTerm, aggregate_raters, binomial_greater, bootstrap_p, cohen_kappa, entropy,
    equal_frequency_bins, fleiss_kappa, holm, mean, mutual_info, nmi, percentile,
    percentile_interval, permutation_p, point_biserial, range, std_dev, two_by_two, two_way_anova,
};
use serde::Deserialize;

/// Values (statistics, sums of squares, κ, r): absolute below 1, relative above.
const VALUE_TOLERANCE: f64 = 1e-9;
/// p-values: relative, as the incomplete beta implementations differ in the far tails.
const P_TOLERANCE: f64 = 1e-10;

#[derive(Deserialize)]
struct Cases {
    packages: BTreeMap<String, String>,
    describe: Vec<DescribeCase>,
    nmi: Vec<NmiCase>,
    anova: Vec<AnovaCase>,
    fleiss: Vec<FleissCase>,
    cohen: Vec<CohenCase>,
    point_biserial: Vec<PointBiserialCase>,
    binomial: Vec<BinomialCase>,
    percentile: Vec<PercentileCase>,
    interval: Vec<IntervalCase>,
    permutation: Vec<PermutationCase>,
    holm: Vec<HolmCase>,
    bootstrap_p: Vec<BootstrapPCase>,
}

#[derive(Deserialize)]
struct DescribeCase {
    id: String,
    values: Vec<f64>,
    mean: f64,
    std_ddof0: f64,
    std_ddof1: Option<f64>,
    range: f64,
}

#[derive(Deserialize)]
struct NmiCase {
    id: String,
    a: Vec<usize>,
    b: Vec<usize>,
    nmi: f64,
    mi: f64,
    entropy_a: f64,
    entropy_b: f64,
    /// When present, `b` is the equal-frequency binning of these values.
    values: Option<Vec<f64>>,
    n_bins: Option<usize>,
}

#[derive(Deserialize)]
struct ExpectedTerm {
    sum_sq: f64,
    df: f64,
    f: f64,
    p: f64,
}

#[derive(Deserialize)]
struct AnovaCase {
    id: String,
    y: Vec<f64>,
    a: Vec<usize>,
    b: Vec<usize>,
    a_term: ExpectedTerm,
    b_term: ExpectedTerm,
    interaction: ExpectedTerm,
    residual_sum_sq: f64,
    residual_df: f64,
}

#[derive(Deserialize)]
struct FleissCase {
    id: String,
    ratings: Vec<Vec<usize>>,
    n_categories: usize,
    table: Vec<Vec<u32>>,
    kappa: Option<f64>,
}

#[derive(Deserialize)]
struct CohenCase {
    id: String,
    a: Vec<usize>,
    b: Vec<usize>,
    kappa: Option<f64>,
}

#[derive(Deserialize)]
struct PointBiserialCase {
    id: String,
    x: Vec<bool>,
    y: Vec<f64>,
    r: f64,
    p: f64,
}

#[derive(Deserialize)]
struct BinomialCase {
    k: u64,
    n: u64,
    p: f64,
    pvalue: f64,
}

#[derive(Deserialize)]
struct PercentileCase {
    id: String,
    values: Vec<f64>,
    q: f64,
    expected: f64,
}

#[derive(Deserialize)]
struct IntervalCase {
    id: String,
    /// NaN replicates are `null` in JSON.
    samples: Vec<Option<f64>>,
    level: f64,
    lo: f64,
    hi: f64,
    n_ignored: usize,
}

#[derive(Deserialize)]
struct PermutationCase {
    id: String,
    observed: f64,
    null: Vec<f64>,
    p: f64,
}

#[derive(Deserialize)]
struct HolmCase {
    id: String,
    p: Vec<f64>,
    adjusted: Vec<f64>,
}

#[derive(Deserialize)]
struct BootstrapPCase {
    id: String,
    /// NaN (and infinite) replicates are written as null.
    replicates: Vec<Option<f64>>,
    null: f64,
    p: f64,
}

fn load() -> Cases {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/stats_cases.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("cannot parse {}: {e}", path.display()))
}

/// The worst difference seen per quantity, printed at the end of each test.
static WORST: Mutex<BTreeMap<String, f64>> = Mutex::new(BTreeMap::new());

/// The difference used for values: absolute when |expected| ≤ 1, relative above.
fn value_difference(actual: f64, expected: f64) -> f64 {
    (actual - expected).abs() / expected.abs().max(1.0)
}

/// The difference used for p-values: relative (and exact at 0).
fn p_difference(actual: f64, expected: f64) -> f64 {
    if expected == 0.0 {
        if actual == 0.0 { 0.0 } else { f64::INFINITY }
    } else {
        (actual - expected).abs() / expected.abs()
    }
}

fn record(quantity: &str, difference: f64) {
    let mut worst = WORST.lock().unwrap();
    let entry = worst.entry(quantity.to_string()).or_insert(0.0);
    *entry = entry.max(difference);
}

fn print_worst(prefix: &str) {
    for (quantity, difference) in WORST.lock().unwrap().iter() {
        if quantity.starts_with(prefix) {
            println!("worst difference {quantity}: {difference:.3e}");
        }
    }
}

fn close(quantity: &str, id: &str, actual: f64, expected: f64) {
    let difference = value_difference(actual, expected);
    record(quantity, difference);
    assert!(
        difference <= VALUE_TOLERANCE,
        "{quantity} [{id}]: got {actual:e}, expected {expected:e}"
    );
}

fn close_p(quantity: &str, id: &str, actual: f64, expected: f64) {
    let difference = p_difference(actual, expected);
    record(quantity, difference);
    assert!(
        difference <= P_TOLERANCE,
        "{quantity} [{id}]: got {actual:e}, expected {expected:e}"
    );
}

#[test]
fn fixture_names_the_reference_packages() {
    let cases = load();
    for package in ["numpy", "scipy", "scikit-learn", "statsmodels"] {
        assert!(cases.packages.contains_key(package), "{package} missing");
    }
}

#[test]
fn describe_equals_numpy() {
    let cases = load().describe;
    assert!(cases.len() >= 10);
    for case in &cases {
        close(
            "describe.mean",
            &case.id,
            mean(&case.values).unwrap(),
            case.mean,
        );
        close(
            "describe.std0",
            &case.id,
            std_dev(&case.values, 0).unwrap(),
            case.std_ddof0,
        );
        match case.std_ddof1 {
            Some(expected) => close(
                "describe.std1",
                &case.id,
                std_dev(&case.values, 1).unwrap(),
                expected,
            ),
            None => assert_eq!(std_dev(&case.values, 1), None, "[{}]", case.id),
        }
        close(
            "describe.range",
            &case.id,
            range(&case.values).unwrap(),
            case.range,
        );
    }
    print_worst("describe");
}

#[test]
fn nmi_equals_scikit_learn_and_bins_equal_the_numpy_rule() {
    let cases = load().nmi;
    assert!(cases.len() >= 30);
    let mut binned = 0;
    for case in &cases {
        if let (Some(values), Some(n_bins)) = (&case.values, case.n_bins) {
            assert_eq!(
                equal_frequency_bins(values, n_bins),
                case.b,
                "bins [{}]",
                case.id
            );
            binned += 1;
        }
        close(
            "nmi.nmi",
            &case.id,
            nmi(&case.a, &case.b).unwrap(),
            case.nmi,
        );
        close("nmi.mi", &case.id, mutual_info(&case.a, &case.b), case.mi);
        close("nmi.entropy", &case.id, entropy(&case.a), case.entropy_a);
        close("nmi.entropy", &case.id, entropy(&case.b), case.entropy_b);
        // The special cases (exact 0 and 1) must come out exactly.
        if case.nmi == 0.0 || case.nmi == 1.0 {
            assert_eq!(nmi(&case.a, &case.b), Some(case.nmi), "[{}]", case.id);
        }
    }
    assert!(binned >= 10, "only {binned} binned cases");
    print_worst("nmi");
}

fn check_term(quantity: &str, id: &str, actual: &AnovaTerm, expected: &ExpectedTerm) {
    close("anova.sum_sq", id, actual.sum_sq, expected.sum_sq);
    assert_eq!(actual.df, expected.df, "{quantity} df [{id}]");
    close("anova.f", id, actual.f, expected.f);
    close_p("anova.p", id, actual.p, expected.p);
}

#[test]
fn two_way_anova_equals_statsmodels_type_3() {
    let cases = load().anova;
    assert!(cases.len() >= 10);
    for case in &cases {
        let table = two_way_anova(&case.y, &case.a, &case.b)
            .unwrap_or_else(|e| panic!("[{}]: {e}", case.id));
        check_term("a", &case.id, &table.a, &case.a_term);
        check_term("b", &case.id, &table.b, &case.b_term);
        check_term("a:b", &case.id, &table.interaction, &case.interaction);
        close(
            "anova.residual",
            &case.id,
            table.residual_sum_sq,
            case.residual_sum_sq,
        );
        assert_eq!(table.residual_df, case.residual_df, "[{}]", case.id);

        // For 2×2 layouts, the closed form on cell means must give statsmodels' sums of squares.
        let mut levels_a: Vec<usize> = case.a.clone();
        levels_a.sort_unstable();
        levels_a.dedup();
        let mut levels_b: Vec<usize> = case.b.clone();
        levels_b.sort_unstable();
        levels_b.dedup();
        if levels_a.len() == 2 && levels_b.len() == 2 {
            let mut sums = [[0.0; 2]; 2];
            let mut ns = [[0usize; 2]; 2];
            for ((y, a), b) in case.y.iter().zip(&case.a).zip(&case.b) {
                let i = usize::from(*a == levels_a[1]);
                let j = usize::from(*b == levels_b[1]);
                sums[i][j] += y;
                ns[i][j] += 1;
            }
            let means = [0, 1].map(|i| [0, 1].map(|j| sums[i][j] / ns[i][j] as f64));
            let closed = two_by_two(means, ns).unwrap();
            close(
                "anova.closed_form",
                &case.id,
                closed.a.sum_sq,
                case.a_term.sum_sq,
            );
            close(
                "anova.closed_form",
                &case.id,
                closed.b.sum_sq,
                case.b_term.sum_sq,
            );
            close(
                "anova.closed_form",
                &case.id,
                closed.interaction.sum_sq,
                case.interaction.sum_sq,
            );
        }
    }
    print_worst("anova");
}

#[test]
fn fleiss_kappa_and_aggregate_raters_equal_statsmodels() {
    let cases = load().fleiss;
    assert!(cases.len() >= 10);
    for case in &cases {
        let table = aggregate_raters(&case.ratings, case.n_categories);
        assert_eq!(table, case.table, "table [{}]", case.id);
        match case.kappa {
            Some(expected) => close("fleiss", &case.id, fleiss_kappa(&table).unwrap(), expected),
            None => assert_eq!(fleiss_kappa(&table), None, "[{}]", case.id),
        }
    }
    print_worst("fleiss");
}

#[test]
fn cohen_kappa_equals_scikit_learn() {
    let cases = load().cohen;
    assert!(cases.len() >= 10);
    for case in &cases {
        match case.kappa {
            Some(expected) => close(
                "cohen",
                &case.id,
                cohen_kappa(&case.a, &case.b).unwrap(),
                expected,
            ),
            None => assert_eq!(cohen_kappa(&case.a, &case.b), None, "[{}]", case.id),
        }
    }
    print_worst("cohen");
}

#[test]
fn point_biserial_equals_scipy() {
    let cases = load().point_biserial;
    assert!(cases.len() >= 10);
    for case in &cases {
        let correlation = point_biserial(&case.x, &case.y).unwrap();
        close("point_biserial.r", &case.id, correlation.r, case.r);
        close_p("point_biserial.p", &case.id, correlation.p, case.p);
        assert_eq!(correlation.n, case.x.len());
    }
    print_worst("point_biserial");
}

#[test]
fn binomial_greater_equals_scipy_binomtest() {
    let cases = load().binomial;
    assert!(cases.len() >= 10);
    for case in &cases {
        let id = format!("{} of {} at {}", case.k, case.n, case.p);
        close_p(
            "binomial",
            &id,
            binomial_greater(case.k, case.n, case.p).unwrap(),
            case.pvalue,
        );
    }
    print_worst("binomial");
}

#[test]
fn percentiles_equal_numpy() {
    let cases = load();
    assert!(cases.percentile.len() >= 10);
    for case in &cases.percentile {
        close(
            "percentile",
            &case.id,
            percentile(&case.values, case.q).unwrap(),
            case.expected,
        );
    }
    assert!(cases.interval.len() >= 10);
    for case in &cases.interval {
        let samples: Vec<f64> = case.samples.iter().map(|s| s.unwrap_or(f64::NAN)).collect();
        let interval = percentile_interval(&samples, case.level).unwrap();
        close("percentile.interval", &case.id, interval.lo, case.lo);
        close("percentile.interval", &case.id, interval.hi, case.hi);
        assert_eq!(interval.n_ignored, case.n_ignored, "[{}]", case.id);
    }
    for case in &cases.permutation {
        close(
            "percentile.permutation",
            &case.id,
            permutation_p(case.observed, &case.null),
            case.p,
        );
    }
    for case in &cases.bootstrap_p {
        let replicates: Vec<f64> = case
            .replicates
            .iter()
            .map(|r| r.unwrap_or(f64::NAN))
            .collect();
        close(
            "percentile.bootstrap_p",
            &case.id,
            bootstrap_p(&replicates, case.null).unwrap(),
            case.p,
        );
    }
    print_worst("percentile");
}

#[test]
fn holm_equals_statsmodels() {
    let cases = load();
    assert!(cases.holm.len() >= 7);
    for case in &cases.holm {
        let adjusted = holm(&case.p);
        assert_eq!(adjusted.len(), case.adjusted.len(), "[{}]", case.id);
        for (actual, expected) in adjusted.iter().zip(&case.adjusted) {
            close_p("holm", &case.id, *actual, *expected);
        }
    }
    print_worst("holm");
}
