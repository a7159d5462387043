//! `hierarag compare` on run directories written by hand: its statistics against scipy,
//! statsmodels and pingouin run on the same scores files, several runs sharing one benchmark
//! (and refusing two), `--systems`, the report's comparison section in headless Chromium, and
//! `annotate sample --from-compare`. The Chromium check is an `#[ignore]`d test of its own, run
//! by `bash scripts/test.sh` (`cargo test -- --include-ignored`).

use std::path::{Path, PathBuf};
use std::process::Command as Process;

use crate::support::{BIN, browser_counts, ok, python, write_lines};
use assert_cmd::Command;
use hierarag_annotate::Store;
use serde_json::{Value, json};

const LEVELS: [(&str, &[&str]); 2] = [
    ("coarse", &["simple", "complex"]),
    (
        "medium",
        &["single_fact", "multi_fact", "cross_section", "comparative"],
    ),
];
const PER_CATEGORY: usize = 10;

fn hierarag() -> Command {
    let mut command = Command::new(BIN);
    command.env_remove("RUST_LOG");
    command
}

/// A deterministic CS in [0, 1] for question `i` of category `k` and system `s`: system 1 gains
/// on even categories, system 2 is system 0 with a little noise; question 3 of every category
/// is hard for everyone.
fn cs(s: usize, k: usize, i: usize) -> f64 {
    let wobble = ((i * 37 + k * 11) % 17) as f64 / 100.0;
    let base = 0.5 + 0.03 * k as f64 + wobble;
    let value = match s {
        1 if k.is_multiple_of(2) => base + 0.06 + ((i * 7) % 5) as f64 / 200.0,
        1 => base + ((i * 3) % 4) as f64 / 400.0 - 0.004,
        2 => base + ((i * 5 + k) % 7) as f64 / 300.0 - 0.01,
        _ => base,
    };
    let value = if i == 3 { value - 0.35 } else { value };
    (value * 1e6).round() / 1e6
}

/// benchmark.jsonl, a corpus, and `systems` (name, index into `cs`) as named systems with a
/// manifest, or as the run's own system when `named` is false.
fn write_run(root: &Path, systems: &[(&str, usize)], named: bool) -> usize {
    let mut benchmark = Vec::new();
    let mut corpus = Vec::new();
    let mut scores = vec![Vec::new(); systems.len()];
    for (level, categories) in LEVELS {
        for (k, category) in categories.iter().enumerate() {
            for i in 0..PER_CATEGORY {
                let id = format!("rq2-qc-{level}-{category}-{i:02}");
                let doc = format!("doc-{}", benchmark.len());
                corpus.push(json!({"id": doc, "text": format!("The text of {doc}.")}));
                benchmark.push(json!({
                    "id": id, "question": format!("Question {i} about {category}?"),
                    "answer": "ref", "doc_ids": [doc], "design": "rq2", "set": format!("qc/{level}"),
                    "categories": [{"dimension": "qc", "level": level, "category": category}],
                    "persona": {}, "generator": {"backend": "openai", "model": "m", "params": {}},
                    "candidates_considered": 1, "attempts": 1,
                    "filter": {"enabled": false, "passed": 1, "judged": 1}
                }));
                for (slot, (_, s)) in systems.iter().enumerate() {
                    scores[slot].push(json!({
                        "id": id, "ap": 0.5, "ndcg_10": 0.6, "recall_10": 1.0, "rr": 0.5,
                        "cs": cs(*s, k, i), "rouge1": 0.3, "bleu": 10.0, "refused": false
                    }));
                }
            }
        }
    }
    std::fs::create_dir_all(root).unwrap();
    write_lines(&root.join("benchmark.jsonl"), &benchmark);
    write_lines(&root.join("corpus.jsonl"), &corpus);
    if named {
        let configs: Vec<Value> = systems
            .iter()
            .map(|(name, _)| json!({"name": name, "kind": "file", "format": "jsonl"}))
            .collect();
        std::fs::write(
            root.join("manifest.json"),
            json!({"tool": "hierarag", "version": "test", "seed": 0,
                   "config": {"systems": configs, "corpus": {"inputs": [root.join("corpus.jsonl")]}}})
            .to_string(),
        )
        .unwrap();
        for ((name, _), rows) in systems.iter().zip(&scores) {
            let dir = root.join("systems").join(name);
            std::fs::create_dir_all(&dir).unwrap();
            write_lines(&dir.join("scores.jsonl"), rows);
        }
    } else {
        write_lines(&root.join("scores.jsonl"), &scores[0]);
    }
    benchmark.len()
}

