//! What an adversarial test of the run directory broke, each case pinned (issue 42): two
//! processes on one run directory, identical duplicate lines left by them, the judge grading an
//! external system's answers against no passage, and errors that came late or with the wrong
//! exit code (an import file that is not UTF-8, a run directory moved mid-stage, latency lines
//! after a lost answer, the judge not finding a config's systems).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{
    BIN, chat_reply, count_lines, start_chat_mock, write_lines, write_numbered_benchmark,
};

fn hierarag() -> Command {
    let mut command = Command::new(BIN);
    command.env_remove("RUST_LOG");
    command
}

/// Runs `command`, expects exit code 0 and returns (stdout, stderr).
fn ok(command: &mut Command) -> (String, String) {
    let output = command.output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    );
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    (stdout, stderr)
}

fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// A command system's program: answers each question at once, or, with `HOLD` set, holds the
/// first one until its parent is gone (so that it never outlives the test). A parent killed
/// before Python read its pid leaves the program orphaned from the start (parent 1, init's),
/// which counts as gone too.
const HOLDING_PROGRAM: &str = r#"
import json, os, sys, time
parent = os.getppid()
for line in sys.stdin:
    q = json.loads(line)
    if os.environ.get("HOLD"):
        while os.getppid() == parent and parent != 1:
            time.sleep(0.05)
        sys.exit(0)
    if os.environ.get("SLOW"):
        time.sleep(float(os.environ["SLOW"]))
    reply = {"id": q["id"], "answer": "answer to " + q["question"],
             "contexts": [{"doc_id": "doc-1", "text": "CONTEXT-MARK of " + q["id"]}]}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
"#;

/// A benchmark of `n` questions and a config with one command system running
/// [`HOLDING_PROGRAM`] one question at a time; returns the config's path.
fn command_system(root: &Path, n: usize) -> PathBuf {
    write_numbered_benchmark(root, n);
    std::fs::write(root.join("hold.py"), HOLDING_PROGRAM).unwrap();
    let python = std::env::var("HIERARAG_PYTHON").unwrap_or_else(|_| "python3".into());
    let config = root.join("systems.toml");
    std::fs::write(
        &config,
        format!(
            "[[system]]\nname = \"prog\"\nkind = \"command\"\ncommand = [\"{python}\", \"{}\"]\n\
concurrency = 1\n",
            root.join("hold.py").display()
        ),
    )
    .unwrap();
    config
}

fn answer(root: &Path, out: &Path) -> Command {
    let mut command = hierarag();
    command
        .args(["answer", "-q", "--benchmark"])
        .arg(root.join("benchmark.jsonl"))
        .arg("--config")
        .arg(root.join("systems.toml"))
        .arg("--out")
        .arg(out);
    command
}

fn wait_for(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "waited a minute for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn two_processes_answering_one_run_directory_the_second_stops_naming_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    command_system(root, 6);
    let out = root.join("run");
    let mut first = answer(root, &out)
        .env("HOLD", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lock = out.join("run.lock");
    wait_for("the first process's lock", || {
        std::fs::read_to_string(&lock).is_ok_and(|text| !text.is_empty())
    });

    let started = Instant::now();
    let second = answer(root, &out).output().unwrap();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("in use by process {} (", first.id())),
        "{stderr}"
    );
    assert!(stderr.contains(" answer -q --benchmark"), "{stderr}");
    // At once: it did not wait for the first, nor ask its program anything.
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(count_lines(&out.join("systems/prog/answers.jsonl")), 0);

    // A crash releases the lock: the next process goes through.
    first.kill().unwrap();
    first.wait().unwrap();
    ok(&mut answer(root, &out));
    let answers = out.join("systems/prog/answers.jsonl");
    assert_eq!(count_lines(&answers), 6);
    assert_eq!(std::fs::read_to_string(&lock).unwrap(), "", "released");
}

#[test]
fn a_resume_that_finds_identical_duplicate_lines_keeps_one_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    command_system(root, 5);
    let out = root.join("run");
    ok(&mut answer(root, &out));
    let answers = out.join("systems/prog/answers.jsonl");
    let written = std::fs::read(&answers).unwrap();
    // What two unlocked processes left: every line twice, interleaved.
    let doubled: Vec<u8> = written
        .split_inclusive(|&b| b == b'\n')
        .flat_map(|line| [line, line].concat())
        .collect();
    std::fs::write(&answers, doubled).unwrap();
    // Not quiet: the warning is the point.
    let (_, stderr) = ok(hierarag()
        .args(["answer", "--benchmark"])
        .arg(root.join("benchmark.jsonl"))
        .arg("--config")
        .arg(root.join("systems.toml"))
        .arg("--out")
        .arg(&out));
    assert!(
        stderr.contains("5 line(s) repeated byte for byte"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&answers).unwrap(), written);
}

