//! [`JsonClient`] against the scripted server: the LLM clients' retries, timeouts and broken
//! bodies, the cache keyed by URL and body, headers that reach the server and nothing else, and
//! a reply the reader refuses, which is neither retried nor cached; what a service cannot do to
//! the client (issue 42): a reply over the limit or one that never ends, a redirect to another
//! origin, a header value echoed back into an error.

use std::time::Duration;

use crate::support::{MockServer, Reply};
use hierarag_llm::{ClientSettings, DEFAULT_MAX_REPLY_BYTES, JsonClient, LlmError, RetryPolicy};
use serde_json::{Value, json};

/// The fault tests' settings, with `cache`.
fn settings(cache: Option<std::path::PathBuf>) -> ClientSettings {
    ClientSettings {
        cache,
        ..crate::faults::settings()
    }
}

fn client(server: &MockServer, settings: &ClientSettings) -> JsonClient {
    let headers = [(
        "Authorization".to_string(),
        "Bearer s3cret-token".to_string(),
    )];
    JsonClient::new(
        "prod",
        &format!("{}/ask", server.root),
        &headers,
        settings,
        DEFAULT_MAX_REPLY_BYTES,
    )
    .unwrap()
}

fn answer(reply: &Value) -> Result<String, String> {
    reply["answer"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| "no /answer".to_string())
}

#[tokio::test]
async fn faults_are_retried_as_the_llm_clients_retry_them() {
    let server = MockServer::start(vec![
        Reply::json(429, json!({"error": "busy"})).with_header("retry-after", "1"),
        Reply::json(503, json!({"error": "down"})),
        Reply::Truncated,
        Reply::Hangup,
        Reply::Text {
            status: 200,
            body: "<html>oops</html>".into(),
        },
    ])
    .await;
    let settings = ClientSettings {
        retry: RetryPolicy {
            max_attempts: 6,
            ..settings(None).retry
        },
        ..settings(None)
    };
    let client = client(&server, &settings);
    let reply = client.post(&json!({"query": "hi"}), answer).await.unwrap();
    assert_eq!(reply.value, "echo: hi");
    assert_eq!(reply.attempts, 6);
    assert!(!reply.cached && reply.latency_ms >= 0.0);
    let requests = server.requests();
    assert_eq!(requests.len(), 6);
    let gap = requests[1].at - requests[0].at;
    assert!(
        gap >= Duration::from_secs(1),
        "Retry-After honoured: {gap:?}"
    );
    assert_eq!(requests[0].headers["authorization"], "Bearer s3cret-token");
    assert_eq!(requests[0].body, json!({"query": "hi"}));
    let usage = client.usage();
    assert_eq!((usage.requests, usage.calls, usage.retries), (1, 6, 5));
}

#[tokio::test]
async fn a_slow_service_times_out_and_gives_up_naming_the_reason() {
    let slow = || Reply::slow(Duration::from_secs(30), Reply::json(200, json!({})));
    let server = MockServer::start(vec![slow(), slow(), slow()]).await;
    let client = client(
        &server,
        &ClientSettings {
            timeout: Duration::from_millis(300),
            ..settings(None)
        },
    );
    let error = client
        .post(&json!({"query": "hi"}), answer)
        .await
        .unwrap_err();
    let LlmError::Call {
        attempts, gave_up, ..
    } = &error
    else {
        panic!("{error:?}")
    };
    assert_eq!((*attempts, *gave_up), (3, true));
    assert!(
        error.to_string().contains("no reply within 0.3 s"),
        "{error}"
    );
}

