//! OpenAI-compatible servers (OpenAI, vLLM, llama.cpp, …): `POST {base_url}/chat/completions`
//! and `POST {base_url}/embeddings`, one endpoint per backend value.

use std::fmt;

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::http::{PostUrl, get_bytes, get_json, post_form, post_json, server_message};
use crate::types::{
    BatchBackend, BatchResult, BatchStatus, BoxFuture, CallError, ChatBackend, ChatRequest,
    Completion, EmbedBackend, Message, Usage,
};

/// Chat completions on one OpenAI-compatible endpoint.
pub struct OpenAiChat {
    client: reqwest::Client,
    base_url: String,
    url: PostUrl,
    model: String,
    api_key: Option<String>,
    structured_output: bool,
}

impl OpenAiChat {
    /// `base_url` ends before `/chat/completions`, e.g. `http://127.0.0.1:8080/v1`. With
    /// `structured_output`, a request's JSON schema is sent as `response_format`; without it,
    /// the request goes plain (for servers that reject `response_format`).
    pub fn new(
        client: reqwest::Client,
        base_url: &str,
        model: &str,
        api_key: Option<String>,
        structured_output: bool,
    ) -> OpenAiChat {
        let base_url = base_url.trim_end_matches('/').to_string();
        OpenAiChat {
            client,
            url: PostUrl::new(format!("{base_url}/chat/completions")),
            base_url,
            model: model.to_string(),
            api_key,
            structured_output,
        }
    }

    /// The JSON body of a request (public for tests and for logging what is sent).
    pub fn request_body(&self, request: &ChatRequest) -> Value {
        serde_json::to_value(self.body(request)).expect("a request body serialises")
    }

    /// The body as sent: borrowed from the request, serialised once by the HTTP client.
    fn body<'a>(&'a self, request: &'a ChatRequest) -> ChatBody<'a> {
        ChatBody {
            model: &self.model,
            messages: &request.messages,
            temperature: decimal(request.temperature),
            max_tokens: request.max_tokens,
            top_p: request.top_p.map(decimal),
            seed: request.seed,
            stop: &request.stop,
            response_format: request
                .json_schema
                .as_ref()
                .filter(|_| self.structured_output)
                .map(|schema| ResponseFormat {
                    kind: "json_schema",
                    json_schema: SchemaFormat {
                        name: &schema.name,
                        schema: &schema.schema,
                        strict: true,
                    },
                }),
        }
    }
}

/// `POST /chat/completions`: unset options are left out.
#[derive(Serialize)]
struct ChatBody<'a> {
    model: &'a str,
    messages: &'a [Message],
    temperature: Value,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<u64>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat<'a>>,
}

#[derive(Serialize)]
struct ResponseFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    json_schema: SchemaFormat<'a>,
}

#[derive(Serialize)]
struct SchemaFormat<'a> {
    name: &'a str,
    schema: &'a Value,
    strict: bool,
}

/// Only the fields used; unknown ones are ignored.
#[derive(Deserialize)]
struct ChatResponse {
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<TokenUsage>,
}

#[derive(Deserialize)]
struct Choice {
    message: ReplyMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ReplyMessage {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize)]
struct TokenUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptTokensDetails>,
}

/// The part of the prompt the server read from its prompt cache.
#[derive(Deserialize)]
struct PromptTokensDetails {
    #[serde(default)]
    cached_tokens: u64,
}

impl ChatBackend for OpenAiChat {
    fn sends_json_schema(&self) -> bool {
        self.structured_output
    }

    fn backend(&self) -> &str {
        "openai"
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
            let body = self.body(request);
            let response: ChatResponse =
                post_json(&self.client, &self.url, bearer(&self.api_key)?, &body).await?;
            completion(response).map_err(|problem| CallError::Retryable {
                reason: format!("POST {}: {problem}", self.url),
                retry_after: None,
            })
        })
    }
}

/// The completion of a reply (a call's, or a batch result's body).
fn completion(response: ChatResponse) -> Result<Completion, String> {
    let Some(choice) = response.choices.into_iter().next() else {
        return Err("the reply has no choices".into());
    };
    let usage = response.usage.unwrap_or(TokenUsage {
        prompt_tokens: 0,
        completion_tokens: 0,
        prompt_tokens_details: None,
    });
    Ok(Completion {
        text: choice.message.content.unwrap_or_default(),
        finish_reason: choice.finish_reason,
        usage: Usage {
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            cached_prompt_tokens: usage.prompt_tokens_details.map_or(0, |d| d.cached_tokens),
            cache_write_prompt_tokens: 0,
            latency_ms: 0.0,
        },
    })
}

