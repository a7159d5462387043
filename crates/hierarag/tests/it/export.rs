//! End-to-end tests of `hierarag export`: each test indexes a five-document JSONL corpus into
//! a run directory with the real binary, writes a benchmark.jsonl and an answers.jsonl made
//! from the real record types, exports, and checks every file against the inputs. Nothing here
//! touches the network: the formats are checked against the layouts that BEIR, Ragas and
//! DeepEval read, the TREC run against `hierarag eval retrieval`, and the CSVs' neutralised
//! formula cells against Python's standard `csv` module.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::support::{BIN, FORMULAS, assert_contains_all, bad_input, ok, python_csv_rows};
use assert_cmd::Command;
use hierarag_generate::{BenchmarkRecord, FilterOutcome, ModelInfo};
use hierarag_plan::CategoryRef;
use hierarag_rag::{AnswerModel, AnswerRecord, AnswerUsage, ChunkRef};
use hierarag_taxonomy::Granularity;
use serde_json::{Value, json};
use tempfile::TempDir;

/// Small enough that the longer documents span several chunks.
const CHUNK_SIZE: &str = "40";

const LIGHTHOUSE: &str = "The lighthouse at Pennard Point was built in 1841 on a granite headland \
above the harbour. For more than a century a keeper lived in the cottage at its foot and climbed \
the one hundred and twelve steps of the spiral stair every evening to light the lamp.

The keeper's log records every ship that passed, the direction of the wind and the state of the \
sea. In the great storm of 1903 the keeper kept the lamp burning for three nights without sleep \
while waves broke over the gallery rail.";

const HONEYBEES: &str = "Honey bees tell their sisters where to find food with a waggle dance \
performed on the vertical comb inside the dark hive. The angle of the straight run relative to \
vertical gives the direction of the flowers relative to the sun, and the length of the waggle \
phase encodes the distance, \"as Karl von Frisch showed\", in the 1940s.";

const SOURDOUGH: &str = "A sourdough starter is a culture of wild yeast and lactic acid bacteria \
kept alive in a paste of flour and water, fed every day.";

const GLACIER: &str = "The Rhone Glacier in the Swiss Alps has lost more than a kilometre of \
length since the first measurements in 1856. Every summer workers cover part of the glacier with \
white blankets to slow the melting of the ice grotto that tourists visit.

Scientists measure the retreat of a glacier by surveying the position of its snout each autumn, \
and by drilling stakes into the ice to record how much of the surface melts during the summer.";

const CHESS: &str = "The Sicilian Defence is the most popular reply to the king's pawn opening in \
chess: Black answers e4 with c5, fighting for the centre from the side.";

/// The corpus: (id, text), in file order.
const DOCS: &[(&str, &str)] = &[
    ("lighthouse-keeper", LIGHTHOUSE),
    ("honeybee-dance", HONEYBEES),
    ("sourdough-starter", SOURDOUGH),
    ("glacier-retreat", GLACIER),
    ("chess-opening", CHESS),
];

fn doc_text(id: &str) -> &'static str {
    DOCS.iter()
        .find(|(doc_id, _)| *doc_id == id)
        .map(|(_, text)| *text)
        .unwrap_or_else(|| panic!("no document {id}"))
}

/// A run directory with index/, benchmark.jsonl and answers.jsonl, in a temporary directory.
struct RunDir {
    dir: TempDir,
    /// The chunks of the index: chunk id → stored text.
    chunks: BTreeMap<String, String>,
}

fn category(dimension: &str, level: Granularity, category: &str) -> CategoryRef {
    CategoryRef {
        dimension: dimension.into(),
        level,
        category: category.into(),
    }
}

fn benchmark_record(
    id: &str,
    question: &str,
    answer: &str,
    doc_ids: &[&str],
    categories: Vec<CategoryRef>,
    (expertise, design, set): (&str, &str, &str),
) -> BenchmarkRecord {
    BenchmarkRecord {
        id: id.into(),
        question: question.into(),
        answer: answer.into(),
        doc_ids: doc_ids.iter().map(|d| d.to_string()).collect(),
        design: design.into(),
        set: set.into(),
        categories,
        persona: BTreeMap::from([("expertise".to_string(), expertise.to_string())]),
        generator: Some(ModelInfo {
            backend: "mock".into(),
            model: "mock-generator".into(),
            params: json!({"temperature": 0.7}),
        }),
        candidates_considered: 3,
        attempts: 1,
        filter: Some(FilterOutcome {
            enabled: false,
            model: None,
            passed: 0,
            judged: 0,
            verdict: None,
        }),
        source: None,
        unanswerable: false,
    }
}

