//! The response cache: SQLite (WAL) keyed by the sha256 of a canonical JSON of (backend, model,
//! request), so that a rerun costs no call and gets the same replies. A row holds the key, the
//! reply and its usage; the request is not stored (the key stands for it).
//!
//! Lookups run on the calling thread, each on a connection of a small pool: a primary-key read
//! takes microseconds, and WAL readers never wait for the writer. Stores are queued for one
//! writer thread per open cache, which takes what has queued since its last turn and what
//! comes within a short window after it as one batch, runs it in one transaction and commits
//! once (group commit): 64 replies arriving together, or a few hundred microseconds apart,
//! cost one commit rather than 64, and no caller waits for a commit it does not ask for.
//! [`ResponseCache::flush`] waits until every store queued before it has committed, cutting the
//! window short (a stage calls it before it records an item as done); a stored reply is served
//! to lookups from memory until then, and dropping the last handle to the cache waits for the
//! queue too. Checkpoints
//! (copying the WAL into the database file, with its fsyncs) run on a thread of their own, a
//! few times a second while stores come in, so that the writer does not wait for them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::watch;

use crate::error::LlmError;
use crate::types::{ChatRequest, Completion, JsonSchema, Message, Usage};

/// Bumped when the key's recipe changes, so that old entries are never misread.
const KEY_VERSION: u32 = 1;

/// Most stores the writer takes into one transaction.
const MAX_BATCH: usize = 256;

/// How long the writer gathers stores after the first of a batch before it commits them,
/// unless a flush asks for them sooner: replies that arrive a few hundred microseconds apart
/// would otherwise cost a commit each (a commit writes the touched pages to the WAL again).
const COMMIT_WINDOW: Duration = Duration::from_millis(2);

/// How long commits gather before the checkpoint thread copies them into the database file
/// (a page rewritten by several commits is copied once).
const CHECKPOINT_EVERY: Duration = Duration::from_millis(200);

/// WAL pages (64 MB of 4 KiB pages) past which the checkpoint thread also restarts the WAL.
/// While stores keep coming, a passive checkpoint never finds the WAL fully copied when the
/// writer begins, so the writer never starts it over and it grows; a restart waits for the
/// writer between two batches (stores queue meanwhile) and makes the next one start over.
const WAL_RESTART_PAGES: i64 = 16_384;

/// A response cache in one SQLite file, safe to share between tasks and processes. Cheap to
/// clone: clones share the connections, the writer thread and its queue; the thread ends
/// (after committing what is queued) when the last clone is dropped.
#[derive(Debug, Clone)]
pub struct ResponseCache {
    path: PathBuf,
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    /// How a completion is stored in this file ([`INSERT_COMPLETION`] or, in a file made
    /// before requests stopped being stored, [`INSERT_COMPLETION_WITH_REQUEST`]).
    insert_completion: &'static str,
    /// Idle read connections; a lookup takes one (or opens one) and puts it back.
    readers: Mutex<Vec<Connection>>,
    /// Stores queued so far.
    queued: AtomicU64,
    /// Stores the writer has finished (committed or failed), as it last reported.
    finished: watch::Receiver<u64>,
    /// What the writer thread updates (it holds this, never the handles, so that the last
    /// handle is never dropped on the thread that dropping it joins).
    state: Arc<WriterState>,
    writer: Writer,
}

#[derive(Debug, Default)]
struct WriterState {
    /// Completions queued but not yet committed, by key: lookups see them at once.
    pending: Mutex<HashMap<String, Completion>>,
    /// The first store that failed since the last flush.
    failure: Mutex<Option<String>>,
}

/// One statement (or a few) of a store.
type Store = Box<dyn FnOnce(&Connection) -> rusqlite::Result<()> + Send>;

/// A store, run inside a batch's transaction; `key` leaves [`WriterState::pending`] once the
/// transaction has ended.
struct Job {
    work: Store,
    key: Option<String>,
}

/// What goes to the writer thread.
enum Queued {
    Job(Job),
    /// A flush waits: commit what is queued without waiting for more.
    CommitNow,
}

