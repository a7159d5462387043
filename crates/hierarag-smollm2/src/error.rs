//! Errors of the embedded chat model, each naming the file or input at fault.

use std::path::PathBuf;

/// Why the model cannot be loaded or cannot answer.
#[derive(Debug, thiserror::Error)]
pub enum SmolLm2Error {
    #[error("the SmolLM2 model file {} does not exist. {hint}", path.display())]
    Missing { path: PathBuf, hint: String },
    #[error("cannot read the SmolLM2 model file {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a usable SmolLM2 GGUF model: {reason}. {hint}", path.display())]
    Corrupt {
        path: PathBuf,
        reason: String,
        hint: String,
    },
    #[error("the prompt has {prompt_tokens} tokens; the model's context holds {max_context}")]
    PromptTooLong {
        prompt_tokens: usize,
        max_context: usize,
    },
    #[error("the JSON schema cannot be used for constrained decoding: {reason}")]
    Schema { reason: String },
    #[error("the embedded model failed while computing: {0}")]
    Compute(String),
}

impl From<candle_core::Error> for SmolLm2Error {
    fn from(e: candle_core::Error) -> Self {
        SmolLm2Error::Compute(e.to_string())
    }
}