#[tokio::test]
async fn a_reply_the_reader_refuses_fails_at_once_and_is_not_cached() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache.sqlite");
    let server = MockServer::start(vec![Reply::json(200, json!({"result": "x"}))]).await;
    let client = client(&server, &settings(Some(cache.clone())));
    let error = client
        .post(&json!({"query": "hi"}), answer)
        .await
        .unwrap_err();
    assert!(matches!(error, LlmError::Reply { .. }), "{error:?}");
    assert!(error.to_string().contains("no /answer"), "{error}");
    assert_eq!(server.count(), 1, "not retried");
    // The next request for the same body is sent again, and its good reply cached.
    let reply = client.post(&json!({"query": "hi"}), answer).await.unwrap();
    assert!(!reply.cached);
    assert_eq!(server.count(), 2);

    let again = client.post(&json!({"query": "hi"}), answer).await.unwrap();
    assert!(again.cached);
    assert_eq!((again.value.as_str(), again.attempts), ("echo: hi", 0));
    assert_eq!(
        again.latency_ms, reply.latency_ms,
        "the original call's latency"
    );
    assert_eq!(server.count(), 2);
    let other = client.post(&json!({"query": "ho"}), answer).await.unwrap();
    assert!(!other.cached, "another body is another entry");

    // Headers are not in the cache file: the token appears nowhere in it.
    drop(client);
    let mut bytes = Vec::new();
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        bytes.extend(std::fs::read(entry.unwrap().path()).unwrap());
    }
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.contains("echo: ho"), "replies are stored");
    assert!(!text.contains("s3cret"), "the header is not");
}

#[tokio::test]
async fn a_refusing_service_stops_the_client_and_debug_output_hides_headers() {
    let server = MockServer::start(vec![Reply::json(401, json!({"error": "bad token"}))]).await;
    let client = client(&server, &settings(None));
    let error = client
        .post(&json!({"query": "hi"}), answer)
        .await
        .unwrap_err();
    assert!(matches!(error, LlmError::Refused { .. }), "{error:?}");
    assert!(client.refusal().is_some());
    client
        .post(&json!({"query": "ho"}), answer)
        .await
        .unwrap_err();
    assert_eq!(server.count(), 1, "nothing is sent after a refusal");
    assert!(!format!("{client:?}").contains("s3cret"));
}

#[test]
fn bad_urls_and_headers_are_config_errors_naming_the_field() {
    let cases = [
        ("ftp://x/ask", vec![], "url"),
        ("not a url", vec![], "url"),
        (
            "http://127.0.0.1:9/ask",
            vec![("bad name", "v")],
            "headers.bad name",
        ),
        (
            "http://127.0.0.1:9/ask",
            vec![("X-Key", "a\nb")],
            "headers.X-Key",
        ),
    ];
    for (url, headers, field) in cases {
        let headers: Vec<(String, String)> = headers
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let error = JsonClient::new(
            "prod",
            url,
            &headers,
            &settings(None),
            DEFAULT_MAX_REPLY_BYTES,
        )
        .unwrap_err();
        let LlmError::Config(config) = &error else {
            panic!("{error:?}")
        };
        assert_eq!(config.field, field, "{error}");
        assert_eq!(config.source_name, "prod");
        assert!(
            !error.to_string().contains("a\nb"),
            "the value is not quoted"
        );
    }
}

/// A client of `server`'s `/ask` with a header holding a secret and a reply limit of `limit`.
fn limited_client(server: &MockServer, limit: usize, settings: &ClientSettings) -> JsonClient {
    let headers = [
        ("X-Api-Key".to_string(), "k3y-4c1d-e9f0-s3cret".to_string()),
        (
            "Authorization".to_string(),
            "Bearer t0ken-77aa-s3cret".to_string(),
        ),
    ];
    JsonClient::new(
        "prod",
        &format!("{}/ask", server.root),
        &headers,
        settings,
        limit,
    )
    .unwrap()
}

#[tokio::test]
async fn a_reply_over_the_limit_fails_at_once_unread_and_is_not_cached() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache.sqlite");
    let big = json!({"answer": "x".repeat(5000)}).to_string();
    let server = MockServer::start(vec![
        Reply::Text {
            status: 200,
            body: big.clone(),
        },
        Reply::Chunked { body: big },
    ])
    .await;
    let client = limited_client(&server, 1000, &settings(Some(cache.clone())));
    for expected in [
        "the reply declares 5013 bytes, over the limit of 1000 bytes (max_reply_bytes)",
        "the reply is longer than the limit of 1000 bytes (max_reply_bytes)",
    ] {
        let error = client
            .post(&json!({"query": "hi"}), answer)
            .await
            .unwrap_err();
        let LlmError::Call {
            attempts, gave_up, ..
        } = &error
        else {
            panic!("{error:?}")
        };
        assert_eq!((*attempts, *gave_up), (1, false), "not retried: {error}");
        assert!(error.to_string().contains(expected), "{error}");
    }
    assert_eq!(server.count(), 2);
    // A reply within the limit is read and cached; the others were not.
    let reply = client.post(&json!({"query": "hi"}), answer).await.unwrap();
    assert_eq!(reply.value, "echo: hi");
    drop(client);
    assert!(
        std::fs::metadata(&cache).unwrap().len() < 100_000,
        "no large reply in the cache"
    );
}