/// The writer thread and the queue to it.
#[derive(Debug)]
struct Writer {
    jobs: Option<mpsc::Sender<Queued>>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Closing the queue ends the thread after the jobs already queued; waiting for it
        // means every store is in the file when the last handle is gone.
        drop(self.jobs.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl ResponseCache {
    /// Opens (or creates) the cache file and its tables; creates missing parent folders.
    pub fn open(path: &Path) -> Result<ResponseCache, LlmError> {
        let fail = |message: String| LlmError::Cache {
            path: path.to_path_buf(),
            message,
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| fail(format!("cannot create folder: {e}")))?;
        }
        let connection = connect(path)
            .and_then(|connection| {
                connection.pragma_update(None, "journal_mode", "WAL")?;
                connection.pragma_update(None, "synchronous", "NORMAL")?;
                // Checkpoints are the checkpoint thread's: one run on commit would hold up
                // the writer for tens of milliseconds (it copies pages and syncs twice).
                connection.pragma_update(None, "wal_autocheckpoint", 0)?;
                connection.execute_batch(
                    "CREATE TABLE IF NOT EXISTS completions (
                         key TEXT PRIMARY KEY,
                         backend TEXT NOT NULL,
                         model TEXT NOT NULL,
                         text TEXT NOT NULL,
                         finish_reason TEXT,
                         prompt_tokens INTEGER NOT NULL,
                         completion_tokens INTEGER NOT NULL,
                         latency_ms REAL NOT NULL,
                         created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
                     );
                     CREATE TABLE IF NOT EXISTS embeddings (
                         key TEXT PRIMARY KEY,
                         backend TEXT NOT NULL,
                         model TEXT NOT NULL,
                         n_texts INTEGER NOT NULL,
                         dim INTEGER NOT NULL,
                         vectors BLOB NOT NULL,
                         created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
                     );",
                )?;
                Ok(connection)
            })
            .map_err(|e| fail(e.to_string()))?;
        let insert_completion = if has_column(&connection, "completions", "request")
            .map_err(|e| fail(e.to_string()))?
        {
            INSERT_COMPLETION_WITH_REQUEST
        } else {
            INSERT_COMPLETION
        };
        let checkpointer = connect(path).map_err(|e| fail(e.to_string()))?;
        let (jobs, queue) = mpsc::channel();
        let (report, finished) = watch::channel(0);
        let state = Arc::new(WriterState::default());
        let writer_state = Arc::clone(&state);
        let thread = std::thread::Builder::new()
            .name("hierarag-cache".into())
            .spawn(move || {
                write_batches(&connection, &queue, checkpointer, &report, &writer_state);
            })
            .map_err(|e| fail(format!("cannot start the cache's writer thread: {e}")))?;
        let shared = Arc::new(Shared {
            insert_completion,
            readers: Mutex::new(Vec::new()),
            queued: AtomicU64::new(0),
            finished,
            state,
            writer: Writer {
                jobs: Some(jobs),
                thread: Some(thread),
            },
        });
        Ok(ResponseCache {
            path: path.to_path_buf(),
            shared,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn error(&self, message: String) -> LlmError {
        LlmError::Cache {
            path: self.path.clone(),
            message,
        }
    }

    /// Runs `work` on a read connection, on this thread.
    fn read<T>(
        &self,
        work: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, LlmError> {
        let idle = lock(&self.shared.readers).pop();
        let connection = match idle {
            Some(connection) => connection,
            None => connect(&self.path).map_err(|e| self.error(e.to_string()))?,
        };
        let outcome = work(&connection).map_err(|e| self.error(e.to_string()));
        lock(&self.shared.readers).push(connection);
        outcome
    }

    /// Queues `work` for the writer thread.
    fn queue(&self, job: Job) -> Result<(), LlmError> {
        // Counted before it is sent, so that a flush that starts after this call returns
        // waits for it.
        self.shared.queued.fetch_add(1, Ordering::SeqCst);
        let sent = self
            .shared
            .writer
            .jobs
            .as_ref()
            .map(|jobs| jobs.send(Queued::Job(job)));
        if !matches!(sent, Some(Ok(()))) {
            self.shared.queued.fetch_sub(1, Ordering::SeqCst);
            return Err(self.error("the cache's writer thread has stopped".into()));
        }
        Ok(())
    }

    /// Waits until every store queued before this call has been committed to the file; the
    /// error of a store that failed since the last flush, if any.
    pub async fn flush(&self) -> Result<(), LlmError> {
        let target = self.shared.queued.load(Ordering::SeqCst);
        let mut finished = self.shared.finished.clone();
        if *finished.borrow() < target
            && let Some(jobs) = &self.shared.writer.jobs
        {
            // A writer that has stopped is reported below.
            let _ = jobs.send(Queued::CommitNow);
        }
        if finished.wait_for(|&done| done >= target).await.is_err() {
            return Err(self.error("the cache's writer thread stopped before committing".into()));
        }
        match lock(&self.shared.state.failure).take() {
            Some(message) => Err(self.error(message)),
            None => Ok(()),
        }
    }

    /// The stored completion for `key`, with its stored usage.
    pub(crate) fn get_completion(&self, key: &str) -> Result<Option<Completion>, LlmError> {
        // The file first: what it holds stays (a queued store of the same key is ignored).
        let stored = self.read(|connection| {
            connection
                .prepare_cached(
                    "SELECT text, finish_reason, prompt_tokens, completion_tokens, latency_ms
                     FROM completions WHERE key = ?1",
                )?
                .query_row(params![key], |row| {
                    Ok(Completion {
                        text: row.get(0)?,
                        finish_reason: row.get(1)?,
                        usage: Usage {
                            prompt_tokens: row.get::<_, i64>(2)? as u64,
                            completion_tokens: row.get::<_, i64>(3)? as u64,
                            latency_ms: row.get(4)?,
                        },
                    })
                })
                .optional()
        })?;
        if stored.is_some() {
            return Ok(stored);
        }
        Ok(lock(&self.shared.state.pending).get(key).cloned())
    }

    /// Queues a completion to be stored ([`ResponseCache::flush`] waits for it); lookups see
    /// it at once. The first one stored for a key stays (a rerun sees what the first run saw,
    /// even if two identical requests raced). The request itself is not stored: the key
    /// stands for it, and prompts would make up nearly all of the file (an answering prompt
    /// of ten chunks is some 11 KB, its reply a few hundred bytes).
    pub(crate) fn put_completion(
        &self,
        key: &str,
        backend: &str,
        model: &str,
        completion: &Completion,
    ) -> Result<(), LlmError> {
        lock(&self.shared.state.pending)
            .entry(key.to_string())
            .or_insert_with(|| completion.clone());
        let row = (
            key.to_string(),
            backend.to_string(),
            model.to_string(),
            completion.clone(),
        );
        let insert = self.shared.insert_completion;
        self.queue(Job {
            key: Some(key.to_string()),
            work: Box::new(move |connection| {
                let (key, backend, model, completion) = row;
                connection
                    .prepare_cached(insert)?
                    .execute(params![
                        key,
                        backend,
                        model,
                        completion.text,
                        completion.finish_reason,
                        completion.usage.prompt_tokens as i64,
                        completion.usage.completion_tokens as i64,
                        completion.usage.latency_ms,
                    ])
                    .map(drop)
            }),
        })
        .inspect_err(|_| {
            lock(&self.shared.state.pending).remove(key);
        })
    }

    /// The stored vectors for `key`.
    pub(crate) fn get_embeddings(&self, key: &str) -> Result<Option<Vec<Vec<f32>>>, LlmError> {
        self.read(|connection| {
            connection
                .prepare_cached("SELECT n_texts, dim, vectors FROM embeddings WHERE key = ?1")?
                .query_row(params![key], |row| {
                    let n_texts = row.get::<_, i64>(0)? as usize;
                    let dim = row.get::<_, i64>(1)? as usize;
                    let bytes: Vec<u8> = row.get(2)?;
                    Ok(decode_vectors(&bytes, n_texts, dim))
                })
                .optional()
                // A row whose blob does not decode is treated as absent and stored anew.
                .map(Option::flatten)
        })
    }

    /// Stores vectors and waits until they are committed.
    pub(crate) async fn put_embeddings(
        &self,
        key: &str,
        backend: &str,
        model: &str,
        vectors: &[Vec<f32>],
    ) -> Result<(), LlmError> {
        let dim = vectors.first().map_or(0, Vec::len);
        let row = (
            key.to_string(),
            backend.to_string(),
            model.to_string(),
            vectors.len() as i64,
            dim as i64,
            encode_vectors(vectors),
        );
        self.queue(Job {
            key: None,
            work: Box::new(move |connection| {
                connection
                    .prepare_cached(
                        "INSERT OR REPLACE INTO embeddings (key, backend, model, n_texts, dim, vectors)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    )?
                    .execute(params![row.0, row.1, row.2, row.3, row.4, row.5])
                    .map(drop)
            }),
        })?;
        self.flush().await
    }
}

/// Stores a completion; the first stored for a key stays.
const INSERT_COMPLETION: &str = "INSERT OR IGNORE INTO completions (key, backend, model, text,
         finish_reason, prompt_tokens, completion_tokens, latency_ms)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";

/// [`INSERT_COMPLETION`] into a file made by a version that stored each request in a
/// `request TEXT NOT NULL` column: new rows leave it empty.
const INSERT_COMPLETION_WITH_REQUEST: &str = "INSERT OR IGNORE INTO completions (key, backend,
         model, request, text, finish_reason, prompt_tokens, completion_tokens, latency_ms)
     VALUES (?1, ?2, ?3, '', ?4, ?5, ?6, ?7, ?8)";

/// Whether `table` has a column named `column`.
fn has_column(connection: &Connection, table: &str, column: &str) -> rusqlite::Result<bool> {
    connection.query_row(
        "SELECT COUNT(*) > 0 FROM pragma_table_info(?1) WHERE name = ?2",
        params![table, column],
        |row| row.get(0),
    )
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// How long a connection waits for another's lock (another process's writer, the checkpoint
/// thread's restart) before the operation fails.
const LOCK_TIMEOUT: Duration = Duration::from_secs(30);

/// A connection to the cache file that waits up to [`LOCK_TIMEOUT`] for another connection's
/// lock, trying again every 0.1 ms: SQLite's own busy timeout sleeps in growing steps of up to
/// 100 ms, so that a lock held for a millisecond can cost tens.
fn connect(path: &Path) -> rusqlite::Result<Connection> {
    let mut connection = Connection::open(path)?;
    let mut waiting_since = Instant::now();
    connection.busy_handler(Some(move |attempt: i32| {
        if attempt == 0 {
            waiting_since = Instant::now();
        }
        std::thread::sleep(Duration::from_micros(100));
        waiting_since.elapsed() < LOCK_TIMEOUT
    }))?;
    Ok(connection)
}

/// The writer thread: takes the stores queued since its last turn and those that arrive within
/// [`COMMIT_WINDOW`] of the first (up to [`MAX_BATCH`]; a flush cuts the window short), runs
/// them in order in one transaction and commits; then drops their keys from the pending map,
/// reports how many stores have finished, and tells the checkpoint thread.
fn write_batches(
    connection: &Connection,
    queue: &mpsc::Receiver<Queued>,
    checkpointer: Connection,
    report: &watch::Sender<u64>,
    state: &WriterState,
) {
    let (committed, commits) = mpsc::channel();
    let checkpoints = std::thread::Builder::new()
        .name("hierarag-cache-checkpoint".into())
        .spawn(move || checkpoint_after(&checkpointer, &commits));
    let mut batch = Vec::with_capacity(MAX_BATCH);
    let mut finished = 0;
    while let Ok(first) = queue.recv() {
        let mut commit_now = match first {
            Queued::Job(job) => {
                batch.push(job);
                false
            }
            Queued::CommitNow => true,
        };
        let window_ends = Instant::now() + COMMIT_WINDOW;
        while batch.len() < MAX_BATCH {
            let next = if commit_now {
                queue.try_recv().ok()
            } else {
                queue
                    .recv_timeout(window_ends.saturating_duration_since(Instant::now()))
                    .ok()
            };
            match next {
                Some(Queued::Job(job)) => batch.push(job),
                Some(Queued::CommitNow) => commit_now = true,
                // Nothing more queued, the window is over, or the queue has closed.
                None => break,
            }
        }
        if batch.is_empty() {
            continue;
        }
        // IMMEDIATE takes the write lock up front, waiting (busy timeout) for other processes.
        let mut failure = run(connection, "BEGIN IMMEDIATE").err();
        let mut keys = Vec::with_capacity(batch.len());
        let n_jobs = batch.len() as u64;
        for job in batch.drain(..) {
            keys.extend(job.key);
            if failure.is_none()
                && let Err(error) = (job.work)(connection)
            {
                failure = Some(error.to_string());
            }
        }
        // One failed statement rolls the whole batch back: all or nothing, like a commit.
        failure = match failure {
            None => run(connection, "COMMIT").err(),
            Some(error) => {
                let _ = run(connection, "ROLLBACK");
                Some(error)
            }
        };
        let mut pending = lock(&state.pending);
        for key in &keys {
            pending.remove(key);
        }
        drop(pending);
        if let Some(error) = failure {
            lock(&state.failure).get_or_insert(error);
        }
        finished += n_jobs;
        report.send_replace(finished);
        let _ = committed.send(());
    }
    drop(committed);
    if let Ok(checkpoints) = checkpoints {
        let _ = checkpoints.join();
    }
}

/// Runs a checkpoint; the pages the WAL holds, when it ran.
fn checkpoint(connection: &Connection, mode: &str) -> Option<i64> {
    connection
        .query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |row| {
            row.get(1)
        })
        .ok()
}

/// Runs one statement without parameters, prepared once per connection.
fn run(connection: &Connection, sql: &str) -> Result<(), String> {
    connection
        .prepare_cached(sql)
        .and_then(|mut statement| statement.execute([]))
        .map(drop)
        .map_err(|e| e.to_string())
}

/// The checkpoint thread: after commits, waits until [`CHECKPOINT_EVERY`] has passed since its
/// last checkpoint, then copies what the WAL holds into the database file without waiting for
/// readers or the writer (PASSIVE), and restarts the WAL once it is past [`WAL_RESTART_PAGES`].
/// Ends when the writer does; closing the last connection checkpoints the rest.
fn checkpoint_after(connection: &Connection, commits: &mpsc::Receiver<()>) {
    let mut last = Instant::now();
    while commits.recv().is_ok() {
        let due = last + CHECKPOINT_EVERY;
        loop {
            match commits.recv_timeout(due.saturating_duration_since(Instant::now())) {
                Ok(()) => {}
                Err(mpsc::RecvTimeoutError::Timeout) => break,
                Err(mpsc::RecvTimeoutError::Disconnected) => return,
            }
        }
        // A failed checkpoint is tried again after the next commit.
        let wal_pages = checkpoint(connection, "PASSIVE");
        if wal_pages.is_some_and(|pages| pages >= WAL_RESTART_PAGES) {
            let _ = checkpoint(connection, "RESTART");
        }
        last = Instant::now();
    }
}

/// The cache key of a chat request: sha256 (hex) of the canonical JSON of (backend, model,
/// request). Every field of the request counts, and the order of keys in a JSON schema does
/// not.
pub fn chat_cache_key(backend: &str, model: &str, request: &ChatRequest) -> String {
    chat_key(backend, model, request, request.json_schema.as_ref())
}

/// [`chat_cache_key`] of `request` with its schema replaced by `schema` (a backend that does
/// not send the schema keys the request without it), without copying the request.
pub(crate) fn chat_key(
    backend: &str,
    model: &str,
    request: &ChatRequest,
    schema: Option<&JsonSchema>,
) -> String {
    let mut hasher = HashWriter(Sha256::new());
    write_chat_key(&mut hasher, backend, model, request, schema).expect("hashing does not fail");
    hex::encode(hasher.0.finalize())
}

/// Writes the canonical JSON of a chat key, `{"backend":…,"kind":"chat","model":…,
/// "request":{…},"version":…}` with every object's keys sorted: the bytes that
/// [`write_canonical`] gives for the request turned into a `serde_json::Value` (its `f32`s
/// become `f64`s there), written field by field instead of building that value.
fn write_chat_key(
    out: &mut impl std::io::Write,
    backend: &str,
    model: &str,
    request: &ChatRequest,
    schema: Option<&JsonSchema>,
) -> std::io::Result<()> {
    let ChatRequest {
        messages,
        temperature,
        top_p,
        max_tokens,
        seed,
        stop,
        json_schema: _,
    } = request;
    out.write_all(b"{\"backend\":")?;
    serde_json::to_writer(&mut *out, backend)?;
    out.write_all(b",\"kind\":\"chat\",\"model\":")?;
    serde_json::to_writer(&mut *out, model)?;
    out.write_all(b",\"request\":{\"json_schema\":")?;
    match schema {
        None => out.write_all(b"null")?,
        Some(JsonSchema { name, schema }) => {
            out.write_all(b"{\"name\":")?;
            serde_json::to_writer(&mut *out, name)?;
            out.write_all(b",\"schema\":")?;
            write_canonical(schema, out)?;
            out.write_all(b"}")?;
        }
    }
    out.write_all(b",\"max_tokens\":")?;
    serde_json::to_writer(&mut *out, max_tokens)?;
    out.write_all(b",\"messages\":[")?;
    for (n, Message { role, content }) in messages.iter().enumerate() {
        out.write_all(if n == 0 {
            b"{\"content\":"
        } else {
            b",{\"content\":"
        })?;
        serde_json::to_writer(&mut *out, content)?;
        out.write_all(b",\"role\":")?;
        serde_json::to_writer(&mut *out, role)?;
        out.write_all(b"}")?;
    }
    out.write_all(b"],\"seed\":")?;
    serde_json::to_writer(&mut *out, seed)?;
    out.write_all(b",\"stop\":")?;
    serde_json::to_writer(&mut *out, stop)?;
    out.write_all(b",\"temperature\":")?;
    serde_json::to_writer(&mut *out, &f64::from(*temperature))?;
    out.write_all(b",\"top_p\":")?;
    serde_json::to_writer(&mut *out, &top_p.map(f64::from))?;
    write!(out, "}},\"version\":{KEY_VERSION}}}")
}

/// The cache key of one batch of texts to embed.
pub fn embed_cache_key(backend: &str, model: &str, texts: &[String]) -> String {
    key_of(&json!({
        "version": KEY_VERSION,
        "kind": "embed",
        "backend": backend,
        "model": model,
        "texts": texts,
    }))
}

fn key_of(value: &Value) -> String {
    let mut hasher = HashWriter(Sha256::new());
    write_canonical(value, &mut hasher).expect("hashing does not fail");
    hex::encode(hasher.0.finalize())
}

/// Feeds what is written to a hash.
struct HashWriter(Sha256);

impl std::io::Write for HashWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.update(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes `value` as compact JSON with every object's keys sorted, recursively: the bytes of
/// `serde_json::to_string` of the value rebuilt with sorted keys, without rebuilding it.
fn write_canonical(value: &Value, out: &mut impl std::io::Write) -> std::io::Result<()> {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.write_all(b"{")?;
            for (n, (key, value)) in entries.into_iter().enumerate() {
                if n > 0 {
                    out.write_all(b",")?;
                }
                serde_json::to_writer(&mut *out, key)?;
                out.write_all(b":")?;
                write_canonical(value, out)?;
            }
            out.write_all(b"}")
        }
        Value::Array(items) => {
            out.write_all(b"[")?;
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.write_all(b",")?;
                }
                write_canonical(item, out)?;
            }
            out.write_all(b"]")
        }
        scalar => serde_json::to_writer(out, scalar).map_err(std::io::Error::other),
    }
}

