//! Wall time of a `kind = "http"` system against a service that holds each request a fixed
//! time, against the service's own time, in one run (docs/benchmarks.md, "HTTP systems").
//!
//! ```sh
//! cargo build --release -p hierarag
//! cargo run --release -p hierarag-pipeline --example bench_http_system -- [QUESTIONS] [HOLD_MS] [CONCURRENCY] [BIN]
//! ```
//!
//! With C requests in flight and a service that holds each request H, N questions cannot be
//! answered before ⌈N / C⌉ × H, the service's own time; the overhead printed is the wall time
//! of `hierarag answer` (run as a user runs it, in its own process: its start, reading the
//! benchmark, the requests, the journal, its end) over that bound, minus one. H is what the
//! service measured, from a request's last byte read to its reply written.
//!
//! The service is the method of `bench_stages`, with its timer (`common`): a minimal HTTP/1.1
//! responder (keep-alive) on its own single-threaded runtime, replies released by a timer
//! thread at their deadlines (tokio's own timer rounds each sleep up to a whole millisecond),
//! so that its own work is microseconds a request. It also reports the time from a reply to the
//! next request on the same connection (the client's turnaround, paid once a round).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;

mod common;
use common::{Timer, parse_head};

#[derive(Default)]
struct Service {
    hold: Duration,
    timer: Timer,
    requests: AtomicUsize,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    held_ns: AtomicU64,
    first_arrival: Mutex<Option<Instant>>,
    last_reply: Mutex<Option<Instant>>,
    turnarounds_us: Mutex<Vec<u64>>,
}

/// A reply in the shape of the config below: an answer and one source with a document id.
const REPLY_BODY: &str =
    r#"{"answer":"an answer","sources":[{"text":"t","metadata":{"doc_id":"doc-1"}}]}"#;

async fn serve(service: Arc<Service>, mut stream: tokio::net::TcpStream) {
    stream.set_nodelay(true).unwrap();
    let reply = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{REPLY_BODY}",
        REPLY_BODY.len()
    )
    .into_bytes();
    let mut buffer: Vec<u8> = Vec::with_capacity(1 << 14);
    let mut replied: Option<Instant> = None;
    loop {
        let (head, length) = loop {
            if let Some(parsed) = parse_head(&buffer) {
                break parsed;
            }
            let before = buffer.len();
            if stream.read_buf(&mut buffer).await.unwrap_or(0) == 0 {
                return;
            }
            if before == 0
                && let Some(replied) = replied.take()
            {
                let gap = replied.elapsed().as_micros() as u64;
                service.turnarounds_us.lock().unwrap().push(gap);
            }
        };
        while buffer.len() < head + length {
            if stream.read_buf(&mut buffer).await.unwrap_or(0) == 0 {
                return;
            }
        }
        let arrived = Instant::now();
        service.first_arrival.lock().unwrap().get_or_insert(arrived);
        let now = service.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        service.max_in_flight.fetch_max(now, Ordering::SeqCst);
        service.requests.fetch_add(1, Ordering::SeqCst);
        buffer.drain(..head + length);
        let (waker, alarm) = oneshot::channel();
        service.timer.set(arrived + service.hold, waker);
        alarm.await.expect("the timer wakes every alarm");
        service.in_flight.fetch_sub(1, Ordering::SeqCst);
        if stream.write_all(&reply).await.is_err() {
            return;
        }
        let sent = Instant::now();
        service
            .held_ns
            .fetch_add((sent - arrived).as_nanos() as u64, Ordering::SeqCst);
        *service.last_reply.lock().unwrap() = Some(sent);
        replied = Some(sent);
    }
}

