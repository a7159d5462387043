//! A Parquet corpus read for sampling: every row's id (and, when asked, its text's length)
//! decoded on all cores without keeping the texts, and the texts of chosen rows afterwards.
//!
//! Reading only the id column skips the text pages, which are nearly all of a FineWeb shard;
//! the few texts a sample needs are then read by row selection, which decompresses only the
//! pages holding them. Row groups are decoded in parallel (rayon), and handed to the caller in
//! file order, through the same uniqueness checks and `--on-error` policy as [`Documents`].
//!
//! [`Documents`]: crate::Documents

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::RowSelection;
use rayon::prelude::*;

use crate::error::{CorpusError, Location, Position};
use crate::parquet_reader::{ParquetFile, RowGroup, cell_str, group_error};
use crate::reader::{Checks, CorpusFormat, CorpusSpec, Document, IdKey, OnError, Skipped};

/// A length function applied to every text when a scan reads them (a word count, say).
pub type Measure = dyn Fn(&str) -> usize + Sync;

/// A row of a [`ParquetCorpus`]: its file (by place in the corpus's file list) and its row in
/// that file, packed into 64 bits (24 bits of file, 40 of row) so that a sample can carry it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RowRef(u64);

impl RowRef {
    const ROW_BITS: u32 = 40;

    fn new(file: usize, row: u64) -> RowRef {
        assert!(
            file < 1 << (64 - Self::ROW_BITS) && row < 1 << Self::ROW_BITS,
            "a corpus has at most 2^24 files of at most 2^40 rows"
        );
        RowRef((file as u64) << Self::ROW_BITS | row)
    }

    /// The file's place in [`ParquetCorpus::files`].
    pub fn file(self) -> usize {
        (self.0 >> Self::ROW_BITS) as usize
    }

    /// The row within its file, from 0.
    pub fn row(self) -> u64 {
        self.0 & ((1 << Self::ROW_BITS) - 1)
    }

    pub fn to_u64(self) -> u64 {
        self.0
    }

    pub fn from_u64(value: u64) -> RowRef {
        RowRef(value)
    }
}

/// One row handed out by [`ParquetCorpus::scan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScannedRow<'a> {
    pub id: &'a str,
    /// The text's measure, when the scan was given one (the text was then also checked to be
    /// non-empty); `None` when only ids were read.
    pub measure: Option<usize>,
    pub row: RowRef,
}

/// What a scan read and skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanSummary {
    /// Rows handed out.
    pub n_rows: u64,
    /// What `--on-error skip` passed over.
    pub skipped: Vec<Skipped>,
}

/// A corpus whose every input is a Parquet file.
#[derive(Debug, Clone)]
pub struct ParquetCorpus {
    spec: CorpusSpec,
    files: Vec<Arc<Path>>,
}

impl CorpusSpec {
    /// The corpus as Parquet files, when every input is one (otherwise `None`: read it with
    /// [`CorpusSpec::documents`]).
    pub fn parquet(&self) -> Result<Option<ParquetCorpus>, CorpusError> {
        let resolved = self.resolve()?;
        if resolved.is_empty()
            || resolved
                .iter()
                .any(|(_, format)| *format != CorpusFormat::Parquet)
        {
            return Ok(None);
        }
        Ok(Some(ParquetCorpus {
            spec: self.clone(),
            files: resolved
                .into_iter()
                .map(|(path, _)| Arc::from(path.as_path()))
                .collect(),
        }))
    }
}

/// A path of its own for one thread: the rows' locations clone it, and a shared one's reference
/// count would bounce between the cores.
fn own_copy(path: &Path) -> Arc<Path> {
    Arc::from(path)
}

/// The ids of a pass checked at its end: each row's [`IdKey`] halves and its [`RowRef`].
#[derive(Debug, Default)]
struct DeferredIds {
    keys: Vec<(u64, u64, u64)>,
}

/// A row as decoded on a worker thread: its id, the id's key for the uniqueness check (hashed
/// there, off the thread that checks), and its measure.
type DecodedRow = (String, IdKey, Option<usize>);

/// A row group's rows as a scan decoded them: each an id with its measure, or the row's error;
/// then the error that ended the row group early, if one did.
struct GroupRows {
    group: RowGroup,
    rows: Vec<Result<DecodedRow, CorpusError>>,
    failure: Option<CorpusError>,
}

impl ParquetCorpus {
    pub fn files(&self) -> &[Arc<Path>] {
        &self.files
    }

