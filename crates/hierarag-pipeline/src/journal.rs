//! Append-only JSONL record files that survive being killed at any moment.
//!
//! A stage appends one finished record per line. When a stage starts again it reads what is
//! there: complete lines are done work; a torn last line (the process died while writing it) is
//! cut off; a broken line anywhere else is an error naming file and line. At the end of a stage
//! [`Journal::finish`] sorts the file into plan order ([`sort_records`]) and replaces it
//! atomically, so that a run that was interrupted and resumed ends with the same bytes as one
//! that was not.

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
    dropped_repeats: usize,
}

impl Journal {
    /// Opens (or creates) `path`, cutting off a torn last line, and learns the ids already
    /// there. A line repeated byte for byte (two processes that wrote one file before run
    /// directories were locked) is kept once, with a warning; other duplicate ids are an
    /// error: they mean the file was edited or two runs wrote different records.
    pub fn open(path: &Path, id_field: &'static str) -> Result<Journal, PipelineError> {
        let (bytes, dropped_tail) = repair_tail(path)?;
        let lines = lines_of(path, &bytes, id_field)?;
        let mut first: HashMap<String, std::ops::Range<usize>> = HashMap::new();
        let mut repeated = HashSet::new();
        for (n, line) in lines.iter().enumerate() {
            let id = line.id.clone().ok_or_else(|| PipelineError::Record {
                path: path.to_path_buf(),
                line: line.number,
                message: format!("missing string field `{id_field}`"),
            })?;
            match first.get(&id) {
                None => {
                    first.insert(id, line.range.clone());
                }
                Some(range) if bytes[range.clone()] == bytes[line.range.clone()] => {
                    repeated.insert(n);
                }
                Some(_) => {
                    return Err(PipelineError::DuplicateId {
                        path: path.to_path_buf(),
                        line: line.number,
                        id,
                    });
                }
            }
        }
        if !repeated.is_empty() {
            // Rewritten before the file is opened for appending, so that appends go to the
            // new file.
            let mut kept = Vec::with_capacity(bytes.len());
            for (_, line) in lines
                .iter()
                .enumerate()
                .filter(|(n, _)| !repeated.contains(n))
            {
                kept.extend_from_slice(&bytes[line.range.clone()]);
                kept.push(b'\n');
            }
            write_atomic(path, &kept)?;
            tracing::warn!(
                "{}: {} line(s) repeated byte for byte (two processes wrote this file); kept \
                 one of each",
                path.display(),
                repeated.len()
            );
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| PipelineError::io(path, hierarag_fs::writing(path, e)))?;
        Ok(Journal {
            path: path.to_path_buf(),
            file,
            id_field,
            done: first.into_keys().collect(),
            dropped_tail,
            dropped_repeats: repeated.len(),
        })
    }

    /// Opens a side file whose lines share ids (e.g. several rejects per item, `id_field`
    /// naming the item): no uniqueness check, lines without the field allowed, a torn last
    /// line cut off (the lines are still checked to be JSON).
    pub fn open_side(path: &Path, id_field: &'static str) -> Result<Journal, PipelineError> {
        let (bytes, dropped_tail) = repair_tail(path)?;
        lines_of(path, &bytes, id_field)?;
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| PipelineError::io(path, hierarag_fs::writing(path, e)))?;
        Ok(Journal {
            path: path.to_path_buf(),
            file,
            id_field,
            done: HashSet::new(),
            dropped_tail,
            dropped_repeats: 0,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of an unfinished last record, left by an interrupted run, that were cut off.
    pub fn dropped_tail(&self) -> usize {
        self.dropped_tail
    }

    /// Lines that repeated an earlier one byte for byte and were dropped when the file was
    /// opened.
    pub fn dropped_repeats(&self) -> usize {
        self.dropped_repeats
    }

    /// Ids of the records in the file (none for a side file).
    pub fn done(&self) -> &HashSet<String> {
        &self.done
    }

    pub fn contains(&self, id: &str) -> bool {
        self.done.contains(id)
    }

    /// Appends one record as one line. Its id counts as done once the write has returned; a
    /// process killed during it leaves at most a torn last line, which [`Journal::open`] cuts
    /// off.
    pub fn append<T: Serialize>(&mut self, record: &T) -> Result<(), PipelineError> {
        let (bytes, ids) = self.encode([record], true)?;
        self.write(&bytes)?;
        self.done.extend(ids);
        Ok(())
    }

    /// Appends lines to a side file with one write (no uniqueness bookkeeping).
    pub fn append_side_all<'r, T: Serialize + 'r>(
        &mut self,
        records: impl IntoIterator<Item = &'r T>,
    ) -> Result<(), PipelineError> {
        let (bytes, _) = self.encode(records, false)?;
        self.write(&bytes)
    }

    /// The lines of `records` and their ids (each required if `require_id`).
    fn encode<'r, T: Serialize + 'r>(
        &self,
        records: impl IntoIterator<Item = &'r T>,
        require_id: bool,
    ) -> Result<(Vec<u8>, Vec<String>), PipelineError> {
        let mut bytes = Vec::new();
        let mut ids = Vec::new();
        for record in records {
            let value = serde_json::to_value(record).map_err(|e| {
                PipelineError::Invalid(format!("{}: cannot serialise: {e}", self.path.display()))
            })?;
            match record_id(&value, self.id_field) {
                Some(id) => ids.push(id.to_string()),
                None if require_id => {
                    return Err(PipelineError::Invalid(format!(
                        "{}: record without `{}`",
                        self.path.display(),
                        self.id_field
                    )));
                }
                None => {}
            }
            serde_json::to_writer(&mut bytes, &value).expect("a JSON value serialises");
            bytes.push(b'\n');
        }
        Ok((bytes, ids))
    }

    /// Appends whole lines, every registered secret scrubbed.
    fn write(&mut self, bytes: &[u8]) -> Result<(), PipelineError> {
        self.file
            .write_all(&hierarag_fs::secrets::scrub_bytes(bytes))
            .map_err(|e| PipelineError::io(&self.path, hierarag_fs::writing(&self.path, e)))
    }

    /// Closes the file and puts it in the order of `order`, as [`sort_records`] does.
    pub fn finish(self, order: &HashMap<String, usize>) -> Result<(), PipelineError> {
        drop(self.file);
        sort_records(&self.path, self.id_field, order)
    }
}

fn record_id<'a>(value: &'a Value, id_field: &str) -> Option<&'a str> {
    value.get(id_field).and_then(Value::as_str)
}

