//! The client against a scripted local server: retries and what they honour, what fails at
//! once, timeouts, broken bodies, endpoint balancing, the concurrency limit, the cache, and the
//! exact requests each backend sends. Assertions are on what the server recorded (counts,
//! arrival times), never on how long the test took.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::support::{MockServer, Reply, chat_completion};
use hierarag_llm::{
    AnthropicChat, ChatBackend, ChatBackendKind, ChatClient, ChatRequest, ClientSettings,
    EmbedBackend, Embedder, JsonSchema, LlmConfig, LlmError, Message, OpenAiChat, OpenAiEmbeddings,
    RetryPolicy, http_client,
};
use serde_json::json;

/// Fast retries (a few milliseconds of backoff), no cache, a generous timeout.
pub(crate) fn settings() -> ClientSettings {
    ClientSettings {
        concurrency: 4,
        timeout: Duration::from_secs(30),
        retry: RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_millis(20),
            max_retry_after: Duration::from_secs(10),
        },
        cache: None,
        jitter_seed: Some(7),
    }
}

fn openai(base_urls: &[String], model: &str) -> Vec<Arc<dyn ChatBackend>> {
    let http = http_client().unwrap();
    base_urls
        .iter()
        .map(|url| {
            Arc::new(OpenAiChat::new(http.clone(), url, model, None, true)) as Arc<dyn ChatBackend>
        })
        .collect()
}

fn client(server: &MockServer, settings: &ClientSettings) -> ChatClient {
    ChatClient::new(openai(&[server.v1()], "test-model"), settings).unwrap()
}

fn hello() -> ChatRequest {
    ChatRequest::new(vec![Message::system("Be brief."), Message::user("hello")])
}

fn call_error(error: LlmError) -> (u32, bool, String, String) {
    match error {
        LlmError::Call {
            attempts,
            gave_up,
            ref reason,
            ..
        } => (attempts, gave_up, reason.clone(), error.to_string()),
        other => panic!("expected a call error, got {other:?}"),
    }
}

#[tokio::test]
async fn rate_limit_is_retried_after_the_servers_retry_after() {
    let server = MockServer::start(vec![
        Reply::json(429, json!({"error": {"message": "slow down"}}))
            .with_header("retry-after", "1"),
    ])
    .await;
    let client = client(&server, &settings());
    let reply = client.complete(&hello()).await.unwrap();
    assert_eq!(reply.completion.text, "echo: hello");
    assert_eq!(reply.attempts, 2);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    // The backoff alone is at most 20 ms; only Retry-After makes the client wait a second.
    let gap = requests[1].at - requests[0].at;
    assert!(gap >= Duration::from_secs(1), "retried after {gap:?}");
    let usage = client.usage();
    assert_eq!((usage.calls, usage.retries, usage.failures), (2, 1, 0));
}

#[tokio::test]
async fn server_error_then_success_is_retried() {
    let server = MockServer::start(vec![Reply::json(
        500,
        json!({"error": {"message": "boom"}}),
    )])
    .await;
    let client = client(&server, &settings());
    let reply = client.complete(&hello()).await.unwrap();
    assert_eq!(reply.completion.text, "echo: hello");
    assert_eq!(reply.completion.finish_reason.as_deref(), Some("stop"));
    assert_eq!(reply.attempts, 2);
    assert!(!reply.cached);
    assert_eq!(server.count(), 2);
    let usage = client.usage();
    assert_eq!(
        (usage.requests, usage.calls, usage.retries, usage.failures),
        (1, 2, 1, 0)
    );
    assert_eq!((usage.prompt_tokens, usage.completion_tokens), (7, 3));
}

#[tokio::test]
async fn a_slow_reply_times_out_and_is_retried() {
    let slow = Reply::slow(
        Duration::from_secs(30),
        Reply::json(200, chat_completion("late")),
    );
    let server = MockServer::start(vec![slow]).await;
    let client = client(
        &server,
        &ClientSettings {
            timeout: Duration::from_secs(1),
            ..settings()
        },
    );
    let reply = client.complete(&hello()).await.unwrap();
    assert_eq!(reply.completion.text, "echo: hello");
    assert_eq!(reply.attempts, 2);
    assert_eq!(server.count(), 2);
}

