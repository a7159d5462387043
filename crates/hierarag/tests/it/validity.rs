//! `hierarag run` with a `[human]` table (examples/human/run.toml: 179 questions people wrote
//! about 60 Wikipedia paragraphs) against the tests' mock LLM and embeddings server: the
//! human-written benchmark is imported, tagged, answered and scored by every system, and
//! validity.json sets it beside the generated one; `hierarag validity` computes the same bytes
//! again. A human benchmark in another language than the corpus is refused.

use std::path::Path;

use assert_cmd::Command;
use serde_json::Value;

use crate::support::{BIN, browser_counts, ok, workspace_root};

/// The example config with its models on the mock and its files at absolute paths.
fn example_config(dir: &Path, questions: &Path) -> std::path::PathBuf {
    let root = workspace_root();
    let url = crate::run::start_mock(0);
    let example = std::fs::read_to_string(root.join("examples/human/run.toml")).unwrap();
    let config = example
        .replace(
            "[llm]\nbackend = \"embedded\"",
            &format!("[llm]\nbackend = \"openai\"\nmodel = \"mock-1\"\nbase_urls = [\"{url}\"]"),
        )
        .replace(
            "[embeddings]\nbackend = \"embedded\"",
            &format!(
                "[embeddings]\nbackend = \"openai\"\nmodel = \"mock-embed\"\nbase_urls = [\"{url}\"]"
            ),
        )
        .replace(
            "\"examples/human/corpus.jsonl\"",
            &format!("{:?}", root.join("examples/human/corpus.jsonl").display().to_string()),
        )
        .replace(
            "\"examples/human/questions.jsonl\"",
            &format!("{:?}", questions.display().to_string()),
        );
    assert!(
        config.matches("mock-").count() == 2,
        "the model tables moved"
    );
    let path = dir.join("human.toml");
    std::fs::write(&path, config).unwrap();
    path
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Runs the example, its config text changed by `edit`, into `dir/run`; returns the run
/// directory and stderr.
fn run_example(dir: &Path, edit: impl Fn(&str) -> String) -> (std::path::PathBuf, String) {
    let run_dir = dir.join("run");
    let questions = workspace_root().join("examples/human/questions.jsonl");
    let config = example_config(dir, &questions);
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, edit(&text)).unwrap();
    let (_, stderr) = ok(Command::new(BIN)
        .env_remove("RUST_LOG")
        .arg("run")
        .arg(&config)
        .arg("--dir")
        .arg(&run_dir));
    (run_dir, stderr)
}

#[test]
fn a_run_with_a_human_benchmark_writes_validity_json() {
    let dir = tempfile::tempdir().unwrap();
    let (run_dir, stderr) = run_example(dir.path(), str::to_owned);
    assert!(
        stderr.contains("imported 179 human-written questions"),
        "{stderr}"
    );
    assert!(stderr.contains("validity: "), "{stderr}");
    let human = run_dir.join("human");
    for system in ["bm25-top3", "bm25-top10", "dense"] {
        let scores =
            std::fs::read_to_string(human.join("systems").join(system).join("scores.jsonl"))
                .unwrap();
        assert_eq!(scores.lines().count(), 179, "{system}");
    }
    assert_eq!(
        std::fs::read_to_string(human.join("tags.jsonl"))
            .unwrap()
            .lines()
            .count(),
        179
    );
    let validity = read_json(&run_dir.join("validity.json"));
    assert_eq!(validity["human_questions"], 179);
    assert_eq!(validity["synthetic_questions"], 32);
    assert_eq!(
        validity["systems"],
        serde_json::json!(["bm25-top3", "bm25-top10", "dense"])
    );
    // The coarse level of each of the design's four dimensions, on both sides.
    let coverage = validity["coverage"].as_array().unwrap();
    assert_eq!(coverage.len(), 4, "{coverage:?}");
    for level in coverage {
        assert_eq!(level["level"], "coarse");
        let human_total: u64 = level["categories"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["human"].as_u64().unwrap())
            .sum();
        assert_eq!(human_total, 179, "{level}");
    }
    // Every property has its overall row: the people's questions name their paragraph.
    let overall: Vec<&str> = validity["properties"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p.get("category").is_none())
        .map(|p| p["property"].as_str().unwrap())
        .collect();
    assert_eq!(
        overall,
        [
            "words",
            "overlap",
            "gold_rank",
            "answer_words",
            "refusal_expected"
        ]
    );
    let decisions = &validity["decisions"];
    assert_eq!(decisions["pairs"].as_array().unwrap().len(), 3);
    let transfer = decisions["transfer"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&transfer));
    assert!(!validity["verdict"].as_array().unwrap().is_empty());
    // The command computes the same file again, byte for byte.
    let before = std::fs::read(run_dir.join("validity.json")).unwrap();
    let (stdout, _) = ok(Command::new(BIN).arg("validity").arg(&run_dir));
    assert_eq!(
        std::fs::read(run_dir.join("validity.json")).unwrap(),
        before
    );
    assert!(stdout.contains("pairwise decisions transfer"), "{stdout}");
}

