//! Ratings as CSV, for annotators who prefer a spreadsheet: export every (item, annotator)
//! row, import edited rows back after checking all of them. Text cells that a spreadsheet
//! would run as formulas are neutralised on the way out and restored on the way in
//! ([`crate::spreadsheet`]).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io::{Read, Write};

use crate::store::{
    Item, MAX_ANSWERABILITY, MAX_CORRECTNESS, MAX_HALLUCINATION, Rating, Store, StoreError,
    check_pick, validate_annotator_name,
};
use hierarag_fs::{neutralize_cell, restore_cell};

/// The columns of an export, in order. Import reads the first seven and ignores the rest
/// (the question, reference, the system answer an answer-task item rates, and the choices are
/// there for the reader of the spreadsheet; which system answered is not).
pub const CSV_COLUMNS: [&str; 11] = [
    "item_id",
    "annotator",
    "correctness",
    "hallucination",
    "answerability",
    "category_pick",
    "note",
    "question",
    "reference",
    "answer",
    "choices",
];

/// The columns an import needs.
const IMPORT_COLUMNS: usize = 7;

/// How the choices of an item are joined in the `choices` column.
const CHOICES_SEPARATOR: &str = " | ";

/// Writes one row per item and annotator (items by position, then annotators by name), with
/// empty cells where the annotator has not rated; returns the number of rows. Every text cell
/// goes through [`neutralize_cell`] (the rating numbers need not).
pub fn write_csv<W: Write>(
    writer: W,
    items: &[Item],
    annotators: &[String],
    ratings: &[Rating],
) -> Result<usize, csv::Error> {
    let by_key: HashMap<(&str, &str), &Rating> = ratings
        .iter()
        .map(|r| ((r.item_id.as_str(), r.annotator.as_str()), r))
        .collect();
    let mut annotators: Vec<&str> = annotators.iter().map(String::as_str).collect();
    annotators.sort_unstable();
    let mut out = csv::Writer::from_writer(writer);
    out.write_record(CSV_COLUMNS)?;
    let mut rows = 0;
    for item in items {
        let choices = item.choices.join(CHOICES_SEPARATOR);
        for &annotator in &annotators {
            let rating = by_key.get(&(item.item_id.as_str(), annotator));
            let number = |value: Option<u8>| value.map(|v| v.to_string()).unwrap_or_default();
            let cells = [
                neutralize_cell(&item.item_id),
                neutralize_cell(annotator),
                number(rating.and_then(|r| r.correctness)).into(),
                number(rating.and_then(|r| r.hallucination)).into(),
                number(rating.and_then(|r| r.answerability)).into(),
                neutralize_cell(
                    rating
                        .and_then(|r| r.category_pick.as_deref())
                        .unwrap_or(""),
                ),
                neutralize_cell(rating.and_then(|r| r.note.as_deref()).unwrap_or("")),
                neutralize_cell(&item.question),
                neutralize_cell(&item.reference),
                neutralize_cell(item.answer.as_ref().map_or("", |a| a.text.as_str())),
                neutralize_cell(&choices),
            ];
            out.write_record(cells.iter().map(|cell| cell.as_bytes()))?;
            rows += 1;
        }
    }
    out.flush()?;
    Ok(rows)
}

/// A problem with one cell (or a whole row) of an imported CSV.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowError {
    /// The spreadsheet row: the header is row 1, the first record row 2.
    pub row: u64,
    pub column: String,
    pub message: String,
}

impl fmt::Display for RowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "row {}, column {}: {}",
            self.row, self.column, self.message
        )
    }
}

/// Why an import wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// Every problem found, in file order.
    #[error("{} problem(s) in the CSV; nothing was imported", .0.len())]
    Rows(Vec<RowError>),
    #[error("cannot read the CSV")]
    Csv(#[from] csv::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The checked content of a CSV.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedRatings {
    /// The rows with at least one rating cell filled.
    pub ratings: Vec<Rating>,
    /// Annotators named in the file but not in the store (only with `add_annotators`).
    pub new_annotators: Vec<String>,
    /// Rows whose five rating cells were all empty: nothing to import.
    pub empty_rows: usize,
}

/// What [`import_csv`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportSummary {
    pub imported: usize,
    pub empty_rows: usize,
    pub new_annotators: Vec<String>,
}

