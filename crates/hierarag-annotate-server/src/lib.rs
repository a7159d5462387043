//! The annotation app (docs/design.md, "Human validation"): a small local web server where each
//! annotator opens a personal link, `/a/<token>`, and rates the items of a run's annotation
//! store (`annotations.sqlite`, made by `hierarag annotate sample`).
//!
//! The pages are rendered on the server and work without JavaScript; a small inline script adds
//! keyboard shortcuts. An annotator sees the document(s), the question and the reference answer,
//! rates answer correctness (0–3), hallucination (0–2) and answerability (0–3), picks the
//! category *blind* for items with a category task (the intended category is never in the
//! page), and may leave a note. Every save goes straight to the store, so a reload, a second
//! browser or a restarted server resumes where the annotator left off.
//!
//! Safety, because documents come from the web and annotators may be remote:
//! - every text from the corpus, an LLM or an annotator is HTML-escaped (the pages are maud
//!   templates, which escape whatever they splice), and a Content-Security-Policy allows only
//!   the page's own inline script (by a per-response nonce), no network requests, no framing
//!   and form posts only to this server;
//! - forms carry a per-annotator CSRF value, and a POST is refused (403) without it or when the
//!   browser says it comes from another site (`Origin`, `Sec-Fetch-Site`);
//! - the server binds a loopback address unless [`ServeOptions::allow_remote`] is set, and then
//!   only with at least one annotator, since tokens are the only access control; while it is
//!   loopback-only it also refuses requests whose `Host` is not a loopback name (DNS rebinding).
//!
//! Main entry points: [`bind`] and [`serve`] (what `hierarag annotate serve` calls), and
//! [`AppState`] with [`router`] for driving the app in-process.
//!
//! ```no_run
//! # async fn example() -> Result<(), hierarag_annotate_server::ServeError> {
//! use hierarag_annotate_server::{ServeOptions, bind, serve};
//!
//! let options = ServeOptions::default();
//! let listener = bind("127.0.0.1".parse().unwrap(), 8765, &options).await?;
//! serve(listener, std::path::Path::new("runs/my-run"), options).await?;
//! # Ok(())
//! # }
//! ```

mod handlers;
mod pages;
mod security;

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::routing::get;
use hierarag_annotate::{ANNOTATIONS_FILE, Item, Store, StoreError};
use tokio::net::TcpListener;

/// How the server may be reached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServeOptions {
    /// Accept a non-loopback address (and any `Host` header). Tokens are then the only access
    /// control, so serving needs at least one annotator.
    pub allow_remote: bool,
}

/// What can stop the server from starting or running.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{}: no annotation store; run `hierarag annotate sample {}` first", path.display(), dir.display())]
    NoStore { path: PathBuf, dir: PathBuf },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(
        "refusing to serve on {addr}: not a loopback address; pass --allow-remote to let other \
         machines connect (annotators' tokens are then the only access control)"
    )]
    NotLoopback { addr: SocketAddr },
    #[error(
        "serving on {addr}, which is not a loopback address, needs at least one annotator, \
         since tokens are the only access control: add one with `--annotator NAME` or \
         `hierarag annotate annotators RUN_DIR --add NAME`"
    )]
    NoAnnotators { addr: SocketAddr },
    #[error("cannot listen on {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: io::Error,
    },
    #[error("serving the annotation app")]
    Io(#[from] io::Error),
}

/// Refuses a non-loopback address unless `options` allow remote access.
pub fn check_address(addr: SocketAddr, options: &ServeOptions) -> Result<(), ServeError> {
    if addr.ip().to_canonical().is_loopback() || options.allow_remote {
        Ok(())
    } else {
        Err(ServeError::NotLoopback { addr })
    }
}

/// Binds `host:port` (port 0: any free port) after [`check_address`].
pub async fn bind(
    host: IpAddr,
    port: u16,
    options: &ServeOptions,
) -> Result<TcpListener, ServeError> {
    let addr = SocketAddr::new(host, port);
    check_address(addr, options)?;
    TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })
}

