//! Files from and for other tools: benchmarks made elsewhere read into a run ([`import`]:
//! DataMorgana, Ragas, DeepEval, mapped JSONL/CSV), a run's benchmark and answers written for
//! them ([`export`]: BEIR, Ragas, DeepEval, TREC), answers made elsewhere read from a file
//! ([`answers`]: Ragas, DeepEval, RAGChecker, mapped JSONL/CSV) or replied by a user's program,
//! service or function ([`replies`]), and taxonomies as TOML or a
//! DataMorgana configuration ([`taxonomy`]); prediction/reference pair files and their ROUGE-1
//! and BLEU ([`text`], `hierarag eval text`); queries run into TREC run files and qrels
//! evaluated with trec_eval's semantics ([`retrieval`]).
//!
//! Every reader names the file, the line (or row, or position) and the field of a bad input.
//! Nothing here calls a model: the texts of context answers are found in the BM25 index, and
//! the documents' texts are read from the corpus ([`collect_documents`]).

pub mod answers;
pub mod export;
pub mod import;
pub mod replies;
pub mod retrieval;
pub mod taxonomy;
pub mod text;

use std::collections::{HashMap, HashSet};

use hierarag_corpus::{CorpusSpec, OnError};
use hierarag_pipeline::Reporter;

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
