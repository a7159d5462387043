//! `hierarag items` on a run directory written by hand: six systems of rising skill answer 192
//! questions in four categories of one dimension, among them planted saturated, failed and reversed
//! questions. The flags find them, the discrimination equals scipy's `pearsonr` run on the
//! run's own scores files, the core set's held-out check holds on every system and core.jsonl
//! holds the benchmark's own lines; `annotate sample --from-items` rates the failed questions
//! first; the report gets the items section. With two systems the command says what it cannot
//! estimate.

use std::path::Path;
use std::process::Command as Process;

use crate::support::{BIN, ok, python, write_lines};
use assert_cmd::Command;
use serde_json::{Value, json};

const SKILL: [f64; 6] = [0.35, 0.42, 0.49, 0.56, 0.63, 0.70];
const SYSTEMS: [&str; 6] = ["s0", "s1", "s2", "s3", "s4", "s5"];
const CATEGORIES: [&str; 4] = ["single_fact", "multi_fact", "cross_section", "comparative"];

fn hierarag() -> Command {
    let mut command = Command::new(BIN);
    command.env_remove("RUST_LOG");
    command
}

/// A deterministic wobble in [-0.1, 0.1].
fn wobble(a: usize, b: usize) -> f64 {
    ((a * 7919 + b * 104_729) % 201) as f64 / 1000.0 - 0.1
}

/// 48 questions per medium category (as an rq2 benchmark has them); of each category's, number
/// 0 is saturated, number 1 failed by every system and number 2 reversed.
fn write_run(root: &Path, systems: usize) {
    let mut benchmark = Vec::new();
    let mut scores = vec![Vec::new(); systems];
    for (k, medium) in CATEGORIES.iter().enumerate() {
        for i in 0..48 {
            let id = format!("q-{medium}-{i:02}");
            benchmark.push(json!({
                "id": id, "question": format!("Question {i} about {medium}?"),
                "answer": "ref", "doc_ids": [], "design": "rq2", "set": "qc/medium",
                "categories": [{"dimension": "qc", "level": "medium", "category": medium}],
                "persona": {}, "generator": {"backend": "openai", "model": "m", "params": {}},
                "candidates_considered": 1, "attempts": 1,
                "filter": {"enabled": false, "passed": 1, "judged": 1}
            }));
            for (s, rows) in scores.iter_mut().enumerate() {
                let cs: f64 = match i {
                    0 => 0.9 + wobble(s, k * 48 + i).abs() / 2.0,
                    1 => 0.1 + wobble(s, k * 48 + i) / 2.0,
                    2 => 1.05 - SKILL[s] + wobble(s, k * 48 + i) / 4.0,
                    _ => SKILL[s] + wobble(k, i) + wobble(s, k * 48 + i),
                };
                rows.push(json!({
                    "id": id, "ap": 0.5, "ndcg_10": 0.6, "recall_10": 1.0, "rr": 0.5,
                    "cs": (cs.clamp(0.0, 1.0) * 1e6).round() / 1e6,
                    "rouge1": 0.3, "bleu": 10.0, "refused": false
                }));
            }
        }
    }
    std::fs::create_dir_all(root).unwrap();
    write_lines(&root.join("benchmark.jsonl"), &benchmark);
    let configs: Vec<Value> = SYSTEMS[..systems]
        .iter()
        .map(|name| json!({"name": name, "kind": "file", "format": "jsonl"}))
        .collect();
    std::fs::write(
        root.join("manifest.json"),
        json!({"tool": "hierarag", "version": "test", "seed": 7, "config": {"systems": configs}})
            .to_string(),
    )
    .unwrap();
    for (name, rows) in SYSTEMS.iter().zip(&scores) {
        let dir = root.join("systems").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        write_lines(&dir.join("scores.jsonl"), rows);
    }
}

/// scipy's pearsonr of each question against the mean of the others, across the systems.
const REFERENCE: &str = r#"
import json, sys
import numpy as np, scipy.stats
root = sys.argv[1]
names = sys.argv[2:]
bench = [json.loads(line)["id"] for line in open(f"{root}/benchmark.jsonl")]
rows = []
for name in names:
    s = {r["id"]: r["cs"] for r in map(json.loads, open(f"{root}/systems/{name}/scores.jsonl"))}
    rows.append([s[i] for i in bench])
x = np.array(rows)
out = {}
for q, qid in enumerate(bench):
    rest = (x.sum(axis=1) - x[:, q]) / (x.shape[1] - 1)
    out[qid] = float(scipy.stats.pearsonr(x[:, q], rest).statistic)
print(json.dumps(out))
"#;