/// The three questions: a coarse complexity question, a factorial (lv × qc) one, and one with
/// two source documents.
fn benchmark() -> Vec<BenchmarkRecord> {
    vec![
        benchmark_record(
            "rq1-qc-0001",
            "When was the lighthouse at Pennard Point built?",
            "In 1841.",
            &["lighthouse-keeper"],
            vec![category("qc", Granularity::Coarse, "simple")],
            ("novice", "rq1", "qc"),
        ),
        benchmark_record(
            "rq3-0002",
            "How do honey bees, \"dancing\", tell the distance to food?",
            "By the length of the waggle phase,\nwhich encodes the distance.",
            &["honeybee-dance"],
            vec![
                category("lv", Granularity::Coarse, "distant"),
                category("qc", Granularity::Coarse, "complex"),
            ],
            ("expert", "rq3", "lv_x_qc"),
        ),
        benchmark_record(
            "rq2-qc-fine-0003",
            "What do a retreating glacier and a chess opening have in common?",
            "Both are about losing ground: ice, or the centre.",
            &["glacier-retreat", "chess-opening"],
            vec![category(
                "qc",
                Granularity::Fine,
                "comparative_synthesis_concepts",
            )],
            ("novice", "rq2", "qc/fine"),
        ),
    ]
}

/// An answer whose retrieved chunks are `(chunk id, score)`, best first, ranking each document
/// at its best chunk as `hierarag answer` does.
fn answer_record(
    id: &str,
    question: &str,
    answer: &str,
    retrieved: &[(&str, f64)],
) -> AnswerRecord {
    let retrieved: Vec<ChunkRef> = retrieved
        .iter()
        .map(|(chunk_id, score)| ChunkRef {
            chunk_id: chunk_id.to_string(),
            doc_id: chunk_id.rsplit_once('#').unwrap().0.to_string(),
            score: *score,
        })
        .collect();
    let mut doc_ids: Vec<String> = Vec::new();
    let mut doc_scores = Vec::new();
    for chunk in &retrieved {
        if !doc_ids.contains(&chunk.doc_id) {
            doc_ids.push(chunk.doc_id.clone());
            doc_scores.push(chunk.score);
        }
    }
    AnswerRecord {
        id: id.into(),
        question: question.into(),
        retriever: "bm25".into(),
        retrieved,
        doc_ids,
        doc_scores,
        answer: answer.into(),
        refused: false,
        llm: AnswerModel {
            backend: "mock".into(),
            model: "mock-answerer".into(),
            params: json!({"temperature": 0.6}),
        },
        usage: AnswerUsage {
            prompt_tokens: 100,
            completion_tokens: 10,
        },
        doc_ids_found: Vec::new(),
        no_documents: false,
        contexts: Vec::new(),
    }
}

/// The answers, in an order other than the benchmark's. Retrieval, against the source
/// documents (AP computed by hand):
/// - rq1-qc-0001: lighthouse-keeper first: AP 1.
/// - rq3-0002: honeybee-dance and sourdough-starter tie at 2.0; trec_eval breaks the tie by
///   document id descending, so sourdough-starter ranks first and the source second: AP 1/2
///   (1 if the file's order were kept).
/// - rq2-qc-fine-0003: sourdough-starter, then chess-opening (one of two sources) second:
///   AP (1/2) / 2 = 1/4.
fn answers() -> Vec<AnswerRecord> {
    vec![
        answer_record(
            "rq3-0002",
            "How do honey bees, \"dancing\", tell the distance to food?",
            "With the waggle dance.",
            &[("honeybee-dance#0", 2.0), ("sourdough-starter#0", 2.0)],
        ),
        answer_record(
            "rq1-qc-0001",
            "When was the lighthouse at Pennard Point built?",
            "It was built in 1841.",
            &[
                ("lighthouse-keeper#1", 3.5),
                ("lighthouse-keeper#0", 2.0),
                ("honeybee-dance#0", 1.25),
            ],
        ),
        answer_record(
            "rq2-qc-fine-0003",
            "What do a retreating glacier and a chess opening have in common?",
            "I cannot answer this question from the given context.",
            &[("sourdough-starter#0", 4.0), ("chess-opening#0", 1.0)],
        ),
    ]
}

