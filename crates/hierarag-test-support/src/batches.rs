//! A mock of the providers' batch APIs, written from their API references: OpenAI's files and
//! batches (`POST /v1/files` multipart with `purpose` and `file`, `POST /v1/batches`, `GET
//! /v1/batches/{id}`, `POST /v1/batches/{id}/cancel`, `GET /v1/files/{id}/content`) and
//! Anthropic's Message Batches (`POST /v1/messages/batches`, `GET /v1/messages/batches/{id}`,
//! `GET /v1/messages/batches/{id}/results`, `POST /v1/messages/batches/{id}/cancel`). A batch
//! stays in progress for a number of polls, then runs its requests through a reply function
//! (the mock chat server's by default) and ends as the test asked: completed, expired part-way,
//! or cancelled. The official `openai` and `anthropic` SDKs drive it in the tests, so that the
//! mock is the API as they read it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Multipart, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::mock::{DefaultReply, Reply, default_reply};

/// How every batch of the mock ends.
#[derive(Debug, Clone, PartialEq)]
pub struct Ending {
    /// Polls (`GET` of the batch) that find it in progress before it ends.
    pub polls: usize,
    /// Requests run before it ends; the others expire (`expired`). `None`: all run.
    pub run: Option<usize>,
    /// Ends `cancelled` (OpenAI) / `canceled` requests (Anthropic) instead of expired.
    pub cancel: bool,
    /// Every `n`-th request (1-based) gets an error result instead of a reply.
    pub error_every: Option<usize>,
    /// Time the mock takes to run one request (its "own processing time").
    pub per_request: Duration,
    /// The `n`-th line (1-based) of every batch's output is spoiled: cut in half, with a byte
    /// that is not UTF-8 in place of the rest (a provider's bad line).
    pub spoil_line: Option<usize>,
    /// The first `n` creates of a batch (OpenAI's `POST /v1/batches`) make the batch and then
    /// answer 500, as a provider that failed after the work was done.
    pub fail_creates: usize,
    /// How long a create takes after it made the batch, before it answers (a crash lands
    /// while it is in flight).
    pub create_delay: Duration,
}

impl Default for Ending {
    fn default() -> Ending {
        Ending {
            polls: 1,
            run: None,
            cancel: false,
            error_every: None,
            per_request: Duration::ZERO,
            spoil_line: None,
            fail_creates: 0,
            create_delay: Duration::ZERO,
        }
    }
}

struct Batch {
    /// (custom_id, request body) in input order.
    requests: Vec<(String, Value)>,
    anthropic: bool,
    polls: usize,
    created_at: u64,
    /// Once ended: the state, the output lines, the error lines.
    ended: Option<(String, String, String)>,
    /// The `metadata` it was created with (OpenAI).
    metadata: Value,
    /// The line of the output to spoil ([`Ending::spoil_line`]), fixed when the batch ended.
    spoil_line: Option<usize>,
    cancel_requested: bool,
    /// The input file (OpenAI; empty for Anthropic).
    input_file_id: String,
}

struct BatchState {
    root: String,
    reply: Box<DefaultReply>,
    ending: Mutex<Ending>,
    files: Mutex<HashMap<String, Vec<u8>>>,
    batches: Mutex<HashMap<String, Batch>>,
    next_id: AtomicUsize,
    submitted: AtomicUsize,
    polls: AtomicUsize,
    /// Time spent running requests (the processing the test measures overhead against).
    processing: Mutex<Duration>,
    /// Time spent answering the API's calls (the processing, reading uploads and writing
    /// results included).
    busy: Arc<Mutex<Duration>>,
}

/// A running batch mock for the rest of the test process.
#[derive(Clone)]
pub struct BatchMock {
    /// `http://127.0.0.1:PORT`
    pub root: String,
    state: Arc<BatchState>,
}

impl std::fmt::Debug for BatchMock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchMock")
            .field("root", &self.root)
            .finish()
    }
}

impl BatchMock {
    /// A mock whose batches answer each request as the mock chat server does.
    pub fn serve(ending: Ending) -> BatchMock {
        BatchMock::serve_with(ending, default_reply)
    }

