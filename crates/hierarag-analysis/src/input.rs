//! What the analysis reads: one scored question per observation, and the settings.

use std::fmt;
use std::str::FromStr;

use hierarag_records::CategoryRef;
use serde::{Deserialize, Serialize};

/// One scored question: its categories (one, or one per factor of a factorial cell) and its
/// per-question scores (docs/design.md, "Metrics").
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    pub id: String,
    /// The plan's set the question belongs to (`qc`, `qc/medium`, `lv×qc`): categories are
    /// only ever compared within one set.
    pub set: String,
    pub categories: Vec<CategoryRef>,
    /// The question is marked unanswerable: the right answer is a refusal.
    pub unanswerable: bool,
    pub scores: Scores,
    /// The generated answer and the reference, for corpus BLEU per category; optional.
    pub texts: Option<Texts>,
}

/// The per-question scores of `scores.jsonl`; the retrieval metrics are `None` when the
/// system named no document.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Scores {
    pub ap: Option<f64>,
    pub ndcg_10: Option<f64>,
    pub recall_10: Option<f64>,
    pub rr: Option<f64>,
    pub cs: f64,
    pub rouge1: f64,
    pub bleu: f64,
    pub refused: bool,
    /// The LLM judge's grade: correctness 0–3, hallucination 0–2 and correctness over 0–1;
    /// `None` when no judge graded the answer.
    pub judge_correctness: Option<f64>,
    pub judge_hallucination: Option<f64>,
    pub judge: Option<f64>,
}

/// The two texts corpus BLEU is computed over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Texts {
    pub prediction: String,
    pub reference: String,
}

/// A per-question metric: the one the discrimination statistics are computed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Average precision (its mean is MAP).
    Ap,
    // The names of the command line and scores.jsonl; the derived `ndcg10` and `recall10`
    // written by earlier releases still read.
    #[serde(rename = "ndcg_10", alias = "ndcg10")]
    Ndcg10,
    #[serde(rename = "recall_10", alias = "recall10")]
    Recall10,
    /// Reciprocal rank (its mean is MRR).
    Rr,
    /// MiniLM cosine similarity of answer and reference (the paper's primary metric).
    #[default]
    Cs,
    Rouge1,
    Bleu,
    /// 1 for a refusal, 0 otherwise (its mean is the refusal rate).
    Refused,
    /// The LLM judge's correctness over 0–1 (its grade 0–3 divided by 3).
    Judge,
    /// The LLM judge's correctness grade, 0–3.
    JudgeCorrectness,
    /// The LLM judge's hallucination grade, 0–2 (higher is worse).
    JudgeHallucination,
}

impl Metric {
    pub const ALL: [Metric; 11] = [
        Metric::Ap,
        Metric::Ndcg10,
        Metric::Recall10,
        Metric::Rr,
        Metric::Cs,
        Metric::Rouge1,
        Metric::Bleu,
        Metric::Refused,
        Metric::Judge,
        Metric::JudgeCorrectness,
        Metric::JudgeHallucination,
    ];

    /// The metric's value for one question; `None` for a retrieval metric of a question whose
    /// system named no document.
    pub fn value(self, scores: &Scores) -> Option<f64> {
        match self {
            Metric::Ap => scores.ap,
            Metric::Ndcg10 => scores.ndcg_10,
            Metric::Recall10 => scores.recall_10,
            Metric::Rr => scores.rr,
            Metric::Cs => Some(scores.cs),
            Metric::Rouge1 => Some(scores.rouge1),
            Metric::Bleu => Some(scores.bleu),
            Metric::Refused => Some(f64::from(u8::from(scores.refused))),
            Metric::Judge => scores.judge,
            Metric::JudgeCorrectness => scores.judge_correctness,
            Metric::JudgeHallucination => scores.judge_hallucination,
        }
    }

    /// The metric's value for a question the analysis compares: [`crate::analyze`] leaves out
    /// the questions without it, so that this is never NaN there.
    pub fn of(self, scores: &Scores) -> f64 {
        self.value(scores).unwrap_or(f64::NAN)
    }

    /// AP, nDCG@10, Recall@10 and RR: absent for a system that names no document.
    pub fn is_retrieval(self) -> bool {
        matches!(
            self,
            Metric::Ap | Metric::Ndcg10 | Metric::Recall10 | Metric::Rr
        )
    }

