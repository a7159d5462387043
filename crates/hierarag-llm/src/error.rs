//! The errors of the LLM layer.

use std::path::PathBuf;

/// Why a request to a client, or building one, failed.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// A request failed for good: a fatal reply (e.g. HTTP 400), or every attempt failed.
    #[error(
        "{backend} model {model} at {endpoint}: {} after {attempts} attempt{}: {reason}",
        if *gave_up { "gave up" } else { "failed" },
        if *attempts == 1 { "" } else { "s" }
    )]
    Call {
        backend: String,
        model: String,
        /// The endpoint of the last attempt.
        endpoint: String,
        attempts: u32,
        /// True when every attempt failed in a retryable way; false when the last failure was
        /// one that retrying cannot fix.
        gave_up: bool,
        /// The last attempt's reason, with the server's message when it sent one.
        reason: String,
    },
    /// The endpoint refused this client (HTTP 401, 403 or 404): a wrong or missing key, no
    /// permission, no such model or path. The client sends no further request after the
    /// first such reply; every later call fails with this error at once.
    #[error(
        "{backend} model {model} at {endpoint} refused the request: {reason} (check the API \
key, the model name and the base URL)"
    )]
    Refused {
        backend: String,
        model: String,
        endpoint: String,
        /// The status and the server's message.
        reason: String,
    },
    /// A service's reply arrived but is not what the caller reads (a [`crate::JsonClient`]
    /// reply without the field it maps): not retried, not cached.
    #[error("{service} at {endpoint}: {reason}")]
    Reply {
        service: String,
        endpoint: String,
        reason: String,
    },
    /// The run's `[budget]` would be passed by this call: it was not sent, and the client sends
    /// no further request.
    #[error("{reason}")]
    Budget { reason: String },
    /// A client in batch mode deferred the request to its next batch: not an answer and not a
    /// failure; the stage's next pass, after the batch, finds the reply in the cache.
    #[error("deferred to the next batch")]
    Deferred,
    /// A batch's record or results could not be read or written.
    #[error("batch: {message}")]
    Batch { message: String },
    /// The response cache could not be opened, read or written.
    #[error("response cache {}: {message}", path.display())]
    Cache { path: PathBuf, message: String },
    /// A configuration that cannot work: a bad value, a missing API key, endpoints that
    /// disagree on the model.
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// A bad `[llm]` or `[embeddings]` table, naming the file (or table) and the field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{source_name}: {field}: {message}")]
pub struct ConfigError {
    /// The config file, or `[llm]`/`[embeddings]` when the file is not known.
    pub source_name: String,
    /// e.g. `llm.base_urls`; for TOML syntax errors, where in the file.
    pub field: String,
    pub message: String,
}

impl ConfigError {
    pub(crate) fn new(
        source_name: &str,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> ConfigError {
        ConfigError {
            source_name: source_name.to_string(),
            field: field.into(),
            message: message.into(),
        }
    }
}

impl hierarag_fs::Blame for LlmError {
    /// A call that failed (after its retries) and the response cache are the service's and the
    /// machine's; a refusal of the endpoint (a key, a model name), a reply that does not parse
    /// and the config are the input's.
    fn fault(&self) -> hierarag_fs::Fault {
        use hierarag_fs::Fault;
        match self {
            LlmError::Call { .. }
            | LlmError::Cache { .. }
            | LlmError::Budget { .. }
            | LlmError::Deferred
            | LlmError::Batch { .. } => Fault::Internal,
            LlmError::Refused { .. } | LlmError::Reply { .. } | LlmError::Config(_) => Fault::Input,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_errors_say_backend_model_endpoint_attempts_and_reason() {
        let error = LlmError::Call {
            backend: "openai".into(),
            model: "m".into(),
            endpoint: "http://127.0.0.1:9/v1".into(),
            attempts: 3,
            gave_up: true,
            reason: "HTTP 503 Service Unavailable: busy".into(),
        };
        assert_eq!(
            error.to_string(),
            "openai model m at http://127.0.0.1:9/v1: gave up after 3 attempts: \
             HTTP 503 Service Unavailable: busy"
        );
        let fatal = LlmError::Call {
            backend: "anthropic".into(),
            model: "c".into(),
            endpoint: "e".into(),
            attempts: 1,
            gave_up: false,
            reason: "HTTP 400 Bad Request: no".into(),
        };
        assert_eq!(
            fatal.to_string(),
            "anthropic model c at e: failed after 1 attempt: HTTP 400 Bad Request: no"
        );
    }
}