/// Cuts a torn last line (no final newline, or not JSON) off `path`; returns the bytes kept
/// and the number cut. A missing file is fine (no bytes).
fn repair_tail(path: &Path) -> Result<(Vec<u8>, usize), PipelineError> {
    let mut file = match OpenOptions::new().read(true).write(true).open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), 0)),
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
    let cut = bytes.len() - keep;
    bytes.truncate(keep);
    Ok((bytes, cut))
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
    let (bytes, lines) = read_lines(path, field)?;
    // Each line's position looked up once; the line number breaks ties.
    let mut keyed: Vec<(usize, usize)> = lines
        .iter()
        .enumerate()
        .map(|(n, line)| {
            let position = line.id.as_ref().and_then(|id| order.get(id).copied());
            (position.unwrap_or(usize::MAX), n)
        })
        .collect();
    keyed.sort_unstable();
    if keyed.iter().enumerate().all(|(k, &(_, n))| k == n) {
        return Ok(());
    }
    let mut sorted = Vec::with_capacity(bytes.len());
    for (_, n) in keyed {
        sorted.extend_from_slice(&bytes[lines[n].range.clone()]);
        sorted.push(b'\n');
    }
    write_atomic(path, &sorted)
}

/// One non-blank line of a JSONL file.
struct Line {
    /// 1-based, blank lines counted.
    number: usize,
    /// Without the line break.
    range: std::ops::Range<usize>,
    /// The string value of the line's top-level `field`, if it has one.
    id: Option<String>,
}

/// The bytes of `path` (missing: none) and its non-blank lines, each checked to be JSON; an
/// error names file and line. Only the field is built ([`field_of`]): parsing whole lines into
/// values took several times as long, and a stage does this after its last reply.
fn read_lines(path: &Path, field: &str) -> Result<(Vec<u8>, Vec<Line>), PipelineError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(PipelineError::io(path, e)),
    };
    let lines = lines_of(path, &bytes, field)?;
    Ok((bytes, lines))
}

/// The non-blank lines of `bytes` (the contents of `path`), each checked to be JSON, with
/// the string value of their top-level `field`.
fn lines_of(path: &Path, bytes: &[u8], field: &str) -> Result<Vec<Line>, PipelineError> {
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
        let end = if bytes[start..end].ends_with(b"\r") {
            end - 1
        } else {
            end
        };
        let record_error = |message: String| PipelineError::Record {
            path: path.to_path_buf(),
            line: number,
            message,
        };
        let text =
            std::str::from_utf8(&bytes[start..end]).map_err(|e| record_error(e.to_string()))?;
        if !text.trim().is_empty() {
            let id = field_of(text.as_bytes(), field).map_err(|e| record_error(e.to_string()))?;
            lines.push(Line {
                number,
                range: start..end,
                id,
            });
        }
        start = next;
    }
    Ok(lines)
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

