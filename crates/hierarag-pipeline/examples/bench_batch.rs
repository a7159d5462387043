//! The batch path's overhead: the generate stage of N items (3,336 by default, the paper's rq2
//! size) with its generator and filter in batch mode, against the batch mock
//! (hierarag-test-support's, OpenAI's files and batches API) that takes a fixed time to run
//! each request. The stage's wall time over the mock's own time (in its handlers: running the
//! requests, reading the upload, writing the results), minus one, is the overhead (the passes
//! over the items, building and sending the upload, the polls' turnaround, reading the results
//! into the cache); peak memory is the process's high-water mark (the mock's files included).
//!
//! ```sh
//! cargo run --release -p hierarag-pipeline --example bench_batch -- [ITEMS] [PER_REQUEST_MS]
//! ```
//!
//! Prints one JSON line: items, requests, batches, wall and processing seconds, the overhead,
//! and the peak resident memory in MB.

use std::sync::Arc;
use std::time::{Duration, Instant};

use hierarag_generate::{GenerateSettings, Generator};
use hierarag_llm::{BatchLedger, ChatBackendKind, ChatClient, LlmConfig};
use hierarag_pipeline::{GenerateStage, NoProgress, Reporter, Silent, in_batches};
use hierarag_taxonomy::Taxonomy;
use hierarag_test_support::batches::{BatchMock, Ending};
use hierarag_test_support::mock::Reply;
use serde_json::json;

mod common;

/// The process's peak resident memory (VmHWM), in MB.
fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// Prints each note with the seconds since the start, with `--trace`.
struct Trace(Instant, bool);

impl Reporter for Trace {
    fn note(&self, message: &str) {
        if self.1 {
            eprintln!("{:8.3} s  {message}", self.0.elapsed().as_secs_f64());
        }
    }
    fn warn(&self, message: &str) {
        self.note(message);
    }
    fn counter(
        &self,
        step: &str,
        unit: &str,
        total: Option<u64>,
    ) -> Box<dyn hierarag_pipeline::Counter> {
        Silent.counter(step, unit, total)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let items: usize = args.first().map_or(3336, |a| a.parse().unwrap());
    let per_request = Duration::from_millis(args.get(1).map_or(10, |a| a.parse().unwrap()));

    let mock = BatchMock::serve_with(
        Ending {
            polls: 0,
            per_request,
            ..Ending::default()
        },
        |_, body| {
            let text = common::reply_text(&body.to_string());
            Reply::json(
                200,
                json!({"id": "x", "object": "chat.completion", "created": 0, "model": "bench",
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": text}}],
                       "usage": {"prompt_tokens": 100, "completion_tokens": 20,
                                 "total_tokens": 120}}),
            )
        },
    );
    let dir = tempfile::tempdir().unwrap();
    let mut config = LlmConfig::new(ChatBackendKind::OpenAi, "bench");
    config.base_urls = vec![mock.v1()];
    let client = Arc::new(ChatClient::from_config(&config, dir.path()).unwrap());
    client.set_batch_mode(Duration::from_millis(50)).unwrap();

    let (plan, documents) = common::plan_and_documents(items);
    let taxonomy = Taxonomy::default_taxonomy();
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
        benchmark: &dir.path().join("benchmark.jsonl"),
        rejects: &dir.path().join("rejects.jsonl"),
        failures: &dir.path().join("generate.failures.jsonl"),
        screened: &dir.path().join("screened.jsonl"),
        concurrency: 128,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let ledger = BatchLedger::new(&dir.path().join("batches.jsonl"));
    let started = Instant::now();
    let trace = Trace(started, args.iter().any(|a| a == "--trace"));
    // Time in the stage's passes (the rest is the batch rounds).
    let in_passes = std::sync::Mutex::new(Duration::ZERO);
    let outcome = runtime
        .block_on(in_batches(&[&client], &ledger, &trace, || async {
            let pass = Instant::now();
            let outcome = stage.run(&NoProgress).await;
            trace.note("pass ended");
            *in_passes.lock().unwrap() += pass.elapsed();
            outcome
        }))
        .unwrap();
    let in_passes = in_passes.into_inner().unwrap().as_secs_f64();
    let wall = started.elapsed().as_secs_f64();
    assert_eq!(outcome.written, items, "{:?}", outcome.failures.first());
    let processing = mock.processing().as_secs_f64();
    let busy = mock.busy().as_secs_f64();
    println!(
        "{}",
        json!({
            "items": items,
            "requests": mock.requests(),
            "batches": mock.submitted(),
            "per_request_ms": per_request.as_secs_f64() * 1000.0,
            "wall_s": wall,
            "processing_s": processing,
            "busy_s": busy,
            "overhead": wall / busy - 1.0,
            "passes_s": in_passes,
            "peak_rss_mb": peak_rss_mb(),
        })
    );
}
