//! Batch inference: a client in batch mode answers what its response cache holds and defers
//! every other request ([`LlmError::Deferred`]), so that a stage's pass collects a round of
//! requests without calling; [`ChatClient::run_batches`](crate::ChatClient::run_batches) then
//! sends that round through the provider's batch API, records each batch in the run's
//! [`BatchLedger`], polls it with backoff, and stores its results in the response cache, where
//! the stage's next pass finds them. Requests that need another round (a repair, the filter after
//! generation) are deferred by that pass and go in the next batch; a request whose result is an
//! error fails its item only, as a failed call does.
//!
//! A batch's `custom_id` is the request's cache key, so a result lands where the stage looks for
//! it, and a run killed while it waits re-attaches to the batches its ledger lists as not ended
//! instead of submitting their requests again. The same keys make the OpenAI-format files of
//! `hierarag batch export` and `import` (a user's vLLM `run_batch` or Ray Data job in between)
//! meet the same cache.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::dispatch::Dispatcher;
use crate::error::LlmError;
use crate::types::{BatchBackend, BatchResult, ChatRequest};
use hierarag_cost::Reservation;

/// How long the poll interval may grow, as a multiple of the first one.
const MAX_POLL_FACTOR: u32 = 16;

/// A client's batch mode: the provider's interface, and the requests a pass deferred.
#[derive(Debug)]
pub(crate) struct Batching {
    pub(crate) api: Dispatcher<dyn BatchBackend>,
    /// The first wait between polls; it doubles up to [`MAX_POLL_FACTOR`] times this.
    pub(crate) poll: Duration,
    pub(crate) deferred: Mutex<Deferred>,
}

/// Requests deferred to the next batch, by cache key, and the requests whose batch result was
/// an error (a later pass fails them instead of deferring them again).
#[derive(Debug, Default)]
pub(crate) struct Deferred {
    pub(crate) pending: BTreeMap<String, (ChatRequest, Option<Reservation>)>,
    pub(crate) failed: HashMap<String, String>,
}

impl Batching {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, Deferred> {
        self.deferred.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The pending requests as entries of batches within the provider's limits, in key order.
    pub(crate) fn take_chunks(&self) -> Vec<Vec<(String, String, Option<Reservation>)>> {
        let pending = std::mem::take(&mut self.lock().pending);
        let backend = self.api.pool.first();
        let (max_requests, max_bytes) = backend.limits();
        let mut chunks: Vec<Vec<(String, String, Option<Reservation>)>> = Vec::new();
        let mut bytes = 0;
        for (key, (request, reservation)) in pending {
            let entry = backend.entry(&key, &request).to_string();
            let size = entry.len() + 1;
            let full = chunks
                .last()
                .is_none_or(|chunk| chunk.len() >= max_requests || bytes + size > max_bytes);
            if full {
                chunks.push(Vec::new());
                bytes = 0;
            }
            bytes += size;
            chunks
                .last_mut()
                .expect("a chunk was pushed")
                .push((key, entry, reservation));
        }
        chunks
    }

