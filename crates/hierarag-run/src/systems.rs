//! The systems of a run (`[[system]]`): where each one's files go, and the replies of command,
//! function and HTTP systems made answer records. Answers read from a file are
//! `hierarag-interchange`'s ([`hierarag_interchange::answers`], re-exported here).

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use hierarag_generate::BenchmarkRecord;
use hierarag_lang::Language;
use hierarag_rag::AnswerRecord;
use serde_json::Value;

pub use hierarag_interchange::answers::{
    AnswerRow, BM25_MIN_SHARED_WORDS, FoundBy, Matched, answer_record, find_documents,
    find_row_documents, match_rows, read_rows,
};

use crate::config::{MAIN_SYSTEM, RunConfig};
use crate::layout::{RunDir, SystemDir};
use crate::manifest::Manifest;

/// Where a system of `config` keeps its files: the top of the run directory for the implicit
/// system of a config without `[[system]]`, `systems/<name>/` otherwise.
pub fn dir_of(run: &RunDir, config: &RunConfig, name: &str) -> SystemDir {
    if config.systems.is_empty() {
        run.main_system()
    } else {
        run.system(name)
    }
}

/// The systems of an existing run, in its config's order, with their folders: those of the
/// config recorded in its manifest, or the implicit one.
pub fn systems_of_run(run: &RunDir) -> anyhow::Result<Vec<(String, SystemDir)>> {
    let names: Vec<String> = if run.manifest().exists() {
        let manifest = Manifest::load(run)?;
        manifest
            .config
            .get("systems")
            .and_then(Value::as_array)
            .map(|systems| {
                systems
                    .iter()
                    .filter_map(|s| s.get("name").and_then(Value::as_str).map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let mut systems: Vec<(String, SystemDir)> = if names.is_empty() {
        vec![(MAIN_SYSTEM.to_owned(), run.main_system())]
    } else {
        names
            .into_iter()
            .map(|name| {
                let dir = run.system(&name);
                (name, dir)
            })
            .collect()
    };
    // Systems added to the run after it was made (a Python function's answers, by
    // `answer_with`), each marked by `systems/<name>/system.json`, in name order.
    let mut added: Vec<String> = match std::fs::read_dir(run.root().join("systems")) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .filter(|entry| entry.path().join(ADDED_SYSTEM).is_file())
            .filter_map(|entry| entry.file_name().to_str().map(str::to_owned))
            .collect(),
        Err(_) => Vec::new(),
    };
    added.sort();
    for name in added {
        if !systems.iter().any(|(known, _)| *known == name) {
            let dir = run.system(&name);
            systems.push((name, dir));
        }
    }
    Ok(systems)
}

/// [`systems_of_run`], and the `[[system]]`s of `config` that the run's manifest does not list
/// (answered by `hierarag answer --config C` into a run that `hierarag run` did not make), in
/// the config's order; the implicit system is left out when it has no answers and the config
/// names systems.
pub fn systems_of_run_and_config(
    run: &RunDir,
    config: &RunConfig,
) -> anyhow::Result<Vec<(String, SystemDir)>> {
    let mut systems = systems_of_run(run)?;
    if !config.systems.is_empty() {
        systems.retain(|(_, dir)| dir.root() != run.root() || dir.answers().exists());
        for system in &config.systems {
            if !systems.iter().any(|(name, _)| *name == system.name) {
                systems.push((system.name.clone(), run.system(&system.name)));
            }
        }
    }
    Ok(systems)
}

/// Removes `systems/<name>/` of a system added to `run` after it was made (its marker,
/// answers, scores and failures); returns the folder removed. A system of the run's config is
/// refused (it would come back with the next `run`): it is taken out of the config instead.
pub fn remove_added(run: &RunDir, name: &str) -> anyhow::Result<PathBuf> {
    crate::config::check_system_name(name)?;
    let folder = run.system(name);
    if folder.root().join(ADDED_SYSTEM).is_file() {
        std::fs::remove_dir_all(folder.root())
            .with_context(|| format!("removing {}", folder.root().display()))?;
        return Ok(folder.root().to_path_buf());
    }
    let systems = systems_of_run(run)?;
    if systems.iter().any(|(known, _)| known == name) {
        bail!(
            "system {name:?} is one of the run config's [[system]] tables: take it out of the \
config (and rerun with --reconfigure) instead"
        );
    }
    let names: Vec<&str> = systems.iter().map(|(n, _)| n.as_str()).collect();
    bail!(
        "{}: no system {name:?} was added to the run; its systems: {}",
        run.root().display(),
        names.join(", ")
    )
}

/// The file that marks `systems/<name>/` as a system added to a run after it was made:
/// `{"name", "kind"}` (kind `python` for a function's answers).
pub const ADDED_SYSTEM: &str = "system.json";

/// The system `name` of a run (None: its first), or an error listing the run's systems.
pub fn system_of_run(run: &RunDir, name: Option<&str>) -> anyhow::Result<(String, SystemDir)> {
    let systems = systems_of_run(run)?;
    match name {
        None => Ok(systems.into_iter().next().expect("a run has a system")),
        Some(name) => {
            let names: Vec<String> = systems.iter().map(|(n, _)| n.clone()).collect();
            systems
                .into_iter()
                .find(|(n, _)| n == name)
                .with_context(|| {
                    format!(
                        "{}: no system named {name:?}; its systems: {}",
                        run.root().display(),
                        names.join(", ")
                    )
                })
        }
    }
}

/// A `kind = "command"` system as the answer stage asks it: the program's reply made an answer
/// record, its contexts' documents found in `index` when it gives only texts.
#[derive(Debug)]
pub struct CommandAnswers<'a> {
    pub name: &'a str,
    pub program: hierarag_systems::CommandSystem,
    pub command: &'a [String],
    pub index: Option<&'a hierarag_index::Bm25Index>,
    /// The language whose refusal sentence counts as a refusal.
    pub language: Language,
}

impl hierarag_pipeline::AnswerSystem for CommandAnswers<'_> {
    async fn answer(&self, record: &BenchmarkRecord) -> Result<AnswerRecord, String> {
        let reply = self
            .program
            .ask(&record.id, &record.question)
            .await
            .map_err(|error| format!("{:#}", anyhow::Error::new(error)))?;
        reply_record(
            record,
            reply,
            self.index,
            self.name,
            "command",
            serde_json::json!({ "command": self.command }),
            self.language,
        )
    }
}

/// A system that answers with a function ([`crate::stages::AnswerFunction`]): its reply made
/// an answer record as a program's is.
pub struct FunctionAnswers<'a> {
    pub name: &'a str,
    pub call: crate::stages::AnswerFunction,
    pub index: Option<&'a hierarag_index::Bm25Index>,
    pub language: Language,
}

