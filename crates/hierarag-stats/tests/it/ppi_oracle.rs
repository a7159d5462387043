//! Oracle test of the prediction-powered mean: ppi-python's `ppi_mean_pointestimate` and
//! `ppi_mean_ci` on the committed cases of `tests/data/ppi_cases.json` (written by
//! `scripts/oracles/ppi_oracle.py`; no Python at test time), to 1e-9 (the tolerance of
//! `tags_oracle`), every case counted.

use std::path::PathBuf;

use hierarag_stats::ppi_mean;
use serde::Deserialize;

use crate::tags_oracle::close;

#[derive(Deserialize)]
struct Cases {
    ppi_mean: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    y: Vec<f64>,
    yhat: Vec<f64>,
    yhat_unlabeled: Vec<f64>,
    alpha: f64,
    estimate: f64,
    ci: [f64; 2],
}

#[test]
fn ppi_mean_equals_ppi_python() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/ppi_cases.json");
    let cases: Cases =
        serde_json::from_str(&std::fs::read_to_string(path).expect("the committed fixture"))
            .expect("ppi_cases.json parses");
    assert_eq!(cases.ppi_mean.len(), 14, "the fixture's cases");
    for case in &cases.ppi_mean {
        let ours = ppi_mean(&case.y, &case.yhat, &case.yhat_unlabeled, case.alpha)
            .unwrap_or_else(|| panic!("{}: no estimate", case.name));
        close(ours.estimate, case.estimate, &case.name);
        close(ours.ci[0], case.ci[0], &format!("{} lower", case.name));
        close(ours.ci[1], case.ci[1], &format!("{} upper", case.name));
        assert!((0.0..=1.0).contains(&ours.lambda), "{}", case.name);
    }
    // The power tuning: a judge that ignores the answer is all but tuned away, one that
    // equals the people is trusted, and then narrows the interval of the people's 50 ratings.
    let of = |name: &str| {
        let case = cases.ppi_mean.iter().find(|c| c.name == name).unwrap();
        (
            case,
            ppi_mean(&case.y, &case.yhat, &case.yhat_unlabeled, case.alpha).unwrap(),
        )
    };
    let (_, uninformative) = of("uninformative_judge");
    assert!(uninformative.lambda < 0.1, "{uninformative:?}");
    let (perfect_case, perfect) = of("perfect_judge");
    assert!(perfect.lambda > 0.8, "{perfect:?}");
    let people_only =
        2.0 * 1.959_963_984_540_054 * hierarag_stats::std_dev(&perfect_case.y, 0).unwrap()
            / (perfect_case.y.len() as f64).sqrt();
    assert!(
        perfect.ci[1] - perfect.ci[0] < people_only / 2.0,
        "{perfect:?}"
    );
}