fn compare_json(args: &[&str], dirs: &[&Path]) -> Value {
    let mut command = hierarag();
    command.args(["compare", "-q", "--json"]).args(args);
    for dir in dirs {
        command.arg(dir);
    }
    let (stdout, _) = ok(&mut command);
    serde_json::from_str(&stdout).unwrap()
}

/// What scipy, statsmodels and pingouin compute from the run's own scores files.
const REFERENCE: &str = r#"
import json, sys
import numpy as np, pandas as pd, pingouin, scipy.stats
from statsmodels.stats.multitest import multipletests
root, a, b = sys.argv[1:4]
def scores(name):
    return {r["id"]: r["cs"] for r in map(json.loads, open(f"{root}/systems/{name}/scores.jsonl"))}
bench = [json.loads(line) for line in open(f"{root}/benchmark.jsonl")]
sa, sb = scores(a), scores(b)
ids = [r["id"] for r in bench]
x, y = np.array([sa[i] for i in ids]), np.array([sb[i] for i in ids])
out = {"t_p": scipy.stats.ttest_rel(y, x).pvalue, "w_p": scipy.stats.wilcoxon(y, x).pvalue}
medium = [r for r in bench if r["set"] == "qc/medium"]
cats = []
for r in medium:
    if r["categories"][0]["category"] not in cats:
        cats.append(r["categories"][0]["category"])
pt, pw = [], []
for c in cats:
    q = [r["id"] for r in medium if r["categories"][0]["category"] == c]
    pt.append(scipy.stats.ttest_rel([sb[i] for i in q], [sa[i] for i in q]).pvalue)
    pw.append(scipy.stats.wilcoxon([sb[i] for i in q], [sa[i] for i in q]).pvalue)
out["medium_t_holm"] = list(multipletests(pt, method="holm")[1])
out["medium_w_holm"] = list(multipletests(pw, method="holm")[1])
rows = []
for r in medium:
    for name, s in ((a, sa), (b, sb)):
        rows.append({"q": r["id"], "system": name, "category": r["categories"][0]["category"], "y": s[r["id"]]})
aov = pingouin.mixed_anova(data=pd.DataFrame(rows), dv="y", within="system", subject="q", between="category")
inter = aov[aov["Source"] == "Interaction"].iloc[0]
out["interaction"] = {"f": float(inter["F"]), "p": float(inter["p_unc"]), "np2": float(inter["np2"])}
print(json.dumps(out))
"#;

fn close(ours: &Value, theirs: &Value, what: &str) {
    let (x, y) = (ours.as_f64().unwrap(), theirs.as_f64().unwrap());
    assert!(
        (x - y).abs() <= 1e-9 * y.abs().max(1e-3),
        "{what}: {x} against {y}"
    );
}

