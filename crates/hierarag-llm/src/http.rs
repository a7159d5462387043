//! One JSON POST and what its failure means: which statuses and errors are worth retrying, the
//! server's own error message, `Retry-After`.

use std::error::Error as _;
use std::sync::Once;
use std::time::{Duration, SystemTime};

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, LOCATION, RETRY_AFTER};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::retry::parse_retry_after;
use crate::types::CallError;

/// A server's error body is quoted up to this many characters.
const MAX_QUOTED_BODY: usize = 500;

/// The HTTP client of every request to a model server or a user's service: rustls with the
/// ring provider and the system's roots. The request timeout is the LLM client's, not
/// reqwest's, so that every backend times out alike. A redirect is followed only within the
/// origin (scheme, host and port) of the request's URL, ten at most, so that API keys,
/// configured headers and bodies never reach another origin (reqwest's own policy drops only
/// `Authorization`); a redirect elsewhere comes back as the 3xx reply itself, which fails the
/// call ([`post_json_limited`] names the origin it leads to).
pub(crate) fn http_client() -> Result<reqwest::Client, String> {
    let same_origin = reqwest::redirect::Policy::custom(|attempt| {
        let first = attempt.previous().first().map(reqwest::Url::origin);
        if first != Some(attempt.url().origin()) {
            attempt.stop()
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    });
    client_builder()
        .redirect(same_origin)
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {}", error_chain(&e)))
}

/// Redirects the client follows within an origin, as reqwest's default policy.
const MAX_REDIRECTS: usize = 10;

/// An error body is read up to this many bytes (only its message is quoted).
const MAX_ERROR_BODY: usize = 64 * 1024;

fn client_builder() -> reqwest::ClientBuilder {
    static PROVIDER: Once = Once::new();
    PROVIDER.call_once(|| {
        // Fails only when another provider is already installed, which serves as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    reqwest::Client::builder().connect_timeout(Duration::from_secs(30))
}

/// Where a backend POSTs, parsed once: reqwest parses a URL given as a string on every
/// request (host name normalisation included), which costs microseconds each time.
#[derive(Debug, Clone)]
pub(crate) struct PostUrl {
    text: String,
    /// `None` when the text does not parse; reqwest then reports why on each request.
    parsed: Option<reqwest::Url>,
}

impl PostUrl {
    pub(crate) fn new(text: String) -> PostUrl {
        PostUrl {
            parsed: reqwest::Url::parse(&text).ok(),
            text,
        }
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }
}

impl std::fmt::Display for PostUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// POSTs `body` as JSON and parses a JSON reply. 408, 429, 5xx, connection errors, a body
/// cut short and a body that is not the JSON expected are [`CallError::Retryable`]; 401, 403
/// and 404 are [`CallError::Refused`] (the endpoint refuses this client, whatever the
/// request); any other non-2xx status is [`CallError::Fatal`]; each with the server's message.
pub(crate) async fn post_json<T: DeserializeOwned>(
    client: &reqwest::Client,
    url: &PostUrl,
    headers: HeaderMap,
    body: &impl Serialize,
) -> Result<T, CallError> {
    post_json_limited(client, url, headers, body, usize::MAX).await
}

/// [`post_json`] that reads at most `max_reply_bytes` of a reply: a longer one (by its
/// `Content-Length`, or counted as it streams in, so that a body that never ends stops there)
/// is [`CallError::Fatal`] naming the limit, its rest never read. A redirect that came back
/// unfollowed (see [`http_client`]) is [`CallError::Fatal`] naming the origin it leads to.
pub(crate) async fn post_json_limited<T: DeserializeOwned>(
    client: &reqwest::Client,
    url: &PostUrl,
    headers: HeaderMap,
    body: &impl Serialize,
    max_reply_bytes: usize,
) -> Result<T, CallError> {
    let request = match &url.parsed {
        Some(parsed) => client.post(parsed.clone()),
        None => client.post(url.as_str()),
    };
    let bytes = exchange(
        request.headers(headers).json(body),
        "POST",
        url,
        max_reply_bytes,
    )
    .await?;
    read_json(&bytes, "POST", url)
}

/// [`post_json`] of a body already serialised (`body` is JSON text).
pub(crate) async fn post_json_text<T: DeserializeOwned>(
    client: &reqwest::Client,
    url: &PostUrl,
    headers: HeaderMap,
    body: String,
) -> Result<T, CallError> {
    let request = match &url.parsed {
        Some(parsed) => client.post(parsed.clone()),
        None => client.post(url.as_str()),
    };
    let request = request
        .headers(headers)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body);
    let bytes = exchange(request, "POST", url, usize::MAX).await?;
    read_json(&bytes, "POST", url)
}

/// `GET url` and its JSON reply, as [`post_json`] reads it.
pub(crate) async fn get_json<T: DeserializeOwned>(
    client: &reqwest::Client,
    url: &PostUrl,
    headers: HeaderMap,
) -> Result<T, CallError> {
    let bytes = get_bytes(client, url, headers).await?;
    read_json(&bytes, "GET", url)
}

/// `GET url` and its whole body (a file's content).
pub(crate) async fn get_bytes(
    client: &reqwest::Client,
    url: &PostUrl,
    headers: HeaderMap,
) -> Result<Vec<u8>, CallError> {
    let request = match &url.parsed {
        Some(parsed) => client.get(parsed.clone()),
        None => client.get(url.as_str()),
    };
    exchange(request.headers(headers), "GET", url, usize::MAX).await
}

/// `POST url` of a multipart form (a file upload) and its JSON reply, as [`post_json`] reads it.
pub(crate) async fn post_form<T: DeserializeOwned>(
    client: &reqwest::Client,
    url: &PostUrl,
    headers: HeaderMap,
    form: reqwest::multipart::Form,
) -> Result<T, CallError> {
    let request = match &url.parsed {
        Some(parsed) => client.post(parsed.clone()),
        None => client.post(url.as_str()),
    };
    let bytes = exchange(
        request.headers(headers).multipart(form),
        "POST",
        url,
        usize::MAX,
    )
    .await?;
    read_json(&bytes, "POST", url)
}

fn read_json<T: DeserializeOwned>(
    bytes: &[u8],
    method: &str,
    url: &PostUrl,
) -> Result<T, CallError> {
    serde_json::from_slice(bytes).map_err(|e| {
        retryable(format!(
            "{method} {url}: invalid JSON in the reply ({e}): {}",
            quote(&String::from_utf8_lossy(bytes))
        ))
    })
}

/// Sends `request` and reads its reply's body, at most `max_reply_bytes` of it: the statuses,
/// redirects and limits every call shares (see [`post_json_limited`]).
async fn exchange(
    request: reqwest::RequestBuilder,
    method: &str,
    url: &PostUrl,
    max_reply_bytes: usize,
) -> Result<Vec<u8>, CallError> {
    let mut response = request
        .send()
        .await
        .map_err(|e| retryable(format!("{method} {url}: {}", error_chain(&e))))?;
    let status = response.status();
    if status.is_redirection()
        && let Some(target) = other_origin(&response)
    {
        return Err(CallError::Fatal {
            reason: format!(
                "HTTP {status} to another origin, {target}: not followed (headers and body go \
only to the origin of the URL given; give the new URL if the service moved)"
            ),
        });
    }
    let retry_after = response
        .headers()
        .get(RETRY_AFTER)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| parse_retry_after(value, SystemTime::now()));
    if status.is_success()
        && let Some(declared) = response.content_length()
        && declared > max_reply_bytes as u64
    {
        return Err(CallError::Fatal {
            reason: format!(
                "the reply declares {declared} bytes, over the limit of {max_reply_bytes} bytes \
(max_reply_bytes); it is not read"
            ),
        });
    }
    let limit = if status.is_success() {
        max_reply_bytes
    } else {
        max_reply_bytes.min(MAX_ERROR_BODY)
    };
    let (bytes, whole) = read_at_most(&mut response, limit).await.map_err(|e| {
        retryable(format!(
            "{method} {url}: HTTP {status}, body cut short: {}",
            error_chain(&e)
        ))
    })?;
    if !status.is_success() {
        let reason = format!("HTTP {status}: {}", server_message(&bytes));
        return Err(if is_retryable(status) {
            CallError::Retryable {
                reason,
                retry_after,
            }
        } else if refuses_the_client(status) {
            CallError::Refused { reason }
        } else {
            CallError::Fatal { reason }
        });
    }
    if !whole {
        return Err(CallError::Fatal {
            reason: format!(
                "the reply is longer than the limit of {max_reply_bytes} bytes (max_reply_bytes); \
the rest is not read"
            ),
        });
    }
    Ok(bytes)
}

/// The origin a redirect's `Location` leads to, when it is not the origin of the request (only
/// the origin: a path or query may hold a token).
fn other_origin(response: &reqwest::Response) -> Option<String> {
    let location = response.headers().get(LOCATION)?;
    let here = response.url().origin();
    match location
        .to_str()
        .ok()
        .and_then(|location| response.url().join(location).ok())
    {
        Some(target) if target.origin() == here => None,
        Some(target) => Some(target.origin().ascii_serialization()),
        None => Some("a Location that is not a URL".into()),
    }
}

/// The body of `response` up to `limit` bytes, and whether that is all of it (the rest, if
/// any, is never read).
async fn read_at_most(
    response: &mut reqwest::Response,
    limit: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    // A declared length is only a hint: a server may lie, so at most 1 MiB is set aside ahead.
    let expected = response
        .content_length()
        .unwrap_or(0)
        .min(limit as u64)
        .min(1 << 20) as usize;
    let mut body = Vec::with_capacity(expected);
    while let Some(chunk) = response.chunk().await? {
        let room = limit - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, false));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, true))
}

