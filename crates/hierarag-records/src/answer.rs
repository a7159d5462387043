//! The records of the answer stage: `answers.jsonl`.

use serde::{Deserialize, Serialize};

/// One retrieved chunk as `answers.jsonl` records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkRef {
    pub chunk_id: String,
    pub doc_id: String,
    pub score: f64,
}

/// The answering model and its parameters: the same record as every other model's.
pub type AnswerModel = crate::benchmark::ModelInfo;

/// What one answer cost in tokens. Times and cache hits are not recorded per answer (they
/// differ between runs, and the file must not); the run manifest has them per stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// One line of `answers.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerRecord {
    /// The benchmark question's id.
    pub id: String,
    pub question: String,
    pub retriever: String,
    /// The chunks given to the model, best first.
    pub retrieved: Vec<ChunkRef>,
    /// The ranked documents (each at its best chunk), best first: the run for AP/nDCG/R@10.
    pub doc_ids: Vec<String>,
    /// Their scores (each document's best chunk score), aligned with `doc_ids`.
    pub doc_scores: Vec<f64>,
    pub answer: String,
    pub refused: bool,
    pub llm: AnswerModel,
    pub usage: AnswerUsage,
    /// For answers read from a file whose contexts came without document ids: how each id of
    /// `doc_ids` was found in the index (`contains`: a chunk that holds the context's text or
    /// is held by it; `bm25`: the best BM25 match, holding most of the context's words;
    /// `given`: named by the context, in a reply that gave others as texts only). Empty when
    /// the ids were all given (and for the builtin pipeline).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub doc_ids_found: Vec<String>,
    /// The system named no document: it gave no document ids, and none of its context texts
    /// was found in the index (or it gave none). Its retrieval metrics are then absent, not 0.
    /// Never set for the builtin pipeline, whose empty ranking is a ranking.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_documents: bool,
    /// The context texts a system outside HieraRAG gave with its answer, best first: what the
    /// judge checks hallucination against. Empty for the builtin pipeline, whose chunks the
    /// judge reads from the index by `retrieved`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contexts: Vec<String>,
}
