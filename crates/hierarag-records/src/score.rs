//! The records of the evaluate stage (`scores.jsonl`) and the failures every stage writes
//! (`<stage>.failures.jsonl`).

use serde::{Deserialize, Serialize};

use crate::judgement::AnswerGrade;

/// One line of `scores.jsonl`: every metric of one answered question (docs/design.md, "Metrics").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoreRecord {
    pub id: String,
    /// Retrieval, against the question's source document(s), trec_eval semantics; `null` when
    /// the system named no document for any question (`AnswerRecord::no_documents` on every
    /// answer: it does not say what it retrieved), absent, not 0. A system that names documents
    /// for some questions and none for this one retrieved nothing: 0 on every measure, as
    /// `trec_eval -c` counts a query missing from the run (`empty_ranking`).
    #[serde(default)]
    pub ap: Option<f64>,
    #[serde(default)]
    pub ndcg_10: Option<f64>,
    #[serde(default)]
    pub recall_10: Option<f64>,
    #[serde(default)]
    pub rr: Option<f64>,
    /// Cosine similarity of the MiniLM embeddings of answer and reference.
    pub cs: f64,
    /// ROUGE-1 F-measure (rouge-score's defaults; for another language than English, over the
    /// language's tokens: docs/design.md, "Languages").
    pub rouge1: f64,
    /// Sentence BLEU, 0–100 (sacrebleu's defaults; for Chinese, Japanese and Korean, its `zh`
    /// or `char` tokenizer).
    pub bleu: f64,
    pub refused: bool,
    /// The retrieval metrics are of an empty ranking (the system found nothing): 0 on every
    /// measure, counted beside the means.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub empty_ranking: bool,
    /// The system's refusal was right: it refused a question marked unanswerable, or answered
    /// an answerable one. Absent in scores written before this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal_correct: Option<bool>,
    /// The LLM judge's grade of the answer (docs/design.md, "Judge"): correctness 0–3 against
    /// the reference, hallucination 0–2 against the retrieved passages, and the correctness
    /// over 0–1; absent when no judge graded it (`hierarag judge`, or `[judge]` in the run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_correctness: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_hallucination: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<f64>,
}

impl ScoreRecord {
    /// The record with the judge's grade of its answer in it (or without one, for `None`).
    pub fn with_grade(mut self, grade: Option<&AnswerGrade>) -> ScoreRecord {
        self.judge_correctness = grade.map(|g| g.correctness);
        self.judge_hallucination = grade.and_then(|g| g.hallucination);
        self.judge = grade.map(AnswerGrade::normalised);
        self
    }
}

/// An item a stage could not do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    pub stage: String,
    pub item_id: String,
    pub reason: String,
}
