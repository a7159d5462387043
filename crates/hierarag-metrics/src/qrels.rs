//! Relevance judgments (TREC qrels): which documents are relevant to which query, and how much.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::fmt;
use std::io::BufRead;

use serde::{Deserialize, Serialize};

use crate::TrecFormatError;
use crate::parse::for_each_record;

const QRELS_FIELDS: &[&str] = &["qid", "iter", "docno", "rel"];
const QRELS_LAYOUT: &str = "qid iter docno rel";

/// Relevance judgments: query id → (document id → relevance grade).
///
/// Ordered maps keep iteration, and therefore every mean and report built from it, deterministic.
/// A grade of 1 or more means relevant (trec_eval's default `relevance_level` of 1; see
/// [`EvalOptions`](crate::EvalOptions) for another level); 0 and negative grades are judged
/// non-relevant and add no gain to nDCG.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Qrels {
    queries: BTreeMap<String, BTreeMap<String, i32>>,
}

impl Qrels {
    /// Creates empty judgments.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses TREC qrels: one judgment per line, `qid iter docno rel`, whitespace-separated.
    ///
    /// Reads what trec_eval 10 reads: `iter` is ignored, blank lines and comment lines (first
    /// character other than whitespace `#`) are skipped, and a grade that is not an integer is
    /// truncated to the integer it starts with (`1.5` is 1, see [`Qrels::parse`], which also
    /// reports such grades). `source_name` (usually the file name) is only used in error
    /// messages. A (query, document) pair judged twice is an error, since the two lines may
    /// disagree and no rule would say which one wins.
    pub fn from_reader(reader: impl BufRead, source_name: &str) -> Result<Qrels, TrecFormatError> {
        Self::parse(reader, source_name).map(|parsed| parsed.qrels)
    }

    /// Parses TREC qrels as [`Qrels::from_reader`] does, and also returns the grades it
    /// truncated, so that the caller can warn about them.
    ///
    /// A grade is read as C's `strtol` (base 10) reads it, the way trec_eval reads it: an
    /// optional sign and the digits that follow; whatever comes after them is dropped, so `1.5`
    /// and `1.9` are 1, `-0.5` is 0, and even `1e+8` is 1 and `0x37` is 0 (trec_eval's own
    /// `qrels.test.with-floats` expects exactly these). Such a grade is accepted and listed in
    /// [`ParsedQrels::truncated_grades`]. A grade that does not start with a digit after its
    /// sign (`x`, `.5`, `nan`), or that does not fit an `i32`, is an error.
    ///
    /// trec_eval 10 skips a `#` line only when `#` is its first byte; an indented one it would
    /// read as a judgment of query `#`, which no one means, so it is skipped here too.
    ///
    /// ```
    /// use hierarag_metrics::Qrels;
    ///
    /// let text = "# judged by two assessors\nq1 0 d1 1.5\nq1 0 d2 0\nq1 0 d3 2.0\n";
    /// let parsed = Qrels::parse(text.as_bytes(), "qrels.txt")?;
    /// assert_eq!(parsed.qrels.get("q1").unwrap()["d1"], 1);
    /// let truncated = parsed.truncated_grades.unwrap();
    /// assert_eq!((truncated.count, truncated.first_line), (2, 2));
    /// assert_eq!(
    ///     truncated.to_string(),
    ///     "qrels.txt line 2, field `rel`: grade `1.5` is not an integer and was read as 1, as \
    ///      trec_eval reads it (2 such grades)"
    /// );
    /// # Ok::<(), hierarag_metrics::TrecFormatError>(())
    /// ```
    pub fn parse(reader: impl BufRead, source_name: &str) -> Result<ParsedQrels, TrecFormatError> {
        let mut qrels = Qrels::new();
        let mut truncated_grades: Option<TruncatedGrades> = None;
        // The line of each judgment, kept only while parsing so a duplicate can point at both.
        let mut first_lines: BTreeMap<(String, String), usize> = BTreeMap::new();
        for_each_record(
            reader,
            source_name,
            QRELS_FIELDS,
            QRELS_LAYOUT,
            |line_no, fields| {
                let (query_id, doc_id, rel_text) = (fields[0], fields[2], fields[3]);
                let (rel, truncated) =
                    parse_grade(rel_text).ok_or_else(|| TrecFormatError::Field {
                        source_name: source_name.to_owned(),
                        line: line_no,
                        field: "rel",
                        expected: "an integer",
                        found: rel_text.to_owned(),
                    })?;
                match first_lines.entry((query_id.to_owned(), doc_id.to_owned())) {
                    Entry::Occupied(first) => {
                        return Err(TrecFormatError::Duplicate {
                            source_name: source_name.to_owned(),
                            line: line_no,
                            first_line: *first.get(),
                            query_id: query_id.to_owned(),
                            doc_id: doc_id.to_owned(),
                        });
                    }
                    Entry::Vacant(slot) => {
                        slot.insert(line_no);
                    }
                }
                if truncated {
                    truncated_grades
                        .get_or_insert_with(|| TruncatedGrades {
                            source_name: source_name.to_owned(),
                            count: 0,
                            first_line: line_no,
                            first_text: rel_text.to_owned(),
                            first_grade: rel,
                        })
                        .count += 1;
                }
                qrels.insert(query_id, doc_id, rel);
                Ok(())
            },
        )?;
        Ok(ParsedQrels {
            qrels,
            truncated_grades,
        })
    }