    /// A mock whose batches answer each request (path `/v1/chat/completions` or `/v1/messages`,
    /// and its body) with `reply`'s JSON body and status; the chat endpoints answer with it too.
    pub fn serve_with(
        ending: Ending,
        reply: impl Fn(&str, &Value) -> Reply + Send + Sync + 'static,
    ) -> BatchMock {
        // The router reads its state from a slot filled once the address is known; no client
        // has the address before this returns.
        let slot: Shared = Arc::new(Mutex::new(None));
        let busy = Arc::new(Mutex::new(Duration::ZERO));
        let root = format!(
            "http://{}",
            crate::serve(router(Arc::clone(&slot), Arc::clone(&busy)))
        );
        let state = Arc::new(BatchState {
            root: root.clone(),
            reply: Box::new(reply),
            ending: Mutex::new(ending),
            files: Mutex::new(HashMap::new()),
            batches: Mutex::new(HashMap::new()),
            next_id: AtomicUsize::new(1),
            submitted: AtomicUsize::new(0),
            polls: AtomicUsize::new(0),
            processing: Mutex::new(Duration::ZERO),
            busy,
        });
        *slot.lock().unwrap() = Some(Arc::clone(&state));
        BatchMock { root, state }
    }

    /// The OpenAI-style base URL, `http://127.0.0.1:PORT/v1`.
    pub fn v1(&self) -> String {
        format!("{}/v1", self.root)
    }

    /// Batches submitted so far.
    pub fn submitted(&self) -> usize {
        self.state.submitted.load(Ordering::SeqCst)
    }

    /// Requests over all batches submitted so far.
    pub fn requests(&self) -> usize {
        let batches = self.state.batches.lock().unwrap();
        batches.values().map(|b| b.requests.len()).sum()
    }

    /// The custom_id of every request submitted, over all batches, in submission order.
    pub fn custom_ids(&self) -> Vec<String> {
        let batches = self.state.batches.lock().unwrap();
        let mut ids: Vec<(&String, &Batch)> = batches.iter().collect();
        // Batch ids end in the mock's counter.
        ids.sort_by_key(|(id, _)| {
            id.rsplit('_')
                .next()
                .and_then(|n| n.parse::<usize>().ok())
                .unwrap_or(0)
        });
        ids.iter()
            .flat_map(|(_, b)| b.requests.iter().map(|(custom_id, _)| custom_id.clone()))
            .collect()
    }

    /// Status polls so far.
    pub fn polls(&self) -> usize {
        self.state.polls.load(Ordering::SeqCst)
    }

    /// Time the mock spent running requests.
    pub fn processing(&self) -> Duration {
        *self.state.processing.lock().unwrap()
    }

    /// Time the mock spent in its handlers: running requests, reading uploads, writing
    /// results (a client's overhead is its wall time beyond this).
    pub fn busy(&self) -> Duration {
        *self.state.busy.lock().unwrap()
    }

    /// How batches end from now on.
    /// Forgets every batch, as a provider does past its retention: a look-up answers 404.
    pub fn forget_batches(&self) {
        self.state.batches.lock().unwrap().clear();
    }

    pub fn set_ending(&self, ending: Ending) {
        *self.state.ending.lock().unwrap() = ending;
    }
}

type Shared = Arc<Mutex<Option<Arc<BatchState>>>>;

fn state_of(slot: &Shared) -> Arc<BatchState> {
    slot.lock()
        .unwrap()
        .clone()
        .expect("the mock is set up before it is called")
}

fn router(slot: Shared, busy: Arc<Mutex<Duration>>) -> Router {
    Router::new()
        .route("/v1/files", post(upload))
        .route("/v1/files/{id}/content", get(file_content))
        .route("/v1/batches", post(create_openai).get(list_openai))
        .route("/v1/batches/{id}", get(retrieve_openai))
        .route("/v1/batches/{id}/cancel", post(cancel_openai))
        .route("/v1/messages/batches", post(create_anthropic))
        .route("/v1/messages/batches/{id}", get(retrieve_anthropic))
        .route("/v1/messages/batches/{id}/results", get(results_anthropic))
        .route("/v1/messages/batches/{id}/cancel", post(cancel_anthropic))
        .route("/v1/chat/completions", post(chat))
        .route("/v1/messages", post(messages))
        // The providers' limits on a batch's input (OpenAI 200 MB a file, Anthropic 256 MB).
        .layer(axum::extract::DefaultBodyLimit::max(256_000_000))
        .layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                let busy = Arc::clone(&busy);
                async move {
                    let started = Instant::now();
                    let response = next.run(request).await;
                    *busy.lock().unwrap() += started.elapsed();
                    response
                }
            },
        ))
        .with_state(slot)
}

