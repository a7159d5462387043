//! The LLM layer: chat completion and embeddings behind one pair of traits ([`ChatBackend`],
//! [`EmbedBackend`]), with the machinery every backend shares.

mod types;

pub use types::{
    BoxFuture, CallError, ChatBackend, ChatRequest, Completion, EmbedBackend, JsonSchema, Message,
    Role, Usage,
};
