//! Parquet reader: streams record batches of the id and text columns only, so that memory is
//! bounded by one batch whatever the file size (FineWeb shards are ~2 GB).

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};

use crate::error::{CorpusError, Location, Position};
use crate::reader::{CorpusSpec, Document, RawRecords};

const BATCH_ROWS: usize = 1024;

pub(crate) fn open(path: &Arc<Path>, spec: &CorpusSpec) -> Result<RawRecords, CorpusError> {
    let at_file = || Location::new(path, Position::File);
    let file = File::open(path).map_err(|source| CorpusError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| CorpusError::Parquet {
            location: at_file(),
            message: e.to_string(),
        })?;
    let schema = Arc::clone(builder.schema());
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
            })
    };
    let id_idx = column_index(&spec.id_field)?;
    let text_idx = column_index(&spec.text_field)?;
    let mask = ProjectionMask::roots(builder.parquet_schema(), [id_idx, text_idx]);
    let reader = builder
        .with_projection(mask)
        .with_batch_size(BATCH_ROWS)
        .build()
        .map_err(|e| CorpusError::Parquet {
            location: at_file(),
            message: e.to_string(),
        })?;
    // The projected batch keeps schema order, so find the columns again by name.
    Ok(Box::new(ParquetRecords {
        reader,
        path: Arc::clone(path),
        id_field: spec.id_field.clone(),
        text_field: spec.text_field.clone(),
        batch: None,
        batch_row: 0,
        row: 0,
        done: false,
    }))
}

struct ParquetRecords {
    reader: ParquetRecordBatchReader,
    path: Arc<Path>,
    id_field: String,
    text_field: String,
    batch: Option<(ArrayRef, ArrayRef)>,
    batch_row: usize,
    row: u64,
    done: bool,
}

impl ParquetRecords {
    fn take_batch(&mut self, batch: RecordBatch) -> Result<(), CorpusError> {
        let column = |field: &str| {
            batch
                .column_by_name(field)
                .cloned()
                .ok_or_else(|| CorpusError::Parquet {
                    location: Location::new(&self.path, Position::Row(self.row)),
                    message: format!("column `{field}` vanished from a record batch"),
                })
        };
        self.batch = Some((column(&self.id_field)?, column(&self.text_field)?));
        self.batch_row = 0;
        Ok(())
    }

    fn record(&self, ids: &ArrayRef, texts: &ArrayRef, i: usize) -> Result<Document, CorpusError> {
        let location = Location::new(&self.path, Position::Row(self.row));
        let id = cell_to_string(ids, i, &location, &self.id_field, true)?;
        let text = cell_to_string(texts, i, &location, &self.text_field, false)?;
        Ok(Document { id, text, location })
    }
}

impl Iterator for ParquetRecords {
    type Item = Result<Document, CorpusError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.done {
                return None;
            }
            if let Some((ids, texts)) = &self.batch
                && self.batch_row < ids.len()
            {
                let (ids, texts) = (Arc::clone(ids), Arc::clone(texts));
                let result = self.record(&ids, &texts, self.batch_row);
                self.batch_row += 1;
                self.row += 1;
                return Some(result);
            }
            match self.reader.next() {
                None => self.done = true,
                Some(Ok(batch)) => {
                    if let Err(e) = self.take_batch(batch) {
                        self.done = true;
                        return Some(Err(e));
                    }
                }
                Some(Err(e)) => {
                    self.done = true;
                    return Some(Err(CorpusError::Parquet {
                        location: Location::new(&self.path, Position::Row(self.row)),
                        message: e.to_string(),
                    }));
                }
            }
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
    let from_bytes = |bytes: &[u8]| {
        String::from_utf8(bytes.to_vec()).map_err(|e| CorpusError::NonUtf8 {
            location: location.clone(),
            field: field.to_string(),
            byte_offset: e.utf8_error().valid_up_to(),
            unit: "value",
        })
    };
    match array.data_type() {
        DataType::Utf8 => Ok(array.as_string::<i32>().value(i).to_owned()),
        DataType::LargeUtf8 => Ok(array.as_string::<i64>().value(i).to_owned()),
        DataType::Utf8View => Ok(array.as_string_view().value(i).to_owned()),
        DataType::Binary => from_bytes(array.as_binary::<i32>().value(i)),
        DataType::LargeBinary => from_bytes(array.as_binary::<i64>().value(i)),
        DataType::BinaryView => from_bytes(array.as_binary_view().value(i)),
        DataType::Int64 if integers_allowed => {
            Ok(array.as_primitive::<Int64Type>().value(i).to_string())
        }
        DataType::Int32 if integers_allowed => {
            Ok(array.as_primitive::<Int32Type>().value(i).to_string())
        }
        DataType::UInt64 if integers_allowed => {
            Ok(array.as_primitive::<UInt64Type>().value(i).to_string())
        }
        DataType::UInt32 if integers_allowed => {
            Ok(array.as_primitive::<UInt32Type>().value(i).to_string())
        }
        other => Err(wrong(format!("a column of type {other}"))),
    }
}
