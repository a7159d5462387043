//! Per-query measures (AP, nDCG@k, Recall@k, RR) computed exactly as trec_eval 9 and 10 do.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::run::{ScoredDoc, trec_ranking};

/// The lowest grade that counts as relevant, trec_eval's default `relevance_level`.
pub const RELEVANCE_LEVEL: i32 = 1;

/// How a run is scored: the settings trec_eval takes on its command line.
///
/// `EvalOptions::default()` is trec_eval's default, which [`evaluate`](crate::evaluate) and
/// [`evaluate_query`] use.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct EvalOptions {
    /// The lowest grade that makes a judged document relevant (trec_eval's `-l`, default
    /// [`RELEVANCE_LEVEL`]): it decides AP, Recall@10 and RR, and, as in trec_eval, not nDCG,
    /// whose gains are the grades themselves whatever the level.
    ///
    /// An unjudged document is never relevant, so at level 0 every judged document with a grade
    /// of 0 or more is. A level below 0 counts as 0: trec_eval would then count unjudged
    /// documents as relevant where they are ranked but not in the number of relevant
    /// documents, which no measure means.
    pub relevance_level: i32,
}

impl Default for EvalOptions {
    fn default() -> Self {
        Self {
            relevance_level: RELEVANCE_LEVEL,
        }
    }
}

/// The rank cutoff of the reported nDCG and recall (`ndcg_cut_10`, `recall_10`).
pub const CUTOFF: usize = 10;

/// The four retrieval measures of one query, named as trec_eval names them.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Default)]
pub struct QueryMetrics {
    /// Average precision (trec_eval `map` for one query).
    pub ap: f64,
    /// nDCG over the top 10, gain = relevance grade (trec_eval `ndcg_cut_10`).
    pub ndcg_cut_10: f64,
    /// Share of the relevant documents found in the top 10 (trec_eval `recall_10`).
    pub recall_10: f64,
    /// 1 / rank of the first relevant document (trec_eval `recip_rank`).
    pub recip_rank: f64,
}

/// The grades of a query's ranking, computed once and shared by all measures.
struct JudgedRanking {
    /// The grade of each ranked document, in ranking order; `None` for unjudged documents.
    ranked_rels: Vec<Option<i32>>,
    /// The lowest grade that counts as relevant (at least 0).
    relevance_level: i32,
    /// How many judged documents are relevant, retrieved or not.
    n_relevant: usize,
    /// The positive grades of the judged documents, best first: the ideal ranking's gains.
    ideal_gains: Vec<i32>,
}

impl JudgedRanking {
    fn new(rels: &BTreeMap<String, i32>, ranking: &[ScoredDoc], options: &EvalOptions) -> Self {
        let relevance_level = options.relevance_level.max(0);
        let ranked_rels = trec_ranking(ranking)
            .into_iter()
            .map(|doc| rels.get(&doc.doc_id).copied())
            .collect();
        let n_relevant = rels.values().filter(|&&rel| rel >= relevance_level).count();
        // trec_eval's ideal ranking stops at the first grade <= 0, so zero and negative judgments
        // never enter the ideal DCG.
        let mut ideal_gains: Vec<i32> = rels.values().copied().filter(|&rel| rel > 0).collect();
        ideal_gains.sort_unstable_by(|a, b| b.cmp(a));
        Self {
            ranked_rels,
            relevance_level,
            n_relevant,
            ideal_gains,
        }
    }

    /// Whether the document with this grade (`None`: unjudged) is relevant.
    fn is_relevant(&self, rel: Option<i32>) -> bool {
        rel.is_some_and(|rel| rel >= self.relevance_level)
    }

    fn average_precision(&self) -> f64 {
        if self.n_relevant == 0 {
            return 0.0;
        }
        let mut n_relevant_so_far = 0usize;
        let mut precision_sum = 0.0;
        for (rank_idx, &rel) in self.ranked_rels.iter().enumerate() {
            if self.is_relevant(rel) {
                n_relevant_so_far += 1;
                precision_sum += n_relevant_so_far as f64 / (rank_idx + 1) as f64;
            }
        }
        precision_sum / self.n_relevant as f64
    }

