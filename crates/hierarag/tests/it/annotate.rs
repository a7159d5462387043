//! `hierarag annotate sample|annotators|export|import|agreement` on a small run directory
//! written by hand: benchmark.jsonl, a JSONL corpus, and a manifest whose config names it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::{FORMULAS, python_csv_rows, write_lines};
use assert_cmd::cargo::CommandCargoExt;
use hierarag_annotate::{Rating, Store};
use serde_json::{Value, json};

const LEVELS: [(&str, &[&str]); 3] = [
    ("coarse", &["simple", "complex"]),
    (
        "medium",
        &["single_fact", "multi_fact", "cross_section", "comparative"],
    ),
    (
        "fine",
        &[
            "extractive_span",
            "entity_extraction",
            "fact_aggregation",
            "single_hop_inference",
            "multi_hop_reasoning",
            "causal_reasoning",
            "comparative_synthesis_entities",
            "comparative_synthesis_concepts",
        ],
    ),
];
const PER_CATEGORY: usize = 3;

/// A run directory (rq2 over qc, 42 questions) and its corpus, outside the run directory.
fn write_run(root: &Path, with_corpus_config: bool) -> PathBuf {
    let dir = root.join("run");
    std::fs::create_dir_all(&dir).unwrap();
    let mut benchmark = Vec::new();
    let mut corpus = Vec::new();
    for (level, categories) in LEVELS {
        for category in categories {
            for i in 0..PER_CATEGORY {
                let n = benchmark.len();
                let doc = format!("doc-{n}");
                benchmark.push(json!({
                    "id": format!("rq2-qc-{level}-{category}-{i}"),
                    "question": format!("Question {i} about {category}?"),
                    "answer": format!("Reference answer {i}."),
                    "doc_ids": [doc], "design": "rq2", "set": format!("qc/{level}"),
                    "categories": [{"dimension": "qc", "level": level, "category": category}],
                    "persona": {"expertise": "novice"},
                    "generator": {"backend": "openai", "model": "m", "params": {}},
                    "candidates_considered": 1, "attempts": 1,
                    "filter": {"enabled": false, "passed": 1, "judged": 1}
                }));
                corpus.push(json!({"id": doc, "text": format!("The text of document {n}.")}));
            }
        }
    }
    corpus.push(json!({"id": "unused", "text": "Never sampled."}));
    write_lines(&dir.join("benchmark.jsonl"), &benchmark);
    let corpus_path = root.join("corpus.jsonl");
    write_lines(&corpus_path, &corpus);
    let config = if with_corpus_config {
        json!({"corpus": {"inputs": [corpus_path.to_string_lossy()], "format": null,
                          "id_field": "id", "text_field": "text", "on_error": "fail"}})
    } else {
        json!({})
    };
    let manifest = json!({"tool": "hierarag", "version": "0.1.0", "config": config,
                          "seed": 42, "stages": {}});
    std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
    dir
}

fn hierarag(args: &[&str], dir: &Path) -> Output {
    let mut command = Command::cargo_bin("hierarag").unwrap();
    command.env_remove("RUST_LOG").arg("annotate");
    let (first, rest) = args.split_first().unwrap();
    command.arg(first).arg(dir).args(rest);
    command.output().unwrap()
}

