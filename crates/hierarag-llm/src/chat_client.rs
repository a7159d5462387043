//! [`ChatClient`]: chat completion through any [`ChatBackend`]s, with the cache in front and the
//! shared attempt loop behind.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use crate::anthropic::AnthropicChat;
use crate::budget::{Budget, Prices};
use crate::cache::{ResponseCache, chat_key};
use crate::config::{ChatBackendKind, ClientSettings, LlmConfig};
use crate::dispatch::Dispatcher;
use crate::endpoints::EndpointPool;
use crate::error::{ConfigError, LlmError};
use crate::http::http_client;
use crate::openai::OpenAiChat;
use crate::types::{ChatBackend, ChatRequest, Completion, Message};
use crate::usage::UsageSummary;

/// A chat completion and how it was obtained.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// On a cache hit: the stored text, finish reason and usage of the original call.
    pub completion: Completion,
    /// Answered from the response cache, with no call.
    pub cached: bool,
    /// Attempts made (0 on a cache hit).
    pub attempts: u32,
}

/// Chat completion with a concurrency limit, endpoint balancing, timeouts, retries, a response
/// cache and usage accounting. Cheap to clone: clones share the limit, the endpoints, the cache
/// and the usage, so that tasks spawned on other threads can each hold one.
#[derive(Debug, Clone)]
pub struct ChatClient {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    dispatcher: Dispatcher<dyn ChatBackend>,
    cache: Option<ResponseCache>,
    /// The run's spending limit and this client's prices, when the run has a `[budget]`.
    budget: OnceLock<(Arc<Budget>, Prices)>,
}

impl ChatClient {
    /// A client over `backends`, endpoints of one backend kind and model (e.g. the in-process
    /// model from `hierarag-models`, or several servers). Opens the cache if `settings` names
    /// one.
    pub fn new(
        backends: Vec<Arc<dyn ChatBackend>>,
        settings: &ClientSettings,
    ) -> Result<ChatClient, LlmError> {
        let (backend, model) = same_model(backends.iter().map(|b| (b.backend(), b.model())))?;
        let cache = settings
            .cache
            .as_deref()
            .map(ResponseCache::open)
            .transpose()?;
        Ok(ChatClient {
            inner: Arc::new(Inner {
                dispatcher: Dispatcher::new(
                    EndpointPool::new(backends),
                    settings,
                    &backend,
                    &model,
                ),
                cache,
                budget: OnceLock::new(),
            }),
        })
    }

    /// Counts this client's calls against `budget` at `prices`: a call that would pass it is
    /// not sent, and the client stops as after a refusal ([`ChatClient::refusal`]). Set once;
    /// later calls are ignored.
    pub fn set_budget(&self, budget: Arc<Budget>, prices: Prices) {
        let _ = self.inner.budget.set((budget, prices));
    }

    /// A client for an `openai` or `anthropic` `[llm]` table: one backend per base URL, the API
    /// key from its environment variable, the cache path resolved against `run_dir`. For
    /// `embedded`, build the model and call [`ChatClient::new`] with `config.settings(run_dir)`.
    pub fn from_config(config: &LlmConfig, run_dir: &Path) -> Result<ChatClient, LlmError> {
        config.validate("[llm]")?;
        let api_key = config.api_key()?;
        let http = http_client().map_err(|message| ConfigError::new("[llm]", "llm", message))?;
        let backends: Vec<Arc<dyn ChatBackend>> = match config.backend {
            ChatBackendKind::OpenAi => config
                .base_urls
                .iter()
                .map(|url| {
                    Arc::new(OpenAiChat::new(
                        http.clone(),
                        url,
                        &config.model,
                        api_key.clone(),
                        config.structured_output,
                    )) as Arc<dyn ChatBackend>
                })
                .collect(),
            ChatBackendKind::Anthropic => config
                .base_urls
                .iter()
                .map(|url| {
                    Arc::new(AnthropicChat::new(
                        http.clone(),
                        url,
                        &config.model,
                        api_key.clone(),
                    )) as Arc<dyn ChatBackend>
                })
                .collect(),
            ChatBackendKind::Embedded => {
                return Err(ConfigError::new(
                    "[llm]",
                    "llm.backend",
                    "the embedded model is built by hierarag-models; pass it to ChatClient::new",
                )
                .into());
            }
        };
        ChatClient::new(backends, &config.settings(run_dir))
    }

    /// `openai`, `anthropic`, `embedded`, …
    pub fn backend(&self) -> &str {
        self.inner.dispatcher.pool.first().backend()
    }

    pub fn model(&self) -> &str {
        self.inner.dispatcher.pool.first().model()
    }

