//! The streaming document iterator: input resolution, format dispatch, id and emptiness checks,
//! and the `--on-error` policy.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::{CorpusError, Location, Position};
use crate::{jsonl, parquet_reader, textdir};

/// The format of a corpus input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum CorpusFormat {
    /// One JSON object per line (`.jsonl`, `.ndjson`, `.json`).
    Jsonl,
    /// Apache Parquet (`.parquet`), e.g. FineWeb shards.
    Parquet,
    /// A directory of `.txt` / `.md` files; the id is the path relative to the directory.
    #[cfg_attr(feature = "clap", value(name = "textdir"))]
    TextDir,
}

impl CorpusFormat {
    /// The format implied by a path: a directory, or a file extension.
    pub fn detect(path: &Path) -> Option<CorpusFormat> {
        if path.is_dir() {
            return Some(CorpusFormat::TextDir);
        }
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "jsonl" | "ndjson" | "json" => Some(CorpusFormat::Jsonl),
            "parquet" | "pq" => Some(CorpusFormat::Parquet),
            _ => None,
        }
    }
}

/// What to do with a bad record or an unreadable file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum OnError {
    /// Stop at the first problem with an error naming file, line/row and field.
    #[default]
    Fail,
    /// Record the problem, skip the record (or the unreadable row group, or the unreadable or
    /// empty file) and go on.
    Skip,
}

/// Which inputs make up a corpus and how to read them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CorpusSpec {
    /// Files, directories or glob patterns (`shards/*.parquet`), read in the order given; a glob's
    /// matches are read in sorted order.
    pub inputs: Vec<String>,
    /// Force a format instead of detecting it from each path.
    pub format: Option<CorpusFormat>,
    /// Field (JSONL) or column (Parquet) holding the document id.
    pub id_field: String,
    /// Field (JSONL) or column (Parquet) holding the document text.
    pub text_field: String,
}

impl CorpusSpec {
    /// A spec with the default fields `id` and `text`.
    pub fn new(inputs: impl IntoIterator<Item = impl Into<String>>) -> Self {
        CorpusSpec {
            inputs: inputs.into_iter().map(Into::into).collect(),
            format: None,
            id_field: "id".into(),
            text_field: "text".into(),
        }
    }

    /// Expands globs and detects formats, without reading any document.
    pub fn resolve(&self) -> Result<Vec<(PathBuf, CorpusFormat)>, CorpusError> {
        let mut files = Vec::new();
        for input in &self.inputs {
            let paths: Vec<PathBuf> = if input.contains(['*', '?', '[']) {
                let mut matched: Vec<PathBuf> = glob::glob(input)
                    .map_err(|e| CorpusError::NoInput {
                        pattern: format!("{input} (invalid glob: {e})"),
                    })?
                    .filter_map(Result::ok)
                    .collect();
                matched.sort();
                matched
            } else {
                let path = PathBuf::from(input);
                if !path.exists() {
                    return Err(CorpusError::Io {
                        path,
                        source: std::io::Error::new(
                            std::io::ErrorKind::NotFound,
                            "no such file or directory",
                        ),
                    });
                }
                vec![path]
            };
            if paths.is_empty() {
                return Err(CorpusError::NoInput {
                    pattern: input.clone(),
                });
            }
            for path in paths {
                let format = match self.format {
                    Some(format) => format,
                    None => CorpusFormat::detect(&path).ok_or_else(|| CorpusError::WrongType {
                        location: Location::new(&Arc::from(path.as_path()), Position::File),
                        field: "format".into(),
                        expected: "a .jsonl, .parquet file or a directory (or pass --format)",
                        found: path
                            .extension()
                            .map(|e| format!("extension `.{}`", e.to_string_lossy()))
                            .unwrap_or_else(|| "no extension".into()),
                    })?,
                };
                files.push((path, format));
            }
        }
        Ok(files)
    }

