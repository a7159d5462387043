//! Errors of the RAG run.

/// Why a question could not be answered.
#[derive(Debug, thiserror::Error)]
pub enum RagError {
    #[error("retrieval failed: {0}")]
    Index(#[from] hierarag_index::IndexError),
    #[error("embedding the question failed: {0}")]
    Embed(String),
    #[error("the answering call failed: {0}")]
    Llm(#[from] hierarag_llm::LlmError),
}
