//! Retrieval on its own, file to file: queries from a JSONL file, a TREC run file written from
//! an index, qrels and runs evaluated with trec_eval's semantics.

use std::io::{BufReader, Write};
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, bail};
use hierarag_corpus::{CorpusFormat, CorpusSpec, OnError};
use hierarag_index::{Bm25Index, Hit, Level};
use hierarag_metrics::{EvalOptions, Evaluation, Qrels, Run, TruncatedGrades, evaluate_with};

use hierarag_pipeline::Reporter;

/// A query read from a JSONL file.
#[derive(Debug, Clone)]
pub struct Query {
    pub id: String,
    pub text: String,
    /// `file line N`, for error messages.
    pub location: String,
}

/// Reads `{id, query}` lines with the corpus reader, which names file, line and field on error
/// and refuses duplicate ids.
pub fn read_queries(path: &Path, id_field: &str, query_field: &str) -> anyhow::Result<Vec<Query>> {
    let spec = CorpusSpec {
        inputs: vec![path.to_string_lossy().into_owned()],
        format: Some(CorpusFormat::Jsonl),
        id_field: id_field.to_string(),
        text_field: query_field.to_string(),
    };
    let mut queries = Vec::new();
    for record in spec.documents(OnError::Fail)? {
        let record = record.with_context(|| format!("reading queries from {}", path.display()))?;
        queries.push(Query {
            id: record.id,
            text: record.text,
            location: record.location.to_string(),
        });
    }
    Ok(queries)
}

/// How `hierarag retrieve` ranks and tags.
#[derive(Debug, Clone)]
pub struct RetrieveSettings {
    /// Results per query.
    pub k: usize,
    pub level: Level,
    /// Query threads (0: one per core).
    pub threads: usize,
    /// The run tag (last column of the run file).
    pub tag: String,
}

/// Runs `queries` against `index` and writes a TREC run file to `out` (atomically).
pub fn retrieve(
    index: &Bm25Index,
    queries: &[Query],
    settings: &RetrieveSettings,
    out: &Path,
    reporter: &dyn Reporter,
) -> anyhow::Result<()> {
    let RetrieveSettings {
        k,
        level,
        threads,
        ref tag,
    } = *settings;
    if tag.chars().any(char::is_whitespace) || tag.is_empty() {
        bail!("--tag `{tag}` must be one word: TREC run files are whitespace-separated");
    }
    for query in queries {
        if query.id.chars().any(char::is_whitespace) {
            bail!(
                "{}, field `id`: query id `{}` contains whitespace, which a TREC run file cannot hold",
                query.location,
                query.id
            );
        }
    }
    let started = Instant::now();
    let bar = reporter.counter("retrieve", "queries", Some(queries.len() as u64));
    let texts: Vec<&str> = queries.iter().map(|q| q.text.as_str()).collect();
    let results = index.search_batch(&texts, k, level, threads, &|| bar.inc(1))?;
    drop(bar);
    let secs = started.elapsed().as_secs_f64();

    let mut writer = hierarag_fs::AtomicFile::create(out)
        .with_context(|| format!("creating {}", out.display()))?;
    let mut n_empty = 0usize;
    for (query, hits) in queries.iter().zip(&results) {
        if hits.is_empty() {
            n_empty += 1;
        }
        for (rank, hit) in hits.iter().enumerate() {
            let id = run_id(index, hit, level);
            if id.chars().any(char::is_whitespace) {
                bail!(
                    "document id `{id}` contains whitespace, which a TREC run file cannot hold; \
                     re-index with ids without spaces"
                );
            }
            writeln!(
                writer,
                "{} Q0 {id} {} {} {tag}",
                query.id,
                rank + 1,
                hit.score
            )?;
        }
    }
    writer
        .finish()
        .with_context(|| format!("writing {}", out.display()))?;
    reporter.note(&format!(
        "retrieved top {k} for {} queries in {:.2} s ({:.0} queries/s); {} without results; run written to {}",
        queries.len(),
        secs,
        queries.len() as f64 / secs.max(1e-9),
        n_empty,
        out.display()
    ));
    Ok(())
}

fn run_id(index: &Bm25Index, hit: &Hit, level: Level) -> String {
    match level {
        Level::Doc => index.doc_id(hit).to_string(),
        Level::Chunk => index.chunk_id(hit),
    }
}

fn open(path: &Path) -> anyhow::Result<BufReader<std::fs::File>> {
    let file =
        std::fs::File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    Ok(BufReader::new(file))
}

/// A run evaluated from files, with what the qrels reader accepted but the user should hear
/// about.
#[derive(Debug)]
pub struct FileEvaluation {
    pub evaluation: Evaluation,
    /// Grades of the qrels file that were not integers and were truncated as trec_eval
    /// truncates them (the warning names the file and the first line).
    pub truncated_grades: Option<TruncatedGrades>,
}

/// Reads qrels and run files as trec_eval 10 reads them and evaluates them with `options`.
pub fn evaluate_files(
    qrels: &Path,
    run: &Path,
    options: &EvalOptions,
) -> anyhow::Result<FileEvaluation> {
    let qrels = Qrels::parse(open(qrels)?, &qrels.display().to_string())?;
    let run = Run::from_reader(open(run)?, &run.display().to_string())?;
    Ok(FileEvaluation {
        evaluation: evaluate_with(&qrels.qrels, &run, options),
        truncated_grades: qrels.truncated_grades,
    })
}