#[tokio::test]
async fn a_body_that_never_ends_stops_at_the_limit() {
    let server = MockServer::start(vec![Reply::Endless]).await;
    let client = limited_client(&server, 1 << 20, &settings(None));
    let error = client
        .post(&json!({"query": "hi"}), answer)
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("longer than the limit of 1048576 bytes"),
        "{error}"
    );
    assert_eq!(server.count(), 1, "not retried");
}

#[tokio::test]
async fn a_redirect_to_another_origin_is_not_followed_and_one_within_it_is() {
    let elsewhere = MockServer::start(Vec::new()).await;
    let server = MockServer::start(vec![
        Reply::json(307, json!({})).with_header("location", &format!("{}/ask", elsewhere.root)),
        Reply::json(308, json!({})).with_header("location", "/ask?moved=1"),
    ])
    .await;
    let client = limited_client(&server, DEFAULT_MAX_REPLY_BYTES, &settings(None));
    let error = client
        .post(&json!({"query": "hi"}), answer)
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains(&format!(
            "HTTP 307 Temporary Redirect to another origin, {}: not followed",
            elsewhere.root
        )),
        "{text}"
    );
    assert!(
        matches!(error, LlmError::Call { attempts: 1, .. }),
        "{error:?}"
    );
    assert_eq!(elsewhere.count(), 0, "nothing reached the other origin");
    // Within the origin a redirect is followed, with the headers and the body.
    let reply = client.post(&json!({"query": "ho"}), answer).await.unwrap();
    assert_eq!(reply.value, "echo: ho");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[2].path, "/ask");
    assert_eq!(requests[2].headers["x-api-key"], "k3y-4c1d-e9f0-s3cret");
    assert_eq!(requests[2].body, json!({"query": "ho"}));
}

#[tokio::test]
async fn no_error_holds_a_header_value_even_when_the_service_echoes_it() {
    let echoed = "got X-Api-Key k3y-4c1d-e9f0-s3cret and Bearer t0ken-77aa-s3cret";
    let server = MockServer::start(vec![
        Reply::json(400, json!({"error": echoed})),
        Reply::json(500, json!({"error": echoed})),
        Reply::json(200, json!({"result": echoed})),
        Reply::Text {
            status: 200,
            body: format!("<html>{echoed}</html>"),
        },
        Reply::json(401, json!({"error": "t0ken-77aa-s3cret is not valid"})),
    ])
    .await;
    // One attempt each, so that each request meets its own scripted reply.
    let once = ClientSettings {
        retry: RetryPolicy {
            max_attempts: 1,
            ..settings(None).retry
        },
        ..settings(None)
    };
    let client = limited_client(&server, DEFAULT_MAX_REPLY_BYTES, &once);
    let mut errors = Vec::new();
    for query in ["a", "b", "c", "d", "e"] {
        let error = client
            .post(&json!({ "query": query }), |reply| {
                Err::<(), _>(format!("no /answer in {reply}"))
            })
            .await
            .unwrap_err();
        errors.push(error.to_string());
    }
    errors.push(client.refusal().unwrap().to_string());
    errors.extend(client.usage().failure_reasons.into_keys());
    for error in &errors {
        assert!(!error.contains("s3cret"), "{error}");
    }
    assert!(
        errors[0].contains("got X-Api-Key [redacted] and [redacted]"),
        "{errors:?}"
    );
    assert!(
        errors.iter().all(|e| e.contains("[redacted]")),
        "{errors:?}"
    );
}
