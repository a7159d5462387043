//! Money and secrets (issue 56): what a hostile provider, a careless user and a crash broke,
//! each case pinned by a test named after it.

use std::path::{Path, PathBuf};

use hierarag_test_support::mock::{MockServer, Reply};
use serde_json::{Value, json};

use hierarag_test_support::pipeline::{chat, embeddings};

use crate::run::{assert_ran, hierarag, write_config, write_corpus};

/// The key the [llm] reads from HIERARAG_TEST_KEY, which the mock quotes back.
const KEY: &str = "sk-live-7f3c9a1e5b2d4c6e8f0a";
/// The token an http system's header is filled with, which the service echoes.
const TOKEN: &str = "tok-51c0-e9f0-echoed";

/// Every file under `root` that holds `secret`, with the first place it is found.
fn files_holding(root: &Path, secret: &str) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    for path in hierarag_test_support::files_under(root) {
        let bytes = std::fs::read(&path).unwrap();
        if let Some(at) = bytes
            .windows(secret.len())
            .position(|w| w == secret.as_bytes())
        {
            let start = at.saturating_sub(60);
            let end = (at + secret.len() + 20).min(bytes.len());
            found.push((
                path,
                String::from_utf8_lossy(&bytes[start..end]).into_owned(),
            ));
        }
    }
    found
}

/// The model server of [`chat`], but one that quotes the key: a 500 naming it for every
/// generation request of the FAILME document, and every plain-text answer ending with it.
fn start_quoting_mock() -> String {
    let server = MockServer::serve(|path, body| match path {
        "/v1/chat/completions" => {
            let user = body["messages"].as_array().unwrap().last().unwrap()["content"]
                .as_str()
                .unwrap_or("");
            if user.contains("FAILME") && !user.contains("Candidate ") {
                return Reply::json(
                    500,
                    json!({"error": {"message": format!("upstream failed for key {KEY}")}}),
                );
            }
            match chat(body) {
                Reply::Json {
                    status: 200,
                    headers,
                    mut body,
                } => {
                    let content = &mut body["choices"][0]["message"]["content"];
                    let text = content.as_str().unwrap().to_string();
                    if serde_json::from_str::<Value>(&text).is_err() {
                        *content = json!(format!("{text} (served for {KEY})"));
                    }
                    Reply::Json {
                        status: 200,
                        headers,
                        body,
                    }
                }
                other => other,
            }
        }
        "/v1/embeddings" => embeddings(body),
        _ => Reply::json(404, json!({"error": {"message": "no route"}})),
    });
    server.v1()
}

/// A RAG service that echoes its header's token in every answer.
fn start_echoing_service() -> String {
    let server = MockServer::serve(|_, body| {
        Reply::json(
            200,
            json!({
                "answer": format!("asked {} with X-Api-Key {TOKEN}", body["query"]),
                "sources": [{"text": format!("a passage for {TOKEN}"),
                             "metadata": {"doc_id": "doc01"}}],
            }),
        )
    });
    format!("{}/ask", server.v1().trim_end_matches("/v1"))
}

