//! `[[system]]` with `kind = "http"` against a deterministic local service (Python's standard
//! library, started by the test on 127.0.0.1): killed and resumed to the same bytes; faults
//! retried or recorded and retried by a rerun; a reply that does not fit the mapping stopping
//! the system; a bearer token that reaches the service and no file; config errors.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{BIN, count_lines, kill_once_written, python, write_numbered_benchmark};
use serde_json::{Value, json};

/// A service answering `POST /ask` `{"query", "qid"}` with `{"answer", "sources": [{"text",
/// "metadata": {"doc_id"}}]}` after a short random wait. `faults.json` (optional) maps a
/// question id to the replies of its first requests: `429`, `500`, `slow`, `cut` (a body cut
/// short), `garbage` (not JSON), `nofield` (no `answer`), then normal replies. Each request's
/// id is appended to `requests.log`. With `EXPECT_TOKEN` set, a request without
/// `Authorization: Bearer <EXPECT_TOKEN>` gets 401. The port goes to `port`.
const SERVICE: &str = r#"
import json, os, random, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
root = sys.argv[1]
faults_path = os.path.join(root, "faults.json")
faults = json.load(open(faults_path)) if os.path.exists(faults_path) else {}
token = os.environ.get("EXPECT_TOKEN")
lock = threading.Lock()
class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        qid = body["qid"]
        with lock:
            with open(os.path.join(root, "requests.log"), "a") as log:
                log.write(qid + "\n")
            pending = faults.get(qid, [])
            fault = pending.pop(0) if pending else None
        if token is not None and self.headers.get("Authorization") != "Bearer " + token:
            return self.send(401, b'{"error": "bad token"}')
        time.sleep(random.uniform(0.002, 0.02))
        if fault == "429":
            return self.send(429, b'{"error": "slow down"}', [("Retry-After", "0")])
        if fault == "500":
            return self.send(500, b'{"error": "boom"}')
        if fault == "slow":
            time.sleep(3)
        if fault == "cut":
            self.send_response(200)
            self.send_header("Content-Length", "200")
            self.end_headers()
            self.wfile.write(b'{"answer": "hal')
            self.wfile.flush()
            self.close_connection = True
            return
        if fault == "garbage":
            return self.send(200, b"<html>oops</html>")
        n = int(qid[1:]) % 7
        reply = {"answer": "answer to " + body["query"],
                 "sources": [{"text": "text of doc-%d" % n, "metadata": {"doc_id": "doc-%d" % n}}]}
        if fault == "nofield":
            reply = {"result": reply["answer"]}
        self.send(200, json.dumps(reply).encode())
    def send(self, status, data, headers=()):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
    def log_message(self, *args):
        pass
class Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # a client killed mid-request
server = Server(("127.0.0.1", 0), Handler)
with open(os.path.join(root, "port.tmp"), "w") as f:
    f.write(str(server.server_port))
os.rename(os.path.join(root, "port.tmp"), os.path.join(root, "port"))
server.serve_forever()
"#;

