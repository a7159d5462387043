//! The replies of a user's systems made answer records, as the answer stage asks them: a
//! program speaking JSON lines (`kind = "command"`), a service (`kind = "http"`), a function
//! (a Python callable). A reply's contexts name their documents, or are found in the index by
//! their text, as the contexts of an answers file are ([`crate::answers`]).

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use hierarag_lang::Language;
use hierarag_rag::AnswerRecord;
use hierarag_records::BenchmarkRecord;
use serde_json::Value;

use crate::answers::{AnswerRow, FoundBy, answer_record, find_documents};

/// A function that answers one question (its benchmark record) with a reply in the JSON form
/// of [`hierarag_systems::Reply::from_json`], or says why it could not. It may block (it is
/// called on blocking threads, `concurrency` at a time).
pub type AnswerFunction =
    Arc<dyn Fn(&BenchmarkRecord) -> Result<serde_json::Value, String> + Send + Sync>;

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

/// A system that answers with a function ([`AnswerFunction`]): its reply made
/// an answer record as a program's is.
pub struct FunctionAnswers<'a> {
    pub name: &'a str,
    pub call: AnswerFunction,
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
