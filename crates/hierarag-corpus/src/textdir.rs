//! Directory reader: every `.txt` / `.md` file below a directory is one document whose id is its
//! path relative to the directory (with `/` separators), read in sorted path order.

use std::path::Path;
use std::sync::Arc;

use crate::error::{CorpusError, Location, Position};
use crate::reader::{Document, RawRecords};

pub(crate) fn open(root: &Arc<Path>) -> Result<RawRecords, CorpusError> {
    let root = root.to_path_buf();
    let walker = walkdir::WalkDir::new(&root)
        .sort_by_file_name()
        .into_iter()
        .filter_map(move |entry| match entry {
            Err(e) => {
                let path = e
                    .path()
                    .map(Path::to_path_buf)
                    .unwrap_or_else(|| root.clone());
                Some(Err(CorpusError::Io {
                    path,
                    source: e.into(),
                }))
            }
            Ok(entry) if entry.file_type().is_file() && is_text_document(entry.path()) => {
                Some(read_document(&root, entry.path()))
            }
            Ok(_) => None,
        });
    Ok(Box::new(walker))
}

/// Whether a directory corpus reads this file as a document: a `.txt` or `.md` extension, in
/// any case. The index fingerprints a directory with the same rule.
pub fn is_text_document(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("txt") || e.eq_ignore_ascii_case("md"))
}

fn read_document(root: &Path, path: &Path) -> Result<Document, CorpusError> {
    let file: Arc<Path> = Arc::from(path);
    let bytes = std::fs::read(path).map_err(|source| CorpusError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        let line = bytes[..offset].iter().filter(|&&b| b == b'\n').count() as u64 + 1;
        let line_start = bytes[..offset]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1);
        CorpusError::NonUtf8 {
            location: Location::new(&file, Position::Line(line)),
            field: "text".into(),
            byte_offset: offset - line_start,
            unit: "line",
        }
    })?;
    let id = path
        .strip_prefix(root)
        .unwrap_or(path)
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/");
    Ok(Document {
        id,
        text,
        location: Location::new(&file, Position::Line(1)),
    })
}