#[test]
fn the_llm_key_is_never_written_into_the_report() {
    let base_url = start_quoting_mock();
    let service = start_echoing_service();
    let dir = tempfile::tempdir().unwrap();
    let corpus = write_corpus(dir.path(), true);
    let run_dir = dir.path().join("quoted");
    let config = write_config(dir.path(), &corpus, &base_url, &run_dir);
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("per_dimension = 6", "per_dimension = 10")
        .replace(
            "model = \"mock-1\"\n",
            "model = \"mock-1\"\napi_key_env = \"HIERARAG_TEST_KEY\"\n",
        )
        + &format!(
            "\n[[system]]\nname = \"bm25\"\nkind = \"builtin\"\nretriever = \"bm25\"\n\
\n[[system]]\nname = \"svc\"\nkind = \"http\"\nurl = \"{service}\"\n\
body = {{ query = \"{{question}}\" }}\nanswer = \"/answer\"\ncontexts = \"/sources\"\n\
context_text = \"/text\"\ncontext_doc_id = \"/metadata/doc_id\"\n\
headers = {{ X-Api-Key = \"${{HIERARAG_TEST_TOKEN}}\" }}\n"
        );
    std::fs::write(&config, text).unwrap();
    let home = dir.path().join("home");
    let out = hierarag()
        .arg("run")
        .arg(&config)
        .env("HIERARAG_TEST_KEY", KEY)
        .env("HIERARAG_TEST_TOKEN", TOKEN)
        .env("HIERARAG_HOME", &home)
        .env("RUST_LOG", "debug")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The FAILME document's items failed (exit 1), quoting the key; everything else went on.
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    for secret in [KEY, TOKEN] {
        assert!(!stdout.contains(secret), "{stdout}");
        assert!(!stderr.contains(secret), "{stderr}");
        let held = [
            files_holding(&run_dir, secret),
            files_holding(&home, secret),
        ]
        .concat();
        assert!(held.is_empty(), "{secret} written into {held:#?}");
    }
    // What the secrets stood in is kept, with `[redacted]` in their place.
    let failures = std::fs::read_to_string(run_dir.join("generate.failures.jsonl")).unwrap();
    assert!(
        failures.contains("upstream failed for key [redacted]"),
        "{failures}"
    );
    assert!(
        stderr.contains("upstream failed for key [redacted]"),
        "{stderr}"
    );
    let answers = std::fs::read_to_string(run_dir.join("systems/bm25/answers.jsonl")).unwrap();
    assert!(answers.contains("(served for [redacted])"), "{answers}");
    let svc = std::fs::read_to_string(run_dir.join("systems/svc/answers.jsonl")).unwrap();
    assert!(svc.contains("with X-Api-Key [redacted]"), "{svc}");
    let report = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert!(report.contains("[redacted]"), "{report}");
}

#[test]
fn the_llm_key_quoted_in_a_refusal_is_never_written() {
    let server = MockServer::serve(|_, _| {
        Reply::json(
            401,
            json!({"error": {"message": format!("Incorrect API key provided: {KEY}")}}),
        )
    });
    let dir = tempfile::tempdir().unwrap();
    let corpus = write_corpus(dir.path(), false);
    let run_dir = dir.path().join("refused");
    let config = write_config(dir.path(), &corpus, &server.v1(), &run_dir);
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "model = \"mock-1\"\n",
        "model = \"mock-1\"\napi_key_env = \"HIERARAG_TEST_KEY\"\n",
    );
    std::fs::write(&config, text).unwrap();
    let out = hierarag()
        .arg("run")
        .arg(&config)
        .arg("--no-check-endpoints")
        .env("HIERARAG_TEST_KEY", KEY)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("Incorrect API key provided: [redacted]"),
        "{stderr}"
    );
    assert!(!stdout.contains(KEY) && !stderr.contains(KEY), "{stderr}");
    let held = files_holding(&run_dir, KEY);
    assert!(held.is_empty(), "the key written into {held:#?}");
    let manifest = std::fs::read_to_string(run_dir.join("manifest.json")).unwrap();
    assert!(manifest.contains("[redacted]"), "{manifest}");
}