#[test]
fn the_judge_finds_a_configs_systems_and_grades_them_against_the_passages_they_returned() {
    // The judge: correctness 3 when it was shown the system's own context text, 1 otherwise;
    // hallucination always 2 (what a judge with nothing to check against tends to say).
    fn reply(body: &Value) -> Value {
        let prompt = body["messages"][1]["content"].as_str().unwrap();
        let correctness = if prompt.contains("CONTEXT-MARK") {
            3
        } else {
            1
        };
        chat_reply(
            &json!({"correctness": correctness, "hallucination": 2, "reason": "checked"})
                .to_string(),
        )
    }
    let (url, _) = start_chat_mock(reply);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_numbered_benchmark(root, 4);
    // An answers file: two answers with context texts (no ids), two with none.
    write_lines(
        &root.join("answers-made-elsewhere.jsonl"),
        &[
            json!({"qid": "q000", "text": "A", "ctx": ["CONTEXT-MARK zero"]}),
            json!({"qid": "q001", "text": "B", "ctx": ["CONTEXT-MARK one"]}),
            json!({"qid": "q002", "text": "C", "ctx": []}),
            json!({"qid": "q003", "text": "D"}),
        ],
    );
    // `retries`, the old name of `[judge] repairs`, is still read.
    let config = root.join("c.toml");
    std::fs::write(
        &config,
        format!(
            "[[system]]\nname = \"ext\"\nkind = \"file\"\npath = \"{}\"\nformat = \"jsonl\"\n\
[system.fields]\nid = \"qid\"\nanswer = \"text\"\ncontexts = \"ctx\"\n\n\
[judge]\nretries = 1\n[judge.llm]\nbackend = \"openai\"\nmodel = \"mock-1\"\n\
base_urls = [\"{url}\"]\n",
            root.join("answers-made-elsewhere.jsonl").display()
        ),
    )
    .unwrap();
    let run = root.join("run");
    ok(hierarag()
        .args(["answer", "-q", "--benchmark"])
        .arg(root.join("benchmark.jsonl"))
        .arg("--config")
        .arg(&config)
        .arg("--out")
        .arg(&run));
    let system = run.join("systems/ext");
    let answers = records(&system.join("answers.jsonl"));
    assert_eq!(answers[0]["contexts"], json!(["CONTEXT-MARK zero"]));
    assert!(answers[2].get("contexts").is_none(), "{}", answers[2]);
    std::fs::copy(root.join("benchmark.jsonl"), run.join("benchmark.jsonl")).unwrap();
    // Scores as `evaluate` leaves them, so that the grades are merged in.
    write_lines(
        &system.join("scores.jsonl"),
        &(0..4)
            .map(|i| {
                json!({"id": format!("q{i:03}"), "ap": 1.0, "ndcg_10": 1.0, "recall_10": 1.0,
                       "rr": 1.0, "cs": 0.5, "rouge1": 0.3, "bleu": 10.0, "refused": false})
            })
            .collect::<Vec<_>>(),
    );

    // `judge RUN --config C` after `answer --config C`: C's systems are found.
    let (_, stderr) = ok(hierarag()
        .arg("judge")
        .arg(&run)
        .arg("--config")
        .arg(&config));
    assert!(
        stderr.contains("2 of 4 answers come with no passage"),
        "{stderr}"
    );
    let judgements = records(&system.join("judgements.jsonl"));
    assert_eq!(judgements.len(), 4);
    for grade in &judgements[..2] {
        assert_eq!(grade["correctness"], 3, "{grade}");
        assert_eq!(grade["hallucination"], 2, "{grade}");
        assert!(grade.get("no_passages").is_none(), "{grade}");
    }
    for grade in &judgements[2..] {
        assert_eq!(grade["correctness"], 1, "{grade}");
        assert!(grade.get("hallucination").is_none(), "{grade}");
        assert_eq!(grade["no_passages"], true, "{grade}");
    }
    let scores = records(&system.join("scores.jsonl"));
    assert_eq!(scores[0]["judge_hallucination"], 2);
    assert!(
        scores[3].get("judge_hallucination").is_none(),
        "{}",
        scores[3]
    );

    // The report's notes say so.
    ok(hierarag()
        .args(["analyze", "-q", "--benchmark"])
        .arg(run.join("benchmark.jsonl"))
        .arg("--scores")
        .arg(system.join("scores.jsonl"))
        .args(["--metric", "judge"]));
    let analysis: Value =
        serde_json::from_slice(&std::fs::read(system.join("analysis.json")).unwrap()).unwrap();
    let notes = analysis["notes"].to_string();
    assert!(
        notes.contains("2 of 4 judged answers came with no passage"),
        "{notes}"
    );
}

#[test]
fn an_import_file_with_invalid_utf8_exits_1_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(
        root.join("questions.jsonl"),
        b"{\"id\": \"a\", \"question\": \"Why?\", \"answer\": \"So.\"}\n\
{\"id\": \"b\", \"question\": \"Caf\xe9?\", \"answer\": \"Yes.\"}\n",
    )
    .unwrap();
    let out = hierarag()
        .args(["import", "-q", "--format", "jsonl", "--run"])
        .arg(root.join("run"))
        .arg(root.join("questions.jsonl"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("questions.jsonl"), "{stderr}");
    assert!(stderr.contains("line 2, byte"), "{stderr}");
    assert!(stderr.contains("not valid UTF-8"), "{stderr}");
}

#[test]
fn a_run_directory_moved_mid_stage_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    command_system(root, 12);
    let out = root.join("run");
    let child = answer(root, &out)
        .env("SLOW", "0.1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let answers = out.join("systems/prog/answers.jsonl");
    wait_for("two answers", || count_lines(&answers) >= 2);
    std::fs::rename(&out, root.join("moved")).unwrap();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("the directory is gone"), "{stderr}");
}
