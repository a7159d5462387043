//! Throughput of the generate and answer stages against an OpenAI-compatible server that
//! answers after a fixed delay: how many requests are in flight, and how much time the stages
//! add over the server's own.
//!
//! ```sh
//! cargo run --release -p hierarag-pipeline --example bench_stages -- [ITEMS] [DELAY_MS] [CONCURRENCY] [cache|nocache]
//! ```
//!
//! With C requests in flight and a delay of D per request, a stage that makes R sequential
//! requests per item over N items cannot finish before ⌈N / C⌉ × R × D (the server's own time);
//! the overhead is the measured wall time over that bound, minus one. The retriever of the
//! answer stage returns ten fixed chunks, so only the LLM path is measured.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::Json;
use axum::routing::post;
use hierarag_generate::{BenchmarkRecord, GenerateSettings, Generator};
use hierarag_llm::{BoxFuture, ChatBackend, ChatClient, ClientSettings, OpenAiChat, http_client};
use hierarag_pipeline::{AnswerStage, GenerateStage, NoProgress};
use hierarag_plan::{CategoryRef, DesignKind, PlanItem};
use hierarag_rag::{AnswerSettings, Answerer, RagError, RetrievedChunk, Retriever};
use hierarag_taxonomy::{Granularity, Taxonomy};
use serde_json::{Value, json};

#[derive(Default)]
struct Gauge {
    now: AtomicUsize,
    max: AtomicUsize,
    /// Sum over requests of the in-flight count seen on arrival, for the mean.
    seen: AtomicUsize,
    requests: AtomicUsize,
}

fn reply(text: String) -> Json<Value> {
    Json(json!({
        "id": "x", "object": "chat.completion", "model": "bench",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    }))
}

async fn handle(gauge: Arc<Gauge>, delay: Duration, body: Value) -> Json<Value> {
    let now = gauge.now.fetch_add(1, Ordering::SeqCst) + 1;
    gauge.max.fetch_max(now, Ordering::SeqCst);
    gauge.seen.fetch_add(now, Ordering::SeqCst);
    gauge.requests.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(delay).await;
    gauge.now.fetch_sub(1, Ordering::SeqCst);
    let system = body["messages"][0]["content"].as_str().unwrap_or("");
    let user = body["messages"][1]["content"].as_str().unwrap_or("");
    if system.contains("reviewer") {
        let n = user.matches("Candidate ").count();
        let verdicts: Vec<Value> = (1..=n)
            .map(|c| json!({"candidate": c, "faithful": true, "fits_category": true, "standalone": true, "reason": ""}))
            .collect();
        return reply(json!({ "verdicts": verdicts }).to_string());
    }
    if system.contains("question-answer pairs") {
        let marker = user
            .split("<document number=\"1\">\n")
            .nth(1)
            .unwrap_or("x");
        let word = marker.split_whitespace().next().unwrap_or("x");
        let candidates: Vec<Value> = (0..3)
            .map(|i| json!({"question": format!("Question {i} about {word}?"), "answer": format!("Answer {i}")}))
            .collect();
        return reply(json!({ "candidates": candidates }).to_string());
    }
    reply("An answer from the first passage.".into())
}

#[derive(Debug)]
struct FixedChunks(Vec<RetrievedChunk>);

