//! Errors of index building and searching.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error(transparent)]
    Corpus(#[from] hierarag_corpus::CorpusError),
    #[error("{path}", path = path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a HieraRAG index (no manifest.json); build one with `hierarag index --corpus … --out {path}`", path = path.display())]
    NotAnIndex { path: PathBuf },
    #[error("{path}: the index build did not finish (manifest says incomplete); rebuild it with `hierarag index … --out {path} --overwrite`", path = path.display())]
    Incomplete { path: PathBuf },
    #[error("{path}: built with {found}, but {wanted} was asked for; use another --out directory, or --overwrite to rebuild", path = path.display())]
    ParamsMismatch {
        path: PathBuf,
        found: String,
        wanted: String,
    },
    #[error("{path}: the index was built for language {found} ({found_name}), but {wanted} ({wanted_name}) was asked for; its terms were cut by another analyzer: use another --out directory, or --overwrite to rebuild", path = path.display(), found_name = found.name(), wanted_name = wanted.name())]
    LanguageMismatch {
        path: PathBuf,
        found: hierarag_lang::Language,
        wanted: hierarag_lang::Language,
    },
    #[error("{path}: the index was built from a different corpus (content hash {found}, now {wanted}); use --overwrite to rebuild", path = path.display())]
    CorpusChanged {
        path: PathBuf,
        found: String,
        wanted: String,
    },
    #[error("{path}: the directory is not empty and holds no HieraRAG index; choose an empty or new directory", path = path.display())]
    NotEmpty { path: PathBuf },
    #[error("{path}: bad manifest.json: {message}", path = path.display())]
    BadManifest { path: PathBuf, message: String },
    #[error("{0}")]
    InvalidOptions(String),
    #[error("tantivy")]
    Tantivy(#[from] tantivy::TantivyError),
    /// Nothing was left to index; `why` names the skipped problems (an empty input under
    /// `--on-error fail` is a [`hierarag_corpus::CorpusError::EmptyInput`] instead).
    #[error("the corpus {inputs} has no document to index: {why}")]
    EmptyCorpus { inputs: String, why: String },
}

impl hierarag_fs::Blame for IndexError {
    /// Tantivy and I/O failures are the machine's; the rest (the corpus, a folder that is not
    /// an index or does not match, bad options) are the input's.
    fn fault(&self) -> hierarag_fs::Fault {
        use hierarag_fs::Fault;
        match self {
            IndexError::Tantivy(_) | IndexError::Io { .. } => Fault::Internal,
            IndexError::Corpus(_)
            | IndexError::NotAnIndex { .. }
            | IndexError::Incomplete { .. }
            | IndexError::ParamsMismatch { .. }
            | IndexError::LanguageMismatch { .. }
            | IndexError::CorpusChanged { .. }
            | IndexError::NotEmpty { .. }
            | IndexError::BadManifest { .. }
            | IndexError::InvalidOptions(_)
            | IndexError::EmptyCorpus { .. } => Fault::Input,
        }
    }
}