    /// The mean words (whitespace-separated) of the first `at_most` documents that read, and
    /// how many that was; `None` when none does. Quick enough to run before anything else
    /// (`hierarag run --dry-run`).
    pub fn mean_words(&self, at_most: usize) -> Option<(f64, usize)> {
        let mut words = 0usize;
        let mut n = 0usize;
        for document in self.documents(OnError::Skip).ok()?.take(at_most) {
            let Ok(document) = document else { continue };
            words += document.text.split_whitespace().count();
            n += 1;
        }
        (n > 0).then(|| (words as f64 / n as f64, n))
    }

    /// Opens the corpus for streaming.
    pub fn documents(&self, on_error: OnError) -> Result<Documents, CorpusError> {
        Ok(Documents {
            files: self.resolve()?.into(),
            spec: self.clone(),
            current: None,
            current_path: None,
            current_format: CorpusFormat::Jsonl,
            current_yielded: false,
            in_textdir: false,
            checks: Checks::new(on_error),
            n_documents: 0,
            text_bytes: 0,
            failed: false,
        })
    }
}

/// One document of the corpus.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Document {
    pub id: String,
    pub text: String,
    /// Where the document was read from, for later error messages.
    pub location: Location,
}

/// A record, Parquet row group or file that `--on-error skip` passed over.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    /// `file line N`, `file row N`, `file row group N (rows A–B)` or `file`.
    pub location: String,
    /// The full error message.
    pub reason: String,
    /// How many records (JSONL lines, Parquet rows, text files) were lost with this problem: 1
    /// for a bad record, the rows of a damaged row group not read before the damage, every row
    /// of a Parquet file without the id or text column, 0 for an empty input. `None` (JSON
    /// `null`) when the count is unknown: a file that could not be read at all (a Parquet file
    /// without a readable footer, which is where the row count lives). Lists written before the
    /// field existed read as 0.
    #[serde(default = "no_records")]
    pub records_lost: Option<u64>,
}

fn no_records() -> Option<u64> {
    Some(0)
}

/// Totals after a corpus has been read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadSummary {
    pub n_documents: u64,
    pub n_skipped: u64,
    /// The sum of [`Skipped::records_lost`] where it is known.
    #[serde(default)]
    pub n_records_lost: u64,
    /// Skipped problems whose lost records are unknown (files that could not be read).
    #[serde(default)]
    pub n_unknown_losses: u64,
    pub text_bytes: u64,
}

impl ReadSummary {
    /// The skip totals in words, for messages: `2 problems, 101 records lost`, `3 problems, 100
    /// records lost and those of 1 unreadable file (number unknown)`, or `1 problem, the records
    /// of 1 unreadable file lost (number unknown)`.
    pub fn describe_skipped(&self) -> String {
        let plural = |n: u64, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
        let problems = plural(self.n_skipped, "problem");
        let known = plural(self.n_records_lost, "record");
        let unknown = plural(self.n_unknown_losses, "unreadable file");
        match (self.n_records_lost, self.n_unknown_losses) {
            (_, 0) => format!("{problems}, {known} lost"),
            (0, _) => format!("{problems}, the records of {unknown} lost (number unknown)"),
            _ => format!("{problems}, {known} lost and those of {unknown} (number unknown)"),
        }
    }

    /// Totals of a skip list (documents and text bytes left at 0).
    pub fn of_skipped(skipped: &[Skipped]) -> ReadSummary {
        ReadSummary {
            n_skipped: skipped.len() as u64,
            n_records_lost: skipped.iter().filter_map(|s| s.records_lost).sum(),
            n_unknown_losses: skipped.iter().filter(|s| s.records_lost.is_none()).count() as u64,
            ..ReadSummary::default()
        }
    }
}

pub(crate) type RawRecords = Box<dyn Iterator<Item = Result<Document, CorpusError>> + Send>;