/// The service, stopped when dropped.
struct Service {
    child: Child,
    url: String,
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_service(root: &Path, token: Option<&str>) -> Service {
    let _ = std::fs::remove_file(root.join("port"));
    std::fs::write(root.join("service.py"), SERVICE).unwrap();
    let mut command = Command::new(python());
    command.arg(root.join("service.py")).arg(root);
    match token {
        Some(token) => command.env("EXPECT_TOKEN", token),
        None => command.env_remove("EXPECT_TOKEN"),
    };
    let child = command.stdin(Stdio::null()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let port = loop {
        if let Ok(port) = std::fs::read_to_string(root.join("port")) {
            break port;
        }
        assert!(Instant::now() < deadline, "the service did not start");
        std::thread::sleep(Duration::from_millis(20));
    };
    Service {
        child,
        url: format!("http://127.0.0.1:{port}/ask"),
    }
}

/// The config of system `prod` at `url`; the keys of `extra` replace the shared ones (TOML
/// forbids a key twice).
fn write_config(root: &Path, url: &str, extra: &str) -> PathBuf {
    let config = root.join("run.toml");
    let replaced: Vec<&str> = extra
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    let shared = format!(
        r#"[[system]]
name = "prod"
kind = "http"
url = "{url}"
body = {{ query = "{{question}}", qid = "{{id}}", k = 3 }}
answer = "/answer"
contexts = "/sources"
context_text = "/text"
context_doc_id = "/metadata/doc_id"
concurrency = 8
backoff_s = 0.01
max_backoff_s = 0.05
"#
    );
    let kept: Vec<&str> = shared
        .lines()
        .filter(|line| !replaced.contains(&line.split_whitespace().next().unwrap_or("")))
        .collect();
    std::fs::write(&config, format!("{}\n{extra}", kept.join("\n"))).unwrap();
    config
}

fn answer(root: &Path, out: &Path) -> Command {
    let mut command = Command::new(BIN);
    command
        .env_remove("RUST_LOG")
        .env_remove("RAG_TOKEN")
        .args(["answer", "-q", "--benchmark"])
        .arg(root.join("benchmark.jsonl"))
        .arg("--config")
        .arg(root.join("run.toml"))
        .arg("--out")
        .arg(out);
    command
}

fn requests(root: &Path) -> Vec<String> {
    std::fs::File::open(root.join("requests.log"))
        .map(|f| {
            std::io::BufReader::new(f)
                .lines()
                .map(Result::unwrap)
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_killed_http_system_resumes_to_the_same_answers() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_numbered_benchmark(root, 240);
    let service = start_service(root, None);
    write_config(root, &service.url, "");
    let straight = root.join("straight");
    let out = answer(root, &straight).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answers = straight.join("systems/prod/answers.jsonl");
    let expected = std::fs::read(&answers).unwrap();
    assert_eq!(count_lines(&answers), 240);
    let first: Value =
        serde_json::from_str(String::from_utf8_lossy(&expected).lines().nth(3).unwrap()).unwrap();
    assert_eq!(first["id"], "q003");
    assert_eq!(first["answer"], "answer to What is item 3?");
    assert_eq!(first["doc_ids"], json!(["doc-3"]));
    assert_eq!(first["retriever"], "http");
    assert_eq!(
        count_lines(&straight.join("systems/prod/latency.jsonl")),
        240
    );

    // SIGKILL mid-stage, then a rerun: the same bytes, nothing lost or twice.
    let resumed = root.join("resumed");
    let journal = resumed.join("systems/prod/answers.jsonl");
    let partial = kill_once_written(&mut answer(root, &resumed), &journal, 60);
    assert!((60..240).contains(&partial), "{partial}");
    let answered: std::collections::HashSet<String> = std::fs::read_to_string(&journal)
        .unwrap()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .map(|record| record["id"].as_str().unwrap().to_owned())
        .collect();
    let before_rerun = requests(root).len();
    let out = answer(root, &resumed).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read(&journal).unwrap(), expected);
    // The rerun asked none of the questions the killed run had answered, and no more than
    // those left (fewer when a reply reached the cache but not the journal).
    let asked_again = &requests(root)[before_rerun..];
    assert!(
        asked_again.iter().all(|id| !answered.contains(id)),
        "{asked_again:?}"
    );
    assert!(
        asked_again.len() <= 240 - answered.len(),
        "{}",
        asked_again.len()
    );
}

#[test]
fn faults_are_retried_and_a_question_that_keeps_failing_is_named_then_retried_by_a_rerun() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_numbered_benchmark(root, 12);
    std::fs::write(
        root.join("faults.json"),
        json!({
            "q001": ["429"], "q002": ["500", "500"], "q003": ["slow"], "q004": ["cut"],
            "q005": ["garbage"], "q006": ["500", "500", "500"]
        })
        .to_string(),
    )
    .unwrap();
    let service = start_service(root, None);
    write_config(root, &service.url, "timeout_s = 1\nmax_attempts = 3\n");
    let out = answer(root, root).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("q006") && stderr.contains("HTTP 500"),
        "{stderr}"
    );
    let failures =
        std::fs::read_to_string(root.join("systems/prod/answer.failures.jsonl")).unwrap();
    assert_eq!(failures.lines().count(), 1, "{failures}");
    assert!(failures.contains("\"q006\"") && failures.contains("gave up after 3 attempts"));
    assert_eq!(count_lines(&root.join("systems/prod/answers.jsonl")), 11);
    let asked = requests(root);
    let count = |id: &str| asked.iter().filter(|a| *a == id).count();
    assert_eq!(
        ["q000", "q001", "q002", "q003", "q004", "q005", "q006"].map(count),
        [1, 2, 3, 2, 2, 2, 3]
    );
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(root.join("manifest.json")).unwrap()).unwrap();
    let usage = &manifest["stages"]["answer:prod"]["usage"][0];
    assert_eq!(usage["role"], "service");
    assert_eq!(
        (usage["requests"].as_u64(), usage["retries"].as_u64()),
        (Some(12), Some(8))
    );

