//! Parquet reader: streams the id and text columns only, one row group and one record batch at a
//! time, so that memory is bounded by one batch whatever the file size (FineWeb shards are
//! ~2 GB) and a damaged row group costs only its own rows.

use std::borrow::Cow;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder, RowSelection,
};

use crate::error::{CorpusError, Location, Position};
use crate::reader::{CorpusSpec, Document, RawRecords};

const BATCH_ROWS: usize = 1024;

pub(crate) fn open(path: &Arc<Path>, spec: &CorpusSpec) -> Result<RawRecords, CorpusError> {
    let file = ParquetFile::open(path, spec)?;
    let mask = file.mask(true);
    Ok(Box::new(ParquetRecords {
        mask,
        path: Arc::clone(path),
        id_field: spec.id_field.clone(),
        text_field: spec.text_field.clone(),
        row_groups: file.row_groups.clone().into_iter(),
        file,
        current: None,
    }))
}

/// An open Parquet file: its footer, where the id and text columns are, and its row groups.
pub(crate) struct ParquetFile {
    path: Arc<Path>,
    metadata: ArrowReaderMetadata,
    id_idx: usize,
    text_idx: usize,
    /// Non-empty row groups, in file order.
    pub(crate) row_groups: Vec<RowGroup>,
    pub(crate) n_rows: u64,
}

impl ParquetFile {
    /// Reads the footer once (each row group then gets a reader of its own over the same
    /// metadata) and finds the id and text columns.
    pub(crate) fn open(path: &Arc<Path>, spec: &CorpusSpec) -> Result<ParquetFile, CorpusError> {
        let at_file = || Location::new(path, Position::File);
        let file = File::open(path).map_err(|source| CorpusError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let metadata =
            ArrowReaderMetadata::load(&file, ArrowReaderOptions::new()).map_err(|e| {
                CorpusError::Parquet {
                    location: at_file(),
                    message: e.to_string(),
                }
            })?;
        let schema = Arc::clone(metadata.schema());
        let n_rows = u64::try_from(metadata.metadata().file_metadata().num_rows()).unwrap_or(0);
        let column_index = |field: &str| {
            schema
                .index_of(field)
                .map_err(|_| CorpusError::MissingColumn {
                    location: at_file(),
                    field: field.to_string(),
                    columns: schema
                        .fields()
                        .iter()
                        .map(|f| format!("`{}`", f.name()))
                        .collect::<Vec<_>>()
                        .join(", "),
                    n_rows,
                })
        };
        let id_idx = column_index(&spec.id_field)?;
        let text_idx = column_index(&spec.text_field)?;
        let mut first_row = 0u64;
        let mut row_groups = Vec::with_capacity(metadata.metadata().num_row_groups());
        for (index, group) in metadata.metadata().row_groups().iter().enumerate() {
            let n_rows = u64::try_from(group.num_rows()).unwrap_or(0);
            if n_rows > 0 {
                row_groups.push(RowGroup {
                    index,
                    first_row,
                    n_rows,
                });
            }
            first_row += n_rows;
        }
        Ok(ParquetFile {
            path: Arc::clone(path),
            metadata,
            id_idx,
            text_idx,
            row_groups,
            n_rows,
        })
    }

    /// The id column, and the text column too when `with_text`.
    pub(crate) fn mask(&self, with_text: bool) -> ProjectionMask {
        let parquet_schema = self.metadata.parquet_schema();
        if with_text {
            ProjectionMask::roots(parquet_schema, [self.id_idx, self.text_idx])
        } else {
            ProjectionMask::roots(parquet_schema, [self.id_idx])
        }
    }

    /// A reader of one row group's columns in `mask`, of the rows in `selection` only when
    /// given (positions within the row group).
    pub(crate) fn group_reader(
        &self,
        group: RowGroup,
        mask: &ProjectionMask,
        selection: Option<RowSelection>,
    ) -> Result<ParquetRecordBatchReader, parquet::errors::ParquetError> {
        // A file of its own: clones of one handle share its offset, and the parquet crate
        // seeks before each read, so two row groups read at once through clones would mix
        // their bytes.
        let file = File::open(&self.path)?;
        let mut builder =
            ParquetRecordBatchReaderBuilder::new_with_metadata(file, self.metadata.clone())
                .with_projection(mask.clone())
                .with_row_groups(vec![group.index])
                .with_batch_size(BATCH_ROWS);
        if let Some(selection) = selection {
            builder = builder.with_row_selection(selection);
        }
        builder.build()
    }
}

/// The error of a row group that failed to decode after `rows_read` of its rows.
pub(crate) fn group_error(
    path: &Arc<Path>,
    group: RowGroup,
    rows_read: u64,
    message: String,
) -> CorpusError {
    CorpusError::ParquetData {
        location: Location::new(
            path,
            Position::RowGroup {
                index: group.index,
                first_row: group.first_row,
                n_rows: group.n_rows,
            },
        ),
        message,
        rows_read,
    }
}

/// A row group's place in the file.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RowGroup {
    pub(crate) index: usize,
    pub(crate) first_row: u64,
    pub(crate) n_rows: u64,
}

/// The row group being read: its reader, the batch being handed out and how far into it.
struct GroupReader {
    group: RowGroup,
    reader: ParquetRecordBatchReader,
    /// The id and text columns of the current batch.
    batch: Option<(ArrayRef, ArrayRef)>,
    batch_row: usize,
    rows_read: u64,
}

