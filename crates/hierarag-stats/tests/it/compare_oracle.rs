//! Oracle test of the paired statistics: scipy's `ttest_rel`, `wilcoxon` and `kendalltau`,
//! pingouin's `mixed_anova` and statsmodels' Holm on the committed cases of
//! `tests/data/compare_cases.json` (written by `scripts/oracles/compare_oracle.py`; no Python
//! at test time).
//!
//! Tolerances are those of `oracle.rs`: values 1e-9 (absolute below 1, relative above),
//! p-values 1e-10 relative; `None`-ness (scipy's and pingouin's NaN and ±∞ are null in the
//! file) must match exactly. For two or three identical systems pingouin divides rounding noise
//! by rounding noise (the oracle's docstring); there only the between-questions row and the
//! degrees of freedom are compared, and our within and interaction rows must say "undefined".

use std::path::PathBuf;

use hierarag_stats::{
    MixedTerm, WilcoxonMethod, holm, kendall_tau_b, mixed_anova, paired_t, wilcoxon,
};
use serde::Deserialize;

const VALUE_TOLERANCE: f64 = 1e-9;
const P_TOLERANCE: f64 = 1e-10;

#[derive(Deserialize)]
struct Cases {
    versions: serde_json::Value,
    ttest_rel: Vec<TCase>,
    wilcoxon: Vec<WilcoxonCase>,
    mixed_anova: Vec<MixedCase>,
    kendall: Vec<KendallCase>,
    holm: Vec<HolmCase>,
}

#[derive(Deserialize)]
struct TCase {
    name: String,
    a: Vec<f64>,
    b: Vec<f64>,
    t: Option<f64>,
    p: Option<f64>,
}

#[derive(Deserialize)]
struct WilcoxonCase {
    name: String,
    a: Vec<f64>,
    b: Vec<f64>,
    statistic: Option<f64>,
    p: Option<f64>,
}

#[derive(Deserialize)]
struct Term {
    ss: Option<f64>,
    df1: f64,
    df2: f64,
    f: Option<f64>,
    p: Option<f64>,
    np2: Option<f64>,
}

#[derive(Deserialize)]
struct MixedCase {
    name: String,
    y: Vec<Vec<f64>>,
    groups: Vec<usize>,
    between: Term,
    within: Term,
    interaction: Term,
}

#[derive(Deserialize)]
struct KendallCase {
    name: String,
    x: Vec<f64>,
    y: Vec<f64>,
    tau: Option<f64>,
}

#[derive(Deserialize)]
struct HolmCase {
    name: String,
    p: Vec<f64>,
    adjusted: Vec<f64>,
}

fn cases() -> Cases {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/compare_cases.json");
    let text = std::fs::read_to_string(&path).expect("the committed fixture");
    serde_json::from_str(&text).expect("compare_cases.json parses")
}

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

fn close_value(ours: Option<f64>, theirs: Option<f64>, what: &str) {
    match (ours, theirs) {
        (Some(x), Some(y)) => {
            let scale = y.abs().max(1.0);
            assert!(
                (x - y).abs() <= VALUE_TOLERANCE * scale,
                "{what}: {x} against {y}"
            );
        }
        (None, None) => {}
        _ => panic!("{what}: {ours:?} against {theirs:?}"),
    }
}

fn close_p(ours: Option<f64>, theirs: Option<f64>, what: &str) {
    match (ours, theirs) {
        (Some(x), Some(y)) => {
            let ok = if y == 0.0 {
                x == 0.0
            } else {
                ((x - y) / y).abs() <= P_TOLERANCE
            };
            assert!(ok, "{what}: p {x:e} against {y:e}");
        }
        (None, None) => {}
        _ => panic!("{what}: p {ours:?} against {theirs:?}"),
    }
}

#[test]
fn the_fixture_names_the_reference_versions() {
    let cases = cases();
    for package in ["scipy", "statsmodels", "pingouin"] {
        assert!(
            cases.versions.get(package).is_some(),
            "versions lacks {package}"
        );
    }
}

#[test]
fn paired_t_equals_scipy_ttest_rel() {
    let cases = cases().ttest_rel;
    assert_eq!(cases.len(), 13, "the committed ttest_rel cases");
    for case in cases {
        let ours = paired_t(&case.a, &case.b).expect("same lengths");
        close_value(finite(ours.t), case.t, &format!("{} t", case.name));
        close_p(finite(ours.p), case.p, &format!("{} p", case.name));
        assert_eq!(ours.df, case.a.len() as f64 - 1.0);
    }
}