    // The service has recovered (its faults are spent): the rerun asks q006 alone.
    let out = answer(root, root).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(requests(root).len(), asked.len() + 1);
    assert_eq!(count_lines(&root.join("systems/prod/answers.jsonl")), 12);
    drop(service);
}

#[test]
fn a_reply_that_does_not_fit_the_mapping_stops_the_system_naming_the_pointer() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_numbered_benchmark(root, 40);
    let faults: serde_json::Map<String, Value> = (0..40)
        .map(|i| (format!("q{i:03}"), json!(["nofield"])))
        .collect();
    std::fs::write(root.join("faults.json"), Value::Object(faults).to_string()).unwrap();
    let service = start_service(root, None);
    write_config(root, &service.url, "concurrency = 2\n");
    let out = answer(root, root).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("answer = \"/answer\" is not in the reply")
            && stderr.contains("the reply begins: {\"result\":\"answer to What is item"),
        "{stderr}"
    );
    assert!(stderr.contains("answer:prod stopped"), "{stderr}");
    // Only the questions already in flight were asked, not all forty.
    assert!(requests(root).len() <= 4, "{:?}", requests(root));
    // The service fixed, a rerun asks again (the replies that did not fit were not cached).
    drop(service);
    std::fs::remove_file(root.join("faults.json")).unwrap();
    std::fs::remove_file(root.join("requests.log")).unwrap();
    let service = start_service(root, None);
    write_config(root, &service.url, "concurrency = 2\n");
    let out = answer(root, root).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(count_lines(&root.join("systems/prod/answers.jsonl")), 40);
    assert_eq!(requests(root).len(), 40);
}

#[test]
fn a_bearer_token_from_the_environment_reaches_the_service_and_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_numbered_benchmark(root, 6);
    let token = "tok-6f1d2c-very-secret";
    let service = start_service(root, Some(token));
    write_config(
        root,
        &service.url,
        "headers = { Authorization = \"Bearer ${RAG_TOKEN}\" }\n",
    );
    // Without the variable: one clear error naming the system and the key, nothing asked.
    let out = answer(root, root).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("system prod")
            && stderr.contains("headers.Authorization")
            && stderr.contains("RAG_TOKEN is not set"),
        "{stderr}"
    );
    assert!(requests(root).is_empty());

    // A wrong token: the service refuses at once and the stage stops.
    let out = answer(root, root)
        .env("RAG_TOKEN", "wrong")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("401") && stderr.contains("bad token"),
        "{stderr}"
    );
    assert!(!stderr.contains("wrong"), "{stderr}");

    let out = answer(root, root).env("RAG_TOKEN", token).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(count_lines(&root.join("systems/prod/answers.jsonl")), 6);
    let mut seen = Vec::new();
    for entry in walk(root) {
        let bytes = std::fs::read(&entry).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(token),
            "the token is in {}",
            entry.display()
        );
        seen.push(entry.file_name().unwrap().to_string_lossy().into_owned());
    }
    for name in [
        "manifest.json",
        "http-cache.sqlite",
        "latency.jsonl",
        "answers.jsonl",
    ] {
        assert!(seen.iter().any(|s| s == name), "{name} in {seen:?}");
    }
    drop(service);
}

/// Every file under `root`, except the test's own.
fn walk(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else if !path.ends_with("service.py") {
                files.push(path);
            }
        }
    }
    files
}

#[test]
fn http_config_errors_name_the_system_and_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_numbered_benchmark(root, 1);
    let cases = [
        (
            "body = { q = \"{quesiton}\" }\n",
            "body: {quesiton} is not a placeholder",
        ),
        (
            "answer = \"answer\"\n",
            "answer: \"answer\" is not a JSON Pointer",
        ),
        (
            "headers = { X = \"${BAD\" }\n",
            "headers: X: `${` without its `}`",
        ),
        ("max_attempts = 0\n", "max_attempts: must be at least 1"),
        ("retries = 3\n", "unknown field `retries`"),
    ];
    for (extra, expected) in cases {
        write_config(root, "http://127.0.0.1:9/ask", extra);
        let out = answer(root, root).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{extra}: {stderr}");
        assert!(
            stderr.contains("[system prod]") && stderr.contains(expected),
            "{extra}: {stderr}"
        );
    }
    write_config(root, "ftp://127.0.0.1/ask", "");
    let out = answer(root, root).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("url: \"ftp://127.0.0.1/ask\""), "{stderr}");
}
