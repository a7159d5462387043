//! Anthropic's Messages API: `POST {base_url}/v1/messages`, one endpoint per backend value.

use std::fmt;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::http::{PostUrl, post_json};
use crate::openai::decimal;
use crate::types::{BoxFuture, CallError, ChatBackend, ChatRequest, Completion, Role, Usage};

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

    /// The JSON body of a request: system messages joined into the top-level `system`, the
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
            body["system"] = json!(system.join("\n\n"));
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
            Ok(Completion {
                text,
                finish_reason: response.stop_reason,
                usage: Usage {
                    // The whole prompt, as OpenAI counts it: written to the cache, read
                    // from it, and neither.
                    prompt_tokens: usage.input_tokens
                        + usage.cache_read_input_tokens
                        + usage.cache_creation_input_tokens,
                    completion_tokens: usage.output_tokens,
                    cached_prompt_tokens: usage.cache_read_input_tokens,
                    latency_ms: 0.0,
                },
            })
        })
    }
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
                "system": "be brief\n\nanswer in French",
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