#[tokio::test]
async fn a_reply_that_never_comes_in_time_is_reported_as_a_timeout() {
    let slow = || {
        Reply::slow(
            Duration::from_secs(30),
            Reply::json(200, chat_completion("late")),
        )
    };
    let server = MockServer::start(vec![slow(), slow()]).await;
    let settings = ClientSettings {
        timeout: Duration::from_secs(1),
        retry: RetryPolicy {
            max_attempts: 2,
            ..settings().retry
        },
        ..settings()
    };
    let client = client(&server, &settings);
    let (attempts, gave_up, reason, _) = call_error(client.complete(&hello()).await.unwrap_err());
    assert_eq!((attempts, gave_up), (2, true));
    assert_eq!(reason, "no reply within 1.0 s");
    assert_eq!(server.count(), 2);
    assert_eq!(client.usage().failures, 1);
}

#[tokio::test]
async fn a_truncated_body_is_retried() {
    let server = MockServer::start(vec![Reply::Truncated]).await;
    let client = client(&server, &settings());
    let reply = client.complete(&hello()).await.unwrap();
    assert_eq!(reply.completion.text, "echo: hello");
    assert_eq!(reply.attempts, 2);
    assert_eq!(server.count(), 2);
}

#[tokio::test]
async fn truncated_bodies_to_the_end_are_reported_as_such() {
    let server = MockServer::start(vec![Reply::Truncated; 3]).await;
    let client = client(&server, &settings());
    let (attempts, gave_up, reason, _) = call_error(client.complete(&hello()).await.unwrap_err());
    assert_eq!((attempts, gave_up), (3, true));
    assert!(reason.contains("body cut short"), "{reason}");
    assert_eq!(server.count(), 3);
}

#[tokio::test]
async fn a_dropped_connection_is_retried_then_reported() {
    let server = MockServer::start(vec![Reply::Hangup]).await;
    let client = client(&server, &settings());
    assert_eq!(client.complete(&hello()).await.unwrap().attempts, 2);

    let server = MockServer::start(vec![Reply::Hangup; 3]).await;
    let client = self::client(&server, &settings());
    let (attempts, gave_up, reason, _) = call_error(client.complete(&hello()).await.unwrap_err());
    assert_eq!((attempts, gave_up), (3, true));
    assert!(reason.contains("connection closed"), "{reason}");
    assert_eq!(server.count(), 3);
}

#[tokio::test]
async fn invalid_json_is_retried_then_reported() {
    let invalid = || Reply::Text {
        status: 200,
        body: "{\"choices\": [oops".into(),
    };
    let server = MockServer::start(vec![invalid()]).await;
    let client = client(&server, &settings());
    let reply = client.complete(&hello()).await.unwrap();
    assert_eq!(reply.attempts, 2);

    let server = MockServer::start(vec![invalid(), invalid(), invalid()]).await;
    let client = self::client(&server, &settings());
    let (attempts, _, reason, _) = call_error(client.complete(&hello()).await.unwrap_err());
    assert_eq!(attempts, 3);
    assert!(reason.contains("invalid JSON"), "{reason}");
    assert!(reason.contains("[oops"), "the body is quoted: {reason}");
}

#[tokio::test]
async fn a_reply_of_the_wrong_shape_is_retried() {
    let server = MockServer::start(vec![Reply::json(200, json!({"choices": []}))]).await;
    let client = client(&server, &settings());
    let reply = client.complete(&hello()).await.unwrap();
    assert_eq!(reply.attempts, 2);
}

#[tokio::test]
async fn a_bad_request_fails_at_once_with_the_servers_message() {
    let server = MockServer::start(vec![Reply::json(
        400,
        json!({"error": {"message": "The model `nope` does not exist", "type": "invalid_request_error"}}),
    )])
    .await;
    let client = client(&server, &settings());
    let (attempts, gave_up, reason, shown) =
        call_error(client.complete(&hello()).await.unwrap_err());
    assert_eq!((attempts, gave_up), (1, false));
    assert_eq!(
        reason,
        "HTTP 400 Bad Request: The model `nope` does not exist"
    );
    assert_eq!(
        shown,
        format!(
            "openai model test-model at {}: failed after 1 attempt: {reason}",
            server.v1()
        )
    );
    assert_eq!(server.count(), 1);
    let usage = client.usage();
    assert_eq!((usage.calls, usage.retries, usage.failures), (1, 0, 1));
}

