//! A Parquet corpus read for sampling: every row's id (and, when asked, its text's length)
//! decoded on all cores without keeping the texts, and the texts of chosen rows afterwards.
//!
//! Reading only the id column skips the text pages, which are nearly all of a FineWeb shard;
//! the few texts a sample needs are then read by row selection, which decompresses only the
//! pages holding them. Row groups are decoded in parallel (rayon), a window ahead of the rows
//! handed to the caller in corpus order, through the same uniqueness checks and `--on-error`
//! policy as [`Documents`].
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

/// The ids of a pass checked at its end: each row's [`IdKey`] halves and its [`RowRef`], in
/// buckets by the key's top byte. Equal keys share a bucket, and 256 buckets that fit in a
/// core's cache sort in half the time of one array of millions (the scatter costs less, and
/// is done while the next row groups decode).
#[derive(Debug)]
struct DeferredIds {
    buckets: Vec<Vec<(u64, u64, u64)>>,
}

impl DeferredIds {
    const BUCKETS: usize = 256;

    fn new() -> DeferredIds {
        DeferredIds {
            buckets: vec![Vec::new(); Self::BUCKETS],
        }
    }

    fn reserve(&mut self, rows: usize) {
        // A hash spreads the keys evenly; a little slack saves most buckets a regrowth.
        let each = rows / Self::BUCKETS + rows / Self::BUCKETS / 16 + 16;
        for bucket in &mut self.buckets {
            bucket.reserve(each);
        }
    }

    fn push(&mut self, key: IdKey, row: RowRef) {
        let [high, low] = key.0;
        self.buckets[(high >> 56) as usize].push((high, low, row.0));
    }

    /// The first repeat in corpus order and the row it repeats, if any id repeats.
    fn first_repeat(mut self) -> Option<(RowRef, RowRef)> {
        self.buckets
            .par_iter_mut()
            .filter_map(|bucket| {
                bucket.sort_unstable();
                // Sorted by key, then by row: in each run of equal keys the first is the first
                // occurrence, and the second the first repeat. The earliest repeat over all
                // runs is where a row-by-row check stops.
                bucket
                    .windows(2)
                    .filter(|pair| (pair[0].0, pair[0].1) == (pair[1].0, pair[1].1))
                    .map(|pair| (RowRef(pair[1].2), RowRef(pair[0].2)))
                    .min()
            })
            .min()
    }
}

/// A row as decoded on a worker thread: the key of its id for the uniqueness check (hashed
/// there, off the thread that checks) and its measure.
type DecodedRow = (IdKey, Option<usize>);

/// A row group's rows as a scan decoded them: each an id with its measure, or the row's error;
/// then the error that ended the row group early, if one did. The ids lie end to end in one
/// string (`id_ends[i]` is where row `i`'s ends; a row with an error has an empty one), which
/// costs one allocation a group instead of one a row.
struct GroupRows {
    file_idx: usize,
    path: Arc<Path>,
    group: RowGroup,
    rows: Vec<Result<DecodedRow, CorpusError>>,
    ids: String,
    id_ends: Vec<usize>,
    failure: Option<CorpusError>,
}

/// A scan's work in corpus order, through every file: a file opened (with its rows, for the
/// id table), a row group to decode, or a file that cannot be read.
enum Step {
    Opened(usize),
    Group {
        file_idx: usize,
        file: Arc<ParquetFile>,
        mask: Arc<ProjectionMask>,
        group: RowGroup,
    },
    Failed(CorpusError),
}

/// The rows a decoding window holds for each thread.
const WINDOW_ROWS: u64 = 16 * 1024;

/// The next steps of a scan: row groups up to about `rows` rows, and at least `groups` of them
/// (so that every thread has one to decode however large they are).
fn take_window(steps: &mut impl Iterator<Item = Step>, rows: usize, groups: usize) -> Vec<Step> {
    let mut window = Vec::new();
    let (mut held_rows, mut held_groups) = (0, 0);
    for step in steps.by_ref() {
        if let Step::Group { group, .. } = &step {
            held_rows += group.n_rows;
            held_groups += 1;
        }
        window.push(step);
        if held_rows >= rows as u64 && held_groups >= groups {
            break;
        }
    }
    window
}

/// A [`Step`] done by a decoding thread.
enum Decoded {
    Opened(usize),
    Rows(GroupRows),
    Failed(CorpusError),
}

