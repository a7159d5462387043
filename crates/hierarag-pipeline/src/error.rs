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
    /// A batch round failed: a batch could not be submitted, polled or read, or its record
    /// written.
    #[error(transparent)]
    Llm(#[from] hierarag_llm::LlmError),
}

impl PipelineError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> PipelineError {
        PipelineError::Io {
            path: path.into(),
            source,
        }
    }
}

impl hierarag_fs::Blame for PipelineError {
    /// I/O is the machine's, but for a file that is not there (an input the user named); a bad
    /// record or a duplicate id is the input's.
    fn fault(&self) -> hierarag_fs::Fault {
        use hierarag_fs::Fault;
        match self {
            PipelineError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                Fault::Input
            }
            PipelineError::Io { .. } => Fault::Internal,
            PipelineError::Record { .. }
            | PipelineError::DuplicateId { .. }
            | PipelineError::Invalid(_) => Fault::Input,
            PipelineError::Llm(error) => error.fault(),
        }
    }
}
