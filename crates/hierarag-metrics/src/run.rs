//! Retrieval runs (TREC run files): the scored documents each query retrieved, and their order.

use std::cmp::Ordering;
use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{self, BufRead, Write};

use serde::{Deserialize, Serialize};

use crate::TrecFormatError;
use crate::parse::for_each_record;

const RUN_FIELDS: &[&str] = &["qid", "Q0", "docno", "rank", "score", "tag"];
const RUN_LAYOUT: &str = "qid Q0 docno rank score tag";

/// One retrieved document and the score the system gave it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScoredDoc {
    /// The document id, compared byte-wise (as C's `strcmp`) to break score ties.
    pub doc_id: String,
    /// The retrieval score; higher ranks first.
    pub score: f64,
}

impl ScoredDoc {
    /// Pairs a document id with its score.
    pub fn new(doc_id: impl Into<String>, score: f64) -> Self {
        Self {
            doc_id: doc_id.into(),
            score,
        }
    }
}

/// trec_eval's ranking order: score descending, then document id descending.
///
/// This is `comp_sim_docno` in trec_eval's `form_res_rels.c`; it is why the rank column of a run
/// file never matters. `-0.0` and `0.0` tie there (C's `<` and `>`), so zero is normalised before
/// the total order that Rust's sort needs; NaN, which only `push` can let in, sorts above
/// everything instead of making the order inconsistent.
pub fn trec_order(a: &ScoredDoc, b: &ScoredDoc) -> Ordering {
    let key = |score: f64| if score == 0.0 { 0.0 } else { score };
    key(b.score)
        .total_cmp(&key(a.score))
        .then_with(|| b.doc_id.cmp(&a.doc_id))
}

/// Sorts `docs` into trec_eval's ranking order, keeping one entry per document id.
///
/// A document listed twice keeps its better-ranked entry. trec_eval would reject such a run; a
/// [`Run`] can never hold one, but a hand-built slice can, and counting a relevant document twice
/// would push AP and recall above 1.
pub fn trec_ranking(docs: &[ScoredDoc]) -> Vec<&ScoredDoc> {
    let mut ranked: Vec<&ScoredDoc> = docs.iter().collect();
    ranked.sort_by(|a, b| trec_order(a, b));
    let mut seen = HashSet::with_capacity(ranked.len());
    ranked.retain(|doc| seen.insert(doc.doc_id.as_str()));
    ranked
}

/// Formats one line of a TREC run file: `qid Q0 docno rank score tag`.
///
/// `score` is written with Rust's `Display` for `f64`, the shortest text that parses back to the
/// same value, so that trec_eval and pytrec_eval rank exactly the scores we ranked. Ids and tag
/// must not contain whitespace ([`Run::write_trec`] checks this).
pub fn format_run_line(query_id: &str, doc_id: &str, rank: usize, score: f64, tag: &str) -> String {
    format!("{query_id} Q0 {doc_id} {rank} {score} {tag}")
}

/// The documents of one query in insertion order, with an index to find a document again.
#[derive(Clone, Debug, Default)]
struct QueryDocs {
    docs: Vec<ScoredDoc>,
    position_of: HashMap<String, usize>,
}

/// A retrieval run: query id → the documents retrieved for it, each with a score.
///
/// Documents are kept in insertion order; only scores and ids decide the ranking (see
/// [`trec_order`]). Each document appears at most once per query.
#[derive(Clone, Debug, Default)]
pub struct Run {
    queries: BTreeMap<String, QueryDocs>,
}