impl Retriever for FixedChunks {
    fn name(&self) -> &str {
        "fixed"
    }
    fn retrieve<'a>(
        &'a self,
        _query: &'a str,
        k: usize,
    ) -> BoxFuture<'a, Result<Vec<RetrievedChunk>, RagError>> {
        Box::pin(async move { Ok(self.0.iter().take(k).cloned().collect()) })
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let items: usize = args.first().map_or(2048, |a| a.parse().unwrap());
    let delay = Duration::from_millis(args.get(1).map_or(20, |a| a.parse().unwrap()));
    let concurrency: usize = args.get(2).map_or(64, |a| a.parse().unwrap());
    let cache = args.get(3).is_none_or(|a| a == "cache");

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let gauge = Arc::new(Gauge::default());
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let address = listener.local_addr().unwrap();
    let server_gauge = gauge.clone();
    runtime.spawn(async move {
        let app = axum::Router::new().route(
            "/v1/chat/completions",
            post(move |Json(body): Json<Value>| handle(server_gauge.clone(), delay, body)),
        );
        axum::serve(listener, app).await.unwrap();
    });

    let dir = tempfile::tempdir().unwrap();
    let settings = ClientSettings {
        concurrency,
        cache: cache.then(|| dir.path().join("llm-cache.sqlite")),
        ..ClientSettings::default()
    };
    let base_url = format!("http://{address}/v1");
    let backend = OpenAiChat::new(http_client().unwrap(), &base_url, "bench", None, true);
    let client =
        ChatClient::new(vec![Arc::new(backend) as Arc<dyn ChatBackend>], &settings).unwrap();

    let taxonomy = Taxonomy::default_taxonomy();
    let plan: Vec<PlanItem> = (0..items)
        .map(|n| PlanItem {
            item_id: format!("bench-{n:06}"),
            design: DesignKind::Rq1,
            set: "qc".into(),
            doc_ids: vec![format!("doc{n}")],
            categories: vec![CategoryRef {
                dimension: "qc".into(),
                level: Granularity::Coarse,
                category: "simple".into(),
            }],
            persona: BTreeMap::from([("expertise".to_string(), "novice".to_string())]),
            seed: n as u64,
        })
        .collect();
    let documents = (0..items)
        .map(|n| {
            (
                format!("doc{n}"),
                format!("Document{n} is about a river and a castle and a town. ").repeat(20),
            )
        })
        .collect();
    let generator = Generator::new(
        &taxonomy,
        &client,
        Some(&client),
        GenerateSettings::default(),
    );
    let stage = GenerateStage {
        plan: &plan,
        documents: &documents,
        generator: &generator,
        out_dir: dir.path(),
        concurrency,
    };
    let started = Instant::now();
    let outcome = runtime.block_on(stage.run(&NoProgress)).unwrap();
    let generate_s = started.elapsed().as_secs_f64();
    assert_eq!(outcome.written, items, "{:?}", outcome.failures.first());
    let generate_stats = take(&gauge);

    let benchmark: Vec<BenchmarkRecord> =
        hierarag_pipeline::read_records(&dir.path().join("benchmark.jsonl")).unwrap();
    let chunks = (0..10)
        .map(|n| RetrievedChunk {
            chunk_id: format!("doc{n}#0"),
            doc_id: format!("doc{n}"),
            score: 10.0 - n as f64,
            text: "A passage about a river and a castle. ".repeat(30),
        })
        .collect();
    let retriever = FixedChunks(chunks);
    let answerer = Answerer::new(&retriever, &client, AnswerSettings::default());
    let stage = AnswerStage {
        benchmark: &benchmark,
        answerer: &answerer,
        out_dir: dir.path(),
        concurrency,
        seed: 1,
    };
    let started = Instant::now();
    let outcome = runtime.block_on(stage.run(&NoProgress)).unwrap();
    let answer_s = started.elapsed().as_secs_f64();
    assert_eq!(outcome.written, items);
    let answer_stats = take(&gauge);

    let rounds = items.div_ceil(concurrency) as f64;
    let d = delay.as_secs_f64();
    println!(
        "{items} items, server delay {} ms, {concurrency} in flight allowed, response cache {}",
        delay.as_millis(),
        if cache { "on" } else { "off" }
    );
    for (stage, seconds, calls_per_item, (requests, max, mean)) in [
        (
            "generate (generator + filter)",
            generate_s,
            2.0,
            generate_stats,
        ),
        ("answer", answer_s, 1.0, answer_stats),
    ] {
        let bound = rounds * calls_per_item * d;
        println!(
            "{stage:<30} {seconds:>7.3} s vs server-bound {bound:>7.3} s: overhead {:>5.1}%; {requests} requests, in flight max {max}, mean {mean:.1}",
            (seconds / bound - 1.0) * 100.0
        );
    }
}

/// (requests, max in flight, mean in flight on arrival) since the last call; resets.
fn take(gauge: &Gauge) -> (usize, usize, f64) {
    let requests = gauge.requests.swap(0, Ordering::SeqCst);
    let seen = gauge.seen.swap(0, Ordering::SeqCst);
    let max = gauge.max.swap(0, Ordering::SeqCst);
    (requests, max, seen as f64 / requests.max(1) as f64)
}
