//! Hybrid retrieval: reciprocal rank fusion of BM25 and dense rankings.

use std::collections::{HashMap, HashSet};

use hierarag_index::{Bm25Index, Hit};
use hierarag_llm::BoxFuture;
use serde::{Deserialize, Serialize};

use crate::dense::DenseRetriever;
use crate::error::RagError;
use crate::retrieve::{Bm25Retriever, RetrievedChunk, Retriever, RetrieverKind, retrieved_chunk};

/// The usual reciprocal rank fusion constant (Cormack et al., 2009).
pub const RRF_CONSTANT: f64 = 60.0;
/// How deep each ranking is read by default (at least `k`).
pub const FUSION_DEPTH: usize = 100;

/// How the hybrid retriever fuses its rankings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FusionSettings {
    /// Each retriever contributes its top `max(k, depth)` chunks.
    pub depth: usize,
    /// `c` in Σ 1 / (c + rank); finite and ≥ 0.
    pub rrf_constant: f64,
}

impl Default for FusionSettings {
    fn default() -> FusionSettings {
        FusionSettings {
            depth: FUSION_DEPTH,
            rrf_constant: RRF_CONSTANT,
        }
    }
}

/// Fuses rankings of chunks, each named `(doc_id, chunk_n)` and best first: a chunk scores
/// Σ 1 / (`constant` + rank) over the lists that hold it, rank counted from 1 (a chunk listed
/// twice in one list counts at its first place). Returns the best `k` as
/// `(doc_id, chunk_n, score)`: score descending, then document id descending, then chunk number
/// ascending (the order of BM25 in `hierarag-index`). Scores are summed in list order, so the
/// same lists always give the same bits.
pub fn reciprocal_rank_fusion<'a>(
    lists: &[Vec<(&'a str, u32)>],
    k: usize,
    constant: f64,
) -> Vec<(&'a str, u32, f64)> {
    let mut scores: HashMap<(&'a str, u32), f64> = HashMap::new();
    for list in lists {
        let mut seen = HashSet::with_capacity(list.len());
        for (rank0, &key) in list.iter().enumerate() {
            if seen.insert(key) {
                *scores.entry(key).or_insert(0.0) += 1.0 / (constant + (rank0 + 1) as f64);
            }
        }
    }
    let mut fused: Vec<(&'a str, u32, f64)> = scores
        .into_iter()
        .map(|((doc_id, chunk_n), score)| (doc_id, chunk_n, score))
        .collect();
    fused.sort_unstable_by(|a, b| {
        b.2.total_cmp(&a.2)
            .then_with(|| b.0.cmp(a.0))
            .then_with(|| a.1.cmp(&b.1))
    });
    fused.truncate(k);
    fused
}

/// Reciprocal rank fusion of a [`Bm25Retriever`] and a [`DenseRetriever`]; a chunk's `score` is
/// its fused score.
#[derive(Debug)]
pub struct HybridRetriever {
    bm25: Bm25Retriever,
    dense: DenseRetriever,
    settings: FusionSettings,
}

impl HybridRetriever {
    /// Fuses `bm25` and `dense` (normally over one index, shared through an `Arc`).
    pub fn new(
        bm25: Bm25Retriever,
        dense: DenseRetriever,
        settings: FusionSettings,
    ) -> Result<HybridRetriever, RagError> {
        if !(settings.rrf_constant.is_finite() && settings.rrf_constant >= 0.0) {
            return Err(RagError::InvalidSettings(format!(
                "hybrid retriever: rrf_constant must be a finite number ≥ 0, not {}",
                settings.rrf_constant
            )));
        }
        Ok(HybridRetriever {
            bm25,
            dense,
            settings,
        })
    }

    pub fn bm25(&self) -> &Bm25Retriever {
        &self.bm25
    }

    pub fn dense(&self) -> &DenseRetriever {
        &self.dense
    }

    pub fn settings(&self) -> &FusionSettings {
        &self.settings
    }

    /// The top `k` chunks of the fused ranking, with their texts.
    pub async fn search(&self, query: &str, k: usize) -> Result<Vec<RetrievedChunk>, RagError> {
        if k == 0 {
            return Ok(Vec::new());
        }
        let depth = k.max(self.settings.depth);
        let query_vector = self.dense.embed_query(query).await?;
        let dense_hits = self.dense.nearest(&query_vector, depth)?;
        let lexical_hits = self.bm25.hits(query, depth);
        let sources: [(&Bm25Index, &[Hit]); 2] = [
            (self.bm25.index(), &lexical_hits),
            (self.dense.index(), &dense_hits),
        ];
        let lists: Vec<Vec<(&str, u32)>> = sources
            .iter()
            .map(|(index, hits)| hits.iter().map(|h| (index.doc_id(h), h.chunk_n)).collect())
            .collect();
        let fused = reciprocal_rank_fusion(&lists, k, self.settings.rrf_constant);
        let mut found: HashMap<(&str, u32), (&Bm25Index, &Hit)> = HashMap::new();
        for ((index, hits), keys) in sources.iter().zip(&lists) {
            for (hit, key) in hits.iter().zip(keys) {
                found.entry(*key).or_insert((index, hit));
            }
        }
        fused
            .iter()
            .map(|&(doc_id, chunk_n, score)| {
                let (index, hit) = found[&(doc_id, chunk_n)];
                retrieved_chunk(index, hit, score)
            })
            .collect()
    }
}

impl Retriever for HybridRetriever {
    fn name(&self) -> &str {
        RetrieverKind::Hybrid.as_str()
    }

    fn retrieve<'a>(
        &'a self,
        query: &'a str,
        k: usize,
    ) -> BoxFuture<'a, Result<Vec<RetrievedChunk>, RagError>> {
        Box::pin(self.search(query, k))
    }
}
