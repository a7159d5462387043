//! In-process models on candle, as [`hierarag_llm`] backends: all-MiniLM-L6-v2 sentence
//! embeddings ([`minilm`]) and the SmolLM2-135M-Instruct GGUF chat model ([`smollm2`]).

pub mod minilm;
pub mod smollm2;

pub use minilm::{MiniLm, MiniLmError};