fn retryable(reason: String) -> CallError {
    CallError::Retryable {
        reason,
        retry_after: None,
    }
}

/// Too many requests, a request timeout, and server errors can pass; other 4xx will not.
fn is_retryable(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS
        || status == StatusCode::REQUEST_TIMEOUT
        || status.is_server_error()
}

/// Authentication, permission, and a model or path the server does not have: no request of
/// this client can succeed.
fn refuses_the_client(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN | StatusCode::NOT_FOUND
    )
}

/// The message in an error body: `error.message` (OpenAI, Anthropic, llama.cpp), `error` or
/// `message` when they are strings, else the body itself, shortened.
pub(crate) fn server_message(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    if let Ok(json) = serde_json::from_slice::<serde_json::Value>(body) {
        let candidates = [
            json.pointer("/error/message"),
            json.get("error"),
            json.get("message"),
            json.get("detail"),
        ];
        if let Some(message) = candidates.into_iter().flatten().find_map(|v| v.as_str()) {
            return quote(message);
        }
    }
    if text.trim().is_empty() {
        "(empty body)".to_string()
    } else {
        quote(text.trim())
    }
}

fn quote(text: &str) -> String {
    if text.chars().count() <= MAX_QUOTED_BODY {
        text.to_string()
    } else {
        let head: String = text.chars().take(MAX_QUOTED_BODY).collect();
        format!("{head}…")
    }
}