/// The path every line of a chat batch names (OpenAI's batch API, vLLM's `run_batch`).
pub const BATCH_CHAT_URL: &str = "/v1/chat/completions";

/// OpenAI's batch API on the same endpoint: the requests uploaded as a JSONL file
/// (`POST /files`, purpose `batch`), a batch made of it (`POST /batches`, a 24 h window),
/// polled (`GET /batches/{id}`), and its output and error files read (`GET
/// /files/{id}/content`).
impl BatchBackend for OpenAiChat {
    fn endpoint(&self) -> &str {
        &self.base_url
    }

    /// 50,000 requests and 200 MB per file.
    fn limits(&self) -> (usize, usize) {
        (50_000, 200_000_000)
    }

    fn entry(&self, custom_id: &str, request: &ChatRequest) -> Value {
        batch_line(custom_id, self.request_body(request))
    }

    fn submit<'a>(
        &'a self,
        entries: &'a [String],
        submission: &'a str,
    ) -> BoxFuture<'a, Result<String, CallError>> {
        Box::pin(async move {
            let mut jsonl = entries.join("\n");
            jsonl.push('\n');
            let file = reqwest::multipart::Part::bytes(jsonl.into_bytes())
                .file_name("hierarag-batch.jsonl")
                .mime_str("application/jsonl")
                .map_err(|e| CallError::Fatal {
                    reason: e.to_string(),
                })?;
            let form = reqwest::multipart::Form::new()
                .text("purpose", "batch")
                .part("file", file);
            let url = PostUrl::new(format!("{}/files", self.base_url));
            let uploaded: FileObject =
                post_form(&self.client, &url, bearer(&self.api_key)?, form).await?;
            let url = PostUrl::new(format!("{}/batches", self.base_url));
            let body = json!({
                "input_file_id": uploaded.id,
                "endpoint": BATCH_CHAT_URL,
                "completion_window": "24h",
                "metadata": { SUBMISSION_KEY: submission },
            });
            let batch: BatchObject =
                post_json(&self.client, &url, bearer(&self.api_key)?, &body).await?;
            Ok(batch.id)
        })
    }

    fn find<'a>(&'a self, submission: &'a str) -> BoxFuture<'a, Result<Option<String>, CallError>> {
        Box::pin(async move {
            // Newest first: a batch made moments ago is on the first page.
            let mut after: Option<String> = None;
            for _ in 0..FIND_PAGES {
                let mut url = format!("{}/batches?limit=100", self.base_url);
                if let Some(after) = &after {
                    url.push_str(&format!("&after={after}"));
                }
                let page: BatchList =
                    get_json(&self.client, &PostUrl::new(url), bearer(&self.api_key)?).await?;
                if let Some(found) = page.data.iter().find(|b| {
                    b.metadata
                        .as_ref()
                        .and_then(|m| m.get(SUBMISSION_KEY))
                        .and_then(Value::as_str)
                        == Some(submission)
                }) {
                    return Ok(Some(found.id.clone()));
                }
                match page.data.last() {
                    Some(last) if page.has_more => after = Some(last.id.clone()),
                    _ => break,
                }
            }
            Ok(None)
        })
    }

    fn status<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<BatchStatus, CallError>> {
        Box::pin(async move {
            let url = PostUrl::new(format!("{}/batches/{id}", self.base_url));
            let batch: BatchObject = get_json(&self.client, &url, bearer(&self.api_key)?).await?;
            let ended = matches!(
                batch.status.as_str(),
                "completed" | "failed" | "expired" | "cancelled"
            );
            let error = (batch.status == "failed").then(|| {
                let messages: Vec<String> = batch
                    .errors
                    .map(|errors| errors.data.into_iter().map(|e| e.message).collect())
                    .unwrap_or_default();
                if messages.is_empty() {
                    "the batch failed".to_string()
                } else {
                    messages.join("; ")
                }
            });
            Ok(BatchStatus {
                id: batch.id,
                state: batch.status,
                ended,
                error,
                files: [batch.output_file_id, batch.error_file_id]
                    .into_iter()
                    .flatten()
                    .collect(),
            })
        })
    }

    fn results<'a>(
        &'a self,
        status: &'a BatchStatus,
    ) -> BoxFuture<'a, Result<Vec<BatchResult>, CallError>> {
        Box::pin(async move {
            let mut results = Vec::new();
            for file in &status.files {
                let url = PostUrl::new(format!("{}/files/{file}/content", self.base_url));
                let bytes = get_bytes(&self.client, &url, bearer(&self.api_key)?).await?;
                results.extend(read_batch_output(&bytes).map_err(|reason| {
                    CallError::Retryable {
                        reason: format!("GET {url}: {reason}"),
                        retry_after: None,
                    }
                })?);
            }
            Ok(results)
        })
    }
}