fn now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn error(status: StatusCode, message: &str) -> Response {
    (
        status,
        axum::Json(json!({"error": {"type": "invalid_request_error", "message": message}})),
    )
        .into_response()
}

fn reply_json(reply: Reply) -> (u16, Value) {
    match reply {
        Reply::Json { status, body, .. } => (status, body),
        Reply::Slow { then, .. } => reply_json(*then),
        other => (500, json!({"error": {"message": format!("{other:?}")}})),
    }
}

async fn chat(State(slot): State<Shared>, axum::Json(body): axum::Json<Value>) -> Response {
    let (status, body) = reply_json((state_of(&slot).reply)("/v1/chat/completions", &body));
    (StatusCode::from_u16(status).unwrap(), axum::Json(body)).into_response()
}

async fn messages(State(slot): State<Shared>, axum::Json(body): axum::Json<Value>) -> Response {
    let (status, body) = reply_json((state_of(&slot).reply)("/v1/messages", &body));
    (StatusCode::from_u16(status).unwrap(), axum::Json(body)).into_response()
}

async fn upload(State(slot): State<Shared>, mut form: Multipart) -> Response {
    let state = state_of(&slot);
    let (mut purpose, mut file, mut filename) = (None, None, String::from("upload.jsonl"));
    while let Ok(Some(field)) = form.next_field().await {
        match field.name() {
            Some("purpose") => purpose = field.text().await.ok(),
            Some("file") => {
                if let Some(name) = field.file_name() {
                    filename = name.to_string();
                }
                file = field.bytes().await.ok().map(|b| b.to_vec());
            }
            _ => {}
        }
    }
    let (Some(purpose), Some(file)) = (purpose, file) else {
        return error(StatusCode::BAD_REQUEST, "purpose and file are required");
    };
    if purpose != "batch" {
        return error(
            StatusCode::BAD_REQUEST,
            "this mock takes purpose=batch only",
        );
    }
    let id = format!("file-{}", state.next_id.fetch_add(1, Ordering::SeqCst));
    let bytes = file.len();
    state.files.lock().unwrap().insert(id.clone(), file);
    axum::Json(json!({
        "id": id, "object": "file", "bytes": bytes, "created_at": now_s(),
        "filename": filename, "purpose": "batch", "status": "processed",
    }))
    .into_response()
}

async fn file_content(State(slot): State<Shared>, Path(id): Path<String>) -> Response {
    match state_of(&slot).files.lock().unwrap().get(&id) {
        Some(bytes) => (
            [("content-type", "application/octet-stream")],
            bytes.clone(),
        )
            .into_response(),
        None => error(StatusCode::NOT_FOUND, &format!("no file {id}")),
    }
}

