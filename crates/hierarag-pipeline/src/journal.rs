//! Append-only JSONL record files that survive being killed at any moment.
//!
//! A stage appends one finished record per line and flushes it. When a stage starts again it
//! reads what is there: complete lines are done work; a torn last line (the process died while
//! writing it) is cut off; a broken line anywhere else is an error naming file and line. At the
//! end of a stage the file is put in plan order ([`sort_records`]), atomically, so that a run
//! that was interrupted and resumed ends with the same bytes as one that was not.

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::PipelineError;

/// An append-only JSONL file of records keyed by a string field.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: File,
    id_field: &'static str,
    done: HashSet<String>,
    dropped_tail: usize,
}

impl Journal {
    /// Opens (or creates) `path`, cutting off a torn last line, and learns the ids already
    /// there. Duplicate ids are an error: they mean the file was edited or two runs wrote it.
    pub fn open(path: &Path, id_field: &'static str) -> Result<Journal, PipelineError> {
        let dropped_tail = repair_tail(path)?;
        let mut done = HashSet::new();
        for (line, value) in read_values(path)?.into_iter().enumerate() {
            let id = record_id(&value, id_field).ok_or_else(|| PipelineError::Record {
                path: path.to_path_buf(),
                line: line + 1,
                message: format!("missing string field `{id_field}`"),
            })?;
            if !done.insert(id.to_string()) {
                return Err(PipelineError::DuplicateId {
                    path: path.to_path_buf(),
                    line: line + 1,
                    id: id.to_string(),
                });
            }
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| PipelineError::io(path, e))?;
        Ok(Journal {
            path: path.to_path_buf(),
            file,
            id_field,
            done,
            dropped_tail,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of an unfinished last record, left by an interrupted run, that were cut off.
    pub fn dropped_tail(&self) -> usize {
        self.dropped_tail
    }

    /// Ids of the records in the file.
    pub fn done(&self) -> &HashSet<String> {
        &self.done
    }

    pub fn contains(&self, id: &str) -> bool {
        self.done.contains(id)
    }

    /// Opens a side file whose lines share ids (e.g. several rejects per item): no
    /// uniqueness check, a torn last line cut off.
    pub fn open_side(path: &Path) -> Result<Journal, PipelineError> {
        let dropped_tail = repair_tail(path)?;
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| PipelineError::io(path, e))?;
        Ok(Journal {
            path: path.to_path_buf(),
            file,
            id_field: "",
            done: HashSet::new(),
            dropped_tail,
        })
    }

    /// Appends one line to a side file (no id bookkeeping).
    pub fn append_side<T: Serialize>(&mut self, record: &T) -> Result<(), PipelineError> {
        let mut line = serde_json::to_string(record).map_err(|e| {
            PipelineError::Invalid(format!("{}: cannot serialise: {e}", self.path.display()))
        })?;
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.flush())
            .map_err(|e| PipelineError::io(&self.path, e))
    }

    /// Appends one record as one line and flushes it to the operating system.
    pub fn append<T: Serialize>(&mut self, record: &T) -> Result<(), PipelineError> {
        let value = serde_json::to_value(record).map_err(|e| {
            PipelineError::Invalid(format!("{}: cannot serialise: {e}", self.path.display()))
        })?;
        let id = record_id(&value, self.id_field)
            .ok_or_else(|| {
                PipelineError::Invalid(format!(
                    "{}: record without `{}`",
                    self.path.display(),
                    self.id_field
                ))
            })?
            .to_string();
        let mut line = serde_json::to_string(&value).expect("a JSON value serialises");
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.flush())
            .map_err(|e| PipelineError::io(&self.path, e))?;
        self.done.insert(id);
        Ok(())
    }
}

fn record_id<'a>(value: &'a Value, id_field: &str) -> Option<&'a str> {
    value.get(id_field).and_then(Value::as_str)
}

