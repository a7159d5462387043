//! `[[system]]` with `kind = "http"` against a deterministic local service (Python's standard
//! library, started by the test on 127.0.0.1): killed and resumed to the same bytes; faults
//! retried or recorded and retried by a rerun; a reply that does not fit the mapping stopping
//! the system; a bearer token that reaches the service and no file; config errors; and what a
//! service cannot do to a run (issue 42): a reply over the limit or one that never ends, a
//! redirect that would carry the headers elsewhere, a secret echoed back into a failure.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{BIN, count_lines, kill_once_written, python, write_numbered_benchmark};
use serde_json::{Value, json};

/// A service answering `POST /ask` `{"query", "qid"}` with `{"answer", "sources": [{"text",
/// "metadata": {"doc_id"}}]}` after a short random wait. `faults.json` (optional) maps a
/// question id to the replies of its first requests: `429`, `500`, `slow`, `cut` (a body cut
/// short), `garbage` (not JSON), `nofield` (no `answer`), `huge` (a reply of a million bytes),
/// `endless` (a body that never ends), `redirect` (307 to `REDIRECT_TO`), `redirect-here` (307
/// to this service), `echo400` / `echo500` / `echo-nofield` (the `X-Api-Key` received, echoed
/// in an error or in a reply without `answer`), then normal replies. Each request's id is
/// appended to `requests.log`. With `EXPECT_TOKEN` set, a request without
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
        if fault == "huge":
            return self.send(200, json.dumps({"answer": "x" * 1000000}).encode())
        if fault == "endless":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.close_connection = True
            self.wfile.write(b'{"answer": "')
            chunk = b"x" * 65536
            while True:
                self.wfile.write(chunk)
        if fault == "redirect":
            return self.send(307, b"{}", [("Location", os.environ["REDIRECT_TO"])])
        if fault == "redirect-here":
            return self.send(307, b"{}", [("Location", "/ask?again=1")])
        key = self.headers.get("X-Api-Key", "")
        if fault == "echo400":
            return self.send(400, json.dumps({"error": "key %s is not valid" % key}).encode())
        if fault == "echo500":
            return self.send(500, json.dumps({"error": "no quota for %s" % key}).encode())
        n = int(qid[1:]) % 7
        reply = {"answer": "answer to " + body["query"],
                 "sources": [{"text": "text of doc-%d" % n, "metadata": {"doc_id": "doc-%d" % n}}]}
        if fault == "nofield":
            reply = {"result": reply["answer"]}
        if fault == "echo-nofield":
            reply = {"result": "asked with key " + key}
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
    start_service_with(root, token, &[])
}