#[test]
fn without_relevant_documents_the_parts_that_need_them_are_said() {
    let dir = tempfile::tempdir().unwrap();
    let (run_dir, stderr) = run_example(dir.path(), |text| {
        text.replace("doc_ids = \"doc_ids\"\n", "")
    });
    assert!(
        stderr.contains("(179 name no document: no retrieval metrics for them)"),
        "{stderr}"
    );
    let validity = read_json(&run_dir.join("validity.json"));
    let overall: Vec<&str> = validity["properties"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p.get("category").is_none())
        .map(|p| p["property"].as_str().unwrap())
        .collect();
    assert_eq!(overall, ["words", "answer_words", "refusal_expected"]);
    let notes: Vec<&str> = validity["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    for said in [
        "word overlap with the relevant document: not compared (32 synthetic and 0 human \
questions have it: it needs relevant documents)",
        "ndcg_10: no per-category agreement for bm25-top3, bm25-top10, dense",
    ] {
        assert!(
            notes.iter().any(|n| n.starts_with(said)),
            "{said}\n{notes:#?}"
        );
    }
}

#[test]
fn without_reference_answers_only_the_retrieval_metrics_are_compared() {
    let dir = tempfile::tempdir().unwrap();
    let (run_dir, _) = run_example(dir.path(), |text| {
        text.replace("answer = \"answer\"\n", "answer = \"\"\n")
    });
    let validity = read_json(&run_dir.join("validity.json"));
    let notes = validity["notes"].to_string();
    assert!(
        notes.contains("the human questions have no reference answers"),
        "{notes}"
    );
    // The run's metric is CS: no decision and no granularity finding can be made on it.
    assert!(validity.get("decisions").is_none(), "{validity:#}");
    assert_eq!(validity["granularity"], serde_json::json!([]));
    let agreement: Vec<&str> = validity["agreement"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["metric"].as_str().unwrap())
        .collect();
    assert!(!agreement.is_empty() && agreement.iter().all(|m| *m == "ndcg_10"));
    // On nDCG@10 the systems are compared.
    ok(Command::new(BIN)
        .arg("validity")
        .arg(&run_dir)
        .args(["--metric", "ndcg_10"]));
    let validity = read_json(&run_dir.join("validity.json"));
    assert_eq!(validity["decisions"]["metric"], "ndcg_10");
    assert_eq!(validity["decisions"]["pairs"].as_array().unwrap().len(), 3);
}

#[test]
#[ignore = "needs Chromium (scripts/ensure-chromium.sh) and playwright (.venv-oracles)"]
fn the_report_has_the_validity_section() {
    let dir = tempfile::tempdir().unwrap();
    let (run_dir, _) = run_example(dir.path(), str::to_owned);
    let validity = read_json(&run_dir.join("validity.json"));
    // In headless Chromium: the verdict, and the decisions, mix, properties, granularity and
    // prediction tables.
    let counts = browser_counts(
        &run_dir.join("report.html"),
        &["#validity li", "#validity table", "#validity table tr"],
    );
    assert!(
        counts["#validity li"].as_u64().unwrap()
            >= validity["verdict"].as_array().unwrap().len() as u64,
        "{counts:#}"
    );
    assert_eq!(counts["#validity table"], 5, "{counts:#}");
    let markdown = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
    assert!(markdown.contains("Does the benchmark hold on people's questions?"));
}

#[test]
fn a_human_benchmark_in_another_language_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let questions = dir.path().join("korean.jsonl");
    // Enough letters (300) for the script check to decide.
    let lines: Vec<String> = (0..20)
        .map(|i| {
            serde_json::json!({
                "id": format!("k{i}"),
                "question": "금강산은 어느 나라에 있는 산입니까?",
                "answer": "북한",
                "doc_ids": ["Super_Bowl_50#0"],
            })
            .to_string()
        })
        .collect();
    std::fs::write(&questions, lines.join("\n") + "\n").unwrap();
    let config = example_config(dir.path(), &questions);
    let out = Command::new(BIN)
        .env_remove("RUST_LOG")
        .arg("run")
        .arg(&config)
        .arg("--dir")
        .arg(dir.path().join("run"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("its questions are not in the corpus language, English"),
        "{stderr}"
    );
    assert!(!dir.path().join("run/human/benchmark.jsonl").exists());
}

