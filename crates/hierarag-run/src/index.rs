//! Indexing a corpus with progress and a summary of what was built or skipped.

use std::path::Path;
use std::time::Instant;

use anyhow::Context;
use hierarag_corpus::{CorpusSpec, ReadSummary};
use hierarag_index::{BuildOptions, BuildOutcome, build_index};

use hierarag_pipeline::Reporter;

/// Builds (or finds up to date) the index of `spec` in `out`, reporting progress and a
/// summary.
pub fn build(
    spec: &CorpusSpec,
    out: &Path,
    options: &BuildOptions,
    reporter: &dyn Reporter,
) -> anyhow::Result<BuildOutcome> {
    let started = Instant::now();
    let counter = reporter.counter("indexing", "docs", None);
    let outcome = build_index(spec, out, options, &mut |p| {
        counter.set_position(p.documents);
        let secs = started.elapsed().as_secs_f64().max(1e-9);
        counter.set_message(format!(
            "{} chunks, {:.1} MB/s",
            p.chunks,
            p.text_bytes as f64 / 1e6 / secs
        ));
    })
    .with_context(|| format!("indexing into {}", out.display()))?;
    drop(counter);
    let manifest = outcome.manifest();
    let counts = &manifest.counts;
    match &outcome {
        BuildOutcome::UpToDate { .. } => reporter.note(&format!(
            "{}: up to date ({} documents, {} chunks); nothing to do",
            out.display(),
            counts.documents,
            counts.chunks
        )),
        BuildOutcome::Built {
            skipped,
            language_mismatch,
            ..
        } => {
            let secs = started.elapsed().as_secs_f64();
            reporter.note(&format!(
                "indexed {} documents into {} chunks of ≤{} words ({:.1} MB of text) in {:.1} s: {:.0} docs/s, {:.1} MB/s",
                counts.documents,
                counts.chunks,
                manifest.chunking.size,
                counts.text_bytes as f64 / 1e6,
                secs,
                counts.documents as f64 / secs,
                counts.text_bytes as f64 / 1e6 / secs
            ));
            if let Some(mismatch) = language_mismatch {
                reporter.warn(&format!("{}: {mismatch}", out.display()));
            }
            if !skipped.is_empty() {
                reporter.note(&format!(
                    "skipped {} (listed in {}); first: {}",
                    ReadSummary::of_skipped(skipped).describe_skipped(),
                    out.join("skipped.jsonl").display(),
                    skipped[0].reason
                ));
            }
        }
    }
    Ok(outcome)
}
