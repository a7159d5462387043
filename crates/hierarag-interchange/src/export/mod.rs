//! A run's benchmark (and answers) in other tools' formats: BEIR, Ragas, DeepEval, TREC.

mod beir;
mod files;
mod samples;
mod trec;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use hierarag_corpus::{OnError, split_chunk_id};
use hierarag_index::Bm25Index;
use hierarag_pipeline::read_input;
use hierarag_rag::AnswerRecord;
use hierarag_records::BenchmarkRecord;
use serde_json::{Map, Value};

use hierarag_pipeline::Reporter;
use hierarag_records::RunDir;

/// The tools `hierarag export` writes for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ExportFormat {
    /// BEIR retrieval benchmark: corpus.jsonl, queries.jsonl, qrels/test.tsv.
    Beir,
    /// Ragas SingleTurnSample lines: ragas.jsonl (and ragas.csv with --csv).
    Ragas,
    /// DeepEval Goldens: deepeval.json, deepeval.jsonl (and deepeval.csv with --csv).
    Deepeval,
    /// TREC qrels.txt and, from the answers, run.txt.
    Trec,
}

impl ExportFormat {
    pub fn name(self) -> &'static str {
        match self {
            ExportFormat::Beir => "beir",
            ExportFormat::Ragas => "ragas",
            ExportFormat::Deepeval => "deepeval",
            ExportFormat::Trec => "trec",
        }
    }
}

/// What `hierarag export` writes, where from and where to.
#[derive(Debug, Clone)]
pub struct ExportRequest {
    pub run: RunDir,
    pub format: ExportFormat,
    /// The answers to export with the benchmark (its system's `answers.jsonl`); none when the
    /// file does not exist.
    pub answers: PathBuf,
    /// Where the files go [default: RUN/export/FORMAT].
    pub out: Option<PathBuf>,
    /// The index the answers were retrieved from [default: RUN/index].
    pub index: Option<PathBuf>,
    /// Also ragas.csv / deepeval.csv.
    pub csv: bool,
}

/// Writes the files of `request`; returns the directory they are in.
pub fn export(request: &ExportRequest, reporter: &dyn Reporter) -> anyhow::Result<PathBuf> {
    let format = request.format;
    if request.csv && !matches!(format, ExportFormat::Ragas | ExportFormat::Deepeval) {
        bail!(
            "--csv applies to --format ragas and deepeval; {} writes no CSV",
            format.name()
        );
    }
    let inputs = RunInputs::read(&request.run, &request.answers)?;
    let index_dir = request.index.clone().unwrap_or_else(|| request.run.index());
    // Opened before anything is written, so that a missing index leaves no empty --out behind.
    let index = match format {
        ExportFormat::Trec => None,
        format => Some(open_index(&index_dir, format)?),
    };
    let out = request
        .out
        .clone()
        .unwrap_or_else(|| request.run.root().join("export").join(format.name()));
    std::fs::create_dir_all(&out).with_context(|| format!("{}: cannot create", out.display()))?;
    match (format, &index) {
        (ExportFormat::Beir, Some(index)) => beir::write(&inputs, index, &out, reporter)?,
        (ExportFormat::Ragas, Some(index)) => {
            samples::write(
                samples::Tool::Ragas,
                &inputs,
                index,
                &out,
                request.csv,
                reporter,
            )?;
        }
        (ExportFormat::Deepeval, Some(index)) => {
            let tool = samples::Tool::Deepeval;
            samples::write(tool, &inputs, index, &out, request.csv, reporter)?;
        }
        (ExportFormat::Trec, _) => trec::write(&inputs, &out, reporter)?,
        (_, None) => unreachable!("every format but trec opened the index above"),
    }
    Ok(out)
}

/// What a run directory holds for export: the benchmark, and its answers in benchmark order.
struct RunInputs {
    benchmark: Vec<BenchmarkRecord>,
    /// Empty when the run has no answers.jsonl (or an empty one).
    answers: Vec<AnswerRecord>,
}