fn ok(output: &Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

fn failed(output: &Output) -> String {
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn store(dir: &Path) -> Store {
    Store::open(&dir.join("annotations.sqlite")).unwrap()
}

#[test]
fn sample_rate_by_csv_and_compute_agreement() {
    let root = tempfile::tempdir().unwrap();
    let dir = write_run(root.path(), true);

    let out = ok(&hierarag(
        &[
            "sample",
            "--n",
            "14",
            "--category-subset",
            "6",
            "--seed",
            "3",
        ],
        &dir,
    ));
    // 6 coarse, 12 medium, 24 fine of 42 → quotas 2, 4, 8.
    assert!(out.contains("stratum"), "{out}");
    let rows: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert!(rows.contains(&vec!["qc/coarse", "6", "2", "1"]), "{out}");
    assert!(rows.contains(&vec!["qc/medium", "12", "4", "2"]), "{out}");
    assert!(rows.contains(&vec!["qc/fine", "24", "8", "3"]), "{out}");
    assert!(rows.contains(&vec!["total", "42", "14", "6"]), "{out}");
    let items = store(&dir).items().unwrap();
    assert_eq!(items.len(), 14);
    for item in &items {
        assert_eq!(item.documents.len(), 1);
        assert!(item.documents[0].1.starts_with("The text of document"));
    }
    let meta = store(&dir).meta().unwrap();
    assert!(meta.contains(&("seed".to_string(), "3".to_string())));

    // A second sample needs --overwrite.
    let err = failed(&hierarag(&["sample", "--n", "14"], &dir));
    assert!(err.contains("already exists"), "{err}");

    let out = ok(&hierarag(
        &["annotators", "--add", "alice", "--add", "bob"],
        &dir,
    ));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[0].starts_with("alice") && lines[0].contains("/a/"),
        "{out}"
    );
    let token = lines[0].split_whitespace().nth(1).unwrap();
    assert_eq!(token.len(), 32);
    assert_eq!(
        store(&dir).annotator_by_token(token).unwrap().unwrap().name,
        "alice"
    );

    // Export: every item × annotator, unrated.
    ok(&hierarag(&["export"], &dir));
    let exported = std::fs::read_to_string(dir.join("ratings.csv")).unwrap();
    assert!(exported.starts_with(
        "item_id,annotator,correctness,hallucination,answerability,category_pick,note,question,\
         reference,answer,choices\n"
    ));
    assert_eq!(exported.lines().count(), 1 + 14 * 2);

    // Ratings as a spreadsheet user would fill them in: both annotators pick the intended
    // category, except bob once.
    let mut csv = String::from(
        "item_id,annotator,correctness,hallucination,answerability,category_pick,note\n",
    );
    let mut first_task = true;
    for item in &items {
        for (annotator, correctness) in [("alice", 3), ("bob", 2)] {
            let pick = if !item.category_task {
                String::new()
            } else if annotator == "bob" && first_task {
                first_task = false;
                item.choices
                    .iter()
                    .find(|c| **c != item.category)
                    .unwrap()
                    .clone()
            } else {
                item.category.clone()
            };
            let hallucination = item.position % 2;
            csv.push_str(&format!(
                "{},{annotator},{correctness},{hallucination},3,{pick},\n",
                item.item_id
            ));
        }
    }
    let csv_path = root.path().join("filled.csv");
    std::fs::write(&csv_path, &csv).unwrap();
    let import = hierarag(&["import", "--file", csv_path.to_str().unwrap()], &dir);
    ok(&import);
    assert!(String::from_utf8_lossy(&import.stderr).contains("imported 28 rating(s)"));
    assert_eq!(store(&dir).ratings().unwrap().len(), 28);

    // A bad file: every problem is named by row and column, and nothing is written.
    let bad = format!(
        "item_id,annotator,correctness,hallucination,answerability,category_pick,note\n\
         {id},alice,7,,,,\nnope,alice,1,,,,\n{id},carol,1,,,,\n",
        id = items[0].item_id
    );
    let bad_path = root.path().join("bad.csv");
    std::fs::write(&bad_path, bad).unwrap();
    let err = failed(&hierarag(
        &["import", "--file", bad_path.to_str().unwrap()],
        &dir,
    ));
    assert!(
        err.contains("row 2, column correctness: 7 is out of range 0–3"),
        "{err}"
    );
    assert!(
        err.contains("row 3, column item_id: no item `nope`"),
        "{err}"
    );
    assert!(
        err.contains("row 4, column annotator: unknown annotator `carol`"),
        "{err}"
    );
    assert!(err.contains("3 problem(s); nothing was imported"), "{err}");
    assert_eq!(store(&dir).ratings().unwrap().len(), 28);

    let out = ok(&hierarag(&["agreement"], &dir));
    assert!(out.contains("Rating scales (Fleiss' κ)"), "{out}");
    assert!(
        out.contains("Category agreement (6 items with picks)"),
        "{out}"
    );
    assert!(out.contains("alice – bob"), "{out}");
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("agreement.json")).unwrap())
            .unwrap();
    assert_eq!(written["n_items"], 14);
    assert_eq!(written["annotators"], json!(["alice", "bob"]));
    // Correctness: alice always 3, bob always 2 → every item disagrees: κ = −1.
    assert_eq!(written["scales"][0]["kappa"], json!(-1.0));
    assert_eq!(written["category"]["per_annotator"][0]["exact"]["hits"], 6);
    assert_eq!(written["category"]["per_annotator"][1]["exact"]["hits"], 5);
    assert_eq!(written["quality"]["acceptable"]["count"], 14);
    let json_out = ok(&hierarag(&["agreement", "--json"], &dir));
    let printed: Value = serde_json::from_str(&json_out).unwrap();
    assert_eq!(printed, written);

    // The analysis carries the human validation (whether it is made before or after the
    // agreement), and the report shows it.
    let bare = |args: &[&str]| {
        let mut command = Command::cargo_bin("hierarag").unwrap();
        command.env_remove("RUST_LOG").args(args).arg(&dir);
        ok(&command.output().unwrap())
    };
    bare(&["analyze", "-q"]);
    let analysis: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("analysis.json")).unwrap()).unwrap();
    assert_eq!(analysis["human_validation"], written);
    // Agreement after the analysis: the coherence link is attempted (no scores, so no splits).
    ok(&hierarag(&["agreement"], &dir));
    let rewritten: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("agreement.json")).unwrap())
            .unwrap();
    assert_eq!(rewritten["category"]["coherence"]["without_split"], 6);
    let analysis: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("analysis.json")).unwrap()).unwrap();
    assert_eq!(analysis["human_validation"], rewritten);
    bare(&["report", "-q"]);
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("## Human validation"), "{md}");
    assert!(
        md.contains("| correctness | 0–3 | 2 | 14 | -1.000 |"),
        "{md}"
    );
    assert!(md.contains("Blind category picks (6 items)"), "{md}");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("id=\"human-validation\""));
}