const EXPECTED_AP: &[(&str, f64)] = &[
    ("rq1-qc-0001", 1.0),
    ("rq3-0002", 0.5),
    ("rq2-qc-fine-0003", 0.25),
];

fn write_jsonl<T: serde::Serialize>(path: &Path, records: &[T]) {
    let mut text = String::new();
    for record in records {
        text.push_str(&serde_json::to_string(record).unwrap());
        text.push('\n');
    }
    std::fs::write(path, text).unwrap();
}

impl RunDir {
    /// Indexes the corpus into run/index and writes the benchmark and (if asked) the answers.
    fn new(with_answers: bool) -> RunDir {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let corpus = dir.path().join("corpus.jsonl");
        let mut lines = String::new();
        for (id, text) in DOCS {
            lines.push_str(&json!({"id": id, "text": text}).to_string());
            lines.push('\n');
        }
        std::fs::write(&corpus, lines).unwrap();
        let run = dir.path().join("run");
        std::fs::create_dir_all(&run).unwrap();
        let mut run_dir = RunDir {
            dir,
            chunks: BTreeMap::new(),
        };
        ok(run_dir
            .cmd()
            .args(["index", "--corpus"])
            .arg(&corpus)
            .arg("--out")
            .arg(run.join("index"))
            .args(["--chunk-size", CHUNK_SIZE]));
        let index = hierarag_index::Bm25Index::open(&run.join("index")).expect("open the index");
        run_dir.chunks = index
            .chunks()
            .map(|chunk| {
                let chunk = chunk.expect("read a chunk");
                (chunk.chunk_id, chunk.text)
            })
            .collect();
        assert!(
            run_dir.chunks.contains_key("lighthouse-keeper#1"),
            "the lighthouse document spans several chunks: {:?}",
            run_dir.chunks.keys()
        );
        write_jsonl(&run.join("benchmark.jsonl"), &benchmark());
        if with_answers {
            write_jsonl(&run.join("answers.jsonl"), &answers());
        }
        run_dir
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn run(&self) -> PathBuf {
        self.path("run")
    }

    fn cmd(&self) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.current_dir(self.dir.path())
            .env_remove("RUST_LOG")
            .env("HIERARAG_HOME", self.path("hierarag-home"));
        cmd
    }

    /// `hierarag export --run run --format FORMAT EXTRA…`, expected to succeed; returns stderr.
    fn export(&self, format: &str, extra: &[&str]) -> String {
        ok(self
            .cmd()
            .arg("export")
            .arg("--run")
            .arg(self.run())
            .args(["--format", format])
            .args(extra))
        .1
    }

    fn chunk(&self, chunk_id: &str) -> &str {
        self.chunks
            .get(chunk_id)
            .unwrap_or_else(|| panic!("no chunk {chunk_id}"))
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn read_jsonl(path: &Path) -> Vec<Value> {
    read(path)
        .lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{}: invalid JSON line ({e}): {line}", path.display()))
        })
        .collect()
}

/// Every file under `dir`, relative, sorted: no temporary file may be left behind.
fn files_under(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap();
                files.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    files.sort();
    files
}

/// Parses RFC 4180 CSV (quoted fields may hold commas, doubled quotes and line breaks).
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut records = Vec::new();
    let mut record = Vec::new();
    let mut field = String::new();
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => record.push(std::mem::take(&mut field)),
            (false, '\r') => {}
            (false, '\n') => {
                record.push(std::mem::take(&mut field));
                records.push(std::mem::take(&mut record));
            }
            (false, c) => field.push(c),
        }
    }
    assert!(
        !quoted && field.is_empty() && record.is_empty(),
        "CSV ends in a record"
    );
    records
}

