//! The RAG run (docs/design.md, "The RAG run"): retrieve the top chunks for a benchmark question, ask the
//! answering model to answer from them only (or to say it cannot), and record what it saw and
//! said.
//!
//! - [`Retriever`]: one per [`RetrieverKind`]:
//!   - [`Bm25Retriever`] (the paper's): BM25 over 512-word chunks;
//!   - [`DenseRetriever`]: cosine search over embeddings of every chunk (MiniLM by
//!     default), computed once by [`DenseRetriever::build`] and stored beside the index
//!     (`<index>/dense/<backend>-<model>/embeddings.f32` + `meta.json`), reused while the index
//!     and the model are the same, memory-mapped; exact, or from [`DenseSettings::ann_threshold`]
//!     chunks on among the candidates of an HNSW graph ([`HnswIndex`], usearch, stored beside
//!     them as `hnsw.usearch` + `hnsw.json`) rescored exactly;
//!   - [`HybridRetriever`]: [`reciprocal_rank_fusion`] of the two, each read to depth
//!     `max(k, 100)`, fused score Σ 1 / (60 + rank) ([`FusionSettings`]).
//!
//!   Every ranking is ordered by score descending, then document id descending, then chunk
//!   number ascending, so it never depends on thread or segment layout;
//! - [`Answerer`]: numbered chunks + the refusal instruction → [`AnswerRecord`], one line of
//!   `answers.jsonl` (retrieved chunk ids, ranked documents with scores, answer, refusal flag,
//!   usage);
//! - [`is_refusal`]: whether an answer declines to answer.
//!
//! Documents are ranked at their best chunk ([`ranked_documents`]); these rankings are what
//! the retrieval metrics score.
//!
//! ```no_run
//! # async fn run(embedder: std::sync::Arc<hierarag_llm::Embedder>) -> Result<(), hierarag_rag::RagError> {
//! use std::sync::Arc;
//! use hierarag_index::Bm25Index;
//! use hierarag_rag::{
//!     Bm25Retriever, DenseRetriever, DenseSettings, FusionSettings, HybridRetriever, Retriever,
//! };
//!
//! let index = Arc::new(Bm25Index::open(std::path::Path::new("runs/wiki/index"))?);
//! let cache_dir = DenseRetriever::default_cache_dir(&index, &embedder);
//! let settings = DenseSettings::default();
//! let dense = DenseRetriever::build(index.clone(), embedder, &cache_dir, &settings, &mut |p| {
//!     eprintln!("{p:?}")
//! })
//! .await?;
//! let hybrid = HybridRetriever::new(Bm25Retriever::new(index), dense, FusionSettings::default())?;
//! for chunk in hybrid.retrieve("Who wrote 2001: A Space Odyssey?", 10).await? {
//!     println!("{} {:.4}", chunk.chunk_id, chunk.score);
//! }
//! # Ok(())
//! # }
//! ```

mod ann;
mod answer;
mod dense;
mod error;
mod hybrid;
mod retrieve;
mod rows;

pub use ann::{HNSW_FILE, HNSW_META_FILE, HnswIndex, HnswProgress, HnswSettings};
pub use answer::{
    AnswerModel, AnswerRecord, AnswerSettings, AnswerUsage, Answerer, ChunkRef, REFUSAL,
    answer_messages, is_refusal, is_refusal_in, passage_text,
};
pub use dense::{
    ANN_THRESHOLD, AnnMode, CHUNKS_PER_STEP, DenseProgress, DenseRetriever, DenseSettings,
    EMBEDDINGS_FILE, META_FILE,
};
pub use error::RagError;
pub use hybrid::{
    FUSION_DEPTH, FusionSettings, HybridRetriever, RRF_CONSTANT, reciprocal_rank_fusion,
};
pub use retrieve::{Bm25Retriever, RetrievedChunk, Retriever, RetrieverKind, ranked_documents};
pub use rows::EmbeddingRows;
