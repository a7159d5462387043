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
        let lines = Lines::read(path, id_field)?;
        for line in &lines.lines {
            let id = line.id.as_deref().ok_or_else(|| PipelineError::Record {
                path: path.to_path_buf(),
                line: line.number,
                message: format!("missing string field `{id_field}`"),
            })?;
            if !done.insert(id.to_string()) {
                return Err(PipelineError::DuplicateId {
                    path: path.to_path_buf(),
                    line: line.number,
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
        self.append_side_all([record])
    }

    /// Appends several lines to a side file with one write (no id bookkeeping).
    pub fn append_side_all<'r, T: Serialize + 'r>(
        &mut self,
        records: impl IntoIterator<Item = &'r T>,
    ) -> Result<(), PipelineError> {
        let mut lines = Vec::new();
        for record in records {
            serde_json::to_writer(&mut lines, record).map_err(|e| {
                PipelineError::Invalid(format!("{}: cannot serialise: {e}", self.path.display()))
            })?;
            lines.push(b'\n');
        }
        self.write(&lines)
    }

    /// Appends one record as one line and flushes it to the operating system.
    pub fn append<T: Serialize>(&mut self, record: &T) -> Result<(), PipelineError> {
        self.append_all([record]).map(drop)
    }

    /// Appends records as lines with one write (group commit: the records that finished
    /// together reach the operating system together) and returns how many there were. The ids
    /// count as done only once the write has returned; a process killed during it leaves at
    /// most a torn last line, which [`Journal::open`] cuts off.
    pub fn append_all<'r, T: Serialize + 'r>(
        &mut self,
        records: impl IntoIterator<Item = &'r T>,
    ) -> Result<usize, PipelineError> {
        let mut lines = Vec::new();
        let mut ids = Vec::new();
        for record in records {
            let value = serde_json::to_value(record).map_err(|e| {
                PipelineError::Invalid(format!("{}: cannot serialise: {e}", self.path.display()))
            })?;
            let id = record_id(&value, self.id_field).ok_or_else(|| {
                PipelineError::Invalid(format!(
                    "{}: record without `{}`",
                    self.path.display(),
                    self.id_field
                ))
            })?;
            ids.push(id.to_string());
            serde_json::to_writer(&mut lines, &value).expect("a JSON value serialises");
            lines.push(b'\n');
        }
        self.write(&lines)?;
        let written = ids.len();
        self.done.extend(ids);
        Ok(written)
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), PipelineError> {
        if bytes.is_empty() {
            return Ok(());
        }
        self.file
            .write_all(bytes)
            .and_then(|()| self.file.flush())
            .map_err(|e| PipelineError::io(&self.path, e))
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
/// and only when the order changes. Lines are moved as they are, not parsed and printed
/// again: every line was printed by serde_json, and printing its parse gives the same bytes.
pub fn sort_records(
    path: &Path,
    field: &str,
    order: &HashMap<String, usize>,
) -> Result<(), PipelineError> {
    let lines = Lines::read(path, field)?;
    let position = |line: &Line| {
        line.id
            .as_deref()
            .and_then(|id| order.get(id).copied())
            .unwrap_or(usize::MAX)
    };
    let mut sorted: Vec<&Line> = lines.lines.iter().collect();
    sorted.sort_by_key(|line| position(line));
    let changed = sorted
        .iter()
        .zip(lines.lines.iter())
        .any(|(a, b)| !std::ptr::eq(*a, b));
    if changed {
        let mut bytes = Vec::with_capacity(lines.bytes.len());
        for line in sorted {
            bytes.extend_from_slice(&lines.bytes[line.range.clone()]);
            bytes.push(b'\n');
        }
        write_atomic(path, &bytes)?;
    }
    Ok(())
}

/// The non-blank lines of a JSONL file, each with the string value of one top-level field.
struct Lines {
    bytes: Vec<u8>,
    lines: Vec<Line>,
}

struct Line {
    /// 1-based, blank lines counted.
    number: usize,
    /// Without the line break.
    range: std::ops::Range<usize>,
    /// The field's value, when the line is an object with that field as a string.
    id: Option<String>,
}

impl Lines {
    /// Reads `path` (missing: no lines), checking that every line is JSON; an error names
    /// file and line. Only the field is kept; the rest of each line is checked, not built.
    fn read(path: &Path, field: &str) -> Result<Lines, PipelineError> {
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(PipelineError::io(path, e)),
        };
        let mut lines = Vec::new();
        let mut start = 0;
        let mut number = 0;
        while start < bytes.len() {
            number += 1;
            let end = bytes[start..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(bytes.len(), |n| start + n);
            let next = end + 1;
            // As `BufRead::lines`: a line ends before "\n" or "\r\n".
            let end = if end > start && bytes[end - 1] == b'\r' {
                end - 1
            } else {
                end
            };
            let text = &bytes[start..end];
            let record_error = |message: String| PipelineError::Record {
                path: path.to_path_buf(),
                line: number,
                message,
            };
            let text = std::str::from_utf8(text).map_err(|e| record_error(e.to_string()))?;
            if !text.trim().is_empty() {
                let id =
                    field_of(text.as_bytes(), field).map_err(|e| record_error(e.to_string()))?;
                lines.push(Line {
                    number,
                    range: start..end,
                    id,
                });
            }
            start = next;
        }
        Ok(Lines { bytes, lines })
    }
}

/// The string value of the top-level `field` of one JSON line (`None` when the line is not
/// an object or the field is not a string), checking the whole line but building nothing else.
fn field_of(line: &[u8], field: &str) -> Result<Option<String>, serde_json::Error> {
    use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

    struct FieldOf<'f>(&'f str);
    struct KeyIs<'f>(&'f str);

    impl<'de> DeserializeSeed<'de> for KeyIs<'_> {
        type Value = bool;
        fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
            d.deserialize_str(self)
        }
    }

    impl<'de> Visitor<'de> for KeyIs<'_> {
        type Value = bool;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a key")
        }
        fn visit_str<E: de::Error>(self, key: &str) -> Result<bool, E> {
            Ok(key == self.0)
        }
    }

    impl<'de> Visitor<'de> for FieldOf<'_> {
        type Value = Option<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON value")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<String>, A::Error> {
            // Like `Value::get` on a parsed line: the last of repeated keys counts.
            let mut found = None;
            while let Some(is_field) = map.next_key_seed(KeyIs(self.0))? {
                if is_field {
                    found = match map.next_value::<Value>()? {
                        Value::String(id) => Some(id),
                        _ => None,
                    };
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(found)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<String>, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(None)
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Option<String>, E> {
            Ok(None)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Option<String>, E> {
            Ok(None)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Option<String>, E> {
            Ok(None)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Option<String>, E> {
            Ok(None)
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Option<String>, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Option<String>, E> {
            Ok(None)
        }
    }

    let mut deserializer = serde_json::Deserializer::from_slice(line);
    let id = de::Deserializer::deserialize_any(&mut deserializer, FieldOf(field))?;
    deserializer.end()?;
    Ok(id)
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
    fn sorted_lines_are_the_bytes_a_parse_and_print_would_give() {
        // What sorting did before it moved lines as they are: parse every line, print it again.
        let records = [
            json!({"id": "c", "x": 0.1, "y": 1e-7, "z": 123456789.0, "w": -0.0, "big": u64::MAX}),
            json!({"id": "a", "text": "é \"quoted\" \\ \n\t\u{1}\u{7f} 😀 </script>", "n": [1, 2.5, null]}),
            json!({"item": {"id": "nested"}, "id": "b", "f": 0.699999988079071, "g": 1.0e20}),
            json!({"id": "d", "scores": {"ap": 0.3333333333333333, "cs": 0.7071067811865477}}),
        ];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("answers.jsonl");
        let mut journal = Journal::open(&path, "id").unwrap();
        assert_eq!(journal.append_all(records.iter()).unwrap(), 4);
        let order: HashMap<String, usize> = ["a", "b", "c", "d"]
            .iter()
            .enumerate()
            .map(|(n, id)| (id.to_string(), n))
            .collect();
        let mut values = read_values(&path).unwrap();
        values.sort_by_key(|v| order[v["id"].as_str().unwrap()]);
        let mut printed = Vec::new();
        for value in &values {
            serde_json::to_writer(&mut printed, value).unwrap();
            printed.push(b'\n');
        }
        sort_records(&path, "id", &order).unwrap();
        assert_eq!(
            String::from_utf8(std::fs::read(&path).unwrap()).unwrap(),
            String::from_utf8(printed).unwrap()
        );
    }

    #[test]
    fn ids_are_read_from_the_top_level_only_and_broken_lines_are_named() {
        assert_eq!(
            field_of(br#"{"item":{"id":"x"},"id":"y\u00e9"}"#, "id").unwrap(),
            Some("yé".to_string())
        );
        assert_eq!(field_of(br#"{"item":{"id":"x"}}"#, "id").unwrap(), None);
        assert_eq!(field_of(br#"{"id":3}"#, "id").unwrap(), None);
        assert_eq!(field_of(br#"[{"id":"x"}]"#, "id").unwrap(), None);
        assert!(field_of(br#"{"id":"x"} {"#, "id").is_err());
        assert!(field_of(br#"{"id":"x","rest":[1,}"#, "id").is_err());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("benchmark.jsonl");
        std::fs::write(
            &path,
            "{\"id\":\"a\"}\r\n\n{\"id\":\"b\",\"x\":[}\n{\"id\":\"c\"}\n",
        )
        .unwrap();
        let error = sort_records(&path, "id", &HashMap::new())
            .unwrap_err()
            .to_string();
        assert!(error.contains("benchmark.jsonl:3: "), "{error}");
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