async fn create_openai(
    State(slot): State<Shared>,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let state = state_of(&slot);
    if body["endpoint"] != "/v1/chat/completions" || body["completion_window"] != "24h" {
        return error(
            StatusCode::BAD_REQUEST,
            "endpoint must be /v1/chat/completions and completion_window 24h",
        );
    }
    let Some(file) = body["input_file_id"]
        .as_str()
        .and_then(|id| state.files.lock().unwrap().get(id).cloned())
    else {
        return error(StatusCode::BAD_REQUEST, "no such input_file_id");
    };
    let mut requests = Vec::new();
    for (n, line) in String::from_utf8_lossy(&file).lines().enumerate() {
        let Ok(line) = serde_json::from_str::<Value>(line) else {
            return error(
                StatusCode::BAD_REQUEST,
                &format!("line {} is not JSON", n + 1),
            );
        };
        let well_formed = line["custom_id"].is_string()
            && line["method"] == "POST"
            && line["url"] == "/v1/chat/completions"
            && line["body"].is_object();
        if !well_formed {
            return error(
                StatusCode::BAD_REQUEST,
                &format!("line {}: custom_id, method POST, url, body", n + 1),
            );
        }
        requests.push((
            line["custom_id"].as_str().unwrap().to_string(),
            line["body"].clone(),
        ));
    }
    let id = format!("batch_{}", state.next_id.fetch_add(1, Ordering::SeqCst));
    let batch = Batch {
        requests,
        anthropic: false,
        polls: 0,
        created_at: now_s(),
        ended: None,
        metadata: body["metadata"].clone(),
        spoil_line: None,
        cancel_requested: false,
        input_file_id: body["input_file_id"].as_str().unwrap().to_string(),
    };
    let object = openai_object(&id, &batch);
    state.batches.lock().unwrap().insert(id, batch);
    let created = state.submitted.fetch_add(1, Ordering::SeqCst);
    let ending = state.ending.lock().unwrap().clone();
    tokio::time::sleep(ending.create_delay).await;
    if created < ending.fail_creates {
        return error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "mock: the batch was made, then this",
        );
    }
    axum::Json(object).into_response()
}

/// `GET /v1/batches`: the batches, newest first, `limit` of them after `after`.
async fn list_openai(State(slot): State<Shared>, uri: axum::http::Uri) -> Response {
    let query: HashMap<&str, &str> = uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .collect();
    let state = state_of(&slot);
    let batches = state.batches.lock().unwrap();
    let mut ids: Vec<&String> = batches
        .keys()
        .filter(|id| !batches[*id].anthropic)
        .collect();
    // Newest first: by the number in `batch_N`.
    ids.sort_by_key(|id| {
        std::cmp::Reverse(
            id.trim_start_matches("batch_")
                .parse::<usize>()
                .unwrap_or(0),
        )
    });
    let start = query
        .get("after")
        .and_then(|after| ids.iter().position(|id| id == after).map(|at| at + 1))
        .unwrap_or(0);
    let limit: usize = query
        .get("limit")
        .and_then(|l| l.parse().ok())
        .unwrap_or(20);
    let page: Vec<Value> = ids
        .iter()
        .skip(start)
        .take(limit)
        .map(|id| openai_object(id, &batches[*id]))
        .collect();
    let has_more = start + page.len() < ids.len();
    axum::Json(json!({"object": "list", "data": page, "has_more": has_more})).into_response()
}

fn openai_object(id: &str, batch: &Batch) -> Value {
    let input_file_id = batch.input_file_id.as_str();
    let total = batch.requests.len();
    let (status, output, errors) = match &batch.ended {
        Some((state, _, _)) => (
            state.as_str(),
            Some(format!("{id}-output")),
            Some(format!("{id}-errors")),
        ),
        None if batch.cancel_requested => ("cancelling", None, None),
        None if batch.polls == 0 => ("validating", None, None),
        None => ("in_progress", None, None),
    };
    json!({
        "id": id, "object": "batch", "endpoint": "/v1/chat/completions", "errors": null,
        "input_file_id": input_file_id, "completion_window": "24h", "status": status,
        "output_file_id": output, "error_file_id": errors, "created_at": batch.created_at,
        "request_counts": {"total": total, "completed": 0, "failed": 0},
        "metadata": batch.metadata,
    })
}