#[tokio::test]
async fn exhausted_attempts_give_a_typed_error_and_count_the_failure() {
    let unavailable = || Reply::json(503, json!({"error": {"message": "overloaded"}}));
    let server = MockServer::start(vec![unavailable(), unavailable(), unavailable()]).await;
    let client = client(&server, &settings());
    let (attempts, gave_up, reason, shown) =
        call_error(client.complete(&hello()).await.unwrap_err());
    assert_eq!((attempts, gave_up), (3, true));
    assert_eq!(reason, "HTTP 503 Service Unavailable: overloaded");
    assert!(shown.contains("gave up after 3 attempts"), "{shown}");
    assert_eq!(server.count(), 3);
    let usage = client.usage();
    assert_eq!(
        (usage.requests, usage.calls, usage.retries, usage.failures),
        (1, 3, 2, 1)
    );
    assert_eq!(usage.failure_reasons.get(&reason), Some(&1));
    assert!(usage.to_string().contains("1 failed"), "{usage}");
}

#[tokio::test]
async fn concurrent_requests_spread_over_endpoints_by_requests_in_flight() {
    let first = MockServer::holding(Duration::from_millis(500)).await;
    let second = MockServer::holding(Duration::from_millis(500)).await;
    let settings = ClientSettings {
        concurrency: 6,
        ..settings()
    };
    let client = ChatClient::new(openai(&[first.v1(), second.v1()], "m"), &settings).unwrap();
    assert_eq!(client.endpoints(), [first.v1(), second.v1()]);
    let requests: Vec<ChatRequest> = (0..6)
        .map(|i| ChatRequest::new(vec![Message::user(format!("q{i}"))]))
        .collect();
    let replies = futures_util::future::join_all(requests.iter().map(|r| client.complete(r))).await;
    assert!(replies.iter().all(Result::is_ok));
    assert_eq!((first.count(), second.count()), (3, 3));
}

#[tokio::test]
async fn one_request_at_a_time_goes_to_the_first_endpoint() {
    // Ties are broken by index, not by turns: an idle pool always starts at the first.
    let first = MockServer::start(Vec::new()).await;
    let second = MockServer::start(Vec::new()).await;
    let client = ChatClient::new(openai(&[first.v1(), second.v1()], "m"), &settings()).unwrap();
    for i in 0..4 {
        let request = ChatRequest::new(vec![Message::user(format!("q{i}"))]);
        client.complete(&request).await.unwrap();
    }
    assert_eq!((first.count(), second.count()), (4, 0));
}

#[tokio::test]
async fn requests_in_flight_never_exceed_the_concurrency_limit() {
    let server = MockServer::holding(Duration::from_millis(300)).await;
    let settings = ClientSettings {
        concurrency: 3,
        ..settings()
    };
    // Spawned tasks sharing one client, as a pipeline stage uses it.
    let client = Arc::new(client(&server, &settings));
    let tasks: Vec<_> = (0..12)
        .map(|i| {
            let client = Arc::clone(&client);
            tokio::spawn(async move {
                let request = ChatRequest::new(vec![Message::user(format!("q{i}"))]);
                client.complete(&request).await
            })
        })
        .collect();
    for (i, task) in tasks.into_iter().enumerate() {
        let reply = task.await.unwrap().unwrap();
        assert_eq!(reply.completion.text, format!("echo: q{i}"));
    }
    assert_eq!(server.count(), 12);
    assert_eq!(
        server.max_in_flight(),
        3,
        "the limit is reached and never passed"
    );
}

#[tokio::test]
async fn a_rerun_is_answered_from_the_cache_without_calls() {
    let dir = tempfile::tempdir().unwrap();
    let settings = ClientSettings {
        cache: Some(dir.path().join("cache.sqlite")),
        ..settings()
    };
    let server = MockServer::start(Vec::new()).await;
    let first = {
        let client = client(&server, &settings);
        let reply = client.complete(&hello()).await.unwrap();
        assert!(!reply.cached);
        reply
    };
    assert_eq!(server.count(), 1);

    let client = client(&server, &settings);
    let again = client.complete(&hello()).await.unwrap();
    assert_eq!(server.count(), 1, "a cache hit makes no call");
    assert!(again.cached);
    assert_eq!(again.attempts, 0);
    assert_eq!(
        again.completion, first.completion,
        "same text, finish reason and usage"
    );
    let usage = client.usage();
    assert_eq!((usage.requests, usage.cache_hits, usage.calls), (1, 1, 0));
    assert_eq!((usage.prompt_tokens, usage.completion_tokens), (0, 0));

    // Any change to the request is a different entry.
    let mut warmer = hello();
    warmer.temperature = 0.5;
    assert!(!client.complete(&warmer).await.unwrap().cached);
    assert_eq!(server.count(), 2);
}