impl std::fmt::Debug for FunctionAnswers<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FunctionAnswers")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl hierarag_pipeline::AnswerSystem for FunctionAnswers<'_> {
    async fn answer(&self, record: &BenchmarkRecord) -> Result<AnswerRecord, String> {
        let call = std::sync::Arc::clone(&self.call);
        let owned = record.clone();
        let value = tokio::task::spawn_blocking(move || call(&owned))
            .await
            .map_err(|error| format!("the function did not return: {error}"))??;
        let reply = hierarag_systems::Reply::from_json(value)?;
        reply_record(
            record,
            reply,
            self.index,
            self.name,
            "python",
            serde_json::json!({}),
            self.language,
        )
    }
}

/// A `kind = "http"` system as the answer stage asks it: the service's reply made an answer
/// record, each answer's latency appended to `latency.jsonl`, and the first reply that does
/// not fit the mapping stopping the stage.
#[derive(Debug)]
pub struct HttpAnswers<'a> {
    pub name: &'a str,
    pub service: hierarag_systems::HttpSystem,
    pub index: Option<&'a hierarag_index::Bm25Index>,
    pub language: Language,
    /// `latency.jsonl` of the system's folder, appended to.
    pub latency: std::sync::Mutex<std::fs::File>,
    /// This pass's latencies of calls made (cache hits excluded), in milliseconds.
    pub latencies: std::sync::Mutex<Vec<f64>>,
    /// Set by the first reply that does not fit the mapping.
    pub mismatch: std::sync::OnceLock<String>,
}

