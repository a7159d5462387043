//! The records of the LLM judge: `judgements.jsonl` (a grade per answer) and
//! `benchmark.judge.jsonl` (a rating per QA pair).

use serde::{Deserialize, Serialize};

use crate::benchmark::ModelInfo;

/// The top of the judge's correctness scale (0 wrong … 3 fully correct): the `judge` metric
/// is correctness over it.
pub const CORRECTNESS_MAX: u8 = 3;

/// The judge's grade of one system answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerGrade {
    pub id: String,
    /// 0 wrong … 3 fully correct.
    pub correctness: u8,
    /// 0 none … 2 severe; absent when the judge was shown no passage to check the answer
    /// against (`no_passages`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hallucination: Option<u8>,
    pub reason: String,
    /// Graded by the refusal rule, without a call.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub by_rule: bool,
    /// The system gave no passage (or none could be read): correctness is graded against the
    /// reference as usual, hallucination is not graded.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_passages: bool,
    pub judge: ModelInfo,
}

impl AnswerGrade {
    /// Correctness on 0–1: the `judge` metric.
    pub fn normalised(&self) -> f64 {
        f64::from(self.correctness) / f64::from(CORRECTNESS_MAX)
    }
}

/// The judge's rating of one benchmark QA pair, on the human annotators' scales.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairRating {
    pub id: String,
    pub correctness: u8,
    pub hallucination: u8,
    pub answerability: u8,
    pub reason: String,
    pub judge: ModelInfo,
}
