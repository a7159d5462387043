//! The BM25 index: the one crate that knows tantivy.
//!
//! [`build_index`] streams a corpus (via `hierarag-corpus`), cuts each document into chunks and
//! indexes every chunk with tantivy (analyzer of the corpus language: for English, the default,
//! lowercase, English stop words, English stemming; for Chinese, Japanese and Korean, CJK
//! bigrams; for the other languages, Unicode words with their Snowball stemmer; BM25 k1 = 1.2,
//! b = 0.75), writing `manifest.json` beside the index so that it is never reused with other
//! chunking parameters or another language. [`Bm25Index`] opens it and answers queries: the query text is
//! analysed with the same analyzer and scored term-at-a-time straight over tantivy's postings,
//! with tantivy's own BM25 weights, so scores equal a `BooleanQuery` of `TermQuery`s.
//!
//! Rankings are deterministic whatever the segment layout: hits are ordered by score descending,
//! then document id descending (trec_eval's tie order), then chunk number ascending. At the
//! document level each document appears once, at its best chunk (docs/design.md, "The RAG run").
//!
//! ```no_run
//! use hierarag_index::{Bm25Index, Level};
//! let index = Bm25Index::open(std::path::Path::new("runs/wiki/index"))?;
//! let mut scratch = index.scratch();
//! for hit in index.search(&mut scratch, "Who wrote 2001: A Space Odyssey?", 10, Level::Doc) {
//!     println!("{} {:.3}", index.doc_id(&hit), hit.score);
//! }
//! # Ok::<(), hierarag_index::IndexError>(())
//! ```

mod analyzer;
mod build;
mod error;
mod manifest;
mod maxscore;
mod search;

pub use analyzer::{ANALYZER_NAME, analyze, analyzer_for, analyzer_name, english_analyzer};
pub use build::{BuildOptions, BuildOutcome, BuildProgress, build_index};
pub use error::IndexError;
pub use manifest::{AnalyzerInfo, Bm25Params, CorpusInfo, Counts, FileFingerprint, IndexManifest};
pub use search::{Bm25Index, ChunkPosition, Hit, Level, Scratch, SearchResult, StoredChunk};
