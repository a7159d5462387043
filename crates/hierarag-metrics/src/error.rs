//! The error returned when a TREC qrels or run text does not parse.

use thiserror::Error;

/// A qrels or run text that does not follow the TREC layout.
///
/// Every message starts with the source name the caller passed in (usually the file name) and the
/// 1-based line number, and names the field at fault, so that a user can open the file and fix it
/// without reading our code.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum TrecFormatError {
    /// The reader failed, or the line is not valid UTF-8.
    #[error("{source_name} line {line}: cannot read the line")]
    Read {
        /// The name of the input, as passed to `from_reader`.
        source_name: String,
        /// The 1-based number of the line that could not be read.
        line: usize,
        /// The underlying I/O error.
        #[source]
        error: std::io::Error,
    },

    /// A line has the wrong number of whitespace-separated columns.
    #[error(
        "{source_name} line {line}: expected {expected} whitespace-separated columns \
         (`{layout}`), found {found}"
    )]
    Columns {
        /// The name of the input.
        source_name: String,
        /// The 1-based line number.
        line: usize,
        /// How many columns the format has.
        expected: usize,
        /// How many columns the line has.
        found: usize,
        /// The column names, for the message.
        layout: &'static str,
    },

    /// A field does not hold the kind of value its column requires.
    #[error("{source_name} line {line}, field `{field}`: expected {expected}, found `{found}`")]
    Field {
        /// The name of the input.
        source_name: String,
        /// The 1-based line number.
        line: usize,
        /// The column name (`rel`, `score`, ...).
        field: &'static str,
        /// What the column must hold, in words.
        expected: &'static str,
        /// The text found in the column.
        found: String,
    },

    /// The same (query, document) pair appears on two lines.
    ///
    /// trec_eval rejects such runs, and a repeated judgment in qrels is at best redundant and at
    /// worst contradictory, so both are refused rather than resolved silently.
    #[error(
        "{source_name} line {line}, field `docno`: document `{doc_id}` appears twice for query \
         `{query_id}` (first on line {first_line})"
    )]
    Duplicate {
        /// The name of the input.
        source_name: String,
        /// The 1-based line number of the repeat.
        line: usize,
        /// The 1-based line number of the first occurrence.
        first_line: usize,
        /// The query id.
        query_id: String,
        /// The repeated document id.
        doc_id: String,
    },
}