/// Streams the documents of a corpus, one file after another, in a deterministic order.
///
/// Ids must be unique across all files; see [`Checks`] for what checking that costs.
pub struct Documents {
    files: std::collections::VecDeque<(PathBuf, CorpusFormat)>,
    spec: CorpusSpec,
    current: Option<RawRecords>,
    /// The input being read, its format, and whether it has yielded anything (a document or an
    /// error): an input that yields nothing at all is an [`CorpusError::EmptyInput`].
    current_path: Option<Arc<Path>>,
    current_format: CorpusFormat,
    current_yielded: bool,
    in_textdir: bool,
    checks: Checks,
    n_documents: u64,
    text_bytes: u64,
    failed: bool,
}

impl std::fmt::Debug for Documents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Documents")
            .field("files_left", &self.files.len())
            .field("n_documents", &self.n_documents)
            .field("n_skipped", &self.checks.skipped.len())
            .finish()
    }
}

/// A file index and a position in 8 bytes: 2 bits of kind, 22 bits of file (4M files), 40 bits
/// of line or row (10^12). Larger values saturate, which only blurs a duplicate's message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PackedPlace(u64);

impl PackedPlace {
    const FILE_BITS: u32 = 22;
    const POS_BITS: u32 = 40;

    fn pack(file: usize, position: Position) -> Self {
        let (kind, pos) = match position {
            Position::Line(n) => (0u64, n),
            Position::Row(n) => (1, n),
            // A document is never a whole file or row group; these only complete the match.
            Position::File | Position::RowGroup { .. } => (2, 0),
        };
        let file = (file as u64).min((1 << Self::FILE_BITS) - 1);
        let pos = pos.min((1 << Self::POS_BITS) - 1);
        PackedPlace(kind << (Self::FILE_BITS + Self::POS_BITS) | file << Self::POS_BITS | pos)
    }

    fn unpack(self) -> (usize, Position) {
        let pos = self.0 & ((1 << Self::POS_BITS) - 1);
        let file = (self.0 >> Self::POS_BITS) & ((1 << Self::FILE_BITS) - 1);
        let position = match self.0 >> (Self::FILE_BITS + Self::POS_BITS) {
            0 => Position::Line(pos),
            1 => Position::Row(pos),
            _ => Position::File,
        };
        (file as usize, position)
    }
}

/// An id as the uniqueness check keeps it: its 128-bit xxh3 hash, as two halves (a `u128` key
/// is 16-byte aligned, which pads every entry from 24 to 32 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IdKey(pub(crate) [u64; 2]);

impl IdKey {
    pub(crate) fn of(id: &str) -> IdKey {
        let hash = xxhash_rust::xxh3::xxh3_128(id.as_bytes());
        IdKey([(hash >> 64) as u64, hash as u64])
    }
}

impl Hash for IdKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Already a hash: the table takes its low half as is (see `KeyHasher`).
        state.write_u64(self.0[1]);
    }
}

/// The hasher of the id table: an [`IdKey`] is a good hash already, so hashing it again (as the
/// default SipHash does) only costs time.
#[derive(Debug, Default)]
pub(crate) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `IdKey` is hashed with this hasher, through `write_u64`; anything else still
        // gets a usable hash.
        self.0 = xxhash_rust::xxh3::xxh3_64_with_seed(bytes, self.0);
    }
}

/// The state a corpus pass keeps across records, shared by [`Documents`] and the Parquet scan
/// ([`crate::scan`]): the ids seen (for uniqueness) and the `--on-error` policy with what it
/// skipped.
///
/// Each id is remembered as a 128-bit hash with the place it was first seen packed into 8
/// bytes: 24 bytes an entry, about 50 bytes a document with the hash table's spare capacity,
/// never the documents themselves.
#[derive(Debug)]
pub(crate) struct Checks {
    on_error: OnError,
    seen: HashMap<IdKey, PackedPlace, BuildHasherDefault<KeyHasher>>,
    /// Files that documents came from, so that a duplicate can name where its twin was.
    file_names: Vec<Arc<Path>>,
    pub(crate) skipped: Vec<Skipped>,
}

impl Checks {
    pub(crate) fn new(on_error: OnError) -> Checks {
        Checks {
            on_error,
            seen: HashMap::default(),
            file_names: Vec::new(),
            skipped: Vec::new(),
        }
    }

