//! Whole-run evaluation: per-query measures and their mean over every judged query.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::measures::{EvalOptions, QueryMetrics, evaluate_query_with};
use crate::{Qrels, Run};

/// The measures of a run against judgments.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    /// The measures of every judged query, including those the run retrieved nothing for.
    pub per_query: BTreeMap<String, QueryMetrics>,
    /// The arithmetic mean of `per_query` over all judged queries (all zeros if there are none).
    pub mean: QueryMetrics,
    /// The number of judged queries, which is the denominator of `mean`.
    pub n_queries: usize,
    /// Judged queries absent from the run; each scores 0 on every measure (ascending order).
    pub queries_without_results: Vec<String>,
    /// How many run queries have no judgments; they are ignored, as trec_eval ignores them.
    pub n_unjudged_run_queries: usize,
}

/// Evaluates `run` against `qrels`.
///
/// Unlike trec_eval, which averages only over queries that appear in both, a judged query that
/// retrieved nothing scores 0 and counts in the mean (docs/design.md, "Metrics"): a system must not look
/// better by answering fewer questions.
pub fn evaluate(qrels: &Qrels, run: &Run) -> Evaluation {
    evaluate_with(qrels, run, &EvalOptions::default())
}

/// [`evaluate`] with other [`EvalOptions`], such as trec_eval's `-l` relevance level.
pub fn evaluate_with(qrels: &Qrels, run: &Run, options: &EvalOptions) -> Evaluation {
    let mut per_query = BTreeMap::new();
    let mut queries_without_results = Vec::new();
    for (query_id, rels) in qrels.iter() {
        let metrics = match run.get(query_id) {
            Some(ranking) => evaluate_query_with(rels, ranking, options),
            None => {
                queries_without_results.push(query_id.to_owned());
                QueryMetrics::default()
            }
        };
        per_query.insert(query_id.to_owned(), metrics);
    }
    let n_unjudged_run_queries = run
        .query_ids()
        .filter(|query_id| qrels.get(query_id).is_none())
        .count();
    Evaluation {
        mean: mean(per_query.values()),
        n_queries: per_query.len(),
        per_query,
        queries_without_results,
        n_unjudged_run_queries,
    }
}

/// The field-wise arithmetic mean, summed in the iterator's order (query id order in [`evaluate`],
/// so results are reproducible to the last bit); all zeros for no queries rather than NaN.
pub fn mean<'a>(metrics: impl IntoIterator<Item = &'a QueryMetrics>) -> QueryMetrics {
    let mut sum = QueryMetrics::default();
    let mut n_queries = 0usize;
    for query in metrics {
        sum.ap += query.ap;
        sum.ndcg_cut_10 += query.ndcg_cut_10;
        sum.recall_10 += query.recall_10;
        sum.recip_rank += query.recip_rank;
        n_queries += 1;
    }
    if n_queries == 0 {
        return QueryMetrics::default();
    }
    let n = n_queries as f64;
    QueryMetrics {
        ap: sum.ap / n,
        ndcg_cut_10: sum.ndcg_cut_10 / n,
        recall_10: sum.recall_10 / n,
        recip_rank: sum.recip_rank / n,
    }
}