/// Runs a batch's requests once its polls are spent (or at once when cancelled): the output
/// and error lines in each provider's format.
fn advance(state: &BatchState, batch: &mut Batch) {
    if batch.ended.is_some() {
        return;
    }
    let ending = state.ending.lock().unwrap().clone();
    batch.polls += 1;
    if batch.polls <= ending.polls && !batch.cancel_requested {
        return;
    }
    let cancelled = ending.cancel || batch.cancel_requested;
    let run = ending.run.unwrap_or(usize::MAX);
    let (mut output, mut errors) = (String::new(), String::new());
    for (n, (custom_id, body)) in batch.requests.iter().enumerate() {
        let line = if n < run && !(batch.cancel_requested && ending.run.is_none()) {
            let started = Instant::now();
            std::thread::sleep(ending.per_request);
            let failed = ending.error_every.is_some_and(|every| (n + 1) % every == 0);
            let (status, reply) = if failed {
                (
                    400,
                    json!({"error": {"message": "mock: this request is refused"}}),
                )
            } else if batch.anthropic {
                reply_json((state.reply)("/v1/messages", body))
            } else {
                reply_json((state.reply)("/v1/chat/completions", body))
            };
            *state.processing.lock().unwrap() += started.elapsed();
            if batch.anthropic {
                Some(if status == 200 {
                    json!({"custom_id": custom_id,
                           "result": {"type": "succeeded", "message": reply}})
                } else {
                    json!({"custom_id": custom_id,
                           "result": {"type": "errored",
                                      "error": {"type": "error", "error": reply["error"]}}})
                })
            } else {
                let line = json!({
                    "id": format!("batch_req_{n}"), "custom_id": custom_id,
                    "response": {"status_code": status, "request_id": format!("req_{n}"),
                                 "body": reply},
                    "error": null,
                });
                if status == 200 {
                    output.push_str(&format!("{line}\n"));
                } else {
                    errors.push_str(&format!("{line}\n"));
                }
                None
            }
        } else if batch.anthropic {
            let kind = if cancelled { "canceled" } else { "expired" };
            Some(json!({"custom_id": custom_id, "result": {"type": kind}}))
        } else {
            let line = json!({
                "id": format!("batch_req_{n}"), "custom_id": custom_id, "response": null,
                "error": {"code": "batch_expired",
                          "message": "This request could not be executed before the completion window expired."},
            });
            errors.push_str(&format!("{line}\n"));
            None
        };
        if let Some(line) = line {
            output.push_str(&format!("{line}\n"));
        }
    }
    let state_word = match (batch.anthropic, cancelled, ending.run.is_some()) {
        (true, _, _) => "ended",
        (false, true, _) => "cancelled",
        (false, false, true) => "expired",
        (false, false, false) => "completed",
    };
    batch.ended = Some((state_word.to_string(), output, errors));
    batch.spoil_line = ending.spoil_line;
}

/// `output` with its `spoil`-th line (1-based) cut in half and ending in a byte that is not
/// UTF-8.
fn spoiled(output: &str, spoil: Option<usize>) -> Vec<u8> {
    let mut bytes = Vec::new();
    for (n, line) in output.lines().enumerate() {
        if Some(n + 1) == spoil {
            bytes.extend_from_slice(&line.as_bytes()[..line.len() / 2]);
            bytes.push(0xFF);
        } else {
            bytes.extend_from_slice(line.as_bytes());
        }
        bytes.push(b'\n');
    }
    bytes
}

fn with_batch<T>(
    state: &BatchState,
    id: &str,
    work: impl FnOnce(&BatchState, &mut Batch) -> T,
) -> Option<T> {
    let mut batches = state.batches.lock().unwrap();
    batches.get_mut(id).map(|batch| work(state, batch))
}

/// Stores the ended batch's output and error files so that `GET /v1/files/{id}/content` finds
/// them.
fn publish_files(state: &BatchState, id: &str, batch: &Batch) {
    if let Some((_, output, errors)) = &batch.ended {
        let mut files = state.files.lock().unwrap();
        files.insert(format!("{id}-output"), spoiled(output, batch.spoil_line));
        files.insert(format!("{id}-errors"), errors.clone().into_bytes());
    }
}

async fn retrieve_openai(State(slot): State<Shared>, Path(id): Path<String>) -> Response {
    let state = state_of(&slot);
    state.polls.fetch_add(1, Ordering::SeqCst);
    let object = with_batch(&state, &id, |state, batch| {
        advance(state, batch);
        publish_files(state, &id, batch);
        openai_object(&id, batch)
    });
    match object {
        Some(object) => axum::Json(object).into_response(),
        None => error(StatusCode::NOT_FOUND, &format!("no batch {id}")),
    }
}