/// The expected labels of a benchmark question, as flat keys.
fn expected_categories(record: &BenchmarkRecord) -> serde_json::Map<String, Value> {
    record
        .categories
        .iter()
        .map(|c| (format!("{}/{}", c.dimension, c.level), json!(c.category)))
        .collect()
}

// ---------------------------------------------------------------------------------------------

#[test]
fn help_lists_the_formats_and_options() {
    let (stdout, _) = ok(Command::new(BIN).args(["export", "--help"]));
    assert_contains_all(
        &stdout,
        &[
            "--run",
            "--format",
            "--out",
            "--index",
            "--csv",
            "beir",
            "ragas",
            "deepeval",
            "trec",
            "qrels/test.tsv",
            "user_input",
            "retrieval_context",
            "run.txt",
        ],
    );
}

#[test]
fn beir_export_holds_the_whole_corpus_the_queries_and_a_judgment_per_source_document() {
    let run = RunDir::new(true);
    let stderr = run.export("beir", &[]);
    let out = run.run().join("export/beir");
    assert_eq!(
        files_under(&out),
        ["corpus.jsonl", "qrels/test.tsv", "queries.jsonl"]
    );
    assert_contains_all(
        &stderr,
        &[
            "corpus.jsonl: 5 documents",
            "queries.jsonl: 3 queries",
            "4 judgments",
        ],
    );

    let corpus = read_jsonl(&out.join("corpus.jsonl"));
    let expected: Vec<Value> = DOCS
        .iter()
        .map(|(id, text)| json!({"_id": id, "title": "", "text": text}))
        .collect();
    assert_eq!(corpus, expected);

    let queries = read_jsonl(&out.join("queries.jsonl"));
    assert_eq!(queries.len(), 3);
    assert_eq!(
        queries[1],
        json!({
            "_id": "rq3-0002",
            "text": "How do honey bees, \"dancing\", tell the distance to food?",
            "metadata": {
                "lv/coarse": "distant",
                "qc/coarse": "complex",
                "persona": {"expertise": "expert"},
                "set": "lv_x_qc",
                "design": "rq3",
            },
        })
    );
    for (query, record) in queries.iter().zip(benchmark()) {
        assert_eq!(query["_id"], json!(record.id));
        assert_eq!(query["text"], json!(record.question));
        for (key, value) in expected_categories(&record) {
            assert_eq!(query["metadata"][&key], value, "{}: {key}", record.id);
        }
    }

    assert_eq!(
        read(&out.join("qrels/test.tsv")),
        "query-id\tcorpus-id\tscore\n\
         rq1-qc-0001\tlighthouse-keeper\t1\n\
         rq3-0002\thoneybee-dance\t1\n\
         rq2-qc-fine-0003\tglacier-retreat\t1\n\
         rq2-qc-fine-0003\tchess-opening\t1\n"
    );
}

