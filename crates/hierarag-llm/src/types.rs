//! Requests, responses and the backend traits every LLM and embedding backend implements.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A boxed future, so that backends can sit behind `dyn` and be chosen at run time.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Who speaks a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: String,
}

impl Message {
    pub fn system(content: impl Into<String>) -> Message {
        Message {
            role: Role::System,
            content: content.into(),
        }
    }

    pub fn user(content: impl Into<String>) -> Message {
        Message {
            role: Role::User,
            content: content.into(),
        }
    }

    pub fn assistant(content: impl Into<String>) -> Message {
        Message {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

/// A JSON schema the reply must follow (structured output).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonSchema {
    /// A short name, as OpenAI's `response_format.json_schema.name` wants.
    pub name: String,
    pub schema: serde_json::Value,
}

/// One chat-completion request. Every field takes part in the cache key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    pub messages: Vec<Message>,
    /// 0 means greedy.
    pub temperature: f32,
    pub top_p: Option<f32>,
    pub max_tokens: u32,
    /// Sampling seed, passed to servers that accept one; the embedded model always uses it.
    pub seed: Option<u64>,
    pub stop: Vec<String>,
    /// Structured output; backends without support send the request plain and the caller
    /// parses tolerantly.
    pub json_schema: Option<JsonSchema>,
}

impl ChatRequest {
    /// A request with the given messages, temperature 0, 512 tokens, no seed, no stop, no schema.
    pub fn new(messages: Vec<Message>) -> ChatRequest {
        ChatRequest {
            messages,
            temperature: 0.0,
            top_p: None,
            max_tokens: 512,
            seed: None,
            stop: Vec::new(),
            json_schema: None,
        }
    }

    /// An upper bound of the prompt's tokens, which a budget reserves before the call, for any
    /// text: a byte-level BPE vocabulary (and every common one, with its byte fallback) makes
    /// at most one token of each byte, so the bytes of the messages and of the JSON schema,
    /// plus [`ChatRequest::TEMPLATE_TOKENS`] a message for the chat template's markers and 16
    /// for the reply's start.
    pub fn prompt_tokens_at_most(&self) -> u64 {
        let text: usize = self.messages.iter().map(|m| m.content.len()).sum();
        let schema = self.json_schema.as_ref().map_or(0, |s| {
            serde_json::to_string(&s.schema).map_or(0, |t| t.len())
        });
        (text + schema) as u64 + ChatRequest::TEMPLATE_TOKENS * self.messages.len() as u64 + 16
    }

    /// The tokens a chat template adds around one message (role markers, separators).
    pub const TEMPLATE_TOKENS: u64 = 8;
}

/// A request's `f32` setting (temperature, top-p) as JSON in its shortest decimal form (0.7,
/// not 0.699999988079071), for the records that say which parameters produced them.
pub fn f32_json(value: f32) -> serde_json::Value {
    value
        .to_string()
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(serde_json::Value::Null, serde_json::Value::Number)
}

/// Tokens and time one call cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Of `prompt_tokens`, those the provider read from its prompt cache (OpenAI's
    /// `prompt_tokens_details.cached_tokens`, Anthropic's `cache_read_input_tokens`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_prompt_tokens: u64,
    /// Of `prompt_tokens`, those written to the provider's prompt cache (Anthropic's
    /// `cache_creation_input_tokens`, priced apart).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_prompt_tokens: u64,
    /// Wall time of the successful attempt, in milliseconds.
    pub latency_ms: f64,
}

/// The reply to a chat request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    pub text: String,
    /// `stop`, `length`, … as the backend reports it.
    pub finish_reason: Option<String>,
    pub usage: Usage,
}

/// Why one attempt failed, and whether trying again can help.
#[derive(Debug, Clone, PartialEq)]
pub enum CallError {
    /// 429, 5xx, a timeout, a dropped connection, a truncated or unparsable body.
    Retryable {
        reason: String,
        /// The server's `Retry-After`, when it sent one.
        retry_after: Option<Duration>,
    },
    /// Any other 4xx (with the server's message), a bad configuration, a broken local model.
    Fatal { reason: String },
    /// 401, 403 or 404: the endpoint refuses this client (a wrong or missing key, no
    /// permission, no such model or path), so every other call would fail alike; the client
    /// sends no further request.
    Refused { reason: String },
}

impl CallError {
    /// The same failure with its reason passed through `f` (a scrubber).
    pub fn map_reason(self, f: impl FnOnce(&str) -> String) -> CallError {
        match self {
            CallError::Retryable {
                reason,
                retry_after,
            } => CallError::Retryable {
                reason: f(&reason),
                retry_after,
            },
            CallError::Fatal { reason } => CallError::Fatal { reason: f(&reason) },
            CallError::Refused { reason } => CallError::Refused { reason: f(&reason) },
        }
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Retryable { reason, .. }
            | CallError::Fatal { reason }
            | CallError::Refused { reason } => f.write_str(reason),
        }
    }
}

