//! One JSON POST and what its failure means: which statuses and errors are worth retrying, the
//! server's own error message, `Retry-After`.

use std::error::Error as _;
use std::sync::Once;
use std::time::{Duration, SystemTime};

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, RETRY_AFTER};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::retry::parse_retry_after;
use crate::types::CallError;

/// A server's error body is quoted up to this many characters.
const MAX_QUOTED_BODY: usize = 500;

/// An HTTP client for LLM servers: rustls with the ring provider and the system's roots. The
/// request timeout is the LLM client's, not reqwest's, so that every backend times out alike.
pub(crate) fn http_client() -> Result<reqwest::Client, String> {
    static PROVIDER: Once = Once::new();
    PROVIDER.call_once(|| {
        // Fails only when another provider is already installed, which serves as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {}", error_chain(&e)))
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
    let request = match &url.parsed {
        Some(parsed) => client.post(parsed.clone()),
        None => client.post(url.as_str()),
    };
    let response = request
        .headers(headers)
        .json(body)
        .send()
        .await
        .map_err(|e| retryable(format!("POST {url}: {}", error_chain(&e))))?;
    let status = response.status();
    let retry_after = response
        .headers()
        .get(RETRY_AFTER)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| parse_retry_after(value, SystemTime::now()));
    let bytes = response.bytes().await.map_err(|e| {
        retryable(format!(
            "POST {url}: HTTP {status}, body cut short: {}",
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
    serde_json::from_slice(&bytes).map_err(|e| {
        retryable(format!(
            "POST {url}: invalid JSON in the reply ({e}): {}",
            quote(&String::from_utf8_lossy(&bytes))
        ))
    })
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