    /// The judge's grades: absent for an answer no judge graded.
    pub fn is_judge(self) -> bool {
        matches!(
            self,
            Metric::Judge | Metric::JudgeCorrectness | Metric::JudgeHallucination
        )
    }

    /// Why a question has no value of the metric.
    pub fn absent_because(self) -> &'static str {
        if self.is_judge() {
            "no judge graded its answer"
        } else {
            "its system named no document"
        }
    }

    /// The name used in files and on the command line (the same as its serde name).
    pub fn as_str(self) -> &'static str {
        match self {
            Metric::Ap => "ap",
            Metric::Ndcg10 => "ndcg_10",
            Metric::Recall10 => "recall_10",
            Metric::Rr => "rr",
            Metric::Cs => "cs",
            Metric::Rouge1 => "rouge1",
            Metric::Bleu => "bleu",
            Metric::Refused => "refused",
            Metric::Judge => "judge",
            Metric::JudgeCorrectness => "judge_correctness",
            Metric::JudgeHallucination => "judge_hallucination",
        }
    }

    /// The name of the metric's mean in tables (`MAP`, `CS`, `refusal rate`).
    pub fn mean_label(self) -> &'static str {
        match self {
            Metric::Ap => "MAP",
            Metric::Ndcg10 => "nDCG@10",
            Metric::Recall10 => "Recall@10",
            Metric::Rr => "MRR",
            Metric::Cs => "CS",
            Metric::Rouge1 => "ROUGE-1",
            Metric::Bleu => "BLEU",
            Metric::Refused => "refusal rate",
            Metric::Judge => "judge",
            Metric::JudgeCorrectness => "judge correctness",
            Metric::JudgeHallucination => "judge hallucination",
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Metric {
    type Err = String;

    fn from_str(text: &str) -> Result<Metric, String> {
        Metric::ALL
            .into_iter()
            .find(|metric| metric.as_str() == text)
            .ok_or_else(|| {
                let names: Vec<&str> = Metric::ALL.iter().map(|m| m.as_str()).collect();
                format!("unknown metric `{text}`; one of {}", names.join(", "))
            })
    }
}

/// Options of the analysis (docs/design.md, "Analysis"); the defaults are the paper's choices plus the
/// uncertainty it lacks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// The metric whose category means are compared (the paper: CS).
    pub metric: Metric,
    /// Degrees of freedom removed in the standard deviation of category means (0: population).
    pub ddof: u32,
    /// Equal-frequency bins of the metric for NMI.
    pub nmi_bins: usize,
    /// ε in ρ = σ_sib / (δ_vert + ε).
    pub epsilon: f64,
    /// Bootstrap resamples (within categories); 0 turns the intervals off.
    pub bootstrap: usize,
    /// Label permutations for the DiscPow p-value; 0 turns the test off.
    pub permutations: usize,
    /// Coverage of the intervals.
    pub confidence: f64,
    /// Seed of every resample and permutation.
    pub seed: u64,
}

impl Settings {
    /// Why the statistics cannot use these settings, if they cannot.
    pub fn check(&self) -> Result<(), String> {
        if self.nmi_bins < 2 {
            return Err("the number of NMI bins (--bins, nmi_bins) must be at least 2".into());
        }
        if !(self.confidence > 0.0 && self.confidence < 1.0) {
            return Err("the confidence (--confidence) must be between 0 and 1, e.g. 0.95".into());
        }
        if !(self.epsilon >= 0.0 && self.epsilon.is_finite()) {
            return Err("epsilon (--epsilon) must be a finite number ≥ 0".into());
        }
        Ok(())
    }
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            metric: Metric::Cs,
            ddof: 0,
            nmi_bins: 5,
            epsilon: 1e-3,
            bootstrap: 1000,
            permutations: 1000,
            confidence: 0.95,
            seed: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_metric_has_one_name_in_files_and_on_the_command_line() {
        for metric in Metric::ALL {
            let json = serde_json::to_string(&metric).unwrap();
            assert_eq!(json, format!("\"{}\"", metric.as_str()));
            assert_eq!(metric.as_str().parse::<Metric>(), Ok(metric));
        }
        // What earlier releases wrote still reads.
        let old: Metric = serde_json::from_str("\"ndcg10\"").unwrap();
        assert_eq!(old, Metric::Ndcg10);
        let old: Metric = serde_json::from_str("\"recall10\"").unwrap();
        assert_eq!(old, Metric::Recall10);
    }
}