/// What one [`ParquetCorpus::scan`] carries from row group to row group.
struct Pass<'v> {
    checks: Checks,
    deferred: Option<DeferredIds>,
    n_rows: u64,
    visit: &'v mut (dyn FnMut(ScannedRow<'_>) + Send),
}

impl Pass<'_> {
    /// Checks the rows of `decoded` (in corpus order) and hands out the good ones; the error
    /// that ends the pass, if one does.
    fn hand_out(&mut self, id_field: &str, decoded: Vec<Decoded>) -> Result<(), CorpusError> {
        for step in decoded {
            let group = match step {
                Decoded::Opened(rows) => {
                    match self.deferred.as_mut() {
                        Some(deferred) => deferred.reserve(rows),
                        None => self.checks.reserve(rows),
                    }
                    continue;
                }
                Decoded::Failed(error) => match self.checks.handle(error, false) {
                    Some(error) => return Err(error),
                    None => continue,
                },
                Decoded::Rows(group) => group,
            };
            let (file_idx, path) = (group.file_idx, &group.path);
            let mut start = 0;
            for (offset, (row, &end)) in group.rows.into_iter().zip(&group.id_ends).enumerate() {
                let id = &group.ids[start..end];
                start = end;
                let row_n = group.group.first_row + offset as u64;
                let row_ref = RowRef::new(file_idx, row_n);
                let checked = row.and_then(|(key, measure)| {
                    if let Some(deferred) = self.deferred.as_mut() {
                        deferred.push(key, row_ref);
                        return Ok(measure);
                    }
                    let location = Location::new(path, Position::Row(row_n));
                    self.checks
                        .unique_key(key, id, &location, id_field)
                        .map(|()| measure)
                });
                match checked {
                    Ok(measure) => {
                        self.n_rows += 1;
                        (self.visit)(ScannedRow {
                            id,
                            measure,
                            row: row_ref,
                        });
                    }
                    Err(error) => {
                        if let Some(error) = self.checks.handle(error, false) {
                            return Err(error);
                        }
                    }
                }
            }
            if let Some(error) = group.failure
                && let Some(error) = self.checks.handle(error, false)
            {
                return Err(error);
            }
        }
        Ok(())
    }
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
    /// a window of about 16 k rows (two row groups at least) a thread at a time, while `visit`
    /// gets the rows of the window before (on a thread of the pool, hence `Send`); memory
    /// holds the ids of two windows and, under `--on-error fail`, 24 bytes a row for the
    /// duplicate check at the end.
    pub fn scan(
        &self,
        on_error: OnError,
        measure: Option<&Measure>,
        visit: &mut (dyn FnMut(ScannedRow<'_>) + Send),
    ) -> Result<ScanSummary, CorpusError> {
        let mut pass = Pass {
            checks: Checks::new(on_error),
            // Under `--on-error fail` nothing is skipped, so every id can be checked once the
            // pass is over, by sorting their keys: appending is sequential, where a hash table
            // of millions of ids misses the cache at every insert. A failure met in the pass is
            // reported only after the duplicates of the rows before it.
            deferred: (on_error == OnError::Fail).then(DeferredIds::new),
            n_rows: 0,
            visit,
        };
        // Row groups a window at a time, across files: the next window decodes while the rows
        // of the last are handed out and the files of the one after are opened, so that no
        // core waits for another. A window holds about `WINDOW_ROWS` rows a thread, which
        // spreads the cost of a join over many of FineWeb's 1,000-row groups, and at least
        // two row groups a thread, so that large row groups still decode on every core.
        let threads = rayon::current_num_threads().max(1);
        let window_rows = (WINDOW_ROWS as usize) * threads;
        let mut steps = self.steps(measure.is_some());
        let mut coming = take_window(&mut steps, window_rows, 2 * threads);
        let mut decoded: Vec<Decoded> = Vec::new();
        loop {
            let now = std::mem::take(&mut coming);
            let last = now.is_empty();
            let (next, (handed, after)) = rayon::join(
                || {
                    now.into_par_iter()
                        .map(|step| self.decode(step, measure))
                        .collect::<Vec<_>>()
                },
                || {
                    rayon::join(
                        || pass.hand_out(&self.spec.id_field, decoded),
                        || take_window(&mut steps, window_rows, 2 * threads),
                    )
                },
            );
            if let Err(error) = handed {
                return Err(self.first_error(pass.deferred, error));
            }
            if last {
                break;
            }
            decoded = next;
            coming = after;
        }
        if let Some(deferred) = pass.deferred
            && let Some(error) = self.duplicate(deferred)
        {
            return Err(error);
        }
        Ok(ScanSummary {
            n_rows: pass.n_rows,
            skipped: pass.checks.skipped,
        })
    }

    /// The steps of a scan, each file opened when the scan reaches it.
    fn steps(&self, with_text: bool) -> impl Iterator<Item = Step> + '_ {
        self.files
            .iter()
            .enumerate()
            .flat_map(move |(file_idx, path)| {
                let file = match ParquetFile::open(path, &self.spec) {
                    Ok(file) => file,
                    Err(error) => return vec![Step::Failed(error)],
                };
                if file.n_rows == 0 {
                    return vec![Step::Failed(CorpusError::EmptyInput {
                        location: Location::new(path, Position::File),
                        what: "the Parquet file has zero rows",
                    })];
                }
                let mask = Arc::new(file.mask(with_text));
                let file = Arc::new(file);
                let opened = Step::Opened(usize::try_from(file.n_rows).unwrap_or(0));
                std::iter::once(opened)
                    .chain(file.row_groups.iter().map(|&group| Step::Group {
                        file_idx,
                        file: Arc::clone(&file),
                        mask: Arc::clone(&mask),
                        group,
                    }))
                    .collect()
            })
    }

    fn decode(&self, step: Step, measure: Option<&Measure>) -> Decoded {
        match step {
            Step::Opened(rows) => Decoded::Opened(rows),
            Step::Failed(error) => Decoded::Failed(error),
            Step::Group {
                file_idx,
                file,
                mask,
                group,
            } => Decoded::Rows(self.read_group(file_idx, &file, group, &mask, measure)),
        }
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
    fn duplicate(&self, deferred: DeferredIds) -> Option<CorpusError> {
        let (later, first) = deferred.first_repeat()?;
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
        file_idx: usize,
        file: &ParquetFile,
        group: RowGroup,
        mask: &ProjectionMask,
        measure: Option<&Measure>,
    ) -> GroupRows {
        let path = &own_copy(&self.files[file_idx]);
        let n_rows = usize::try_from(group.n_rows).unwrap_or(0);
        let mut rows = Vec::with_capacity(n_rows);
        let mut ids = String::new();
        let mut id_ends = Vec::with_capacity(n_rows);
        let failure = match file.group_reader(group, mask, None) {
            Err(error) => Some(error.to_string()),
            Ok(reader) => {
                let mut failure = None;
                for batch in reader {
                    let columns = batch
                        .map_err(|e| e.to_string())
                        .and_then(|batch| self.columns(&batch, measure.is_some()));
                    let (id_column, texts) = match columns {
                        Ok(columns) => columns,
                        Err(message) => {
                            failure = Some(message);
                            break;
                        }
                    };
                    for i in 0..id_column.len() {
                        let row = group.first_row + rows.len() as u64;
                        let location = Location::new(path, Position::Row(row));
                        rows.push(self.row(
                            &id_column,
                            texts.as_ref(),
                            i,
                            &location,
                            &mut ids,
                            measure,
                        ));
                        id_ends.push(ids.len());
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
            file_idx,
            path: Arc::clone(path),
            group,
            rows,
            ids,
            id_ends,
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

    /// One row's id key and measure: the checks of [`crate::Documents`] that need no other
    /// row. A good row's id is appended to `id_buffer`.
    fn row(
        &self,
        ids: &ArrayRef,
        texts: Option<&ArrayRef>,
        i: usize,
        location: &Location,
        id_buffer: &mut String,
        measure: Option<&Measure>,
    ) -> Result<DecodedRow, CorpusError> {
        let id = cell_str(ids, i, location, &self.spec.id_field, true)?;
        let key = IdKey::of(&id);
        let measured = match (texts, measure) {
            (Some(texts), Some(measure)) => {
                let text = cell_str(texts, i, location, &self.spec.text_field, false)?;
                if text.split_whitespace().next().is_none() {
                    return Err(CorpusError::EmptyDocument {
                        location: location.clone(),
                        field: self.spec.text_field.clone(),
                        id: id.into_owned(),
                    });
                }
                Some(measure(&text))
            }
            _ => None,
        };
        id_buffer.push_str(&id);
        Ok((key, measured))
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