impl RunInputs {
    fn read(run_dir: &RunDir, answers: &Path) -> anyhow::Result<RunInputs> {
        let run = run_dir.root();
        if !run.is_dir() {
            bail!("{}: no such run directory", run.display());
        }
        let benchmark_path = run_dir.benchmark();
        if !benchmark_path.exists() {
            bail!(
                "{}: no benchmark in this run directory; make one first with `hierarag run \
                 CONFIG.toml`, or `hierarag plan` then `hierarag generate --out {}`",
                benchmark_path.display(),
                run.display()
            );
        }
        let benchmark = read_input(&benchmark_path, |r: &BenchmarkRecord| r.id.as_str())?;
        let answers_path = answers;
        let mut answers = if answers_path.exists() {
            read_input(answers_path, |a: &AnswerRecord| a.id.as_str())?
        } else {
            Vec::new()
        };
        let order: HashMap<&str, usize> = benchmark
            .iter()
            .enumerate()
            .map(|(n, r)| (r.id.as_str(), n))
            .collect();
        if let Some(stray) = answers.iter().find(|a| !order.contains_key(a.id.as_str())) {
            bail!(
                "{}: question {:?} is not in {}; were the answers made for another benchmark?",
                answers_path.display(),
                stray.id,
                benchmark_path.display()
            );
        }
        answers.sort_by_key(|a| order[a.id.as_str()]);
        Ok(RunInputs { benchmark, answers })
    }

    /// The answer to each question, by question id.
    fn answers_by_id(&self) -> HashMap<&str, &AnswerRecord> {
        self.answers.iter().map(|a| (a.id.as_str(), a)).collect()
    }

    /// Every source document id of the benchmark, each once, in benchmark order.
    fn source_documents(&self) -> Vec<&str> {
        let mut seen = HashSet::new();
        self.benchmark
            .iter()
            .flat_map(|r| r.doc_ids.iter().map(String::as_str))
            .filter(|id| seen.insert(*id))
            .collect()
    }
}

/// A record's source documents without repeats (a judgment file may list a pair only once).
fn unique_doc_ids(record: &BenchmarkRecord) -> Vec<&str> {
    let mut seen = HashSet::new();
    record
        .doc_ids
        .iter()
        .map(String::as_str)
        .filter(|id| seen.insert(*id))
        .collect()
}

/// `"{dimension}/{level}": category` for each of a question's categories, in record order.
fn category_labels(record: &BenchmarkRecord) -> Map<String, Value> {
    record
        .categories
        .iter()
        .map(|c| {
            (
                format!("{}/{}", c.dimension, c.level),
                Value::String(c.category.clone()),
            )
        })
        .collect()
}

/// The persona as a JSON object, `{name: persona}`.
fn persona_object(record: &BenchmarkRecord) -> Map<String, Value> {
    record
        .persona
        .iter()
        .map(|(name, value)| (name.clone(), Value::String(value.clone())))
        .collect()
}

/// Opens the index of a run, saying what to do when there is none.
fn open_index(dir: &Path, format: ExportFormat) -> anyhow::Result<Bm25Index> {
    if !dir.join("manifest.json").exists() {
        bail!(
            "{}: no index here, and --format {} needs one: it reads document texts from the \
             corpus the index was built from{}. Build it with `hierarag index --corpus CORPUS \
             --out {}`, or point --index at the run's index",
            dir.display(),
            format.name(),
            if format == ExportFormat::Beir {
                ""
            } else {
                " and retrieved chunk texts from the index"
            },
            dir.display()
        );
    }
    Bm25Index::open(dir).with_context(|| format!("opening the index {}", dir.display()))
}

/// How to read the corpus of an index: skipping bad records only if its build skipped some,
/// so that the documents read are the documents indexed.
fn corpus_on_error(index: &Bm25Index) -> OnError {
    if index.manifest().counts.skipped > 0 {
        OnError::Skip
    } else {
        OnError::Fail
    }
}

/// Context for an error while reading an index's corpus.
fn corpus_context(index: &Bm25Index) -> String {
    let inputs = &index.manifest().corpus.spec.inputs;
    let hint = if inputs.iter().any(|input| Path::new(input).is_relative()) {
        "its relative paths are read from the current directory, so export from where the \
         index was built"
    } else {
        "if it moved, rebuild the index with `hierarag index`"
    };
    format!(
        "reading the corpus that {} names ({}; {hint})",
        index.dir().join("manifest.json").display(),
        inputs.join(", ")
    )
}