/// The estimate counts a CSV `[human]` file's questions as records, as the import reads them,
/// when cells hold line breaks: the file is written by Python's csv module, every answer on two
/// lines.
#[test]
fn the_estimate_counts_a_csv_human_benchmarks_records_not_its_lines() {
    let dir = tempfile::tempdir().unwrap();
    let csv_path = dir.path().join("questions.csv");
    let script = r#"
import csv, json, sys
with open(sys.argv[2], "w", newline="") as out:
    writer = csv.writer(out)
    writer.writerow(["id", "question", "answer", "doc_ids"])
    for line in open(sys.argv[1]):
        q = json.loads(line)
        writer.writerow([q["id"], q["question"], q["answer"] + "\n(from the paragraph)",
                         "|".join(q["doc_ids"])])
"#;
    let status = std::process::Command::new(crate::support::python())
        .args(["-c", script])
        .arg(workspace_root().join("examples/human/questions.jsonl"))
        .arg(&csv_path)
        .status()
        .unwrap();
    assert!(status.success());
    let text = std::fs::read_to_string(&csv_path).unwrap();
    assert!(text.lines().count() > 2 * 179, "the answers span two lines");
    let config = example_config(dir.path(), &csv_path);
    let (stdout, _) = ok(Command::new(BIN)
        .env_remove("RUST_LOG")
        .args(["run", "--dry-run"])
        .arg(&config));
    assert!(
        stdout.contains("the 179 human-written questions of [human]"),
        "{stdout}"
    );
}

/// Issue 56, point 5: the `[human]` file is checked before the first stage (a broken one stops
/// the run before anything is indexed), its sha256 is recorded at import, and a changed file
/// is imported again, said, with validity.json on its questions.
#[test]
fn a_changed_human_file_is_imported_again_and_a_broken_one_stops_the_run_first() {
    let dir = tempfile::tempdir().unwrap();
    let all =
        std::fs::read_to_string(workspace_root().join("examples/human/questions.jsonl")).unwrap();
    let questions = dir.path().join("questions.jsonl");
    let first: String = all.lines().take(100).map(|l| format!("{l}\n")).collect();
    std::fs::write(&questions, &first).unwrap();
    let config = example_config(dir.path(), &questions);
    let run = |run_dir: &Path| {
        Command::new(BIN)
            .env_remove("RUST_LOG")
            .arg("run")
            .arg(&config)
            .arg("--dir")
            .arg(run_dir)
            .output()
            .unwrap()
    };
    let run_dir = dir.path().join("run");
    let stderr = crate::run::assert_ran(&run(&run_dir));
    assert!(
        stderr.contains("imported 100 human-written questions"),
        "{stderr}"
    );
    assert_eq!(
        read_json(&run_dir.join("validity.json"))["human_questions"],
        100
    );

    // Corrected and longer, under the same name.
    std::fs::write(&questions, &all).unwrap();
    let stderr = crate::run::assert_ran(&run(&run_dir));
    assert!(
        stderr.contains("is not the one imported") && stderr.contains("(100 questions"),
        "{stderr}"
    );
    assert!(
        stderr.contains("imported 179 human-written questions"),
        "{stderr}"
    );
    assert_eq!(
        read_json(&run_dir.join("validity.json"))["human_questions"],
        179
    );
    // The same file again: nothing imported.
    let stderr = crate::run::assert_ran(&run(&run_dir));
    assert!(!stderr.contains("imported 179"), "{stderr}");

    // A broken file: the run stops before its first stage, naming the file and line.
    std::fs::write(&questions, format!("{first}{{\"question\": cut\n")).unwrap();
    let fresh = dir.path().join("fresh");
    let out = run(&fresh);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("[human] file") && stderr.contains("line 101"),
        "{stderr}"
    );
    assert!(!fresh.join("index").exists(), "a stage ran: {stderr}");
}

/// Issue 56, point 8: the `--dry-run` estimate counts a `[human]` JSON list's questions, not its
/// lines (a pretty-printed list has many lines a question).
#[test]
fn the_estimate_counts_a_json_list_human_benchmarks_questions_not_its_lines() {
    let dir = tempfile::tempdir().unwrap();
    let questions: Vec<Value> =
        std::fs::read_to_string(workspace_root().join("examples/human/questions.jsonl"))
            .unwrap()
            .lines()
            .take(40)
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
    let list = dir.path().join("questions.json");
    std::fs::write(&list, serde_json::to_string_pretty(&questions).unwrap()).unwrap();
    assert!(std::fs::read_to_string(&list).unwrap().lines().count() > 200);
    let config = example_config(dir.path(), &list);
    let (stdout, _) = ok(Command::new(BIN)
        .env_remove("RUST_LOG")
        .args(["run", "--dry-run"])
        .arg(&config));
    assert!(
        stdout.contains("the 40 human-written questions of [human]"),
        "{stdout}"
    );
}