#[test]
fn compare_equals_scipy_statsmodels_and_pingouin_on_the_runs_own_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let n = write_run(root, &[("bm25", 0), ("hybrid", 1)], true);
    let comparison = compare_json(&["--bootstrap", "300"], &[root]);
    assert_eq!(comparison["common"], n);
    assert!(root.join("comparison.json").exists());
    let reference = crate::support::json_of(
        Process::new(python())
            .arg("-c")
            .arg(REFERENCE)
            .arg(root)
            .args(["bm25", "hybrid"]),
        None,
    );

    let cs = comparison["overall"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "cs")
        .unwrap();
    let pair = &cs["pairs"][0];
    assert_eq!(
        (pair["a"].as_str(), pair["b"].as_str()),
        (Some("bm25"), Some("hybrid"))
    );
    close(&pair["diff"]["t_p"], &reference["t_p"], "overall t p");
    close(
        &pair["diff"]["w_p"],
        &reference["w_p"],
        "overall Wilcoxon p",
    );

    let medium = comparison["levels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["level"] == "medium")
        .unwrap();
    let metric = medium["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "cs")
        .unwrap();
    let categories = metric["pairs"][0]["categories"].as_array().unwrap();
    assert_eq!(categories.len(), 4);
    for (k, category) in categories.iter().enumerate() {
        close(
            &category["t_p_holm"],
            &reference["medium_t_holm"][k],
            "Holm t",
        );
        close(
            &category["w_p_holm"],
            &reference["medium_w_holm"][k],
            "Holm W",
        );
    }
    let interaction = &metric["anova"]["interaction"];
    for key in ["f", "p", "np2"] {
        close(
            &interaction[key],
            &reference["interaction"][key],
            &format!("interaction {key}"),
        );
    }
    // hybrid gains on half of medium's categories: the interaction is real there.
    assert!(interaction["p"].as_f64().unwrap() < 0.001);
    let separating = &comparison["dimensions"][0]["separating"];
    assert_eq!(separating["significant"], true, "{separating:#}");
    // Question 3 of every category is hard for both systems (CS below 0.5).
    let unanswered = comparison["unanswered"].as_array().unwrap();
    assert!(!unanswered.is_empty());
    assert!(
        unanswered
            .iter()
            .all(|u| u["id"].as_str().unwrap().ends_with("-03")),
        "{unanswered:#?}"
    );
    assert!(
        unanswered[0]["question"]
            .as_str()
            .unwrap()
            .starts_with("Question 3")
    );

    // The human summary on stdout names the pair and the separating sentence.
    let (stdout, _) = ok(hierarag().args(["compare", "-q"]).arg(root));
    assert!(stdout.contains("hybrid − bm25"), "{stdout}");
    assert!(stdout.contains("qc at "), "{stdout}");
}

#[test]
fn several_runs_on_one_benchmark_are_compared_and_different_benchmarks_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second, other) = (
        dir.path().join("baseline"),
        dir.path().join("tuned"),
        dir.path().join("other"),
    );
    write_run(&first, &[("main", 0)], false);
    write_run(&second, &[("main", 1)], false);
    let comparison = compare_json(&[], &[&first, &second]);
    let names: Vec<&str> = comparison["systems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["baseline", "tuned"]);
    assert!(first.join("comparison.json").exists());

    // A benchmark with one question changed is another benchmark.
    write_run(&other, &[("main", 1)], false);
    let text = std::fs::read_to_string(other.join("benchmark.jsonl")).unwrap();
    std::fs::write(
        other.join("benchmark.jsonl"),
        text.replacen("Question 0 about", "Question zero about", 1),
    )
    .unwrap();
    let out = hierarag()
        .arg("compare")
        .arg(&first)
        .arg(&other)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("are different benchmarks"), "{stderr}");

    // One run of one system has nothing to compare.
    let out = hierarag().arg("compare").arg(&first).output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("two or more systems"), "{stderr}");
}

#[test]
fn systems_picks_and_orders_the_systems_and_names_the_known_ones() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_run(root, &[("bm25", 0), ("hybrid", 1), ("dense", 2)], true);
    let comparison = compare_json(&["--systems", "dense,bm25", "--bootstrap", "50"], &[root]);
    let pair = &comparison["overall"][0]["pairs"][0];
    assert_eq!(
        (pair["a"].as_str(), pair["b"].as_str()),
        (Some("dense"), Some("bm25"))
    );
    let out = hierarag()
        .args(["compare", "--systems", "bm25,sparse"])
        .arg(root)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no system named \"sparse\"") && stderr.contains("bm25, hybrid, dense"),
        "{stderr}"
    );
    // Three systems: rank changes per category.
    let comparison = compare_json(&["--bootstrap", "50"], &[root]);
    let ranks = &comparison["levels"][1]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "cs")
        .unwrap()["ranks"];
    assert_eq!(ranks["best"], "hybrid", "{ranks:#}");
    assert_eq!(ranks["categories"].as_array().unwrap().len(), 4);
}

/// A run of two systems in `root`, compared, analysed and reported.
fn write_compared_and_reported_run(root: &Path) {
    write_run(root, &[("bm25", 0), ("hybrid", 1)], true);
    ok(hierarag()
        .args(["compare", "-q", "--bootstrap", "200"])
        .arg(root));
    ok(hierarag().args(["analyze", "-q"]).arg(root));
    ok(hierarag().args(["report", "-q"]).arg(root));
}