#[test]
fn formula_injection_export_neutralises_cells_and_import_restores_them_byte_for_byte() {
    let root = tempfile::tempdir().unwrap();
    let dir = write_run(root.path(), true);
    // Questions and reference answers that begin like formulas.
    let benchmark = std::fs::read_to_string(dir.join("benchmark.jsonl")).unwrap();
    let records: Vec<Value> = benchmark
        .lines()
        .enumerate()
        .map(|(n, line)| {
            let mut record: Value = serde_json::from_str(line).unwrap();
            record["question"] = json!(FORMULAS[n % FORMULAS.len()]);
            record["answer"] = json!(FORMULAS[(n + 1) % FORMULAS.len()]);
            record
        })
        .collect();
    write_lines(&dir.join("benchmark.jsonl"), &records);
    ok(&hierarag(&["sample", "--n", "14", "--seed", "3"], &dir));
    ok(&hierarag(
        &["annotators", "--add", "=alice", "--add", "@bob"],
        &dir,
    ));
    // Notes that begin like formulas, one of each per annotator.
    let items = store(&dir).items().unwrap();
    let mut ratings: Vec<Rating> = Vec::new();
    for (n, item) in items.iter().enumerate() {
        for (a, annotator) in ["=alice", "@bob"].into_iter().enumerate() {
            ratings.push(Rating {
                item_id: item.item_id.clone(),
                annotator: annotator.into(),
                correctness: Some(a as u8 + 1),
                hallucination: None,
                answerability: None,
                category_pick: None,
                note: Some(FORMULAS[(n + a) % FORMULAS.len()].to_string()),
                updated_unix_s: 1,
            });
        }
    }
    store(&dir).save_ratings(&ratings).unwrap();

    ok(&hierarag(&["export"], &dir));
    let csv_path = dir.join("ratings.csv");
    let rows = python_csv_rows(&csv_path);
    assert_eq!(rows.len(), items.len() * 2);
    for row in &rows {
        let item = items.iter().find(|i| i.item_id == row["item_id"]).unwrap();
        let rating = ratings
            .iter()
            .find(|r| r.item_id == item.item_id && format!("'{}", r.annotator) == row["annotator"])
            .unwrap();
        for (column, text) in [
            ("question", &item.question),
            ("reference", &item.reference),
            ("note", rating.note.as_ref().unwrap()),
        ] {
            assert!(FORMULAS.contains(&text.as_str()), "{column}: {text:?}");
            assert_eq!(row[column], format!("'{text}"), "{column}");
        }
        assert_eq!(row["correctness"], rating.correctness.unwrap().to_string());
    }

    // Notes changed in the store, then the exported file imported: every note comes back as
    // it was, byte for byte.
    let changed: Vec<Rating> = ratings
        .iter()
        .map(|r| Rating {
            note: Some("changed".into()),
            ..r.clone()
        })
        .collect();
    store(&dir).save_ratings(&changed).unwrap();
    let import = hierarag(&["import", "--file", csv_path.to_str().unwrap()], &dir);
    ok(&import);
    assert!(String::from_utf8_lossy(&import.stderr).contains("imported 28 rating(s)"));
    let key = |r: &Rating| (r.item_id.clone(), r.annotator.clone());
    let mut imported = store(&dir).ratings().unwrap();
    imported.sort_by_key(key);
    let mut expected = ratings.clone();
    expected.sort_by_key(key);
    for (got, want) in imported.iter().zip(&expected) {
        assert_eq!(
            Rating {
                updated_unix_s: want.updated_unix_s,
                ..got.clone()
            },
            *want
        );
    }
    assert_eq!(imported.len(), expected.len());
}