#[test]
fn an_empty_ranking_scores_zero_and_is_counted_not_left_out() {
    let server = MockServer::serve(|path, body| match path {
        "/v1/embeddings" => embeddings(body),
        _ => Reply::json(404, json!({"error": {"message": "no route"}})),
    });
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    crate::support::write_numbered_benchmark(root, 16);
    // `found`: the right document on the even questions, nothing (`[]`, a score-threshold
    // retriever) on the odd ones. `silent`: never says what it retrieved.
    let found: Vec<Value> = (0..16)
        .map(|i| {
            let contexts = if i % 2 == 0 {
                json!([{"doc_id": format!("doc-{}", i % 7), "text": "a passage"}])
            } else {
                json!([])
            };
            json!({"id": format!("q{i:03}"), "answer": "ref", "contexts": contexts})
        })
        .collect();
    let silent: Vec<Value> = (0..16)
        .map(|i| json!({"id": format!("q{i:03}"), "answer": "ref"}))
        .collect();
    crate::support::write_lines(&root.join("found.jsonl"), &found);
    crate::support::write_lines(&root.join("silent.jsonl"), &silent);
    let config = root.join("c.toml");
    let mut text = String::new();
    for name in ["found", "silent"] {
        text += &format!(
            "[[system]]\nname = \"{name}\"\nkind = \"file\"\npath = \"{}\"\nformat = \"jsonl\"\n\
[system.fields]\nid = \"id\"\nanswer = \"answer\"\ncontexts = \"contexts\"\n\n",
            root.join(format!("{name}.jsonl")).display()
        );
    }
    text += &format!(
        "[embeddings]\nbackend = \"openai\"\nmodel = \"mock-embed\"\nbase_urls = [\"{}\"]\n",
        server.v1()
    );
    std::fs::write(&config, text).unwrap();
    let run = root.join("run");
    assert_ran(
        &hierarag()
            .args(["answer", "-q", "--benchmark"])
            .arg(root.join("benchmark.jsonl"))
            .arg("--config")
            .arg(&config)
            .arg("--out")
            .arg(&run)
            .output()
            .unwrap(),
    );
    let mut means = Vec::new();
    for name in ["found", "silent"] {
        let system = run.join("systems").join(name);
        assert_ran(
            &hierarag()
                .args(["evaluate", "-q", "--benchmark"])
                .arg(root.join("benchmark.jsonl"))
                .arg("--answers")
                .arg(system.join("answers.jsonl"))
                .arg("--config")
                .arg(&config)
                .output()
                .unwrap(),
        );
        let scores = crate::run::records(&system.join("scores.jsonl"));
        assert_eq!(scores.len(), 16);
        let aps: Vec<Option<f64>> = scores.iter().map(|s| s["ap"].as_f64()).collect();
        let empty = scores.iter().filter(|s| s["empty_ranking"] == true).count();
        means.push((aps, empty));
    }
    // Half right, half nothing: mean AP 0.5, not the 1.0 of the questions that ranked.
    let (found_aps, found_empty) = &means[0];
    assert!(found_aps.iter().all(Option::is_some), "{found_aps:?}");
    let mean = found_aps.iter().flatten().sum::<f64>() / 16.0;
    assert_eq!(mean, 0.5);
    assert_eq!(*found_empty, 8);
    // A system that never names a document has no retrieval metrics at all.
    let (silent_aps, silent_empty) = &means[1];
    assert!(silent_aps.iter().all(Option::is_none), "{silent_aps:?}");
    assert_eq!(*silent_empty, 0);
}

/// Issue 56, point 4: an attempt that timed out after the provider did the work is charged at
/// its reservation (the provider bills it), and the retry reserves and settles anew: the
/// budget counts at least what was billed.
#[test]
fn a_failed_attempt_is_charged_at_its_reservation() {
    use hierarag_llm::{ChatBackendKind, ChatClient, ChatRequest, LlmConfig, Message};
    let attempts = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = std::sync::Arc::clone(&attempts);
    let server = MockServer::serve(move |_, body| {
        let reply = chat(body);
        if seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            // The work done, the reply held past the client's timeout.
            Reply::slow(std::time::Duration::from_secs(2), reply)
        } else {
            reply
        }
    });
    let mut config = LlmConfig::new(ChatBackendKind::OpenAi, "mock-1");
    config.base_urls = vec![server.v1()];
    config.timeout_s = 0.5;
    config.max_attempts = 3;
    config.backoff_s = 0.01;
    config.cache = hierarag_llm::CacheSetting::Off;
    let dir = tempfile::tempdir().unwrap();
    let client = ChatClient::from_config(&config, dir.path()).unwrap();
    let budget = std::sync::Arc::new(hierarag_llm::Budget::new(None, Some(1_000_000), 0.0, 0));
    client.set_budget(
        std::sync::Arc::clone(&budget),
        hierarag_llm::Prices::default(),
    );
    let request = ChatRequest::new(vec![Message::user("[1] Paris is the capital. Question: x")]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let reply = runtime.block_on(client.complete(&request)).unwrap();
    assert_eq!(reply.attempts, 2);
    let used = reply.completion.usage.prompt_tokens + reply.completion.usage.completion_tokens;
    let reservation = request.prompt_tokens_at_most() + u64::from(request.max_tokens);
    assert_eq!(budget.spent().1, reservation + used);
}
