//! The response cache: SQLite (WAL) keyed by the sha256 of a canonical JSON of (backend, model,
//! request), so that a rerun costs no call and gets the same replies.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::error::LlmError;
use crate::types::{ChatRequest, Completion, Usage};

/// Bumped when the key's recipe changes, so that old entries are never misread.
const KEY_VERSION: u32 = 1;

/// A response cache in one SQLite file, safe to share between tasks and processes: one
/// connection behind a mutex, used on tokio's blocking threads.
#[derive(Debug, Clone)]
pub struct ResponseCache {
    path: PathBuf,
    connection: Arc<Mutex<Connection>>,
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
        let connection = Connection::open(path).map_err(|e| fail(e.to_string()))?;
        connection
            .busy_timeout(Duration::from_secs(30))
            .and_then(|()| connection.pragma_update(None, "journal_mode", "WAL"))
            .and_then(|()| connection.pragma_update(None, "synchronous", "NORMAL"))
            .and_then(|()| {
                connection.execute_batch(
                    "CREATE TABLE IF NOT EXISTS completions (
                         key TEXT PRIMARY KEY,
                         backend TEXT NOT NULL,
                         model TEXT NOT NULL,
                         request TEXT NOT NULL,
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
                )
            })
            .map_err(|e| fail(e.to_string()))?;
        Ok(ResponseCache {
            path: path.to_path_buf(),
            connection: Arc::new(Mutex::new(connection)),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `work` on the connection on a blocking thread.
    async fn with_connection<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, LlmError> {
        let connection = Arc::clone(&self.connection);
        let outcome = tokio::task::spawn_blocking(move || {
            let connection = connection.lock().unwrap_or_else(|e| e.into_inner());
            work(&connection)
        })
        .await;
        let message = match outcome {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(error)) => error.to_string(),
            Err(join_error) => format!("cache task failed: {join_error}"),
        };
        Err(LlmError::Cache {
            path: self.path.clone(),
            message,
        })
    }

    /// The stored completion for `key`, with its stored usage.
    pub(crate) async fn get_completion(&self, key: &str) -> Result<Option<Completion>, LlmError> {
        let key = key.to_string();
        self.with_connection(move |connection| {
            connection
                .query_row(
                    "SELECT text, finish_reason, prompt_tokens, completion_tokens, latency_ms
                     FROM completions WHERE key = ?1",
                    params![key],
                    |row| {
                        Ok(Completion {
                            text: row.get(0)?,
                            finish_reason: row.get(1)?,
                            usage: Usage {
                                prompt_tokens: row.get::<_, i64>(2)? as u64,
                                completion_tokens: row.get::<_, i64>(3)? as u64,
                                latency_ms: row.get(4)?,
                            },
                        })
                    },
                )
                .optional()
        })
        .await
    }

    /// Stores a completion; the first one stored for a key stays (a rerun sees what the first
    /// run saw, even if two identical requests raced).
    pub(crate) async fn put_completion(
        &self,
        key: &str,
        backend: &str,
        model: &str,
        request: &ChatRequest,
        completion: &Completion,
    ) -> Result<(), LlmError> {
        let row = (
            key.to_string(),
            backend.to_string(),
            model.to_string(),
            serde_json::to_string(request).unwrap_or_default(),
            completion.clone(),
        );
        self.with_connection(move |connection| {
            let (key, backend, model, request, completion) = row;
            connection
                .execute(
                    "INSERT OR IGNORE INTO completions (key, backend, model, request, text,
                         finish_reason, prompt_tokens, completion_tokens, latency_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                    params![
                        key,
                        backend,
                        model,
                        request,
                        completion.text,
                        completion.finish_reason,
                        completion.usage.prompt_tokens as i64,
                        completion.usage.completion_tokens as i64,
                        completion.usage.latency_ms,
                    ],
                )
                .map(drop)
        })
        .await
    }

    /// The stored vectors for `key`.
    pub(crate) async fn get_embeddings(
        &self,
        key: &str,
    ) -> Result<Option<Vec<Vec<f32>>>, LlmError> {
        let key = key.to_string();
        self.with_connection(move |connection| {
            connection
                .query_row(
                    "SELECT n_texts, dim, vectors FROM embeddings WHERE key = ?1",
                    params![key],
                    |row| {
                        let n_texts = row.get::<_, i64>(0)? as usize;
                        let dim = row.get::<_, i64>(1)? as usize;
                        let bytes: Vec<u8> = row.get(2)?;
                        Ok(decode_vectors(&bytes, n_texts, dim))
                    },
                )
                .optional()
                // A row whose blob does not decode is treated as absent and stored anew.
                .map(Option::flatten)
        })
        .await
    }

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
        self.with_connection(move |connection| {
            connection
                .execute(
                    "INSERT OR REPLACE INTO embeddings (key, backend, model, n_texts, dim, vectors)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![row.0, row.1, row.2, row.3, row.4, row.5],
                )
                .map(drop)
        })
        .await
    }
}

/// The cache key of a chat request: sha256 (hex) of the canonical JSON of (backend, model,
/// request). Every field of the request counts, and the order of keys in a JSON schema does
/// not.
pub fn chat_cache_key(backend: &str, model: &str, request: &ChatRequest) -> String {
    key_of(&json!({
        "version": KEY_VERSION,
        "kind": "chat",
        "backend": backend,
        "model": model,
        "request": request,
    }))
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

fn key_of(value: &impl Serialize) -> String {
    let value = serde_json::to_value(value).expect("requests serialize to JSON");
    let canonical = canonical(value).to_string();
    hex::encode(Sha256::digest(canonical.as_bytes()))
}

/// The same value with every object's keys sorted, recursively.
fn canonical(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            let sorted: Map<String, Value> = entries
                .into_iter()
                .map(|(key, value)| (key, canonical(value)))
                .collect();
            Value::Object(sorted)
        }
        Value::Array(items) => Value::Array(items.into_iter().map(canonical).collect()),
        other => other,
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
            assert_eq!(cache.get_completion("k").await.unwrap(), None);
            cache
                .put_completion("k", "openai", "m", &request(), &completion)
                .await
                .unwrap();
            cache
                .put_embeddings("e", "openai", "m", &[vec![1.0, 2.0]])
                .await
                .unwrap();
        }
        let cache = ResponseCache::open(&path).unwrap();
        assert_eq!(cache.get_completion("k").await.unwrap(), Some(completion));
        assert_eq!(
            cache.get_embeddings("e").await.unwrap(),
            Some(vec![vec![1.0, 2.0]])
        );
        let mode: String = cache
            .connection
            .lock()
            .unwrap()
            .query_row("PRAGMA journal_mode", [], |row| row.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
    }
}
