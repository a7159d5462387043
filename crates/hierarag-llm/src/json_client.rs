//! [`JsonClient`]: JSON POSTs to a service that is not a model server (a user's RAG service),
//! with the machinery of the chat and embedding clients: the concurrency limit, a timeout per
//! attempt, retries with backoff and `Retry-After`, the response cache and usage accounting.

use std::sync::Arc;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use crate::cache::{ResponseCache, reply_cache_key};
use crate::config::ClientSettings;
use crate::dispatch::Dispatcher;
use crate::endpoints::EndpointPool;
use crate::error::{ConfigError, LlmError};
use crate::http::{PostUrl, http_client, post_json};
use crate::usage::UsageSummary;

/// Checks that `url` is an http or https URL a [`JsonClient`] can POST to.
pub fn check_service_url(url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("{url:?}: only http and https URLs are supported"));
    }
    Ok(())
}

/// The one endpoint of a [`JsonClient`]: where it POSTs, with which headers.
#[derive(Debug)]
pub(crate) struct JsonEndpoint {
    http: reqwest::Client,
    url: PostUrl,
    /// Marked sensitive, so that no debug output shows them.
    headers: HeaderMap,
}

/// A reply read by the caller, and how it was obtained.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonReply<T> {
    /// What the caller's reader made of the reply body.
    pub value: T,
    /// Answered from the response cache, with no call.
    pub cached: bool,
    /// Attempts made (0 on a cache hit).
    pub attempts: u32,
    /// Wall time of the successful attempt, in milliseconds; on a cache hit, the original's.
    pub latency_ms: f64,
}

/// JSON POSTs to one URL, with the LLM clients' limit, timeouts, retries, cache and usage.
/// Cheap to clone: clones share all of it.
#[derive(Debug, Clone)]
pub struct JsonClient {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    dispatcher: Dispatcher<JsonEndpoint>,
    cache: Option<ResponseCache>,
    name: String,
    url: String,
}

impl JsonClient {
    /// A client that POSTs to `url` with `headers` (values as sent; they never reach the cache,
    /// the usage or an error message). `name` names the service in the usage and in errors.
    /// Opens the cache if `settings` names one.
    pub fn new(
        name: &str,
        url: &str,
        headers: &[(String, String)],
        settings: &ClientSettings,
    ) -> Result<JsonClient, LlmError> {
        let config_error = |field: String, message: String| {
            LlmError::Config(ConfigError::new(name, field, message))
        };
        check_service_url(url).map_err(|message| config_error("url".into(), message))?;
        let mut header_map = HeaderMap::new();
        for (key, value) in headers {
            let header = HeaderName::from_bytes(key.as_bytes()).map_err(|_| {
                config_error(
                    format!("headers.{key}"),
                    "is not a valid header name".into(),
                )
            })?;
            let mut value = HeaderValue::from_str(value).map_err(|_| {
                // The value may be a secret: it is not quoted.
                config_error(
                    format!("headers.{key}"),
                    "the value holds characters a header cannot carry (a line break?)".into(),
                )
            })?;
            value.set_sensitive(true);
            header_map.insert(header, value);
        }
        let http = http_client().map_err(|message| config_error("url".into(), message))?;
        let endpoint = JsonEndpoint {
            http,
            url: PostUrl::new(url.to_string()),
            headers: header_map,
        };
        let cache = settings
            .cache
            .as_deref()
            .map(ResponseCache::open)
            .transpose()?;
        Ok(JsonClient {
            inner: Arc::new(Inner {
                dispatcher: Dispatcher::new(
                    EndpointPool::new(vec![Arc::new(endpoint)]),
                    settings,
                    "http",
                    name,
                ),
                cache,
                name: name.to_string(),
                url: url.to_string(),
            }),
        })
    }

    pub fn url(&self) -> &str {
        &self.inner.url
    }

    /// POSTs `body` (or finds its reply in the cache) and reads the reply with `read`. A reply
    /// that `read` refuses is [`LlmError::Reply`] with `read`'s reason; it is not retried and
    /// not cached, so that a rerun asks again. A reply is in the cache when this returns.
    pub async fn post<T>(
        &self,
        body: &Value,
        read: impl Fn(&Value) -> Result<T, String>,
    ) -> Result<JsonReply<T>, LlmError> {
        let inner = &*self.inner;
        let usage = &inner.dispatcher.usage;
        usage.request();
        let key = inner
            .cache
            .as_ref()
            .map(|_| reply_cache_key(&inner.url, body));
        let rejected = |reason: String| {
            usage.failure(&reason);
            LlmError::Reply {
                service: inner.name.clone(),
                endpoint: inner.url.clone(),
                reason,
            }
        };
        if let (Some(cache), Some(key)) = (&inner.cache, &key)
            && let Some((text, latency_ms)) = cache.get_reply(key)?
        {
            // A cached body was JSON when it was stored; one that no longer reads (the file
            // edited by hand) is asked again.
            if let Ok(reply) = serde_json::from_str::<Value>(&text) {
                usage.cache_hit();
                let value = read(&reply).map_err(rejected)?;
                return Ok(JsonReply {
                    value,
                    cached: true,
                    attempts: 0,
                    latency_ms,
                });
            }
        }
        let (reply, stats) = inner
            .dispatcher
            .call(
                |endpoint| endpoint.url.to_string(),
                |endpoint| {
                    Box::pin(async move {
                        post_json::<Value>(
                            &endpoint.http,
                            &endpoint.url,
                            endpoint.headers.clone(),
                            body,
                        )
                        .await
                    })
                },
            )
            .await?;
        let latency_ms = stats.elapsed.as_secs_f64() * 1000.0;
        let value = read(&reply).map_err(rejected)?;
        if let (Some(cache), Some(key)) = (&inner.cache, &key) {
            cache
                .put_reply(key, &inner.url, &reply.to_string(), latency_ms)
                .await?;
        }
        Ok(JsonReply {
            value,
            cached: false,
            attempts: stats.attempts,
            latency_ms,
        })
    }

    /// Totals since the client was built (its tokens are always 0).
    pub fn usage(&self) -> UsageSummary {
        self.inner.dispatcher.usage.snapshot()
    }

    /// The refusal (HTTP 401, 403 or 404) that stopped this client, if the service sent one.
    pub fn refusal(&self) -> Option<LlmError> {
        self.inner.dispatcher.refusal()
    }
}
