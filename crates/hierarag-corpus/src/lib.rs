//! Streaming corpus readers and word-based chunking: the first stage of the HieraRAG pipeline.
//!
//! A **corpus** is one or more input files (JSONL, Parquet, or a directory of `.txt`/`.md` files);
//! it is read one **document** at a time, never held in memory whole. Each document is cut into
//! **chunks** of a fixed number of whitespace-separated words (512 by default, docs/design.md, "The RAG run").
//!
//! Main types:
//! - [`CorpusSpec`]: which files, which format, which JSON/Parquet fields hold the id and text.
//! - [`Documents`]: the streaming iterator, which also enforces unique ids, non-empty texts and
//!   non-empty inputs and applies the [`OnError`] policy, keeping a record of every skipped input
//!   with the records lost with it ([`Skipped`], totals in [`ReadSummary`]).
//! - [`ParquetCorpus`]: a corpus of Parquet files read for sampling: every row's id (and a
//!   text length when asked) decoded on all cores without keeping texts, then the texts of
//!   chosen rows by row selection.
//! - [`ChunkParams`] and [`chunks`]: deterministic chunking; chunk ids are `{doc_id}#{n}`.
//! - [`CorpusError`]: every message names the file, the line (JSONL, text), row or row group
//!   (Parquet), and the field at fault.
//!
//! ```
//! use hierarag_corpus::{chunks, ChunkParams};
//! let params = ChunkParams { size: 3, overlap: 1 };
//! let texts: Vec<&str> = chunks("one two  three four\nfive", &params).map(|c| c.text).collect();
//! assert_eq!(texts, ["one two  three", "three four\nfive"]);
//! ```

mod chunk;
mod error;
mod jsonl;
mod parquet_reader;
mod reader;
mod scan;
mod textdir;

pub use chunk::{ChunkParams, ChunkParamsError, TextChunk, chunk_id, chunks, split_chunk_id};
pub use error::{CorpusError, Location, Position};
pub use reader::{CorpusFormat, CorpusSpec, Document, Documents, OnError, ReadSummary, Skipped};
pub use scan::{Measure, ParquetCorpus, RowRef, ScanSummary, ScannedRow};
pub use textdir::is_text_document;
