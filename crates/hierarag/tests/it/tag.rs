//! `hierarag tag` against a mock OpenAI-compatible server that ignores the JSON schema: a
//! normal question gets the schema's first category, one question gets a name outside the
//! taxonomy once (repaired), one always (recorded as a failure); a rerun resumes.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use assert_cmd::Command;
use axum::Json;
use axum::routing::post;
use serde_json::{Value, json};

use crate::support::{BIN, count_lines, write_lines};

/// The mock; returns its base URL and the count of requests it answered.
fn start_mock() -> (String, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let (sender, receiver) = std::sync::mpsc::channel::<SocketAddr>();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let app = axum::Router::new().route(
                "/v1/chat/completions",
                post(move |Json(body): Json<Value>| {
                    counted.fetch_add(1, Ordering::SeqCst);
                    async move { Json(reply(&body)) }
                }),
            );
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            sender.send(listener.local_addr().unwrap()).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    (format!("http://{}/v1", receiver.recv().unwrap()), calls)
}

fn reply(body: &Value) -> Value {
    let messages = body["messages"].as_array().unwrap();
    let prompt = messages[1]["content"].as_str().unwrap();
    let names = &body["response_format"]["json_schema"]["schema"]["properties"]["category"]["enum"];
    let first = names[0].as_str().unwrap().to_string();
    let repaired = messages.len() > 2;
    let category = if prompt.contains("OUTSIDE") || (prompt.contains("ONCE") && !repaired) {
        "not_a_category".to_string()
    } else {
        first
    };
    json!({
        "id": "mock", "object": "chat.completion", "model": "mock-1",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant",
                                 "content": json!({"category": category}).to_string()}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105}
    })
}

fn benchmark(dir: &Path) {
    let record = |id: &str, question: &str| {
        json!({
            "id": id, "question": question, "answer": "ref", "doc_ids": ["d1"],
            "design": "rq1", "set": "qc/fine",
            "categories": [{"dimension": "qc", "level": "fine", "category": "factoid"}],
            "persona": {}
        })
    };
    write_lines(
        &dir.join("benchmark.jsonl"),
        &[
            record("q1", "Who wrote Hamlet?"),
            record("q2", "ONCE: when was Rome founded?"),
            record("q3", "OUTSIDE: what is the capital of Peru?"),
        ],
    );
}

#[test]
fn questions_are_tagged_on_every_dimension_a_stray_name_is_repaired_then_a_failure() {
    let (url, calls) = start_mock();
    let dir = tempfile::tempdir().unwrap();
    benchmark(dir.path());
    let config = dir.path().join("tag.toml");
    std::fs::write(
        &config,
        format!(
            "[tag]\nretries = 1\n[tag.llm]\nbackend = \"openai\"\nmodel = \"mock-1\"\nbase_urls = [\"{url}\"]\n"
        ),
    )
    .unwrap();
    let tag = || {
        Command::new(BIN)
            .env_remove("RUST_LOG")
            .arg("tag")
            .arg(dir.path())
            .arg("--config")
            .arg(&config)
            .output()
            .unwrap()
    };
    let out = tag();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("1 item failed"), "{stderr}");
    assert_eq!(count_lines(&dir.path().join("tags.jsonl")), 2);
    let failures = std::fs::read_to_string(dir.path().join("tag.failures.jsonl")).unwrap();
    let failure: Value = serde_json::from_str(failures.lines().next().unwrap()).unwrap();
    assert_eq!(failure["item_id"], "q3");
    let reason = failure["reason"].as_str().unwrap();
    assert!(
        reason.contains("\"not_a_category\" is not one of the categories")
            && reason.contains("after 1 repair message"),
        "{reason}"
    );

    let taxonomy = hierarag_taxonomy::Taxonomy::default_taxonomy();
    let text = std::fs::read_to_string(dir.path().join("tags.jsonl")).unwrap();
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records[0]["id"], "q1");
    assert_eq!(records[1]["id"], "q2");
    for record in &records {
        let tags = record["tags"].as_object().unwrap();
        assert_eq!(tags.len(), taxonomy.dimensions.len(), "{record}");
        for dimension in &taxonomy.dimensions {
            let categories = &tags[&dimension.key]["categories"];
            // The finest category is the first one offered, and each level is its parent.
            let finest = dimension.levels.last().unwrap();
            let mut name = categories[finest.granularity.as_str()].as_str().unwrap();
            assert_eq!(name, finest.categories[0].name);
            while let Some((level, parent)) = dimension.parent_of(name) {
                assert_eq!(categories[level.as_str()], parent.name.as_str(), "{record}");
                name = &parent.name;
            }
            assert!(tags[&dimension.key].get("confidence").is_none());
        }
        assert_eq!(record["tagger"]["model"], "mock-1");
    }

    // A rerun resumes: only q3 is asked again (from the cache, so no new request).
    let before = calls.load(Ordering::SeqCst);
    let out = tag();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("(2 from an earlier pass)"), "{stderr}");
    assert_eq!(calls.load(Ordering::SeqCst), before, "{stderr}");
    assert_eq!(
        text,
        std::fs::read_to_string(dir.path().join("tags.jsonl")).unwrap()
    );
}
