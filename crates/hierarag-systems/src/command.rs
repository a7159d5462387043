//! A program that answers questions over JSON lines (docs/design.md, "Systems").

use std::collections::HashMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, Command};
use tokio::sync::{Mutex, oneshot};

/// How to run the program.
#[derive(Debug, Clone)]
pub struct CommandSettings {
    /// The program and its arguments.
    pub command: Vec<String>,
    /// Where the program's stderr goes (appended), with this side's notes on its stdout.
    pub log: PathBuf,
    /// How long one question may wait for its answer.
    pub timeout: Duration,
    /// How many times the program is started again after it exits, over the system's life.
    pub max_restarts: u32,
}

/// One context of an answer: the text given to the model and the document it came from, as
/// far as the program says.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Context {
    #[serde(default)]
    pub doc_id: Option<String>,
    #[serde(default)]
    pub text: Option<String>,
}

/// The program's answer to one question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub answer: String,
    pub contexts: Vec<Context>,
}

#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error("the command is empty")]
    Empty,
    #[error("cannot start {program}")]
    Start {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot open the log {path}")]
    Log {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the program exited ({status}) and was started again {restarts} times; not again")]
    Exhausted { status: String, restarts: u32 },
    #[error("no answer within {0:.0} s")]
    Timeout(f64),
    #[error("the answer line is not usable: {0}")]
    BadReply(String),
}

/// The questions waiting for their answer, by id.
type Pending = Arc<StdMutex<HashMap<String, oneshot::Sender<Result<Value, String>>>>>;

/// One start of the program.
#[derive(Debug)]
struct Running {
    stdin: Mutex<ChildStdin>,
    pending: Pending,
    alive: Arc<AtomicBool>,
    /// Why it ended, once it has.
    ended: Arc<StdMutex<Option<String>>>,
}

/// A program answering questions; see the crate docs. Cheap to share by reference between
/// concurrent questions.
#[derive(Debug)]
pub struct CommandSystem {
    settings: CommandSettings,
    running: Mutex<Option<Arc<Running>>>,
    restarts: AtomicU32,
}

impl CommandSystem {
    pub fn new(settings: CommandSettings) -> Result<CommandSystem, CommandError> {
        if settings.command.is_empty() {
            return Err(CommandError::Empty);
        }
        Ok(CommandSystem {
            settings,
            running: Mutex::new(None),
            restarts: AtomicU32::new(0),
        })
    }

    /// How many times the program has been started again.
    pub fn restarts(&self) -> u32 {
        self.restarts.load(Ordering::SeqCst)
    }

    /// Asks one question; a question whose program exits before answering is asked again of
    /// the program started anew.
    pub async fn ask(&self, id: &str, question: &str) -> Result<Reply, CommandError> {
        let line = format!("{}\n", serde_json::json!({"id": id, "question": question}));
        loop {
            let running = self.running().await?;
            let (sender, receiver) = oneshot::channel();
            running
                .pending
                .lock()
                .expect("pending lock")
                .insert(id.to_owned(), sender);
            // The reader marks the program dead before it fails what is pending, so a question
            // added after that is seen here and asked again.
            if !running.alive.load(Ordering::SeqCst) {
                running.pending.lock().expect("pending lock").remove(id);
                continue;
            }
            let written = {
                let mut stdin = running.stdin.lock().await;
                match stdin.write_all(line.as_bytes()).await {
                    Ok(()) => stdin.flush().await,
                    Err(error) => Err(error),
                }
            };
            if written.is_err() {
                // A closed stdin: the program is gone; its reader fails the pending questions.
                running.alive.store(false, Ordering::SeqCst);
                running.pending.lock().expect("pending lock").remove(id);
                continue;
            }
            match tokio::time::timeout(self.settings.timeout, receiver).await {
                Err(_) => {
                    running.pending.lock().expect("pending lock").remove(id);
                    return Err(CommandError::Timeout(self.settings.timeout.as_secs_f64()));
                }
                // The program exited with the question in flight: ask again.
                Ok(Err(_)) | Ok(Ok(Err(_))) => continue,
                Ok(Ok(Ok(value))) => return parse_reply(value),
            }
        }
    }

    /// The running program, started (again) when there is none.
    async fn running(&self) -> Result<Arc<Running>, CommandError> {
        let mut slot = self.running.lock().await;
        if let Some(running) = slot.as_ref() {
            if running.alive.load(Ordering::SeqCst) {
                return Ok(running.clone());
            }
            let status = running
                .ended
                .lock()
                .expect("ended lock")
                .clone()
                .unwrap_or_else(|| "its stdin closed".into());
            let restarts = self.restarts.load(Ordering::SeqCst);
            if restarts >= self.settings.max_restarts {
                return Err(CommandError::Exhausted { status, restarts });
            }
            self.restarts.fetch_add(1, Ordering::SeqCst);
            self.note(&format!("the program ended ({status}); starting it again"));
        }
        let running = Arc::new(self.start()?);
        *slot = Some(running.clone());
        Ok(running)
    }

    fn start(&self) -> Result<Running, CommandError> {
        let program = &self.settings.command[0];
        let log = self.open_log()?;
        let mut child = Command::new(program)
            .args(&self.settings.command[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| CommandError::Start {
                program: program.clone(),
                source,
            })?;
        let stdin = child.stdin.take().expect("stdin was piped");
        let stdout = child.stdout.take().expect("stdout was piped");
        let pending: Pending = Arc::default();
        let alive = Arc::new(AtomicBool::new(true));
        let ended: Arc<StdMutex<Option<String>>> = Arc::default();
        let (task_pending, task_alive, task_ended) =
            (pending.clone(), alive.clone(), ended.clone());
        let log_path = self.settings.log.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            let mut line_no = 0usize;
            while let Ok(Some(line)) = lines.next_line().await {
                line_no += 1;
                let id = match serde_json::from_str::<Value>(&line) {
                    Ok(Value::Object(object)) => match object.get("id") {
                        Some(Value::String(id)) => Some((id.clone(), Value::Object(object))),
                        _ => None,
                    },
                    _ => None,
                };
                match id {
                    Some((id, value)) => {
                        let waiting = task_pending.lock().expect("pending lock").remove(&id);
                        if let Some(sender) = waiting {
                            let _ = sender.send(Ok(value));
                        }
                    }
                    None => note_to(
                        &log_path,
                        &format!(
                            "stdout line {line_no} is not an answer (a JSON object with a string \
`id`), ignored: {}",
                            excerpt(&line)
                        ),
                    ),
                }
            }
            task_alive.store(false, Ordering::SeqCst);
            let status = match child.wait().await {
                Ok(status) => status.to_string(),
                Err(error) => format!("cannot wait for it: {error}"),
            };
            *task_ended.lock().expect("ended lock") = Some(status.clone());
            let waiting: Vec<_> = task_pending.lock().expect("pending lock").drain().collect();
            for (_, sender) in waiting {
                let _ = sender.send(Err(status.clone()));
            }
        });
        Ok(Running {
            stdin: Mutex::new(stdin),
            pending,
            alive,
            ended,
        })
    }

    fn open_log(&self) -> Result<std::fs::File, CommandError> {
        let path = &self.settings.log;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|source| CommandError::Log {
                path: path.clone(),
                source,
            })?;
        }
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|source| CommandError::Log {
                path: path.clone(),
                source,
            })
    }

    fn note(&self, message: &str) {
        note_to(&self.settings.log, message);
    }
}

