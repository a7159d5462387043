//! The response cache: SQLite (WAL) keyed by the sha256 of a canonical JSON of (backend, model,
//! request), so that a rerun costs no call and gets the same replies. A row holds the key, the
//! reply and its usage; the request is not stored (the key stands for it).
//!
//! Two connections per open cache, each behind a mutex. Lookups use one on the calling thread:
//! a primary-key read takes microseconds, and WAL readers never wait for the writer. Stores use
//! the other on tokio's blocking threads, one insert committed at a time (in WAL mode with
//! `synchronous = NORMAL` a commit appends to the WAL without syncing, but every thousand pages
//! or so SQLite checkpoints, with its syncs, on the committing connection). A store returns
//! once it is committed, so a reply is in the file before the caller can record anything that
//! depends on it. Other handles and processes read the file while it is written, and wait up
//! to [`BUSY_TIMEOUT`] for another's lock.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::error::LlmError;
use crate::types::{ChatRequest, Completion, JsonSchema, Message, Usage};

/// Bumped when the key's recipe changes, so that old entries are never misread.
const KEY_VERSION: u32 = 1;

/// How long a statement waits for another connection's lock (another process writing, or
/// checkpointing) before it fails.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// A response cache in one SQLite file, safe to share between tasks and processes. Cheap to
/// clone: clones share the connections.
#[derive(Debug, Clone)]
pub struct ResponseCache {
    path: PathBuf,
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    /// Lookups.
    reader: Mutex<Connection>,
    /// Stores, which may wait for a checkpoint.
    writer: Mutex<Connection>,
    /// How a completion is stored in this file ([`INSERT_COMPLETION`] or, in a file made
    /// before requests stopped being stored, [`INSERT_COMPLETION_WITH_REQUEST`]).
    insert_completion: &'static str,
    /// Why a store failed (a full disk, the file gone), once one has: no reply can be kept
    /// from then on, so the clients over this cache send no further request
    /// ([`ResponseCache::broken`]).
    broken: std::sync::OnceLock<String>,
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
        let writer = connect(path)
            .and_then(|connection| {
                connection.pragma_update(None, "journal_mode", "WAL")?;
                connection.pragma_update(None, "synchronous", "NORMAL")?;
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
                     );
                     CREATE TABLE IF NOT EXISTS replies (
                         key TEXT PRIMARY KEY,
                         endpoint TEXT NOT NULL,
                         body TEXT NOT NULL,
                         latency_ms REAL NOT NULL,
                         created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
                     );",
                )?;
                Ok(connection)
            })
            .map_err(|e| fail(e.to_string()))?;
        let insert_completion =
            if has_column(&writer, "completions", "request").map_err(|e| fail(e.to_string()))? {
                INSERT_COMPLETION_WITH_REQUEST
            } else {
                INSERT_COMPLETION
            };
        let reader = connect(path).map_err(|e| fail(e.to_string()))?;
        Ok(ResponseCache {
            path: path.to_path_buf(),
            shared: Arc::new(Shared {
                reader: Mutex::new(reader),
                writer: Mutex::new(writer),
                insert_completion,
                broken: std::sync::OnceLock::new(),
            }),
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

    /// Runs `work` on the read connection, on this thread.
    fn read<T>(
        &self,
        work: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, LlmError> {
        work(&lock(&self.shared.reader)).map_err(|e| self.error(e.to_string()))
    }

    /// Runs `work` on the write connection, on a blocking thread.
    async fn write(
        &self,
        work: impl FnOnce(&Connection) -> rusqlite::Result<()> + Send + 'static,
    ) -> Result<(), LlmError> {
        let shared = Arc::clone(&self.shared);
        let result = tokio::task::spawn_blocking(move || work(&lock(&shared.writer)))
            .await
            .map_err(|e| e.to_string())
            .and_then(|stored| stored.map_err(|e| e.to_string()));
        result.map_err(|message| {
            let _ = self.shared.broken.set(message.clone());
            self.error(message)
        })
    }

    /// The error of the first store that failed, if one has: a reply got from now on could
    /// not be kept, and would be paid for again by the next run, so no request is sent.
    pub(crate) fn broken(&self) -> Option<LlmError> {
        self.shared.broken.get().map(|message| {
            self.error(format!(
                "{message} (a reply could not be stored, so no further request is sent)"
            ))
        })
    }

    /// The stored completion for `key`, with its stored usage.
    pub(crate) fn get_completion(&self, key: &str) -> Result<Option<Completion>, LlmError> {
        self.read(|connection| {
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
                            cached_prompt_tokens: 0,
                            cache_write_prompt_tokens: 0,
                            latency_ms: row.get(4)?,
                        },
                    })
                })
                .optional()
        })
    }

    /// Stores a completion and returns once it is committed. The first one stored for a key
    /// stays (a rerun sees what the first run saw, even if two identical requests raced). The
    /// request itself is not stored: the key stands for it, and prompts would make up nearly
    /// all of the file (an answering prompt of ten chunks is some 11 KB, its reply a few
    /// hundred bytes).
    pub(crate) async fn put_completion(
        &self,
        key: &str,
        backend: &str,
        model: &str,
        completion: &Completion,
    ) -> Result<(), LlmError> {
        self.put_completions(backend, model, vec![(key.to_string(), completion.clone())])
            .await
    }

    /// Stores several completions (a batch's results) in one transaction, committed when this
    /// returns; as [`ResponseCache::put_completion`] each.
    pub(crate) async fn put_completions(
        &self,
        backend: &str,
        model: &str,
        completions: Vec<(String, Completion)>,
    ) -> Result<(), LlmError> {
        let insert = self.shared.insert_completion;
        let (backend, model) = (backend.to_string(), model.to_string());
        self.write(move |connection| {
            let transaction = connection.unchecked_transaction()?;
            {
                let mut statement = transaction.prepare_cached(insert)?;
                for (key, completion) in &completions {
                    statement.execute(params![
                        key,
                        backend,
                        model,
                        hierarag_fs::secrets::scrub(&completion.text),
                        completion.finish_reason,
                        completion.usage.prompt_tokens as i64,
                        completion.usage.completion_tokens as i64,
                        completion.usage.latency_ms,
                    ])?;
                }
            }
            transaction.commit()
        })
        .await
    }

    /// The stored vector of each key that holds exactly one (a text embedded on its own
    /// key, [`embed_text_key`]), in one read.
    pub(crate) fn get_text_embeddings(
        &self,
        keys: &[String],
    ) -> Result<Vec<Option<Vec<f32>>>, LlmError> {
        self.read(|connection| {
            let mut statement = connection
                .prepare_cached("SELECT n_texts, dim, vectors FROM embeddings WHERE key = ?1")?;
            keys.iter()
                .map(|key| {
                    statement
                        .query_row(params![key], |row| {
                            let n_texts = row.get::<_, i64>(0)? as usize;
                            let dim = row.get::<_, i64>(1)? as usize;
                            let bytes: Vec<u8> = row.get(2)?;
                            Ok(decode_vectors(&bytes, n_texts, dim))
                        })
                        .optional()
                        // A row that does not decode to one vector is absent, stored anew.
                        .map(|found| match found.flatten() {
                            Some(mut vectors) if vectors.len() == 1 => vectors.pop(),
                            _ => None,
                        })
                })
                .collect()
        })
    }

    /// Stores one vector per text key in one transaction and returns once it is committed.
    pub(crate) async fn put_text_embeddings(
        &self,
        entries: Vec<(String, Vec<f32>)>,
        backend: &str,
        model: &str,
    ) -> Result<(), LlmError> {
        let (backend, model) = (backend.to_string(), model.to_string());
        self.write(move |connection| {
            let transaction = connection.unchecked_transaction()?;
            {
                let mut statement = transaction.prepare_cached(
                    "INSERT OR REPLACE INTO embeddings (key, backend, model, n_texts, dim, vectors)
                     VALUES (?1, ?2, ?3, 1, ?4, ?5)",
                )?;
                for (key, vector) in &entries {
                    statement.execute(params![
                        key,
                        backend,
                        model,
                        vector.len() as i64,
                        encode_vectors(std::slice::from_ref(vector))
                    ])?;
                }
            }
            transaction.commit()
        })
        .await
    }
}

