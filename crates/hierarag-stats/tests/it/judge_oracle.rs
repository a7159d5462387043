//! Oracle test of the statistics that check a judge against people: scikit-learn's
//! quadratic-weighted Cohen's κ and scipy's Spearman ρ on the committed cases of
//! `tests/data/judge_cases.json` (written by `scripts/oracles/judge_oracle.py`; no Python at
//! test time). Values to 1e-9 (absolute below 1, relative above); p-values to 1e-10 relative,
//! or 1e-15 absolute for the vanishing ones of a perfect correlation, where scipy's ρ is a
//! rounding away from ±1; `None` where scikit-learn or scipy give NaN.

use std::path::PathBuf;

use hierarag_stats::{quadratic_kappa, spearman};
use serde::Deserialize;

#[derive(Deserialize)]
struct Cases {
    weighted_kappa: Vec<KappaCase>,
    spearman: Vec<SpearmanCase>,
}

#[derive(Deserialize)]
struct KappaCase {
    name: String,
    max: usize,
    a: Vec<usize>,
    b: Vec<usize>,
    kappa: Option<f64>,
}

#[derive(Deserialize)]
struct SpearmanCase {
    name: String,
    x: Vec<f64>,
    y: Vec<f64>,
    rho: Option<f64>,
    p: Option<f64>,
}

fn cases() -> Cases {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/judge_cases.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("the committed fixture"))
        .expect("judge_cases.json parses")
}

fn close(ours: f64, theirs: f64, what: &str) {
    assert!(
        (ours - theirs).abs() <= 1e-9 * theirs.abs().max(1.0),
        "{what}: {ours} against {theirs}"
    );
}

#[test]
fn quadratic_kappa_equals_scikit_learn() {
    let cases = cases().weighted_kappa;
    assert!(cases.len() >= 8);
    for case in cases {
        let ours = quadratic_kappa(&case.a, &case.b, case.max);
        match (ours, case.kappa) {
            (Some(ours), Some(theirs)) => close(ours, theirs, &case.name),
            (None, None) => {}
            _ => panic!(
                "{}: ours {ours:?}, scikit-learn's {:?}",
                case.name, case.kappa
            ),
        }
    }
    // A rating above the scale is the caller's error, not a κ.
    assert_eq!(quadratic_kappa(&[0, 4], &[0, 1], 3), None);
}

#[test]
fn spearman_equals_scipy() {
    let cases = cases().spearman;
    assert!(cases.len() >= 6);
    for case in cases {
        let ours = spearman(&case.x, &case.y);
        match (ours, case.rho) {
            (Some(ours), Some(rho)) => {
                close(ours.r, rho, &case.name);
                let p = case.p.unwrap();
                assert!(
                    (ours.p - p).abs() <= 1e-10 * p + 1e-15,
                    "{}: p {:e} against {p:e}",
                    case.name,
                    ours.p
                );
            }
            (None, None) => {}
            _ => panic!("{}: ours {ours:?}, scipy's {:?}", case.name, case.rho),
        }
    }
}
