//! The mock server of every test: an HTTP server on 127.0.0.1 that answers each request with
//! the next scripted reply, or else with its default reply built from the request (an
//! OpenAI-compatible chat/embeddings server and an Anthropic one by default, or the test's own),
//! and records what it received, when, and how many requests it held at once.
//!
//! Started inside an async test ([`MockServer::start`], on the test's runtime, stopped when
//! dropped) or from a plain test that runs the binary ([`MockServer::serve`], on a thread of
//! its own for the rest of the test process).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A JSON body with a status and extra headers.
    Json {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: Value,
    },
    /// A body that is not JSON.
    Text { status: u16, body: String },
    /// The reply after a pause.
    Slow { delay: Duration, then: Box<Reply> },
    /// Status 200 and the start of a body, then the connection is cut.
    Truncated,
    /// The connection is closed before any reply.
    Hangup,
    /// Status 200 and `body` sent chunked, without a `Content-Length`.
    Chunked { body: String },
    /// Status 200, `{"answer": "` and then `x` for ever, without a `Content-Length`.
    Endless,
}

impl Reply {
    pub fn json(status: u16, body: Value) -> Reply {
        Reply::Json {
            status,
            headers: Vec::new(),
            body,
        }
    }

    pub fn with_header(self, name: &'static str, value: &str) -> Reply {
        match self {
            Reply::Json {
                status,
                mut headers,
                body,
            } => {
                headers.push((name, value.to_string()));
                Reply::Json {
                    status,
                    headers,
                    body,
                }
            }
            other => other,
        }
    }

    pub fn slow(delay: Duration, then: Reply) -> Reply {
        Reply::Slow {
            delay,
            then: Box::new(then),
        }
    }
}

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub at: Instant,
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
}

/// The reply to a request that no scripted reply is left for: from its path and JSON body.
pub type DefaultReply = dyn Fn(&str, &Value) -> Reply + Send + Sync;

struct State {
    script: Mutex<VecDeque<Reply>>,
    default: Box<DefaultReply>,
    hold: Duration,
    requests: Mutex<Vec<Recorded>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

/// A running server; it stops when dropped (one from [`MockServer::serve`] lives as long as
/// the test process).
pub struct MockServer {
    /// `http://127.0.0.1:PORT`
    pub root: String,
    state: Arc<State>,
    _stop: Option<oneshot::Sender<()>>,
}

impl std::fmt::Debug for MockServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockServer")
            .field("root", &self.root)
            .finish()
    }
}

impl MockServer {
    /// A server answering chat completions, embeddings and Anthropic messages by default.
    pub async fn start(script: Vec<Reply>) -> MockServer {
        MockServer::start_with(script, Duration::ZERO, Box::new(default_reply)).await
    }

    /// Like [`MockServer::start`], but each request is held `hold` before it is answered, so
    /// that concurrent requests overlap at the server.
    pub async fn holding(hold: Duration) -> MockServer {
        MockServer::start_with(Vec::new(), hold, Box::new(default_reply)).await
    }

    pub async fn start_with(
        script: Vec<Reply>,
        hold: Duration,
        default: Box<DefaultReply>,
    ) -> MockServer {
        let (state, app) = app(script, hold, default);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let root = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
        });
        MockServer {
            root,
            state,
            _stop: Some(stop),
        }
    }

    /// A server whose every reply is `default`'s, for a test that is not async (one that runs
    /// the binary): served from a thread of its own for the rest of the test process.
    pub fn serve(default: impl Fn(&str, &Value) -> Reply + Send + Sync + 'static) -> MockServer {
        let (state, app) = app(Vec::new(), Duration::ZERO, Box::new(default));
        MockServer {
            root: format!("http://{}", crate::serve(app)),
            state,
            _stop: None,
        }
    }

    /// The OpenAI-style base URL, `http://127.0.0.1:PORT/v1`.
    pub fn v1(&self) -> String {
        format!("{}/v1", self.root)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.requests.lock().unwrap().clone()
    }

    pub fn count(&self) -> usize {
        self.state.requests.lock().unwrap().len()
    }

    /// The most requests the server held at once.
    pub fn max_in_flight(&self) -> usize {
        self.state.max_in_flight.load(Ordering::SeqCst)
    }
}

/// The server's state and the router that answers every request from it.
fn app(script: Vec<Reply>, hold: Duration, default: Box<DefaultReply>) -> (Arc<State>, Router) {
    let state = Arc::new(State {
        script: Mutex::new(script.into()),
        default,
        hold,
        requests: Mutex::new(Vec::new()),
        in_flight: AtomicUsize::new(0),
        max_in_flight: AtomicUsize::new(0),
    });
    let app = Router::new().fallback({
        let state = Arc::clone(&state);
        move |uri: Uri, headers: HeaderMap, body: Bytes| {
            let state = Arc::clone(&state);
            async move { handle(state, uri, headers, body).await }
        }
    });
    (state, app)
}

