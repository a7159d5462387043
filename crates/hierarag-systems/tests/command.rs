//! The command protocol against real programs (Python, standard library): answers out of order,
//! several outstanding, a program that dies and is started again, garbage on stdout, a reply
//! without its answer, a program that keeps dying, and a question that never gets its answer;
//! what a program cannot do to this side (issue 42): an answer line over the limit, a flood on
//! stderr, and a child it forked that holds its stdout or outlives it.

use std::path::Path;
use std::time::Duration;

use futures_util::future::join_all;
use hierarag_systems::{
    CommandError, CommandSettings, CommandSystem, DEFAULT_MAX_LOG_BYTES, DEFAULT_MAX_REPLY_BYTES,
};

fn python() -> String {
    std::env::var("HIERARAG_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// A program from its Python source, in `dir`.
fn system(dir: &Path, source: &str, max_restarts: u32, timeout: Duration) -> CommandSystem {
    CommandSystem::new(settings(dir, source, max_restarts, timeout)).unwrap()
}

/// The settings of a program from its Python source, in `dir`, with the default limits.
fn settings(dir: &Path, source: &str, max_restarts: u32, timeout: Duration) -> CommandSettings {
    let script = dir.join("program.py");
    std::fs::write(&script, source).unwrap();
    CommandSettings {
        command: vec![python(), script.display().to_string()],
        log: dir.join("command.log"),
        timeout,
        max_restarts,
        max_reply_bytes: DEFAULT_MAX_REPLY_BYTES,
        max_log_bytes: DEFAULT_MAX_LOG_BYTES,
    }
}

/// Holds questions in batches of four and answers each batch in reverse order.
const REVERSING: &str = r#"
import json, sys
held = []
for line in sys.stdin:
    held.append(json.loads(line))
    if len(held) == 4:
        for q in reversed(held):
            print(json.dumps({"id": q["id"], "answer": q["question"].upper(),
                              "contexts": [{"doc_id": "d-" + q["id"], "text": "t"}]}), flush=True)
        held = []
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_come_back_to_their_questions_in_any_order() {
    let dir = tempfile::tempdir().unwrap();
    let program = system(dir.path(), REVERSING, 0, Duration::from_secs(30));
    let replies = join_all((0..16).map(|i| {
        let program = &program;
        async move {
            (
                i,
                program
                    .ask(&format!("q{i}"), &format!("question {i}"))
                    .await,
            )
        }
    }))
    .await;
    for (i, reply) in replies {
        let reply = reply.unwrap();
        assert_eq!(reply.answer, format!("QUESTION {i}"));
        assert_eq!(
            reply.contexts[0].doc_id.as_deref(),
            Some(format!("d-q{i}").as_str())
        );
    }
    assert_eq!(program.restarts(), 0);
}

/// Answers, but exits for good after its third answer of each start (a counter file says
/// how many starts there were); prints a line of garbage first and writes to stderr.
const DYING: &str = r#"
import json, os, sys
starts = os.path.join(os.path.dirname(__file__), "starts")
n = int(open(starts).read()) + 1 if os.path.exists(starts) else 1
open(starts, "w").write(str(n))
print("starting up, not JSON", flush=True)
print("start", n, file=sys.stderr, flush=True)
answered = 0
for line in sys.stdin:
    q = json.loads(line)
    if q["id"] == "broken":
        print(json.dumps({"id": "broken", "reply": "no answer field"}), flush=True)
        continue
    print(json.dumps({"id": q["id"], "answer": "a " + q["id"]}), flush=True)
    answered += 1
    if answered == 3:
        os._exit(3)
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_that_dies_is_started_again_and_its_questions_asked_again() {
    let dir = tempfile::tempdir().unwrap();
    let program = system(dir.path(), DYING, 10, Duration::from_secs(30));
    let replies = join_all((0..10).map(|i| {
        let program = &program;
        async move { (i, program.ask(&format!("q{i}"), "?").await) }
    }))
    .await;
    for (i, reply) in replies {
        assert_eq!(reply.unwrap().answer, format!("a q{i}"));
    }
    assert!(program.restarts() >= 3, "{}", program.restarts());
    // A reply without its answer fails that question only, saying why.
    let error = program.ask("broken", "?").await.unwrap_err();
    assert!(matches!(error, CommandError::BadReply(_)), "{error}");
    assert!(error.to_string().contains("no `answer`"), "{error}");
    let log = std::fs::read_to_string(dir.path().join("command.log")).unwrap();
    assert!(log.contains("start 1") && log.contains("start 2"), "{log}");
    assert!(log.contains("stdout line 1 is not an answer"), "{log}");
    assert!(log.contains("starting it again"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_that_keeps_dying_is_given_up_naming_its_exit() {
    let dir = tempfile::tempdir().unwrap();
    let program = system(
        dir.path(),
        "import sys\nsys.exit(7)\n",
        2,
        Duration::from_secs(30),
    );
    let error = program.ask("q1", "?").await.unwrap_err();
    let text = error.to_string();
    assert!(
        matches!(error, CommandError::Exhausted { restarts: 2, .. }),
        "{text}"
    );
    assert!(text.contains("exit status: 7"), "{text}");
    let missing = CommandSystem::new(CommandSettings {
        command: vec!["/nonexistent/program".into()],
        log: dir.path().join("other.log"),
        timeout: Duration::from_secs(1),
        max_restarts: 0,
        max_reply_bytes: DEFAULT_MAX_REPLY_BYTES,
        max_log_bytes: DEFAULT_MAX_LOG_BYTES,
    })
    .unwrap();
    let error = missing.ask("q1", "?").await.unwrap_err();
    assert!(matches!(error, CommandError::Start { .. }), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_without_an_answer_times_out_and_the_others_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let silent_on_q2 = r#"
import json, sys
for line in sys.stdin:
    q = json.loads(line)
    if q["id"] != "q2":
        print(json.dumps({"id": q["id"], "answer": "ok"}), flush=True)
"#;
    let program = system(dir.path(), silent_on_q2, 0, Duration::from_millis(800));
    let (one, two) = tokio::join!(program.ask("q1", "?"), program.ask("q2", "?"));
    assert_eq!(one.unwrap().answer, "ok");
    assert!(matches!(two.unwrap_err(), CommandError::Timeout(_)));
    assert_eq!(program.ask("q3", "?").await.unwrap().answer, "ok");
}

/// Answers its questions; for `big`, an answer line of a million bytes, `id` first; for
/// `big-id-last`, as long a line with `id` last.
const LONG_LINES: &str = r#"
import json, sys
for line in sys.stdin:
    q = json.loads(line)
    if q["id"] == "big":
        print(json.dumps({"id": "big", "answer": "x" * 1000000}), flush=True)
    elif q["id"] == "big-id-last":
        print(json.dumps({"answer": "x" * 1000000, "id": "big-id-last"}), flush=True)
    else:
        print(json.dumps({"id": q["id"], "answer": "a " + q["id"]}), flush=True)
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn command_answer_line_over_the_limit_fails_naming_question_and_limit() {
    let dir = tempfile::tempdir().unwrap();
    let program = CommandSystem::new(CommandSettings {
        max_reply_bytes: 1000,
        ..settings(dir.path(), LONG_LINES, 0, Duration::from_secs(30))
    })
    .unwrap();
    let error = program.ask("big", "?").await.unwrap_err();
    assert!(
        matches!(error, CommandError::TooLong { limit: 1000 }),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("longer than the limit of 1000 bytes (max_reply_bytes)"),
        "{error}"
    );
    // The program goes on, and the next line is read from its start.
    assert_eq!(program.ask("q1", "?").await.unwrap().answer, "a q1");
    assert_eq!(program.restarts(), 0);
    let log = std::fs::read_to_string(dir.path().join("command.log")).unwrap();
    assert!(
        log.contains("stdout line 1 is longer than the limit of 1000 bytes")
            && log.contains("question big fails"),
        "{log}"
    );
    assert!(log.len() < 5000, "only the line's start is shown: {log}");

    // A line whose `id` comes last cannot be told whose it is: noted, and its question waits.
    let short = CommandSystem::new(CommandSettings {
        max_reply_bytes: 1000,
        log: dir.path().join("short.log"),
        ..settings(dir.path(), LONG_LINES, 0, Duration::from_millis(500))
    })
    .unwrap();
    let error = short.ask("big-id-last", "?").await.unwrap_err();
    assert!(matches!(error, CommandError::Timeout(_)), "{error}");
    let log = std::fs::read_to_string(dir.path().join("short.log")).unwrap();
    assert!(log.contains("its question is not known"), "{log}");
}

/// Writes two megabytes to stderr, then answers.
const NOISY: &str = r#"
import json, sys
for i in range(20000):
    sys.stderr.write("noise %06d %s\n" % (i, "n" * 88))
sys.stderr.flush()
for line in sys.stdin:
    q = json.loads(line)
    print(json.dumps({"id": q["id"], "answer": "a " + q["id"]}), flush=True)
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn command_stderr_log_is_capped() {
    let dir = tempfile::tempdir().unwrap();
    let cap = 64 * 1024;
    let program = CommandSystem::new(CommandSettings {
        max_log_bytes: cap,
        ..settings(dir.path(), NOISY, 0, Duration::from_secs(30))
    })
    .unwrap();
    // The program answers only once its stderr is written, all but a pipe's worth of it read.
    assert_eq!(program.ask("q1", "?").await.unwrap().answer, "a q1");
    drop(program);
    let log = dir.path().join("command.log");
    let rotated = dir.path().join("command.log.1");
    // The log's task drains what was left in the pipe after the drop, and may be rotating the
    // log (renamed, a new one not yet made) at any moment until it has: read the sizes once
    // two looks 50 ms apart agree.
    let sizes_now = || {
        [&log, &rotated]
            .map(|path| path.metadata().map(|m| m.len()).ok())
            .into_iter()
            .collect::<Option<Vec<u64>>>()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let sizes = loop {
        let first = sizes_now();
        tokio::time::sleep(Duration::from_millis(50)).await;
        match (first, sizes_now()) {
            (Some(a), Some(b)) if a == b => break b,
            _ => assert!(
                std::time::Instant::now() < deadline,
                "the log kept changing for 10 s"
            ),
        }
    };
    assert!(sizes.iter().all(|&size| size <= cap), "{sizes:?}");
    // The rotated log holds the latest output before the current one: not the first lines.
    let text = std::fs::read_to_string(&rotated).unwrap();
    assert!(!text.contains("noise 000000"), "{}", &text[..100]);
}

/// The first start answers its first question, forks a child that keeps the program's stdin,
/// stdout and stderr open for ten minutes, writes the child's pid to `grandchild` and exits;
/// later starts answer every question.
const FORKS_AND_EXITS: &str = r#"
import json, os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
starts = os.path.join(here, "starts")
n = int(open(starts).read()) + 1 if os.path.exists(starts) else 1
open(starts, "w").write(str(n))
for line in sys.stdin:
    q = json.loads(line)
    print(json.dumps({"id": q["id"], "answer": "a " + q["id"]}), flush=True)
    if n == 1:
        child = os.fork()
        if child == 0:
            time.sleep(600)
            os._exit(0)
        open(os.path.join(here, "grandchild"), "w").write(str(child))
        os._exit(3)
"#;

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn command_program_exit_is_seen_while_a_child_holds_stdout() {
    let dir = tempfile::tempdir().unwrap();
    // Were the exit seen only at the end of its stdout, every question after the first would
    // wait out this timeout and fail.
    let program = system(dir.path(), FORKS_AND_EXITS, 3, Duration::from_secs(30));
    for i in 0..12 {
        let id = format!("q{i}");
        let reply = program.ask(&id, "?").await;
        assert_eq!(reply.unwrap().answer, format!("a {id}"));
    }
    assert_eq!(program.restarts(), 1);
    let grandchild = read_pid(&dir.path().join("grandchild"));
    assert!(
        gone_within(grandchild, Duration::from_secs(10)),
        "the child it forked was ended with it"
    );
    let log = std::fs::read_to_string(dir.path().join("command.log")).unwrap();
    assert!(
        log.contains("the program ended (exit status: 3); starting it again"),
        "{log}"
    );
}

/// Each start forks a child detached from the program's pipes (it would live ten minutes) and
/// writes `<program pid> <child pid>` to `pids-<start>`; the first start exits after its first
/// answer, later ones answer every question.
const FORKS_A_HELPER: &str = r#"
import json, os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
starts = os.path.join(here, "starts")
n = int(open(starts).read()) + 1 if os.path.exists(starts) else 1
open(starts, "w").write(str(n))
child = os.fork()
if child == 0:
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    time.sleep(600)
    os._exit(0)
open(os.path.join(here, "pids-%d" % n), "w").write("%d %d" % (os.getpid(), child))
for line in sys.stdin:
    q = json.loads(line)
    print(json.dumps({"id": q["id"], "answer": "a %s from %d" % (q["id"], n)}), flush=True)
    if n == 1:
        os._exit(3)
"#;

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn command_process_group_is_ended_on_restart_and_drop() {
    let dir = tempfile::tempdir().unwrap();
    let program = system(dir.path(), FORKS_A_HELPER, 3, Duration::from_secs(30));
    assert_eq!(program.ask("q1", "?").await.unwrap().answer, "a q1 from 1");
    assert_eq!(program.ask("q2", "?").await.unwrap().answer, "a q2 from 2");
    let pids = |start: u32| -> Vec<i32> {
        std::fs::read_to_string(dir.path().join(format!("pids-{start}")))
            .unwrap()
            .split(' ')
            .map(|pid| pid.parse().unwrap())
            .collect()
    };
    let (first, second) = (pids(1), pids(2));
    assert!(
        gone_within(first[1], Duration::from_secs(10)),
        "the first start's helper ended when the program was started again"
    );
    assert!(
        !gone(second[0]) && !gone(second[1]),
        "the second start runs"
    );
    drop(program);
    for pid in second {
        assert!(
            gone_within(pid, Duration::from_secs(10)),
            "{pid} ended with the system"
        );
    }
}

#[cfg(unix)]
fn read_pid(path: &Path) -> i32 {
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Whether process `pid` is gone, a zombie counting as gone (it runs nothing; reaping an
/// orphan is its new parent's business, which in a container may never happen).
#[cfg(unix)]
fn gone(pid: i32) -> bool {
    let pid = rustix::process::Pid::from_raw(pid).expect("a positive pid");
    if rustix::process::test_kill_process(pid).is_err() {
        return true;
    }
    std::fs::read_to_string(format!("/proc/{}/stat", pid.as_raw_nonzero()))
        .ok()
        .and_then(|stat| {
            let after_name = &stat[stat.rfind(')')? + 1..];
            after_name
                .split_whitespace()
                .next()
                .map(|state| state == "Z")
        })
        .unwrap_or(false)
}

/// Whether process `pid` is gone within `limit` (a signal is delivered asynchronously).
#[cfg(unix)]
fn gone_within(pid: i32, limit: Duration) -> bool {
    let deadline = std::time::Instant::now() + limit;
    while std::time::Instant::now() < deadline {
        if gone(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    gone(pid)
}
