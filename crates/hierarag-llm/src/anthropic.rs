//! Anthropic's Messages API: `POST {base_url}/v1/messages`, one endpoint per backend value.

use std::fmt;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::http::{PostUrl, get_bytes, get_json, post_json, post_json_text, server_message};
use crate::openai::decimal;
use crate::types::{
    BatchBackend, BatchResult, BatchStatus, BoxFuture, CallError, ChatBackend, ChatRequest,
    Completion, Role, Usage,
};

/// The API version this backend speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Chat on one Anthropic Messages endpoint.
pub struct AnthropicChat {
    client: reqwest::Client,
    base_url: String,
    url: PostUrl,
    model: String,
    api_key: Option<String>,
}

impl AnthropicChat {
    /// `base_url` ends before `/v1/messages`, e.g. `https://api.anthropic.com`.
    pub fn new(
        client: reqwest::Client,
        base_url: &str,
        model: &str,
        api_key: Option<String>,
    ) -> AnthropicChat {
        let base_url = base_url.trim_end_matches('/').to_string();
        AnthropicChat {
            client,
            url: PostUrl::new(format!("{base_url}/v1/messages")),
            base_url,
            model: model.to_string(),
            api_key,
        }
    }

    /// The JSON body of a request: system messages joined into the top-level `system` (one
    /// text block, marked as a prompt-cache breakpoint), the
    /// others as `messages`. The API has no seed and no schema-constrained output, so a
    /// request's seed and JSON schema are not sent (the caller parses tolerantly).
    pub fn request_body(&self, request: &ChatRequest) -> Value {
        let system: Vec<&str> = request
            .messages
            .iter()
            .filter(|m| m.role == Role::System)
            .map(|m| m.content.as_str())
            .collect();
        let messages: Vec<Value> = request
            .messages
            .iter()
            .filter(|m| m.role != Role::System)
            .map(|m| json!({"role": m.role, "content": m.content}))
            .collect();
        let mut body = json!({
            "model": self.model,
            "max_tokens": request.max_tokens,
            "messages": messages,
            "temperature": decimal(request.temperature),
        });
        if !system.is_empty() {
            // The instructions every item of a role shares come first; a cache breakpoint
            // after them lets the provider read them from its prompt cache (it caches prefixes
            // of 1,024 tokens or more, 2,048 for Haiku models; shorter ones are sent as usual).
            body["system"] = json!([{
                "type": "text",
                "text": system.join("\n\n"),
                "cache_control": {"type": "ephemeral"},
            }]);
        }
        if let Some(top_p) = request.top_p {
            body["top_p"] = decimal(top_p);
        }
        if !request.stop.is_empty() {
            body["stop_sequences"] = json!(request.stop);
        }
        body
    }

    fn headers(&self) -> Result<HeaderMap, CallError> {
        let mut headers = HeaderMap::new();
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
        if let Some(key) = &self.api_key {
            let mut value = HeaderValue::from_str(key).map_err(|_| CallError::Fatal {
                reason: "the API key contains characters not allowed in an HTTP header".into(),
            })?;
            value.set_sensitive(true);
            headers.insert(HeaderName::from_static("x-api-key"), value);
        }
        Ok(headers)
    }
}

#[derive(Deserialize)]
struct MessagesResponse {
    content: Vec<ContentBlock>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<TokenUsage>,
}

#[derive(Deserialize)]
struct ContentBlock {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
}

#[derive(Deserialize)]
struct TokenUsage {
    /// The input after the last cache breakpoint (neither read from nor written to the cache).
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_read_input_tokens: u64,
    #[serde(default)]
    cache_creation_input_tokens: u64,
}

impl ChatBackend for AnthropicChat {
    fn sends_json_schema(&self) -> bool {
        false
    }

