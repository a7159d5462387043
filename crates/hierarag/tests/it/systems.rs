//! `[[system]]` with `kind = "file"`: answers made elsewhere, in each format, matched to the
//! benchmark by id or question text, written to `systems/<name>/`, and what did not match
//! reported; with `kind = "command"`: a program over JSON lines, killed and resumed, one
//! that prints garbage and exits, and one that dies while a child it forked holds its stdout.

use std::path::Path;
use std::process::Command;

use crate::support::{BIN, kill_once_written, peers_python, write_lines, write_numbered_benchmark};
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

/// The peers' Python (ragas, deepeval): `HIERARAG_PEERS_PYTHON`, else `.venv-peers` (both set up
/// by scripts/test.sh).

#[test]
fn files_written_by_ragas_and_deepeval_import_with_every_row_matched() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_benchmark(root);
    // Answers with the characters that trip writers up: quotes of both kinds, commas, a
    // newline, non-ASCII; contexts with and without ids.
    let answers = [
        "In \"Canada\", it's north of 60°.",
        "Because it was made from wood,\nby distillation.",
        "Siam.",
        "I cannot answer from the context.",
    ];
    let rows: Vec<Value> = QUESTIONS
        .iter()
        .zip(answers)
        .enumerate()
        .map(|(i, ((_, question, doc), answer))| {
            json!({
                "question": question,
                "answer": answer,
                "contexts": if i == 3 { vec![] } else {
                    vec![format!("Context about '{question}'"), "Another, with a comma".to_owned()]
                },
                "context_ids": if i == 3 { vec![] } else { vec![doc.to_string(), "doc-z".to_owned()] },
            })
        })
        .collect();
    std::fs::write(
        root.join("rows.json"),
        serde_json::to_string(&rows).unwrap(),
    )
    .unwrap();
    let python = peers_python();
    let written = Command::new(&python)
        .arg(crate::support::workspace_root().join("scripts/peers/write_answers.py"))
        .arg(root.join("rows.json"))
        .arg(root.join("peers"))
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {} ({e}); scripts/test.sh sets up .venv-peers from \
scripts/peers/requirements.txt",
                python.display()
            )
        });
    assert!(
        written.status.success(),
        "{}",
        String::from_utf8_lossy(&written.stderr)
    );
    let systems = [
        ("ragas-jsonl", "ragas.jsonl", "ragas"),
        ("ragas-csv", "ragas.csv", "ragas"),
        ("deepeval-json", "deepeval.json", "deepeval"),
        ("deepeval-jsonl", "deepeval.jsonl", "deepeval"),
        ("deepeval-csv", "deepeval.csv", "deepeval"),
    ];
    let mut config = String::new();
    for (name, file, format) in systems {
        config.push_str(&format!(
            "[[system]]\nname = \"{name}\"\nkind = \"file\"\npath = \"{}\"\nformat = \"{format}\"\n\n",
            root.join("peers").join(file).display()
        ));
    }
    std::fs::write(root.join("run.toml"), config).unwrap();
    let out = Command::new(BIN)
        .env_remove("RUST_LOG")
        .args(["answer", "--benchmark"])
        .arg(root.join("benchmark.jsonl"))
        .arg("--config")
        .arg(root.join("run.toml"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    for (name, _, format) in systems {
        assert!(
            stderr.contains(&format!("answer:{name}: 4 of 4 rows")),
            "{name}: {stderr}"
        );
        let records = read_answers(&root.join("systems").join(name).join("answers.jsonl"));
        let got: Vec<&str> = records
            .iter()
            .map(|r| r["answer"].as_str().unwrap())
            .collect();
        assert_eq!(got, answers, "{name}");
        let ids: Vec<&str> = records.iter().map(|r| r["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["q1", "q2", "q3", "q4"], "{name}");
        assert_eq!(records[3]["refused"], true, "{name}");
        if format == "ragas" {
            // Ragas keeps the context ids: they are the ranking.
            assert_eq!(records[0]["doc_ids"], json!(["doc-a", "doc-z"]), "{name}");
            assert_eq!(records[3]["doc_ids"], json!([]), "{name}");
        } else {
            // DeepEval has no ids: the texts are there, the ranking is not.
            assert_eq!(records[0]["doc_ids"], json!([]), "{name}");
            assert_eq!(records[0]["no_documents"], true, "{name}");
            assert!(
                stderr.contains(&format!("answer:{name}: 4 answers name no document")),
                "{stderr}"
            );
        }
    }
}

/// Answers each question after a short wait, out of order across its worker threads.
const SLOW_PROGRAM: &str = r#"
import json, sys, threading, time, random
lock = threading.Lock()
def work(q):
    time.sleep(random.uniform(0.005, 0.03))
    reply = {"id": q["id"], "answer": "answer to " + q["question"],
             "contexts": [{"doc_id": "doc-" + str(int(q["id"][1:]) % 7), "text": "t"}]}
    with lock:
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
for line in sys.stdin:
    threading.Thread(target=work, args=(json.loads(line),)).start()
"#;

fn command_config(root: &Path) -> std::path::PathBuf {
    std::fs::write(root.join("slow.py"), SLOW_PROGRAM).unwrap();
    let python = std::env::var("HIERARAG_PYTHON").unwrap_or_else(|_| "python3".into());
    let config = root.join("run.toml");
    std::fs::write(
        &config,
        format!(
            "[[system]]\nname = \"slow\"\nkind = \"command\"\ncommand = [\"{python}\", \"{}\"]\nconcurrency = 8\n",
            root.join("slow.py").display()
        ),
    )
    .unwrap();
    config
}

fn answer_command(root: &Path, out: &Path) -> Command {
    let mut command = Command::new(BIN);
    command
        .env_remove("RUST_LOG")
        .args(["answer", "-q", "--benchmark"])
        .arg(root.join("benchmark.jsonl"))
        .arg("--config")
        .arg(root.join("run.toml"))
        .arg("--out")
        .arg(out);
    command
}

#[test]
fn a_killed_command_system_resumes_to_the_same_answers() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_numbered_benchmark(root, 240);
    command_config(root);
    let straight = root.join("straight");
    let out = answer_command(root, &straight).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answers = straight.join("systems/slow/answers.jsonl");
    let expected = std::fs::read(&answers).unwrap();
    assert_eq!(expected.iter().filter(|&&b| b == b'\n').count(), 240);
    assert!(String::from_utf8_lossy(&expected).contains("\"doc_ids\":[\"doc-3\"]"));

    // SIGKILL mid-stage, then a rerun: the same bytes, nothing lost or twice.
    let resumed = root.join("resumed");
    let journal = resumed.join("systems/slow/answers.jsonl");
    let partial_lines = kill_once_written(&mut answer_command(root, &resumed), &journal, 60);
    assert!((60..240).contains(&partial_lines), "{partial_lines}");
    let out = answer_command(root, &resumed).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read(&journal).unwrap(), expected);
}

#[test]
fn a_command_that_prints_garbage_and_exits_fails_its_questions_naming_why() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_numbered_benchmark(root, 5);
    std::fs::write(
        root.join("bad.py"),
        "print('hello, not JSON')\nraise SystemExit(4)\n",
    )
    .unwrap();
    let python = std::env::var("HIERARAG_PYTHON").unwrap_or_else(|_| "python3".into());
    std::fs::write(
        root.join("run.toml"),
        format!(
            "[[system]]\nname = \"bad\"\nkind = \"command\"\ncommand = [\"{python}\", \"{}\"]\nmax_restarts = 1\n",
            root.join("bad.py").display()
        ),
    )
    .unwrap();
    let out = answer_command(root, root).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let failures = std::fs::read_to_string(root.join("systems/bad/answer.failures.jsonl")).unwrap();
    assert_eq!(failures.lines().count(), 5, "{failures}");
    assert!(failures.contains("exit status: 4"), "{failures}");
    let log = std::fs::read_to_string(root.join("systems/bad/command.log")).unwrap();
    assert!(log.contains("is not an answer"), "{log}");
}