/// Counts a request in flight until dropped, also when the client hangs up mid-request.
struct InFlight<'a>(&'a State);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn handle(state: Arc<State>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    let _in_flight = InFlight(&state);
    state.max_in_flight.fetch_max(now, Ordering::SeqCst);
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let path = uri.path().to_string();
    state.requests.lock().unwrap().push(Recorded {
        at: Instant::now(),
        path: path.clone(),
        headers,
        body: body.clone(),
    });
    let scripted = state.script.lock().unwrap().pop_front();
    let reply = scripted.unwrap_or_else(|| (state.default)(&path, &body));
    if !state.hold.is_zero() {
        tokio::time::sleep(state.hold).await;
    }
    respond(reply).await
}

async fn respond(mut reply: Reply) -> Response {
    loop {
        match reply {
            Reply::Slow { delay, then } => {
                tokio::time::sleep(delay).await;
                reply = *then;
            }
            Reply::Json {
                status,
                headers,
                body,
            } => {
                let mut response = Response::builder()
                    .status(StatusCode::from_u16(status).unwrap())
                    .header("content-type", "application/json");
                for (name, value) in headers {
                    response = response.header(name, value);
                }
                return response.body(Body::from(body.to_string())).unwrap();
            }
            Reply::Text { status, body } => {
                return Response::builder()
                    .status(StatusCode::from_u16(status).unwrap())
                    .header("content-type", "application/json")
                    .body(Body::from(body))
                    .unwrap();
            }
            Reply::Truncated => {
                // The pause makes hyper send the head and the first chunk before the cut.
                let chunks = futures_util::stream::unfold(0, |step| async move {
                    match step {
                        0 => Some((
                            Ok(Bytes::from_static(
                                br#"{"choices":[{"message":{"content":"hal"#,
                            )),
                            1,
                        )),
                        1 => {
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            Some((Err(std::io::Error::other("cut by the test server")), 2))
                        }
                        _ => None,
                    }
                });
                return Response::builder()
                    .status(StatusCode::OK)
                    .header("content-type", "application/json")
                    .body(Body::from_stream(chunks))
                    .unwrap();
            }
            Reply::Chunked { body } => {
                let halves = body.split_at(body.len() / 2);
                let chunks = futures_util::stream::iter([
                    Ok::<_, std::io::Error>(Bytes::from(halves.0.to_string())),
                    Ok(Bytes::from(halves.1.to_string())),
                ]);
                return Response::builder()
                    .status(StatusCode::OK)
                    .header("content-type", "application/json")
                    .body(Body::from_stream(chunks))
                    .unwrap();
            }
            Reply::Endless => {
                let head = futures_util::stream::iter([Ok::<_, std::io::Error>(
                    Bytes::from_static(br#"{"answer": ""#),
                )]);
                let tail = futures_util::stream::repeat_with(|| {
                    Ok::<_, std::io::Error>(Bytes::from(vec![b'x'; 64 * 1024]))
                });
                return Response::builder()
                    .status(StatusCode::OK)
                    .header("content-type", "application/json")
                    .body(Body::from_stream(futures_util::StreamExt::chain(
                        head, tail,
                    )))
                    .unwrap();
            }
            Reply::Hangup => {
                // A body that fails before its first byte: hyper closes the connection
                // without sending the head.
                let chunks = futures_util::stream::iter([Err::<Bytes, _>(std::io::Error::other(
                    "hung up by the test server",
                ))]);
                return Response::builder()
                    .status(StatusCode::OK)
                    .body(Body::from_stream(chunks))
                    .unwrap();
            }
        }
    }
}

/// OpenAI chat: `echo: <last message>`; OpenAI embeddings: `[len, index]` per input, listed in
/// reverse order to check that clients sort by `index`; Anthropic messages: two text blocks;
/// `/ask` (a RAG service): `{"answer": "echo: <query>"}`.
pub fn default_reply(path: &str, body: &Value) -> Reply {
    if path.ends_with("/chat/completions") {
        let last = body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .and_then(|m| m["content"].as_str())
            .unwrap_or("");
        Reply::json(200, chat_completion(&format!("echo: {last}")))
    } else if path.ends_with("/embeddings") {
        let inputs = body["input"].as_array().cloned().unwrap_or_default();
        let data: Vec<Value> = inputs
            .iter()
            .enumerate()
            .rev()
            .map(|(i, text)| {
                let len = text.as_str().map_or(0, str::len) as f32;
                json!({"object": "embedding", "index": i, "embedding": [len, i as f32]})
            })
            .collect();
        Reply::json(
            200,
            json!({"object": "list", "data": data, "model": body["model"]}),
        )
    } else if path.ends_with("/v1/messages") {
        Reply::json(
            200,
            json!({
                "id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
                "content": [{"type": "text", "text": "Hello"}, {"type": "text", "text": " world"}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 12, "output_tokens": 3},
            }),
        )
    } else if path == "/ask" {
        let query = body["query"].as_str().unwrap_or("");
        Reply::json(200, json!({"answer": format!("echo: {query}")}))
    } else {
        Reply::json(
            404,
            json!({"error": {"message": format!("no route {path}")}}),
        )
    }
}

/// An OpenAI chat completion body with 7 prompt and 3 completion tokens.
pub fn chat_completion(text: &str) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1765000000,
        "model": "mock",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
    })
}
