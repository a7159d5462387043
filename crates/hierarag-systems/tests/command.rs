//! The command protocol against real programs (Python, standard library): answers out of order,
//! several outstanding, a program that dies and is started again, garbage on stdout, a reply
//! without its answer, a program that keeps dying, and a question that never gets its answer.

use std::path::Path;
use std::time::Duration;

use futures_util::future::join_all;
use hierarag_systems::{CommandError, CommandSettings, CommandSystem};

fn python() -> String {
    std::env::var("HIERARAG_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// A program from its Python source, in `dir`.
fn system(dir: &Path, source: &str, max_restarts: u32, timeout: Duration) -> CommandSystem {
    let script = dir.join("program.py");
    std::fs::write(&script, source).unwrap();
    CommandSystem::new(CommandSettings {
        command: vec![python(), script.display().to_string()],
        log: dir.join("command.log"),
        timeout,
        max_restarts,
    })
    .unwrap()
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
