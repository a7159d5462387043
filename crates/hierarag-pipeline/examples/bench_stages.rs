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
//!
//! The mock server runs on its own thread with its own single-threaded runtime (threads named
//! `mock-*`), so that its CPU time is counted apart from the stages'; it still shares the
//! machine's cores with them. It answers from markers in the request body without parsing it,
//! and its replies are released by a timer thread that sleeps until the earliest deadline:
//! tokio's timer rounds every sleep up to a whole millisecond, which alone would add 2–5 % to a
//! 20 ms server. It reports how long it actually held each request, the CPU time of its threads
//! and of the rest of the process, and the client's turnaround: the time from a reply to the
//! next request on the same connection, which every round of requests adds to the stage.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::ConnectInfo;
use axum::http::header::CONTENT_TYPE;
use axum::routing::post;
use hierarag_generate::{BenchmarkRecord, GenerateSettings, Generator};
use hierarag_llm::{BoxFuture, ChatBackend, ChatClient, ClientSettings, OpenAiChat, http_client};
use hierarag_pipeline::{AnswerStage, GenerateStage, NoProgress};
use hierarag_plan::{CategoryRef, DesignKind, PlanItem};
use hierarag_rag::{AnswerSettings, Answerer, RagError, RetrievedChunk, Retriever};
use hierarag_taxonomy::{Granularity, Taxonomy};
use serde_json::{Value, json};
use tokio::sync::oneshot;

#[derive(Default)]
struct Gauge {
    now: AtomicUsize,
    max: AtomicUsize,
    /// Sum over requests of the in-flight count seen on arrival, for the mean.
    seen: AtomicUsize,
    requests: AtomicUsize,
    /// Sum over requests of the time from the handler's start to the reply, in nanoseconds.
    held_ns: AtomicU64,
    /// When each connection's last reply was sent, and the gaps from a reply to the next
    /// request on the same connection (the client's turnaround), in microseconds.
    replied: Mutex<HashMap<SocketAddr, Instant>>,
    turnarounds_us: Mutex<Vec<u64>>,
}

fn reply(text: String) -> String {
    json!({
        "id": "x", "object": "chat.completion", "model": "bench",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    })
    .to_string()
}