/// A line of an OpenAI-format batch input file: `custom_id`, `method`, `url`, `body`.
pub fn batch_line(custom_id: &str, body: Value) -> Value {
    json!({"custom_id": custom_id, "method": "POST", "url": BATCH_CHAT_URL, "body": body})
}

/// The results in an OpenAI-format batch output (or error) file: one JSON object a line, with
/// `custom_id` and either `response` {`status_code`, `body`} or `error` {`code`, `message`}.
/// A line that is not such an object is an error naming its line number.
pub fn read_batch_output(bytes: &[u8]) -> Result<Vec<BatchResult>, String> {
    Ok(crate::batch::read_result_lines(
        bytes,
        |line: OutputLine| {
            let outcome = match (line.response, line.error) {
                (_, Some(error)) => Err(format!(
                    "{}{}",
                    error.code.map(|c| format!("{c}: ")).unwrap_or_default(),
                    error.message.unwrap_or_default()
                )),
                (Some(response), None) if (200..300).contains(&response.status_code) => {
                    serde_json::from_value::<ChatResponse>(response.body)
                        .map_err(|e| format!("the reply is not a chat completion: {e}"))
                        .and_then(completion)
                }
                (Some(response), None) => Err(format!(
                    "HTTP {}: {}",
                    response.status_code,
                    server_message(response.body.to_string().as_bytes())
                )),
                (None, None) => Err("neither a response nor an error".to_string()),
            };
            BatchResult {
                custom_id: line.custom_id,
                outcome,
            }
        },
    ))
}

#[derive(Deserialize)]
struct OutputLine {
    custom_id: String,
    #[serde(default)]
    response: Option<OutputResponse>,
    #[serde(default)]
    error: Option<OutputError>,
}

#[derive(Deserialize)]
struct OutputResponse {
    status_code: u16,
    #[serde(default)]
    body: Value,
}

#[derive(Deserialize)]
struct OutputError {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize)]
struct FileObject {
    id: String,
}

/// Only the fields used.
/// The metadata key that marks a batch with its submission's id.
const SUBMISSION_KEY: &str = "hierarag_submission";
/// Pages of 100 batches looked through for a submission.
const FIND_PAGES: usize = 5;

#[derive(Deserialize)]
struct BatchList {
    data: Vec<BatchObject>,
    #[serde(default)]
    has_more: bool,
}

#[derive(Deserialize)]
struct BatchObject {
    id: String,
    status: String,
    #[serde(default)]
    metadata: Option<Value>,
    #[serde(default)]
    output_file_id: Option<String>,
    #[serde(default)]
    error_file_id: Option<String>,
    #[serde(default)]
    errors: Option<BatchErrors>,
}

#[derive(Deserialize)]
struct BatchErrors {
    #[serde(default)]
    data: Vec<BatchError>,
}

#[derive(Deserialize)]
struct BatchError {
    #[serde(default)]
    message: String,
}

/// Sentence embeddings on one OpenAI-compatible endpoint.
pub struct OpenAiEmbeddings {
    client: reqwest::Client,
    base_url: String,
    url: PostUrl,
    model: String,
    api_key: Option<String>,
}

impl OpenAiEmbeddings {
    /// `base_url` ends before `/embeddings`, e.g. `https://api.openai.com/v1`.
    pub fn new(
        client: reqwest::Client,
        base_url: &str,
        model: &str,
        api_key: Option<String>,
    ) -> OpenAiEmbeddings {
        let base_url = base_url.trim_end_matches('/').to_string();
        OpenAiEmbeddings {
            client,
            url: PostUrl::new(format!("{base_url}/embeddings")),
            base_url,
            model: model.to_string(),
            api_key,
        }
    }
}

#[derive(Serialize)]
struct EmbeddingsRequest<'a> {
    model: &'a str,
    input: &'a [String],
}

#[derive(Deserialize)]
struct EmbeddingsResponse {
    data: Vec<EmbeddingItem>,
}

#[derive(Deserialize)]
struct EmbeddingItem {
    index: usize,
    embedding: Vec<f32>,
}