/// Cuts a torn last line (no final newline, or not JSON) off `path`; returns the bytes cut.
/// A missing file is fine.
fn repair_tail(path: &Path) -> Result<usize, PipelineError> {
    let mut file = match OpenOptions::new().read(true).write(true).open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(PipelineError::io(path, e)),
    };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| PipelineError::io(path, e))?;
    let mut keep = bytes.len();
    if !bytes.is_empty() && bytes[bytes.len() - 1] != b'\n' {
        keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    } else if keep > 0 {
        // A complete-looking last line that does not parse was cut inside a multi-byte write.
        let start = bytes[..keep - 1]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        if serde_json::from_slice::<Value>(&bytes[start..keep]).is_err() {
            keep = start;
        }
    }
    if keep < bytes.len() {
        file.set_len(keep as u64)
            .and_then(|()| file.seek(SeekFrom::End(0)).map(|_| ()))
            .and_then(|()| file.sync_all())
            .map_err(|e| PipelineError::io(path, e))?;
    }
    Ok(bytes.len() - keep)
}

/// Every line of a JSONL file as a JSON value; a line that does not parse is an error naming
/// file and line. A missing file has no lines.
pub fn read_values(path: &Path) -> Result<Vec<Value>, PipelineError> {
    read_records(path)
}

/// Every line of a JSONL file as a `T`; errors name file, line and (through serde) field.
pub fn read_records<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>, PipelineError> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(PipelineError::io(path, e)),
    };
    let mut records = Vec::new();
    for (n, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| PipelineError::Record {
            path: path.to_path_buf(),
            line: n + 1,
            message: e.to_string(),
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let record = serde_json::from_str(&line).map_err(|e| PipelineError::Record {
            path: path.to_path_buf(),
            line: n + 1,
            message: e.to_string(),
        })?;
        records.push(record);
    }
    Ok(records)
}

/// Reads a required input file of records with unique ids; a missing file is an error.
pub fn read_input<T: DeserializeOwned>(
    path: &Path,
    id: impl Fn(&T) -> &str,
) -> Result<Vec<T>, PipelineError> {
    if !path.exists() {
        return Err(PipelineError::Invalid(format!(
            "{}: no such file",
            path.display()
        )));
    }
    let records: Vec<T> = read_records(path)?;
    let mut seen = HashSet::new();
    for (n, record) in records.iter().enumerate() {
        if !seen.insert(id(record)) {
            return Err(PipelineError::DuplicateId {
                path: path.to_path_buf(),
                line: n + 1,
                id: id(record).to_string(),
            });
        }
    }
    Ok(records)
}

/// Keeps only the lines of `path` whose `field` is in `keep` (a torn last line goes too),
/// rewriting the file atomically when anything is dropped. Used for side files such as
/// `rejects.jsonl`, whose lines belong to items that may not have finished.
pub fn retain_records(
    path: &Path,
    field: &str,
    keep: &HashSet<String>,
) -> Result<usize, PipelineError> {
    repair_tail(path)?;
    let values = read_values(path)?;
    let before = values.len();
    let kept: Vec<&Value> = values
        .iter()
        .filter(|v| record_id(v, field).is_some_and(|id| keep.contains(id)))
        .collect();
    if kept.len() != before {
        write_values_atomic(path, &kept)?;
    }
    Ok(before - kept.len())
}

/// Puts the lines of `path` in the order of `order` (ids by position; unknown ids last, in
/// their current order), keeping the order of lines with the same id. Rewrites atomically,
/// and only when the order changes.
pub fn sort_records(
    path: &Path,
    field: &str,
    order: &HashMap<String, usize>,
) -> Result<(), PipelineError> {
    let values = read_values(path)?;
    let position = |v: &Value| {
        record_id(v, field)
            .and_then(|id| order.get(id).copied())
            .unwrap_or(usize::MAX)
    };
    let mut sorted: Vec<&Value> = values.iter().collect();
    sorted.sort_by_key(|v| position(v));
    let changed = sorted
        .iter()
        .zip(values.iter())
        .any(|(a, b)| !std::ptr::eq(*a, b));
    if changed {
        write_values_atomic(path, &sorted)?;
    }
    Ok(())
}