    fn backend(&self) -> &str {
        "anthropic"
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn endpoint(&self) -> &str {
        &self.base_url
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<Completion, CallError>> {
        Box::pin(async move {
            let body = self.request_body(request);
            let response: MessagesResponse =
                post_json(&self.client, &self.url, self.headers()?, &body).await?;
            Ok(completion(response))
        })
    }
}

/// The completion of a message (a call's reply, or a batch result's).
fn completion(response: MessagesResponse) -> Completion {
    let text: String = response
        .content
        .into_iter()
        .filter(|block| block.kind == "text")
        .filter_map(|block| block.text)
        .collect();
    let usage = response.usage.unwrap_or(TokenUsage {
        input_tokens: 0,
        output_tokens: 0,
        cache_read_input_tokens: 0,
        cache_creation_input_tokens: 0,
    });
    Completion {
        text,
        finish_reason: response.stop_reason,
        usage: Usage {
            // The whole prompt, as OpenAI counts it: written to the cache, read from it, and
            // neither.
            prompt_tokens: usage.input_tokens
                + usage.cache_read_input_tokens
                + usage.cache_creation_input_tokens,
            completion_tokens: usage.output_tokens,
            cached_prompt_tokens: usage.cache_read_input_tokens,
            cache_write_prompt_tokens: usage.cache_creation_input_tokens,
            latency_ms: 0.0,
        },
    }
}

/// Anthropic's Message Batches on the same host: `POST /v1/messages/batches` with every
/// request's `custom_id` and `params`, `GET /v1/messages/batches/{id}` until its
/// `processing_status` is `ended`, then `GET /v1/messages/batches/{id}/results` (on this host:
/// the key goes nowhere else, whatever `results_url` says).
impl BatchBackend for AnthropicChat {
    fn endpoint(&self) -> &str {
        &self.base_url
    }

    /// 100,000 requests and 256 MB per batch.
    fn limits(&self) -> (usize, usize) {
        (100_000, 256_000_000)
    }

    fn entry(&self, custom_id: &str, request: &ChatRequest) -> Value {
        json!({"custom_id": custom_id, "params": self.request_body(request)})
    }

    /// Message Batches keep no metadata: `submission` is not sent, and a batch whose create
    /// was cut off cannot be found again ([`BatchBackend::find`]).
    fn submit<'a>(
        &'a self,
        entries: &'a [String],
        _submission: &'a str,
    ) -> BoxFuture<'a, Result<String, CallError>> {
        Box::pin(async move {
            let url = PostUrl::new(format!("{}/v1/messages/batches", self.base_url));
            let body = format!("{{\"requests\":[{}]}}", entries.join(","));
            let batch: MessageBatch =
                post_json_text(&self.client, &url, self.headers()?, body).await?;
            Ok(batch.id)
        })
    }

    fn find<'a>(
        &'a self,
        _submission: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, CallError>> {
        Box::pin(async { Ok(None) })
    }

    fn status<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<BatchStatus, CallError>> {
        Box::pin(async move {
            let url = PostUrl::new(format!("{}/v1/messages/batches/{id}", self.base_url));
            let batch: MessageBatch = get_json(&self.client, &url, self.headers()?).await?;
            Ok(BatchStatus {
                ended: batch.processing_status == "ended",
                id: batch.id,
                state: batch.processing_status,
                error: None,
                files: Vec::new(),
            })
        })
    }

    fn results<'a>(
        &'a self,
        status: &'a BatchStatus,
    ) -> BoxFuture<'a, Result<Vec<BatchResult>, CallError>> {
        Box::pin(async move {
            let url = PostUrl::new(format!(
                "{}/v1/messages/batches/{}/results",
                self.base_url, status.id
            ));
            let bytes = get_bytes(&self.client, &url, self.headers()?).await?;
            read_batch_results(&bytes).map_err(|reason| CallError::Retryable {
                reason: format!("GET {url}: {reason}"),
                retry_after: None,
            })
        })
    }
}

/// The results of a message batch: one JSON object a line, `custom_id` and `result` of type
/// `succeeded` (with the `message`), `errored` (with the `error`), `canceled` or `expired`.
fn read_batch_results(bytes: &[u8]) -> Result<Vec<BatchResult>, String> {
    Ok(crate::batch::read_result_lines(
        bytes,
        |line: ResultLine| {
            let outcome = match line.result.kind.as_str() {
                "succeeded" => line
                    .result
                    .message
                    .ok_or_else(|| "a succeeded result without its message".to_string())
                    .and_then(|message| {
                        serde_json::from_value::<MessagesResponse>(message)
                            .map_err(|e| format!("the result is not a message: {e}"))
                    })
                    .map(completion),
                "errored" => Err(format!(
                    "errored: {}",
                    server_message(line.result.error.unwrap_or_default().to_string().as_bytes())
                )),
                other => Err(format!("the batch ended without running it ({other})")),
            };
            BatchResult {
                custom_id: line.custom_id,
                outcome,
            }
        },
    ))
}

#[derive(Deserialize)]
struct MessageBatch {
    id: String,
    processing_status: String,
}

#[derive(Deserialize)]
struct ResultLine {
    custom_id: String,
    result: BatchResultBody,
}

#[derive(Deserialize)]
struct BatchResultBody {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    message: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

impl fmt::Debug for AnthropicChat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicChat")
            .field("url", &self.url.as_str())
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Message;

    #[test]
    fn system_messages_go_to_the_top_level_system_field() {
        let backend = AnthropicChat::new(
            crate::http::http_client().unwrap(),
            "http://x/",
            "claude",
            None,
        );
        let mut request = ChatRequest::new(vec![
            Message::system("be brief"),
            Message::user("hi"),
            Message::system("answer in French"),
            Message::assistant("bonjour"),
            Message::user("again"),
        ]);
        request.seed = Some(3);
        request.stop = vec!["END".into()];
        let body = backend.request_body(&request);
        assert_eq!(
            body,
            json!({
                "model": "claude",
                "max_tokens": 512,
                "system": [{"type": "text", "text": "be brief\n\nanswer in French",
                            "cache_control": {"type": "ephemeral"}}],
                "messages": [
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": "bonjour"},
                    {"role": "user", "content": "again"},
                ],
                "temperature": 0.0,
                "stop_sequences": ["END"],
            })
        );
        assert_eq!(backend.url.as_str(), "http://x/v1/messages");
    }
}
