//! Spreadsheet formula injection: text cells of every CSV the project writes are neutralised
//! with a leading `'`, and an import takes exactly that `'` off again.
//!
//! A spreadsheet runs a cell that begins with `=`, `+`, `-` or `@` (and, in some, tab, carriage
//! return or the full-width `＝ ＋ － ＠`) as a formula, so a corpus document, a generated
//! question or an annotator's note could carry `=HYPERLINK("http://…","click")` into the sheet
//! that opens `ratings.csv`. OWASP's remedy is a leading `'`, which spreadsheets read as "this is
//! text" and do not show. The rule here is one function each way, shared by every writer and
//! the importer, and a lossless pair:
//!
//! - [`neutralize_cell`] prefixes `'` to a cell that begins with one of [`FORMULA_STARTS`]; the
//!   quote itself is one of them, so a text that really began with `'` gets a second one;
//! - [`restore_cell`] removes one leading `'` only where [`neutralize_cell`] would have put it
//!   (the rest begins with one of [`FORMULA_STARTS`]); every other cell, `'hello` included, is
//!   read as it is.
//!
//! So `restore_cell(&neutralize_cell(s)) == s` for every string. A spreadsheet that saves the
//! sheet again writes the cell without its `'` (`=HYPERLINK(…)`, `'quoted` for `''quoted`), and
//! that reads back as the same text too. Numbers the writers format themselves (the 0–3 rating
//! scales, JSON numbers) are not passed through: a number's decimal text is not a formula, and a
//! `'` would turn `-0.5` into text.

use std::borrow::Cow;

/// The first characters after which a cell is neutralised: OWASP's `=`, `+`, `-`, `@`, tab and
/// carriage return, their full-width forms, and `'` (so that the prefix can always be undone).
pub const FORMULA_STARTS: [char; 11] = [
    '=', '+', '-', '@', '\t', '\r', '\u{FF1D}', '\u{FF0B}', '\u{FF0D}', '\u{FF20}', '\'',
];

fn starts_like_a_formula(cell: &str) -> bool {
    cell.starts_with(FORMULA_STARTS)
}

/// The cell as a spreadsheet should receive it: with a leading `'` when it begins with one of
/// [`FORMULA_STARTS`], unchanged otherwise. The CSV writer's quoting applies to the result.
pub fn neutralize_cell(cell: &str) -> Cow<'_, str> {
    if starts_like_a_formula(cell) {
        Cow::Owned(format!("'{cell}"))
    } else {
        Cow::Borrowed(cell)
    }
}

/// The text of a cell that [`neutralize_cell`] may have written: without the one `'` it adds,
/// and unchanged where it would have added none.
pub fn restore_cell(cell: &str) -> &str {
    match cell.strip_prefix('\'') {
        Some(rest) if starts_like_a_formula(rest) => rest,
        _ => cell,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formula_cells_get_a_quote_that_restore_removes() {
        let cases = [
            (
                "=HYPERLINK(\"http://x\",\"click\")",
                "'=HYPERLINK(\"http://x\",\"click\")",
            ),
            ("+1", "'+1"),
            ("-2", "'-2"),
            ("@SUM(A1)", "'@SUM(A1)"),
            ("\tx", "'\tx"),
            ("\r\nx", "'\r\nx"),
            ("\u{FF1D}1+1", "'\u{FF1D}1+1"),
            ("\u{FF0B}1", "'\u{FF0B}1"),
            ("\u{FF0D}1", "'\u{FF0D}1"),
            ("\u{FF20}A1", "'\u{FF20}A1"),
            ("'quoted", "''quoted"),
            ("'", "''"),
            ("''=x", "'''=x"),
            ("plain text", "plain text"),
            ("a=b", "a=b"),
            (" =1", " =1"),
            ("\n=1", "\n=1"),
            ("", ""),
            ("3", "3"),
        ];
        for (text, written) in cases {
            assert_eq!(neutralize_cell(text), written, "{text:?}");
            assert_eq!(restore_cell(written), text, "{written:?}");
        }
    }

    #[test]
    fn restore_leaves_a_quote_that_neutralize_would_not_have_added() {
        for cell in ["'hello", "'3", "' =1", "'"] {
            assert_eq!(restore_cell(cell), cell);
        }
        // What a spreadsheet saves after showing `''quoted` as `'quoted` reads back the same.
        assert_eq!(restore_cell("'quoted"), "'quoted");
    }

    #[test]
    fn every_short_string_survives_the_round_trip_and_is_written_safe() {
        // Every string of up to four characters over an alphabet of formula starts, quotes and
        // ordinary characters.
        let alphabet = ['=', '\'', '-', '\t', '\u{FF1D}', 'a', ' '];
        let mut texts = vec![String::new()];
        let mut last = vec![String::new()];
        for _ in 0..4 {
            last = last
                .iter()
                .flat_map(|prefix| alphabet.iter().map(move |c| format!("{prefix}{c}")))
                .collect();
            texts.extend(last.iter().cloned());
        }
        assert_eq!(texts.len(), 1 + 7 + 49 + 343 + 2401);
        for text in &texts {
            let written = neutralize_cell(text);
            assert_eq!(restore_cell(&written), text, "{text:?}");
            let first = written.chars().next();
            assert!(
                first.is_none_or(|c| c == '\'' || !FORMULA_STARTS.contains(&c)),
                "{text:?} written as {written:?}"
            );
        }
    }
}