#[test]
fn ragas_export_has_sample_fields_with_document_and_chunk_texts() {
    let run = RunDir::new(true);
    let out = run.path("ragas-out");
    let stderr = run.export("ragas", &["--out", "ragas-out", "--csv"]);
    assert_eq!(files_under(&out), ["ragas.csv", "ragas.jsonl"]);
    assert_contains_all(
        &stderr,
        &["ragas.jsonl: 3 samples, 3 with a response", "ragas.csv"],
    );

    let samples = read_jsonl(&out.join("ragas.jsonl"));
    assert_eq!(samples.len(), 3);
    // Benchmark order, whatever the order of answers.jsonl.
    let ids: Vec<&str> = samples.iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["rq1-qc-0001", "rq3-0002", "rq2-qc-fine-0003"]);

    let first = samples[0].as_object().unwrap();
    assert_eq!(
        first.keys().collect::<Vec<_>>(),
        [
            "id",
            "user_input",
            "reference",
            "reference_contexts",
            "response",
            "retrieved_contexts",
            "qc/coarse",
            "persona/expertise",
            "set",
            "design"
        ]
    );
    assert_eq!(
        samples[0],
        json!({
            "id": "rq1-qc-0001",
            "user_input": "When was the lighthouse at Pennard Point built?",
            "reference": "In 1841.",
            "reference_contexts": [LIGHTHOUSE],
            "response": "It was built in 1841.",
            "retrieved_contexts": [
                run.chunk("lighthouse-keeper#1"),
                run.chunk("lighthouse-keeper#0"),
                run.chunk("honeybee-dance#0"),
            ],
            "qc/coarse": "simple",
            "persona/expertise": "novice",
            "set": "qc",
            "design": "rq1",
        })
    );
    // Two source documents, in the record's order; the factorial question's two labels.
    assert_eq!(
        samples[2]["reference_contexts"],
        json!([doc_text("glacier-retreat"), doc_text("chess-opening")])
    );
    assert_eq!(
        samples[2]["retrieved_contexts"],
        json!([
            run.chunk("sourdough-starter#0"),
            run.chunk("chess-opening#0")
        ])
    );
    assert_eq!(samples[1]["lv/coarse"], json!("distant"));
    assert_eq!(samples[1]["qc/coarse"], json!("complex"));
    assert_eq!(
        samples[2]["qc/fine"],
        json!("comparative_synthesis_concepts")
    );

    // The CSV: the same values, list fields as JSON text.
    let rows = parse_csv(&read(&out.join("ragas.csv")));
    assert_eq!(
        rows[0],
        [
            "id",
            "user_input",
            "reference",
            "reference_contexts",
            "response",
            "retrieved_contexts",
            "qc/coarse",
            "lv/coarse",
            "qc/fine",
            "persona/expertise",
            "set",
            "design"
        ]
    );
    assert_eq!(rows.len(), 4);
    for (row, sample) in rows[1..].iter().zip(&samples) {
        for (column, cell) in rows[0].iter().zip(row) {
            match &sample.get(column) {
                None => assert_eq!(cell, "", "{column}"),
                Some(Value::String(text)) => assert_eq!(cell, text, "{column}"),
                Some(value) => {
                    let parsed: Value = serde_json::from_str(cell).expect("a JSON cell");
                    assert_eq!(&&parsed, value, "{column}");
                }
            }
        }
    }
    // The quoted question with a comma and quotes, and the answer with a line break, survive.
    assert_eq!(
        rows[2][2],
        "By the length of the waggle phase,\nwhich encodes the distance."
    );
}

#[test]
fn deepeval_export_has_golden_fields_as_a_json_array_and_lines() {
    let run = RunDir::new(true);
    let stderr = run.export("deepeval", &["--csv"]);
    let out = run.run().join("export/deepeval");
    assert_eq!(
        files_under(&out),
        ["deepeval.csv", "deepeval.json", "deepeval.jsonl"]
    );
    assert_contains_all(&stderr, &["3 goldens, 3 with an actual output"]);

    let array: Value = serde_json::from_str(&read(&out.join("deepeval.json"))).expect("JSON");
    let lines = read_jsonl(&out.join("deepeval.jsonl"));
    assert_eq!(array, Value::Array(lines.clone()));
    assert_eq!(
        lines[1],
        json!({
            "input": "How do honey bees, \"dancing\", tell the distance to food?",
            "expected_output": "By the length of the waggle phase,\nwhich encodes the distance.",
            "context": [HONEYBEES],
            "actual_output": "With the waggle dance.",
            "retrieval_context": [run.chunk("honeybee-dance#0"), run.chunk("sourdough-starter#0")],
            "additional_metadata": {
                "id": "rq3-0002",
                "categories": {"lv/coarse": "distant", "qc/coarse": "complex"},
                "persona": {"expertise": "expert"},
                "set": "lv_x_qc",
                "design": "rq3",
            },
        })
    );
    assert_eq!(
        lines[2]["context"],
        json!([doc_text("glacier-retreat"), doc_text("chess-opening")])
    );
    assert_eq!(
        lines[2]["actual_output"],
        json!("I cannot answer this question from the given context.")
    );

    let rows = parse_csv(&read(&out.join("deepeval.csv")));
    assert_eq!(
        rows[0],
        [
            "input",
            "expected_output",
            "context",
            "actual_output",
            "retrieval_context",
            "additional_metadata"
        ]
    );
    assert_eq!(rows.len(), 4);
    let metadata: Value = serde_json::from_str(&rows[3][5]).expect("JSON metadata");
    assert_eq!(metadata, lines[2]["additional_metadata"]);
    let context: Value = serde_json::from_str(&rows[1][2]).expect("JSON context");
    assert_eq!(context, json!([LIGHTHOUSE]));
}

