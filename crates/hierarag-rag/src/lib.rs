//! The RAG run (DESIGN.md §6): retrieve the top chunks for a benchmark question, ask the
//! answering model to answer from them only (or to say it cannot), and record what it saw and
//! said.
//!
//! - [`Retriever`]: [`Bm25Retriever`] (the paper's: BM25 over 512-word chunks), and the dense
//!   and hybrid options of [`RetrieverKind`];
//! - [`Answerer`]: numbered chunks + the refusal instruction → [`AnswerRecord`], one line of
//!   `answers.jsonl` (retrieved chunk ids, ranked documents with scores, answer, refusal flag,
//!   usage);
//! - [`is_refusal`]: whether an answer declines to answer.
//!
//! Documents are ranked at their best chunk ([`ranked_documents`]); these rankings are what
//! the retrieval metrics score.

mod answer;
mod error;
mod retrieve;

pub use answer::{
    AnswerModel, AnswerRecord, AnswerSettings, AnswerUsage, Answerer, ChunkRef, REFUSAL,
    answer_messages, is_refusal,
};
pub use error::RagError;
pub use retrieve::{Bm25Retriever, RetrievedChunk, Retriever, RetrieverKind, ranked_documents};