/// Writes JSON values as lines to a temporary file beside `path`, syncs it and renames it over
/// `path`, so that readers see the old file or the new one, never half of one.
pub fn write_values_atomic(path: &Path, values: &[&Value]) -> Result<(), PipelineError> {
    let mut bytes = Vec::new();
    for value in values {
        serde_json::to_writer(&mut bytes, value).expect("a JSON value serialises");
        bytes.push(b'\n');
    }
    write_atomic(path, &bytes)
}

/// Writes bytes to `path` atomically (temporary file, sync, rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), PipelineError> {
    let tmp = path.with_extension(format!(
        "{}.tmp",
        path.extension().and_then(|e| e.to_str()).unwrap_or("")
    ));
    let mut file = File::create(&tmp).map_err(|e| PipelineError::io(&tmp, e))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| PipelineError::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| PipelineError::io(path, e))
}

/// The sha256 of a file, hex; `None` when it does not exist.
pub fn file_sha256(path: &Path) -> Result<Option<String>, PipelineError> {
    Ok(file_fingerprint(path)?.map(|(sha256, _)| sha256))
}

/// The sha256 (hex) and line count of a file, in one read; `None` when it does not exist.
pub fn file_fingerprint(path: &Path) -> Result<Option<(String, usize)>, PipelineError> {
    use sha2::{Digest, Sha256};
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(PipelineError::io(path, e)),
    };
    let mut hasher = Sha256::new();
    let mut lines = 0;
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let n = file
            .read(&mut buffer)
            .map_err(|e| PipelineError::io(path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
        lines += buffer[..n].iter().filter(|&&b| b == b'\n').count();
    }
    Ok(Some((hex::encode(hasher.finalize()), lines)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_torn_last_line_is_cut_and_the_rest_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("answers.jsonl");
        std::fs::write(&path, "{\"id\":\"a\"}\n{\"id\":\"b\"}\n{\"id\":\"c\",\"ans").unwrap();
        let mut journal = Journal::open(&path, "id").unwrap();
        assert_eq!(journal.done().len(), 2);
        journal.append(&json!({"id": "c", "answer": "x"})).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"id\":\"a\"}\n{\"id\":\"b\"}\n{\"id\":\"c\",\"answer\":\"x\"}\n"
        );
    }

    #[test]
    fn a_broken_line_in_the_middle_and_duplicates_are_errors_naming_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scores.jsonl");
        std::fs::write(&path, "{\"id\":\"a\"}\n{oops}\n{\"id\":\"b\"}\n").unwrap();
        let error = Journal::open(&path, "id").unwrap_err().to_string();
        assert!(
            error.ends_with("scores.jsonl:2: key must be a string at line 1 column 2"),
            "{error}"
        );
        std::fs::write(&path, "{\"id\":\"a\"}\n{\"id\":\"a\"}\n").unwrap();
        let error = Journal::open(&path, "id").unwrap_err().to_string();
        assert!(
            error.contains("scores.jsonl:2: duplicate id \"a\""),
            "{error}"
        );
    }

    #[test]
    fn sorting_follows_the_plan_and_keeps_same_id_lines_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rejects.jsonl");
        std::fs::write(
            &path,
            "{\"item_id\":\"b\",\"n\":1}\n{\"item_id\":\"a\",\"n\":2}\n{\"item_id\":\"b\",\"n\":3}\n",
        )
        .unwrap();
        let order = HashMap::from([("a".to_string(), 0), ("b".to_string(), 1)]);
        sort_records(&path, "item_id", &order).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"item_id\":\"a\",\"n\":2}\n{\"item_id\":\"b\",\"n\":1}\n{\"item_id\":\"b\",\"n\":3}\n"
        );
        let keep = HashSet::from(["b".to_string()]);
        assert_eq!(retain_records(&path, "item_id", &keep).unwrap(), 1);
        assert_eq!(read_values(&path).unwrap().len(), 2);
    }
}