/// Reads and checks a ratings CSV against the items and annotators, collecting every problem:
/// a missing column, an unknown item id, an unknown annotator (unless `add_annotators`), a
/// scale value that is not an integer or out of range, a category pick that is not one of the
/// item's choices, a repeated (item, annotator), a row with more or fewer cells than the
/// header. A cell's leading `'` is removed where the export would have added it
/// ([`restore_cell`]). Empty cells mean "not rated"; rows with every
/// rating cell empty are skipped; a row with some filled replaces the annotator's rating of the
/// item as a whole. Every rating gets `updated_unix_s`.
pub fn read_csv<R: Read>(
    reader: R,
    items: &[Item],
    annotators: &[String],
    add_annotators: bool,
    updated_unix_s: u64,
) -> Result<ParsedRatings, ImportError> {
    let items: HashMap<&str, &Item> = items.iter().map(|i| (i.item_id.as_str(), i)).collect();
    let known: HashSet<&str> = annotators.iter().map(String::as_str).collect();
    let mut input = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .from_reader(reader);
    let headers = input.headers()?.clone();
    let mut errors = Vec::new();
    let mut columns = [0usize; IMPORT_COLUMNS];
    for (slot, name) in columns.iter_mut().zip(CSV_COLUMNS) {
        match headers.iter().position(|h| h.trim() == name) {
            Some(index) => *slot = index,
            None => errors.push(RowError {
                row: 1,
                column: name.to_string(),
                message: "missing column in the header".into(),
            }),
        }
    }
    if !errors.is_empty() {
        return Err(ImportError::Rows(errors));
    }
    let mut ratings = Vec::new();
    let mut new_annotators: Vec<String> = Vec::new();
    let mut seen: HashMap<(String, String), u64> = HashMap::new();
    let mut empty_rows = 0;
    for (index, record) in input.records().enumerate() {
        let row = index as u64 + 2;
        let record = match record {
            Ok(record) => record,
            Err(e) => {
                errors.push(RowError {
                    row,
                    column: "(row)".into(),
                    message: e.to_string(),
                });
                continue;
            }
        };
        if record.len() != headers.len() {
            errors.push(RowError {
                row,
                column: "(row)".into(),
                message: format!(
                    "{} cell(s), but the header has {}",
                    record.len(),
                    headers.len()
                ),
            });
            continue;
        }
        // Undoes the export's formula neutralisation (and nothing else) before any check.
        let cell = |column: usize| restore_cell(record.get(columns[column]).unwrap_or(""));
        let mut fail = |column: usize, message: String| {
            errors.push(RowError {
                row,
                column: CSV_COLUMNS[column].to_string(),
                message,
            });
        };
        let rating_cells = [2, 3, 4, 5, 6];
        if rating_cells.iter().all(|&c| cell(c).trim().is_empty()) {
            empty_rows += 1;
            continue;
        }
        let item_id = cell(0).trim();
        let item = if item_id.is_empty() {
            fail(0, "empty".into());
            None
        } else {
            let item = items.get(item_id).copied();
            if item.is_none() {
                fail(0, format!("no item `{item_id}` in the sample"));
            }
            item
        };
        let annotator = cell(1).trim();
        if annotator.is_empty() {
            fail(1, "empty".into());
        } else if !known.contains(annotator) {
            if !add_annotators {
                fail(
                    1,
                    format!(
                        "unknown annotator `{annotator}` (add them with `hierarag annotate \
                         annotators --add {annotator}`, or pass --add-annotators)"
                    ),
                );
            } else if let Err(e) = validate_annotator_name(annotator) {
                fail(1, e.to_string());
            } else if !new_annotators.iter().any(|a| a == annotator) {
                new_annotators.push(annotator.to_string());
            }
        }
        let mut scale = |column: usize, max: u8| -> Option<u8> {
            let text = cell(column).trim();
            if text.is_empty() {
                return None;
            }
            match text.parse::<i64>() {
                Ok(value) if (0..=i64::from(max)).contains(&value) => u8::try_from(value).ok(),
                Ok(value) => {
                    fail(column, format!("{value} is out of range 0–{max}"));
                    None
                }
                Err(_) => {
                    fail(
                        column,
                        format!("`{text}` is not an integer (expected 0–{max})"),
                    );
                    None
                }
            }
        };
        let correctness = scale(2, MAX_CORRECTNESS);
        let hallucination = scale(3, MAX_HALLUCINATION);
        let answerability = scale(4, MAX_ANSWERABILITY);
        if answerability.is_some() && item.is_some_and(|item| item.answer.is_some()) {
            fail(
                4,
                "this item rates a system's answer: correctness and hallucination only".into(),
            );
        }
        let pick = cell(5).trim();
        if let (Some(item), false) = (item, pick.is_empty())
            && let Err(message) = check_pick(pick, item)
        {
            fail(5, message);
        }
        if !item_id.is_empty() && !annotator.is_empty() {
            let key = (item_id.to_string(), annotator.to_string());
            if let Some(first) = seen.get(&key) {
                fail(
                    0,
                    format!("item `{item_id}` and annotator `{annotator}` repeat row {first}"),
                );
            } else {
                seen.insert(key, row);
            }
        }
        let note = cell(6);
        ratings.push(Rating {
            item_id: item_id.to_string(),
            annotator: annotator.to_string(),
            correctness,
            hallucination,
            answerability,
            category_pick: (!pick.is_empty()).then(|| pick.to_string()),
            note: (!note.trim().is_empty()).then(|| note.to_string()),
            updated_unix_s,
        });
    }
    if !errors.is_empty() {
        return Err(ImportError::Rows(errors));
    }
    Ok(ParsedRatings {
        ratings,
        new_annotators,
        empty_rows,
    })
}

/// Checks a ratings CSV ([`read_csv`]) and, only if every row is good, adds the new annotators
/// and saves the ratings in one transaction.
pub fn import_csv<R: Read>(
    store: &mut Store,
    reader: R,
    add_annotators: bool,
    updated_unix_s: u64,
) -> Result<ImportSummary, ImportError> {
    let items = store.items()?;
    let annotators: Vec<String> = store.annotators()?.into_iter().map(|a| a.name).collect();
    let parsed = read_csv(reader, &items, &annotators, add_annotators, updated_unix_s)?;
    for name in &parsed.new_annotators {
        store.add_annotator(name)?;
    }
    store.save_ratings(&parsed.ratings)?;
    Ok(ImportSummary {
        imported: parsed.ratings.len(),
        empty_rows: parsed.empty_rows,
        new_annotators: parsed.new_annotators,
    })
}
