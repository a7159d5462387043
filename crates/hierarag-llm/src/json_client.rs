//! [`JsonClient`]: JSON POSTs to a service that is not a model server (a user's RAG service),
//! with the machinery of the chat and embedding clients: the concurrency limit, a timeout per
//! attempt, retries with backoff and `Retry-After`, the response cache and usage accounting;
//! and what a service run by someone else needs besides: a bound on a reply's size, no
//! redirect to another origin, and no header value in any error.

use std::sync::Arc;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use crate::cache::{ResponseCache, reply_cache_key};
use crate::config::ClientSettings;
use crate::dispatch::Dispatcher;
use crate::endpoints::EndpointPool;
use crate::error::{ConfigError, LlmError};
use crate::http::{PostUrl, http_client, post_json_limited};
use crate::usage::UsageSummary;
use hierarag_fs::secrets::Secrets;

/// Checks that `url` is an http or https URL a [`JsonClient`] can POST to.
pub fn check_service_url(url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("{url:?}: only http and https URLs are supported"));
    }
    Ok(())
}

/// The limit on a reply's size a [`JsonClient`] is usually given: far above a RAG answer with
/// its contexts, far below what would strain memory.
pub const DEFAULT_MAX_REPLY_BYTES: usize = 4 * 1024 * 1024;

/// The one endpoint of a [`JsonClient`]: where it POSTs, with which headers.
#[derive(Debug)]
pub(crate) struct JsonEndpoint {
    http: reqwest::Client,
    url: PostUrl,
    /// Marked sensitive, so that no debug output shows them.
    headers: HeaderMap,
    max_reply_bytes: usize,
}

/// The client's own secrets: each header value (the literal ones too, which the process's
/// registry does not hold), kept out of every reason the client gives; with the process's
/// registered secrets ([`hierarag_fs::secrets`]).
fn redact(secrets: &Secrets, text: &str) -> String {
    hierarag_fs::secrets::scrub_excerpt(&secrets.scrub_excerpt(text))
}

/// `reply` with the client's and the process's secrets scrubbed from its strings (a service
/// that echoes a header back), before anything reads or stores it; and its JSON text.
fn scrubbed(secrets: &Secrets, reply: Value) -> (Value, String) {
    let text = reply.to_string();
    let clean = hierarag_fs::secrets::scrub(&secrets.scrub(&text)).into_owned();
    if clean == text {
        return (reply, text);
    }
    // `[redacted]` holds nothing JSON escapes, so the text is still the same JSON.
    let reply = serde_json::from_str(&clean).expect("a scrubbed JSON text is JSON");
    (reply, clean)
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
    secrets: Secrets,
}

impl JsonClient {
    /// A client that POSTs to `url` with `headers` (values as sent; they never reach the cache,
    /// the usage or an error message: an error that quotes the service, even one that echoes
    /// a header back, shows `[redacted]` in its place). `name` names the service in the usage
    /// and in errors. A reply longer than `max_reply_bytes` fails its request, unread past the
    /// limit and neither retried nor cached. A redirect is followed only within the origin of
    /// `url`; one to another origin fails its request, naming that origin, so that the headers
    /// and the body go nowhere else. Opens the cache if `settings` names one.
    pub fn new(
        name: &str,
        url: &str,
        headers: &[(String, String)],
        settings: &ClientSettings,
        max_reply_bytes: usize,
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
        if max_reply_bytes == 0 {
            return Err(config_error(
                "max_reply_bytes".into(),
                "must be at least 1".into(),
            ));
        }
        let http = http_client().map_err(|message| config_error("url".into(), message))?;
        let endpoint = JsonEndpoint {
            http,
            url: PostUrl::new(url.to_string()),
            headers: header_map,
            max_reply_bytes,
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
                secrets: Secrets::of(headers.iter().map(|(_, value)| value.as_str())),
            }),
        })
    }

    pub fn url(&self) -> &str {
        &self.inner.url
    }

    /// POSTs `body` (or finds its reply in the cache) and reads the reply with `read`. A reply
    /// that `read` refuses is [`LlmError::Reply`] with `read`'s reason; it is not retried and
    /// not cached, so that a rerun asks again. A reply is in the cache when this returns. No
    /// reason this returns or counts in the usage holds a header value.
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
            let reason = redact(&inner.secrets, &reason);
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
        // A cache that could not store a reply (a full disk): nothing more is sent.
        if let Some(broken) = inner.cache.as_ref().and_then(ResponseCache::broken) {
            usage.failure(&broken.to_string());
            return Err(broken);
        }
        let (reply, stats) = inner
            .dispatcher
            .call(
                |endpoint| endpoint.url.to_string(),
                |endpoint| {
                    let secrets = &inner.secrets;
                    Box::pin(async move {
                        post_json_limited::<Value>(
                            &endpoint.http,
                            &endpoint.url,
                            endpoint.headers.clone(),
                            body,
                            endpoint.max_reply_bytes,
                        )
                        .await
                        .map_err(|error| error.map_reason(|reason| redact(secrets, reason)))
                    })
                },
            )
            .await?;
        let latency_ms = stats.elapsed.as_secs_f64() * 1000.0;
        let (reply, text) = scrubbed(&inner.secrets, reply);
        let value = read(&reply).map_err(rejected)?;
        if let (Some(cache), Some(key)) = (&inner.cache, &key) {
            cache.put_reply(key, &inner.url, &text, latency_ms).await?;
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
        self.inner
            .dispatcher
            .refusal()
            .or_else(|| self.inner.cache.as_ref()?.broken())
    }
}