    fn ndcg_at(&self, k: usize) -> f64 {
        // The gain is the grade itself (not 2^grade - 1), and a negative grade adds nothing:
        // pytrec_eval scores qrels {a: -1, b: 1} with ranking [a, b] as 1/log2(3), not lower.
        let dcg = discounted_gain(
            self.ranked_rels
                .iter()
                .take(k)
                .map(|&rel| rel.unwrap_or(0).max(0)),
        );
        let ideal_dcg = discounted_gain(self.ideal_gains.iter().take(k).copied());
        if ideal_dcg > 0.0 {
            dcg / ideal_dcg
        } else {
            0.0
        }
    }

    fn recall_at(&self, k: usize) -> f64 {
        if self.n_relevant == 0 {
            return 0.0;
        }
        let n_found = self
            .ranked_rels
            .iter()
            .take(k)
            .filter(|&&rel| self.is_relevant(rel))
            .count();
        n_found as f64 / self.n_relevant as f64
    }

    fn reciprocal_rank(&self) -> f64 {
        self.ranked_rels
            .iter()
            .position(|&rel| self.is_relevant(rel))
            .map_or(0.0, |rank_idx| 1.0 / (rank_idx + 1) as f64)
    }
}

/// Sum of gain / log2(rank + 1) with ranks from 1, added in rank order as trec_eval adds them.
///
/// The sum starts from +0.0 as trec_eval's does: `Iterator::sum` of `f64` starts from -0.0, so a
/// ranking without any gain in the top k had DCG -0.0 and printed nDCG@10 as `-0.0000`.
fn discounted_gain(gains: impl Iterator<Item = i32>) -> f64 {
    gains
        .enumerate()
        .filter(|&(_, gain)| gain != 0)
        .map(|(rank_idx, gain)| f64::from(gain) / ((rank_idx + 2) as f64).log2())
        .fold(0.0, |sum, term| sum + term)
}

/// Average precision: the mean, over all relevant judged documents, of the precision at the rank
/// where each is retrieved (0 for those never retrieved); 0 if nothing is relevant.
///
/// `ranking` may be in any order; it is ranked with [`trec_order`](crate::trec_order).
pub fn average_precision(rels: &BTreeMap<String, i32>, ranking: &[ScoredDoc]) -> f64 {
    JudgedRanking::new(rels, ranking, &EvalOptions::default()).average_precision()
}

/// nDCG over the top `k`: gain = relevance grade, discount log2(rank + 1), normalised by the DCG
/// of the judged grades sorted best first (also cut at `k`); 0 if no grade is positive.
pub fn ndcg_at(rels: &BTreeMap<String, i32>, ranking: &[ScoredDoc], k: usize) -> f64 {
    JudgedRanking::new(rels, ranking, &EvalOptions::default()).ndcg_at(k)
}

/// The share of the relevant judged documents that appear in the top `k`; 0 if none is relevant.
pub fn recall_at(rels: &BTreeMap<String, i32>, ranking: &[ScoredDoc], k: usize) -> f64 {
    JudgedRanking::new(rels, ranking, &EvalOptions::default()).recall_at(k)
}

/// 1 / rank of the first relevant document; 0 if none is retrieved.
pub fn reciprocal_rank(rels: &BTreeMap<String, i32>, ranking: &[ScoredDoc]) -> f64 {
    JudgedRanking::new(rels, ranking, &EvalOptions::default()).reciprocal_rank()
}

/// All four measures of one query. `ranking` may be in any order; an empty one scores 0.
pub fn evaluate_query(rels: &BTreeMap<String, i32>, ranking: &[ScoredDoc]) -> QueryMetrics {
    evaluate_query_with(rels, ranking, &EvalOptions::default())
}

/// [`evaluate_query`] with other [`EvalOptions`] (another relevance level).
pub fn evaluate_query_with(
    rels: &BTreeMap<String, i32>,
    ranking: &[ScoredDoc],
    options: &EvalOptions,
) -> QueryMetrics {
    let judged = JudgedRanking::new(rels, ranking, options);
    QueryMetrics {
        ap: judged.average_precision(),
        ndcg_cut_10: judged.ndcg_at(CUTOFF),
        recall_10: judged.recall_at(CUTOFF),
        recip_rank: judged.reciprocal_rank(),
    }
}
