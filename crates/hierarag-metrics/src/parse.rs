//! Line splitting shared by the qrels and run parsers.

use std::io::BufRead;

use crate::TrecFormatError;

/// Calls `record` with the 1-based line number and the columns of every line that holds data.
///
/// Blank lines are skipped because editors and shell redirections leave them at the end of files,
/// and so are comment lines, whose first character other than whitespace is `#`: trec_eval 10
/// skips them in qrels and runs alike (`get_qrels.c`, `get_trec_results.c`). A `#` anywhere
/// else is data, as in trec_eval (`CR#93E-1860` is a document id). Everything else must have
/// exactly `layout.len()` columns, as trec_eval requires. Line numbers count every line, comments
/// and blank lines included, so that errors point at the line an editor shows.
pub(crate) fn for_each_record(
    reader: impl BufRead,
    source_name: &str,
    layout: &[&'static str],
    layout_text: &'static str,
    mut record: impl FnMut(usize, &[&str]) -> Result<(), TrecFormatError>,
) -> Result<(), TrecFormatError> {
    for (line_idx, line) in reader.lines().enumerate() {
        let line_no = line_idx + 1;
        let line = line.map_err(|error| TrecFormatError::Read {
            source_name: source_name.to_owned(),
            line: line_no,
            error,
        })?;
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.is_empty() || fields[0].starts_with('#') {
            continue;
        }
        if fields.len() != layout.len() {
            return Err(TrecFormatError::Columns {
                source_name: source_name.to_owned(),
                line: line_no,
                expected: layout.len(),
                found: fields.len(),
                layout: layout_text,
            });
        }
        record(line_no, &fields)?;
    }
    Ok(())
}