    /// Makes room for `additional` more ids (a Parquet file's row count), so that the table
    /// does not grow by rehashing as they come.
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.seen.reserve(additional);
    }

    /// An error unless `id` is new; `field` names the id's field in the error.
    pub(crate) fn unique_id(
        &mut self,
        id: &str,
        location: &Location,
        field: &str,
    ) -> Result<(), CorpusError> {
        self.unique_key(IdKey::of(id), id, location, field)
    }

    /// [`Checks::unique_id`] with the id's key already computed (on another thread, say).
    pub(crate) fn unique_key(
        &mut self,
        key: IdKey,
        id: &str,
        location: &Location,
        field: &str,
    ) -> Result<(), CorpusError> {
        if self.file_names.last() != Some(&location.path) {
            self.file_names.push(Arc::clone(&location.path));
        }
        let file_idx = self.file_names.len() - 1;
        match self.seen.entry(key) {
            Entry::Occupied(entry) => {
                let (file, position) = entry.get().unpack();
                let first = match self.file_names.get(file) {
                    Some(path) => Location::new(path, position).to_string(),
                    None => format!("{position:?} of an earlier file"),
                };
                Err(CorpusError::DuplicateId {
                    location: location.clone(),
                    field: field.to_string(),
                    id: id.to_string(),
                    first,
                })
            }
            Entry::Vacant(entry) => {
                entry.insert(PackedPlace::pack(file_idx, location.position));
                Ok(())
            }
        }
    }

    /// Under `Skip`, records a skippable error and returns `None` (go on); otherwise returns
    /// the error, which ends the pass. `in_textdir`: the error comes from a text directory.
    pub(crate) fn handle(&mut self, error: CorpusError, in_textdir: bool) -> Option<CorpusError> {
        if self.on_error == OnError::Skip && error.is_skippable() {
            let location = match (&error, error.location()) {
                (_, Some(location)) => location.to_string(),
                (CorpusError::NoInput { pattern }, None) => pattern.clone(),
                (_, None) => error
                    .path()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
            };
            self.skipped.push(Skipped {
                location,
                reason: with_sources(&error),
                records_lost: records_lost(&error, in_textdir),
            });
            None
        } else {
            Some(error)
        }
    }
}

/// How many records an error costs; see [`Skipped::records_lost`].
fn records_lost(error: &CorpusError, in_textdir: bool) -> Option<u64> {
    match error {
        CorpusError::EmptyInput { .. } => Some(0),
        CorpusError::ParquetData {
            location,
            rows_read,
            ..
        } => match location.position {
            Position::RowGroup { n_rows, .. } => Some(n_rows.saturating_sub(*rows_read)),
            _ => None,
        },
        CorpusError::MissingColumn { n_rows, .. } => Some(*n_rows),
        CorpusError::NoInput { .. } | CorpusError::Parquet { .. } => None,
        // In a text directory an unreadable `.txt`/`.md` file is one record; an unreadable
        // subdirectory, or a JSONL file that breaks off, hides an unknown number.
        CorpusError::Io { path, .. } => {
            (in_textdir && textdir::is_text_document(path)).then_some(1)
        }
        CorpusError::MalformedJson { .. }
        | CorpusError::MissingField { .. }
        | CorpusError::WrongType { .. }
        | CorpusError::NonUtf8 { .. }
        | CorpusError::EmptyDocument { .. }
        | CorpusError::DuplicateId { .. } => Some(1),
    }
}

impl Documents {
    /// Everything skipped so far (only under [`OnError::Skip`]).
    pub fn skipped(&self) -> &[Skipped] {
        &self.checks.skipped
    }

    /// Counts so far.
    pub fn summary(&self) -> ReadSummary {
        ReadSummary {
            n_documents: self.n_documents,
            text_bytes: self.text_bytes,
            ..ReadSummary::of_skipped(&self.checks.skipped)
        }
    }