/// Serves the annotation app of the run directory `run_dir` on `listener` until the process
/// ends.
pub async fn serve(
    listener: TcpListener,
    run_dir: &Path,
    options: ServeOptions,
) -> Result<(), ServeError> {
    serve_with_shutdown(listener, run_dir, options, std::future::pending()).await
}

/// Like [`serve`], and stops gracefully (finishing requests in flight) when `shutdown`
/// completes.
pub async fn serve_with_shutdown(
    listener: TcpListener,
    run_dir: &Path,
    options: ServeOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let addr = listener.local_addr()?;
    check_address(addr, &options)?;
    let state = AppState::open(run_dir, options)?;
    if !addr.ip().to_canonical().is_loopback() && state.lock_store().annotators()?.is_empty() {
        return Err(ServeError::NoAnnotators { addr });
    }
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .await?;
    Ok(())
}

/// The app's routes over `state`:
/// - `GET /a/<token>`: the annotator's first item not yet fully rated, else the "done" page;
/// - `GET /a/<token>/items`: every item with its status;
/// - `GET|POST /a/<token>/item/<position>`: one item and its rating form.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/", get(handlers::index))
        .route("/favicon.ico", get(handlers::favicon))
        .route("/a/{token}", get(handlers::resume))
        .route("/a/{token}/items", get(handlers::overview))
        .route(
            "/a/{token}/item/{position}",
            get(handlers::show_item).post(handlers::save_item),
        )
        .fallback(handlers::not_found)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            security::guard,
        ))
        .with_state(state)
}

/// What the handlers share: the store, the items (fixed once sampled, so read once) and the
/// CSRF values handed out since the server started.
#[derive(Clone)]
pub struct AppState {
    shared: Arc<Shared>,
}

struct Shared {
    /// One connection behind a mutex, used from `spawn_blocking`. SQLite admits one writer at a
    /// time anyway, and each save is a single short statement, so serialising them in-process
    /// costs nothing at annotation speed, while a connection per request would add an open
    /// (schema check, pragmas) to every request and move the waiting into SQLite's busy
    /// handler. Other processes (`hierarag annotate import`) still coordinate through SQLite's
    /// locks and the store's busy timeout.
    store: Mutex<Store>,
    items: Vec<Item>,
    by_position: HashMap<u32, usize>,
    /// Annotator token → CSRF value, made on first use; lost on restart, so a form rendered by
    /// an earlier server is refused and has to be reloaded.
    csrf: Mutex<HashMap<String, String>>,
    options: ServeOptions,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("n_items", &self.shared.items.len())
            .field("options", &self.shared.options)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// Opens `run_dir/annotations.sqlite`.
    pub fn open(run_dir: &Path, options: ServeOptions) -> Result<AppState, ServeError> {
        let path = run_dir.join(ANNOTATIONS_FILE);
        if !path.is_file() {
            return Err(ServeError::NoStore {
                path,
                dir: run_dir.to_path_buf(),
            });
        }
        Ok(AppState::new(Store::open(&path)?, options)?)
    }

    /// Serves an open store.
    pub fn new(store: Store, options: ServeOptions) -> Result<AppState, StoreError> {
        let items = store.items()?;
        let by_position = items
            .iter()
            .enumerate()
            .map(|(index, item)| (item.position, index))
            .collect();
        Ok(AppState {
            shared: Arc::new(Shared {
                store: Mutex::new(store),
                items,
                by_position,
                csrf: Mutex::new(HashMap::new()),
                options,
            }),
        })
    }

    /// The items in annotation order.
    pub fn items(&self) -> &[Item] {
        &self.shared.items
    }

    fn options(&self) -> ServeOptions {
        self.shared.options
    }

    /// The index in [`AppState::items`] of the item at this position.
    fn index_of(&self, position: u32) -> Option<usize> {
        self.shared.by_position.get(&position).copied()
    }

    /// The store; a panic in another request does not poison it for good, since every write
    /// is one SQLite transaction and leaves nothing half-done in memory.
    fn lock_store(&self) -> std::sync::MutexGuard<'_, Store> {
        self.shared
            .store
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn csrf_values(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.shared
            .csrf
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}