#[tokio::test]
async fn a_reply_made_without_the_schema_is_not_served_to_a_request_that_sends_it() {
    // Regression: `structured_output = false` was not part of the cache key, so a rerun with
    // `structured_output = true` got the replies made without `response_format`.
    let dir = tempfile::tempdir().unwrap();
    let settings = ClientSettings {
        cache: Some(dir.path().join("cache.sqlite")),
        ..settings()
    };
    let server = MockServer::start(Vec::new()).await;
    let http = http_client().unwrap();
    let with_flag = |structured_output: bool| {
        let backend = OpenAiChat::new(
            http.clone(),
            &server.v1(),
            "test-model",
            None,
            structured_output,
        );
        ChatClient::new(vec![Arc::new(backend) as Arc<dyn ChatBackend>], &settings).unwrap()
    };
    let mut request = hello();
    request.json_schema = Some(JsonSchema {
        name: "answer".into(),
        schema: json!({"type": "object"}),
    });
    assert!(!with_flag(false).complete(&request).await.unwrap().cached);
    // Without structured output the schema is not sent: the same as a request without one.
    assert!(with_flag(false).complete(&hello()).await.unwrap().cached);
    assert_eq!(server.count(), 1);
    // With it, the schema is sent: another entry, another call.
    assert!(!with_flag(true).complete(&request).await.unwrap().cached);
    assert_eq!(server.count(), 2);
    assert!(with_flag(true).complete(&request).await.unwrap().cached);
    assert_eq!(server.count(), 2);
}

#[tokio::test]
async fn openai_requests_carry_every_parameter_and_the_json_schema() {
    let server = MockServer::start(Vec::new()).await;
    let mut config = LlmConfig::new(ChatBackendKind::OpenAi, "test-model");
    config.base_urls = vec![server.v1()];
    // Any variable that is surely set stands in for a key variable.
    config.api_key_env = Some("PATH".into());
    config.cache = hierarag_llm::CacheSetting::Off;
    let client = ChatClient::from_config(&config, Path::new(".")).unwrap();
    let schema = json!({
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
        "additionalProperties": false,
    });
    let request = ChatRequest {
        temperature: 0.7,
        top_p: Some(0.9),
        max_tokens: 64,
        seed: Some(42),
        stop: vec!["\n\n".into()],
        json_schema: Some(JsonSchema {
            name: "answer".into(),
            schema: schema.clone(),
        }),
        ..hello()
    };
    client.complete(&request).await.unwrap();
    let recorded = &server.requests()[0];
    assert_eq!(recorded.path, "/v1/chat/completions");
    let key = std::env::var("PATH").unwrap();
    assert_eq!(recorded.headers["authorization"], format!("Bearer {key}"));
    assert_eq!(
        recorded.body,
        json!({
            "model": "test-model",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "hello"},
            ],
            "temperature": 0.7,
            "top_p": 0.9,
            "max_tokens": 64,
            "seed": 42,
            "stop": ["\n\n"],
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": schema, "strict": true},
            },
        })
    );
}

#[tokio::test]
async fn without_structured_output_the_schema_is_not_sent() {
    let server = MockServer::start(Vec::new()).await;
    let mut config = LlmConfig::new(ChatBackendKind::OpenAi, "m");
    config.base_urls = vec![server.v1()];
    config.structured_output = false;
    config.cache = hierarag_llm::CacheSetting::Off;
    let client = ChatClient::from_config(&config, Path::new(".")).unwrap();
    let request = ChatRequest {
        json_schema: Some(JsonSchema {
            name: "n".into(),
            schema: json!({"type": "object"}),
        }),
        ..hello()
    };
    client.complete(&request).await.unwrap();
    let recorded = &server.requests()[0];
    assert!(recorded.body.get("response_format").is_none());
    assert!(
        recorded.headers.get("authorization").is_none(),
        "no key configured"
    );
}

