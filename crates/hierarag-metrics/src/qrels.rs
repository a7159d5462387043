//! Relevance judgments (TREC qrels): which documents are relevant to which query, and how much.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::io::BufRead;

use serde::{Deserialize, Serialize};

use crate::TrecFormatError;
use crate::parse::for_each_record;

const QRELS_FIELDS: &[&str] = &["qid", "iter", "docno", "rel"];
const QRELS_LAYOUT: &str = "qid iter docno rel";

/// Relevance judgments: query id → (document id → relevance grade).
///
/// Ordered maps keep iteration, and therefore every mean and report built from it, deterministic.
/// A grade of 1 or more means relevant (trec_eval's default `relevance_level` of 1); 0 and
/// negative grades are judged non-relevant and add no gain to nDCG.
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
    /// `iter` is ignored, as trec_eval ignores it. `source_name` (usually the file name) is only
    /// used in error messages. A (query, document) pair judged twice is an error, since the two
    /// lines may disagree and no rule would say which one wins.
    pub fn from_reader(reader: impl BufRead, source_name: &str) -> Result<Qrels, TrecFormatError> {
        let mut qrels = Qrels::new();
        // The line of each judgment, kept only while parsing so a duplicate can point at both.
        let mut first_lines: BTreeMap<(String, String), usize> = BTreeMap::new();
        for_each_record(
            reader,
            source_name,
            QRELS_FIELDS,
            QRELS_LAYOUT,
            |line_no, fields| {
                let (query_id, doc_id, rel_text) = (fields[0], fields[2], fields[3]);
                let rel: i32 = rel_text.parse().map_err(|_| TrecFormatError::Field {
                    source_name: source_name.to_owned(),
                    line: line_no,
                    field: "rel",
                    expected: "an integer",
                    found: rel_text.to_owned(),
                })?;
                match first_lines.entry((query_id.to_owned(), doc_id.to_owned())) {
                    Entry::Occupied(first) => Err(TrecFormatError::Duplicate {
                        source_name: source_name.to_owned(),
                        line: line_no,
                        first_line: *first.get(),
                        query_id: query_id.to_owned(),
                        doc_id: doc_id.to_owned(),
                    }),
                    Entry::Vacant(slot) => {
                        slot.insert(line_no);
                        qrels.insert(query_id, doc_id, rel);
                        Ok(())
                    }
                }
            },
        )?;
        Ok(qrels)
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
