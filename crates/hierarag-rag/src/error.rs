//! Errors of the RAG run.

use std::path::PathBuf;

/// Why a question could not be answered, or a retriever could not be built.
#[derive(Debug, thiserror::Error)]
pub enum RagError {
    #[error("retrieval failed")]
    Index(#[from] hierarag_index::IndexError),
    #[error("embedding the question failed: {0}")]
    Embed(String),
    #[error("embedding chunks {first} to {last} failed: {message}")]
    EmbedChunks {
        first: String,
        last: String,
        message: String,
    },
    #[error("{path}", path = path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    InvalidSettings(String),
    #[error("{path}: {message}", path = path.display())]
    Ann { path: PathBuf, message: String },
    #[error("the answering call failed")]
    Llm(#[from] hierarag_llm::LlmError),
}
