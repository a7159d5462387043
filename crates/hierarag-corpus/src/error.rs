//! Errors that name the input at fault: file, line or row, and field.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where in a file a record sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Position {
    /// A 1-based line number (JSONL, text files).
    Line(u64),
    /// A 0-based row index across the whole Parquet file (as `pyarrow`/`pandas` count rows).
    Row(u64),
    /// A Parquet row group: its 0-based number, the file-wide index of its first row and its
    /// number of rows.
    RowGroup {
        index: usize,
        first_row: u64,
        n_rows: u64,
    },
    /// The file as a whole.
    File,
}

/// A file and a position in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    pub path: Arc<Path>,
    pub position: Position,
}

impl Location {
    pub fn new(path: &Arc<Path>, position: Position) -> Self {
        Location {
            path: Arc::clone(path),
            position,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.position {
            Position::Line(line) => write!(f, "{} line {line}", self.path.display()),
            Position::Row(row) => write!(f, "{} row {row}", self.path.display()),
            Position::RowGroup {
                index,
                first_row,
                n_rows,
            } => {
                write!(f, "{} row group {index} ", self.path.display())?;
                match n_rows {
                    0 => write!(f, "(no rows)"),
                    1 => write!(f, "(row {first_row})"),
                    _ => write!(f, "(rows {first_row}–{})", first_row + n_rows - 1),
                }
            }
            Position::File => write!(f, "{}", self.path.display()),
        }
    }
}

/// Everything that can go wrong while reading a corpus. Each message starts with the location.
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    #[error("{pattern}: no input file matched")]
    NoInput { pattern: String },
    #[error("{path}: cannot read", path = path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `column` is 1-based within the line; `field` is the top-level field whose value broke
    /// off, when the error lies inside one.
    #[error("{location}{in_field}: malformed JSON at column {column}: {message}",
        in_field = .field.as_ref().map(|f| format!(", field `{f}`")).unwrap_or_default())]
    MalformedJson {
        location: Location,
        field: Option<String>,
        column: usize,
        message: String,
    },
    #[error("{location}, field `{field}`: missing (fields present: {present})")]
    MissingField {
        location: Location,
        field: String,
        present: String,
    },
    #[error("{location}, field `{field}`: expected {expected}, found {found}")]
    WrongType {
        location: Location,
        field: String,
        expected: &'static str,
        found: String,
    },
    #[error("{location}, field `{field}`: invalid UTF-8 at byte {byte_offset} of the {unit}")]
    NonUtf8 {
        location: Location,
        field: String,
        byte_offset: usize,
        unit: &'static str,
    },
    #[error("{location}, field `{field}`: document `{id}` is empty (no words)")]
    EmptyDocument {
        location: Location,
        field: String,
        id: String,
    },
    #[error("{location}, field `{field}`: duplicate document id `{id}` (first seen at {first})")]
    DuplicateId {
        location: Location,
        field: String,
        id: String,
        first: String,
    },
    /// A Parquet file that cannot be opened at all (no footer, a truncated or garbage file):
    /// how many rows it held is unknown.
    #[error("{location}: unreadable Parquet file: {message}")]
    Parquet { location: Location, message: String },
    /// A row group that failed to decode; `location` is a [`Position::RowGroup`] and `rows_read`
    /// the rows of it read before the failure. The other row groups can still be read.
    #[error("{location}: unreadable Parquet data: {message}{read}",
        read = if *rows_read > 0 { format!(" (after its first {rows_read} rows)") } else { String::new() })]
    ParquetData {
        location: Location,
        message: String,
        rows_read: u64,
    },
    /// `n_rows` is the file's row count, all of which are lost when the column is missing.
    #[error("{location}, field `{field}`: no such column (columns: {columns})")]
    MissingColumn {
        location: Location,
        field: String,
        columns: String,
        n_rows: u64,
    },
    /// An input that holds no record at all: a file without a non-blank line, a directory without
    /// a `.txt`/`.md` file, a Parquet file with zero rows. Such an input is almost always a
    /// mistake (a failed download, a wrong path), so it is reported rather than read as nothing.
    #[error("{location}: empty input: {what}")]
    EmptyInput {
        location: Location,
        what: &'static str,
    },
}

impl CorpusError {
    /// The record or file position the error is about; `None` for errors about a whole input
    /// that could not be opened or matched.
    pub fn location(&self) -> Option<&Location> {
        match self {
            CorpusError::NoInput { .. } | CorpusError::Io { .. } => None,
            CorpusError::MalformedJson { location, .. }
            | CorpusError::MissingField { location, .. }
            | CorpusError::WrongType { location, .. }
            | CorpusError::NonUtf8 { location, .. }
            | CorpusError::EmptyDocument { location, .. }
            | CorpusError::DuplicateId { location, .. }
            | CorpusError::Parquet { location, .. }
            | CorpusError::ParquetData { location, .. }
            | CorpusError::MissingColumn { location, .. }
            | CorpusError::EmptyInput { location, .. } => Some(location),
        }
    }

    /// The file the error is about, when there is one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            CorpusError::Io { path, .. } => Some(path),
            other => other.location().map(|l| &*l.path),
        }
    }

    /// Whether reading can go on past this error under `--on-error skip`. Only a missing input
    /// stops the run: there would be nothing to skip to.
    pub fn is_skippable(&self) -> bool {
        !matches!(self, CorpusError::NoInput { .. })
    }
}

impl hierarag_fs::Blame for CorpusError {
    /// Every corpus error is the corpus's: a path, a record, a column or a file the user gave
    /// (an unreadable one included).
    fn fault(&self) -> hierarag_fs::Fault {
        match self {
            CorpusError::NoInput { .. }
            | CorpusError::Io { .. }
            | CorpusError::MalformedJson { .. }
            | CorpusError::MissingField { .. }
            | CorpusError::WrongType { .. }
            | CorpusError::NonUtf8 { .. }
            | CorpusError::EmptyDocument { .. }
            | CorpusError::DuplicateId { .. }
            | CorpusError::Parquet { .. }
            | CorpusError::ParquetData { .. }
            | CorpusError::MissingColumn { .. }
            | CorpusError::EmptyInput { .. } => hierarag_fs::Fault::Input,
        }
    }
}
