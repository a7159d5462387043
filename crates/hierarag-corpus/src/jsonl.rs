//! JSONL reader: one JSON object per line; only the id and text fields are decoded.

use std::cell::RefCell;
use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::Arc;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use crate::error::{CorpusError, Location, Position};
use crate::reader::{CorpusSpec, Document, RawRecords};

pub(crate) fn open(path: &Arc<Path>, spec: &CorpusSpec) -> Result<RawRecords, CorpusError> {
    let file = File::open(path).map_err(|source| CorpusError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(Box::new(JsonlRecords {
        reader: BufReader::with_capacity(1 << 20, file),
        path: Arc::clone(path),
        id_field: spec.id_field.clone(),
        text_field: spec.text_field.clone(),
        line: 0,
        buf: Vec::new(),
        done: false,
    }))
}

struct JsonlRecords {
    reader: BufReader<File>,
    path: Arc<Path>,
    id_field: String,
    text_field: String,
    line: u64,
    buf: Vec<u8>,
    done: bool,
}

impl Iterator for JsonlRecords {
    type Item = Result<Document, CorpusError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            self.buf.clear();
            self.line += 1;
            match self.reader.read_until(b'\n', &mut self.buf) {
                Ok(0) => self.done = true,
                Ok(_) => {
                    let mut trimmed = self.buf.trim_ascii();
                    if self.line == 1 {
                        // Editors on Windows start files with a byte-order mark.
                        trimmed = trimmed.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(trimmed);
                    }
                    if trimmed.is_empty() {
                        continue;
                    }
                    let location = Location::new(&self.path, Position::Line(self.line));
                    return Some(parse_line(
                        trimmed,
                        location,
                        &self.id_field,
                        &self.text_field,
                    ));
                }
                Err(source) => {
                    self.done = true;
                    return Some(Err(CorpusError::Io {
                        path: self.path.to_path_buf(),
                        source,
                    }));
                }
            }
        }
        None
    }
}

fn parse_line(
    bytes: &[u8],
    location: Location,
    id_field: &str,
    text_field: &str,
) -> Result<Document, CorpusError> {
    let line = match std::str::from_utf8(bytes) {
        Ok(line) => line,
        Err(e) => return Err(non_utf8(bytes, e.valid_up_to(), location, text_field)),
    };
    let broken_field = RefCell::new(None);
    let picker = FieldPicker {
        id_field,
        text_field,
        broken_field: &broken_field,
    };
    let mut de = serde_json::Deserializer::from_str(line);
    let picked = picker
        .deserialize(&mut de)
        .and_then(|picked| de.end().map(|()| picked))
        .map_err(|e| {
            // serde_json appends "at line 1 column N", which would contradict the file's line.
            let full = e.to_string();
            let position = format!(" at line {} column {}", e.line(), e.column());
            CorpusError::MalformedJson {
                location: location.clone(),
                field: broken_field.take(),
                column: e.column(),
                message: full.strip_suffix(&position).unwrap_or(&full).to_string(),
            }
        })?;
    let missing = |field: &str| CorpusError::MissingField {
        location: location.clone(),
        field: field.to_string(),
        present: present_fields(line),
    };
    let id = match picked.id.ok_or_else(|| missing(id_field))? {
        Value::String(s) => s,
        Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
        other => {
            return Err(wrong_type(
                &location,
                id_field,
                "a string or an integer",
                &other,
            ));
        }
    };
    let text = match picked.text.ok_or_else(|| missing(text_field))? {
        Value::String(s) => s,
        other => return Err(wrong_type(&location, text_field, "a string", &other)),
    };
    Ok(Document { id, text, location })
}

fn wrong_type(
    location: &Location,
    field: &str,
    expected: &'static str,
    found: &Value,
) -> CorpusError {
    let found = match found {
        Value::Null => "null".to_string(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(_) => "a string".to_string(),
        Value::Array(_) => "an array".to_string(),
        Value::Object(_) => "an object".to_string(),
    };
    CorpusError::WrongType {
        location: location.clone(),
        field: field.to_string(),
        expected,
        found,
    }
}

fn present_fields(line: &str) -> String {
    match serde_json::from_str::<serde_json::Map<String, Value>>(line) {
        Ok(map) if map.is_empty() => "none".into(),
        Ok(map) => map
            .keys()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", "),
        Err(_) => "unknown".into(),
    }
}

/// Names the field holding the first invalid byte: the line is decoded lossily and the first
/// top-level field whose value holds a replacement character is the culprit.
fn non_utf8(bytes: &[u8], offset: usize, location: Location, text_field: &str) -> CorpusError {
    let lossy = String::from_utf8_lossy(bytes);
    let field = serde_json::from_str::<serde_json::Map<String, Value>>(&lossy)
        .ok()
        .and_then(|map| {
            map.iter()
                .find(|(_, v)| v.to_string().contains('\u{FFFD}'))
                .map(|(k, _)| k.clone())
        })
        .unwrap_or_else(|| text_field.to_string());
    CorpusError::NonUtf8 {
        location,
        field,
        byte_offset: offset,
        unit: "line",
    }
}

struct FieldPicker<'a> {
    id_field: &'a str,
    text_field: &'a str,
    /// Set to the key whose value failed to parse, so that the error can name the field.
    broken_field: &'a RefCell<Option<String>>,
}

#[derive(Default)]
struct Picked {
    id: Option<Value>,
    text: Option<Value>,
}

impl<'de> DeserializeSeed<'de> for FieldPicker<'_> {
    type Value = Picked;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Picked, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for FieldPicker<'_> {
    type Value = Picked;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Picked, A::Error> {
        let mut picked = Picked::default();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let blame = |_: &A::Error| *self.broken_field.borrow_mut() = Some(key.to_string());
            if key == self.id_field {
                picked.id = Some(map.next_value().inspect_err(blame)?);
            } else if key == self.text_field {
                picked.text = Some(map.next_value().inspect_err(blame)?);
            } else {
                map.next_value::<IgnoredAny>().inspect_err(blame)?;
            }
        }
        Ok(picked)
    }
}