/// The first start answers one question, forks a child that holds its stdout for ten minutes
/// (its pid in `held`) and exits; later starts fork a helper detached from their pipes (its pid
/// in `helper-<start>`) and answer every question.
const DIES_UNDER_A_CHILD: &str = r#"
import json, os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
starts = os.path.join(here, "starts")
n = int(open(starts).read()) + 1 if os.path.exists(starts) else 1
open(starts, "w").write(str(n))
if n > 1:
    helper = os.fork()
    if helper == 0:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        time.sleep(600)
        os._exit(0)
    open(os.path.join(here, "helper-%d" % n), "w").write(str(helper))
for line in sys.stdin:
    q = json.loads(line)
    print(json.dumps({"id": q["id"], "answer": "answer to " + q["question"]}), flush=True)
    if n == 1:
        child = os.fork()
        if child == 0:
            time.sleep(600)
            os._exit(0)
        open(os.path.join(here, "held"), "w").write(str(child))
        os._exit(3)
"#;

#[cfg(target_os = "linux")]
#[test]
fn command_program_exit_is_seen_while_a_child_holds_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_numbered_benchmark(root, 12);
    std::fs::write(root.join("dies.py"), DIES_UNDER_A_CHILD).unwrap();
    let python = std::env::var("HIERARAG_PYTHON").unwrap_or_else(|_| "python3".into());
    // Were the exit seen only at the end of the program's stdout, the questions in flight when
    // it exits would each wait out this timeout and fail.
    let timeout = std::time::Duration::from_secs(30);
    std::fs::write(
        root.join("run.toml"),
        format!(
            "[[system]]\nname = \"dies\"\nkind = \"command\"\ncommand = [\"{python}\", \"{}\"]\nconcurrency = 4\ntimeout_s = {}\n",
            root.join("dies.py").display(),
            timeout.as_secs()
        ),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let out = answer_command(root, root).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        started.elapsed() < timeout,
        "a question waited out its timeout"
    );
    assert_eq!(
        read_answers(&root.join("systems/dies/answers.jsonl")).len(),
        12
    );
    assert!(stderr.contains("started again 1 time"), "{stderr}");
    // The child that held the first start's stdout ended with it, and the second start's
    // helper with hierarag.
    for pid_file in ["held", "helper-2"] {
        let pid: u32 = std::fs::read_to_string(root.join(pid_file))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(gone_within(pid), "{pid_file} ({pid}) outlived hierarag");
    }
}

/// Whether process `pid` is gone (a zombie counts: it runs nothing, and reaping an orphan is
/// its new parent's business) within ten seconds, as a signal is delivered asynchronously.
#[cfg(target_os = "linux")]
fn gone_within(pid: u32) -> bool {
    let gone = || match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            stat[stat.rfind(')').unwrap() + 1..]
                .split_whitespace()
                .next()
                == Some("Z")
        }
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::time::Instant::now() < deadline {
        if gone() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    gone()
}