fn encode_vectors(vectors: &[Vec<f32>]) -> Vec<u8> {
    vectors
        .iter()
        .flatten()
        .flat_map(|x| x.to_le_bytes())
        .collect()
}

/// `None` unless the blob holds exactly `n_texts × dim` little-endian `f32`s.
fn decode_vectors(bytes: &[u8], n_texts: usize, dim: usize) -> Option<Vec<Vec<f32>>> {
    if bytes.len() != n_texts.checked_mul(dim)?.checked_mul(4)? {
        return None;
    }
    let values: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    if dim == 0 {
        return Some(vec![Vec::new(); n_texts]);
    }
    Some(values.chunks(dim).map(<[f32]>::to_vec).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{JsonSchema, Message};

    fn request() -> ChatRequest {
        ChatRequest::new(vec![Message::system("s"), Message::user("u")])
    }

    #[test]
    fn every_part_of_a_request_changes_the_key() {
        let base = chat_cache_key("openai", "m", &request());
        assert_eq!(base.len(), 64);
        assert_eq!(base, chat_cache_key("openai", "m", &request()));
        let mut variants = vec![
            chat_cache_key("anthropic", "m", &request()),
            chat_cache_key("openai", "m2", &request()),
        ];
        let changes: Vec<fn(&mut ChatRequest)> = vec![
            |r| r.messages[1].content.push('!'),
            |r| r.messages[0].role = crate::types::Role::User,
            |r| r.temperature = 0.5,
            |r| r.top_p = Some(0.9),
            |r| r.max_tokens = 10,
            |r| r.seed = Some(1),
            |r| r.stop = vec!["x".into()],
            |r| {
                r.json_schema = Some(JsonSchema {
                    name: "n".into(),
                    schema: json!({}),
                })
            },
        ];
        for change in changes {
            let mut changed = request();
            change(&mut changed);
            variants.push(chat_cache_key("openai", "m", &changed));
        }
        for (i, key) in variants.iter().enumerate() {
            assert_ne!(*key, base, "variant {i}");
        }
    }

    #[test]
    fn key_order_inside_a_schema_does_not_change_the_key() {
        let with_schema = |schema: Value| {
            let mut r = request();
            r.json_schema = Some(JsonSchema {
                name: "n".into(),
                schema,
            });
            chat_cache_key("openai", "m", &r)
        };
        let a = with_schema(json!({"type": "object", "properties": {"a": {}, "b": {}}}));
        let b = with_schema(json!({"properties": {"b": {}, "a": {}}, "type": "object"}));
        assert_eq!(a, b);
    }

    #[test]
    fn vectors_round_trip_and_bad_blobs_are_rejected() {
        let vectors = vec![vec![1.0, -2.5], vec![0.0, f32::MIN_POSITIVE]];
        let bytes = encode_vectors(&vectors);
        assert_eq!(decode_vectors(&bytes, 2, 2), Some(vectors));
        assert_eq!(decode_vectors(&bytes, 3, 2), None);
    }

    #[tokio::test]
    async fn entries_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/cache.sqlite");
        let completion = Completion {
            text: "hello".into(),
            finish_reason: Some("stop".into()),
            usage: Usage {
                prompt_tokens: 3,
                completion_tokens: 1,
                latency_ms: 12.5,
            },
        };
        {
            let cache = ResponseCache::open(&path).unwrap();
            assert_eq!(cache.get_completion("k").unwrap(), None);
            cache
                .put_completion("k", "openai", "m", &completion)
                .unwrap();
            cache
                .put_embeddings("e", "openai", "m", &[vec![1.0, 2.0]])
                .await
                .unwrap();
        }
        let cache = ResponseCache::open(&path).unwrap();
        assert_eq!(cache.get_completion("k").unwrap(), Some(completion));
        assert_eq!(
            cache.get_embeddings("e").unwrap(),
            Some(vec![vec![1.0, 2.0]])
        );
        let mode: String = cache
            .read(|connection| connection.query_row("PRAGMA journal_mode", [], |row| row.get(0)))
            .unwrap();
        assert_eq!(mode, "wal");
    }

    fn completion(text: &str) -> Completion {
        Completion {
            text: text.into(),
            finish_reason: None,
            usage: Usage::default(),
        }
    }

    #[tokio::test]
    async fn a_store_is_seen_at_once_and_in_the_file_after_a_flush() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.sqlite");
        let cache = ResponseCache::open(&path).unwrap();
        // Two handles on one file, as two processes would have: the second sees only what
        // the first has committed.
        let other = ResponseCache::open(&path).unwrap();
        for n in 0..200 {
            // The first stored for a key stays, whether or not it was committed yet.
            let key = format!("k{}", n % 100);
            cache
                .put_completion(&key, "openai", "m", &completion(&format!("t{n}")))
                .unwrap();
        }
        assert_eq!(cache.get_completion("k7").unwrap(), Some(completion("t7")));
        cache.flush().await.unwrap();
        for n in 0..100 {
            let stored = other.get_completion(&format!("k{n}")).unwrap();
            assert_eq!(stored, Some(completion(&format!("t{n}"))), "k{n}");
        }
        assert!(lock(&cache.shared.state.pending).is_empty());
    }

    #[tokio::test]
    async fn dropping_the_last_handle_commits_what_is_queued() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.sqlite");
        {
            let cache = ResponseCache::open(&path).unwrap();
            let clone = cache.clone();
            drop(cache);
            for n in 0..50 {
                clone
                    .put_completion(&format!("k{n}"), "openai", "m", &completion("t"))
                    .unwrap();
            }
        }
        let cache = ResponseCache::open(&path).unwrap();
        let rows: i64 = cache
            .read(|connection| {
                connection.query_row("SELECT COUNT(*) FROM completions", [], |row| row.get(0))
            })
            .unwrap();
        assert_eq!(rows, 50);
    }

    #[tokio::test]
    async fn a_failed_store_is_reported_by_the_next_flush_only() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ResponseCache::open(&dir.path().join("cache.sqlite")).unwrap();
        cache
            .queue(Job {
                key: None,
                work: Box::new(|connection| {
                    connection
                        .execute("INSERT INTO no_such_table VALUES (1)", [])
                        .map(drop)
                }),
            })
            .unwrap();
        let error = cache.flush().await.unwrap_err().to_string();
        assert!(error.contains("no such table"), "{error}");
        cache.flush().await.unwrap();
    }

    /// The key recipe before keys were hashed as they were written (`KEY_VERSION` 1): the
    /// value rebuilt with sorted keys, printed, hashed.
    fn key_of_rebuilt(value: &Value) -> String {
        fn canonical(value: Value) -> Value {
            match value {
                Value::Object(map) => {
                    let mut entries: Vec<(String, Value)> = map.into_iter().collect();
                    entries.sort_by(|a, b| a.0.cmp(&b.0));
                    Value::Object(
                        entries
                            .into_iter()
                            .map(|(key, value)| (key, canonical(value)))
                            .collect(),
                    )
                }
                Value::Array(items) => Value::Array(items.into_iter().map(canonical).collect()),
                other => other,
            }
        }
        hex::encode(Sha256::digest(
            canonical(value.clone()).to_string().as_bytes(),
        ))
    }

    /// The key of the first recipe: the request turned into a JSON value, keys sorted.
    fn first_recipe(backend: &str, model: &str, request: &ChatRequest) -> String {
        key_of_rebuilt(&json!({
            "version": KEY_VERSION,
            "kind": "chat",
            "backend": backend,
            "model": model,
            "request": request,
        }))
    }

    fn any_text() -> impl proptest::strategy::Strategy<Value = String> {
        // Quotes, backslashes, control characters, non-ASCII and astral characters.
        proptest::string::string_regex("[a-z \"\\\n\t\u{1}\u{7f}é€\u{1F600}]{0,12}").unwrap()
    }

    fn any_request() -> impl proptest::strategy::Strategy<Value = ChatRequest> {
        use proptest::prelude::*;
        let role = prop_oneof![
            Just(crate::types::Role::System),
            Just(crate::types::Role::User),
            Just(crate::types::Role::Assistant)
        ];
        let message = (role, any_text()).prop_map(|(role, content)| Message { role, content });
        let schema =
            (any_text(), any_text(), any::<i64>(), any::<f64>()).prop_map(|(name, key, n, x)| {
                JsonSchema {
                    name,
                    schema: json!({"type": "object", key: {"z": n, "a": x, "m": [x, null, true]}}),
                }
            });
        (
            proptest::collection::vec(message, 0..4),
            any::<f32>(),
            proptest::option::of(any::<f32>()),
            any::<u32>(),
            proptest::option::of(any::<u64>()),
            proptest::collection::vec(any_text(), 0..3),
            proptest::option::of(schema),
        )
            .prop_map(
                |(messages, temperature, top_p, max_tokens, seed, stop, json_schema)| ChatRequest {
                    messages,
                    temperature,
                    top_p,
                    max_tokens,
                    seed,
                    stop,
                    json_schema,
                },
            )
    }

    proptest::proptest! {
        /// Keys written field by field equal the first recipe's for any request (NaN and
        /// infinite settings, odd strings, nested schemas), so caches made before stay valid.
        #[test]
        fn field_by_field_keys_equal_the_first_recipe(
            request in any_request(),
            backend in any_text(),
            model in any_text(),
        ) {
            proptest::prop_assert_eq!(
                chat_cache_key(&backend, &model, &request),
                first_recipe(&backend, &model, &request)
            );
            // Keyed without its schema, as the request with none.
            let plain = ChatRequest { json_schema: None, ..request.clone() };
            proptest::prop_assert_eq!(
                chat_key(&backend, &model, &request, None),
                first_recipe(&backend, &model, &plain)
            );
        }
    }

    #[tokio::test]
    async fn requests_are_not_stored_and_older_files_still_take_completions() {
        let dir = tempfile::tempdir().unwrap();
        let has_request_column = |path: &Path| {
            has_column(&Connection::open(path).unwrap(), "completions", "request").unwrap()
        };
        let new = dir.path().join("new.sqlite");
        {
            let cache = ResponseCache::open(&new).unwrap();
            cache
                .put_completion("k", "openai", "m", &completion("t"))
                .unwrap();
        }
        assert!(!has_request_column(&new));
        assert_eq!(
            ResponseCache::open(&new)
                .unwrap()
                .get_completion("k")
                .unwrap(),
            Some(completion("t"))
        );

        // A file of the earlier layout: its rows stay readable and new rows go in.
        let old = dir.path().join("old.sqlite");
        Connection::open(&old)
            .unwrap()
            .execute_batch(
                "CREATE TABLE completions (
                     key TEXT PRIMARY KEY, backend TEXT NOT NULL, model TEXT NOT NULL,
                     request TEXT NOT NULL, text TEXT NOT NULL, finish_reason TEXT,
                     prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL,
                     latency_ms REAL NOT NULL,
                     created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP);
                 INSERT INTO completions (key, backend, model, request, text, finish_reason,
                     prompt_tokens, completion_tokens, latency_ms)
                 VALUES ('old', 'openai', 'm', '{\"messages\":[]}', 'before', 'stop', 3, 1, 2.5);",
            )
            .unwrap();
        {
            let cache = ResponseCache::open(&old).unwrap();
            cache
                .put_completion("k", "openai", "m", &completion("t"))
                .unwrap();
            cache.flush().await.unwrap();
        }
        assert!(has_request_column(&old));
        let cache = ResponseCache::open(&old).unwrap();
        assert_eq!(cache.get_completion("k").unwrap(), Some(completion("t")));
        let before = cache.get_completion("old").unwrap().unwrap();
        assert_eq!(
            (before.text.as_str(), before.usage.prompt_tokens),
            ("before", 3)
        );
        let stored: String = cache
            .read(|c| {
                c.query_row("SELECT request FROM completions WHERE key = 'k'", [], |r| {
                    r.get(0)
                })
            })
            .unwrap();
        assert_eq!(stored, "");
    }

    #[test]
    fn keys_are_those_of_the_first_recipe() {
        let mut full = ChatRequest::new(vec![
            Message::system("Réponds \"brièvement\".\n\t<doc>\u{1F600}</doc>"),
            Message::user("u"),
            Message::assistant("a"),
        ]);
        full.temperature = 0.7;
        full.top_p = Some(0.9);
        full.max_tokens = 1024;
        full.seed = Some(2_147_483_647);
        full.stop = vec!["\n\n".into(), "END".into()];
        full.json_schema = Some(JsonSchema {
            name: "candidates".into(),
            schema: json!({"type": "object", "required": ["b", "a"],
                           "properties": {"b": {"type": "array", "items": {"z": 1, "a": 2.5}},
                                          "a": {"type": "string", "maxLength": 10}},
                           "additionalProperties": false}),
        });
        for request in [request(), full] {
            let value = json!({
                "version": KEY_VERSION,
                "kind": "chat",
                "backend": "openai",
                "model": "m",
                "request": request,
            });
            assert_eq!(
                chat_cache_key("openai", "m", &request),
                key_of_rebuilt(&value)
            );
        }
        let texts = vec!["a".to_string(), "é \"b\"".to_string()];
        let value = json!({"version": KEY_VERSION, "kind": "embed", "backend": "openai",
                           "model": "m", "texts": texts});
        assert_eq!(
            embed_cache_key("openai", "m", &texts),
            key_of_rebuilt(&value)
        );
    }
}