#[test]
fn items_finds_planted_questions_and_a_core_set_that_holds_on_held_out_systems() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_run(root, 6);
    let (stdout, _) = ok(hierarag()
        .args(["items", "-q", "--tolerance", "0.04"])
        .arg(root));
    for needle in [
        "192 questions, 6 systems, metric cs",
        "core set:",
        "held out",
    ] {
        assert!(stdout.contains(needle), "{needle} not in {stdout}");
    }
    let items: Value =
        serde_json::from_slice(&std::fs::read(root.join("items.json")).unwrap()).unwrap();
    let flagged = |flag: &str| -> Vec<String> {
        items["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| {
                i["flags"]
                    .as_array()
                    .is_some_and(|f| f.contains(&json!(flag)))
            })
            .map(|i| i["id"].as_str().unwrap()[2..].to_owned())
            .collect()
    };
    let planted =
        |i: usize| -> Vec<String> { CATEGORIES.iter().map(|m| format!("{m}-{i:02}")).collect() };
    assert_eq!(flagged("saturated"), planted(0));
    assert_eq!(flagged("failed"), planted(1));
    assert_eq!(flagged("negative"), planted(2));

    // The discrimination is scipy's.
    let reference = crate::support::json_of(
        Process::new(python())
            .args(["-c", REFERENCE])
            .arg(root)
            .args(SYSTEMS),
        None,
    );
    for item in items["items"].as_array().unwrap() {
        let expected = reference[item["id"].as_str().unwrap()].as_f64().unwrap();
        let actual = item["discrimination"].as_f64().unwrap();
        assert!(
            (actual - expected).abs() < 1e-12,
            "{item}: scipy {expected}"
        );
    }

    // Six systems: a 2PL fit, none for the saturated and failed questions.
    for item in items["items"].as_array().unwrap() {
        let flagged = item.get("flags").is_some_and(|f| {
            f.as_array()
                .unwrap()
                .iter()
                .any(|f| f == "saturated" || f == "failed")
        });
        assert_eq!(item.get("irt").is_none(), flagged, "{item}");
    }

    // The core set: smaller than the benchmark, and it holds on every held-out system.
    let core = &items["core"];
    let ids = core["ids"].as_array().unwrap();
    assert!(ids.len() < 150, "{core:#}");
    let held = &core["held_out"];
    assert_eq!(held["within"], 6, "{held:#}");
    let benchmark = std::fs::read_to_string(root.join("benchmark.jsonl")).unwrap();
    let core_lines = std::fs::read_to_string(root.join("core.jsonl")).unwrap();
    assert_eq!(core_lines.lines().count(), ids.len());
    assert!(
        core_lines
            .lines()
            .all(|line| benchmark.lines().any(|b| b == line))
    );

    // `annotate sample --from-items` rates the questions every system fails first.
    let corpus = root.join("corpus.jsonl");
    write_lines(&corpus, &[json!({"id": "doc-0", "text": "A text."})]);
    ok(hierarag()
        .args(["annotate", "sample", "-q", "--from-items", "--n", "20"])
        .arg(root)
        .arg("--corpus")
        .arg(&corpus));
    let mut sampled = hierarag_annotate::Store::open(&root.join("annotations.sqlite"))
        .unwrap()
        .items()
        .unwrap();
    sampled.sort_by_key(|i| i.position);
    let first: Vec<String> = sampled[..4]
        .iter()
        .map(|i| i.item_id[2..].to_owned())
        .collect();
    assert_eq!(first, planted(1));

    // The report shows the items section.
    ok(hierarag().args(["analyze", "-q"]).arg(root));
    ok(hierarag().args(["report", "-q"]).arg(root));
    let md = std::fs::read_to_string(root.join("report.md")).unwrap();
    for needle in [
        "## Which questions carry the signal",
        "### Informative questions per category",
        "### Flagged questions",
        "| `q-single_fact-01` | failed by every system |",
        "### The core set",
        "| 2PL a | 2PL b |",
        "held-out system",
    ] {
        assert!(md.contains(needle), "{needle} not in {md}");
    }
}

#[test]
fn with_two_systems_items_says_what_it_cannot_estimate() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_run(root, 2);
    let (_, stderr) = ok(hierarag().args(["items"]).arg(root));
    for needle in [
        "the discrimination of a question needs three or more systems",
        "cannot be checked on a system it was not chosen with",
    ] {
        assert!(stderr.contains(needle), "{needle} not in {stderr}");
    }
    let items: Value =
        serde_json::from_slice(&std::fs::read(root.join("items.json")).unwrap()).unwrap();
    assert!(items["core"].get("held_out").is_none());
}
