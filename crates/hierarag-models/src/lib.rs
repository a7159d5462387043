//! In-process all-MiniLM-L6-v2 sentence embeddings on candle ([`minilm`]), as the `embedded`
//! [`hierarag_llm::EmbedBackend`]. The embedded chat model is `hierarag-smollm2`.

pub mod minilm;

pub use minilm::{MiniLm, MiniLmError};