/// The reply to a request, found by looking for markers in its body (cheaper than parsing
/// it): verdicts for the filter, three candidates for the generator, a sentence for the
/// answerer.
fn reply_to(body: &[u8]) -> String {
    let body = std::str::from_utf8(body).expect("a UTF-8 body");
    if body.contains("strict reviewer") {
        // The user message numbers the candidates as "Candidate 1", "Candidate 2", …
        let n = body.matches("Candidate ").count();
        let verdicts: Vec<Value> = (1..=n)
            .map(|c| json!({"candidate": c, "faithful": true, "fits_category": true, "standalone": true, "reason": ""}))
            .collect();
        return reply(json!({ "verdicts": verdicts }).to_string());
    }
    if body.contains("question-answer pairs") {
        // In the JSON body the document's first line starts after `<document number=\"1\">\n`.
        let marker = body
            .split(r#"<document number=\"1\">\n"#)
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

/// Releases replies at their deadlines. With one fixed delay, deadlines come in the order the
/// requests arrived, so a queue serves and the thread never needs waking for a new one unless
/// it was idle.
#[derive(Default)]
struct Timer {
    alarms: Mutex<VecDeque<(Instant, oneshot::Sender<()>)>>,
    idle: Condvar,
}

impl Timer {
    fn set(&self, deadline: Instant, waker: oneshot::Sender<()>) {
        let mut alarms = self.alarms.lock().unwrap();
        alarms.push_back((deadline, waker));
        if alarms.len() == 1 {
            self.idle.notify_one();
        }
    }

    /// Sleeps until the first deadline (within the kernel's timer slack, tens of
    /// microseconds), then wakes every alarm that is due.
    fn run(&self) {
        let mut alarms = self.alarms.lock().unwrap();
        loop {
            let Some(&(deadline, _)) = alarms.front() else {
                alarms = self.idle.wait(alarms).unwrap();
                continue;
            };
            let now = Instant::now();
            if deadline > now {
                drop(alarms);
                std::thread::sleep(deadline - now);
                alarms = self.alarms.lock().unwrap();
                continue;
            }
            while alarms.front().is_some_and(|(deadline, _)| *deadline <= now) {
                let (_, waker) = alarms.pop_front().expect("looked at");
                let _ = waker.send(());
            }
        }
    }
}

struct Mock {
    gauge: Gauge,
    delay: Duration,
    timer: Timer,
}

async fn handle(
    mock: Arc<Mock>,
    client: SocketAddr,
    body: Bytes,
) -> ([(axum::http::HeaderName, &'static str); 1], String) {
    let arrived = Instant::now();
    let gauge = &mock.gauge;
    if let Some(replied) = gauge.replied.lock().unwrap().remove(&client) {
        let gap = arrived.duration_since(replied).as_micros() as u64;
        gauge.turnarounds_us.lock().unwrap().push(gap);
    }
    let now = gauge.now.fetch_add(1, Ordering::SeqCst) + 1;
    gauge.max.fetch_max(now, Ordering::SeqCst);
    gauge.seen.fetch_add(now, Ordering::SeqCst);
    gauge.requests.fetch_add(1, Ordering::SeqCst);
    let text = reply_to(&body);
    let (waker, alarm) = oneshot::channel();
    mock.timer.set(arrived + mock.delay, waker);
    alarm.await.expect("the timer wakes every alarm");
    gauge
        .held_ns
        .fetch_add(arrived.elapsed().as_nanos() as u64, Ordering::SeqCst);
    gauge.now.fetch_sub(1, Ordering::SeqCst);
    gauge.replied.lock().unwrap().insert(client, Instant::now());
    ([(CONTENT_TYPE, "application/json")], text)
}

/// Starts the mock on its own threads; returns its address.
fn start_mock(mock: Arc<Mock>) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let address = listener.local_addr().unwrap();
    let timer = mock.clone();
    std::thread::Builder::new()
        .name("mock-timer".into())
        .spawn(move || timer.timer.run())
        .unwrap();
    std::thread::Builder::new()
        .name("mock-server".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let app = axum::Router::new().route(
                    "/v1/chat/completions",
                    post(
                        move |ConnectInfo(client): ConnectInfo<SocketAddr>, body: Bytes| {
                            handle(mock.clone(), client, body)
                        },
                    ),
                );
                let app = app.into_make_service_with_connect_info::<SocketAddr>();
                axum::serve(listener, app).await.unwrap();
            });
        })
        .unwrap();
    format!("http://{address}/v1")
}

/// CPU seconds so far: (the mock's threads, the rest of the process, exited threads included).
fn cpu_seconds() -> (f64, f64) {
    let mut mock_ns = 0u64;
    for task in std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
    {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if !comm.starts_with("mock-") {
            continue;
        }
        let schedstat = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
        mock_ns += schedstat
            .split_whitespace()
            .next()
            .and_then(|ns| ns.parse::<u64>().ok())
            .unwrap_or(0);
    }
    // utime and stime (fields 14 and 15) in clock ticks of 10 ms, summed over all threads.
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_comm = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after_comm.split_whitespace().collect();
    let ticks: u64 =
        fields[11].parse::<u64>().unwrap_or(0) + fields[12].parse::<u64>().unwrap_or(0);
    let total = ticks as f64 / 100.0;
    let mock = mock_ns as f64 / 1e9;
    (mock, (total - mock).max(0.0))
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

/// What one stage took, measured around it.
struct Measured {
    seconds: f64,
    requests: usize,
    max_in_flight: usize,
    mean_in_flight: f64,
    mean_held_ms: f64,
    mock_cpu_s: f64,
    our_cpu_s: f64,
    /// Median, 90th and 99th percentile of the client's turnaround, in milliseconds.
    turnaround_ms: [f64; 3],
    mean_turnaround_ms: f64,
}

fn measure(gauge: &Gauge, run: impl FnOnce()) -> Measured {
    let (mock_before, ours_before) = cpu_seconds();
    let started = Instant::now();
    run();
    let seconds = started.elapsed().as_secs_f64();
    let (mock_after, ours_after) = cpu_seconds();
    let requests = gauge.requests.swap(0, Ordering::SeqCst);
    let seen = gauge.seen.swap(0, Ordering::SeqCst);
    let held_ns = gauge.held_ns.swap(0, Ordering::SeqCst);
    gauge.replied.lock().unwrap().clear();
    let mut gaps = std::mem::take(&mut *gauge.turnarounds_us.lock().unwrap());
    gaps.sort_unstable();
    let quantile = |q: f64| {
        gaps.get(((gaps.len() as f64 - 1.0) * q).round() as usize)
            .map_or(0.0, |&us| us as f64 / 1000.0)
    };
    let turnaround_ms = [quantile(0.5), quantile(0.9), quantile(0.99)];
    let mean_turnaround_ms = gaps.iter().sum::<u64>() as f64 / 1000.0 / gaps.len().max(1) as f64;
    Measured {
        seconds,
        requests,
        max_in_flight: gauge.max.swap(0, Ordering::SeqCst),
        mean_in_flight: seen as f64 / requests.max(1) as f64,
        mean_held_ms: held_ns as f64 / 1e6 / requests.max(1) as f64,
        mock_cpu_s: mock_after - mock_before,
        our_cpu_s: ours_after - ours_before,
        turnaround_ms,
        mean_turnaround_ms,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let items: usize = args.first().map_or(2048, |a| a.parse().unwrap());
    let delay = Duration::from_millis(args.get(1).map_or(20, |a| a.parse().unwrap()));
    let concurrency: usize = args.get(2).map_or(64, |a| a.parse().unwrap());
    let cache = args.get(3).is_none_or(|a| a == "cache");

    let mock = Arc::new(Mock {
        gauge: Gauge::default(),
        delay,
        timer: Timer::default(),
    });
    let base_url = start_mock(mock.clone());
    let gauge = &mock.gauge;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let settings = ClientSettings {
        concurrency,
        cache: cache.then(|| dir.path().join("llm-cache.sqlite")),
        ..ClientSettings::default()
    };
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
    let generate = measure(gauge, || {
        let outcome = runtime.block_on(stage.run(&NoProgress)).unwrap();
        assert_eq!(outcome.written, items, "{:?}", outcome.failures.first());
    });

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
    let answer = measure(gauge, || {
        let outcome = runtime.block_on(stage.run(&NoProgress)).unwrap();
        assert_eq!(outcome.written, items);
    });

    let rounds = items.div_ceil(concurrency) as f64;
    let d = delay.as_secs_f64();
    println!(
        "{items} items, server delay {} ms, {concurrency} in flight allowed, response cache {}",
        delay.as_millis(),
        if cache { "on" } else { "off" }
    );
    for (stage, calls_per_item, m) in [
        ("generate (generator + filter)", 2.0, generate),
        ("answer", 1.0, answer),
    ] {
        let bound = rounds * calls_per_item * d;
        println!(
            "{stage:<30} {:>7.3} s vs server-bound {bound:>7.3} s: overhead {:>5.1}%; {} requests, in flight max {}, mean {:.1}",
            m.seconds,
            (m.seconds / bound - 1.0) * 100.0,
            m.requests,
            m.max_in_flight,
            m.mean_in_flight,
        );
        println!(
            "{:<30} mock held each request {:.3} ms; CPU: stages {:.2} s ({:.0} µs/request), mock {:.2} s ({:.0} µs/request)",
            "",
            m.mean_held_ms,
            m.our_cpu_s,
            m.our_cpu_s * 1e6 / m.requests.max(1) as f64,
            m.mock_cpu_s,
            m.mock_cpu_s * 1e6 / m.requests.max(1) as f64,
        );
        println!(
            "{:<30} client turnaround (a reply to the next request on its connection): mean {:.3} ms, median {:.3}, p90 {:.3}, p99 {:.3}",
            "", m.mean_turnaround_ms, m.turnaround_ms[0], m.turnaround_ms[1], m.turnaround_ms[2],
        );
    }
}
