//! What the workspace's tests share, so that each mechanism is written once: the workspace
//! root; the Python that has the reference packages (`$HIERARAG_PYTHON`, which
//! `scripts/test.sh` sets); llama.cpp's OpenAI-compatible server on a GGUF
//! (`scripts/llama_server.py`, the `xllamacpp` wheel); a server on 127.0.0.1 for an axum
//! router, on a port it binds and holds, handed over bound, so that no other process can take
//! it in between; and on it the one mock server of every test ([`mock::MockServer`]: scripted
//! replies, a default reply per request, the requests recorded).
//!
//! A dev-dependency only: nothing here is part of HieraRAG.

pub mod batches;
pub mod mock;
pub mod pipeline;

use std::io::{BufRead, BufReader, Read, Seek};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The workspace's root directory.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/hierarag-test-support sits two levels below the root")
        .to_path_buf()
}

/// Python: `$HIERARAG_PYTHON` (scripts/test.sh points it at the reference packages' virtual
/// environment), else the workspace's `.venv-oracles`, else `python3`.
pub fn python() -> PathBuf {
    if let Some(python) = std::env::var_os("HIERARAG_PYTHON").filter(|p| !p.is_empty()) {
        return PathBuf::from(python);
    }
    let venv = workspace_root().join(".venv-oracles/bin/python");
    if venv.exists() {
        venv
    } else {
        PathBuf::from("python3")
    }
}

/// Serves `router` on 127.0.0.1 from a thread of its own (with its own runtime) for the rest
/// of the test process; returns the address it is bound to. The listener is bound before the
/// address is returned, so a client may connect at once.
pub fn serve(router: axum::Router) -> SocketAddr {
    let (sender, receiver) = mpsc::channel::<SocketAddr>();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime for the mock server");
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind 127.0.0.1:0");
            sender
                .send(listener.local_addr().expect("the bound address"))
                .expect("the test waits for the address");
            axum::serve(listener, router).await.expect("serve the mock");
        });
    });
    receiver.recv().expect("the mock server's address")
}

/// llama.cpp's OpenAI-compatible server on a GGUF, started by `scripts/llama_server.py` on a
/// port of its choosing; stopped (SIGTERM, then SIGKILL after 20 s) when dropped. Its stderr
/// goes to a temporary file, shown when it fails to start.
#[derive(Debug)]
pub struct LlamaServer {
    child: Child,
    /// `http://127.0.0.1:PORT/v1`.
    base_url: String,
    log: tempfile::NamedTempFile,
}

/// How long the server may take to load the model (seconds on an idle machine; a busy one may
/// need much longer).
const STARTUP_TIMEOUT: Duration = Duration::from_secs(300);

impl LlamaServer {
    /// Starts the server on `gguf` with two threads, a context of `ctx` tokens and
    /// `parallel` slots, and waits for its `READY URL` line.
    pub fn start(gguf: &Path, ctx: usize, parallel: usize) -> LlamaServer {
        let python = python();
        let log = tempfile::NamedTempFile::new().expect("a log file for llama_server.py");
        let mut child = Command::new(&python)
            .arg(workspace_root().join("scripts/llama_server.py"))
            .arg("--model")
            .arg(gguf)
            .args(["--port", "0", "--threads", "2"])
            .args([
                "--ctx",
                &ctx.to_string(),
                "--parallel",
                &parallel.to_string(),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log.reopen().expect("the log file"))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
        let stdout = child.stdout.take().expect("piped stdout");
        let (lines, received) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        // Dropped on a failure below, so the child is stopped even when startup fails.
        let mut server = LlamaServer {
            child,
            base_url: String::new(),
            log,
        };
        let first = match received.recv_timeout(STARTUP_TIMEOUT) {
            Ok(Ok(line)) => line,
            Ok(Err(error)) => panic!("reading llama_server.py's output: {error}"),
            Err(mpsc::RecvTimeoutError::Timeout) => panic!(
                "llama_server.py printed nothing in {STARTUP_TIMEOUT:?}; its stderr:\n{}",
                server.log_tail()
            ),
            Err(mpsc::RecvTimeoutError::Disconnected) => panic!(
                "llama_server.py exited before READY; does {} have xllamacpp \
                 (scripts/oracles/requirements.txt)? Its stderr:\n{}",
                python.display(),
                server.log_tail()
            ),
        };
        let base_url = first
            .strip_prefix("READY ")
            .unwrap_or_else(|| panic!("expected `READY URL`, got {first:?}"));
        assert!(
            base_url.starts_with("http://127.0.0.1:") && base_url.ends_with("/v1"),
            "{base_url}"
        );
        server.base_url = base_url.to_owned();
        server
    }

    /// `http://127.0.0.1:PORT/v1`.
    pub fn v1(&self) -> &str {
        &self.base_url
    }

    /// `http://127.0.0.1:PORT`, without the `/v1`.
    pub fn root(&self) -> &str {
        self.base_url.trim_end_matches("/v1")
    }

    /// The last few thousand bytes of the server's stderr.
    fn log_tail(&mut self) -> String {
        let mut text = String::new();
        let mut file = self.log.reopen().expect("the log file");
        file.rewind().ok();
        file.read_to_string(&mut text).ok();
        let start = text.len().saturating_sub(4000);
        let start = (start..text.len())
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(text.len());
        text[start..].to_owned()
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        // SIGTERM first, so that the script stops the server cleanly; SIGKILL if it lingers.
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every file under `root`, in no particular order (none when it does not exist).
pub fn files_under(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                found.push(path);
            }
        }
    }
    found
}