#[test]
fn the_same_seed_gives_the_same_store_and_overwrite_replaces_it() {
    let root = tempfile::tempdir().unwrap();
    let dir = write_run(root.path(), true);
    let args = [
        "sample",
        "--n",
        "10",
        "--category-subset",
        "4",
        "--seed",
        "11",
    ];
    ok(&hierarag(&args, &dir));
    let first = store(&dir).items().unwrap();
    ok(&hierarag(&[&args[..], &["--overwrite"]].concat(), &dir));
    assert_eq!(store(&dir).items().unwrap(), first);
    ok(&hierarag(
        &["sample", "--n", "10", "--seed", "12", "--overwrite"],
        &dir,
    ));
    assert_ne!(store(&dir).items().unwrap(), first);
}

#[test]
fn the_corpus_comes_from_the_manifest_or_the_command_line() {
    let root = tempfile::tempdir().unwrap();
    let dir = write_run(root.path(), false);
    let err = failed(&hierarag(&["sample", "--n", "5"], &dir));
    assert!(
        err.contains("records no [corpus] config; pass --corpus"),
        "{err}"
    );

    // A corpus without the sampled documents: the missing ids are named.
    let other = root.path().join("other.jsonl");
    std::fs::write(&other, "{\"id\": \"x\", \"text\": \"y\"}\n").unwrap();
    let err = failed(&hierarag(
        &["sample", "--n", "5", "--corpus", other.to_str().unwrap()],
        &dir,
    ));
    assert!(
        err.contains("5 document(s) of the sampled questions are not in the corpus"),
        "{err}"
    );
    assert!(!dir.join("annotations.sqlite").exists());

    let corpus = root.path().join("corpus.jsonl");
    ok(&hierarag(
        &["sample", "--n", "5", "--corpus", corpus.to_str().unwrap()],
        &dir,
    ));
    assert_eq!(store(&dir).items().unwrap().len(), 5);
}

#[test]
fn commands_on_a_run_without_a_store_say_to_sample_first() {
    let root = tempfile::tempdir().unwrap();
    let dir = write_run(root.path(), true);
    for command in ["annotators", "export", "agreement"] {
        let err = failed(&hierarag(&[command], &dir));
        assert!(
            err.contains("run `hierarag annotate sample` first"),
            "{command}: {err}"
        );
    }
}

#[test]
fn annotate_sample_overwrite_while_serve_runs_is_refused_and_the_ratings_kept() {
    use std::io::BufRead;
    let root = tempfile::tempdir().unwrap();
    let dir = write_run(root.path(), true);
    ok(&hierarag(&["sample", "--n", "10", "--seed", "3"], &dir));
    let mut serve = Command::cargo_bin("hierarag").unwrap();
    let mut server = serve
        .env_remove("RUST_LOG")
        .args(["annotate", "serve"])
        .arg(&dir)
        .args(["--port", "0", "--annotator", "alice"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The link on stdout comes once the server holds the store.
    let mut link = String::new();
    std::io::BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut link)
        .unwrap();
    assert!(link.starts_with("alice\thttp://"), "{link}");
    let before = store(&dir).items().unwrap();

    let err = failed(&hierarag(
        &["sample", "--n", "10", "--seed", "4", "--overwrite"],
        &dir,
    ));
    assert!(
        err.contains(&format!("in use by process {} (", server.id())),
        "{err}"
    );
    assert!(err.contains("annotate serve"), "{err}");
    assert_eq!(store(&dir).items().unwrap(), before);
    assert_eq!(store(&dir).annotators().unwrap().len(), 1);

    // Once the server is gone (killed, not asked), sampling again goes through.
    server.kill().unwrap();
    server.wait().unwrap();
    ok(&hierarag(
        &["sample", "--n", "10", "--seed", "4", "--overwrite"],
        &dir,
    ));
    assert_ne!(store(&dir).items().unwrap(), before);
}
