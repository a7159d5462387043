//! Retrievers: a question in, the top chunks out.

use std::sync::{Arc, Mutex};

use hierarag_index::{Bm25Index, Hit, Level, Scratch};
use hierarag_llm::BoxFuture;
use serde::{Deserialize, Serialize};

use crate::error::RagError;

/// One retrieved chunk, best first in a retriever's list.
#[derive(Debug, Clone, PartialEq)]
pub struct RetrievedChunk {
    /// `{doc_id}#{n}`.
    pub chunk_id: String,
    pub doc_id: String,
    pub score: f64,
    pub text: String,
}

/// Which retriever answers questions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum RetrieverKind {
    /// BM25 over the index's chunks (the paper's).
    #[default]
    Bm25,
    /// MiniLM embeddings of the chunks, exact cosine search.
    Dense,
    /// Reciprocal rank fusion of BM25 and dense.
    Hybrid,
}

impl RetrieverKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RetrieverKind::Bm25 => "bm25",
            RetrieverKind::Dense => "dense",
            RetrieverKind::Hybrid => "hybrid",
        }
    }
}

/// Something that ranks chunks for a question.
pub trait Retriever: Send + Sync + std::fmt::Debug {
    /// `bm25`, `dense`, `hybrid`.
    fn name(&self) -> &str;
    /// The best `k` chunks for `query`, best first.
    fn retrieve<'a>(
        &'a self,
        query: &'a str,
        k: usize,
    ) -> BoxFuture<'a, Result<Vec<RetrievedChunk>, RagError>>;
}

/// BM25 over an index's chunks, the order of [`Bm25Index::search`].
#[derive(Debug)]
pub struct Bm25Retriever {
    /// Shared with a [`crate::DenseRetriever`] over the same index, if any.
    index: Arc<Bm25Index>,
    /// Working memory, reused across calls (one per concurrent caller).
    scratches: Mutex<Vec<Scratch>>,
}

impl Bm25Retriever {
    /// A retriever over `index` (a [`Bm25Index`], or an `Arc` of one shared with a
    /// [`crate::DenseRetriever`]).
    pub fn new(index: impl Into<Arc<Bm25Index>>) -> Bm25Retriever {
        Bm25Retriever {
            index: index.into(),
            scratches: Mutex::new(Vec::new()),
        }
    }

    pub fn index(&self) -> &Bm25Index {
        &self.index
    }

    pub fn shared_index(&self) -> &Arc<Bm25Index> {
        &self.index
    }

    /// The top `k` chunks, synchronously.
    pub fn search(&self, query: &str, k: usize) -> Result<Vec<RetrievedChunk>, RagError> {
        self.hits(query, k)
            .iter()
            .map(|hit| retrieved_chunk(&self.index, hit, f64::from(hit.score)))
            .collect()
    }

    /// The top `k` chunks as index hits, without their texts.
    pub fn hits(&self, query: &str, k: usize) -> Vec<Hit> {
        let mut scratch = self
            .scratches
            .lock()
            .expect("scratch pool")
            .pop()
            .unwrap_or_else(|| self.index.scratch());
        let hits = self.index.search(&mut scratch, query, k, Level::Chunk);
        self.scratches.lock().expect("scratch pool").push(scratch);
        hits
    }
}

/// A hit of `index` with its ids and stored text, scored `score`.
pub(crate) fn retrieved_chunk(
    index: &Bm25Index,
    hit: &Hit,
    score: f64,
) -> Result<RetrievedChunk, RagError> {
    Ok(RetrievedChunk {
        chunk_id: index.chunk_id(hit),
        doc_id: index.doc_id(hit).to_string(),
        score,
        text: index.chunk_text(hit)?,
    })
}

impl Retriever for Bm25Retriever {
    fn name(&self) -> &str {
        RetrieverKind::Bm25.as_str()
    }

    fn retrieve<'a>(
        &'a self,
        query: &'a str,
        k: usize,
    ) -> BoxFuture<'a, Result<Vec<RetrievedChunk>, RagError>> {
        Box::pin(async move { self.search(query, k) })
    }
}

/// The ranked documents of a chunk list: each document at its first (best) chunk, with that
/// chunk's score.
pub fn ranked_documents(chunks: &[RetrievedChunk]) -> Vec<(String, f64)> {
    let mut seen = std::collections::HashSet::new();
    chunks
        .iter()
        .filter(|c| seen.insert(c.doc_id.as_str()))
        .map(|c| (c.doc_id.clone(), c.score))
        .collect()
}