impl ResponseCache {
    /// The stored reply body for `key` (a JSON service's), with the latency of its call.
    pub(crate) fn get_reply(&self, key: &str) -> Result<Option<(String, f64)>, LlmError> {
        self.read(|connection| {
            connection
                .prepare_cached("SELECT body, latency_ms FROM replies WHERE key = ?1")?
                .query_row(params![key], |row| Ok((row.get(0)?, row.get(1)?)))
                .optional()
        })
    }

    /// Stores a reply body and returns once it is committed; the first stored for a key stays.
    pub(crate) async fn put_reply(
        &self,
        key: &str,
        endpoint: &str,
        body: &str,
        latency_ms: f64,
    ) -> Result<(), LlmError> {
        let body = hierarag_fs::secrets::scrub(body).into_owned();
        let row = (key.to_string(), endpoint.to_string(), body);
        self.write(move |connection| {
            connection
                .prepare_cached(
                    "INSERT OR IGNORE INTO replies (key, endpoint, body, latency_ms)
                     VALUES (?1, ?2, ?3, ?4)",
                )?
                .execute(params![row.0, row.1, row.2, latency_ms])
                .map(drop)
        })
        .await
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

/// A connection to the cache file that waits up to [`BUSY_TIMEOUT`] for another's lock.
fn connect(path: &Path) -> rusqlite::Result<Connection> {
    let connection = Connection::open(path)?;
    connection.busy_timeout(BUSY_TIMEOUT)?;
    Ok(connection)
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

/// The cache key of one text to embed. Texts are stored one by one, so that a text repeated
/// across calls (a reference answer scored for several systems) is embedded once; the key is
/// that of a batch of the text alone, so a cache written when batches were stored whole still
/// answers its one-text batches.
pub fn embed_text_key(backend: &str, model: &str, text: &str) -> String {
    key_of(&json!({
        "version": KEY_VERSION,
        "kind": "embed",
        "backend": backend,
        "model": model,
        "texts": [text],
    }))
}

/// The cache key of a JSON POST to a service: its URL and body. Headers are not part of it
/// (they carry secrets, and a new token must not make every request new).
pub fn reply_cache_key(url: &str, body: &Value) -> String {
    key_of(&json!({
        "version": KEY_VERSION,
        "kind": "reply",
        "url": url,
        "body": body,
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
                cached_prompt_tokens: 0,
                cache_write_prompt_tokens: 0,
                latency_ms: 12.5,
            },
        };
        {
            let cache = ResponseCache::open(&path).unwrap();
            assert_eq!(cache.get_completion("k").unwrap(), None);
            cache
                .put_completion("k", "openai", "m", &completion)
                .await
                .unwrap();
            cache
                .put_text_embeddings(vec![("e".into(), vec![1.0, 2.0])], "openai", "m")
                .await
                .unwrap();
        }
        let cache = ResponseCache::open(&path).unwrap();
        assert_eq!(cache.get_completion("k").unwrap(), Some(completion));
        assert_eq!(
            cache
                .get_text_embeddings(&["e".into(), "absent".into()])
                .unwrap(),
            [Some(vec![1.0, 2.0]), None]
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

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_store_is_in_the_file_when_it_returns_and_the_first_stays() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.sqlite");
        let cache = ResponseCache::open(&path).unwrap();
        // Two handles on one file, as two processes would have: the second sees what the
        // first has stored.
        let other = ResponseCache::open(&path).unwrap();
        for n in 0..200 {
            let key = format!("k{}", n % 100);
            cache
                .put_completion(&key, "openai", "m", &completion(&format!("t{n}")))
                .await
                .unwrap();
        }
        for n in 0..100 {
            let stored = other.get_completion(&format!("k{n}")).unwrap();
            assert_eq!(stored, Some(completion(&format!("t{n}"))), "k{n}");
        }
        // Stores from many tasks at once, while the other handle reads.
        let stores: Vec<_> = (0..64)
            .map(|n| {
                let cache = cache.clone();
                tokio::spawn(async move {
                    let key = format!("c{n}");
                    cache
                        .put_completion(&key, "openai", "m", &completion("c"))
                        .await
                })
            })
            .collect();
        let reads: Vec<_> = (0..64)
            .map(|n| {
                let other = other.clone();
                tokio::spawn(async move { other.get_completion(&format!("k{n}")) })
            })
            .collect();
        for store in stores {
            store.await.unwrap().unwrap();
        }
        for (n, read) in reads.into_iter().enumerate() {
            let stored = read.await.unwrap().unwrap();
            assert_eq!(stored, Some(completion(&format!("t{n}"))), "k{n}");
        }
        for n in 0..64 {
            let stored = other.get_completion(&format!("c{n}")).unwrap();
            assert_eq!(stored, Some(completion("c")), "c{n}");
        }
    }

    #[tokio::test]
    async fn a_failed_store_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ResponseCache::open(&dir.path().join("cache.sqlite")).unwrap();
        let error = cache
            .write(|connection| {
                connection
                    .execute("INSERT INTO no_such_table VALUES (1)", [])
                    .map(drop)
            })
            .await
            .unwrap_err()
            .to_string();
        assert!(error.contains("no such table"), "{error}");
        assert!(error.contains("cache.sqlite"), "{error}");
        cache
            .put_completion("k", "openai", "m", &completion("t"))
            .await
            .unwrap();
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
                .await
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
                .await
                .unwrap();
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
        let text = "é \"b\"";
        let value = json!({"version": KEY_VERSION, "kind": "embed", "backend": "openai",
                           "model": "m", "texts": [text]});
        assert_eq!(embed_text_key("openai", "m", text), key_of_rebuilt(&value));
    }
}