    /// The endpoints, in the order they were given.
    pub fn endpoints(&self) -> Vec<String> {
        let backends = self.inner.dispatcher.pool.backends();
        backends.iter().map(|b| b.endpoint().to_string()).collect()
    }

    /// Answers `request` from the cache, or calls a backend (retrying as configured) and
    /// stores the reply. The reply's usage latency is the successful attempt's wall time. A
    /// reply is in the cache file when this returns, so a caller may record what it depends on.
    pub async fn complete(&self, request: &ChatRequest) -> Result<Reply, LlmError> {
        let usage = &self.inner.dispatcher.usage;
        usage.request();
        // Hashing the canonical request costs microseconds; without a cache there is no need.
        // The key is of what the model receives: a backend that does not send the schema
        // (without structured output, or Anthropic) is keyed without it.
        let key = self.inner.cache.as_ref().map(|_| {
            let schema = request
                .json_schema
                .as_ref()
                .filter(|_| self.inner.dispatcher.pool.first().sends_json_schema());
            chat_key(self.backend(), self.model(), request, schema)
        });
        if let (Some(cache), Some(key)) = (&self.inner.cache, &key)
            && let Some(completion) = cache.get_completion(key)?
        {
            usage.cache_hit();
            return Ok(Reply {
                completion,
                cached: true,
                attempts: 0,
            });
        }
        let budget = self.inner.budget.get();
        let reservation = match budget {
            Some((budget, prices)) => Some(
                budget
                    .reserve(request, prices)
                    .map_err(|reason| LlmError::Budget { reason })?,
            ),
            None => None,
        };
        let result = self
            .inner
            .dispatcher
            .call(
                |backend| backend.endpoint().to_string(),
                |backend| Box::pin(async move { backend.complete(request).await }),
            )
            .await;
        if let (Some((budget, prices)), Some(reservation)) = (budget, reservation) {
            let (prompt, completion) = result.as_ref().map_or((0, 0), |(c, _)| {
                (c.usage.prompt_tokens, c.usage.completion_tokens)
            });
            budget.settle(reservation, prompt, completion, prices);
        }
        let (mut completion, stats) = result?;
        completion.usage.latency_ms = stats.elapsed.as_secs_f64() * 1000.0;
        usage.tokens(
            completion.usage.prompt_tokens,
            completion.usage.completion_tokens,
            completion.usage.cached_prompt_tokens,
        );
        if let (Some(cache), Some(key)) = (&self.inner.cache, &key) {
            cache
                .put_completion(key, self.backend(), self.model(), &completion)
                .await?;
        }
        Ok(Reply {
            completion,
            cached: false,
            attempts: stats.attempts,
        })
    }

    /// Sends a one-token request to every endpoint, past the cache and with the usual
    /// retries, so that a wrong key, model or URL is found before a run starts its work; the
    /// first endpoint that fails, with its reason.
    pub async fn check_endpoints(&self) -> Result<(), LlmError> {
        let mut request = ChatRequest::new(vec![Message::user("Reply with the word OK.")]);
        request.max_tokens = 1;
        let request = &request;
        for index in 0..self.inner.dispatcher.pool.backends().len() {
            self.inner
                .dispatcher
                .call_at(
                    Some(index),
                    |backend| backend.endpoint().to_string(),
                    |backend| Box::pin(async move { backend.complete(request).await }),
                )
                .await?;
        }
        Ok(())
    }

    /// Totals since the client was built.
    pub fn usage(&self) -> UsageSummary {
        self.inner.dispatcher.usage.snapshot()
    }

    /// The refusal (HTTP 401, 403 or 404) that stopped this client, if an endpoint sent one:
    /// after it, every call fails at once without a request, so a stage stops too.
    pub fn refusal(&self) -> Option<LlmError> {
        self.inner.dispatcher.refusal().or_else(|| {
            let (budget, _) = self.inner.budget.get()?;
            budget.stopped().map(|reason| LlmError::Budget {
                reason: reason.to_owned(),
            })
        })
    }
}

/// The (backend, model) all endpoints share; several models behind one client would make the
/// cache key and the usage lie.
pub(crate) fn same_model<'a>(
    mut pairs: impl Iterator<Item = (&'a str, &'a str)>,
) -> Result<(String, String), ConfigError> {
    let Some((backend, model)) = pairs.next() else {
        return Err(ConfigError::new(
            "client",
            "backends",
            "a client needs at least one backend",
        ));
    };
    for (other_backend, other_model) in pairs {
        if (other_backend, other_model) != (backend, model) {
            return Err(ConfigError::new(
                "client",
                "backends",
                format!(
                    "all endpoints must serve one model: {backend} {model} and {other_backend} {other_model} differ"
                ),
            ));
        }
    }
    Ok((backend.to_string(), model.to_string()))
}
