//! The mean of every metric over a group of questions.

use crate::input::Observation;
use crate::model::{Estimate, Means};

/// Means of every metric; corpus BLEU only when every question carries its texts.
pub(crate) fn means(observations: &[&Observation]) -> Means {
    let n = observations.len() as f64;
    let mean = |f: &dyn Fn(&Observation) -> f64| {
        if observations.is_empty() {
            f64::NAN
        } else {
            // `+ 0.0` turns a mean of -0.0 into 0.0.
            observations.iter().map(|o| f(o)).sum::<f64>() / n + 0.0
        }
    };
    let corpus_bleu = if !observations.is_empty() && observations.iter().all(|o| o.texts.is_some())
    {
        let (predictions, references): (Vec<&str>, Vec<&str>) = observations
            .iter()
            .filter_map(|o| o.texts.as_ref())
            .map(|t| (t.prediction.as_str(), t.reference.as_str()))
            .unzip();
        Some(hierarag_metrics::corpus_bleu(&predictions, &references).score)
    } else {
        None
    };
    // A retrieval or judge mean is over the questions that have the metric.
    let mean_of_present = |f: &dyn Fn(&Observation) -> Option<f64>| {
        let values: Vec<f64> = observations.iter().filter_map(|o| f(o)).collect();
        (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64 + 0.0)
    };
    Means {
        map: mean_of_present(&|o| o.scores.ap),
        ndcg_10: mean_of_present(&|o| o.scores.ndcg_10),
        recall_10: mean_of_present(&|o| o.scores.recall_10),
        mrr: mean_of_present(&|o| o.scores.rr),
        cs: mean(&|o| o.scores.cs),
        rouge1: mean(&|o| o.scores.rouge1),
        bleu: mean(&|o| o.scores.bleu),
        corpus_bleu,
        refusal_rate: mean(&|o| f64::from(u8::from(o.scores.refused))),
        judge: mean_of_present(&|o| o.scores.judge),
        judge_correctness: mean_of_present(&|o| o.scores.judge_correctness),
        judge_hallucination: mean_of_present(&|o| o.scores.judge_hallucination),
    }
}

pub(crate) fn estimate(value: f64, ci: Option<[f64; 2]>) -> Estimate {
    Estimate { value, ci }
}
