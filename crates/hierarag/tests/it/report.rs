//! `hierarag analyze` and `hierarag report` on a run directory of an rq2-shaped benchmark
//! (qc at three levels), and the report in headless Chromium: no console errors, nothing
//! loaded from outside, its charts and tables present, corpus text with `<script>` shown as
//! text, and the question filter working. The Chromium check is an `#[ignore]`d test of its own,
//! run by `bash scripts/test.sh` (`cargo test -- --include-ignored`).

use std::path::Path;
use std::process::Command;

use crate::support::{browser_check, write_lines};
use assert_cmd::cargo::CommandCargoExt;
use serde_json::{Value, json};

/// The qc categories per level with the mean CS their questions get.
const LEVELS: [(&str, &[(&str, f64)]); 3] = [
    ("coarse", &[("simple", 0.62), ("complex", 0.66)]),
    (
        "medium",
        &[
            ("single_fact", 0.55),
            ("multi_fact", 0.70),
            ("cross_section", 0.60),
            ("comparative", 0.72),
        ],
    ),
    (
        "fine",
        &[
            ("extractive_span", 0.50),
            ("entity_extraction", 0.58),
            ("fact_aggregation", 0.69),
            ("single_hop_inference", 0.71),
            ("multi_hop_reasoning", 0.57),
            ("causal_reasoning", 0.63),
            ("comparative_synthesis_entities", 0.70),
            ("comparative_synthesis_concepts", 0.74),
        ],
    ),
];
const PER_CATEGORY: usize = 12;
const HOSTILE: &str =
    "What does <script>document.title='owned'</script><img src=\"http://example.com/x.png\"> do?";

/// benchmark.jsonl, answers.jsonl and scores.jsonl of a small rq2 run.
fn write_run(dir: &Path) -> usize {
    let mut benchmark = Vec::new();
    let mut answers = Vec::new();
    let mut scores = Vec::new();
    for (level, categories) in LEVELS {
        for &(category, mean) in categories {
            for i in 0..PER_CATEGORY {
                let id = format!("rq2-qc-{level}-{category}-{i:02}");
                let question = if benchmark.is_empty() {
                    HOSTILE.to_owned()
                } else {
                    format!("Question {i} about {category}?")
                };
                let doc = format!("doc-{}", benchmark.len() % 17);
                benchmark.push(json!({
                    "id": id, "question": question, "answer": format!("Reference answer {i} for {category}."),
                    "doc_ids": [doc], "design": "rq2", "set": format!("qc/{level}"),
                    "categories": [{"dimension": "qc", "level": level, "category": category}],
                    "persona": {"expertise": "novice"},
                    "generator": {"backend": "openai", "model": "m", "params": {}},
                    "candidates_considered": 3, "attempts": 1,
                    "filter": {"enabled": true, "passed": 1, "judged": 3}
                }));
                let refused = i == 5;
                answers.push(json!({
                    "id": id, "question": question, "retriever": "bm25",
                    "retrieved": [{"chunk_id": format!("{doc}#0"), "doc_id": doc, "score": 3.5}],
                    "doc_ids": [doc, "doc-99"], "doc_scores": [3.5, 1.25],
                    "answer": if refused { "I cannot answer from the context.".to_owned() } else { format!("Answer {i} for {category}.") },
                    "refused": refused,
                    "llm": {"backend": "openai", "model": "m", "params": {}},
                    "usage": {"prompt_tokens": 100, "completion_tokens": 20}
                }));
                // Deviations symmetric around the category mean.
                let spread = [-0.06, -0.04, -0.02, 0.02, 0.04, 0.06][i % 6];
                scores.push(json!({
                    "id": id, "ap": if i % 3 == 0 { 0.5 } else { 1.0 }, "ndcg_10": 0.8,
                    "recall_10": 1.0, "rr": 1.0, "cs": mean + spread, "rouge1": 0.4,
                    "bleu": 12.5, "refused": refused
                }));
            }
        }
    }
    write_lines(&dir.join("benchmark.jsonl"), &benchmark);
    write_lines(&dir.join("answers.jsonl"), &answers);
    write_lines(&dir.join("scores.jsonl"), &scores);
    benchmark.len()
}

