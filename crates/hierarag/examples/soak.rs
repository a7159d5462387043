//! The soak test of issue 56 (bench/soak.sh; results in docs/benchmarks.md, "Soak"): about
//! 10,000 LLM calls through generate (generator and filter), answer (the builtin pipeline, an
//! http system and a command system) and judge, against a model server that fails 5 % of the
//! attempts (a 500 that quotes the API key, a reply held past the client's timeout after the
//! work was done, a reply cut short, a 503), with three SIGKILLs of `hierarag run` at random
//! moments and one full disk (the run directory on a tmpfs too small for it, grown after the
//! failure), in direct and in batch mode. Each ends byte-identical to a clean run of the same
//! config; the example counts questions lost and duplicated, requests answered twice, the
//! budget against what the server billed, and greps every file of the run directory and the
//! asset store for the key.
//!
//!   cargo build --release -p hierarag && \
//!   cargo run --release -p hierarag --example soak -- target/release/hierarag [QUESTIONS] [SEED]
//!
//! The full disk needs root (a tmpfs is mounted); without it that step is left out and said.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hierarag_test_support::batches::{BatchMock, Ending};
use hierarag_test_support::files_under;
use hierarag_test_support::mock::{MockServer, Reply};
use hierarag_test_support::pipeline::{chat, embeddings, write_corpus};
use serde_json::{Value, json};

const KEY: &str = "sk-soak-4b1d9e7c2a8f6d3e5c0b";
/// Attempts in a hundred that fail.
const FAULT_PERCENT: u64 = 5;
/// The client's timeout; a held reply waits longer than it.
const TIMEOUT_S: f64 = 1.0;

/// splitmix64: the example's one source of randomness, seeded.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// What the server billed and delivered.
#[derive(Default)]
struct Ledger {
    /// Attempts per request body, for the fault draw.
    attempts: HashMap<u64, u64>,
    /// Complete replies delivered per request body (a second one: the request was paid twice).
    delivered: HashMap<u64, u64>,
    /// Prompt and completion tokens of every attempt that did the work (cut and held replies
    /// included).
    billed: u64,
    faults: u64,
    calls: u64,
}

/// The model server: chat completions (with faults when `faults`), embeddings, and `/ask`,
/// the http system's service.
fn start_server(ledger: Arc<Mutex<Ledger>>, faults: bool) -> MockServer {
    MockServer::serve(move |path, body| {
        if path == "/v1/embeddings" {
            return embeddings(body);
        }
        let request = body.to_string();
        let key = hash(&request);
        let mut ledger = ledger.lock().unwrap();
        ledger.calls += 1;
        let attempt = {
            let n = ledger.attempts.entry(key).or_default();
            *n += 1;
            *n
        };
        let draw = mix(key ^ attempt.wrapping_mul(0x5851_f42d_4c95_7f2d));
        let fault = faults && draw % 100 < FAULT_PERCENT;
        let (reply, tokens) = if path == "/ask" {
            let query = body["query"].as_str().unwrap_or("");
            let words: Vec<&str> = query.split_whitespace().take(4).collect();
            let answer = format!("The service says: {}", words.join(" "));
            (
                Reply::json(
                    200,
                    json!({"answer": answer, "sources": [{"text": format!("a passage on {query}")}]}),
                ),
                0,
            )
        } else {
            let reply = chat(body);
            let tokens = billed(&reply);
            (reply, tokens)
        };
        if !fault {
            // The endpoint check each run starts with is sent past the cache by design.
            let check = body["max_tokens"] == 1;
            if !check {
                *ledger.delivered.entry(key).or_default() += 1;
            }
            ledger.billed += tokens;
            return reply;
        }
        ledger.faults += 1;
        match (draw / 100) % 4 {
            // A gateway that quotes the key back.
            0 => Reply::json(
                500,
                json!({"error": {"message": format!("upstream error for key {KEY}")}}),
            ),
            // The work done, the reply held past the client's timeout.
            1 => {
                ledger.billed += tokens;
                Reply::slow(Duration::from_secs_f64(TIMEOUT_S * 2.0), reply)
            }
            // The work done, the reply cut short.
            2 => {
                ledger.billed += tokens;
                Reply::Truncated
            }
            _ => Reply::json(503, json!({"error": {"message": "overloaded"}})),
        }
    })
}

/// The tokens a reply bills: its usage's total.
fn billed(reply: &Reply) -> u64 {
    match reply {
        Reply::Json { body, .. } => body["usage"]["total_tokens"].as_u64().unwrap_or(0),
        Reply::Slow { then, .. } => billed(then),
        _ => 0,
    }
}