struct ParquetRecords {
    file: ParquetFile,
    mask: ProjectionMask,
    path: Arc<Path>,
    id_field: String,
    text_field: String,
    /// Row groups not yet started, in file order (empty ones left out).
    row_groups: std::vec::IntoIter<RowGroup>,
    current: Option<GroupReader>,
}

impl ParquetRecords {
    fn open_group(&self, group: RowGroup) -> Result<GroupReader, CorpusError> {
        let reader = self
            .file
            .group_reader(group, &self.mask, None)
            .map_err(|e| group_error(&self.path, group, 0, e.to_string()))?;
        Ok(GroupReader {
            group,
            reader,
            batch: None,
            batch_row: 0,
            rows_read: 0,
        })
    }

    /// The id and text columns of a batch; the projection keeps schema order, so they are found
    /// again by name.
    fn columns(&self, batch: &RecordBatch) -> Result<(ArrayRef, ArrayRef), String> {
        let column = |field: &str| {
            batch
                .column_by_name(field)
                .cloned()
                .ok_or_else(|| format!("column `{field}` vanished from a record batch"))
        };
        Ok((column(&self.id_field)?, column(&self.text_field)?))
    }

    fn record(
        &self,
        ids: &ArrayRef,
        texts: &ArrayRef,
        i: usize,
        row: u64,
    ) -> Result<Document, CorpusError> {
        let location = Location::new(&self.path, Position::Row(row));
        let id = cell_to_string(ids, i, &location, &self.id_field, true)?;
        let text = cell_to_string(texts, i, &location, &self.text_field, false)?;
        Ok(Document { id, text, location })
    }
}

impl Iterator for ParquetRecords {
    type Item = Result<Document, CorpusError>;

    /// Rows in file order; a row group that fails to decode yields one error for the rest of its
    /// rows, and reading goes on with the next row group.
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let Some(current) = self.current.as_mut() else {
                let group = self.row_groups.next()?;
                match self.open_group(group) {
                    Ok(reader) => self.current = Some(reader),
                    Err(error) => return Some(Err(error)),
                }
                continue;
            };
            if let Some((ids, texts)) = &current.batch
                && current.batch_row < ids.len()
            {
                let (ids, texts) = (Arc::clone(ids), Arc::clone(texts));
                let i = current.batch_row;
                let row = current.group.first_row + current.rows_read;
                current.batch_row += 1;
                current.rows_read += 1;
                return Some(self.record(&ids, &texts, i, row));
            }
            let (group, rows_read) = (current.group, current.rows_read);
            let failure = match current.reader.next() {
                Some(Ok(batch)) => match self.columns(&batch) {
                    Ok(columns) => {
                        let current = self.current.as_mut().expect("a row group is being read");
                        current.batch = Some(columns);
                        current.batch_row = 0;
                        continue;
                    }
                    Err(message) => message,
                },
                Some(Err(e)) => e.to_string(),
                None if rows_read < group.n_rows => format!(
                    "the row group ended before the {} rows its metadata counts",
                    group.n_rows
                ),
                None => {
                    self.current = None;
                    continue;
                }
            };
            self.current = None;
            return Some(Err(group_error(&self.path, group, rows_read, failure)));
        }
    }
}

fn cell_to_string(
    array: &ArrayRef,
    i: usize,
    location: &Location,
    field: &str,
    integers_allowed: bool,
) -> Result<String, CorpusError> {
    cell_str(array, i, location, field, integers_allowed).map(Cow::into_owned)
}

/// A cell as text, borrowed from the array when it is a string or valid UTF-8 bytes; integers
/// (ids only) are written out.
pub(crate) fn cell_str<'a>(
    array: &'a ArrayRef,
    i: usize,
    location: &Location,
    field: &str,
    integers_allowed: bool,
) -> Result<Cow<'a, str>, CorpusError> {
    let wrong = |found: String| CorpusError::WrongType {
        location: location.clone(),
        field: field.to_string(),
        expected: if integers_allowed {
            "a string or an integer"
        } else {
            "a string"
        },
        found,
    };
    if array.is_null(i) {
        return Err(wrong("null".into()));
    }
    let from_bytes = |bytes: &'a [u8]| {
        std::str::from_utf8(bytes)
            .map(Cow::Borrowed)
            .map_err(|e| CorpusError::NonUtf8 {
                location: location.clone(),
                field: field.to_string(),
                byte_offset: e.valid_up_to(),
                unit: "value",
            })
    };
    match array.data_type() {
        DataType::Utf8 => Ok(Cow::Borrowed(array.as_string::<i32>().value(i))),
        DataType::LargeUtf8 => Ok(Cow::Borrowed(array.as_string::<i64>().value(i))),
        DataType::Utf8View => Ok(Cow::Borrowed(array.as_string_view().value(i))),
        DataType::Binary => from_bytes(array.as_binary::<i32>().value(i)),
        DataType::LargeBinary => from_bytes(array.as_binary::<i64>().value(i)),
        DataType::BinaryView => from_bytes(array.as_binary_view().value(i)),
        DataType::Int64 if integers_allowed => Ok(Cow::Owned(
            array.as_primitive::<Int64Type>().value(i).to_string(),
        )),
        DataType::Int32 if integers_allowed => Ok(Cow::Owned(
            array.as_primitive::<Int32Type>().value(i).to_string(),
        )),
        DataType::UInt64 if integers_allowed => Ok(Cow::Owned(
            array.as_primitive::<UInt64Type>().value(i).to_string(),
        )),
        DataType::UInt32 if integers_allowed => Ok(Cow::Owned(
            array.as_primitive::<UInt32Type>().value(i).to_string(),
        )),
        other => Err(wrong(format!("a column of type {other}"))),
    }
}
