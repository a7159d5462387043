//! Per-query measures (AP, nDCG@k, Recall@k, RR) computed exactly as trec_eval 9 does.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::run::{ScoredDoc, trec_ranking};

/// The lowest grade that counts as relevant, trec_eval's default `relevance_level`.
pub const RELEVANCE_LEVEL: i32 = 1;

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
    /// The grade of each ranked document, in ranking order; unjudged documents get 0.
    ranked_rels: Vec<i32>,
    /// How many judged documents are relevant, retrieved or not.
    n_relevant: usize,
    /// The positive grades of the judged documents, best first: the ideal ranking's gains.
    ideal_gains: Vec<i32>,
}

impl JudgedRanking {
    fn new(rels: &BTreeMap<String, i32>, ranking: &[ScoredDoc]) -> Self {
        let ranked_rels = trec_ranking(ranking)
            .into_iter()
            .map(|doc| rels.get(&doc.doc_id).copied().unwrap_or(0))
            .collect();
        let n_relevant = rels.values().filter(|&&rel| rel >= RELEVANCE_LEVEL).count();
        // trec_eval's ideal ranking stops at the first grade <= 0, so zero and negative judgments
        // never enter the ideal DCG.
        let mut ideal_gains: Vec<i32> = rels.values().copied().filter(|&rel| rel > 0).collect();
        ideal_gains.sort_unstable_by(|a, b| b.cmp(a));
        Self {
            ranked_rels,
            n_relevant,
            ideal_gains,
        }
    }

    fn average_precision(&self) -> f64 {
        if self.n_relevant == 0 {
            return 0.0;
        }
        let mut n_relevant_so_far = 0usize;
        let mut precision_sum = 0.0;
        for (rank_idx, &rel) in self.ranked_rels.iter().enumerate() {
            if rel >= RELEVANCE_LEVEL {
                n_relevant_so_far += 1;
                precision_sum += n_relevant_so_far as f64 / (rank_idx + 1) as f64;
            }
        }
        precision_sum / self.n_relevant as f64
    }

    fn ndcg_at(&self, k: usize) -> f64 {
        // The gain is the grade itself (not 2^grade - 1), and a negative grade adds nothing:
        // pytrec_eval scores qrels {a: -1, b: 1} with ranking [a, b] as 1/log2(3), not lower.
        let dcg = discounted_gain(self.ranked_rels.iter().take(k).map(|&rel| rel.max(0)));
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
            .filter(|&&rel| rel >= RELEVANCE_LEVEL)
            .count();
        n_found as f64 / self.n_relevant as f64
    }

    fn reciprocal_rank(&self) -> f64 {
        self.ranked_rels
            .iter()
            .position(|&rel| rel >= RELEVANCE_LEVEL)
            .map_or(0.0, |rank_idx| 1.0 / (rank_idx + 1) as f64)
    }
}

/// Sum of gain / log2(rank + 1) with ranks from 1, added in rank order as trec_eval adds them.
fn discounted_gain(gains: impl Iterator<Item = i32>) -> f64 {
    gains
        .enumerate()
        .filter(|&(_, gain)| gain != 0)
        .map(|(rank_idx, gain)| f64::from(gain) / ((rank_idx + 2) as f64).log2())
        .sum()
}

/// Average precision: the mean, over all relevant judged documents, of the precision at the rank
/// where each is retrieved (0 for those never retrieved); 0 if nothing is relevant.
///
/// `ranking` may be in any order; it is ranked with [`trec_order`](crate::trec_order).
pub fn average_precision(rels: &BTreeMap<String, i32>, ranking: &[ScoredDoc]) -> f64 {
    JudgedRanking::new(rels, ranking).average_precision()
}

/// nDCG over the top `k`: gain = relevance grade, discount log2(rank + 1), normalised by the DCG
/// of the judged grades sorted best first (also cut at `k`); 0 if no grade is positive.
pub fn ndcg_at(rels: &BTreeMap<String, i32>, ranking: &[ScoredDoc], k: usize) -> f64 {
    JudgedRanking::new(rels, ranking).ndcg_at(k)
}

/// The share of the relevant judged documents that appear in the top `k`; 0 if none is relevant.
pub fn recall_at(rels: &BTreeMap<String, i32>, ranking: &[ScoredDoc], k: usize) -> f64 {
    JudgedRanking::new(rels, ranking).recall_at(k)
}

/// 1 / rank of the first relevant document; 0 if none is retrieved.
pub fn reciprocal_rank(rels: &BTreeMap<String, i32>, ranking: &[ScoredDoc]) -> f64 {
    JudgedRanking::new(rels, ranking).reciprocal_rank()
}

/// All four measures of one query. `ranking` may be in any order; an empty one scores 0.
pub fn evaluate_query(rels: &BTreeMap<String, i32>, ranking: &[ScoredDoc]) -> QueryMetrics {
    let judged = JudgedRanking::new(rels, ranking);
    QueryMetrics {
        ap: judged.average_precision(),
        ndcg_cut_10: judged.ndcg_at(CUTOFF),
        recall_10: judged.recall_at(CUTOFF),
        recip_rank: judged.reciprocal_rank(),
    }
}