impl HttpAnswers<'_> {
    pub fn new<'a>(
        name: &'a str,
        service: hierarag_systems::HttpSystem,
        index: Option<&'a hierarag_index::Bm25Index>,
        language: Language,
        latency_path: &Path,
    ) -> anyhow::Result<HttpAnswers<'a>> {
        let latency = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(latency_path)
            .with_context(|| format!("opening {}", latency_path.display()))?;
        Ok(HttpAnswers {
            name,
            service,
            index,
            language,
            latency: std::sync::Mutex::new(latency),
            latencies: std::sync::Mutex::new(Vec::new()),
            mismatch: std::sync::OnceLock::new(),
        })
    }

    /// The median and 95th percentile of this pass's call latencies, in milliseconds.
    pub fn latency_quantiles(&self) -> Option<(f64, f64)> {
        let mut latencies = self
            .latencies
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if latencies.is_empty() {
            return None;
        }
        latencies.sort_by(f64::total_cmp);
        let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q).round() as usize];
        Some((at(0.5), at(0.95)))
    }
}

impl hierarag_pipeline::AnswerSystem for HttpAnswers<'_> {
    async fn answer(&self, record: &BenchmarkRecord) -> Result<AnswerRecord, String> {
        let answer = match self.service.ask(&record.id, &record.question).await {
            Ok(answer) => answer,
            Err(error) => {
                let reason = error.to_string();
                if matches!(error, hierarag_llm::LlmError::Reply { .. }) {
                    let _ = self.mismatch.set(format!(
                        "question {}: {reason}; no further question is asked (fix the mapping \
or the service)",
                        record.id
                    ));
                }
                return Err(reason);
            }
        };
        let line = serde_json::json!({
            "id": record.id,
            "latency_ms": answer.latency_ms,
            "attempts": answer.attempts,
            "cached": answer.cached,
        });
        {
            use std::io::Write as _;
            let mut file = self.latency.lock().unwrap_or_else(|e| e.into_inner());
            writeln!(file, "{line}").map_err(|e| format!("writing latency.jsonl: {e}"))?;
        }
        if !answer.cached {
            let mut latencies = self.latencies.lock().unwrap_or_else(|e| e.into_inner());
            latencies.push(answer.latency_ms);
        }
        reply_record(
            record,
            answer.reply,
            self.index,
            self.name,
            "http",
            serde_json::json!({ "url": self.service.url() }),
            self.language,
        )
    }

    fn refusal(&self) -> Option<String> {
        self.mismatch
            .get()
            .cloned()
            .or_else(|| self.service.refusal().map(|error| error.to_string()))
    }
}

/// The answer record of a system's reply. Its ranking is its contexts' documents in the order
/// given: a context's `doc_id` when it has one, else the document its text is found in within
/// `index` (a reply may mix the two; a text found nowhere, or with no index, ranks nothing).
fn reply_record(
    record: &BenchmarkRecord,
    reply: hierarag_systems::Reply,
    index: Option<&hierarag_index::Bm25Index>,
    name: &str,
    kind: &str,
    params: Value,
    language: Language,
) -> Result<AnswerRecord, String> {
    let texts_only: Vec<String> = reply
        .contexts
        .iter()
        .filter(|c| c.doc_id.is_none())
        .filter_map(|c| c.text.clone())
        .collect();
    let mut looked_up = match index {
        Some(index) if !texts_only.is_empty() => find_documents(index, &texts_only)
            .map_err(|error| format!("finding the contexts' documents: {error:#}"))?,
        _ => Vec::new(),
    }
    .into_iter();
    let (mut doc_ids, mut found) = (Vec::new(), Vec::new());
    for context in &reply.contexts {
        let hit = match (&context.doc_id, &context.text) {
            (Some(doc_id), _) => Some((doc_id.clone(), FoundBy::Given)),
            (None, Some(_)) => looked_up.next().flatten(),
            (None, None) => None,
        };
        if let Some((doc_id, how)) = hit {
            doc_ids.push(doc_id);
            found.push(how);
        }
    }
    // Ids that were all given say nothing about how they were found.
    if found.iter().all(|how| *how == FoundBy::Given) {
        found.clear();
    }
    let row = AnswerRow {
        line: 0,
        id: Some(record.id.clone()),
        question: None,
        contexts: reply
            .contexts
            .iter()
            .filter_map(|c| c.text.clone())
            .collect(),
        doc_ids,
        answer: reply.answer,
        found,
    };
    Ok(answer_record(
        record,
        &row,
        name,
        kind.into(),
        params,
        language,
    ))
}
