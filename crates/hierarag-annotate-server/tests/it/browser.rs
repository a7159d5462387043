//! The app in a real browser: `scripts/browser/annotate_flow.py` drives headless Chromium as two
//! annotators against the server started here in-process, rating by mouse and by keyboard,
//! saving and reloading; the ratings must come back after the reloads and be in the store, the
//! document with `<script>` must render as text, and nothing may go wrong on the pages (no
//! dialog, console or page error, no request leaving the server).
//!
//! Needs Debian's `chromium` and the `playwright` package (installed by `.ci/run` and
//! `scripts/test.sh`), so it is `#[ignore]`d, with the reason, and `bash scripts/test.sh` runs it
//! (`cargo test -- --include-ignored`). Python is `$HIERARAG_PYTHON`, else the repository's
//! `.venv-oracles`.

use std::process::Command;

use hierarag_test_support::{python, workspace_root};

use crate::support::{HOSTILE_TEXT, ratings, run_dir, start};
use serde_json::{Value, json};

const PNG_SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];

#[test]
#[ignore = "needs Chromium (scripts/ensure-chromium.sh) and playwright (.venv-oracles)"]
fn two_annotators_rate_in_chromium_and_their_ratings_survive_reloads() {
    let (dir, annotators) = run_dir("browser", 3, &["alice", "bob"]);
    let (a, b) = (&annotators[0], &annotators[1]);
    // The server runs on the runtime's worker threads while this thread waits for the script.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let base = runtime.block_on(start(dir.path()));

    let python = python();
    let screenshot = dir.path().join("item1.png");
    let output = Command::new(&python)
        .arg(workspace_root().join("scripts/browser/annotate_flow.py"))
        .args([&base, &a.token, &b.token])
        .arg("--screenshot")
        .arg(&screenshot)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "annotate_flow.py failed ({}); Chromium comes from `apt-get install chromium`, \
         playwright from scripts/oracles/requirements.txt:\n{stderr}",
        output.status
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "annotate_flow.py printed no JSON ({e}):\n{}\n{stderr}",
            String::from_utf8_lossy(&output.stdout)
        )
    });

    for list in [
        "dialogs",
        "console_errors",
        "page_errors",
        "requests_outside",
    ] {
        assert_eq!(report[list], json!([]), "{list}: {report:#}");
    }
    let item = |token: &str, position: u32| format!("{base}/a/{token}/item/{position}");
    let (ra, rb) = (&report["a"], &report["b"]);

    // The hostile document is text: no element made of it, no dialog, the title untouched.
    let hostile = &ra["hostile"];
    assert_eq!(
        hostile["title_before"], "Item 1 of 3 · HieraRAG annotation",
        "{report:#}"
    );
    assert_eq!(hostile["title_after"], hostile["title_before"]);
    assert_eq!(hostile["text"], HOSTILE_TEXT, "{report:#}");
    assert_eq!(hostile["script_or_img_in_document"], 0);

    // A: clicks on item 0, keyboard on item 1; navigation by keys.
    assert_eq!(ra["resume_url"], item(&a.token, 0));
    assert_eq!(
        ra["after_save_url"],
        format!("{}?saved=1", item(&a.token, 0))
    );
    assert_eq!(ra["saved_flash"], 1);
    assert_eq!(ra["after_j_url"], item(&a.token, 1));
    assert_eq!(
        ra["item1_checked_before_save"],
        json!(["correctness-1", "hallucination-1", "answerability-2"]),
        "typing in the note triggered a shortcut: {report:#}"
    );
    assert_eq!(ra["dirty_shown"], true);
    assert_eq!(ra["after_enter_url"], item(&a.token, 2));
    assert_eq!(ra["after_k_url"], item(&a.token, 1));
    // After reloads.
    assert_eq!(
        ra["item0_checked"],
        json!([
            "correctness-3",
            "hallucination-0",
            "answerability-2",
            "category-1"
        ]),
        "{report:#}"
    );
    assert_eq!(ra["item0_note"], "A's note <b>not bold</b>");
    assert_eq!(
        ra["item1_checked"],
        json!(["correctness-1", "hallucination-1", "answerability-2"])
    );
    assert_eq!(ra["item1_note"], "typed 1 q a");
    assert_eq!(ra["progress"], "2 / 3 rated");

    // B: its own ratings of item 0, untouched by A's.
    assert_eq!(rb["resume_url"], item(&b.token, 0));
    assert_eq!(rb["after_save_next_url"], item(&b.token, 1));
    assert_eq!(
        rb["item0_checked"],
        json!([
            "correctness-1",
            "hallucination-2",
            "answerability-0",
            "category-2"
        ]),
        "{report:#}"
    );
    assert_eq!(rb["progress"], "1 / 3 rated");

    // The store agrees.
    let saved = ratings(dir.path());
    let find = |item: &str, annotator: &str| {
        saved
            .iter()
            .find(|r| r.item_id == item && r.annotator == annotator)
            .unwrap_or_else(|| panic!("no rating of {item} by {annotator}: {saved:?}"))
    };
    let a0 = find("secret-item-id-0", "alice");
    assert_eq!(
        (a0.correctness, a0.hallucination, a0.answerability),
        (Some(3), Some(0), Some(2))
    );
    assert_eq!(a0.category_pick.as_deref(), Some("cat_beta"));
    assert_eq!(a0.note.as_deref(), Some("A's note <b>not bold</b>"));
    let a1 = find("secret-item-id-1", "alice");
    assert_eq!(
        (a1.correctness, a1.hallucination, a1.answerability),
        (Some(1), Some(1), Some(2))
    );
    assert_eq!(a1.note.as_deref(), Some("typed 1 q a"));
    let b0 = find("secret-item-id-0", "bob");
    assert_eq!(
        (b0.correctness, b0.hallucination, b0.answerability),
        (Some(1), Some(2), Some(0))
    );
    assert_eq!(b0.category_pick.as_deref(), Some("cat_gamma"));
    assert_eq!(saved.len(), 3, "{saved:?}");

    let png = std::fs::read(&screenshot).unwrap();
    assert!(png.len() > 1_000 && png[..8] == PNG_SIGNATURE, "not a PNG");
    runtime.shutdown_background();
}