#[tokio::test]
async fn anthropic_requests_and_replies_follow_the_messages_api() {
    let server = MockServer::start(Vec::new()).await;
    let backend = AnthropicChat::new(
        http_client().unwrap(),
        &server.root,
        "claude-test",
        Some("sk-ant-test".into()),
    );
    let client =
        ChatClient::new(vec![Arc::new(backend) as Arc<dyn ChatBackend>], &settings()).unwrap();
    let request = ChatRequest {
        max_tokens: 100,
        ..ChatRequest::new(vec![
            Message::system("Be brief."),
            Message::user("hello"),
            Message::assistant("hi"),
            Message::user("again"),
        ])
    };
    let reply = client.complete(&request).await.unwrap();
    assert_eq!(reply.completion.text, "Hello world");
    assert_eq!(reply.completion.finish_reason.as_deref(), Some("end_turn"));
    assert_eq!(
        (
            reply.completion.usage.prompt_tokens,
            reply.completion.usage.completion_tokens
        ),
        (12, 3)
    );
    let recorded = &server.requests()[0];
    assert_eq!(recorded.path, "/v1/messages");
    assert_eq!(recorded.headers["x-api-key"], "sk-ant-test");
    assert_eq!(recorded.headers["anthropic-version"], "2023-06-01");
    assert!(
        recorded.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    assert_eq!(
        recorded.body,
        json!({
            "model": "claude-test",
            "max_tokens": 100,
            "system": [{"type": "text", "text": "Be brief.",
                        "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": "hello"},
                {"role": "assistant", "content": "hi"},
                {"role": "user", "content": "again"},
            ],
            "temperature": 0.0,
        })
    );
    assert_eq!(client.usage().backend, "anthropic");
}

#[tokio::test]
async fn anthropic_errors_surface_the_servers_message() {
    let server = MockServer::start(vec![Reply::json(
        401,
        json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}),
    )])
    .await;
    let backend = AnthropicChat::new(http_client().unwrap(), &server.root, "c", None);
    let client =
        ChatClient::new(vec![Arc::new(backend) as Arc<dyn ChatBackend>], &settings()).unwrap();
    match client.complete(&hello()).await.unwrap_err() {
        LlmError::Refused { reason, .. } => {
            assert_eq!(reason, "HTTP 401 Unauthorized: invalid x-api-key")
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(server.count(), 1);
}

#[tokio::test]
async fn a_refusing_endpoint_stops_the_client_at_the_first_reply() {
    for (status, message) in [
        (401, "Incorrect API key provided"),
        (403, "You do not have access to this model"),
        (404, "The model `gpt-9` does not exist"),
    ] {
        let server = MockServer::start(vec![Reply::json(
            status,
            json!({"error": {"message": message}}),
        )])
        .await;
        let client = client(&server, &settings());
        assert!(client.refusal().is_none());
        let first = client.complete(&hello()).await.unwrap_err();
        let shown = first.to_string();
        match &first {
            LlmError::Refused {
                endpoint, reason, ..
            } => {
                assert_eq!(endpoint, &server.v1());
                assert!(reason.starts_with(&format!("HTTP {status} ")), "{reason}");
                assert!(reason.ends_with(message), "{reason}");
            }
            other => panic!("{status}: expected a refusal, got {other:?}"),
        }
        assert!(
            shown.contains("refused the request") && shown.contains(message),
            "{shown}"
        );
        // Never retried, and no later call reaches the server: they fail with the same error.
        for _ in 0..3 {
            let later = client.complete(&hello()).await.unwrap_err();
            assert_eq!(later.to_string(), shown);
        }
        assert_eq!(server.count(), 1, "{status}");
        assert_eq!(client.refusal().map(|e| e.to_string()), Some(shown));
        let usage = client.usage();
        assert_eq!((usage.requests, usage.calls, usage.failures), (4, 1, 4));
    }
}

#[tokio::test]
async fn embeddings_come_back_in_input_order_in_batches_and_cached() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![Reply::json(500, json!({"error": "hiccup"}))]).await;
    let settings = ClientSettings {
        cache: Some(dir.path().join("cache.sqlite")),
        ..settings()
    };
    let embedder = |settings: &ClientSettings| {
        let backend = OpenAiEmbeddings::new(http_client().unwrap(), &server.v1(), "emb", None);
        Embedder::new(
            vec![Arc::new(backend) as Arc<dyn EmbedBackend>],
            settings,
            2,
        )
        .unwrap()
    };
    let texts: Vec<String> = ["a", "bb", "ccc", "dddd", "eeeee"]
        .map(String::from)
        .to_vec();
    let first = embedder(&settings);
    let vectors = first.embed(&texts).await.unwrap();
    // The server puts each text's length first and its index in the batch second.
    let expected: Vec<Vec<f32>> = vec![
        vec![1.0, 0.0],
        vec![2.0, 1.0],
        vec![3.0, 0.0],
        vec![4.0, 1.0],
        vec![5.0, 0.0],
    ];
    assert_eq!(vectors, expected);
    // Three batches, one of them retried after the 500.
    assert_eq!(server.count(), 4);
    let mut answered: Vec<usize> = server.requests()[1..]
        .iter()
        .map(|r| r.body["input"].as_array().unwrap().len())
        .collect();
    answered.sort();
    assert_eq!(answered, [1, 2, 2]);
    assert!(server.requests().iter().all(|r| r.path == "/v1/embeddings"));
    // Requests are texts, calls the batches sent.
    let usage = first.usage();
    assert_eq!((usage.requests, usage.calls, usage.retries), (5, 4, 1));

    let second = embedder(&settings);
    assert_eq!(second.embed(&texts).await.unwrap(), expected);
    assert_eq!(server.count(), 4, "every text came from the cache");
    assert_eq!(second.usage().cache_hits, 5);

    // Texts are cached one by one: a call that repeats a text, and mixes cached texts with
    // new ones, sends each new distinct text once.
    let mixed: Vec<String> = ["ccc", "ffffff", "a", "ffffff", "gg"]
        .map(String::from)
        .to_vec();
    let vectors = second.embed(&mixed).await.unwrap();
    assert_eq!(server.count(), 5, "one batch for the two new texts");
    assert_eq!(server.requests()[4].body["input"], json!(["ffffff", "gg"]));
    assert_eq!(
        vectors,
        [
            vec![3.0, 0.0],
            vec![6.0, 0.0],
            vec![1.0, 0.0],
            vec![6.0, 0.0],
            vec![2.0, 1.0]
        ]
    );
    let usage = second.usage();
    assert_eq!((usage.requests, usage.cache_hits), (5 + 4, 5 + 2));

    // Without a cache, a repeated text is still embedded once per call.
    let uncached = embedder(&ClientSettings {
        cache: None,
        ..settings.clone()
    });
    let repeated: Vec<String> = ["x", "x", "x"].map(String::from).to_vec();
    assert_eq!(
        uncached.embed(&repeated).await.unwrap(),
        vec![vec![1.0, 0.0]; 3]
    );
    assert_eq!(server.requests()[5].body["input"], json!(["x"]));
}

