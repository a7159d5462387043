//! What can go wrong loading or running MiniLM; every message names the file at fault and the fix.

use std::path::PathBuf;

/// The three files of the model, named in error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelFile {
    /// `config.json`: the BERT hyper-parameters.
    Config,
    /// `model.safetensors`: the weights.
    Weights,
    /// `tokenizer.json`: the WordPiece tokenizer.
    Tokenizer,
}

impl ModelFile {
    /// `config`, `weights`, `tokenizer`, as messages say it.
    pub fn as_str(self) -> &'static str {
        match self {
            ModelFile::Config => "config",
            ModelFile::Weights => "weights",
            ModelFile::Tokenizer => "tokenizer",
        }
    }
}

impl std::fmt::Display for ModelFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Everything that can go wrong loading or running the embedding model.
///
/// Messages are sentences for a user at a terminal: they name the file and say how to get a good
/// copy (`hierarag models fetch minilm`).
#[derive(Debug, thiserror::Error)]
pub enum MiniLmError {
    /// The asset store has no verified copy of the model.
    #[error("the MiniLM model is not in the asset store ({reason}). {hint}")]
    NotFetched {
        /// Why the store's copy cannot be used; names the directory or file.
        reason: String,
        /// How to fetch it.
        hint: String,
    },

    /// One of the model's files does not exist.
    #[error("the MiniLM {file} file {} does not exist. {hint}", path.display())]
    MissingFile {
        file: ModelFile,
        path: PathBuf,
        /// How to fetch it.
        hint: String,
    },

    /// One of the model's files exists but cannot be read or does not describe this model.
    #[error(
        "cannot load the MiniLM {file} file {}: {reason}; the file is corrupt or not from the \
         all-MiniLM-L6-v2 model. {hint}",
        path.display()
    )]
    BadFile {
        file: ModelFile,
        path: PathBuf,
        /// What the reader reported.
        reason: String,
        /// How to fetch a good copy.
        hint: String,
    },

    /// The tokenizer rejected a text.
    #[error("cannot tokenize the texts: {reason}")]
    Tokenize { reason: String },

    /// The operating system would not start the threads the model computes on.
    #[error("cannot start {threads} threads for MiniLM: {reason}")]
    Threads { threads: usize, reason: String },

    /// The forward pass failed (out of memory, a shape the model cannot take).
    #[error("MiniLM inference failed")]
    Inference(#[from] candle_core::Error),
}
