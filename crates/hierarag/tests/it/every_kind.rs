//! One `hierarag run` answered by a system of every kind — builtin, http, command and file —
//! each scored, analysed and side by side in the report. The LLM and the embeddings are a
//! local mock (Python's standard library, OpenAI's wire format), the http system is
//! `examples/systems/keyword_rag_service.py` and the command system
//! `examples/systems/keyword_rag.py`, both over the run's corpus.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{BIN, python, workspace_root, write_lines};
use serde_json::{Value, json};

/// An OpenAI-compatible mock: chat completions answer the generator with two candidates about
/// a word of the first document, the filter with verdicts that pass, and anything else with a
/// sentence; embeddings are small vectors made from the text. The port goes to `port`.
const MOCK_LLM: &str = r#"
import json, os, sys, re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
root = sys.argv[1]
def completion(text):
    return {"id": "x", "object": "chat.completion", "model": "mock",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path.endswith("/embeddings"):
            data = [{"object": "embedding", "index": i,
                     "embedding": [1.0 + len(t) % 7, 1.0 + sum(c in "aeiou" for c in t) % 5, 1.0]}
                    for i, t in enumerate(body["input"])]
            return self.send({"object": "list", "data": data, "model": body["model"]})
        system = body["messages"][0]["content"]
        user = body["messages"][-1]["content"]
        if "strict reviewer" in system:
            n = user.count("Candidate ")
            verdicts = [{"candidate": c, "faithful": True, "fits_category": True,
                         "standalone": True, "reason": ""} for c in range(1, n + 1)]
            return self.send(completion(json.dumps({"verdicts": verdicts})))
        if "question-answer pairs" in system:
            text = user.split('number="1">', 1)[-1]
            words = sorted(set(re.findall(r"[A-Z][a-z]{5,}", text))) or ["Nothing"]
            candidates = [{"question": f"What is known about {w}?", "answer": f"{w} is described."}
                          for w in words[:2]]
            return self.send(completion(json.dumps({"candidates": candidates})))
        self.send(completion("An answer from the first passage."))
    def send(self, reply):
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def log_message(self, *args):
        pass
server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(os.path.join(root, "llm-port.tmp"), "w") as f:
    f.write(str(server.server_port))
os.rename(os.path.join(root, "llm-port.tmp"), os.path.join(root, "llm-port"))
server.serve_forever()
"#;

/// A child process, killed when dropped.
struct Background(Child);

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_for(path: &Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            return text;
        }
        assert!(Instant::now() < deadline, "{} never came", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The port a server started with `--port 0` bound, from the first line it prints on
/// stderr (`... http://127.0.0.1:PORT/...`); the rest of its stderr is drained in the
/// background. The server holds the port from the moment it binds it: no other process can
/// take it between a probe and the server's start.
fn bound_port(child: &mut Child) -> u16 {
    use std::io::BufRead;
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    let after = line
        .split("127.0.0.1:")
        .nth(1)
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().unwrap()
}

/// Twelve documents of about seventy words, each about a named topic.
fn write_corpus(path: &Path) {
    let topics = [
        "Mackenzie",
        "Methanol",
        "Thailand",
        "Karst",
        "Lighthouse",
        "Honeybee",
        "Glacier",
        "Sourdough",
        "Chessboard",
        "Volcano",
        "Telescope",
        "Papyrus",
    ];
    let documents: Vec<Value> = topics
        .iter()
        .enumerate()
        .map(|(i, topic)| {
            let sentence = format!(
                "{topic} is the subject of this article, which describes where {topic} is \
found, how {topic} formed over many centuries, and why scholars of {topic} disagree."
            );
            json!({"id": format!("doc-{i:02}"), "text": format!("{sentence} {sentence} {sentence}")})
        })
        .collect();
    write_lines(path, &documents);
}

#[test]
fn a_run_with_a_system_of_every_kind_scores_and_reports_each() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let corpus = root.join("corpus.jsonl");
    write_corpus(&corpus);
    std::fs::write(root.join("mock_llm.py"), MOCK_LLM).unwrap();
    let _llm = Background(
        Command::new(python())
            .arg(root.join("mock_llm.py"))
            .arg(root)
            .stdin(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let llm_port = wait_for(&root.join("llm-port"));
    let examples = workspace_root().join("examples/systems");
    let mut service = Background(
        Command::new(python())
            .arg(examples.join("keyword_rag_service.py"))
            .arg(&corpus)
            .args(["--port", "0"])
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // It prints its address once it is listening.
    let service_port = bound_port(&mut service.0);
    // Answers made elsewhere: context texts only, which the run finds in its index.
    let last_week: Vec<Value> = ["rq1-qc-0001", "rq1-at-0001", "rq1-lv-0001", "rq1-ph-0001"]
        .iter()
        .map(|id| {
            json!({"qid": id, "text": "It is found in the north.",
                   "passages": ["Glacier is the subject of this article, which describes where \
Glacier is found"]})
        })
        .collect();
    write_lines(&root.join("last_week.jsonl"), &last_week);
    let python = python();
    let config = format!(
        r#"[run]
dir = "{run}"
seed = 7

[corpus]
inputs = ["{corpus}"]

[design]
kind = "rq1"
per_dimension = 1

[plan]
min_words = 20

[answer]
top_k = 3

[llm]
backend = "openai"
model = "mock"
base_urls = ["http://127.0.0.1:{llm_port}/v1"]

[embeddings]
backend = "openai"
model = "mock-embed"
base_urls = ["http://127.0.0.1:{llm_port}/v1"]

[[system]]
name = "bm25"
kind = "builtin"

[[system]]
name = "service"
kind = "http"
url = "http://127.0.0.1:{service_port}/ask"
body = {{ query = "{{question}}", k = 3 }}
contexts = "/sources"
context_doc_id = "/metadata/doc_id"

[[system]]
name = "program"
kind = "command"
command = ["{python}", "{command}", "{corpus}"]

[[system]]
name = "last-week"
kind = "file"
path = "{last_week}"
format = "jsonl"
[system.fields]
id = "qid"
answer = "text"
contexts = "passages"
"#,
        run = root.join("run").display(),
        corpus = corpus.display(),
        python = python.display(),
        command = examples.join("keyword_rag.py").display(),
        last_week = root.join("last_week.jsonl").display(),
    );
    std::fs::write(root.join("run.toml"), config).unwrap();

    let out = Command::new(BIN)
        .env_remove("RUST_LOG")
        .arg("run")
        .arg(root.join("run.toml"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let run = root.join("run");
    let benchmark = std::fs::read_to_string(run.join("benchmark.jsonl")).unwrap();
    assert_eq!(benchmark.lines().count(), 4, "{benchmark}");
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(run.join("manifest.json")).unwrap()).unwrap();
    for (system, retriever) in [
        ("bm25", "bm25"),
        ("service", "http"),
        ("program", "command"),
        ("last-week", "file:jsonl"),
    ] {
        let folder = run.join("systems").join(system);
        let answers = std::fs::read_to_string(folder.join("answers.jsonl")).unwrap();
        let scores = std::fs::read_to_string(folder.join("scores.jsonl")).unwrap();
        assert_eq!(answers.lines().count(), 4, "{system}: {answers}");
        assert_eq!(scores.lines().count(), 4, "{system}: {scores}");
        for (answer, score) in answers.lines().zip(scores.lines()) {
            let answer: Value = serde_json::from_str(answer).unwrap();
            let score: Value = serde_json::from_str(score).unwrap();
            assert_eq!(answer["retriever"], retriever, "{system}");
            // Every system names its documents here, so every retrieval metric is a number.
            assert!(
                score["ap"].is_f64() && score["cs"].is_f64(),
                "{system}: {score}"
            );
        }
        assert!(folder.join("analysis.json").exists(), "{system}");
        assert_eq!(
            manifest["stages"][format!("answer:{system}")]["failed"],
            0,
            "{system}"
        );
    }
    // The file's contexts were found in the index by their text.
    let imported = std::fs::read_to_string(run.join("systems/last-week/answers.jsonl")).unwrap();
    let first: Value = serde_json::from_str(imported.lines().next().unwrap()).unwrap();
    assert_eq!(first["doc_ids"], json!(["doc-06"]), "{first}");
    assert_eq!(first["doc_ids_found"], json!(["contains"]));
    assert!(
        run.join("systems/service/latency.jsonl").exists()
            && run.join("systems/program/command.log").exists()
    );
    let md = std::fs::read_to_string(run.join("report.md")).unwrap();
    for row in [
        "| `bm25` | builtin (bm25) | 4 | 4 |",
        "| `service` | http | 4 | 4 |",
        "| `program` | command | 4 | 4 |",
        "| `last-week` | file (jsonl) | 4 | 4 |",
    ] {
        assert!(md.contains(row), "{row}\n{md}");
    }
    assert!(stdout.contains("systems (all questions)"), "{stdout}");
}