#[test]
fn formula_injection_csv_cells_are_neutralised_and_python_reads_them_with_the_quote() {
    let run = RunDir::new(true);
    // Questions, reference answers, responses and a persona that begin like formulas.
    let mut records = benchmark();
    for (n, record) in records.iter_mut().enumerate() {
        record.question = FORMULAS[n].to_string();
        record.answer = FORMULAS[n + 3].to_string();
        record
            .persona
            .insert("expertise".into(), FORMULAS[(n + 2) % 7].to_string());
    }
    let mut answered = answers();
    for answer in &mut answered {
        let n = records.iter().position(|r| r.id == answer.id).unwrap();
        answer.question = records[n].question.clone();
        answer.answer = FORMULAS[(n + 6) % 7].to_string();
    }
    write_jsonl(&run.run().join("benchmark.jsonl"), &records);
    write_jsonl(&run.run().join("answers.jsonl"), &answered);
    run.export("ragas", &["--csv"]);
    run.export("deepeval", &["--csv"]);
    let ragas = run.run().join("export/ragas");
    let deepeval = run.run().join("export/deepeval");

    // The CSV writer's quoting still applies to the neutralised cell.
    assert!(
        read(&ragas.join("ragas.csv")).contains("\"'=HYPERLINK(\"\"http://x\"\",\"\"click\"\")\""),
        "{}",
        read(&ragas.join("ragas.csv"))
    );
    let samples = read_jsonl(&ragas.join("ragas.jsonl"));
    let rows = python_csv_rows(&ragas.join("ragas.csv"));
    assert_eq!(rows.len(), 3);
    for ((row, sample), record) in rows.iter().zip(&samples).zip(&records) {
        let n = records.iter().position(|r| r.id == record.id).unwrap();
        // The JSONL keeps the exact text; the CSV cell is it with one `'` in front.
        assert_eq!(sample["user_input"], json!(record.question));
        for (column, text) in [
            ("user_input", FORMULAS[n]),
            ("reference", FORMULAS[n + 3]),
            ("response", FORMULAS[(n + 6) % 7]),
            ("persona/expertise", FORMULAS[(n + 2) % 7]),
        ] {
            assert_eq!(row[column], format!("'{text}"), "{column}");
            assert_eq!(sample[column], json!(text), "{column}");
        }
        // Lists are JSON text, which never begins like a formula, and keep their texts.
        let contexts: Value = serde_json::from_str(&row["reference_contexts"]).unwrap();
        assert_eq!(contexts, sample["reference_contexts"]);
        assert_eq!(row["id"], record.id);
    }

    let goldens = read_jsonl(&deepeval.join("deepeval.jsonl"));
    let rows = python_csv_rows(&deepeval.join("deepeval.csv"));
    assert_eq!(rows.len(), 3);
    for (n, (row, golden)) in rows.iter().zip(&goldens).enumerate() {
        for (column, text) in [
            ("input", FORMULAS[n]),
            ("expected_output", FORMULAS[n + 3]),
            ("actual_output", FORMULAS[(n + 6) % 7]),
        ] {
            assert_eq!(row[column], format!("'{text}"), "{column}");
            assert_eq!(golden[column], json!(text), "{column}");
        }
        let metadata: Value = serde_json::from_str(&row["additional_metadata"]).unwrap();
        assert_eq!(metadata, golden["additional_metadata"]);
        assert_eq!(
            metadata["persona"]["expertise"],
            json!(FORMULAS[(n + 2) % 7])
        );
    }
}

