//! Oracle test: our measures equal pytrec_eval's (trec_eval 9) to 1e-9 on a generated run.
//!
//! Needs Python with `pytrec_eval` (`pip install pytrec_eval-terrier==0.5.11`); the interpreter is
//! `$HIERARAG_PYTHON` if set, else `python3`. A missing module fails the test rather than skipping
//! it, because a silently skipped oracle would let the semantics drift.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs::{self, File};
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::Command;

use hierarag_metrics::{Evaluation, Qrels, QueryMetrics, Run, evaluate};

const N_JUDGED_QUERIES: usize = 300;
const N_UNJUDGED_RUN_QUERIES: usize = 10;
const TOLERANCE: f64 = 1e-9;
/// The oracle script's exit status when `import pytrec_eval` fails.
const EXIT_MISSING_MODULE: i32 = 3;

/// SplitMix64: a tiny, fixed-seed generator, so the data is the same on every machine.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform integer in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// A uniform float in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn chance(&mut self, probability: f64) -> bool {
        self.unit() < probability
    }

    /// A document id whose number has 1 to 4 digits, so that "d9" and "d10" both occur and
    /// byte-wise order differs from numeric order.
    fn doc_id(&mut self) -> String {
        let n_digits = 1 + self.below(4) as u32;
        format!("d{}", self.below(10u64.pow(n_digits)))
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for item_idx in (1..items.len()).rev() {
            let other = self.below(item_idx as u64 + 1) as usize;
            items.swap(item_idx, other);
        }
    }
}

/// How a query's scores are drawn; ties are the point of the first and last.
#[derive(Clone, Copy)]
enum ScoreStyle {
    /// One decimal in [0, 3): many ties.
    Rounded,
    /// Full precision, negative and positive.
    Precise,
    /// Every document the same score: the order is decided by doc ids alone.
    AllTied,
}

/// Generates judgments and a run (as TREC lines, in shuffled order with meaningless ranks).
fn generate(rng: &mut SplitMix64) -> (Qrels, Vec<String>) {
    let mut qrels = Qrels::new();
    let mut run_lines = Vec::new();
    for query_idx in 0..N_JUDGED_QUERIES + N_UNJUDGED_RUN_QUERIES {
        let judged = query_idx < N_JUDGED_QUERIES;
        let query_id = if judged {
            format!("q{query_idx}")
        } else {
            format!("unjudged{query_idx}")
        };

        let mut used: BTreeSet<String> = BTreeSet::new();
        let mut fresh_doc = |rng: &mut SplitMix64| loop {
            let doc = rng.doc_id();
            if used.insert(doc.clone()) {
                break doc;
            }
        };
        let mut judged_docs = Vec::new();
        if judged {
            // A few queries have no relevant document at all.
            let n_relevant = if rng.chance(0.05) {
                0
            } else {
                1 + rng.below(5)
            };
            for _ in 0..n_relevant {
                judged_docs.push((fresh_doc(rng), 1 + rng.below(3) as i32));
            }
            for _ in 0..rng.below(4) {
                judged_docs.push((fresh_doc(rng), 0));
            }
            if rng.chance(0.1) {
                judged_docs.push((fresh_doc(rng), -1));
            }
            if judged_docs.is_empty() {
                judged_docs.push((fresh_doc(rng), 0));
            }
            for (doc, rel) in &judged_docs {
                qrels.insert(query_id.clone(), doc.clone(), *rel);
            }
        }

        // 0..=100 retrieved documents; zero means the query is absent from the run.
        let n_retrieved = if rng.chance(0.05) {
            0
        } else {
            rng.below(101) as usize
        };
        let mut retrieved: Vec<String> = judged_docs
            .iter()
            .filter(|_| rng.chance(0.7))
            .map(|(doc, _)| doc.clone())
            .take(n_retrieved)
            .collect();
        while retrieved.len() < n_retrieved {
            retrieved.push(fresh_doc(rng));
        }
        let style = match rng.below(10) {
            0..=5 => ScoreStyle::Rounded,
            6..=8 => ScoreStyle::Precise,
            _ => ScoreStyle::AllTied,
        };
        for (line_idx, doc) in retrieved.iter().enumerate() {
            let score = match style {
                ScoreStyle::Rounded => rng.below(30) as f64 / 10.0,
                ScoreStyle::Precise => rng.unit() * 10.0 - 5.0,
                ScoreStyle::AllTied => 1.5,
            };
            // The rank column is the write order, unrelated to the scores: both sides ignore it.
            run_lines.push(format!(
                "{query_id} Q0 {doc} {} {score} oracle",
                line_idx + 1
            ));
        }
    }
    rng.shuffle(&mut run_lines);
    (qrels, run_lines)
}

fn write_qrels(qrels: &Qrels, path: &Path) {
    let mut text = String::new();
    for (query_id, rels) in qrels.iter() {
        for (doc, rel) in rels {
            writeln!(text, "{query_id} 0 {doc} {rel}").unwrap();
        }
    }
    fs::write(path, text).unwrap();
}

fn oracle_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/oracles/pytrec_eval_oracle.py")
}

