//! What the test modules share: the binary, running it and reading its failure, Python (for
//! the checks that read our files with Python's own parsers), the workspace root.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use hierarag_test_support::mock::{MockServer, Reply};
pub use hierarag_test_support::{python, workspace_root};
use serde_json::{Value, json};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_hierarag");

/// A mock OpenAI-compatible chat server on 127.0.0.1 whose reply to each chat request body is
/// `reply`'s (any other path: 404); returns its base URL and the server, which counts the
/// chat requests it answered ([`chat_calls`]).
pub fn start_chat_mock(reply: fn(&Value) -> Value) -> (String, MockServer) {
    let server = MockServer::serve(move |path, body| {
        if path == "/v1/chat/completions" {
            Reply::json(200, reply(body))
        } else {
            Reply::json(
                404,
                json!({"error": {"message": format!("no route {path}")}}),
            )
        }
    });
    (server.v1(), server)
}

/// The chat requests `server` answered.
pub fn chat_calls(server: &MockServer) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.path == "/v1/chat/completions")
        .count()
}

/// A chat completion whose message is `content`, as the mock servers reply.
pub fn chat_reply(content: &str) -> Value {
    json!({
        "id": "mock", "object": "chat.completion", "model": "mock-1",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105}
    })
}

/// Runs `cmd`, expects exit code 0 and returns (stdout, stderr).
pub fn ok(cmd: &mut Command) -> (String, String) {
    let output = cmd.output().expect("run hierarag");
    let stdout = String::from_utf8(output.stdout).expect("UTF-8 stdout");
    let stderr = String::from_utf8(output.stderr).expect("UTF-8 stderr");
    assert_eq!(
        output.status.code(),
        Some(0),
        "expected success\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    (stdout, stderr)
}

/// Runs `cmd` (a Python script of a reference package, usually), with `stdin` as JSON on its
/// standard input when given; expects success and returns its standard output read as JSON.
pub fn json_of(cmd: &mut std::process::Command, stdin: Option<&Value>) -> Value {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run {cmd:?}: {e}"));
    let mut input = child.stdin.take().expect("piped");
    if let Some(value) = stdin {
        input.write_all(value.to_string().as_bytes()).unwrap();
    }
    drop(input);
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "{cmd:?}: not JSON ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

/// Runs `cmd`, expects exit code 1 (bad input), nothing on stdout, and returns stderr.
pub fn bad_input(cmd: &mut Command) -> String {
    let output = cmd.output().expect("run hierarag");
    let stdout = String::from_utf8(output.stdout).expect("UTF-8 stdout");
    let stderr = String::from_utf8(output.stderr).expect("UTF-8 stderr");
    assert_eq!(
        output.status.code(),
        Some(1),
        "expected exit code 1\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.is_empty(), "no data on failure, got:\n{stdout}");
    assert!(stderr.starts_with("error: "), "stderr:\n{stderr}");
    stderr
}

pub fn assert_contains_all(haystack: &str, needles: &[&str]) {
    for needle in needles {
        assert!(
            haystack.contains(needle),
            "expected `{needle}` in:\n{haystack}"
        );
    }
}

/// `actual` is a JSON number within 1e-12 of `expected` (the binary prints the library's f64
/// exactly; parsing it back may cost one ulp).
pub fn assert_close(actual: &Value, expected: f64, what: &str) {
    let actual = actual
        .as_f64()
        .unwrap_or_else(|| panic!("{what}: not a number: {actual}"));
    assert!(
        (actual - expected).abs() < 1e-12,
        "{what}: {actual} != {expected}"
    );
}

/// Writes `records` as JSON lines.
pub fn write_lines(path: &Path, records: &[Value]) {
    let text: String = records.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(path, text).unwrap();
}

/// The rows of a CSV as Python's `csv.DictReader` reads them, which is what a spreadsheet's CSV
/// import or a loader built on it (or on pandas' `read_csv`) gets.
pub fn python_csv_rows(path: &Path) -> Vec<BTreeMap<String, String>> {
    let script = "import csv, json, sys\n\
                  with open(sys.argv[1], newline='', encoding='utf-8') as f:\n    \
                  print(json.dumps(list(csv.DictReader(f))))";
    let output = std::process::Command::new(python())
        .args(["-c", script])
        .arg(path)
        .output()
        .expect("run Python (set HIERARAG_PYTHON)");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("JSON from Python")
}

/// Texts a spreadsheet would run as formulas (OWASP's starts, a full-width one) and a text that
/// really begins with a quote.
pub const FORMULAS: [&str; 7] = [
    "=HYPERLINK(\"http://x\",\"click\")",
    "+1",
    "-2",
    "@SUM(A1)",
    "\tindented",
    "'quoted",
    "\u{FF1D}1+1",
];

/// A benchmark of `n` questions `q000…` ("What is item i?", relevant document `doc-<i mod 7>`).
pub fn write_numbered_benchmark(dir: &Path, n: usize) {
    let records: Vec<Value> = (0..n)
        .map(|i| {
            json!({
                "id": format!("q{i:03}"), "question": format!("What is item {i}?"), "answer": "ref",
                "doc_ids": [format!("doc-{}", i % 7)], "design": "rq1", "set": "qc",
                "categories": [{"dimension": "qc", "level": "coarse", "category": "simple"}],
                "persona": {}, "generator": {"backend": "openai", "model": "m", "params": {}},
                "candidates_considered": 1, "attempts": 1,
                "filter": {"enabled": false, "passed": 1, "judged": 1}
            })
        })
        .collect();
    write_lines(&dir.join("benchmark.jsonl"), &records);
}

/// The lines of the file at `path` (0 when it does not exist).
pub fn count_lines(path: &Path) -> usize {
    std::fs::read(path)
        .map(|b| b.iter().filter(|&&c| c == b'\n').count())
        .unwrap_or(0)
}

/// Starts `command`, kills it (SIGKILL) once `journal` has `at_least` lines (or after a minute)
/// and returns how many it has then.
pub fn kill_once_written(
    command: &mut std::process::Command,
    journal: &Path,
    at_least: usize,
) -> usize {
    let mut child = command
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while count_lines(journal) < at_least && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    count_lines(journal)
}

/// Opens `page` in headless Chromium (scripts/browser/check_page.py) with `args` (`--count
/// SELECTOR`, `--fill`, `--screenshot`, …); asserts no console or page error and no request
/// outside the page, and returns its report.
pub fn browser_check(page: &Path, args: &[&std::ffi::OsStr]) -> Value {
    let output = std::process::Command::new(python())
        .arg(workspace_root().join("scripts/browser/check_page.py"))
        .arg(page)
        .args(args)
        .output()
        .expect("run check_page.py");
    assert!(
        output.status.success(),
        "check_page.py: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["console_errors"], json!([]), "{report:#}");
    assert_eq!(report["page_errors"], json!([]), "{report:#}");
    assert_eq!(report["requests_outside"], json!([]), "{report:#}");
    report
}

/// [`browser_check`] counting each of `selectors`: the counts.
pub fn browser_counts(page: &Path, selectors: &[&str]) -> Value {
    let args: Vec<&std::ffi::OsStr> = selectors
        .iter()
        .flat_map(|s| ["--count".as_ref(), s.as_ref()])
        .collect();
    browser_check(page, &args)["counts"].clone()
}

/// The peers' Python (ragas, deepeval): `$HIERARAG_PEERS_PYTHON` (scripts/test.sh points it at
/// .venv-peers), else the repository's .venv-peers.
pub fn peers_python() -> PathBuf {
    std::env::var_os("HIERARAG_PEERS_PYTHON")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".venv-peers/bin/python"))
}

/// The tests' asset store: `$HIERARAG_HOME` (scripts/test.sh sets it), otherwise
/// `target/test-home`, fetching with the tests' Python.
pub fn test_store() -> hierarag_assets::Store {
    match std::env::var_os("HIERARAG_HOME") {
        Some(_) => hierarag_assets::Store::from_env().unwrap(),
        None => hierarag_assets::Store::at(workspace_root().join("target/test-home")),
    }
    .with_python(python())
}
