//! Throughput of the generate and answer stages against an OpenAI-compatible server that
//! answers after a fixed delay: how many requests are in flight, and how much time the stages
//! add over the server's own.
//!
//! ```sh
//! cargo run --release -p hierarag-pipeline --example bench_stages -- [ITEMS] [DELAY_MS] [CONCURRENCY] [cache|nocache] [STAGE_ITEMS]
//! ```
//!
//! With C requests in flight and a server that holds each request for a time H, a stage that
//! makes R sequential requests per item over N items cannot finish before ⌈N / C⌉ × R × H (the
//! server's own time); the overhead is the measured wall time over that bound, minus one. H is
//! what the mock measured (the delay asked for, plus its timer's slack and its own work), and
//! the bound with the nominal delay is printed beside it. The stages run as `hierarag run`
//! runs them: the client allows C requests in flight and the stage keeps 2 × C items in
//! progress, so that the next item's request is ready when a reply frees a slot. The
//! retriever of the answer stage returns ten fixed chunks, so only the LLM path is measured.
//!
//! The mock server is a minimal HTTP/1.1 responder on its own thread with its own
//! single-threaded runtime (threads named `mock-*`), so that its CPU time is counted apart from
//! the stages' and stays small (it still shares the machine's cores with them): it reads a
//! request's headers and `Content-Length` bytes of body, answers from markers in the body
//! without parsing it, and writes a prepared reply when a timer thread releases it (tokio's own
//! timer rounds every sleep up to a whole millisecond, which alone would add 2–5 % to a 20 ms
//! server). It reports how long it held each request (from its last byte read to its reply
//! written), the CPU time of its threads and of the rest of the process, the time from a
//! stage's start to its first request, from its first request to the first moment with C in
//! flight (the first round's ramp, which every later round inherits) and from its last reply
//! to its end, and the client's turnaround: the time from a reply written to the first byte
//! of the next request on the same connection, which every round of requests adds to a stage.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hierarag_generate::{BenchmarkRecord, GenerateSettings, Generator};
use hierarag_llm::{BoxFuture, ChatBackend, ChatClient, ClientSettings, OpenAiChat, http_client};
use hierarag_pipeline::{AnswerStage, GenerateStage, NoProgress};
use hierarag_rag::{AnswerSettings, Answerer, RagError, RetrievedChunk, Retriever};
use hierarag_taxonomy::Taxonomy;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;

mod common;
use common::{Timer, parse_head};

#[derive(Default)]
struct Gauge {
    now: AtomicUsize,
    max: AtomicUsize,
    /// Sum over requests of the in-flight count seen on arrival, for the mean.
    seen: AtomicUsize,
    requests: AtomicUsize,
    /// Connections the client opened.
    connections: AtomicUsize,
    /// Counts the stages measured, so that a gap between two stages is not a turnaround.
    stage: AtomicUsize,
    /// Sum over requests of the time from a request read to its reply written, in
    /// nanoseconds.
    held_ns: AtomicU64,
    /// The gaps from a reply to the next request on the same connection (the client's
    /// turnaround), in microseconds.
    turnarounds_us: Mutex<Vec<u64>>,
    /// When the first request of a stage arrived and when its last reply was written.
    first_arrival: Mutex<Option<Instant>>,
    /// The requests in flight the client allows, and when a stage first had that many.
    limit: AtomicUsize,
    full_at: Mutex<Option<Instant>>,
    last_reply: Mutex<Option<Instant>>,
}