    /// Hands every row to `visit` in corpus order: its id, its measure when `measure` is given
    /// (then the text column is decoded too, and an empty text is an error), and where it is.
    ///
    /// Ids must be unique, and errors follow `on_error`, as in [`CorpusSpec::documents`]; a text
    /// that was not read is not checked. Row groups are decoded on every core of rayon's pool,
    /// a few at a time, so memory holds the ids of those few.
    pub fn scan(
        &self,
        on_error: OnError,
        measure: Option<&Measure>,
        visit: &mut dyn FnMut(ScannedRow<'_>),
    ) -> Result<ScanSummary, CorpusError> {
        let mut checks = Checks::new(on_error);
        // Under `--on-error fail` nothing is skipped, so every id can be checked once the
        // pass is over, by sorting their keys: appending is sequential, where a hash table of
        // millions of ids misses the cache at every insert. A failure met in the pass is
        // reported only after the duplicates of the rows before it.
        let mut deferred = (on_error == OnError::Fail).then(DeferredIds::default);
        let mut n_rows = 0u64;
        let window = 2 * rayon::current_num_threads().max(1);
        for (file_idx, shared_path) in self.files.iter().enumerate() {
            // Every row's location holds the path: a copy of this thread's own keeps the
            // reference count off the cache line that the decoding threads count on.
            let path = &own_copy(shared_path);
            let file = match ParquetFile::open(path, &self.spec) {
                Ok(file) => file,
                Err(error) => match checks.handle(error, false) {
                    Some(error) => return Err(self.first_error(deferred, error)),
                    None => continue,
                },
            };
            if file.n_rows == 0 {
                let error = CorpusError::EmptyInput {
                    location: Location::new(path, Position::File),
                    what: "the Parquet file has zero rows",
                };
                match checks.handle(error, false) {
                    Some(error) => return Err(self.first_error(deferred, error)),
                    None => continue,
                }
            }
            let file_rows = usize::try_from(file.n_rows).unwrap_or(0);
            match deferred.as_mut() {
                Some(deferred) => deferred.keys.reserve(file_rows),
                None => checks.reserve(file_rows),
            }
            let mask = file.mask(measure.is_some());
            for groups in file.row_groups.chunks(window) {
                let decoded: Vec<GroupRows> = groups
                    .par_iter()
                    .map(|&group| self.read_group(&file, path, group, &mask, measure))
                    .collect();
                for group in decoded {
                    for (offset, row) in group.rows.into_iter().enumerate() {
                        let row_n = group.group.first_row + offset as u64;
                        let row_ref = RowRef::new(file_idx, row_n);
                        let checked = row.and_then(|(id, key, measure)| {
                            if let Some(deferred) = deferred.as_mut() {
                                deferred.keys.push((key.0[0], key.0[1], row_ref.0));
                                return Ok((id, measure));
                            }
                            let location = Location::new(path, Position::Row(row_n));
                            checks
                                .unique_key(key, &id, &location, &self.spec.id_field)
                                .map(|()| (id, measure))
                        });
                        match checked {
                            Ok((id, measure)) => {
                                n_rows += 1;
                                visit(ScannedRow {
                                    id: &id,
                                    measure,
                                    row: row_ref,
                                });
                            }
                            Err(error) => {
                                if let Some(error) = checks.handle(error, false) {
                                    return Err(self.first_error(deferred, error));
                                }
                            }
                        }
                    }
                    if let Some(error) = group.failure
                        && let Some(error) = checks.handle(error, false)
                    {
                        return Err(self.first_error(deferred, error));
                    }
                }
            }
        }
        if let Some(deferred) = deferred
            && let Some(error) = self.duplicate(deferred)
        {
            return Err(error);
        }
        Ok(ScanSummary {
            n_rows,
            skipped: checks.skipped,
        })
    }

    /// The error that ends a pass at `error`: a duplicate among the rows read before it comes
    /// first, as a check made row by row would have met it first.
    fn first_error(&self, deferred: Option<DeferredIds>, error: CorpusError) -> CorpusError {
        deferred
            .and_then(|deferred| self.duplicate(deferred))
            .unwrap_or(error)
    }

    /// The first row (in corpus order) whose id an earlier row has, as the error a row-by-row
    /// check gives; `None` when the ids are unique.
    fn duplicate(&self, mut deferred: DeferredIds) -> Option<CorpusError> {
        deferred.keys.par_sort_unstable();
        // Sorted by key, then by row: in each run of equal keys the first is the first
        // occurrence, and the second the first repeat. The earliest repeat over all runs is
        // where a row-by-row check stops.
        let (later, first) = deferred
            .keys
            .windows(2)
            .filter(|pair| (pair[0].0, pair[0].1) == (pair[1].0, pair[1].1))
            .map(|pair| (RowRef(pair[1].2), RowRef(pair[0].2)))
            .min()?;
        let location =
            |row: RowRef| Location::new(&self.files[row.file()], Position::Row(row.row()));
        let id = match self.id_at(later) {
            Ok(id) => id,
            Err(error) => return Some(error),
        };
        Some(CorpusError::DuplicateId {
            location: location(later),
            field: self.spec.id_field.clone(),
            id,
            first: location(first).to_string(),
        })
    }

    /// The id of one row, reading only the page that holds it.
    fn id_at(&self, row: RowRef) -> Result<String, CorpusError> {
        let path = &self.files[row.file()];
        let file = ParquetFile::open(path, &self.spec)?;
        let location = Location::new(path, Position::Row(row.row()));
        let group = file
            .row_groups
            .iter()
            .find(|group| (group.first_row..group.first_row + group.n_rows).contains(&row.row()))
            .copied()
            .ok_or_else(|| CorpusError::Parquet {
                location: location.clone(),
                message: format!("the file has {} rows", file.n_rows),
            })?;
        let offset = usize::try_from(row.row() - group.first_row).unwrap_or(usize::MAX);
        let selection = RowSelection::from_consecutive_ranges(
            std::iter::once(offset..offset + 1),
            usize::try_from(group.n_rows).unwrap_or(usize::MAX),
        );
        let failed = |message: String| group_error(path, group, 0, message);
        let batch = file
            .group_reader(group, &file.mask(false), Some(selection))
            .map_err(|e| failed(e.to_string()))?
            .next()
            .ok_or_else(|| failed("the row selection gave no row".into()))?
            .map_err(|e| failed(e.to_string()))?;
        let (ids, _) = self.columns(&batch, false).map_err(failed)?;
        Ok(cell_str(&ids, 0, &location, &self.spec.id_field, true)?.into_owned())
    }

    /// Decodes one row group's ids, and texts when measuring.
    fn read_group(
        &self,
        file: &ParquetFile,
        path: &Arc<Path>,
        group: RowGroup,
        mask: &ProjectionMask,
        measure: Option<&Measure>,
    ) -> GroupRows {
        let path = &own_copy(path);
        let mut rows = Vec::with_capacity(usize::try_from(group.n_rows).unwrap_or(0));
        let failure = match file.group_reader(group, mask, None) {
            Err(error) => Some(error.to_string()),
            Ok(reader) => {
                let mut failure = None;
                for batch in reader {
                    let columns = batch
                        .map_err(|e| e.to_string())
                        .and_then(|batch| self.columns(&batch, measure.is_some()));
                    let (ids, texts) = match columns {
                        Ok(columns) => columns,
                        Err(message) => {
                            failure = Some(message);
                            break;
                        }
                    };
                    for i in 0..ids.len() {
                        let row = group.first_row + rows.len() as u64;
                        let location = Location::new(path, Position::Row(row));
                        rows.push(self.row(&ids, texts.as_ref(), i, &location, measure));
                    }
                }
                failure.or_else(|| {
                    ((rows.len() as u64) < group.n_rows).then(|| {
                        format!(
                            "the row group ended before the {} rows its metadata counts",
                            group.n_rows
                        )
                    })
                })
            }
        };
        let rows_read = rows.len() as u64;
        GroupRows {
            group,
            rows,
            failure: failure.map(|message| group_error(path, group, rows_read, message)),
        }
    }

    /// The id column of a batch, and its text column when `with_text`.
    fn columns(
        &self,
        batch: &RecordBatch,
        with_text: bool,
    ) -> Result<(ArrayRef, Option<ArrayRef>), String> {
        let column = |field: &str| {
            batch
                .column_by_name(field)
                .cloned()
                .ok_or_else(|| format!("column `{field}` vanished from a record batch"))
        };
        let texts = match with_text {
            true => Some(column(&self.spec.text_field)?),
            false => None,
        };
        Ok((column(&self.spec.id_field)?, texts))
    }

    /// One row's id and measure: the checks of [`crate::Documents`] that need no other row.
    fn row(
        &self,
        ids: &ArrayRef,
        texts: Option<&ArrayRef>,
        i: usize,
        location: &Location,
        measure: Option<&Measure>,
    ) -> Result<DecodedRow, CorpusError> {
        let id = cell_str(ids, i, location, &self.spec.id_field, true)?.into_owned();
        let key = IdKey::of(&id);
        let (Some(texts), Some(measure)) = (texts, measure) else {
            return Ok((id, key, None));
        };
        let text = cell_str(texts, i, location, &self.spec.text_field, false)?;
        if text.split_whitespace().next().is_none() {
            return Err(CorpusError::EmptyDocument {
                location: location.clone(),
                field: self.spec.text_field.clone(),
                id,
            });
        }
        let measured = measure(&text);
        Ok((id, key, Some(measured)))
    }

    /// The documents at `rows`, in that order, reading only the pages that hold them (row
    /// groups in parallel). Each is checked as [`crate::Documents`] checks a document on its
    /// own (id and text present and of the right type, text not empty); the first failure in
    /// corpus order is the error.
    pub fn fetch(&self, rows: &[RowRef]) -> Result<Vec<Document>, CorpusError> {
        // File → rows wanted in it.
        let mut wanted: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
        for row in rows {
            wanted.entry(row.file()).or_default().push(row.row());
        }
        let mut tasks = Vec::new();
        let mut files = Vec::with_capacity(wanted.len());
        for (file_idx, mut file_rows) in wanted {
            let path = &self.files[file_idx];
            let file = ParquetFile::open(path, &self.spec)?;
            file_rows.sort_unstable();
            file_rows.dedup();
            if let Some(&last) = file_rows.last()
                && last >= file.n_rows
            {
                return Err(CorpusError::Parquet {
                    location: Location::new(path, Position::Row(last)),
                    message: format!("the file has {} rows", file.n_rows),
                });
            }
            for group in &file.row_groups {
                let end = group.first_row + group.n_rows;
                let start = file_rows.partition_point(|&r| r < group.first_row);
                let stop = file_rows.partition_point(|&r| r < end);
                if start < stop {
                    tasks.push((files.len(), *group, file_rows[start..stop].to_vec()));
                }
            }
            files.push((file_idx, path, file));
        }
        let fetched: Vec<Result<Vec<(RowRef, Document)>, CorpusError>> = tasks
            .par_iter()
            .map(|(file_n, group, group_rows)| {
                let (file_idx, path, file) = &files[*file_n];
                self.fetch_group(*file_idx, path, file, *group, group_rows)
            })
            .collect();
        let mut found = HashMap::with_capacity(rows.len());
        for group in fetched {
            found.extend(group?);
        }
        Ok(rows.iter().map(|row| found[row].clone()).collect())
    }

    /// The documents at `group_rows` (rows of the file, sorted, within `group`).
    fn fetch_group(
        &self,
        file_idx: usize,
        path: &Arc<Path>,
        file: &ParquetFile,
        group: RowGroup,
        group_rows: &[u64],
    ) -> Result<Vec<(RowRef, Document)>, CorpusError> {
        let ranges = group_rows.iter().map(|&r| {
            let offset = (r - group.first_row) as usize;
            offset..offset + 1
        });
        let selection = RowSelection::from_consecutive_ranges(
            ranges,
            usize::try_from(group.n_rows).unwrap_or(usize::MAX),
        );
        let failed = |message: String| group_error(path, group, 0, message);
        let reader = file
            .group_reader(group, &file.mask(true), Some(selection))
            .map_err(|e| failed(e.to_string()))?;
        let mut documents = Vec::with_capacity(group_rows.len());
        let mut next = group_rows.iter();
        for batch in reader {
            let (ids, texts) = batch
                .map_err(|e| e.to_string())
                .and_then(|batch| self.columns(&batch, true))
                .map_err(failed)?;
            let texts = texts.expect("the text column was asked for");
            for i in 0..ids.len() {
                let &row = next.next().ok_or_else(|| {
                    failed("the row selection gave more rows than it selects".into())
                })?;
                let location = Location::new(path, Position::Row(row));
                let document = self.document(&ids, &texts, i, location)?;
                documents.push((RowRef::new(file_idx, row), document));
            }
        }
        if next.next().is_some() {
            return Err(failed(
                "the row selection gave fewer rows than it selects".into(),
            ));
        }
        Ok(documents)
    }

    fn document(
        &self,
        ids: &ArrayRef,
        texts: &ArrayRef,
        i: usize,
        location: Location,
    ) -> Result<Document, CorpusError> {
        let id = cell_str(ids, i, &location, &self.spec.id_field, true)?.into_owned();
        let text = cell_str(texts, i, &location, &self.spec.text_field, false)?;
        if text.split_whitespace().next().is_none() {
            return Err(CorpusError::EmptyDocument {
                location,
                field: self.spec.text_field.clone(),
                id,
            });
        }
        let text = text.into_owned();
        Ok(Document { id, text, location })
    }
}