/// Starts the service on its own threads; returns its port.
fn start(service: Arc<Service>) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let timer = Arc::clone(&service);
    std::thread::Builder::new()
        .name("service-timer".into())
        .spawn(move || timer.timer.run())
        .unwrap();
    std::thread::Builder::new()
        .name("service".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                loop {
                    let (stream, _) = listener.accept().await.unwrap();
                    tokio::spawn(serve(Arc::clone(&service), stream));
                }
            });
        })
        .unwrap();
    port
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let questions: usize = args.first().map_or(3200, |a| a.parse().expect("QUESTIONS"));
    let hold_ms: f64 = args.get(1).map_or(100.0, |a| a.parse().expect("HOLD_MS"));
    let concurrency: usize = args.get(2).map_or(64, |a| a.parse().expect("CONCURRENCY"));
    let bin = args
        .get(3)
        .cloned()
        .unwrap_or_else(|| "target/release/hierarag".into());
    let service = Arc::new(Service {
        hold: Duration::from_secs_f64(hold_ms / 1000.0),
        ..Service::default()
    });
    let port = start(Arc::clone(&service));

    let dir = tempfile::tempdir().unwrap();
    let mut benchmark = String::new();
    for i in 0..questions {
        benchmark.push_str(
            &serde_json::json!({
                "id": format!("q{i:06}"), "question": format!("What is item {i}?"),
                "answer": "ref", "doc_ids": ["doc-1"], "design": "rq1", "set": "qc",
                "categories": [{"dimension": "qc", "level": "coarse", "category": "simple"}],
                "persona": {}, "generator": {"backend": "b", "model": "m", "params": {}},
                "candidates_considered": 1, "attempts": 1,
                "filter": {"enabled": false, "passed": 1, "judged": 1}
            })
            .to_string(),
        );
        benchmark.push('\n');
    }
    std::fs::write(dir.path().join("benchmark.jsonl"), benchmark).unwrap();
    std::fs::write(
        dir.path().join("run.toml"),
        format!(
            "[[system]]\nname = \"service\"\nkind = \"http\"\nurl = \"http://127.0.0.1:{port}/ask\"\n\
body = {{ query = \"{{question}}\", id = \"{{id}}\" }}\ncontexts = \"/sources\"\n\
context_doc_id = \"/metadata/doc_id\"\nconcurrency = {concurrency}\n"
        ),
    )
    .unwrap();

    let started = Instant::now();
    let status = std::process::Command::new(&bin)
        .args(["answer", "-q", "--benchmark"])
        .arg(dir.path().join("benchmark.jsonl"))
        .arg("--config")
        .arg(dir.path().join("run.toml"))
        .arg("--out")
        .arg(dir.path().join("out"))
        .status()
        .unwrap_or_else(|e| panic!("running {bin}: {e}"));
    let ended = Instant::now();
    assert!(status.success(), "{bin} answer failed");
    let answers =
        std::fs::read_to_string(dir.path().join("out/systems/service/answers.jsonl")).unwrap();
    assert_eq!(answers.lines().count(), questions);

    let requests = service.requests.load(Ordering::SeqCst);
    assert_eq!(requests, questions, "one request a question");
    let held = service.held_ns.load(Ordering::SeqCst) as f64 / requests as f64 / 1e9;
    let rounds = questions.div_ceil(concurrency);
    let bound = rounds as f64 * held;
    let wall = (ended - started).as_secs_f64();
    let first = service.first_arrival.lock().unwrap().unwrap();
    let last = service.last_reply.lock().unwrap().unwrap();
    let serving = (last - first).as_secs_f64();
    let mut turnarounds = service.turnarounds_us.lock().unwrap().clone();
    turnarounds.sort_unstable();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "{questions} questions, {concurrency} in flight (the service saw at most {}), {cores} cores",
        service.max_in_flight.load(Ordering::SeqCst)
    );
    println!(
        "  the service held each request {:.2} ms on average (asked for {hold_ms:.0} ms)",
        held * 1000.0
    );
    println!(
        "  the service's own time: {rounds} rounds × {:.2} ms = {bound:.3} s",
        held * 1000.0
    );
    println!(
        "  start to first request {:.3} s; first request to last reply {serving:.3} s ({:+.2} %); \
last reply to exit {:.3} s",
        (first - started).as_secs_f64(),
        100.0 * (serving / bound - 1.0),
        (ended - last).as_secs_f64()
    );
    if !turnarounds.is_empty() {
        println!(
            "  from a reply to the next request on its connection: median {:.2} ms, 95th percentile {:.2} ms",
            turnarounds[turnarounds.len() / 2] as f64 / 1000.0,
            turnarounds[turnarounds.len() * 95 / 100] as f64 / 1000.0
        );
    }
    println!(
        "  hierarag answer (http): {wall:.3} s, {:+.2} % over the service's own time (target within 2 %)",
        100.0 * (wall / bound - 1.0)
    );
}