/// A whole HTTP response carrying a chat completion of `text`.
fn reply(text: String) -> Vec<u8> {
    let body = json!({
        "id": "x", "object": "chat.completion", "model": "bench",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    })
    .to_string();
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The reply to a request (the common module's text, as an HTTP response).
fn reply_to(body: &[u8]) -> Vec<u8> {
    reply(common::reply_text(
        std::str::from_utf8(body).expect("a UTF-8 body"),
    ))
}

struct Mock {
    gauge: Gauge,
    delay: Duration,
    timer: Timer,
}

/// Serves one connection: requests one after another (HTTP/1.1 keep-alive), each answered
/// after the delay.
async fn serve(mock: Arc<Mock>, mut stream: tokio::net::TcpStream) {
    stream.set_nodelay(true).unwrap();
    let gauge = &mock.gauge;
    gauge.connections.fetch_add(1, Ordering::SeqCst);
    let mut buffer: Vec<u8> = Vec::with_capacity(1 << 16);
    // When this connection's last reply was written, in which stage.
    let mut replied: Option<(Instant, usize)> = None;
    loop {
        // Headers, then the body they announce.
        let (head, length) = loop {
            if let Some(parsed) = parse_head(&buffer) {
                break parsed;
            }
            let before = buffer.len();
            if stream.read_buf(&mut buffer).await.unwrap_or(0) == 0 {
                return;
            }
            if before == 0
                && let Some((replied, stage)) = replied.take()
                && stage == gauge.stage.load(Ordering::SeqCst)
            {
                let gap = replied.elapsed().as_micros() as u64;
                gauge.turnarounds_us.lock().unwrap().push(gap);
            }
        };
        while buffer.len() < head + length {
            if stream.read_buf(&mut buffer).await.unwrap_or(0) == 0 {
                return;
            }
        }
        let arrived = Instant::now();
        gauge.first_arrival.lock().unwrap().get_or_insert(arrived);
        let now = gauge.now.fetch_add(1, Ordering::SeqCst) + 1;
        if now == gauge.limit.load(Ordering::SeqCst) {
            gauge.full_at.lock().unwrap().get_or_insert(arrived);
        }
        gauge.max.fetch_max(now, Ordering::SeqCst);
        gauge.seen.fetch_add(now, Ordering::SeqCst);
        gauge.requests.fetch_add(1, Ordering::SeqCst);
        let response = reply_to(&buffer[head..head + length]);
        buffer.drain(..head + length);
        let (waker, alarm) = oneshot::channel();
        mock.timer.set(arrived + mock.delay, waker);
        alarm.await.expect("the timer wakes every alarm");
        gauge.now.fetch_sub(1, Ordering::SeqCst);
        if stream.write_all(&response).await.is_err() {
            return;
        }
        let sent = Instant::now();
        gauge
            .held_ns
            .fetch_add((sent - arrived).as_nanos() as u64, Ordering::SeqCst);
        *gauge.last_reply.lock().unwrap() = Some(sent);
        replied = Some((sent, gauge.stage.load(Ordering::SeqCst)));
    }
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
                loop {
                    let (stream, _) = listener.accept().await.unwrap();
                    tokio::spawn(serve(mock.clone(), stream));
                }
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
    connections: usize,
    max_in_flight: usize,
    mean_in_flight: f64,
    mean_held_ms: f64,
    mock_cpu_s: f64,
    our_cpu_s: f64,
    /// Median, 90th and 99th percentile of the client's turnaround, in milliseconds.
    turnaround_ms: [f64; 3],
    mean_turnaround_ms: f64,
    /// From the stage's start to its first request, and from its last reply to its end.
    startup_ms: f64,
    tail_ms: f64,
    /// From the first request to the first moment with as many in flight as allowed: the
    /// spread of the first round, which every later round inherits.
    ramp_ms: Option<f64>,
}

fn measure(gauge: &Gauge, run: impl FnOnce()) -> Measured {
    let (mock_before, ours_before) = cpu_seconds();
    let started = Instant::now();
    run();
    let ended = Instant::now();
    let seconds = (ended - started).as_secs_f64();
    let first = gauge
        .first_arrival
        .lock()
        .unwrap()
        .take()
        .expect("a request");
    let last = gauge.last_reply.lock().unwrap().take().expect("a reply");
    let full = gauge.full_at.lock().unwrap().take();
    let (mock_after, ours_after) = cpu_seconds();
    let requests = gauge.requests.swap(0, Ordering::SeqCst);
    let seen = gauge.seen.swap(0, Ordering::SeqCst);
    let held_ns = gauge.held_ns.swap(0, Ordering::SeqCst);
    gauge.stage.fetch_add(1, Ordering::SeqCst);
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
        connections: gauge.connections.swap(0, Ordering::SeqCst),
        max_in_flight: gauge.max.swap(0, Ordering::SeqCst),
        mean_in_flight: seen as f64 / requests.max(1) as f64,
        mean_held_ms: held_ns as f64 / 1e6 / requests.max(1) as f64,
        mock_cpu_s: mock_after - mock_before,
        our_cpu_s: ours_after - ours_before,
        turnaround_ms,
        mean_turnaround_ms,
        startup_ms: (first - started).as_secs_f64() * 1e3,
        tail_ms: (ended - last).as_secs_f64() * 1e3,
        ramp_ms: full.map(|full| (full - first).as_secs_f64() * 1e3),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let items: usize = args.first().map_or(2048, |a| a.parse().unwrap());
    let delay = Duration::from_millis(args.get(1).map_or(20, |a| a.parse().unwrap()));
    let concurrency: usize = args.get(2).map_or(64, |a| a.parse().unwrap());
    let cache = args.get(3).is_none_or(|a| a == "cache");
    // Items in progress per stage: twice the requests in flight, as `hierarag run` sets it.
    let in_progress: usize = args.get(4).map_or(2 * concurrency, |a| a.parse().unwrap());

    let mock = Arc::new(Mock {
        gauge: Gauge {
            limit: AtomicUsize::new(concurrency),
            ..Gauge::default()
        },
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
    let http = http_client().unwrap();
    let backend = OpenAiChat::new(http.clone(), &base_url, "bench", None, true);
    let client =
        ChatClient::new(vec![Arc::new(backend) as Arc<dyn ChatBackend>], &settings).unwrap();

    let taxonomy = Taxonomy::default_taxonomy();
    let (plan, documents) = common::plan_and_documents(items);
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
        concurrency: in_progress,
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
    let answerer = Answerer::new(
        &retriever,
        &client,
        AnswerSettings::default(),
        Default::default(),
    );
    let stage = AnswerStage {
        benchmark: &benchmark,
        answerer: &answerer,
        answers: &dir.path().join("answers.jsonl"),
        failures: &dir.path().join("answer.failures.jsonl"),
        concurrency: in_progress,
        seed: 1,
    };
    let answer = measure(gauge, || {
        let outcome = runtime.block_on(stage.run(&NoProgress)).unwrap();
        assert_eq!(outcome.written, items);
    });

    // The floor: a bare loop of the same answering requests, prepared once, sent by
    // `concurrency` tasks on the stages' HTTP client (its connections open already), each
    // reply parsed and dropped.
    let body: Vec<u8> = {
        let backend = OpenAiChat::new(http.clone(), &base_url, "bench", None, true);
        let request = hierarag_llm::ChatRequest::new(hierarag_rag::answer_messages(
            "What is the river called?",
            &retriever.0,
            AnswerSettings::default().max_chunk_words,
            Default::default(),
        ));
        serde_json::to_vec(&backend.request_body(&request)).unwrap()
    };
    let bare = measure(gauge, || {
        let url = format!("{base_url}/chat/completions");
        let left = Arc::new(AtomicUsize::new(items));
        runtime.block_on(async {
            let tasks: Vec<_> = (0..concurrency)
                .map(|_| {
                    let (http, url, left, body) =
                        (http.clone(), url.clone(), left.clone(), body.clone());
                    tokio::spawn(async move {
                        while left
                            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                            .is_ok()
                        {
                            let reply = http
                                .post(&url)
                                .header("content-type", "application/json")
                                .body(body.clone())
                                .send()
                                .await
                                .unwrap();
                            let bytes = reply.bytes().await.unwrap();
                            let _: Value = serde_json::from_slice(&bytes).unwrap();
                        }
                    })
                })
                .collect();
            for task in tasks {
                task.await.unwrap();
            }
        });
    });

    let rounds = items.div_ceil(concurrency) as f64;
    println!(
        "{items} items, server delay {} ms, {concurrency} requests in flight allowed, {in_progress} items in progress, response cache {}",
        delay.as_millis(),
        if cache { "on" } else { "off" }
    );
    for (stage, calls_per_item, m) in [
        ("generate (generator + filter)", 2.0, generate),
        ("answer", 1.0, answer),
        ("bare HTTP loop (floor)", 1.0, bare),
    ] {
        let bound = rounds * calls_per_item * m.mean_held_ms / 1e3;
        let nominal = rounds * calls_per_item * delay.as_secs_f64();
        println!(
            "{stage:<30} {:>7.3} s vs server's own {bound:>7.3} s: overhead {:>5.1}% (vs nominal {nominal:.3} s: {:.1}%); {} requests, in flight max {}, mean {:.1}",
            m.seconds,
            (m.seconds / bound - 1.0) * 100.0,
            (m.seconds / nominal - 1.0) * 100.0,
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
        let ramp = m
            .ramp_ms
            .map_or("never".to_string(), |ms| format!("{ms:.2} ms"));
        println!(
            "{:<30} start to first request {:.2} ms, first request to {concurrency} in flight {ramp}, last reply to end {:.2} ms; {} connections opened",
            "", m.startup_ms, m.tail_ms, m.connections,
        );
    }
}