/// [`hierarag_fs::write_atomic`] (temporary file, sync, rename) with the path in its error:
/// not a second mechanism, the stages' error type over the one there is.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), PipelineError> {
    hierarag_fs::write_atomic(path, bytes).map_err(|e| PipelineError::io(path, e))
}

/// Whether a record file holds any record: it exists and is not empty (its size, not its
/// contents, so that asking costs nothing on a large file). A journal's file holds complete
/// lines, or a torn last one that the next open cuts off.
pub fn has_records(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.len() > 0)
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
        std::fs::write(&path, "{\"id\":\"a\"}\n{\"id\":\"a\",\"x\":1}\n").unwrap();
        let error = Journal::open(&path, "id").unwrap_err().to_string();
        assert!(
            error.contains("scores.jsonl:2: duplicate id \"a\""),
            "{error}"
        );
    }

    #[test]
    fn a_resume_that_finds_identical_duplicate_lines_keeps_one() {
        // What two processes answering one run directory left before it was locked.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("answers.jsonl");
        std::fs::write(
            &path,
            "{\"id\":\"a\",\"x\":1}\n{\"id\":\"b\"}\n{\"id\":\"a\",\"x\":1}\n{\"id\":\"b\"}\n",
        )
        .unwrap();
        let mut journal = Journal::open(&path, "id").unwrap();
        assert_eq!(journal.dropped_repeats(), 2);
        assert_eq!(journal.done().len(), 2);
        journal.append(&json!({"id": "c"})).unwrap();
        drop(journal);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"id\":\"a\",\"x\":1}\n{\"id\":\"b\"}\n{\"id\":\"c\"}\n"
        );
        assert_eq!(Journal::open(&path, "id").unwrap().dropped_repeats(), 0);
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
        for record in &records {
            journal.append(record).unwrap();
        }
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
    fn finishing_a_journal_gives_the_bytes_of_sorting_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let order: HashMap<String, usize> = (0..8).map(|n| (format!("r{n}"), n)).collect();
        // What an earlier pass left: a CRLF line, a blank line, an id not in the order.
        let before = "{\"id\":\"r5\",\"x\":1}\r\n\n{\"id\":\"zz\"}\n{\"id\":\"r1\",\"t\":\"é\"}\n";
        let records: Vec<Value> = [7, 0, 3, 6, 2]
            .iter()
            .map(|n| json!({"id": format!("r{n}"), "text": "a \"b\"\n", "n": n}))
            .collect();
        let write = |name: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, before).unwrap();
            let mut journal = Journal::open(&path, "id").unwrap();
            for record in &records {
                journal.append(record).unwrap();
            }
            (path, journal)
        };
        let (expected, journal) = write("sorted.jsonl");
        drop(journal);
        sort_records(&expected, "id", &order).unwrap();
        let (finished, journal) = write("finished.jsonl");
        journal.finish(&order).unwrap();
        let expected = std::fs::read_to_string(&expected).unwrap();
        assert_eq!(std::fs::read_to_string(&finished).unwrap(), expected);
        assert!(expected.starts_with("{\"id\":\"r0\""), "{expected}");
        assert!(expected.ends_with("{\"id\":\"zz\"}\n"), "{expected}");

        // A line written behind the journal's back is sorted in too.
        let (path, mut journal) = write("changed.jsonl");
        journal.append(&json!({"id": "r4"})).unwrap();
        OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"{\"id\":\"r4\",\"second\":true}\n")
            .unwrap();
        journal.finish(&order).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains("{\"id\":\"r4\"}\n{\"id\":\"r4\",\"second\":true}\n{\"id\":\"r5\""),
            "{text}"
        );

        // Side files keep lines of one id in the order they were written.
        let path = dir.path().join("rejects.jsonl");
        let mut rejects = Journal::open_side(&path, "item_id").unwrap();
        rejects
            .append_side_all(
                [
                    json!({"item_id": "r2", "n": 1}),
                    json!({"n": 9}),
                    json!({"item_id": "r1", "n": 2}),
                ]
                .iter(),
            )
            .unwrap();
        rejects
            .append_side_all([json!({"item_id": "r2", "n": 3})].iter())
            .unwrap();
        rejects.finish(&order).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"item_id\":\"r1\",\"n\":2}\n{\"item_id\":\"r2\",\"n\":1}\n{\"item_id\":\"r2\",\"n\":3}\n{\"n\":9}\n"
        );

        // A file in plan order already is left as it is.
        let path = dir.path().join("scores.jsonl");
        let mut journal = Journal::open(&path, "id").unwrap();
        for n in 0..3 {
            journal.append(&json!({"id": format!("r{n}")})).unwrap();
        }
        let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
        journal.finish(&order).unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().modified().unwrap(),
            modified
        );
        assert_eq!(read_values(&path).unwrap().len(), 3);
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