/// Appends `[hierarag] message` to the log (best effort: the log is for people).
fn note_to(path: &std::path::Path, message: &str) {
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(file, "[hierarag] {message}");
    }
}

fn excerpt(line: &str) -> String {
    let mut text: String = line.chars().take(80).collect();
    if line.chars().count() > 80 {
        text.push('…');
    }
    text
}

impl Reply {
    /// A reply from its JSON form, as a program gives it: `{"answer": "...", "contexts":
    /// [...]}`, contexts absent, or a list of strings (texts) or of objects with `doc_id`
    /// and/or `text`; an error says what does not fit.
    pub fn from_json(value: Value) -> Result<Reply, String> {
        parse_reply(value).map_err(|error| error.to_string())
    }
}

/// `{"id", "answer", "contexts": [...]}`: the answer a string; contexts absent, or a list of
/// strings (texts) or of objects with `doc_id` and/or `text`.
fn parse_reply(value: Value) -> Result<Reply, CommandError> {
    let bad = |message: String| CommandError::BadReply(message);
    let Value::Object(mut object) = value else {
        return Err(bad("not an object".into()));
    };
    let answer = match object.remove("answer") {
        Some(Value::String(answer)) => answer,
        Some(other) => {
            return Err(bad(format!(
                "`answer` is {}, not a string",
                excerpt(&other.to_string())
            )));
        }
        None => {
            return Err(bad(format!(
                "no `answer` in {}",
                excerpt(&Value::Object(object).to_string())
            )));
        }
    };
    let contexts = match object.remove("contexts") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .into_iter()
            .map(|item| match item {
                Value::String(text) => Ok(Context {
                    doc_id: None,
                    text: Some(text),
                }),
                Value::Object(_) => serde_json::from_value::<Context>(item)
                    .map_err(|e| bad(format!("a context: {e}"))),
                other => Err(bad(format!(
                    "a context is {}, not a string or an object",
                    excerpt(&other.to_string())
                ))),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(bad(format!(
                "`contexts` is {}, not a list",
                excerpt(&other.to_string())
            )));
        }
    };
    Ok(Reply { answer, contexts })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_read_strictly() {
        let reply = parse_reply(serde_json::json!({
            "id": "q1", "answer": "A", "contexts": ["t", {"doc_id": "d", "text": "x"}, {"doc_id": "e"}]
        }))
        .unwrap();
        assert_eq!(reply.answer, "A");
        assert_eq!(
            reply.contexts,
            [
                Context {
                    doc_id: None,
                    text: Some("t".into())
                },
                Context {
                    doc_id: Some("d".into()),
                    text: Some("x".into())
                },
                Context {
                    doc_id: Some("e".into()),
                    text: None
                },
            ]
        );
        for (bad, says) in [
            (serde_json::json!({"id": "q"}), "no `answer`"),
            (serde_json::json!({"id": "q", "answer": 3}), "not a string"),
            (
                serde_json::json!({"id": "q", "answer": "a", "contexts": "x"}),
                "not a list",
            ),
            (
                serde_json::json!({"id": "q", "answer": "a", "contexts": [1]}),
                "a context is 1",
            ),
        ] {
            let error = parse_reply(bad).unwrap_err().to_string();
            assert!(error.contains(says), "{error}");
        }
    }
}
