//! A program that answers questions over JSON lines (docs/design.md, "Systems").

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex as StdMutex, OnceLock};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::{Mutex, oneshot};

/// The size past which a program's log is rotated unless configured.
pub const DEFAULT_MAX_LOG_BYTES: u64 = 8 * 1024 * 1024;

/// How long a program that closed its stdout has to exit before its process group is ended.
const EXIT_GRACE: Duration = Duration::from_secs(5);

/// How long the lines a program wrote before it exited are still read once its group is
/// ended (a process that left the group may hold its stdout open).
const DRAIN: Duration = Duration::from_secs(2);

/// How much of a line over the limit is kept, to find its question's id and show its start.
const KEPT_OF_LONG_LINE: usize = 1024;

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
    /// The longest answer line read from the program's stdout, in bytes
    /// ([`crate::DEFAULT_MAX_REPLY_BYTES`] unless configured): a longer one is read no further
    /// and fails its question when its `id` is the line's first key.
    pub max_reply_bytes: usize,
    /// The log's size past which it is renamed `<log>.1` (replacing an older one) and a new
    /// one begun, so that the two hold at most twice this ([`DEFAULT_MAX_LOG_BYTES`] unless
    /// configured).
    pub max_log_bytes: u64,
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
    #[error(
        "the answer line is longer than the limit of {limit} bytes (max_reply_bytes); the rest \
was not read"
    )]
    TooLong { limit: usize },
}

/// What the reader hands a waiting question.
#[derive(Debug)]
enum Delivery {
    Answer(Value),
    /// Its answer line was over the limit.
    TooLong,
    /// The program ended before answering: ask again.
    Ended,
}

/// The questions waiting for their answer, by id.
type Pending = Arc<StdMutex<HashMap<String, oneshot::Sender<Delivery>>>>;

/// One start of the program.
#[derive(Debug)]
struct Running {
    stdin: Mutex<ChildStdin>,
    pending: Pending,
    alive: Arc<AtomicBool>,
    /// Why it ended, once it has.
    ended: Arc<StdMutex<Option<String>>>,
    group: Arc<Group>,
}

