//! `hierarag index`.

use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use hierarag_assets::WheelSource;
use hierarag_corpus::{ChunkParams, CorpusFormat, CorpusSpec, OnError, ReadSummary};
use hierarag_index::{BuildOptions, BuildOutcome, build_index};

use crate::cli::{ChunkArgs, CorpusArgs, FormatArg, IndexArgs, OnErrorArg};
use crate::output::{note, progress_bar};

/// The name that stands for the built-in Wikipedia sample wherever a corpus path is expected.
pub const WIKI_SAMPLE_NAME: &str = "wiki-sample";

pub fn corpus_spec(args: &CorpusArgs, quiet: bool) -> anyhow::Result<CorpusSpec> {
    let mut inputs = Vec::with_capacity(args.inputs.len());
    for input in &args.inputs {
        if input == WIKI_SAMPLE_NAME && !std::path::Path::new(input).exists() {
            let path = super::data::wiki_sample(WheelSource::Pip, quiet)?;
            inputs.push(path.to_string_lossy().into_owned());
        } else {
            inputs.push(input.clone());
        }
    }
    Ok(CorpusSpec {
        inputs,
        format: args.format.map(|f| match f {
            FormatArg::Jsonl => CorpusFormat::Jsonl,
            FormatArg::Parquet => CorpusFormat::Parquet,
            FormatArg::Textdir => CorpusFormat::TextDir,
        }),
        id_field: args.id_field.clone(),
        text_field: args.text_field.clone(),
    })
}

pub fn chunk_params(args: &ChunkArgs) -> ChunkParams {
    ChunkParams {
        size: args.chunk_size,
        overlap: args.chunk_overlap,
    }
}

pub fn run(args: &IndexArgs, quiet: bool) -> anyhow::Result<ExitCode> {
    let spec = corpus_spec(&args.corpus, quiet)?;
    let options = BuildOptions {
        chunking: chunk_params(&args.chunking),
        on_error: match args.corpus.on_error {
            OnErrorArg::Fail => OnError::Fail,
            OnErrorArg::Skip => OnError::Skip,
        },
        writer_heap_bytes: args.writer_heap_mb << 20,
        threads: args.threads,
        overwrite: args.overwrite,
    };
    build(&spec, &args.out, &options, quiet)?;
    Ok(ExitCode::SUCCESS)
}

/// Builds an index with a progress bar and prints a summary on stderr.
pub fn build(
    spec: &CorpusSpec,
    out: &std::path::Path,
    options: &BuildOptions,
    quiet: bool,
) -> anyhow::Result<BuildOutcome> {
    let started = Instant::now();
    let bar = progress_bar(
        quiet,
        None,
        "{spinner} indexing: {pos} docs, {per_sec}, {msg} [{elapsed}]",
    );
    let outcome = build_index(spec, out, options, &mut |p| {
        bar.set_position(p.documents);
        let secs = started.elapsed().as_secs_f64().max(1e-9);
        bar.set_message(format!(
            "{} chunks, {:.1} MB/s",
            p.chunks,
            p.text_bytes as f64 / 1e6 / secs
        ));
    })
    .with_context(|| format!("indexing into {}", out.display()))?;
    bar.finish_and_clear();
    let manifest = outcome.manifest();
    let counts = &manifest.counts;
    match &outcome {
        BuildOutcome::UpToDate { .. } => note(
            quiet,
            format!(
                "{}: up to date ({} documents, {} chunks); nothing to do",
                out.display(),
                counts.documents,
                counts.chunks
            ),
        ),
        BuildOutcome::Built { skipped, .. } => {
            let secs = started.elapsed().as_secs_f64();
            note(
                quiet,
                format!(
                    "indexed {} documents into {} chunks of ≤{} words ({:.1} MB of text) in {:.1} s: {:.0} docs/s, {:.1} MB/s",
                    counts.documents,
                    counts.chunks,
                    manifest.chunking.size,
                    counts.text_bytes as f64 / 1e6,
                    secs,
                    counts.documents as f64 / secs,
                    counts.text_bytes as f64 / 1e6 / secs
                ),
            );
            if !skipped.is_empty() {
                note(
                    quiet,
                    format!(
                        "skipped {} (listed in {}); first: {}",
                        ReadSummary::of_skipped(skipped).describe_skipped(),
                        out.join("skipped.jsonl").display(),
                        skipped[0].reason
                    ),
                );
            }
        }
    }
    std::io::stderr().flush().ok();
    Ok(outcome)
}
