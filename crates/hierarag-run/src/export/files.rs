//! Output files written whole or not at all, and the CSV and TSV quoting the formats need.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Serialize;

/// A file written under a temporary name beside its final path and renamed into place by
/// [`AtomicFile::finish`], so that a reader sees the old file or the whole new one. One dropped
/// unfinished (an error half-way through the corpus) takes its temporary file with it.
pub(super) struct AtomicFile {
    path: PathBuf,
    tmp: PathBuf,
    writer: Option<BufWriter<File>>,
}

impl AtomicFile {
    pub(super) fn create(path: &Path) -> anyhow::Result<AtomicFile> {
        let mut name = path.file_name().unwrap_or_default().to_os_string();
        name.push(".tmp");
        let tmp = path.with_file_name(name);
        let file =
            File::create(&tmp).with_context(|| format!("{}: cannot create", tmp.display()))?;
        Ok(AtomicFile {
            path: path.to_path_buf(),
            tmp,
            writer: Some(BufWriter::with_capacity(1 << 20, file)),
        })
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// The open writer and the temporary path (for error messages), borrowed apart.
    fn parts(&mut self) -> (&mut BufWriter<File>, &Path) {
        let writer = self.writer.as_mut().expect("written before finish");
        (writer, &self.tmp)
    }

    /// Writes `line` and a newline.
    pub(super) fn line(&mut self, line: &str) -> anyhow::Result<()> {
        let (writer, tmp) = self.parts();
        writer
            .write_all(line.as_bytes())
            .and_then(|()| writer.write_all(b"\n"))
            .with_context(|| format!("{}: cannot write", tmp.display()))
    }

    /// Writes `value` as one line of JSON.
    pub(super) fn json_line(&mut self, value: &impl Serialize) -> anyhow::Result<()> {
        let (writer, tmp) = self.parts();
        serde_json::to_writer(&mut *writer, value)
            .map_err(std::io::Error::from)
            .and_then(|()| writer.write_all(b"\n"))
            .with_context(|| format!("{}: cannot write", tmp.display()))
    }

    /// Writes raw bytes (a CSV record carries its own line end).
    pub(super) fn bytes(&mut self, bytes: &[u8]) -> anyhow::Result<()> {
        let (writer, tmp) = self.parts();
        writer
            .write_all(bytes)
            .with_context(|| format!("{}: cannot write", tmp.display()))
    }

    /// Flushes, syncs and renames the temporary file over the final path.
    pub(super) fn finish(mut self) -> anyhow::Result<()> {
        let writer = self.writer.take().expect("finished once");
        let file = writer
            .into_inner()
            .map_err(|e| e.into_error())
            .with_context(|| format!("{}: cannot write", self.tmp.display()))?;
        file.sync_all()
            .with_context(|| format!("{}: cannot write", self.tmp.display()))?;
        std::fs::rename(&self.tmp, &self.path)
            .with_context(|| format!("{}: cannot replace", self.path.display()))
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.writer.take().is_some() {
            // Unfinished: the partial file must not be mistaken for output.
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// One record of a delimited file (RFC 4180 quoting: a field holding the delimiter, a quote or a
/// line break is quoted, its quotes doubled), ended by CRLF for CSV as the RFC has it and by LF
/// for BEIR's TSV, which Python's `csv` module reads either way.
pub(super) fn delimited_record<S: AsRef<str>>(fields: &[S], delimiter: char, crlf: bool) -> String {
    let mut record = String::new();
    for (n, field) in fields.iter().enumerate() {
        if n > 0 {
            record.push(delimiter);
        }
        let field = field.as_ref();
        if field.contains([delimiter, '"', '\n', '\r']) {
            record.push('"');
            record.push_str(&field.replace('"', "\"\""));
            record.push('"');
        } else {
            record.push_str(field);
        }
    }
    record.push_str(if crlf { "\r\n" } else { "\n" });
    record
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_with_delimiters_quotes_or_line_breaks_are_quoted() {
        assert_eq!(delimited_record(&["a", "b c"], ',', true), "a,b c\r\n");
        assert_eq!(
            delimited_record(&["x,y", "say \"hi\"", "two\nlines", ""], ',', true),
            "\"x,y\",\"say \"\"hi\"\"\",\"two\nlines\",\r\n"
        );
        assert_eq!(
            delimited_record(&["q\t1", "d"], '\t', false),
            "\"q\t1\"\td\n"
        );
        // A comma needs no quotes in a TSV.
        assert_eq!(delimited_record(&["a,b", "1"], '\t', false), "a,b\t1\n");
    }

    #[test]
    fn an_unfinished_file_leaves_nothing_behind_and_a_finished_one_replaces_the_old() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.jsonl");
        std::fs::write(&path, "old\n").unwrap();
        {
            let mut file = AtomicFile::create(&path).unwrap();
            file.line("half").unwrap();
        }
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old\n");
        assert!(!dir.path().join("out.jsonl.tmp").exists());
        let mut file = AtomicFile::create(&path).unwrap();
        file.json_line(&serde_json::json!({"a": 1})).unwrap();
        file.finish().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"a\":1}\n");
        assert!(!dir.path().join("out.jsonl.tmp").exists());
    }
}