/// Fails naming the benchmark's source documents that the corpus lacks.
fn check_documents_found(
    index: &Bm25Index,
    wanted: &[&str],
    found: impl Fn(&str) -> bool,
) -> anyhow::Result<()> {
    let missing: Vec<&str> = wanted.iter().copied().filter(|id| !found(id)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let shown: Vec<String> = missing.iter().take(5).map(|id| format!("{id:?}")).collect();
    bail!(
        "{} source document(s) of the benchmark are not in the corpus of {}: {}{}; was the \
         corpus changed since the benchmark was made?",
        missing.len(),
        index.dir().display(),
        shown.join(", "),
        if missing.len() > shown.len() {
            ", …"
        } else {
            ""
        }
    )
}

/// The texts of the documents `ids`, in one streaming pass over the index's corpus that stops
/// once all are found.
fn document_texts(
    index: &Bm25Index,
    ids: &[&str],
    reporter: &dyn Reporter,
) -> anyhow::Result<HashMap<String, String>> {
    let wanted: HashSet<&str> = ids.iter().copied().collect();
    let texts = crate::collect_documents(
        &index.manifest().corpus.spec,
        corpus_on_error(index),
        &wanted,
        reporter,
    )
    .with_context(|| corpus_context(index))?;
    check_documents_found(index, ids, |id| texts.contains_key(id))?;
    Ok(texts)
}

/// The stored texts of every chunk the answers retrieved, by chunk id. Finds each chunk by its
/// document's position and its number, and reads only those chunks' texts.
fn chunk_texts(
    index: &Bm25Index,
    answers: &[AnswerRecord],
) -> anyhow::Result<HashMap<String, String>> {
    // (document id, chunk number) of every retrieved chunk id.
    let mut wanted: HashMap<&str, (&str, u32)> = HashMap::new();
    for answer in answers {
        for chunk in &answer.retrieved {
            let parsed = split_chunk_id(&chunk.chunk_id)
                .and_then(|(doc_id, n)| Some((doc_id, u32::try_from(n).ok()?)));
            let Some((doc_id, n)) = parsed else {
                bail!(
                    "answers.jsonl: question {:?} retrieved chunk {:?}, which is not a chunk id \
                     (`{{doc_id}}#{{n}}`)",
                    answer.id,
                    chunk.chunk_id
                );
            };
            wanted.insert(chunk.chunk_id.as_str(), (doc_id, n));
        }
    }
    if wanted.is_empty() {
        return Ok(HashMap::new());
    }
    let wanted_docs: HashSet<&str> = wanted.values().map(|(doc_id, _)| *doc_id).collect();
    let mut doc_ords: HashMap<&str, u32> = HashMap::with_capacity(wanted_docs.len());
    for doc_ord in 0..index.n_documents() as u32 {
        let doc_id = index.doc_id_at(doc_ord);
        if let Some(doc_id) = wanted_docs.get(doc_id) {
            doc_ords.insert(doc_id, doc_ord);
        }
    }
    let by_position: HashMap<(u32, u32), &str> = wanted
        .iter()
        .filter_map(|(chunk_id, (doc_id, n))| Some(((*doc_ords.get(doc_id)?, *n), *chunk_id)))
        .collect();
    let mut texts = HashMap::with_capacity(by_position.len());
    for position in index.chunk_positions() {
        if let Some(chunk_id) = by_position.get(&(position.doc_ord, position.chunk_n)) {
            let text = index
                .chunk_text(&position.hit(0.0))
                .with_context(|| format!("reading chunk {chunk_id} from the index"))?;
            texts.insert((*chunk_id).to_string(), text);
        }
    }
    if let Some(answer) = answers
        .iter()
        .find(|a| a.retrieved.iter().any(|c| !texts.contains_key(&c.chunk_id)))
    {
        let chunk = answer
            .retrieved
            .iter()
            .find(|c| !texts.contains_key(&c.chunk_id))
            .expect("found above");
        bail!(
            "answers.jsonl: question {:?} retrieved chunk {:?}, which the index {} does not \
             have; was the index rebuilt since the answers were made? (point --index at the \
             index they were retrieved from)",
            answer.id,
            chunk.chunk_id,
            index.dir().display()
        );
    }
    Ok(texts)
}

/// `wrote PATH: WHAT` as a note.
fn wrote(reporter: &dyn Reporter, path: &Path, what: impl std::fmt::Display) {
    note(reporter, format!("wrote {}: {what}", path.display()));
}

/// A note to the reporter.
fn note(reporter: &dyn Reporter, message: impl AsRef<str>) {
    reporter.note(message.as_ref());
}
