//! `[[system]]` with `kind = "file"`: answers made elsewhere, in each format, matched to the
//! benchmark by id or question text, written to `systems/<name>/`, and what did not match
//! reported.

use std::path::Path;
use std::process::Command;

use crate::support::{BIN, write_lines};
use serde_json::{Value, json};

/// Four benchmark questions.
const QUESTIONS: [(&str, &str, &str); 4] = [
    ("q1", "Where is the Mackenzie River?", "doc-a"),
    ("q2", "Why is methanol called wood alcohol?", "doc-b"),
    ("q3", "What was Thailand formerly known as?", "doc-c"),
    ("q4", "How is karst formed?", "doc-d"),
];

fn write_benchmark(dir: &Path) {
    let records: Vec<Value> = QUESTIONS
        .iter()
        .map(|(id, question, doc)| {
            json!({
                "id": id, "question": question, "answer": "ref", "doc_ids": [doc],
                "design": "rq1", "set": "qc",
                "categories": [{"dimension": "qc", "level": "coarse", "category": "simple"}],
                "persona": {}, "generator": {"backend": "openai", "model": "m", "params": {}},
                "candidates_considered": 1, "attempts": 1,
                "filter": {"enabled": false, "passed": 1, "judged": 1}
            })
        })
        .collect();
    write_lines(&dir.join("benchmark.jsonl"), &records);
}