#[test]
fn trec_export_evaluates_to_the_aps_of_the_runs_scores() {
    let run = RunDir::new(true);
    let stderr = run.export("trec", &[]);
    let out = run.run().join("export/trec");
    assert_eq!(files_under(&out), ["qrels.txt", "run.txt"]);
    assert_contains_all(
        &stderr,
        &[
            "qrels.txt: 4 judgments for 3 questions",
            "run.txt: 6 ranked documents",
        ],
    );
    assert_eq!(
        read(&out.join("qrels.txt")),
        "rq1-qc-0001 0 lighthouse-keeper 1\n\
         rq3-0002 0 honeybee-dance 1\n\
         rq2-qc-fine-0003 0 glacier-retreat 1\n\
         rq2-qc-fine-0003 0 chess-opening 1\n"
    );
    // Benchmark order, ranks in trec_eval's order (the tie goes to the larger id), tag = the
    // retriever.
    assert_eq!(
        read(&out.join("run.txt")),
        "rq1-qc-0001 Q0 lighthouse-keeper 1 3.5 bm25\n\
         rq1-qc-0001 Q0 honeybee-dance 2 1.25 bm25\n\
         rq3-0002 Q0 sourdough-starter 1 2 bm25\n\
         rq3-0002 Q0 honeybee-dance 2 2 bm25\n\
         rq2-qc-fine-0003 Q0 sourdough-starter 1 4 bm25\n\
         rq2-qc-fine-0003 Q0 chess-opening 2 1 bm25\n"
    );

    let (stdout, _) = ok(run
        .cmd()
        .args(["eval", "retrieval", "--json", "--qrels"])
        .arg(out.join("qrels.txt"))
        .arg("--run")
        .arg(out.join("run.txt")));
    let evaluation: Value = serde_json::from_str(&stdout).expect("JSON");
    let benchmark = benchmark();
    for answer in answers() {
        let reference = benchmark.iter().find(|r| r.id == answer.id).unwrap();
        // What `hierarag evaluate` writes to scores.jsonl for this answer.
        let score = hierarag_pipeline::score(&answer, reference, &[1.0], &[1.0]);
        let expected = EXPECTED_AP
            .iter()
            .find(|(id, _)| *id == answer.id)
            .unwrap()
            .1;
        let metrics = &evaluation["per_query"][&answer.id];
        assert_eq!(metrics["ap"].as_f64(), Some(expected), "{} AP", answer.id);
        assert_eq!(score.ap, Some(expected), "{} AP in scores.jsonl", answer.id);
        // serde_json (without its float_roundtrip feature) may read a printed float back one
        // ulp off, so the measures that are not dyadic fractions are compared to 1e-12.
        for (measure, value) in [
            ("ndcg_cut_10", score.ndcg_10),
            ("recall_10", score.recall_10),
            ("recip_rank", score.rr),
        ] {
            let printed = metrics[measure].as_f64().expect("a number");
            let value = value.expect("the builtin pipeline's answers have retrieval metrics");
            assert!((printed - value).abs() < 1e-12, "{} {measure}", answer.id);
        }
    }
    assert_eq!(
        evaluation["mean"]["ap"].as_f64(),
        Some((1.0 + 0.5 + 0.25) / 3.0)
    );
}

#[test]
fn an_answer_that_names_no_document_has_retrieval_metrics_absent_not_zero() {
    let benchmark = benchmark();
    let mut answer = answers().remove(0);
    let reference = benchmark.iter().find(|r| r.id == answer.id).unwrap();
    // The builtin pipeline's empty ranking is a ranking: every retrieval metric is 0.
    answer.doc_ids.clear();
    answer.doc_scores.clear();
    let empty = hierarag_pipeline::score(&answer, reference, &[1.0], &[1.0]);
    assert_eq!(
        (empty.ap, empty.ndcg_10, empty.recall_10, empty.rr),
        (Some(0.0), Some(0.0), Some(0.0), Some(0.0))
    );
    // A system that named no document: absent, written as null, read back as absent.
    answer.no_documents = true;
    let absent = hierarag_pipeline::score(&answer, reference, &[1.0], &[1.0]);
    assert_eq!(
        (absent.ap, absent.ndcg_10, absent.recall_10, absent.rr),
        (None, None, None, None)
    );
    assert_eq!(absent.cs, 1.0, "the generation metrics are there");
    let line = serde_json::to_value(&absent).unwrap();
    assert_eq!(line["ap"], Value::Null);
    assert_eq!(line["rr"], Value::Null);
    let back: hierarag_pipeline::ScoreRecord = serde_json::from_value(line).unwrap();
    assert_eq!(back, absent);
    // An answer record written before the field existed reads as naming its documents.
    let mut old = serde_json::to_value(&answer).unwrap();
    old.as_object_mut().unwrap().remove("no_documents");
    let old: AnswerRecord = serde_json::from_value(old).unwrap();
    assert!(!old.no_documents);
}