impl std::error::Error for CallError {}

/// A chat model: one endpoint of a server, or an in-process model.
pub trait ChatBackend: Send + Sync + fmt::Debug {
    /// `openai`, `anthropic` or `embedded`; part of the cache key.
    fn backend(&self) -> &str;
    /// The model identifier; part of the cache key.
    fn model(&self) -> &str;
    /// Where requests go (a base URL), for logs and errors; `in-process` for a local model.
    fn endpoint(&self) -> &str {
        "in-process"
    }
    /// Whether a request's JSON schema reaches the model. When it does not (an OpenAI-compatible
    /// server with `structured_output = false`, the Anthropic backend), the response cache keys
    /// the request without it, so that a reply made without the schema is never served for a
    /// request that would send it.
    fn sends_json_schema(&self) -> bool {
        true
    }
    /// One attempt, no retries (the client around backends retries).
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<Completion, CallError>>;
}

/// A sentence-embedding model.
pub trait EmbedBackend: Send + Sync + fmt::Debug {
    /// `openai` or `embedded`; part of the cache key.
    fn backend(&self) -> &str;
    /// The model identifier; part of the cache key.
    fn model(&self) -> &str;
    /// Where requests go (a base URL), for logs and errors; `in-process` for a local model.
    fn endpoint(&self) -> &str {
        "in-process"
    }
    /// One attempt: one vector per text, in order.
    fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, CallError>>;
}

/// For `skip_serializing_if`: a count that is 0 is left out.
pub(crate) fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A provider's batch interface on one endpoint (OpenAI's files and batches, Anthropic's
/// message batches): requests go in as one file or body, each under a `custom_id`, and their
/// results come back together once the batch has ended. One attempt per call, no retries.
pub trait BatchBackend: Send + Sync + fmt::Debug {
    /// Where batches go (a base URL), for logs, errors and the run's record of its batches.
    fn endpoint(&self) -> &str;
    /// The most requests, and bytes of input, one batch may hold.
    fn limits(&self) -> (usize, usize);
    /// The line (OpenAI) or entry (Anthropic) of `request` in a batch's input.
    fn entry(&self, custom_id: &str, request: &ChatRequest) -> serde_json::Value;
    /// Submits `entries` (each an [`BatchBackend::entry`] as JSON text) as one batch, marked
    /// with `submission` where the provider keeps a batch's metadata; its id.
    fn submit<'a>(
        &'a self,
        entries: &'a [String],
        submission: &'a str,
    ) -> BoxFuture<'a, Result<String, CallError>>;
    /// The batch marked with `submission` by [`BatchBackend::submit`], if the provider has one
    /// (a create that answered 5xx, or was cut off by a crash, after it made the batch).
    /// `None` where the provider keeps no metadata to find it by (Anthropic).
    fn find<'a>(&'a self, submission: &'a str) -> BoxFuture<'a, Result<Option<String>, CallError>>;
    /// Where batch `id` stands.
    fn status<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<BatchStatus, CallError>>;
    /// The results of an ended batch: one per request that ran (those a batch did not reach
    /// before it expired or was cancelled are missing).
    fn results<'a>(
        &'a self,
        status: &'a BatchStatus,
    ) -> BoxFuture<'a, Result<Vec<BatchResult>, CallError>>;
}

/// Where a batch stands, as its provider says.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchStatus {
    pub id: String,
    /// The provider's word: `validating`, `in_progress`, `completed`, `expired`, `ended`, …
    pub state: String,
    /// No request of it will run any more: its results can be read.
    pub ended: bool,
    /// Why the whole batch failed (OpenAI's `failed`: an input it could not read).
    pub error: Option<String>,
    /// The files that hold its results (OpenAI's output and error files).
    pub files: Vec<String>,
}

/// The result of one request of a batch.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchResult {
    pub custom_id: String,
    /// The completion, or why this request failed.
    pub outcome: Result<Completion, String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reservation_is_an_upper_bound_for_any_text() {
        // 48 bytes in one message: 48 + 8 for the template + 16.
        let request = ChatRequest::new(vec![Message::user(
            "one two three four five six seven eight nine ten",
        )]);
        assert_eq!(request.prompt_tokens_at_most(), 72);
        // Text of many tokens a word (hex identifiers, where words × 1.35 fell 24 % short of
        // what the provider billed): never fewer than one token a byte.
        let hex: String = (0..200u32)
            .map(|i| format!("{:08x} ", i.wrapping_mul(2_654_435_761)))
            .collect();
        let request = ChatRequest::new(vec![Message::system("ids"), Message::user(&hex)]);
        assert!(request.prompt_tokens_at_most() >= (hex.len() + 3) as u64);
    }
}