impl Run {
    /// Creates an empty run.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses a TREC run: one document per line, `qid Q0 docno rank score tag`.
    ///
    /// The `Q0`, `rank` and `tag` columns are ignored, as trec_eval ignores them. A score must be a
    /// finite number, and a document may appear only once per query (trec_eval refuses
    /// duplicates too). `source_name` (usually the file name) is only used in error messages.
    pub fn from_reader(reader: impl BufRead, source_name: &str) -> Result<Run, TrecFormatError> {
        let mut run = Run::new();
        // The line of each (query, document), kept only while parsing so a duplicate can point
        // at both lines.
        let mut first_lines: HashMap<(String, String), usize> = HashMap::new();
        for_each_record(
            reader,
            source_name,
            RUN_FIELDS,
            RUN_LAYOUT,
            |line_no, fields| {
                let (query_id, doc_id, score_text) = (fields[0], fields[2], fields[4]);
                let field_error = |expected| TrecFormatError::Field {
                    source_name: source_name.to_owned(),
                    line: line_no,
                    field: "score",
                    expected,
                    found: score_text.to_owned(),
                };
                let score: f64 = score_text.parse().map_err(|_| field_error("a number"))?;
                if !score.is_finite() {
                    return Err(field_error("a finite number"));
                }
                let key = (query_id.to_owned(), doc_id.to_owned());
                if let Some(&first_line) = first_lines.get(&key) {
                    return Err(TrecFormatError::Duplicate {
                        source_name: source_name.to_owned(),
                        line: line_no,
                        first_line,
                        query_id: key.0,
                        doc_id: key.1,
                    });
                }
                first_lines.insert(key, line_no);
                run.push(query_id, doc_id, score);
                Ok(())
            },
        )?;
        Ok(run)
    }

    /// Adds `doc_id` with `score` to the documents of `query_id`.
    ///
    /// If the document is already there its score is replaced, so a run never lists a document
    /// twice for a query. Scores should be finite; a NaN is accepted but ranks above everything.
    pub fn push(&mut self, query_id: impl Into<String>, doc_id: impl Into<String>, score: f64) {
        let query = match self.queries.entry(query_id.into()) {
            Entry::Occupied(entry) => entry.into_mut(),
            Entry::Vacant(entry) => entry.insert(QueryDocs::default()),
        };
        let doc_id = doc_id.into();
        match query.position_of.get(&doc_id) {
            Some(&doc_idx) => query.docs[doc_idx].score = score,
            None => {
                query.position_of.insert(doc_id.clone(), query.docs.len());
                query.docs.push(ScoredDoc { doc_id, score });
            }
        }
    }

    /// The documents retrieved for `query_id`, in insertion order.
    pub fn get(&self, query_id: &str) -> Option<&[ScoredDoc]> {
        self.queries
            .get(query_id)
            .map(|query| query.docs.as_slice())
    }

    /// The documents retrieved for `query_id`, in trec_eval's ranking order.
    pub fn ranked(&self, query_id: &str) -> Option<Vec<&ScoredDoc>> {
        self.get(query_id).map(trec_ranking)
    }

    /// The number of queries with at least one retrieved document.
    pub fn len(&self) -> usize {
        self.queries.len()
    }

    /// Whether no query retrieved anything.
    pub fn is_empty(&self) -> bool {
        self.queries.is_empty()
    }

    /// The query ids, in ascending order.
    pub fn query_ids(&self) -> impl Iterator<Item = &str> {
        self.queries.keys().map(String::as_str)
    }

    /// Every query with its documents (insertion order), in ascending query id order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[ScoredDoc])> {
        self.queries
            .iter()
            .map(|(query_id, query)| (query_id.as_str(), query.docs.as_slice()))
    }

    /// Writes the run as a TREC run file, each query's documents in ranking order with ranks
    /// from 1, tagged `tag`.
    ///
    /// Fails with [`io::ErrorKind::InvalidInput`] if an id or the tag is empty or contains
    /// whitespace, since the file could not be read back column by column.
    pub fn write_trec(&self, out: &mut impl Write, tag: &str) -> io::Result<()> {
        check_token("run tag", tag)?;
        for (query_id, docs) in self.iter() {
            check_token("query id", query_id)?;
            for (rank_idx, doc) in trec_ranking(docs).into_iter().enumerate() {
                check_token("document id", &doc.doc_id)?;
                let line = format_run_line(query_id, &doc.doc_id, rank_idx + 1, doc.score, tag);
                writeln!(out, "{line}")?;
            }
        }
        Ok(())
    }
}

/// Rejects text that would not survive whitespace splitting as one column.
fn check_token(what: &str, text: &str) -> io::Result<()> {
    if text.is_empty() || text.contains(char::is_whitespace) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{what} `{text}` cannot be written to a TREC run: it is empty or has whitespace"
            ),
        ));
    }
    Ok(())
}
