//! Shared fixtures: an annotation store in a temporary directory, the server on a free loopback
//! port, and a plain HTTP client that does not follow redirects.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use hierarag_annotate::{ANNOTATIONS_FILE, Annotator, Item, Rating, Store};
use hierarag_annotate_server::{ServeOptions, serve};
use hierarag_taxonomy::Granularity;

/// The document that tries to run script.
pub const HOSTILE_TEXT: &str =
    "Before. <script>alert(1)</script><img src=x onerror=alert(2)> After.";
/// The intended category of the category-task items; one of [`CHOICES`].
pub const INTENDED: &str = "cat_beta";
pub const CHOICES: [&str; 3] = ["cat_alpha", "cat_beta", "cat_gamma"];

/// `n_items` items (0-based positions); item 0 holds the hostile document and, like every even
/// item, has the category task.
pub fn items(n_items: u32) -> Vec<Item> {
    (0..n_items)
        .map(|position| {
            let category_task = position % 2 == 0;
            Item {
                item_id: format!("secret-item-id-{position}"),
                position,
                set: "secret-set-name".into(),
                dimension: "qt".into(),
                level: Granularity::Fine,
                category: INTENDED.into(),
                parent: Some("secret-parent".into()),
                category_task,
                question: format!("Question {position}: what does the document say?"),
                reference: format!("Reference answer {position} & more."),
                documents: vec![(
                    format!("doc-{position}"),
                    if position == 0 {
                        HOSTILE_TEXT.into()
                    } else {
                        format!("Plain document {position}.\nSecond line.")
                    },
                )],
                choices: if category_task {
                    CHOICES.map(String::from).to_vec()
                } else {
                    Vec::new()
                },
                answer: None,
            }
        })
        .collect()
}

/// A run directory with a store of `n_items` items and the named annotators.
pub fn run_dir(
    name: &str,
    n_items: u32,
    annotators: &[&str],
) -> (tempfile::TempDir, Vec<Annotator>) {
    let dir = tempfile::Builder::new().prefix(name).tempdir().unwrap();
    let store = Store::create(&dir.path().join(ANNOTATIONS_FILE), &items(n_items), &[]).unwrap();
    let annotators = annotators
        .iter()
        .map(|name| store.add_annotator(name).unwrap())
        .collect();
    (dir, annotators)
}

pub fn ratings(dir: &Path) -> Vec<Rating> {
    Store::open(&dir.join(ANNOTATIONS_FILE))
        .unwrap()
        .ratings()
        .unwrap()
}

/// Starts the app of `dir` on 127.0.0.1 with a free port, on the current runtime; it stops with
/// the runtime.
pub async fn start(dir: &Path) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let dir: PathBuf = dir.to_path_buf();
    tokio::spawn(async move {
        serve(listener, &dir, ServeOptions::default())
            .await
            .expect("the server stopped");
    });
    format!("http://{addr}")
}

pub fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// `application/x-www-form-urlencoded` of these pairs.
pub fn form_body(pairs: &[(&str, &str)]) -> String {
    let encode = |text: &str| {
        let mut out = String::new();
        for byte in text.bytes() {
            match byte {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                    out.push(char::from(byte));
                }
                b' ' => out.push('+'),
                _ => out.push_str(&format!("%{byte:02X}")),
            }
        }
        out
    };
    pairs
        .iter()
        .map(|(key, value)| format!("{}={}", encode(key), encode(value)))
        .collect::<Vec<_>>()
        .join("&")
}

/// The CSRF value in a page's form.
pub fn csrf_of(html: &str) -> String {
    let start = html
        .find("name=\"csrf\" value=\"")
        .expect("no CSRF field in the page")
        + "name=\"csrf\" value=\"".len();
    let end = start + html[start..].find('"').unwrap();
    html[start..end].to_owned()
}

/// GETs the item page and returns its CSRF value.
pub async fn csrf(client: &reqwest::Client, base: &str, token: &str) -> String {
    let html = client
        .get(format!("{base}/a/{token}/item/0"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    csrf_of(&html)
}

/// POSTs a form to the item at `position`.
pub async fn post(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    position: u32,
    pairs: &[(&str, &str)],
) -> reqwest::Response {
    client
        .post(format!("{base}/a/{token}/item/{position}"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form_body(pairs))
        .send()
        .await
        .unwrap()
}

/// The CSRF field followed by `fields`.
pub fn with_csrf<'a>(csrf: &'a str, fields: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut pairs = vec![("csrf", csrf)];
    pairs.extend_from_slice(fields);
    pairs
}