    /// Waits, with backoff, until batch `id` has ended; `report` hears each new state. `None`
    /// when the provider does not know the batch (404: deleted, or past its retention), which
    /// refuses nothing else of the client.
    pub(crate) async fn wait(
        &self,
        id: &str,
        report: &(dyn Fn(&str) + Sync),
    ) -> Result<Option<crate::types::BatchStatus>, LlmError> {
        let mut wait = self.poll;
        let mut last_state = String::new();
        loop {
            let status = self
                .api
                .call(
                    |b| b.endpoint().to_string(),
                    |b| {
                        Box::pin(async move {
                            match b.status(id).await {
                                Err(crate::types::CallError::Refused { reason })
                                    if reason.starts_with("HTTP 404") =>
                                {
                                    Ok(None)
                                }
                                other => other.map(Some),
                            }
                        })
                    },
                )
                .await?
                .0;
            let Some(status) = status else {
                return Ok(None);
            };
            if status.state != last_state {
                report(&format!("batch {id}: {}", status.state));
                last_state.clone_from(&status.state);
            }
            if status.ended {
                return Ok(Some(status));
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(self.poll * MAX_POLL_FACTOR);
        }
    }

    /// The results of ended batch `status`.
    pub(crate) async fn results(
        &self,
        status: &crate::types::BatchStatus,
    ) -> Result<Vec<BatchResult>, LlmError> {
        Ok(self
            .api
            .call(
                |b| b.endpoint().to_string(),
                |b| Box::pin(async move { b.results(status).await }),
            )
            .await?
            .0)
    }
}

/// What [`ChatClient::run_batches`](crate::ChatClient::run_batches) did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BatchRound {
    /// Batches submitted in this round, and the requests they held.
    pub submitted: usize,
    pub requests: usize,
    /// Batches of an earlier process found not ended in the ledger and waited for.
    pub reattached: usize,
    /// Results stored in the cache, and results that were errors (their items fail).
    pub succeeded: usize,
    pub failed: usize,
    /// Requests a batch did not reach before it ended (expired or cancelled); their items fail.
    pub not_run: usize,
}

/// One line of a run's batch record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum LedgerLine {
    /// A batch is about to be created, marked with `submission` (in its metadata, where the
    /// provider keeps one): a create that answers 5xx, or a crash while it is in flight, is
    /// followed by a look-up of the batch so marked, never by a second batch of the same
    /// requests made blindly.
    Submitting {
        submission: String,
        backend: String,
        model: String,
        endpoint: String,
        requests: usize,
        unix_s: u64,
    },
    /// A batch was submitted: from here on a rerun waits for it instead of submitting again.
    Submitted {
        batch_id: String,
        backend: String,
        model: String,
        endpoint: String,
        requests: usize,
        unix_s: u64,
        /// The submission it was made for (absent in ledgers of earlier versions).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        submission: Option<String>,
    },
    /// The provider has no batch of a submission a crash left unfinished: its requests go in
    /// the next batch.
    NotCreated { submission: String, unix_s: u64 },
    /// `hierarag batch export` wrote these requests to `file` for a user's engine: `batch
    /// import` takes results for them only.
    Exported {
        file: String,
        custom_ids: Vec<String>,
        unix_s: u64,
    },
    /// A batch's results were read into the response cache.
    Ended {
        batch_id: String,
        state: String,
        succeeded: usize,
        failed: usize,
        unix_s: u64,
    },
}

/// A run directory's record of its batches (`batches.jsonl`): appended, each line synced
/// before the work it records goes on, never rewritten. One writer: the run's.
#[derive(Debug, Clone)]
pub struct BatchLedger {
    path: PathBuf,
}

impl BatchLedger {
    pub fn new(path: &Path) -> BatchLedger {
        BatchLedger {
            path: path.to_path_buf(),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn error(&self, message: String) -> LlmError {
        LlmError::Batch {
            message: format!("{}: {message}", self.path.display()),
        }
    }

    /// Every line, in order (none when the file does not exist). A line that cannot be read
    /// is an error naming it.
    pub fn lines(&self) -> Result<Vec<LedgerLine>, LlmError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(self.error(e.to_string())),
        };
        text.lines()
            .enumerate()
            .filter(|(_, line)| !line.trim().is_empty())
            .map(|(n, line)| {
                serde_json::from_str(line).map_err(|e| self.error(format!("line {}: {e}", n + 1)))
            })
            .collect()
    }

    pub fn append(&self, line: &LedgerLine) -> Result<(), LlmError> {
        let write = || -> std::io::Result<()> {
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)?;
            let mut text = serde_json::to_string(line).expect("a ledger line serialises");
            text.push('\n');
            file.write_all(hierarag_fs::secrets::scrub(&text).as_bytes())?;
            file.sync_data()
        };
        write().map_err(|e| self.error(e.to_string()))
    }

    /// Every request `hierarag batch export` wrote out, by `custom_id`; `None` when nothing was
    /// exported from this run (a ledger of an earlier version).
    pub fn exported(&self) -> Result<Option<std::collections::HashSet<String>>, LlmError> {
        let mut ids = None::<std::collections::HashSet<String>>;
        for line in self.lines()? {
            if let LedgerLine::Exported { custom_ids, .. } = line {
                ids.get_or_insert_default().extend(custom_ids);
            }
        }
        Ok(ids)
    }

    /// The batches submitted to `endpoint` for (`backend`, `model`) whose results were not read.
    pub(crate) fn open_batches(
        &self,
        backend: &str,
        model: &str,
        endpoint: &str,
    ) -> Result<Vec<String>, LlmError> {
        self.unclosed(
            (backend, model, endpoint),
            |line| match line {
                LedgerLine::Submitted { batch_id, .. } => Some(batch_id),
                _ => None,
            },
            |line| match line {
                LedgerLine::Ended { batch_id, .. } => Some(batch_id),
                _ => None,
            },
        )
    }

    /// The submissions to `endpoint` for (`backend`, `model`) that were begun and neither
    /// submitted nor found missing: a process killed while it created their batch.
    pub(crate) fn open_submissions(
        &self,
        backend: &str,
        model: &str,
        endpoint: &str,
    ) -> Result<Vec<String>, LlmError> {
        self.unclosed(
            (backend, model, endpoint),
            |line| match line {
                LedgerLine::Submitting { submission, .. } => Some(submission),
                _ => None,
            },
            |line| match line {
                LedgerLine::Submitted {
                    submission: Some(submission),
                    ..
                }
                | LedgerLine::NotCreated { submission, .. } => Some(submission),
                _ => None,
            },
        )
    }

    /// The ids `opened` names on lines of (`backend`, `model`, `endpoint`) that no line
    /// `closed` names, in order.
    fn unclosed(
        &self,
        place: (&str, &str, &str),
        opened: impl Fn(&LedgerLine) -> Option<&String>,
        closed: impl Fn(&LedgerLine) -> Option<&String>,
    ) -> Result<Vec<String>, LlmError> {
        let lines = self.lines()?;
        let closed: Vec<&String> = lines.iter().filter_map(closed).collect();
        Ok(lines
            .iter()
            .filter(|line| line.place() == Some(place))
            .filter_map(&opened)
            .filter(|id| !closed.contains(id))
            .cloned()
            .collect())
    }
}

