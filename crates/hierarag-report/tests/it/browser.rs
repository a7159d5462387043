//! The charts in a real browser: a page with the three charts inline is opened in headless
//! Chromium by `scripts/browser/check_page.py`, which must find no console or page errors, no
//! request leaving the page, the expected number of charts and points, and write a screenshot;
//! and a page with a script error must be reported as such.
//!
//! Needs Debian's `chromium` and the `playwright` package (installed by `.ci/run` and
//! `scripts/test.sh`), so these tests are `#[ignore]`d, with the reason, and
//! `bash scripts/test.sh` runs them (`cargo test -- --include-ignored`). Python is
//! `$HIERARAG_PYTHON`, else the repository's `.venv-oracles`.

use std::path::{Path, PathBuf};
use std::process::Command;

use hierarag_test_support::{python, workspace_root};

use hierarag_report::svg::{
    ChartOptions, Group, Point, Series, Threshold, dot_chart, interaction_plot, line_chart,
};
use serde_json::Value;

const PNG_SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];

/// A fresh directory for this test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("hierarag-report-browser")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `check_page.py PAGE ARGS…` and returns its JSON report.
fn check_page(page: &Path, args: &[&str]) -> Value {
    let python = python();
    let output = Command::new(&python)
        .arg(workspace_root().join("scripts/browser/check_page.py"))
        .arg(page)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "check_page.py failed ({}); Chromium comes from `apt-get install chromium`, \
         playwright from scripts/oracles/requirements.txt:\n{stderr}",
        output.status
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "check_page.py printed no JSON ({e}):\n{}\n{stderr}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

fn point(label: &str, value: f64, half_width: f64) -> Point {
    Point::new(label, Some(value)).with_ci(value - half_width, value + half_width)
}

fn charts() -> Vec<String> {
    let levels: Vec<String> = ["coarse", "medium", "fine"].map(String::from).to_vec();
    let dimensions = [
        ("question type", [0.93, 0.81, 0.62]),
        ("user persona", [0.88, 0.70, f64::NAN]),
        ("answer type", [0.74, 0.69, 0.41]),
    ];
    let series: Vec<Series> = dimensions
        .iter()
        .map(|(name, values)| Series {
            name: (*name).to_owned(),
            points: levels
                .iter()
                .zip(values)
                .map(|(level, &value)| point(level, value, 0.04))
                .collect(),
        })
        .collect();
    let discpow = line_chart(
        &levels,
        &series,
        &ChartOptions {
            y_min: Some(0.0),
            y_max: Some(1.0),
            ..ChartOptions::new(
                "Discriminative power by granularity <per dimension>",
                "DiscPow",
            )
        },
    );

    let fine = [
        "comparative_synthesis_concepts",
        "single_hop_factoid_entities",
        "multi_hop_reasoning_temporal",
        "aggregation_over_documents",
        "counterfactual_what_if_events",
        "procedural_step_by_step_howto",
        "definition_of_domain_terms",
        "numerical_comparison_quantities",
    ];
    let group = |label: &str, names: &[&str], base: f64| Group {
        label: label.to_owned(),
        points: names
            .iter()
            .enumerate()
            .map(|(i, name)| point(name, base + 0.35 * (i as f64 * 1.7).sin(), 0.25))
            .collect(),
    };
    let rho = dot_chart(
        &[
            group("coarse", &["factoid", "synthesis", "reasoning"], 1.6),
            group(
                "medium",
                &["single_hop", "multi_hop", "comparison", "aggregation"],
                1.9,
            ),
            group("fine", &fine, 2.2),
        ],
        &[
            Threshold {
                value: 1.0,
                label: "ρ = 1".to_owned(),
            },
            Threshold {
                value: 2.0,
                label: "ρ = 2".to_owned(),
            },
        ],
        &ChartOptions {
            width: 900,
            ..ChartOptions::new("ρ per split", "ρ")
        },
    );

    let retrievers: Vec<String> = ["BM25", "dense", "hybrid"].map(String::from).to_vec();
    let lines: Vec<Series> = [("k = 5", 0.0), ("k = 20", 0.08)]
        .iter()
        .map(|(name, shift)| Series {
            name: (*name).to_owned(),
            points: retrievers
                .iter()
                .zip([0.41, 0.52, 0.58])
                .map(|(retriever, value)| point(retriever, value + shift, 0.03))
                .collect(),
        })
        .collect();
    let interaction = interaction_plot(
        &retrievers,
        &lines,
        &ChartOptions::new("Answer correctness: retriever × top-k", "mean correctness"),
    );
    vec![discpow, rho, interaction]
}

fn page(body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>Chart check</title>\
         <style>body {{ font-family: system-ui, sans-serif; margin: 24px; }} \
         svg.chart {{ display: block; margin: 0 0 24px; }}</style></head>\n\
         <body>\n{body}\n</body></html>\n"
    )
}

#[test]
#[ignore = "needs Chromium (scripts/ensure-chromium.sh) and playwright (.venv-oracles)"]
fn charts_render_in_chromium_without_errors_or_outside_requests() {
    let dir = scratch("charts");
    let charts = charts();
    let n_points: usize = charts
        .iter()
        .map(|svg| svg.matches(r#"<circle class="point""#).count())
        .sum();
    assert_eq!(n_points, 8 + 15 + 6, "one NaN among the DiscPow values");
    let body = format!(
        "{}\n<script>document.body.setAttribute('data-charts', \
         String(document.querySelectorAll('svg.chart').length));</script>",
        charts.join("\n")
    );
    let html = dir.join("page.html");
    std::fs::write(&html, page(&body)).unwrap();
    let screenshot = dir.join("x.png");
    let report = check_page(
        &html,
        &[
            "--count",
            "svg.chart",
            "--count",
            "circle.point",
            "--count",
            "body[data-charts=\"3\"]",
            "--full-page",
            "--screenshot",
            screenshot.to_str().unwrap(),
        ],
    );
    assert_eq!(report["console_errors"], Value::Array(vec![]), "{report}");
    assert_eq!(report["page_errors"], Value::Array(vec![]), "{report}");
    assert_eq!(report["requests_outside"], Value::Array(vec![]), "{report}");
    assert_eq!(report["counts"]["svg.chart"], 3, "{report}");
    assert_eq!(report["counts"]["circle.point"], n_points, "{report}");
    assert_eq!(
        report["counts"]["body[data-charts=\"3\"]"], 1,
        "the inline script ran: {report}"
    );
    assert_eq!(report["title"], "Chart check");
    let png = std::fs::read(&screenshot).unwrap();
    assert!(png.len() > 1_000 && png[..8] == PNG_SIGNATURE, "not a PNG");
}

#[test]
#[ignore = "needs Chromium (scripts/ensure-chromium.sh) and playwright (.venv-oracles)"]
fn a_script_error_and_an_outside_request_are_reported() {
    let dir = scratch("broken");
    let html = dir.join("page.html");
    let body = "<img alt=\"remote\" src=\"https://example.com/logo.png\">\n\
                <script>document.body.dataset.before = 'yes'; notAFunction();</script>";
    std::fs::write(&html, page(body)).unwrap();
    let report = check_page(&html, &["--count", "body[data-before]"]);
    let page_errors = report["page_errors"].as_array().unwrap();
    assert!(
        page_errors
            .iter()
            .any(|error| error.as_str().unwrap().contains("notAFunction")),
        "{report}"
    );
    assert_eq!(
        report["requests_outside"],
        Value::Array(vec!["https://example.com/logo.png".into()]),
        "{report}"
    );
    assert_eq!(report["counts"]["body[data-before]"], 1, "{report}");
}