#[test]
fn without_answers_only_the_benchmark_is_exported() {
    let run = RunDir::new(false);
    let out = run.run().join("export/ragas");
    run.export("ragas", &[]);
    for sample in read_jsonl(&out.join("ragas.jsonl")) {
        let keys: Vec<&String> = sample.as_object().unwrap().keys().collect();
        assert!(
            !keys
                .iter()
                .any(|k| *k == "response" || *k == "retrieved_contexts")
        );
        assert!(sample["reference_contexts"].is_array());
    }
    run.export("deepeval", &[]);
    let goldens = read_jsonl(&run.run().join("export/deepeval/deepeval.jsonl"));
    assert!(goldens.iter().all(|g| g.get("actual_output").is_none()));

    let stderr = run.export("trec", &[]);
    assert_eq!(files_under(&run.run().join("export/trec")), ["qrels.txt"]);
    assert_contains_all(&stderr, &["no answers.jsonl", "hierarag answer"]);

    // The TREC format needs no index.
    std::fs::remove_dir_all(run.run().join("index")).unwrap();
    run.export("trec", &["--out", "trec-again"]);
    assert_eq!(
        read(&run.path("trec-again/qrels.txt")),
        read(&run.run().join("export/trec/qrels.txt"))
    );
}

#[test]
fn quiet_export_prints_nothing() {
    let run = RunDir::new(true);
    let (stdout, stderr) = ok(run
        .cmd()
        .args(["--quiet", "export", "--format", "beir", "--run"])
        .arg(run.run()));
    assert!(stdout.is_empty() && stderr.is_empty(), "{stdout}{stderr}");
}

#[test]
fn run_dir_without_benchmark_is_bad_input_saying_what_to_run() {
    let run = RunDir::new(true);
    std::fs::remove_file(run.run().join("benchmark.jsonl")).unwrap();
    let stderr = bad_input(
        run.cmd()
            .arg("export")
            .arg("--run")
            .arg(run.run())
            .args(["--format", "trec"]),
    );
    assert_contains_all(
        &stderr,
        &["benchmark.jsonl", "hierarag generate", "hierarag run"],
    );
    assert!(!run.run().join("export").exists(), "nothing is written");
}

#[test]
fn missing_index_is_bad_input_for_the_formats_that_read_texts() {
    let run = RunDir::new(true);
    std::fs::remove_dir_all(run.run().join("index")).unwrap();
    for format in ["beir", "ragas", "deepeval"] {
        let stderr = bad_input(
            run.cmd()
                .arg("export")
                .arg("--run")
                .arg(run.run())
                .args(["--format", format]),
        );
        assert_contains_all(
            &stderr,
            &[
                "no index",
                &format!("--format {format}"),
                "hierarag index",
                "--index",
            ],
        );
    }
    assert!(!run.run().join("export").exists(), "nothing is written");
}

#[test]
fn answers_naming_a_chunk_the_index_lacks_are_bad_input() {
    let run = RunDir::new(true);
    let mut answers = answers();
    answers[0].retrieved[0].chunk_id = "honeybee-dance#99".into();
    write_jsonl(&run.run().join("answers.jsonl"), &answers);
    let stderr = bad_input(
        run.cmd()
            .arg("export")
            .arg("--run")
            .arg(run.run())
            .args(["--format", "ragas"]),
    );
    assert_contains_all(&stderr, &["rq3-0002", "honeybee-dance#99", "index"]);
    let out = run.run().join("export/ragas");
    assert!(files_under(&out).is_empty(), "{:?}", files_under(&out));
}

#[test]
fn csv_with_a_format_that_has_none_is_bad_input() {
    let run = RunDir::new(false);
    let stderr = bad_input(
        run.cmd()
            .arg("export")
            .arg("--run")
            .arg(run.run())
            .args(["--format", "trec", "--csv"]),
    );
    assert_contains_all(&stderr, &["--csv", "ragas", "deepeval"]);
}
