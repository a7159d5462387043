//! The LLM layer: chat completion and embeddings behind one pair of traits ([`ChatBackend`],
//! [`EmbedBackend`]), with the machinery every backend shares.
//!
//! Backends make one attempt per call: [`OpenAiChat`] and [`OpenAiEmbeddings`] speak to
//! OpenAI-compatible servers (OpenAI, vLLM, llama.cpp), [`AnthropicChat`] to Anthropic's
//! Messages API, and `hierarag-models` implements the traits for in-process models. The
//! clients around them, [`ChatClient`] and [`Embedder`], add what every backend needs:
//!
//! - a concurrency limit (calls in flight, over all endpoints);
//! - several endpoints of one model, each request sent to the one with the fewest in flight;
//! - a timeout per attempt, and retries with exponential backoff and full jitter on 429, 408,
//!   5xx, timeouts, dropped connections, truncated bodies and invalid JSON, never waiting less
//!   than the server's `Retry-After`; any other 4xx fails at once with the server's message;
//! - a SQLite [`ResponseCache`] keyed by (backend, model, request), so that a rerun makes no
//!   call and gets the same text; a reply is committed before the call returns it;
//! - usage accounting ([`UsageSummary`]) for the run manifest and a stage's last line.
//!
//! [`JsonClient`] gives the same machinery to a JSON service that is not a model server (a
//! user's RAG service behind HTTP): one URL, headers that stay out of the cache, the logs and
//! every error (even one quoting a service that echoes them), a bound on a reply's size, no
//! redirect to another origin, and a reader of the reply whose refusal is neither retried nor
//! cached.
//!
//! [`delimit`] keeps text from a corpus or a user's system inside the data blocks of a prompt
//! (no `</document>` in a document can close its block).
//!
//! A request that fails for good is an [`LlmError::Call`] naming the backend, model, endpoint,
//! attempts and last reason; it is also counted in the usage. API keys come from environment
//! variables named in the config ([`LlmConfig`], [`EmbeddingsConfig`]), never from the config.
//!
//! ```no_run
//! use std::path::Path;
//! use hierarag_llm::{ChatClient, ChatRequest, LlmConfig, Message};
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let run_config = r#"
//! [llm]
//! backend = "openai"
//! model = "SmolLM2-135M-Instruct"
//! base_urls = ["http://127.0.0.1:8080/v1"]
//! concurrency = 4
//! cache = "llm-cache.sqlite"
//! "#;
//! let config = LlmConfig::from_toml_str(run_config, "run.toml")?.expect("an [llm] table");
//! let client = ChatClient::from_config(&config, Path::new("runs/demo"))?;
//! let request = ChatRequest::new(vec![
//!     Message::system("Answer in one word."),
//!     Message::user("What colour is the sky?"),
//! ]);
//! let reply = client.complete(&request).await?;
//! println!("{} (cached: {})", reply.completion.text, reply.cached);
//! eprintln!("{}", client.usage()); // one line: requests, calls, retries, failures, tokens
//! # Ok(())
//! # }
//! ```

mod anthropic;
mod batch;
mod cache;
mod chat_client;
mod config;
pub mod delimit;
mod dispatch;
mod embedder;
mod endpoints;
mod error;
mod http;
mod json_client;
mod openai;
mod repair;
mod retry;
mod types;
mod usage;

pub use anthropic::{ANTHROPIC_VERSION, AnthropicChat};
pub use batch::{BatchLedger, BatchRound, LedgerLine};
pub use cache::{ResponseCache, chat_cache_key, embed_text_key, reply_cache_key};
pub use chat_client::{ChatClient, Reply};
pub use config::{
    CacheSetting, ChatBackendKind, ClientSettings, EmbedBackendKind, EmbeddingsConfig, LlmConfig,
};
pub use embedder::Embedder;
pub use error::{ConfigError, LlmError};
pub use hierarag_cost::{Budget, Prices, Reservation};
pub use json_client::{DEFAULT_MAX_REPLY_BYTES, JsonClient, JsonReply, check_service_url};
pub use openai::{BATCH_CHAT_URL, OpenAiChat, OpenAiEmbeddings, batch_line, read_batch_output};
pub use repair::{Unreadable, complete_parsed};
pub use retry::{RetryPolicy, parse_retry_after};
pub use types::{
    BatchBackend, BatchResult, BatchStatus, BoxFuture, CallError, ChatBackend, ChatRequest,
    Completion, EmbedBackend, JsonSchema, Message, Role, Usage, f32_json,
};
pub use usage::UsageSummary;

/// An HTTP client suitable for [`OpenAiChat`], [`OpenAiEmbeddings`] and [`AnthropicChat`]
/// (rustls with the system's root certificates; timeouts are the clients' business).
pub fn http_client() -> Result<reqwest::Client, String> {
    http::http_client()
}