impl LedgerLine {
    /// (backend, model, endpoint) of a line that opens a submission or a batch.
    fn place(&self) -> Option<(&str, &str, &str)> {
        match self {
            LedgerLine::Submitting {
                backend,
                model,
                endpoint,
                ..
            }
            | LedgerLine::Submitted {
                backend,
                model,
                endpoint,
                ..
            } => Some((backend, model, endpoint)),
            _ => None,
        }
    }
}

/// The id a submission of the requests `keys` is marked with: the same requests, the same id,
/// so that a batch a crash left behind is found by the rerun that defers them again.
pub(crate) fn submission_id<'a>(keys: impl IntoIterator<Item = &'a str>) -> String {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    for key in keys {
        hash.update(key.as_bytes());
        hash.update(b"\n");
    }
    format!("hierarag-{}", &hex::encode(hash.finalize())[..32])
}

pub(crate) fn now_unix_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The batch interface of a client's endpoints (the first one takes every batch).
pub(crate) fn batching(
    api: Arc<dyn BatchBackend>,
    settings: &crate::config::ClientSettings,
    backend: &str,
    model: &str,
    poll: Duration,
) -> Batching {
    Batching {
        api: Dispatcher::new(
            crate::endpoints::EndpointPool::new(vec![api]),
            settings,
            backend,
            model,
        ),
        poll,
        deferred: Mutex::new(Deferred::default()),
    }
}

/// The results of a provider's batch output, read a line at a time with `read`: a line that
/// does not read (cut, not UTF-8, not the provider's format) fails only its own request, named
/// by the `custom_id` found in it, and every other line's result is kept (they are paid for).
/// A line whose `custom_id` cannot be found fails under the name `line N`: its request has no
/// result and fails as a missing one.
pub(crate) fn read_result_lines<L: serde::de::DeserializeOwned>(
    bytes: &[u8],
    read: impl Fn(L) -> crate::types::BatchResult,
) -> Vec<crate::types::BatchResult> {
    let mut results = Vec::new();
    for (n, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.trim_ascii().is_empty() {
            continue;
        }
        match serde_json::from_slice::<L>(line) {
            Ok(line) => results.push(read(line)),
            Err(error) => {
                let reason = format!(
                    "line {} of the provider's batch results does not read ({error}); this \
request fails and the others are kept",
                    n + 1
                );
                results.push(crate::types::BatchResult {
                    custom_id: custom_id_in(line).unwrap_or_else(|| format!("line {}", n + 1)),
                    outcome: Err(reason),
                });
            }
        }
    }
    results
}

/// The `custom_id` string of a JSON line that does not read as a whole.
fn custom_id_in(line: &[u8]) -> Option<String> {
    const KEY: &[u8] = b"\"custom_id\"";
    let at = line.windows(KEY.len()).position(|w| w == KEY)?;
    let rest = line[at + KEY.len()..]
        .trim_ascii_start()
        .strip_prefix(b":")?;
    serde_json::Deserializer::from_slice(rest.trim_ascii_start())
        .into_iter::<String>()
        .next()?
        .ok()
}
