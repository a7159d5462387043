//! Benchmark: per-request cost of `ChatClient` + `OpenAiChat` against a local server that
//! answers instantly, with a raw reqwest loop (same HTTP client, same body, same reply parsing
//! into a struct) as the peer, measured in the same process and run. Driven by `bench/llm.py`.
//!
//! `cargo run --release -p hierarag-llm --example bench_client -- [REQUESTS] [IN_FLIGHT] [ROUNDS]`
//!
//! The server (axum, 127.0.0.1:0) runs on its own 1-worker runtime; the client on another
//! 1-worker runtime (so each side has one core of this 2-core machine). Prints one JSON line.
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::http::header;
use axum::routing::post;
use hierarag_llm::{ChatBackend, ChatClient, ChatRequest, ClientSettings, Message, OpenAiChat};

const REPLY: &str = r#"{"id":"chatcmpl-1","object":"chat.completion","created":0,"model":"bench","choices":[{"index":0,"message":{"role":"assistant","content":"BM25 is a ranking function."},"finish_reason":"stop"}],"usage":{"prompt_tokens":21,"completion_tokens":7,"total_tokens":28}}"#;

#[derive(serde::Deserialize)]
struct Resp {
    choices: Vec<Choice>,
}
#[derive(serde::Deserialize)]
struct Choice {
    message: Msg,
}
#[derive(serde::Deserialize)]
struct Msg {
    content: Option<String>,
}

struct Stats {
    wall: f64,
    mean_latency_us: f64,
}

async fn drive<F, Fut>(requests: usize, in_flight: usize, call: F) -> Stats
where
    F: Fn() -> Fut + Send + Sync + Clone + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..in_flight {
        let next = next.clone();
        let call = call.clone();
        tasks.push(tokio::spawn(async move {
            let mut lat = Duration::ZERO;
            let mut n = 0usize;
            while next.fetch_add(1, Ordering::Relaxed) < requests {
                let t = Instant::now();
                call().await;
                lat += t.elapsed();
                n += 1;
            }
            (lat, n)
        }));
    }
    let (mut lat, mut n) = (Duration::ZERO, 0usize);
    for t in tasks {
        let (l, k) = t.await.unwrap();
        lat += l;
        n += k;
    }
    let wall = started.elapsed().as_secs_f64();
    assert_eq!(n, requests);
    Stats {
        wall,
        mean_latency_us: lat.as_secs_f64() * 1e6 / n as f64,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let requests: usize = args
        .get(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(20_000);
    let in_flight: usize = args.get(2).map(|s| s.parse()).transpose()?.unwrap_or(64);
    let rounds: usize = args.get(3).map(|s| s.parse()).transpose()?.unwrap_or(3);

    // The server: its own runtime on its own thread.
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let listener = server_rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
    let addr = listener.local_addr()?;
    let app = Router::new().route(
        "/v1/chat/completions",
        post(|_body: axum::body::Bytes| async {
            ([(header::CONTENT_TYPE, "application/json")], REPLY)
        }),
    );
    server_rt.spawn(async move { axum::serve(listener, app).await.unwrap() });

    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let base = format!("http://{addr}/v1");
    let http = hierarag_llm::http_client()?;
    let backend = Arc::new(OpenAiChat::new(http.clone(), &base, "bench", None, false));
    let settings = ClientSettings {
        concurrency: in_flight,
        cache: None,
        ..ClientSettings::default()
    };
    let client = Arc::new(ChatClient::new(
        vec![backend.clone() as Arc<dyn ChatBackend>],
        &settings,
    )?);
    let request = Arc::new(ChatRequest::new(vec![
        Message::system("You answer questions about information retrieval."),
        Message::user("What is BM25? Answer in one sentence."),
    ]));
    let body = Arc::new(serde_json::to_vec(&backend.request_body(&request))?);
    let url = Arc::new(format!("{base}/chat/completions"));

    let ours = {
        let client = client.clone();
        let request = request.clone();
        move || {
            let client = client.clone();
            let request = request.clone();
            async move {
                let reply = client
                    .complete(&request)
                    .await
                    .expect("hierarag request failed");
                assert!(!reply.completion.text.is_empty());
            }
        }
    };
    let raw = {
        let http = http.clone();
        move || {
            let http = http.clone();
            let body = body.clone();
            let url = url.clone();
            async move {
                let resp = http
                    .post(url.as_str())
                    .header(header::CONTENT_TYPE, "application/json")
                    .body((*body).clone())
                    .send()
                    .await
                    .expect("raw request failed");
                assert!(resp.status().is_success());
                let bytes = resp.bytes().await.expect("raw body failed");
                let r: Resp = serde_json::from_slice(&bytes).expect("raw parse failed");
                assert!(
                    r.choices[0]
                        .message
                        .content
                        .as_deref()
                        .is_some_and(|c| !c.is_empty())
                );
            }
        }
    };

    // Warm-up (connections opened), then alternate rounds.
    client_rt.block_on(drive(2_000.min(requests), in_flight, raw.clone()));
    client_rt.block_on(drive(2_000.min(requests), in_flight, ours.clone()));
    let (mut ours_rps, mut raw_rps, mut ours_lat, mut raw_lat) = (vec![], vec![], vec![], vec![]);
    for _ in 0..rounds {
        let s = client_rt.block_on(drive(requests, in_flight, raw.clone()));
        raw_rps.push(requests as f64 / s.wall);
        raw_lat.push(s.mean_latency_us);
        let s = client_rt.block_on(drive(requests, in_flight, ours.clone()));
        ours_rps.push(requests as f64 / s.wall);
        ours_lat.push(s.mean_latency_us);
    }
    let usage = client.usage();
    let (o, r) = (median(ours_rps.clone()), median(raw_rps.clone()));
    println!(
        "{}",
        serde_json::json!({
            "requests": requests,
            "in_flight": in_flight,
            "rounds": rounds,
            "hierarag_req_s": o,
            "raw_req_s": r,
            "hierarag_us_per_req": 1e6 / o,
            "raw_us_per_req": 1e6 / r,
            "client_overhead_us_per_req": 1e6 / o - 1e6 / r,
            "hierarag_mean_latency_us": median(ours_lat.clone()),
            "raw_mean_latency_us": median(raw_lat.clone()),
            "hierarag_all_req_s": ours_rps,
            "raw_all_req_s": raw_rps,
            "usage_debug": format!("{usage:?}"),
        })
    );
    Ok(())
}