fn hierarag() -> Command {
    let mut command = Command::cargo_bin("hierarag").unwrap();
    command.env_remove("RUST_LOG");
    command
}

#[test]
fn analyze_and_report_a_run_directory() {
    let dir = tempfile::tempdir().unwrap();
    let n = write_run(dir.path());

    let out = hierarag()
        .args(["analyze", "--seed", "3"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("Granularity (Table 2)"), "{stdout}");
    assert!(stdout.contains("Recommended granularity"), "{stdout}");

    let analysis: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("analysis.json")).unwrap()).unwrap();
    assert_eq!(analysis["counts"]["analysed"], n);
    assert_eq!(analysis["table2"].as_array().unwrap().len(), 3);
    assert_eq!(analysis["splits"].as_array().unwrap().len(), 6);
    assert_eq!(analysis["settings"]["seed"], 3);
    // Category means are exact (symmetric deviations): coarse DiscPow = |0.66 − 0.62| / 2.
    let coarse = &analysis["levels"][0];
    assert!((coarse["discpow"]["value"].as_f64().unwrap() - 0.02).abs() < 1e-9);
    // Corpus BLEU comes with the answers.
    assert!(coarse["categories"][0]["means"]["corpus_bleu"].is_f64());

    // The same analysis again gives the same bytes; another seed other intervals.
    let first = std::fs::read(dir.path().join("analysis.json")).unwrap();
    let again = hierarag()
        .args(["analyze", "-q", "--seed", "3", "--json"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(again.status.success());
    assert_eq!(
        first,
        std::fs::read(dir.path().join("analysis.json")).unwrap()
    );
    let printed: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(printed, analysis);

    let out = hierarag().arg("report").arg(dir.path()).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(md.contains("## Granularity (Table 2)"));
    assert!(md.contains("## Splits (Coherence Ratio)"));
    // Corpus and LLM text is escaped everywhere.
    assert!(!html.contains("<script>document.title"));
    assert!(html.contains("&lt;script&gt;document.title"));
    assert!(!md.contains("<script>"));
    assert_eq!(
        html.matches("<script>").count(),
        1,
        "only the report's own script"
    );
}

#[test]
#[ignore = "needs Chromium (scripts/ensure-chromium.sh) and playwright (.venv-oracles)"]
fn the_report_of_a_run_directory_works_in_headless_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let n = write_run(dir.path());
    for command in [&["analyze", "-q", "--seed", "3"][..], &["report", "-q"]] {
        let out = hierarag().args(command).arg(dir.path()).output().unwrap();
        assert!(
            out.status.success(),
            "{command:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    check_in_browser(&dir.path().join("report.html"), n);
}

#[test]
fn a_run_of_two_systems_reports_both_and_absent_retrieval_metrics_as_absent() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let n = write_run(root);
    // Two systems: "lexical" with the run's files, "service" naming no document.
    std::fs::write(
        root.join("manifest.json"),
        json!({"tool": "hierarag", "version": "test", "config": {"systems": [
            {"name": "lexical", "kind": "builtin", "retriever": "bm25"},
            {"name": "service", "kind": "http", "url": "http://127.0.0.1:9/ask"}
        ]}})
        .to_string(),
    )
    .unwrap();
    for name in ["lexical", "service"] {
        std::fs::create_dir_all(root.join("systems").join(name)).unwrap();
    }
    for file in ["answers.jsonl", "scores.jsonl"] {
        std::fs::rename(root.join(file), root.join("systems/lexical").join(file)).unwrap();
    }
    let scores = std::fs::read_to_string(root.join("systems/lexical/scores.jsonl")).unwrap();
    let absent: Vec<Value> = scores
        .lines()
        .map(|line| {
            let mut score: Value = serde_json::from_str(line).unwrap();
            for metric in ["ap", "ndcg_10", "recall_10", "rr"] {
                score[metric] = Value::Null;
            }
            score
        })
        .collect();
    write_lines(&root.join("systems/service/scores.jsonl"), &absent);

    for system in ["service", "lexical"] {
        let out = hierarag()
            .args(["analyze", "-q", "--system", system])
            .arg(root)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let service: Value =
        serde_json::from_slice(&std::fs::read(root.join("systems/service/analysis.json")).unwrap())
            .unwrap();
    assert_eq!(
        service["counts"]["analysed"], n,
        "CS compares every question"
    );
    assert!(
        service["table2"][0]["map"].is_null(),
        "{:#}",
        service["table2"][0]
    );
    let notes = service["notes"].to_string();
    assert!(
        notes.contains(&format!("{n} of {n} questions have no retrieval metrics")),
        "{notes}"
    );
    // A retrieval metric cannot be compared for a system that names no document.
    let out = hierarag()
        .args([
            "analyze", "-q", "--system", "service", "--metric", "ap", "--json",
        ])
        .arg("--out")
        .arg(root.join("by-ap"))
        .arg(root)
        .output()
        .unwrap();
    let by_ap: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(by_ap["counts"]["analysed"], 0);

    let out = hierarag().arg("report").arg(root).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = std::fs::read_to_string(root.join("report.md")).unwrap();
    let row = |name: &str| {
        md.lines()
            .find(|l| l.starts_with(&format!("| `{name}` |")))
            .unwrap_or_else(|| panic!("{md}"))
            .to_owned()
    };
    // MAP over the lexical system: 1/3 of the questions at 0.5, the rest at 1.
    assert!(
        row("lexical").starts_with(&format!(
            "| `lexical` | builtin (bm25) | {n} | {n} | 0.833 | 0.800 | 1.000 |"
        )),
        "{}",
        row("lexical")
    );
    assert!(
        row("service").starts_with(&format!("| `service` | http | 0 | {n} | – | – | – |")),
        "{}",
        row("service")
    );
    assert!(md.contains("## System service"), "{md}");
    assert!(md.contains("### Granularity (Table 2)"), "{md}");
    let html = std::fs::read_to_string(root.join("report.html")).unwrap();
    assert!(html.contains("id=\"system-service\""));
}

#[test]
fn analyze_names_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let out = hierarag().arg("analyze").arg(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("benchmark.jsonl"), "{stderr}");

    let out = hierarag().arg("report").arg(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("hierarag analyze"), "{stderr}");

    // A benchmark without scores: an analysis that says what is missing, not a failure; and
    // one with a question unscored counts it.
    let n = write_run(dir.path());
    let scores = std::fs::read_to_string(dir.path().join("scores.jsonl")).unwrap();
    std::fs::remove_file(dir.path().join("scores.jsonl")).unwrap();
    let out = hierarag()
        .args(["analyze", "-q"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let expected = format!("no scores yet (scores.jsonl not found): the {n} benchmark questions");
    assert!(stdout.contains(&expected), "{stdout}");
    let partial: String = scores.lines().skip(1).map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.path().join("scores.jsonl"), partial).unwrap();
    let out = hierarag()
        .args(["analyze", "-q", "--json"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let analysis: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(analysis["counts"]["unscored"], 1);
    assert_eq!(analysis["counts"]["analysed"], n - 1);

    let out = hierarag()
        .args(["analyze", "--bins", "1"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--bins"));
}

fn check_in_browser(page: &Path, n: usize) {
    let screenshot = page.with_file_name("report.png");
    let mut args: Vec<&std::ffi::OsStr> = vec![
        "--full-page".as_ref(),
        "--screenshot".as_ref(),
        screenshot.as_os_str(),
    ];
    args.extend(
        [
            "--count",
            "svg.chart",
            "--count",
            "svg.chart-line",
            "--count",
            "svg.chart-dot",
            "--count",
            "#table2 table tbody tr",
            "--count",
            "#splits table tbody tr",
            "--count",
            "#question-table tbody tr",
            "--count",
            "script",
            "--count",
            "img",
            "--fill",
            "#question-search=document.title",
            "--count",
            "#question-table tbody tr:not([hidden])",
        ]
        .map(std::ffi::OsStr::new),
    );
    let report = browser_check(page, &args);
    let counts = &report["counts"];
    // DiscPow against granularity (line), category means and ρ per split (dots).
    assert_eq!(counts["svg.chart"], 3, "{report:#}");
    assert_eq!(counts["svg.chart-line"], 1);
    assert_eq!(counts["svg.chart-dot"], 2);
    assert_eq!(counts["#table2 table tbody tr"], 3);
    assert_eq!(counts["#splits table tbody tr"], 6);
    assert_eq!(counts["#question-table tbody tr"], n);
    // The question's <script> and <img> are text: one script (the report's), no image, and
    // the title is untouched.
    assert_eq!(counts["script"], 1);
    assert_eq!(counts["img"], 0);
    assert!(
        report["title"]
            .as_str()
            .unwrap()
            .starts_with("HieraRAG report")
    );
    // The filter keeps the one question that contains the text.
    assert_eq!(counts["#question-table tbody tr:not([hidden])"], 1);
    let png = std::fs::read(&screenshot).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
}

#[test]
fn a_factorial_run_gets_table_4_and_its_interaction_plot() {
    let dir = tempfile::tempdir().unwrap();
    let mut benchmark = Vec::new();
    let mut scores = Vec::new();
    for (lv, qc, mean, n) in [
        ("similar", "simple", 0.637, 8),
        ("similar", "complex", 0.672, 10),
        ("distant", "simple", 0.578, 10),
        ("distant", "complex", 0.578, 6),
    ] {
        for i in 0..n {
            let id = format!("rq3-{lv}-{qc}-{i}");
            benchmark.push(json!({
                "id": id, "question": "q?", "answer": "a.", "doc_ids": ["d"], "design": "rq3",
                "set": "lv×qc",
                "categories": [
                    {"dimension": "lv", "level": "coarse", "category": lv},
                    {"dimension": "qc", "level": "coarse", "category": qc}
                ],
                "persona": {}, "generator": {"backend": "openai", "model": "m", "params": {}},
                "candidates_considered": 1, "attempts": 1,
                "filter": {"enabled": false, "passed": 0, "judged": 0}
            }));
            let spread = if i % 2 == 0 { 0.03 } else { -0.03 };
            scores.push(json!({
                "id": id, "ap": 0.5, "ndcg_10": 0.5, "recall_10": 1.0, "rr": 0.5,
                "cs": mean + spread, "rouge1": 0.3, "bleu": 10.0, "refused": false
            }));
        }
    }
    write_lines(&dir.path().join("benchmark.jsonl"), &benchmark);
    write_lines(&dir.path().join("scores.jsonl"), &scores);
    let out = hierarag()
        .args(["analyze", "-q"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("Factorial lv×qc"), "{stdout}");
    assert!(stdout.contains("lv: distant − similar"), "{stdout}");
    assert!(stdout.contains("interaction F(1, 30)"), "{stdout}");
    let out = hierarag()
        .args(["report", "-q"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert_eq!(html.matches("class=\"chart chart-interaction\"").count(), 1);
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(md.contains("## Factorial lv×qc (Table 4)"), "{md}");
    assert!(md.contains("| lv = similar | 18 |"), "{md}");
}

#[test]
fn power_plans_an_rq2_run_and_prices_it() {
    let dir = tempfile::tempdir().unwrap();
    let n = write_run(dir.path());
    let out = hierarag()
        .args(["power", "--simulations", "100", "--study-bootstrap", "300"])
        .args([
            "--max-per-category",
            "3000",
            "--per-category",
            "40",
            "--seed",
            "9",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("qc fine vs medium"), "{stdout}");
    assert!(stdout.contains("plan.jsonl: not found"), "{stdout}");
    let report: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("power.json")).unwrap()).unwrap();
    assert_eq!(report["comparisons"], 2, "{report:#}");
    let steps = report["steps"].as_array().unwrap();
    let tests: Vec<(String, Value)> = steps
        .iter()
        .map(|s| {
            (
                s["level"].as_str().unwrap().to_owned(),
                s["against"].clone(),
            )
        })
        .collect();
    assert_eq!(
        tests,
        [
            ("coarse".to_owned(), Value::Null),
            ("medium".to_owned(), json!("coarse")),
            ("fine".to_owned(), json!("medium")),
        ]
    );
    let costs = report["costs"].as_array().unwrap();
    for step in steps {
        assert!(step["power_at_planned"].as_f64().is_some(), "{step:#}");
        let pilot = step["power_at_pilot"].as_f64().unwrap();
        // A size below what 80 % needs has less than 80 % power, and one above has more.
        if let Some(needed) = step["per_category"].as_u64() {
            assert_eq!(needed <= 12, pilot >= 0.8, "{step:#}");
            let categories =
                step["categories"].as_u64().unwrap() + step["against_categories"].as_u64().unwrap();
            assert_eq!(step["questions"].as_u64(), Some(needed * categories));
            let cost = costs
                .iter()
                .find(|c| {
                    c["size"] == "needed"
                        && c["level"] == step["level"]
                        && c["against"] == step["against"]
                })
                .unwrap();
            // No plan: one plan item a question; filter on by default; one answer a question.
            assert_eq!(cost["plan_items"].as_u64(), step["questions"].as_u64());
            assert_eq!(cost["filter_calls"], cost["generation_calls"]);
            assert_eq!(cost["answer_calls"].as_u64(), step["questions"].as_u64());
            assert!(
                cost.get("input_tokens").is_none(),
                "no corpus, no tokens: {cost:#}"
            );
        }
    }
    // The planned size is priced for every test: 40 a category.
    let planned: Vec<u64> = costs
        .iter()
        .filter(|c| c["size"] == "planned")
        .map(|c| c["questions"].as_u64().unwrap())
        .collect();
    assert_eq!(planned, [80, 240, 480]);
    // medium's gain over coarse is large: a handful of questions a category see it.
    assert!(
        steps[1]["per_category"].as_u64().unwrap() <= 12,
        "{:#}",
        steps[1]
    );
    // The same seed writes the same plan.
    let first = std::fs::read(dir.path().join("power.json")).unwrap();
    let again = hierarag()
        .args([
            "power",
            "-q",
            "--simulations",
            "100",
            "--study-bootstrap",
            "300",
        ])
        .args([
            "--max-per-category",
            "3000",
            "--per-category",
            "40",
            "--seed",
            "9",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(again.status.success());
    assert_eq!(std::fs::read(dir.path().join("power.json")).unwrap(), first);
    assert_eq!(n, 168);
    // Bad settings are input errors.
    let bad = hierarag()
        .args(["power", "--power", "1.5"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--power"));
}

/// A set whose questions carry two categories that are not crossed in every combination (an
/// imported benchmark can): the analysis treats it as factorial with empty cells, whose means
/// are written as `null`, and the report reads that analysis.json back.
#[test]
fn an_analysis_with_empty_factorial_cells_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mut benchmark = Vec::new();
    let mut scores = Vec::new();
    for (k, (coarse, medium)) in [
        ("simple", "single_fact"),
        ("simple", "multi_fact"),
        ("complex", "comparative"),
    ]
    .iter()
    .enumerate()
    {
        for i in 0..6 {
            let id = format!("q-{medium}-{i}");
            benchmark.push(json!({
                "id": id, "question": format!("Question {i}?"), "answer": "ref", "doc_ids": [],
                "design": "custom", "set": "qc",
                "categories": [{"dimension": "qc", "level": "coarse", "category": coarse},
                               {"dimension": "qc", "level": "medium", "category": medium}],
                "persona": {}
            }));
            scores.push(
                json!({"id": id, "ap": 0.5, "ndcg_10": 0.6, "recall_10": 1.0,
                "rr": 0.5, "cs": 0.4 + 0.1 * k as f64 + 0.01 * i as f64, "rouge1": 0.3,
                "bleu": 10.0, "refused": false}),
            );
        }
    }
    write_lines(&root.join("benchmark.jsonl"), &benchmark);
    write_lines(&root.join("scores.jsonl"), &scores);
    for args in [&["analyze", "-q"][..], &["report", "-q"]] {
        crate::support::ok(
            assert_cmd::Command::new(crate::support::BIN)
                .args(args)
                .arg(root),
        );
    }
    let analysis = std::fs::read_to_string(root.join("analysis.json")).unwrap();
    assert!(
        analysis.contains("\"cs\": null"),
        "an empty cell is written as null"
    );
    assert!(root.join("report.md").exists());
}