fn read_answers(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn answers_from_files_of_every_format_land_in_their_systems() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_benchmark(root);
    // Ragas EvaluationDataset JSONL: matched by question text, with context ids.
    write_lines(
        &root.join("ragas.jsonl"),
        &[
            json!({"user_input": QUESTIONS[0].1, "response": "In Canada.",
                   "retrieved_contexts": ["The Mackenzie River is in Canada."],
                   "retrieved_context_ids": ["doc-a"]}),
            json!({"user_input": QUESTIONS[1].1, "response": "It was made from wood.",
                   "retrieved_contexts": [], "retrieved_context_ids": ["doc-x", "doc-b"]}),
            json!({"user_input": "A question of another benchmark?", "response": "?"}),
        ],
    );
    // Ragas CSV as pandas writes list columns (Python literals).
    std::fs::write(
        root.join("ragas.csv"),
        "user_input,retrieved_contexts,response,retrieved_context_ids\n\
         Where is the Mackenzie River?,\"['It\\'s in \"\"Canada\"\".']\",In Canada.,['doc-a']\n\
         How is karst formed?,[],By dissolution.,\"['doc-d', 'doc-e']\"\n",
    )
    .unwrap();
    // DeepEval test cases, a JSON list.
    std::fs::write(
        root.join("deepeval.json"),
        serde_json::to_string_pretty(&json!([
            {"input": QUESTIONS[2].1, "actual_output": "Siam.", "retrieval_context": ["Siam"]},
            {"input": QUESTIONS[3].1, "actual_output": "I cannot answer from the context.",
             "retrieval_context": []},
        ]))
        .unwrap(),
    )
    .unwrap();
    // RAGChecker: matched by query_id, doc ids inside the contexts.
    std::fs::write(
        root.join("ragchecker.json"),
        serde_json::to_string(&json!({"results": [
            {"query_id": "q4", "query": "karst?", "gt_answer": "ref", "response": "Dissolution.",
             "retrieved_context": [{"doc_id": "doc-d", "text": "Karst is ..."}]},
            {"query_id": "q4", "query": "karst?", "gt_answer": "ref", "response": "Again.",
             "retrieved_context": []},
        ]}))
        .unwrap(),
    )
    .unwrap();
    // Any JSONL with a field map.
    write_lines(
        &root.join("mine.jsonl"),
        &[
            json!({"qid": "q1", "text": "Canada", "ctx": [{"doc_id": "doc-a", "text": "..."}]}),
            json!({"qid": "q2", "text": "Wood"}),
            json!({"qid": "q3", "text": "Siam"}),
            json!({"qid": "q4", "text": "Rock"}),
        ],
    );
    let config = root.join("run.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[[system]]
name = "ragas-jsonl"
kind = "file"
path = "{root}/ragas.jsonl"
format = "ragas"

[[system]]
name = "ragas-csv"
kind = "file"
path = "{root}/ragas.csv"
format = "ragas"

[[system]]
name = "deepeval"
kind = "file"
path = "{root}/deepeval.json"
format = "deepeval"

[[system]]
name = "ragchecker"
kind = "file"
path = "{root}/ragchecker.json"
format = "ragchecker"

[[system]]
name = "mine"
kind = "file"
path = "{root}/mine.jsonl"
format = "jsonl"
[system.fields]
id = "qid"
answer = "text"
contexts = "ctx"
"#,
            root = root.display()
        ),
    )
    .unwrap();
    let out = Command::new(BIN)
        .env_remove("RUST_LOG")
        .args(["answer", "--benchmark"])
        .arg(root.join("benchmark.jsonl"))
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Some systems leave questions unanswered: the command says which and exits 1.
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("answer:ragas-jsonl: 2 of 3 rows"),
        "{stderr}"
    );
    assert!(stderr.contains("1 row matches no question"), "{stderr}");
    assert!(
        stderr.contains("1 row answers a question an earlier row answered"),
        "{stderr}"
    );

    let answers = |name: &str| read_answers(&root.join("systems").join(name).join("answers.jsonl"));
    let ids = |answers: &[Value]| -> Vec<String> {
        answers
            .iter()
            .map(|a| a["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let ragas = answers("ragas-jsonl");
    assert_eq!(ids(&ragas), ["q1", "q2"]);
    assert_eq!(ragas[1]["doc_ids"], json!(["doc-x", "doc-b"]));
    assert_eq!(ragas[1]["retriever"], "file:ragas");
    assert_eq!(ragas[0]["llm"]["model"], "ragas-jsonl");
    let csv = answers("ragas-csv");
    assert_eq!(ids(&csv), ["q1", "q4"]);
    assert_eq!(csv[1]["doc_ids"], json!(["doc-d", "doc-e"]));
    let deepeval = answers("deepeval");
    assert_eq!(ids(&deepeval), ["q3", "q4"]);
    assert_eq!(deepeval[1]["refused"], true);
    let ragchecker = answers("ragchecker");
    assert_eq!(ids(&ragchecker), ["q4"]);
    assert_eq!(ragchecker[0]["answer"], "Dissolution.");
    assert_eq!(ragchecker[0]["doc_ids"], json!(["doc-d"]));
    let mine = answers("mine");
    assert_eq!(ids(&mine), ["q1", "q2", "q3", "q4"]);
    assert_eq!(mine[0]["doc_ids"], json!(["doc-a"]));
    assert!(!root.join("systems/mine/answer.failures.jsonl").exists());
    // The questions a file does not answer are the system's failures.
    let failures = read_answers(&root.join("systems/ragchecker/answer.failures.jsonl"));
    let missing: Vec<&str> = failures
        .iter()
        .map(|f| f["item_id"].as_str().unwrap())
        .collect();
    assert_eq!(missing, ["q1", "q2", "q3"]);

    // One system only, and a name the config lacks.
    let one = Command::new(BIN)
        .args(["answer", "--system", "mine", "--benchmark"])
        .arg(root.join("benchmark.jsonl"))
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert!(
        one.status.success(),
        "{}",
        String::from_utf8_lossy(&one.stderr)
    );
    let missing = Command::new(BIN)
        .args(["answer", "--system", "nope", "--benchmark"])
        .arg(root.join("benchmark.jsonl"))
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(
        stderr.contains("no such [[system]]") && stderr.contains("ragas-csv"),
        "{stderr}"
    );
}

#[test]
fn a_malformed_answers_file_names_the_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_benchmark(root);
    write_lines(
        &root.join("bad.jsonl"),
        &[
            json!({"user_input": QUESTIONS[0].1, "response": "ok"}),
            json!({"user_input": QUESTIONS[1].1, "response": ["not", "text"]}),
        ],
    );
    let config = root.join("run.toml");
    std::fs::write(
        &config,
        format!(
            "[[system]]\nname = \"bad\"\nkind = \"file\"\npath = \"{}\"\nformat = \"ragas\"\n",
            root.join("bad.jsonl").display()
        ),
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["answer", "--benchmark"])
        .arg(root.join("benchmark.jsonl"))
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("system bad"), "{stderr}");
    assert!(
        stderr.contains("bad.jsonl line 2, field `response`"),
        "{stderr}"
    );
}