async fn cancel_openai(State(slot): State<Shared>, Path(id): Path<String>) -> Response {
    let state = state_of(&slot);
    let object = with_batch(&state, &id, |_, batch| {
        batch.cancel_requested = true;
        openai_object(&id, batch)
    });
    match object {
        Some(object) => axum::Json(object).into_response(),
        None => error(StatusCode::NOT_FOUND, &format!("no batch {id}")),
    }
}

fn anthropic_object(root: &str, id: &str, batch: &Batch) -> Value {
    let ended = batch.ended.is_some();
    let status = if ended {
        "ended"
    } else if batch.cancel_requested {
        "canceling"
    } else {
        "in_progress"
    };
    json!({
        "id": id, "type": "message_batch", "processing_status": status,
        "request_counts": {"processing": if ended { 0 } else { batch.requests.len() },
                           "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0},
        "ended_at": if ended { json!("2026-12-07T00:00:00Z") } else { Value::Null },
        "created_at": "2026-12-07T00:00:00Z", "expires_at": "2026-12-08T00:00:00Z",
        "archived_at": null, "cancel_initiated_at": null,
        "results_url": if ended { json!(format!("{root}/v1/messages/batches/{id}/results")) }
                       else { Value::Null },
    })
}

async fn create_anthropic(
    State(slot): State<Shared>,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let state = state_of(&slot);
    let Some(entries) = body["requests"].as_array() else {
        return error(StatusCode::BAD_REQUEST, "requests: an array is required");
    };
    let mut requests = Vec::new();
    for (n, entry) in entries.iter().enumerate() {
        let id_ok = entry["custom_id"].as_str().is_some_and(|id| {
            (1..=64).contains(&id.len())
                && id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        });
        if !id_ok || !entry["params"].is_object() {
            return error(
                StatusCode::BAD_REQUEST,
                &format!("requests.{n}: custom_id (1-64 of [a-zA-Z0-9_-]) and params"),
            );
        }
        requests.push((
            entry["custom_id"].as_str().unwrap().to_string(),
            entry["params"].clone(),
        ));
    }
    let id = format!("msgbatch_{}", state.next_id.fetch_add(1, Ordering::SeqCst));
    let batch = Batch {
        requests,
        anthropic: true,
        polls: 0,
        created_at: now_s(),
        ended: None,
        metadata: Value::Null,
        spoil_line: None,
        cancel_requested: false,
        input_file_id: String::new(),
    };
    let object = anthropic_object(&state.root, &id, &batch);
    state.batches.lock().unwrap().insert(id, batch);
    state.submitted.fetch_add(1, Ordering::SeqCst);
    axum::Json(object).into_response()
}

async fn retrieve_anthropic(State(slot): State<Shared>, Path(id): Path<String>) -> Response {
    let state = state_of(&slot);
    state.polls.fetch_add(1, Ordering::SeqCst);
    let object = with_batch(&state, &id, |state, batch| {
        advance(state, batch);
        anthropic_object(&state.root, &id, batch)
    });
    match object {
        Some(object) => axum::Json(object).into_response(),
        None => error(StatusCode::NOT_FOUND, &format!("no batch {id}")),
    }
}

async fn results_anthropic(State(slot): State<Shared>, Path(id): Path<String>) -> Response {
    let state = state_of(&slot);
    let lines = with_batch(&state, &id, |_, batch| {
        batch
            .ended
            .as_ref()
            .map(|(_, output, _)| spoiled(output, batch.spoil_line))
    });
    match lines {
        Some(Some(lines)) => ([("content-type", "application/x-jsonl")], lines).into_response(),
        Some(None) => error(StatusCode::BAD_REQUEST, "the batch has not ended"),
        None => error(StatusCode::NOT_FOUND, &format!("no batch {id}")),
    }
}

async fn cancel_anthropic(State(slot): State<Shared>, Path(id): Path<String>) -> Response {
    let state = state_of(&slot);
    let object = with_batch(&state, &id, |state, batch| {
        batch.cancel_requested = true;
        anthropic_object(&state.root, &id, batch)
    });
    match object {
        Some(object) => axum::Json(object).into_response(),
        None => error(StatusCode::NOT_FOUND, &format!("no batch {id}")),
    }
}