#[test]
fn wilcoxon_equals_scipy_with_its_defaults() {
    let cases = cases().wilcoxon;
    assert_eq!(cases.len(), 23, "the committed wilcoxon cases");
    for case in &cases {
        let ours = wilcoxon(&case.a, &case.b).expect("same lengths");
        close_value(
            finite(ours.p).map(|_| ours.statistic),
            case.p.and(case.statistic),
            &format!("{} statistic", case.name),
        );
        close_p(finite(ours.p), case.p, &format!("{} p", case.name));
        // The case names say which branch scipy's method="auto" took.
        let expected = if case.name.starts_with("exact") {
            WilcoxonMethod::Exact
        } else if case.name.starts_with("permutation") {
            WilcoxonMethod::Permutation
        } else {
            WilcoxonMethod::Asymptotic
        };
        assert_eq!(ours.method, expected, "{}", case.name);
    }
    for branch in ["exact", "permutation", "asymptotic"] {
        assert!(
            cases.iter().any(|c| c.name.starts_with(branch)),
            "no {branch} case"
        );
    }
}

fn check_term(ours: &MixedTerm, theirs: &Term, what: &str) {
    assert_eq!(ours.df1, theirs.df1, "{what} df1");
    assert_eq!(ours.df2, theirs.df2, "{what} df2");
    close_value(Some(ours.ss), theirs.ss, &format!("{what} ss"));
    close_value(finite(ours.f), theirs.f, &format!("{what} F"));
    close_p(finite(ours.p), theirs.p, &format!("{what} p"));
    close_value(finite(ours.np2), theirs.np2, &format!("{what} np2"));
}

#[test]
fn mixed_anova_equals_pingouin() {
    let cases = cases().mixed_anova;
    assert_eq!(cases.len(), 8, "the committed mixed_anova cases");
    for case in &cases {
        let ours = mixed_anova(&case.y, &case.groups).expect("a computable design");
        check_term(
            &ours.between,
            &case.between,
            &format!("{} between", case.name),
        );
        if case.name.starts_with("identical") {
            for (term, theirs) in [
                (&ours.within, &case.within),
                (&ours.interaction, &case.interaction),
            ] {
                assert_eq!(term.df1, theirs.df1, "{}", case.name);
                assert_eq!(term.df2, theirs.df2, "{}", case.name);
                assert!(
                    term.f.is_nan() && term.p.is_nan() && term.np2.is_nan(),
                    "{}: identical systems leave nothing to test within questions, got {term:?}",
                    case.name
                );
            }
            continue;
        }
        check_term(&ours.within, &case.within, &format!("{} within", case.name));
        check_term(
            &ours.interaction,
            &case.interaction,
            &format!("{} interaction", case.name),
        );
    }
}

#[test]
fn kendall_tau_b_equals_scipy() {
    let cases = cases().kendall;
    assert_eq!(cases.len(), 13, "the committed kendall cases");
    for case in cases {
        close_value(
            kendall_tau_b(&case.x, &case.y),
            case.tau,
            &format!("{} tau", case.name),
        );
    }
}

#[test]
fn holm_equals_statsmodels_on_the_comparison_cases() {
    let cases = cases().holm;
    assert_eq!(cases.len(), 8, "the committed holm cases");
    for case in cases {
        let ours = holm(&case.p);
        assert_eq!(ours.len(), case.adjusted.len(), "{}", case.name);
        for (x, y) in ours.iter().zip(&case.adjusted) {
            close_value(Some(*x), Some(*y), &case.name);
        }
    }
}

#[test]
fn degenerate_input_is_an_answer_not_a_panic() {
    assert!(paired_t(&[], &[]).is_none());
    assert!(paired_t(&[1.0], &[1.0, 2.0]).is_none());
    assert!(wilcoxon(&[], &[]).is_none());
    // One group, or as many questions as groups: nothing to test.
    assert!(mixed_anova(&[vec![0.1, 0.2], vec![0.3, 0.4]], &[0, 0]).is_none());
    assert!(mixed_anova(&[vec![0.1, 0.2], vec![0.3, 0.4]], &[0, 1]).is_none());
    assert!(mixed_anova(&[vec![0.1], vec![0.3], vec![0.2]], &[0, 1, 1]).is_none());
    assert!(
        mixed_anova(
            &[vec![0.1, f64::NAN], vec![0.3, 0.4], vec![0.2, 0.1]],
            &[0, 1, 1]
        )
        .is_none()
    );
}
