//! Export files, written whole or not at all ([`hierarag_fs::AtomicFile`]): JSON lines, plain
//! lines, and CSV/TSV records through the `csv` crate.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use hierarag_fs::AtomicFile;
use serde::Serialize;

/// An export file whose errors name it.
pub(super) struct ExportFile {
    file: AtomicFile,
}

impl ExportFile {
    pub(super) fn create(path: &Path) -> anyhow::Result<ExportFile> {
        let file = AtomicFile::create(path)
            .with_context(|| format!("{}: cannot create", path.display()))?;
        Ok(ExportFile { file })
    }

    pub(super) fn path(&self) -> &Path {
        self.file.path()
    }

    /// Writes `line` and a newline.
    pub(super) fn line(&mut self, line: &str) -> anyhow::Result<()> {
        self.bytes(line.as_bytes())?;
        self.bytes(b"\n")
    }

    /// Writes `value` as one line of JSON.
    pub(super) fn json_line(&mut self, value: &impl Serialize) -> anyhow::Result<()> {
        serde_json::to_writer(&mut self.file, value)
            .map_err(std::io::Error::from)
            .and_then(|()| self.file.write_all(b"\n"))
            .with_context(|| format!("{}: cannot write", self.file.path().display()))
    }

    pub(super) fn bytes(&mut self, bytes: &[u8]) -> anyhow::Result<()> {
        self.file
            .write_all(bytes)
            .with_context(|| format!("{}: cannot write", self.file.path().display()))
    }

    /// Syncs the file and renames it into place.
    pub(super) fn finish(self) -> anyhow::Result<()> {
        let path = self.file.path().to_path_buf();
        self.file
            .finish()
            .with_context(|| format!("{}: cannot write", path.display()))
    }
}

/// A delimited export file: RFC 4180 CSV (comma, records ended by CRLF as the RFC has it) or
/// BEIR's TSV (tab, LF), quoted by the `csv` crate wherever a field holds the delimiter, a
/// quote or a line break; Python's `csv` module reads both.
pub(super) struct DelimitedFile {
    path: PathBuf,
    writer: csv::Writer<AtomicFile>,
}

impl DelimitedFile {
    pub(super) fn csv(path: &Path) -> anyhow::Result<DelimitedFile> {
        DelimitedFile::create(path, b',', csv::Terminator::CRLF)
    }

    pub(super) fn tsv(path: &Path) -> anyhow::Result<DelimitedFile> {
        DelimitedFile::create(path, b'\t', csv::Terminator::Any(b'\n'))
    }

    fn create(
        path: &Path,
        delimiter: u8,
        terminator: csv::Terminator,
    ) -> anyhow::Result<DelimitedFile> {
        let file = AtomicFile::create(path)
            .with_context(|| format!("{}: cannot create", path.display()))?;
        let writer = csv::WriterBuilder::new()
            .delimiter(delimiter)
            .terminator(terminator)
            .from_writer(file);
        Ok(DelimitedFile {
            path: path.to_path_buf(),
            writer,
        })
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    pub(super) fn record<I, S>(&mut self, fields: I) -> anyhow::Result<()>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<[u8]>,
    {
        self.writer
            .write_record(fields)
            .with_context(|| format!("{}: cannot write", self.path.display()))
    }

    /// Syncs the file and renames it into place.
    pub(super) fn finish(self) -> anyhow::Result<()> {
        let context = || format!("{}: cannot write", self.path.display());
        let file = self
            .writer
            .into_inner()
            .map_err(|e| e.into_error())
            .with_context(context)?;
        file.finish().with_context(context)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(records: &[&[&str]], tsv: bool) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let mut file = if tsv {
            DelimitedFile::tsv(&path).unwrap()
        } else {
            DelimitedFile::csv(&path).unwrap()
        };
        for record in records {
            file.record(*record).unwrap();
        }
        file.finish().unwrap();
        std::fs::read_to_string(&path).unwrap()
    }

    #[test]
    fn fields_with_delimiters_quotes_or_line_breaks_are_quoted() {
        assert_eq!(written(&[&["a", "b c"]], false), "a,b c\r\n");
        assert_eq!(
            written(&[&["x,y", "say \"hi\"", "two\nlines", ""]], false),
            "\"x,y\",\"say \"\"hi\"\"\",\"two\nlines\",\r\n"
        );
        assert_eq!(written(&[&["q\t1", "d"]], true), "\"q\t1\"\td\n");
        // A comma needs no quotes in a TSV.
        assert_eq!(
            written(&[&["a,b", "1"], &["c", "2"]], true),
            "a,b\t1\nc\t2\n"
        );
    }
}