/// Runs the oracle script and returns `{query_id: {measure: value}}`.
fn run_oracle(qrels_path: &Path, run_path: &Path, out_path: &Path) -> serde_json::Value {
    let python = std::env::var("HIERARAG_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let output = Command::new(&python)
        .arg(oracle_script())
        .args([qrels_path, run_path, out_path])
        .output()
        .unwrap_or_else(|error| {
            panic!("cannot run `{python}` ({error}); install Python 3 or set HIERARAG_PYTHON")
        });
    let stderr = String::from_utf8_lossy(&output.stderr);
    if output.status.code() == Some(EXIT_MISSING_MODULE) {
        panic!(
            "the pytrec_eval oracle needs the Python module `pytrec_eval` in `{python}`: run \
             `pip install pytrec_eval-terrier==0.5.11` (or set HIERARAG_PYTHON to a Python that \
             has it). Oracle said: {stderr}"
        );
    }
    assert!(
        output.status.success(),
        "the oracle script failed ({}): {stderr}",
        output.status
    );
    serde_json::from_str(&fs::read_to_string(out_path).unwrap()).unwrap()
}

fn assert_matches_oracle(ours: &Evaluation, oracle: &serde_json::Value, run: &Run) {
    let oracle = oracle.as_object().expect("the oracle writes a JSON object");
    // pytrec_eval, like trec_eval, reports exactly the judged queries that retrieved something.
    let both: BTreeSet<&str> = ours
        .per_query
        .keys()
        .map(String::as_str)
        .filter(|q| run.get(q).is_some())
        .collect();
    let oracle_queries: BTreeSet<&str> = oracle.keys().map(String::as_str).collect();
    assert_eq!(
        oracle_queries, both,
        "the oracle and we disagree on which queries to score"
    );

    let mut n_compared = 0;
    for (query_id, measures) in oracle {
        let metrics = ours.per_query[query_id];
        let pairs = [
            ("map", metrics.ap),
            ("ndcg_cut_10", metrics.ndcg_cut_10),
            ("recall_10", metrics.recall_10),
            ("recip_rank", metrics.recip_rank),
        ];
        for (measure, our_value) in pairs {
            let oracle_value = measures[measure].as_f64().expect("a number");
            assert!(
                (our_value - oracle_value).abs() <= TOLERANCE,
                "query {query_id}, {measure}: ours {our_value}, pytrec_eval {oracle_value}"
            );
            n_compared += 1;
        }
    }
    assert_eq!(n_compared, 4 * both.len());
}

#[test]
fn measures_equal_pytrec_eval_on_a_generated_run() {
    let mut rng = SplitMix64(0x4869_6572_6152_4147);
    let (qrels, run_lines) = generate(&mut rng);
    let dir = tempfile::tempdir().unwrap();
    let (qrels_path, run_path, out_path) = (
        dir.path().join("qrels.txt"),
        dir.path().join("run.txt"),
        dir.path().join("out.json"),
    );
    write_qrels(&qrels, &qrels_path);
    fs::write(&run_path, run_lines.join("\n") + "\n").unwrap();

    // Read both files back through our own parsers, so the oracle and we see the same text.
    let qrels_read = Qrels::from_reader(
        BufReader::new(File::open(&qrels_path).unwrap()),
        "qrels.txt",
    )
    .unwrap();
    assert_eq!(qrels_read, qrels);
    let run = Run::from_reader(BufReader::new(File::open(&run_path).unwrap()), "run.txt").unwrap();
    let ours = evaluate(&qrels, &run);

    // The data must exercise what it was built to exercise.
    assert_eq!(ours.n_queries, N_JUDGED_QUERIES);
    assert_eq!(ours.n_unjudged_run_queries, N_UNJUDGED_RUN_QUERIES);
    assert!(
        !ours.queries_without_results.is_empty(),
        "some judged queries must retrieve nothing"
    );
    let n_tied_scores: usize = run
        .iter()
        .map(|(_, docs)| {
            let scores: BTreeSet<u64> = docs.iter().map(|doc| doc.score.to_bits()).collect();
            docs.len() - scores.len()
        })
        .sum();
    assert!(n_tied_scores > 1000, "only {n_tied_scores} tied scores");

    for query_id in &ours.queries_without_results {
        assert!(run.get(query_id).is_none());
        assert_eq!(ours.per_query[query_id], QueryMetrics::default());
    }
    let oracle = run_oracle(&qrels_path, &run_path, &out_path);
    assert_matches_oracle(&ours, &oracle, &run);

    // And our mean is over every judged query, retrieving or not.
    let n = N_JUDGED_QUERIES as f64;
    let expected_map = oracle
        .as_object()
        .unwrap()
        .values()
        .map(|measures| measures["map"].as_f64().unwrap())
        .sum::<f64>()
        / n;
    assert!((ours.mean.ap - expected_map).abs() <= TOLERANCE);
}

#[test]
fn ties_across_doc_id_lengths_equal_pytrec_eval() {
    // A hand-made run that is all ties: the order is purely byte-wise descending doc id.
    let mut qrels = Qrels::new();
    let mut run_text = String::new();
    for (doc, rel) in [
        ("d9", 0),
        ("d10", 1),
        ("d100", 2),
        ("d1", 3),
        ("D5", 1),
        ("d91", 0),
    ] {
        qrels.insert("q1", doc, rel);
        writeln!(run_text, "q1 Q0 {doc} 1 0.25 t").unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let (qrels_path, run_path, out_path) = (
        dir.path().join("qrels.txt"),
        dir.path().join("run.txt"),
        dir.path().join("out.json"),
    );
    write_qrels(&qrels, &qrels_path);
    fs::write(&run_path, &run_text).unwrap();
    let run = Run::from_reader(run_text.as_bytes(), "run.txt").unwrap();
    let order: Vec<&str> = run
        .ranked("q1")
        .unwrap()
        .iter()
        .map(|d| d.doc_id.as_str())
        .collect();
    assert_eq!(order, ["d91", "d9", "d100", "d10", "d1", "D5"]);
    let ours = evaluate(&qrels, &run);
    assert_matches_oracle(&ours, &run_oracle(&qrels_path, &run_path, &out_path), &run);
}