/// The batch API's reply to one request of a batch, billed to `ledger`.
fn batch_reply(ledger: Arc<Mutex<Ledger>>) -> impl Fn(&str, &Value) -> Reply + Send + Sync {
    move |_, body| {
        let reply = chat(body);
        let mut ledger = ledger.lock().unwrap();
        ledger.billed += billed(&reply);
        *ledger.delivered.entry(hash(&body.to_string())).or_default() += 1;
        reply
    }
}

/// The command system: answers each question at once, from its words.
const PROGRAM: &str = r#"
import json, sys
for line in sys.stdin:
    q = json.loads(line)
    words = q["question"].split()
    reply = {"id": q["id"], "answer": "The program says " + " ".join(words[2:5]),
             "contexts": [{"text": "context for " + q["question"]}]}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
"#;

/// The run config: rq1 over the corpus, the builtin pipeline, the http and command systems,
/// the judge, and a budget of `max_tokens`.
#[allow(clippy::too_many_arguments)]
fn write_config(
    dir: &Path,
    name: &str,
    corpus: &Path,
    run: &Path,
    llm_url: &str,
    plain_url: &str,
    per_dimension: usize,
    batch: bool,
    max_tokens: Option<u64>,
) -> PathBuf {
    let program = dir.join("program.py");
    std::fs::write(&program, PROGRAM).unwrap();
    let batch = if batch {
        "batch = true\nbatch_poll_s = 0.05\n"
    } else {
        ""
    };
    let budget = max_tokens.map_or(String::new(), |max| {
        format!("\n[budget]\nmax_tokens = {max}\n")
    });
    let service = format!("{}/ask", plain_url.trim_end_matches("/v1"));
    let config = format!(
        r#"[run]
dir = "{run}"
seed = 11

[corpus]
inputs = ["{corpus}"]

[design]
kind = "rq1"
per_dimension = {per_dimension}

[generate]
candidates = 3

[answer]
top_k = 5

[llm]
backend = "openai"
model = "soak-1"
base_urls = ["{llm_url}"]
api_key_env = "SOAK_KEY"
concurrency = 16
timeout_s = {TIMEOUT_S}
max_attempts = 12
backoff_s = 0.01
max_backoff_s = 0.05
{batch}
[embeddings]
backend = "openai"
model = "soak-embed"
base_urls = ["{plain_url}"]
batch_size = 64

[judge]

[[system]]
name = "bm25"
kind = "builtin"

[[system]]
name = "service"
kind = "http"
url = "{service}"
body = {{ query = "{{question}}" }}
answer = "/answer"
contexts = "/sources"
context_text = "/text"
concurrency = 16
timeout_s = {TIMEOUT_S}
max_attempts = 12
backoff_s = 0.01
max_backoff_s = 0.05
headers = {{ Authorization = "Bearer ${{SOAK_KEY}}" }}

[[system]]
name = "program"
kind = "command"
command = ["python3", "{program}"]
concurrency = 8
{budget}"#,
        run = run.display(),
        corpus = corpus.display(),
        program = program.display(),
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, config).unwrap();
    path
}

fn hierarag(bin: &Path, config: &Path, home: &Path) -> Command {
    let mut command = Command::new(bin);
    command
        .args(["run", "-q"])
        .arg(config)
        .env("SOAK_KEY", KEY)
        .env("HIERARAG_HOME", home)
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command
}

/// Runs to the end; (exit code, stderr).
fn run(bin: &Path, config: &Path, home: &Path) -> (Option<i32>, String) {
    let out = hierarag(bin, config, home).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Starts a run and SIGKILLs it after `after`; whether it was still running.
fn kill_after(bin: &Path, config: &Path, home: &Path, after: Duration) -> bool {
    let mut child = hierarag(bin, config, home)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + after;
    while Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    true
}

/// The files a run's result is: its plan, benchmark and analysis, and each system's answers,
/// scores and grades.
fn outputs() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = [
        "plan.jsonl",
        "taxonomy.toml",
        "benchmark.jsonl",
        "rejects.jsonl",
        "analysis.json",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    for system in ["bm25", "service", "program"] {
        for file in ["answers.jsonl", "scores.jsonl", "judgements.jsonl"] {
            files.push(Path::new("systems").join(system).join(file));
        }
    }
    files
}

fn holding_key(roots: &[&Path]) -> Vec<PathBuf> {
    roots
        .iter()
        .flat_map(|root| files_under(root))
        .filter(|path| {
            std::fs::read(path)
                .map(|bytes| bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()))
                .unwrap_or(false)
        })
        .collect()
}

