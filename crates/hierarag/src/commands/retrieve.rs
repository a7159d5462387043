//! `hierarag retrieve`: batch retrieval into a TREC run file.

use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, bail};
use hierarag_corpus::{CorpusFormat, CorpusSpec, OnError};
use hierarag_index::{Bm25Index, Hit, Level};

use crate::cli::RetrieveArgs;
use crate::output::{note, progress_bar};

/// A query read from a JSONL file.
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

pub fn run(args: &RetrieveArgs, quiet: bool) -> anyhow::Result<ExitCode> {
    let mut index = Bm25Index::open(&args.index)
        .with_context(|| format!("opening index {}", args.index.display()))?;
    if let Some(postings) = args.prune_above {
        index = index.with_pruning_threshold(postings);
    }
    let queries = read_queries(&args.queries, &args.id_field, &args.query_field)?;
    retrieve(
        &index,
        &queries,
        args.k,
        super::search::level(args.level),
        args.threads,
        &args.tag,
        &args.out,
        quiet,
    )?;
    Ok(ExitCode::SUCCESS)
}

#[allow(clippy::too_many_arguments)] // one flat call mirrors the subcommand's options
pub fn retrieve(
    index: &Bm25Index,
    queries: &[Query],
    k: usize,
    level: Level,
    threads: usize,
    tag: &str,
    out: &Path,
    quiet: bool,
) -> anyhow::Result<()> {
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
    let bar = progress_bar(
        quiet,
        Some(queries.len() as u64),
        "{bar:30} {pos}/{len} queries, {per_sec} [{elapsed}<{eta}]",
    );
    let texts: Vec<&str> = queries.iter().map(|q| q.text.as_str()).collect();
    let results = index.search_batch(&texts, k, level, threads, &|| bar.inc(1))?;
    bar.finish_and_clear();
    let secs = started.elapsed().as_secs_f64();

    let tmp = out.with_extension("trec.tmp");
    let file =
        std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    let mut writer = BufWriter::new(file);
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
    writer.flush()?;
    drop(writer);
    std::fs::rename(&tmp, out).with_context(|| format!("writing {}", out.display()))?;
    note(
        quiet,
        format!(
            "retrieved top {k} for {} queries in {:.2} s ({:.0} queries/s); {} without results; run written to {}",
            queries.len(),
            secs,
            queries.len() as f64 / secs.max(1e-9),
            n_empty,
            out.display()
        ),
    );
    Ok(())
}

fn run_id(index: &Bm25Index, hit: &Hit, level: Level) -> String {
    match level {
        Level::Doc => index.doc_id(hit).to_string(),
        Level::Chunk => index.chunk_id(hit),
    }
}