#[test]
fn the_report_gets_a_comparison_section_with_its_charts() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_compared_and_reported_run(root);
    let md = std::fs::read_to_string(root.join("report.md")).unwrap();
    for needle in [
        "## Comparison of systems",
        "### Which granularity separates your systems (CS)",
        "### qc medium (set qc/medium): CS per category",
        "| `single_fact` |",
        "### Questions no system answers",
    ] {
        assert!(md.contains(needle), "{needle} not in {md}");
    }
}

#[test]
#[ignore = "needs Chromium (scripts/ensure-chromium.sh) and playwright (.venv-oracles)"]
fn the_comparison_section_has_its_charts_in_headless_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_compared_and_reported_run(root);
    let counts = browser_counts(
        &root.join("report.html"),
        &[
            "#comparison svg.chart-dot",
            "#comparison svg.chart-interaction",
            "#comparison table",
        ],
    );
    // One forest and one interaction plot per level; the overall, two level and the
    // unanswered tables.
    assert_eq!(counts["#comparison svg.chart-dot"], 2, "{counts:#}");
    assert_eq!(counts["#comparison svg.chart-interaction"], 2);
    assert_eq!(counts["#comparison table"], 4);
}

#[test]
fn annotate_sample_from_compare_puts_the_unanswered_questions_first() {
    let dir = tempfile::tempdir().unwrap();
    let root: PathBuf = dir.path().to_path_buf();
    write_run(&root, &[("bm25", 0), ("hybrid", 1)], true);
    let out = hierarag()
        .args(["annotate", "sample", "--from-compare"])
        .arg(&root)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("run `hierarag compare` first"), "{stderr}");

    let comparison = compare_json(&["--bootstrap", "50"], &[&root]);
    let unanswered: Vec<String> = comparison["unanswered"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(unanswered.len(), 6, "question 3 of each category");
    ok(hierarag()
        .args(["annotate", "sample", "-q", "--from-compare", "--n", "20"])
        .arg(&root));
    let items = Store::open(&root.join("annotations.sqlite"))
        .unwrap()
        .items()
        .unwrap();
    assert_eq!(items.len(), 20);
    let mut by_position = items.clone();
    by_position.sort_by_key(|i| i.position);
    let first: Vec<&str> = by_position[..6]
        .iter()
        .map(|i| i.item_id.as_str())
        .collect();
    assert_eq!(first, unanswered);
    assert!(
        by_position[6..]
            .iter()
            .all(|i| !unanswered.contains(&i.item_id))
    );
}

/// With ppi.json beside it (written here by hand, as `annotate agreement` writes it from rated
/// answers), `compare` prints the judge's paired differences corrected by people's ratings.
#[test]
fn compare_prints_the_judges_differences_corrected_by_people() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_run(root, &[("bm25", 0), ("hybrid", 1)], true);
    let interval = |mean: f64| json!({"mean": mean, "ci": [mean - 0.1, mean + 0.1], "se": 0.05});
    let row = json!({
        "n_rated": 40, "n_judged": 80,
        "ppi": {"estimate": -0.125, "ci": [-0.2, -0.05], "se": 0.038, "lambda": 0.6,
                "effective_n_rated": 61.0, "excludes_zero": true},
        "judge_only": interval(-0.2), "people_only": interval(-0.1)
    });
    let ppi = json!({"alpha": 0.05, "notes": [], "scales": [{
        "scale": "correctness", "max": 3, "systems": [],
        "differences": [{"system_a": "bm25", "system_b": "hybrid", "overall": row,
                         "categories": []}]
    }]});
    std::fs::write(root.join("ppi.json"), ppi.to_string()).unwrap();
    let (stdout, _) = ok(hierarag()
        .args(["compare", "-q", "--bootstrap", "50"])
        .arg(root));
    assert!(
        stdout.contains(
            "correctness    bm25 − hybrid: -0.125 [-0.200, -0.050], excludes 0 (judge only \
-0.200, 40 rated)"
        ),
        "{stdout}"
    );
}