    fn open_next_file(&mut self) -> Option<Result<(), CorpusError>> {
        let (path, format) = self.files.pop_front()?;
        let path: Arc<Path> = Arc::from(path.as_path());
        self.in_textdir = format == CorpusFormat::TextDir;
        self.current_path = Some(Arc::clone(&path));
        self.current_format = format;
        self.current_yielded = false;
        let opened = match format {
            CorpusFormat::Jsonl => jsonl::open(&path, &self.spec),
            CorpusFormat::Parquet => parquet_reader::open(&path, &self.spec),
            CorpusFormat::TextDir => textdir::open(&path),
        };
        Some(opened.map(|records| self.current = Some(records)))
    }

    /// Applies the checks that need state across records: non-empty text and unique ids.
    fn check(&mut self, doc: &Document) -> Result<(), CorpusError> {
        if doc.text.split_whitespace().next().is_none() {
            return Err(CorpusError::EmptyDocument {
                location: doc.location.clone(),
                field: self.text_field_name(),
                id: doc.id.clone(),
            });
        }
        let field = if self.in_textdir {
            "path"
        } else {
            self.spec.id_field.as_str()
        };
        self.checks.unique_id(&doc.id, &doc.location, field)
    }

    fn text_field_name(&self) -> String {
        if self.in_textdir {
            "text".into()
        } else {
            self.spec.text_field.clone()
        }
    }

    /// The error for the input just finished without yielding anything.
    fn empty_input(&self) -> Option<CorpusError> {
        let path = self.current_path.as_ref()?;
        Some(CorpusError::EmptyInput {
            location: Location::new(path, Position::File),
            what: match self.current_format {
                CorpusFormat::Jsonl => "the file holds no record (no non-blank line)",
                CorpusFormat::Parquet => "the Parquet file has zero rows",
                CorpusFormat::TextDir => "the directory holds no .txt or .md file",
            },
        })
    }

    /// Under `Skip`, records the error and reports whether to go on; under `Fail`, ends the stream.
    fn handle(&mut self, error: CorpusError) -> Option<CorpusError> {
        let error = self.checks.handle(error, self.in_textdir);
        self.failed |= error.is_some();
        error
    }
}

impl Iterator for Documents {
    type Item = Result<Document, CorpusError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.failed {
                return None;
            }
            let Some(records) = self.current.as_mut() else {
                match self.open_next_file()? {
                    Ok(()) => continue,
                    Err(error) => match self.handle(error) {
                        Some(error) => return Some(Err(error)),
                        None => continue,
                    },
                }
            };
            let record = records.next();
            self.current_yielded |= record.is_some();
            match record {
                None => {
                    self.current = None;
                    if !self.current_yielded
                        && let Some(error) = self.empty_input()
                        && let Some(error) = self.handle(error)
                    {
                        return Some(Err(error));
                    }
                }
                Some(Ok(doc)) => match self.check(&doc) {
                    Ok(()) => {
                        self.n_documents += 1;
                        self.text_bytes += doc.text.len() as u64;
                        return Some(Ok(doc));
                    }
                    Err(error) => {
                        if let Some(error) = self.handle(error) {
                            return Some(Err(error));
                        }
                    }
                },
                Some(Err(error)) => {
                    // A file-level error ends that file; a record-level one (or a Parquet row
                    // group's) only that record or row group. In a text directory every file is one
                    // record, so an unreadable file ends only itself.
                    if matches!(error, CorpusError::Parquet { .. })
                        || (!self.in_textdir && matches!(error, CorpusError::Io { .. }))
                    {
                        self.current = None;
                    }
                    if let Some(error) = self.handle(error) {
                        return Some(Err(error));
                    }
                }
            }
        }
    }
}

/// An error's message followed by those of its sources, as `{:#}` prints an `anyhow` chain.
fn with_sources(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_places_round_trip() {
        for (file, position) in [
            (0, Position::Line(1)),
            (3, Position::Row(0)),
            (4_194_303, Position::Row(1_099_511_627_775)),
            (17, Position::File),
        ] {
            assert_eq!(PackedPlace::pack(file, position).unpack(), (file, position));
        }
    }
}