/// An error and its causes on one line; reqwest's own message alone is too terse to act on.
fn error_chain(error: &reqwest::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    if error.is_timeout() {
        message.push_str(" (timed out)");
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_message_finds_the_message_of_each_error_shape() {
        let cases: [(&[u8], &str); 6] = [
            (
                br#"{"error":{"message":"bad model","type":"invalid_request_error"}}"#,
                "bad model",
            ),
            (
                br#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: required"}}"#,
                "max_tokens: required",
            ),
            (br#"{"error":"plain"}"#, "plain"),
            (br#"{"message":"top-level"}"#, "top-level"),
            (b"  upstream exploded \n", "upstream exploded"),
            (b"", "(empty body)"),
        ];
        for (body, expected) in cases {
            assert_eq!(server_message(body), expected);
        }
    }

    #[test]
    fn long_bodies_are_shortened() {
        let body = "x".repeat(2000);
        let message = server_message(body.as_bytes());
        assert_eq!(message.chars().count(), MAX_QUOTED_BODY + 1);
        assert!(message.ends_with('…'));
    }

    #[test]
    fn only_rate_limits_timeouts_and_server_errors_are_retried() {
        for code in [408, 429, 500, 502, 503, 529] {
            assert!(is_retryable(StatusCode::from_u16(code).unwrap()), "{code}");
        }
        for code in [400, 401, 403, 404, 413, 422] {
            assert!(!is_retryable(StatusCode::from_u16(code).unwrap()), "{code}");
        }
    }
}
