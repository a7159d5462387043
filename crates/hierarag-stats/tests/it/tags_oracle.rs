//! Oracle test of the statistics of tagged questions: scipy's `chi2_contingency` and
//! statsmodels' type II ANOVA of an additive model (`anova_lm(ols("y ~ C(f0) + …"), typ=2)`)
//! on the committed cases of `tests/data/tags_cases.json` (written by
//! `scripts/oracles/tags_oracle.py`; no Python at test time). Tolerances as `oracle.rs`: values
//! 1e-9 (absolute below 1, relative above), p-values 1e-10 relative; `None`-ness must match
//! (scipy refuses a table with a zero margin: we return `None`). One deliberate difference: a
//! factor that is an exact copy of another gets 0 degrees of freedom and no test here, where
//! statsmodels' pseudo-inverse gives each copy the other's row.

use std::path::PathBuf;

use hierarag_stats::{additive_anova, chi2_contingency};
use serde::Deserialize;

const VALUE_TOLERANCE: f64 = 1e-9;
const P_TOLERANCE: f64 = 1e-10;

#[derive(Deserialize)]
struct Cases {
    chi2: Vec<ChiCase>,
    anova2: Vec<AnovaCase>,
}

#[derive(Deserialize)]
struct ChiCase {
    name: String,
    table: Vec<Vec<u64>>,
    statistic: Option<f64>,
    p: Option<f64>,
    dof: Option<usize>,
    expected: Option<Vec<Vec<f64>>>,
}

#[derive(Deserialize)]
struct Term {
    ss: Option<f64>,
    df: f64,
    f: Option<f64>,
    p: Option<f64>,
}

#[derive(Deserialize)]
struct Residual {
    ss: f64,
    df: f64,
}

#[derive(Deserialize)]
struct AnovaCase {
    name: String,
    y: Vec<f64>,
    factors: Vec<Vec<usize>>,
    terms: Vec<Term>,
    residual: Residual,
}

fn cases() -> Cases {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/tags_cases.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("the committed fixture"))
        .expect("tags_cases.json parses")
}

/// Within 1e-9 (absolute below 1, relative above); shared with `validity_oracle`.
pub(crate) fn close(ours: f64, theirs: f64, what: &str) {
    assert!(
        (ours - theirs).abs() <= VALUE_TOLERANCE * theirs.abs().max(1.0),
        "{what}: {ours} against {theirs}"
    );
}

/// Within 1e-10 relative, 0 only for 0; shared with `validity_oracle`.
pub(crate) fn close_p(ours: f64, theirs: f64, what: &str) {
    let ok = if theirs == 0.0 {
        ours == 0.0
    } else {
        ((ours - theirs) / theirs).abs() <= P_TOLERANCE
    };
    assert!(ok, "{what}: p {ours:e} against {theirs:e}");
}

#[test]
fn chi2_contingency_equals_scipy() {
    let cases = cases().chi2;
    assert!(cases.len() >= 6);
    for case in cases {
        let ours = chi2_contingency(&case.table);
        match (&ours, case.statistic) {
            (None, None) => continue,
            (Some(ours), Some(statistic)) => {
                close(ours.statistic, statistic, &case.name);
                close_p(ours.p, case.p.unwrap(), &case.name);
                assert_eq!(Some(ours.dof), case.dof, "{}", case.name);
                let expected = case.expected.as_ref().unwrap();
                assert_eq!(ours.expected.len(), expected.len(), "{} rows", case.name);
                for (row, theirs) in ours.expected.iter().zip(expected) {
                    assert_eq!(row.len(), theirs.len(), "{} columns", case.name);
                    for (e, t) in row.iter().zip(theirs) {
                        close(*e, *t, &format!("{} expected", case.name));
                    }
                }
            }
            _ => panic!("{}: ours {ours:?}, scipy's {:?}", case.name, case.statistic),
        }
    }
}

#[test]
fn additive_anova_equals_statsmodels_type_ii() {
    let cases = cases().anova2;
    assert!(cases.len() >= 6);
    for case in cases {
        let ours = additive_anova(&case.y, &case.factors).expect(&case.name);
        close(
            ours.residual_sum_sq,
            case.residual.ss,
            &format!("{} residual", case.name),
        );
        assert_eq!(ours.residual_df, case.residual.df, "{}", case.name);
        assert_eq!(ours.terms.len(), case.terms.len(), "{} terms", case.name);
        for (k, (term, theirs)) in ours.terms.iter().zip(&case.terms).enumerate() {
            let what = format!("{} factor {k}", case.name);
            // A factor that copies another (f1 = f0 in these cases) adds nothing once the other
            // is in the model: 0 degrees of freedom, no test. statsmodels fits through the
            // pseudo-inverse and gives each copy the row of the model without its twin; we
            // differ deliberately (docs/design.md).
            if case.name.starts_with("rank_deficient") && k < 2 {
                assert_eq!(term.df, 0.0, "{what}");
                assert!(term.f.is_nan() && term.p.is_nan(), "{what}");
                continue;
            }
            assert_eq!(term.df, theirs.df, "{what} df");
            close(term.sum_sq, theirs.ss.unwrap(), &format!("{what} ss"));
            close(term.f, theirs.f.unwrap(), &format!("{what} F"));
            close_p(term.p, theirs.p.unwrap(), &format!("{what} p"));
        }
    }
}