fn lines(path: &Path) -> usize {
    std::fs::read(path)
        .map(|b| b.iter().filter(|&&c| c == b'\n').count())
        .unwrap_or(0)
}

fn du(path: &Path) -> u64 {
    files_under(path)
        .iter()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .sum()
}

fn mount_tmpfs(dir: &Path, bytes: u64, remount: bool) -> bool {
    let options = if remount {
        format!("remount,size={bytes}")
    } else {
        format!("size={bytes}")
    };
    Command::new("mount")
        .args(["-t", "tmpfs", "-o", &options, "tmpfs"])
        .arg(dir)
        .status()
        .is_ok_and(|s| s.success())
}

#[allow(clippy::too_many_lines)]
fn soak(bin: &Path, root: &Path, per_dimension: usize, seed: u64, batch: bool) {
    let mode = if batch { "batch" } else { "direct" };
    let dir = root.join(mode);
    std::fs::create_dir_all(&dir).unwrap();
    let corpus = write_corpus(&dir, per_dimension * 4 + 40, None);
    let home = dir.join("home");

    // The clean run, against a server without faults.
    let clean_ledger = Arc::new(Mutex::new(Ledger::default()));
    let clean_server = start_server(Arc::clone(&clean_ledger), false);
    let clean_batches = batch
        .then(|| BatchMock::serve_with(Ending::default(), batch_reply(Arc::clone(&clean_ledger))));
    let clean_run = dir.join("clean");
    let llm_url = clean_batches
        .as_ref()
        .map_or_else(|| clean_server.v1(), BatchMock::v1);
    let config = write_config(
        &dir,
        "clean",
        &corpus,
        &clean_run,
        &llm_url,
        &clean_server.v1(),
        per_dimension,
        batch,
        None,
    );
    let started = Instant::now();
    let (code, stderr) = run(bin, &config, &home);
    assert_eq!(code, Some(0), "the clean run: {stderr}");
    let clean_seconds = started.elapsed().as_secs_f64();
    let clean_billed = clean_ledger.lock().unwrap().billed;
    let clean_calls = clean_ledger.lock().unwrap().calls
        + clean_batches.as_ref().map_or(0, |m| m.requests() as u64);

    // The soak: faults, a full disk, three kills, then to the end.
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let server = start_server(Arc::clone(&ledger), true);
    let batches = batch.then(|| {
        BatchMock::serve_with(
            Ending {
                fail_creates: 2,
                error_every: Some(20),
                ..Ending::default()
            },
            batch_reply(Arc::clone(&ledger)),
        )
    });
    let disk = dir.join("disk");
    std::fs::create_dir_all(&disk).unwrap();
    let soaked = disk.join("run");
    let budget = 3 * clean_billed.max(1);
    let llm_url = batches.as_ref().map_or_else(|| server.v1(), BatchMock::v1);
    let config = write_config(
        &dir,
        "soak",
        &corpus,
        &soaked,
        &llm_url,
        &server.v1(),
        per_dimension,
        batch,
        Some(budget),
    );
    let started = Instant::now();
    let mut invocations = 0;
    let mut events = Vec::new();
    let clean_size = du(&clean_run);
    if mount_tmpfs(&disk, clean_size / 3, false) {
        invocations += 1;
        let (code, stderr) = run(bin, &config, &home);
        let last = stderr.lines().last().unwrap_or("").to_owned();
        events.push(format!(
            "disk of {} KB (a third of the clean run's {} KB): exit {code:?}, {last}",
            clean_size / 3 / 1024,
            clean_size / 1024
        ));
        assert!(
            mount_tmpfs(&disk, clean_size * 8, true),
            "growing the tmpfs"
        );
    } else {
        events.push("the full disk left out: mounting a tmpfs needs root".into());
    }
    let mut draw = mix(seed ^ u64::from(batch));
    for kill in 1..=3 {
        draw = mix(draw);
        let after = Duration::from_millis(1_000 + draw % (clean_seconds * 600.0) as u64);
        invocations += 1;
        let killed = kill_after(bin, &config, &home, after);
        events.push(format!(
            "SIGKILL {kill} after {:.1} s: {}",
            after.as_secs_f64(),
            if killed {
                "killed"
            } else {
                "the run had ended"
            }
        ));
    }
    let mut code = None;
    for _ in 0..4 {
        invocations += 1;
        let (exit, stderr) = run(bin, &config, &home);
        code = exit;
        if exit == Some(0) {
            break;
        }
        events.push(format!(
            "a rerun exited {exit:?}: {}",
            stderr.lines().last().unwrap_or("")
        ));
    }
    let soak_seconds = started.elapsed().as_secs_f64();
    assert_eq!(code, Some(0), "the soaked run did not finish: {events:#?}");

    // Byte for byte, and the counts.
    // The http system's answers name its URL, whose port is the server's: the soaked run's is
    // read as the clean run's.
    let same_url = |bytes: Vec<u8>| {
        String::from_utf8_lossy(&bytes)
            .replace(
                server.v1().trim_end_matches("/v1"),
                clean_server.v1().trim_end_matches("/v1"),
            )
            .into_bytes()
    };
    let mut differing = Vec::new();
    for file in outputs() {
        let (a, b) = (
            std::fs::read(clean_run.join(&file)).ok(),
            std::fs::read(soaked.join(&file)).ok().map(same_url),
        );
        if a.is_none() || a != b {
            differing.push(file.display().to_string());
        }
    }
    let questions = lines(&clean_run.join("benchmark.jsonl"));
    let ids: Vec<String> = std::fs::read_to_string(soaked.join("benchmark.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let unique: std::collections::HashSet<&String> = ids.iter().collect();
    // What the budget counts: its journal, which killed runs wrote to as they went.
    let spent = hierarag_llm::Budget::journaled(None, None, &soaked.join("spend.jsonl"), (0.0, 0))
        .unwrap()
        .spent()
        .1;
    let ledger = ledger.lock().unwrap();
    let twice = ledger.delivered.values().filter(|&&n| n > 1).count();
    // A request of a batch whose result was an error is submitted again (and billed once).
    let submitted_twice = batches.as_ref().map_or(0, |m| {
        let ids = m.custom_ids();
        let unique: std::collections::HashSet<&String> = ids.iter().collect();
        ids.len() - unique.len()
    });
    let holding = holding_key(&[&soaked, &home]);
    let batch_calls = batches.as_ref().map_or(0, |m| m.requests() as u64);
    println!("== soak, {mode} mode");
    println!(
        "questions {questions}; LLM and service calls: clean {clean_calls}, soaked {} ({} faults \
injected, {:.1} %)",
        ledger.calls + batch_calls,
        ledger.faults,
        100.0 * ledger.faults as f64 / ledger.calls.max(1) as f64
    );
    for event in &events {
        println!("  {event}");
    }
    println!(
        "invocations {invocations}; wall: clean {clean_seconds:.1} s, soaked {soak_seconds:.1} s"
    );
    println!(
        "outputs differing from the clean run: {} of {} {differing:?}",
        differing.len(),
        outputs().len()
    );
    println!(
        "questions lost {}, duplicated {}",
        questions.saturating_sub(unique.len()),
        ids.len() - unique.len()
    );
    println!(
        "requests answered twice: {twice} (in flight when a kill came: answered, never received \
or stored); batch requests submitted again after an error result: {submitted_twice}"
    );
    println!(
        "budget max_tokens {budget}: spent as the budget counts it (spend.jsonl) {spent}, billed by \
the server {} (clean run {clean_billed}); the budget counts at least what was billed: {}; \
passed: {}",
        ledger.billed,
        spent >= ledger.billed,
        spent > budget || ledger.billed > budget
    );
    println!(
        "files holding the key (run directory, asset store): {}",
        holding.len()
    );
    for path in &holding {
        println!("  {}", path.display());
    }
    if std::env::var_os("SOAK_KEEP").is_none() {
        let _ = Command::new("umount")
            .arg(&disk)
            .stderr(Stdio::null())
            .status();
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bin = PathBuf::from(args.first().expect("the hierarag binary's path"));
    let questions: usize = args.get(1).map_or(1_650, |a| a.parse().unwrap());
    let seed: u64 = args.get(2).map_or(7, |a| a.parse().unwrap());
    let root = tempfile::tempdir().unwrap();
    if std::env::var_os("SOAK_KEEP").is_some() {
        eprintln!("kept: {}", root.path().display());
    }
    let per_dimension = questions.div_ceil(4);
    for batch in [false, true] {
        soak(&bin, root.path(), per_dimension, seed, batch);
    }
    if std::env::var_os("SOAK_KEEP").is_some() {
        let _ = root.keep();
    }
}