/// [`start_service`] with more environment variables.
fn start_service_with(root: &Path, token: Option<&str>, env: &[(&str, &str)]) -> Service {
    let _ = std::fs::remove_file(root.join("port"));
    std::fs::write(root.join("service.py"), SERVICE).unwrap();
    let mut command = Command::new(python());
    command
        .arg(root.join("service.py"))
        .arg(root)
        .envs(env.iter().copied());
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
        (
            "max_reply_bytes = 0\n",
            "max_reply_bytes: must be at least 1",
        ),
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

/// The failures file of system `prod` in `root`, as (question id, reason).
fn failures(root: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(root.join("systems/prod/answer.failures.jsonl"))
        .unwrap()
        .lines()
        .map(|line| {
            let failure: Value = serde_json::from_str(line).unwrap();
            (
                failure["item_id"].as_str().unwrap().to_owned(),
                failure["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn http_reply_over_the_limit_fails_naming_question_and_limit() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_numbered_benchmark(root, 4);
    std::fs::write(
        root.join("faults.json"),
        json!({"q002": ["huge"]}).to_string(),
    )
    .unwrap();
    let service = start_service(root, None);
    write_config(root, &service.url, "max_reply_bytes = 100000\n");
    let out = answer(root, root).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let limit = "over the limit of 100000 bytes (max_reply_bytes)";
    assert_eq!(failures(root).len(), 1, "{stderr}");
    let (id, reason) = &failures(root)[0];
    assert!(id == "q002" && reason.contains(limit), "{reason}");
    assert!(
        stderr.contains("q002") && stderr.contains(limit),
        "{stderr}"
    );
    // Not retried, and stored nowhere: the answers and the cache hold the others only.
    assert_eq!(requests(root).iter().filter(|id| *id == "q002").count(), 1);
    assert_eq!(count_lines(&root.join("systems/prod/answers.jsonl")), 3);
    for file in ["answers.jsonl", "http-cache.sqlite"] {
        let size = root
            .join("systems/prod")
            .join(file)
            .metadata()
            .unwrap()
            .len();
        assert!(size < 100_000, "{file}: {size} bytes");
    }
    drop(service);
}

#[test]
fn http_body_that_never_ends_stops_at_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_numbered_benchmark(root, 3);
    std::fs::write(
        root.join("faults.json"),
        json!({"q001": ["endless"]}).to_string(),
    )
    .unwrap();
    let service = start_service(root, None);
    // The timeout is far off: the read stops at the limit, not at the timeout.
    write_config(
        root,
        &service.url,
        "max_reply_bytes = 2000000\ntimeout_s = 600\n",
    );
    let out = answer(root, root).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let failures = failures(root);
    assert_eq!(failures.len(), 1, "{stderr}");
    assert_eq!(failures[0].0, "q001");
    assert!(
        failures[0]
            .1
            .contains("longer than the limit of 2000000 bytes (max_reply_bytes)"),
        "{}",
        failures[0].1
    );
    assert_eq!(count_lines(&root.join("systems/prod/answers.jsonl")), 2);
    drop(service);
}

#[test]
fn cross_origin_redirect_does_not_carry_configured_headers() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let elsewhere_root = root.join("elsewhere");
    std::fs::create_dir(&elsewhere_root).unwrap();
    let elsewhere = start_service(&elsewhere_root, None);
    write_numbered_benchmark(root, 4);
    std::fs::write(
        root.join("faults.json"),
        json!({"q001": ["redirect"], "q002": ["redirect-here"]}).to_string(),
    )
    .unwrap();
    let token = "tok-9e1f-redirected-secret";
    let service = start_service_with(root, Some(token), &[("REDIRECT_TO", &elsewhere.url)]);
    write_config(
        root,
        &service.url,
        "headers = { Authorization = \"Bearer ${RAG_TOKEN}\", X-Api-Key = \"${RAG_TOKEN}\" }\n",
    );
    let out = answer(root, root).env("RAG_TOKEN", token).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        requests(&elsewhere_root).is_empty(),
        "a request went to the other origin"
    );
    let failures = failures(root);
    assert_eq!(failures.len(), 1, "{failures:?}");
    let origin = elsewhere.url.trim_end_matches("/ask");
    assert_eq!(failures[0].0, "q001");
    assert!(
        failures[0].1.contains(&format!(
            "HTTP 307 Temporary Redirect to another origin, {origin}: not followed"
        )),
        "{}",
        failures[0].1
    );
    // Within the service's origin the redirect is followed, the token with it (the service
    // refuses a request without it).
    assert_eq!(requests(root).iter().filter(|id| *id == "q002").count(), 2);
    assert_eq!(count_lines(&root.join("systems/prod/answers.jsonl")), 3);
    drop((service, elsewhere));
}

#[test]
fn failure_record_never_holds_a_configured_secret() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_numbered_benchmark(root, 6);
    std::fs::write(
        root.join("faults.json"),
        json!({
            "q001": ["echo400"], "q002": ["echo500", "echo500"], "q004": ["echo-nofield"]
        })
        .to_string(),
    )
    .unwrap();
    let service = start_service(root, None);
    write_config(
        root,
        &service.url,
        "headers = { X-Api-Key = \"${RAG_TOKEN}\" }\nmax_attempts = 2\n",
    );
    let token = "key-51c0-echoed-secret";
    let out = answer(root, root).env("RAG_TOKEN", token).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains(token), "{stderr}");
    assert!(
        stderr.contains("key [redacted] is not valid")
            && stderr.contains("asked with key [redacted]"),
        "{stderr}"
    );
    let failures = failures(root);
    let ids: Vec<&str> = failures.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["q001", "q002", "q004"], "{failures:?}");
    assert!(
        failures
            .iter()
            .all(|(_, reason)| reason.contains("[redacted]")),
        "{failures:?}"
    );
    for entry in walk(root) {
        let bytes = std::fs::read(&entry).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(token),
            "the token is in {}",
            entry.display()
        );
    }
    drop(service);
}

#[test]
fn latency_jsonl_keeps_one_line_per_question_after_an_answer_was_lost() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_numbered_benchmark(root, 6);
    let service = start_service(root, None);
    write_config(root, &service.url, "");
    let out = root.join("run");
    let status = answer(root, &out).status().unwrap();
    assert!(status.success());
    // What a full disk left: the latency of the last two questions written, their answers
    // not (the latency line comes first).
    let answers = out.join("systems/prod/answers.jsonl");
    let text = std::fs::read_to_string(&answers).unwrap();
    let kept: Vec<&str> = text.lines().take(4).collect();
    std::fs::write(&answers, format!("{}\n", kept.join("\n"))).unwrap();
    let status = answer(root, &out).status().unwrap();
    assert!(status.success());
    assert_eq!(count_lines(&answers), 6);
    let latency = std::fs::read_to_string(out.join("systems/prod/latency.jsonl")).unwrap();
    let mut ids: Vec<String> = latency
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap()["id"].to_string())
        .collect();
    assert_eq!(ids.len(), 6, "{latency}");
    ids.dedup();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 6, "{latency}");
}