impl EmbedBackend for OpenAiEmbeddings {
    fn backend(&self) -> &str {
        "openai"
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn endpoint(&self) -> &str {
        &self.base_url
    }

    fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, CallError>> {
        Box::pin(async move {
            let body = EmbeddingsRequest {
                model: &self.model,
                input: texts,
            };
            let response: EmbeddingsResponse =
                post_json(&self.client, &self.url, bearer(&self.api_key)?, &body).await?;
            in_input_order(response.data, texts.len()).map_err(|problem| CallError::Retryable {
                reason: format!("POST {}: {problem}", self.url),
                retry_after: None,
            })
        })
    }
}

/// Orders `data[]` by `index`, which must cover `0..n` exactly once.
fn in_input_order(mut items: Vec<EmbeddingItem>, n: usize) -> Result<Vec<Vec<f32>>, String> {
    items.sort_by_key(|item| item.index);
    let indices_ok = items.len() == n && items.iter().enumerate().all(|(i, item)| item.index == i);
    if !indices_ok {
        let indices: Vec<usize> = items.iter().map(|item| item.index).collect();
        return Err(format!(
            "expected embeddings with indices 0..{n}, got indices {indices:?}"
        ));
    }
    Ok(items.into_iter().map(|item| item.embedding).collect())
}

/// An `f32` as the decimal it was written as (`0.7`, not `0.699999988079071`).
pub(crate) fn decimal(value: f32) -> Value {
    value
        .to_string()
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

fn bearer(api_key: &Option<String>) -> Result<HeaderMap, CallError> {
    let mut headers = HeaderMap::new();
    if let Some(key) = api_key {
        let mut value =
            HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| CallError::Fatal {
                reason: "the API key contains characters not allowed in an HTTP header".into(),
            })?;
        value.set_sensitive(true);
        headers.insert(AUTHORIZATION, value);
    }
    Ok(headers)
}

impl fmt::Debug for OpenAiChat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiChat")
            .field("url", &self.url.as_str())
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("structured_output", &self.structured_output)
            .finish()
    }
}

impl fmt::Debug for OpenAiEmbeddings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiEmbeddings")
            .field("url", &self.url.as_str())
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{JsonSchema, Message};
    use serde_json::json;

    fn backend(structured_output: bool) -> OpenAiChat {
        OpenAiChat::new(
            crate::http::http_client().unwrap(),
            "http://127.0.0.1:1/v1/",
            "m",
            Some("sk-secret".into()),
            structured_output,
        )
    }

    #[test]
    fn body_omits_unset_options_and_adds_the_schema_only_when_supported() {
        let mut request = ChatRequest::new(vec![Message::user("hi")]);
        let plain = backend(true).request_body(&request);
        assert_eq!(
            plain,
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
                   "temperature": 0.0, "max_tokens": 512})
        );
        request.json_schema = Some(JsonSchema {
            name: "answer".into(),
            schema: json!({"type": "object"}),
        });
        assert!(
            backend(false)
                .request_body(&request)
                .get("response_format")
                .is_none()
        );
        assert_eq!(
            backend(true).request_body(&request)["response_format"],
            json!({"type": "json_schema",
                   "json_schema": {"name": "answer", "schema": {"type": "object"}, "strict": true}})
        );
    }

    #[test]
    fn sampling_parameters_are_sent_as_written() {
        let mut request = ChatRequest::new(vec![Message::user("hi")]);
        request.temperature = 0.7;
        request.top_p = Some(0.9);
        request.seed = Some(42);
        request.stop = vec!["\n\n".into()];
        let body = backend(true).request_body(&request);
        let text = body.to_string();
        assert!(text.contains(r#""temperature":0.7,"#), "{text}");
        assert!(text.contains(r#""top_p":0.9"#), "{text}");
        assert_eq!(body["seed"], 42);
        assert_eq!(body["stop"], json!(["\n\n"]));
    }

    #[test]
    fn debug_never_shows_the_api_key() {
        let shown = format!("{:?}", backend(true));
        assert!(!shown.contains("sk-secret"), "{shown}");
        assert!(
            shown.contains("http://127.0.0.1:1/v1/chat/completions"),
            "{shown}"
        );
    }

    #[test]
    fn embeddings_are_put_back_in_input_order() {
        let items = vec![
            EmbeddingItem {
                index: 1,
                embedding: vec![1.0],
            },
            EmbeddingItem {
                index: 0,
                embedding: vec![0.0],
            },
        ];
        assert_eq!(
            in_input_order(items, 2).unwrap(),
            vec![vec![0.0], vec![1.0]]
        );
        let short = vec![EmbeddingItem {
            index: 0,
            embedding: vec![0.0],
        }];
        assert!(in_input_order(short, 2).unwrap_err().contains("0..2"));
    }
}
