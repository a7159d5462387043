//! Errors of run directories and stages.

use std::path::PathBuf;

/// What went wrong with a run's files.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error("{path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A record that does not parse, with the file, line and serde's word on the field.
    #[error("{path}:{line}: {message}")]
    Record {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{path}:{line}: duplicate id {id:?}")]
    DuplicateId {
        path: PathBuf,
        line: usize,
        id: String,
    },
    #[error("{0}")]
    Invalid(String),
}

impl PipelineError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> PipelineError {
        PipelineError::Io {
            path: path.into(),
            source,
        }
    }
}
