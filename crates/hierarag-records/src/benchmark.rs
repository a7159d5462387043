//! The records of the generation stage (and of `import`): `benchmark.jsonl` and `rejects.jsonl`,
//! with the category references plans and benchmarks share.

use std::collections::BTreeMap;

use hierarag_taxonomy::Granularity;
use serde::{Deserialize, Serialize};

/// One category of one dimension, as it appears in plans and benchmarks.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CategoryRef {
    pub dimension: String,
    pub level: Granularity,
    pub category: String,
}

/// One line of `benchmark.jsonl`: a question, its reference answer and where it came from.
///
/// Generated and imported benchmarks are one format: the generation's provenance
/// (`generator`, `candidates_considered`, `attempts`, `filter`) is written by `hierarag
/// generate` and absent from an imported question, which names its `source` instead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchmarkRecord {
    /// The plan item's id (an imported question's own id, or one given on import).
    pub id: String,
    pub question: String,
    /// The reference answer.
    pub answer: String,
    /// The source document(s): the relevant documents for retrieval metrics.
    pub doc_ids: Vec<String>,
    /// The design and set of the plan item (`rq2`, `qc/medium`; `import` for both of an
    /// imported question).
    pub design: String,
    pub set: String,
    pub categories: Vec<CategoryRef>,
    #[serde(default)]
    pub persona: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<ModelInfo>,
    /// Candidates the generator returned over every attempt.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub candidates_considered: usize,
    /// Generation calls made for this item (1 unless every candidate was rejected).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attempts: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<FilterOutcome>,
    /// Where an imported question came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<ImportSource>,
    /// The question was made so that its documents do not answer it: the right answer is a
    /// refusal (docs/design.md, "Unanswerable questions").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unanswerable: bool,
}

fn is_zero<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// The file, format and line (or row, or position in a JSON list, from 1) an imported
/// question was read from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportSource {
    pub format: String,
    pub file: String,
    pub line: usize,
}

/// Which model did a job, with which parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    pub backend: String,
    pub model: String,
    pub params: serde_json::Value,
}

/// What the filter said of the chosen candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FilterOutcome {
    /// `false` when the filter was switched off (`--no-filter`).
    pub enabled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelInfo>,
    /// Candidates that passed (every check) out of those judged.
    pub passed: usize,
    pub judged: usize,
    /// The chosen candidate's verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
}

/// Why a candidate (or a whole reply) was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RejectKind {
    /// The reply could not be read as candidates, even after the repair message.
    Unparseable,
    /// The question or answer is empty, or the question repeats an earlier one.
    Empty,
    Duplicate,
    /// The question mentions "the document", "the text", … (checked without the filter).
    ReferencesDocument,
    /// The filter's verdict was negative.
    Filter,
    /// The filter's reply could not be read.
    FilterUnparseable,
}

/// One line of `rejects.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RejectRecord {
    pub item_id: String,
    /// The generation attempt (1-based).
    pub attempt: u32,
    /// The candidate's position in its reply (1-based); absent for a whole reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    pub kind: RejectKind,
    pub reason: String,
}

/// The filter's judgement of one candidate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// The answer is correct and supported by the document(s).
    pub faithful: bool,
    /// The question has the requested characteristics.
    pub fits_category: bool,
    /// The question can be understood without the document(s).
    pub standalone: bool,
    /// The filter's words, when it gave any.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

impl Verdict {
    pub fn passed(&self) -> bool {
        self.faithful && self.fits_category && self.standalone
    }

    /// Which checks failed, in words, with the filter's own reason appended.
    pub fn failure(&self) -> String {
        let mut failed = Vec::new();
        if !self.faithful {
            failed.push("not faithful to the document");
        }
        if !self.fits_category {
            failed.push("does not fit the category");
        }
        if !self.standalone {
            failed.push("does not stand alone");
        }
        let mut text = failed.join("; ");
        if !self.reason.trim().is_empty() {
            text.push_str(&format!(" (filter: {})", self.reason.trim()));
        }
        text
    }
}