/// A program answering questions; see the crate docs. Cheap to share by reference between
/// concurrent questions. Dropping it ends the program and every process it started.
#[derive(Debug)]
pub struct CommandSystem {
    settings: CommandSettings,
    running: Mutex<Option<Arc<Running>>>,
    restarts: AtomicU32,
    /// Opened at the first start.
    log: OnceLock<Arc<Log>>,
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
            log: OnceLock::new(),
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
                // A closed stdin: the program is gone, or will not read again; it is ended
                // before the next start.
                running.alive.store(false, Ordering::SeqCst);
                running.pending.lock().expect("pending lock").remove(id);
                continue;
            }
            match tokio::time::timeout(self.settings.timeout, receiver).await {
                Err(_) => {
                    running.pending.lock().expect("pending lock").remove(id);
                    return Err(CommandError::Timeout(self.settings.timeout.as_secs_f64()));
                }
                Ok(Ok(Delivery::Answer(value))) => return parse_reply(value),
                Ok(Ok(Delivery::TooLong)) => {
                    return Err(CommandError::TooLong {
                        limit: self.settings.max_reply_bytes,
                    });
                }
                // The program exited with the question in flight: ask again.
                Ok(Ok(Delivery::Ended)) | Ok(Err(_)) => continue,
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
            // Whatever is left of it (a program that closed its stdin but runs on, a child
            // it forked) ends before another start.
            running.group.end();
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
        let log = self.log()?;
        let mut command = Command::new(program);
        command
            .args(&self.settings.command[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // A group of its own, so that the children it forks can be ended with it.
        #[cfg(unix)]
        command.process_group(0);
        let mut child = command.spawn().map_err(|source| CommandError::Start {
            program: program.clone(),
            source,
        })?;
        let group = Arc::new(Group {
            id: child.id(),
            ended: AtomicBool::new(false),
        });
        let stdin = child.stdin.take().expect("stdin was piped");
        let stdout = child.stdout.take().expect("stdout was piped");
        let stderr = child.stderr.take().expect("stderr was piped");
        tokio::spawn(copy_to_log(stderr, log.clone()));
        let pending: Pending = Arc::default();
        let alive = Arc::new(AtomicBool::new(true));
        let ended: Arc<StdMutex<Option<String>>> = Arc::default();
        let watch = Watch {
            pending: pending.clone(),
            alive: alive.clone(),
            ended: ended.clone(),
            group: group.clone(),
            log,
            limit: self.settings.max_reply_bytes,
        };
        tokio::spawn(watch.run(child, stdout));
        Ok(Running {
            stdin: Mutex::new(stdin),
            pending,
            alive,
            ended,
            group,
        })
    }

    /// The log, opened at the first start.
    fn log(&self) -> Result<Arc<Log>, CommandError> {
        if let Some(log) = self.log.get() {
            return Ok(log.clone());
        }
        let log = Arc::new(Log::open(&self.settings.log, self.settings.max_log_bytes)?);
        // Starts happen one at a time (under `running`'s lock), so this sets it.
        Ok(self.log.get_or_init(|| log).clone())
    }

    fn note(&self, message: &str) {
        if let Some(log) = self.log.get() {
            log.note(message);
        }
    }
}

impl Drop for CommandSystem {
    /// Ends the program's process group: the program and every child it forked.
    fn drop(&mut self) {
        if let Some(running) = self.running.get_mut().take() {
            running.group.end();
        }
    }
}

/// A started program's process group (its id is the program's pid), ended at most once.
#[derive(Debug)]
struct Group {
    id: Option<u32>,
    ended: AtomicBool,
}

impl Group {
    /// Kills every process of the group (SIGKILL). Called when the program has exited (so
    /// that a child it forked cannot hold its stdout), before it is started again and when the
    /// system is dropped; once only, so that a group id reused later is never signalled.
    fn end(&self) {
        if self.ended.swap(true, Ordering::SeqCst) {
            return;
        }
        #[cfg(unix)]
        if let Some(pid) = self
            .id
            .and_then(|id| i32::try_from(id).ok())
            .and_then(rustix::process::Pid::from_raw)
        {
            // An error means that no process of the group is left.
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}

/// What the task that watches one start of the program shares with it.
struct Watch {
    pending: Pending,
    alive: Arc<AtomicBool>,
    ended: Arc<StdMutex<Option<String>>>,
    group: Arc<Group>,
    log: Arc<Log>,
    limit: usize,
}

impl Watch {
    /// Hands each answer line to its question until the program exits — seen from the
    /// process itself, not from the end of its stdout, which a child it forked may hold
    /// open — then ends its group, hands on the lines it wrote before it exited, and fails the
    /// questions still waiting so that they are asked again.
    async fn run(self, mut child: Child, stdout: ChildStdout) {
        let mut lines = Lines::new(stdout, self.limit);
        let status = loop {
            tokio::select! {
                read = lines.next() => match read {
                    Ok(Some(line)) => self.deliver(line, lines.number),
                    // It closed its stdout, so it can answer nothing more.
                    Ok(None) | Err(_) => {
                        break match tokio::time::timeout(EXIT_GRACE, child.wait()).await {
                            Ok(status) => status,
                            Err(_) => {
                                self.group.end();
                                child.wait().await
                            }
                        };
                    }
                },
                status = child.wait() => break status,
            }
        };
        let status = match status {
            Ok(status) => status.to_string(),
            Err(error) => format!("cannot wait for it: {error}"),
        };
        *self.ended.lock().expect("ended lock") = Some(status);
        self.alive.store(false, Ordering::SeqCst);
        self.group.end();
        let _ = tokio::time::timeout(DRAIN, async {
            while let Ok(Some(line)) = lines.next().await {
                self.deliver(line, lines.number);
            }
        })
        .await;
        let waiting: Vec<_> = self.pending.lock().expect("pending lock").drain().collect();
        for (_, sender) in waiting {
            let _ = sender.send(Delivery::Ended);
        }
    }

    /// Hands line `number` of the program's stdout to its question, or notes why not.
    fn deliver(&self, line: Line, number: usize) {
        match line {
            Line::Whole(bytes) => {
                let answer = match serde_json::from_slice::<Value>(&bytes) {
                    Ok(Value::Object(object)) => match object.get("id") {
                        Some(Value::String(id)) => Some((id.clone(), Value::Object(object))),
                        _ => None,
                    },
                    _ => None,
                };
                match answer {
                    Some((id, value)) => self.send(&id, Delivery::Answer(value)),
                    None => self.log.note(&format!(
                        "stdout line {number} is not an answer (a JSON object with a string \
`id`), ignored: {}",
                        excerpt(&String::from_utf8_lossy(&bytes))
                    )),
                }
            }
            Line::TooLong(start) => {
                let id = leading_id(&start);
                let whose = match &id {
                    Some(id) => format!("question {id} fails"),
                    None => "its question is not known (`id` is not the line's first key) and \
waits for its timeout"
                        .into(),
                };
                self.log.note(&format!(
                    "stdout line {number} is longer than the limit of {} bytes \
(max_reply_bytes), not read further; {whose}: {}",
                    self.limit,
                    excerpt(&String::from_utf8_lossy(&start))
                ));
                if let Some(id) = id {
                    self.send(&id, Delivery::TooLong);
                }
            }
        }
    }

    fn send(&self, id: &str, delivery: Delivery) {
        let waiting = self.pending.lock().expect("pending lock").remove(id);
        if let Some(sender) = waiting {
            let _ = sender.send(delivery);
        }
    }
}

/// One line of the program's stdout.
#[derive(Debug)]
enum Line {
    Whole(Vec<u8>),
    /// Over the limit: its first [`KEPT_OF_LONG_LINE`] bytes; the rest was skipped.
    TooLong(Vec<u8>),
}

/// A program's stdout cut into lines of at most `limit` bytes, so that memory stays bounded
/// whatever the program prints. Cancel-safe: a line read in part stays here for the next call.
struct Lines {
    reader: BufReader<ChildStdout>,
    line: Vec<u8>,
    over: bool,
    limit: usize,
    /// Lines returned so far.
    number: usize,
}

impl Lines {
    fn new(stdout: ChildStdout, limit: usize) -> Lines {
        Lines {
            reader: BufReader::new(stdout),
            line: Vec::new(),
            over: false,
            limit,
            number: 0,
        }
    }

    /// The next line (its newline dropped; a last line without one included), or `None` at
    /// the end.
    async fn next(&mut self) -> std::io::Result<Option<Line>> {
        loop {
            let available = self.reader.fill_buf().await?;
            if available.is_empty() {
                if self.line.is_empty() && !self.over {
                    return Ok(None);
                }
                return Ok(Some(self.take()));
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let part = &available[..newline.unwrap_or(available.len())];
            if !self.over {
                if self.line.len() + part.len() > self.limit {
                    self.over = true;
                    let keep = KEPT_OF_LONG_LINE
                        .saturating_sub(self.line.len())
                        .min(part.len());
                    self.line.extend_from_slice(&part[..keep]);
                    self.line.truncate(KEPT_OF_LONG_LINE);
                    self.line.shrink_to(KEPT_OF_LONG_LINE);
                } else {
                    self.line.extend_from_slice(part);
                }
            }
            let used = newline.map_or(available.len(), |at| at + 1);
            self.reader.consume(used);
            if newline.is_some() {
                return Ok(Some(self.take()));
            }
        }
    }

    fn take(&mut self) -> Line {
        self.number += 1;
        let line = std::mem::take(&mut self.line);
        if std::mem::take(&mut self.over) {
            Line::TooLong(line)
        } else {
            Line::Whole(line)
        }
    }
}

/// The `id` of an answer line from its start, when it is the line's first key.
fn leading_id(start: &[u8]) -> Option<String> {
    let rest = start
        .trim_ascii_start()
        .strip_prefix(b"{")?
        .trim_ascii_start();
    let rest = rest.strip_prefix(b"\"id\"")?.trim_ascii_start();
    let rest = rest.strip_prefix(b":")?.trim_ascii_start();
    serde_json::Deserializer::from_slice(rest)
        .into_iter::<String>()
        .next()?
        .ok()
}

/// Copies the program's stderr into the log until the program and every process holding its
/// stderr are gone.
/// Every registered secret is scrubbed on the way, also one split across two reads.
async fn copy_to_log(mut stderr: ChildStderr, log: Arc<Log>) {
    let mut buffer = vec![0; 8192];
    let mut sink = hierarag_fs::secrets::ScrubWriter::new(LogSink(log));
    while let Ok(n) = stderr.read(&mut buffer).await {
        if n == 0 {
            break;
        }
        let _ = sink.write_all(&buffer[..n]);
    }
    let _ = sink.flush();
}

/// The [`Log`] as a [`std::io::Write`], for the scrubber in front of it.
struct LogSink(Arc<Log>);

impl std::io::Write for LogSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The program's log: its stderr and this side's notes, appended. Past `max_bytes` it is
/// renamed `<log>.1` (replacing the one before) and a new one begun, so that the two hold at
/// most twice `max_bytes` whatever the program prints. Writes are best effort: the log is for
/// people.
#[derive(Debug)]
struct Log {
    path: PathBuf,
    max_bytes: u64,
    /// The open file and its length; `None` after a failed rotation.
    file: StdMutex<(Option<std::fs::File>, u64)>,
}

impl Log {
    fn open(path: &Path, max_bytes: u64) -> Result<Log, CommandError> {
        let error = |source| CommandError::Log {
            path: path.to_path_buf(),
            source,
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(error)?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(error)?;
        let len = file.metadata().map_err(error)?.len();
        Ok(Log {
            path: path.to_path_buf(),
            max_bytes: max_bytes.max(1),
            file: StdMutex::new((Some(file), len)),
        })
    }

    fn write(&self, mut bytes: &[u8]) {
        let mut state = self.file.lock().unwrap_or_else(|e| e.into_inner());
        while !bytes.is_empty() {
            if state.1 >= self.max_bytes {
                *state = self.rotate();
            }
            let (Some(file), len) = &mut *state else {
                return;
            };
            let room = usize::try_from(self.max_bytes - *len).unwrap_or(usize::MAX);
            let n = room.min(bytes.len());
            if file.write_all(&bytes[..n]).is_err() {
                return;
            }
            *len += n as u64;
            bytes = &bytes[n..];
        }
    }

    /// The log renamed `<log>.1` and a new one begun (emptied, if the rename failed, so that
    /// the bound holds).
    fn rotate(&self) -> (Option<std::fs::File>, u64) {
        let mut rotated = self.path.clone().into_os_string();
        rotated.push(".1");
        let _ = std::fs::rename(&self.path, &rotated);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(&self.path)
            .ok();
        (file, 0)
    }

    /// Appends `[hierarag] message`.
    fn note(&self, message: &str) {
        let line = format!("[hierarag] {message}\n");
        self.write(&hierarag_fs::secrets::scrub_bytes(line.as_bytes()));
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