#[test]
fn endpoints_of_different_models_are_refused() {
    let backends = openai(&["http://127.0.0.1:1/v1".into()], "a")
        .into_iter()
        .chain(openai(&["http://127.0.0.1:2/v1".into()], "b"))
        .collect();
    let error = ChatClient::new(backends, &settings()).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("all endpoints must serve one model"),
        "{error}"
    );
}

#[test]
fn the_embedded_backend_is_not_built_from_config() {
    let config = LlmConfig::new(ChatBackendKind::Embedded, "");
    let error = ChatClient::from_config(&config, Path::new(".")).unwrap_err();
    assert!(error.to_string().contains("ChatClient::new"), "{error}");
}

#[tokio::test]
async fn checking_endpoints_sends_one_request_to_each_and_names_the_one_that_refuses() {
    let good = MockServer::start(Vec::new()).await;
    let bad = MockServer::start(vec![Reply::json(
        401,
        json!({"error": {"message": "Incorrect API key provided"}}),
    )])
    .await;
    let client =
        ChatClient::new(openai(&[good.v1(), bad.v1()], "test-model"), &settings()).unwrap();
    let error = client.check_endpoints().await.unwrap_err();
    match &error {
        LlmError::Refused { endpoint, .. } => assert_eq!(endpoint, &bad.v1()),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert!(
        error.to_string().contains("Incorrect API key provided"),
        "{error}"
    );
    assert_eq!((good.count(), bad.count()), (1, 1));
    // The check asks for one token.
    assert_eq!(good.requests()[0].body["max_tokens"], 1);

    let fine = ChatClient::new(openai(&[good.v1()], "test-model"), &settings()).unwrap();
    fine.check_endpoints().await.unwrap();
    assert_eq!(good.count(), 2);
}