    /// Records that `doc_id` has relevance `rel` for `query_id`, returning the grade it replaces.
    pub fn insert(
        &mut self,
        query_id: impl Into<String>,
        doc_id: impl Into<String>,
        rel: i32,
    ) -> Option<i32> {
        self.queries
            .entry(query_id.into())
            .or_default()
            .insert(doc_id.into(), rel)
    }

    /// The judgments of one query, if it has any.
    pub fn get(&self, query_id: &str) -> Option<&BTreeMap<String, i32>> {
        self.queries.get(query_id)
    }

    /// The number of judged queries.
    pub fn len(&self) -> usize {
        self.queries.len()
    }

    /// Whether no query is judged.
    pub fn is_empty(&self) -> bool {
        self.queries.is_empty()
    }

    /// The judged query ids, in ascending order.
    pub fn query_ids(&self) -> impl Iterator<Item = &str> {
        self.queries.keys().map(String::as_str)
    }

    /// Every query with its judgments, in ascending query id order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &BTreeMap<String, i32>)> {
        self.queries
            .iter()
            .map(|(query_id, rels)| (query_id.as_str(), rels))
    }

    /// The total number of judgments over all queries.
    pub fn n_judgments(&self) -> usize {
        self.queries.values().map(BTreeMap::len).sum()
    }
}

/// Qrels as [`Qrels::parse`] read them, with what it accepted but a user should hear about.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParsedQrels {
    /// The judgments.
    pub qrels: Qrels,
    /// The grades that were not integers and were truncated; `None` when every grade was an
    /// integer.
    pub truncated_grades: Option<TruncatedGrades>,
}

/// Grades of a qrels text that were not integers, truncated as trec_eval truncates them.
///
/// Only the first is described, with the number of them, which is what a warning needs: a file
/// with one such grade usually has thousands. Its `Display` is that warning, naming the input,
/// line and field as parse errors do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TruncatedGrades {
    /// The name of the input, as passed to [`Qrels::parse`].
    pub source_name: String,
    /// How many grades were truncated.
    pub count: usize,
    /// The 1-based line of the first.
    pub first_line: usize,
    /// The text of the first, as written in the file.
    pub first_text: String,
    /// The grade it was read as.
    pub first_grade: i32,
}

impl fmt::Display for TruncatedGrades {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} line {}, field `rel`: grade `{}` is not an integer and was read as {}, as \
             trec_eval reads it",
            self.source_name, self.first_line, self.first_text, self.first_grade
        )?;
        if self.count > 1 {
            write!(f, " ({} such grades)", self.count)?;
        }
        Ok(())
    }
}

/// A grade as C's `strtol(text, &end, 10)` reads it, which is how trec_eval reads it (`atol` in
/// trec_eval 10, `strtol` with a warning on its `warn-about-floats` branch): an optional sign
/// and at least one ASCII digit, then anything, which is dropped. Returns the grade and whether
/// anything was dropped; `None` when there is no digit or the value does not fit an `i32`.
fn parse_grade(text: &str) -> Option<(i32, bool)> {
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    let n_digits = unsigned.bytes().take_while(u8::is_ascii_digit).count();
    if n_digits == 0 {
        return None;
    }
    let integer_len = text.len() - unsigned.len() + n_digits;
    let grade = text[..integer_len].parse().ok()?;
    Some((grade, integer_len < text.len()))
}
