//! proptest invariants of the measures: bounds, ideal rankings, order rules, input-order freedom.

use std::collections::BTreeMap;

use hierarag_metrics::{
    Qrels, QueryMetrics, Run, ScoredDoc, average_precision, evaluate, evaluate_query, ndcg_at,
    recall_at, reciprocal_rank, trec_ranking,
};
use proptest::prelude::*;
use proptest::sample::Index;

/// Doc ids of 2 to 3 characters ("d7", "d12") so that byte-wise tie-breaking is exercised.
fn doc_id(doc_idx: u32) -> String {
    format!("d{doc_idx}")
}

/// Judgments over a small doc pool with grades in `grades`.
fn judgments_with(
    grades: std::ops::RangeInclusive<i32>,
    n_judged: std::ops::Range<usize>,
) -> impl Strategy<Value = BTreeMap<String, i32>> {
    prop::collection::btree_map(0u32..40, grades, n_judged).prop_map(|map| {
        map.into_iter()
            .map(|(doc_idx, rel)| (doc_id(doc_idx), rel))
            .collect()
    })
}

/// Judgments with grades -1..=3, so that negative and zero grades appear.
fn judgments() -> impl Strategy<Value = BTreeMap<String, i32>> {
    judgments_with(-1..=3, 0..15)
}

/// A score that is often tied with others (half-steps) or arbitrary.
fn score() -> impl Strategy<Value = f64> {
    prop_oneof![
        (0u8..6).prop_map(|step| f64::from(step) / 2.0),
        -1e3f64..1e3
    ]
}

/// A run for one query: distinct docs from the same pool as [`judgments`].
fn ranking() -> impl Strategy<Value = Vec<ScoredDoc>> {
    prop::collection::btree_map(0u32..40, score(), 0..30).prop_map(|map| {
        map.into_iter()
            .map(|(doc_idx, score)| ScoredDoc::new(doc_id(doc_idx), score))
            .collect()
    })
}

/// Gives `doc_ids` scores that rank them exactly in the given order.
fn ranked_as(doc_ids: &[String]) -> Vec<ScoredDoc> {
    let n_docs = doc_ids.len();
    doc_ids
        .iter()
        .enumerate()
        .map(|(rank_idx, doc)| ScoredDoc::new(doc.clone(), (n_docs - rank_idx) as f64))
        .collect()
}

fn n_relevant(rels: &BTreeMap<String, i32>) -> usize {
    rels.values().filter(|&&rel| rel >= 1).count()
}

fn all_values(metrics: QueryMetrics) -> [f64; 4] {
    [
        metrics.ap,
        metrics.ndcg_cut_10,
        metrics.recall_10,
        metrics.recip_rank,
    ]
}

proptest! {
    // Integration tests have no lib.rs beside them for proptest to persist failures next to; a
    // failure prints its minimal input instead, and tests stay free of file writes.
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_measure_is_between_0_and_1(rels in judgments(), ranking in ranking()) {
        for value in all_values(evaluate_query(&rels, &ranking)) {
            prop_assert!((0.0..=1.0).contains(&value), "{value}");
        }
        for k in 0..15 {
            let ndcg = ndcg_at(&rels, &ranking, k);
            prop_assert!((0.0..=1.0 + 1e-12).contains(&ndcg), "ndcg@{k} = {ndcg}");
            prop_assert!((0.0..=1.0).contains(&recall_at(&rels, &ranking, k)));
        }
    }

    #[test]
    fn relevant_docs_ranked_first_in_any_order_score_1_with_binary_grades(
        rels in judgments_with(0..=1, 1..25),
        seed in any::<u64>(),
    ) {
        prop_assume!(n_relevant(&rels) > 0);
        let mut relevant: Vec<String> =
            rels.iter().filter(|&(_, &rel)| rel >= 1).map(|(doc, _)| doc.clone()).collect();
        let others = rels.iter().filter(|&(_, &rel)| rel < 1).map(|(doc, _)| doc.clone());
        // Any order among equal-gain documents is ideal; rotate to vary it.
        let rotate_by = (seed % relevant.len() as u64) as usize;
        relevant.rotate_left(rotate_by);
        relevant.extend(others);
        let metrics = evaluate_query(&rels, &ranked_as(&relevant));
        let n_rel = n_relevant(&rels);
        prop_assert_eq!(metrics.ap, 1.0);
        prop_assert!((metrics.ndcg_cut_10 - 1.0).abs() < 1e-12, "{}", metrics.ndcg_cut_10);
        prop_assert_eq!(metrics.recip_rank, 1.0);
        prop_assert_eq!(metrics.recall_10, n_rel.min(10) as f64 / n_rel as f64);
    }

    #[test]
    fn graded_docs_ranked_best_first_give_ndcg_1(rels in judgments()) {
        prop_assume!(n_relevant(&rels) > 0);
        let mut by_grade: Vec<(&String, i32)> = rels.iter().map(|(doc, &rel)| (doc, rel)).collect();
        by_grade.sort_by_key(|&(_, rel)| std::cmp::Reverse(rel));
        let order: Vec<String> = by_grade.into_iter().map(|(doc, _)| doc.clone()).collect();
        let ndcg = ndcg_at(&rels, &ranked_as(&order), 10);
        prop_assert!((ndcg - 1.0).abs() < 1e-12, "{ndcg}");
    }

    #[test]
    fn moving_a_relevant_doc_up_never_lowers_ap_rr_or_recall(
        rels in judgments(),
        ranking in ranking(),
        which_relevant in any::<Index>(),
        to in any::<Index>(),
    ) {
        let order: Vec<String> =
            trec_ranking(&ranking).into_iter().map(|doc| doc.doc_id.clone()).collect();
        let relevant_positions: Vec<usize> = (0..order.len())
            .filter(|&rank_idx| rels.get(&order[rank_idx]).is_some_and(|&rel| rel >= 1))
            .collect();
        prop_assume!(relevant_positions.iter().any(|&rank_idx| rank_idx > 0));
        let from = *which_relevant.get(&relevant_positions);
        prop_assume!(from > 0);
        let to = to.index(from);
        let mut moved = order.clone();
        let doc = moved.remove(from);
        moved.insert(to, doc);

        let (before, after) = (ranked_as(&order), ranked_as(&moved));
        prop_assert!(average_precision(&rels, &after) >= average_precision(&rels, &before));
        prop_assert!(reciprocal_rank(&rels, &after) >= reciprocal_rank(&rels, &before));
        prop_assert!(recall_at(&rels, &after, 10) >= recall_at(&rels, &before, 10));
    }

    #[test]
    fn recall_counts_relevant_docs_in_the_top_k_and_bounds_ap(
        rels in judgments(),
        ranking in ranking(),
    ) {
        let n_rel = n_relevant(&rels);
        let ranked = trec_ranking(&ranking);
        let mut previous = 0.0;
        for k in 0..=ranked.len() + 1 {
            let n_found = ranked
                .iter()
                .take(k)
                .filter(|doc| rels.get(&doc.doc_id).is_some_and(|&rel| rel >= 1))
                .count();
            let expected = if n_rel == 0 { 0.0 } else { n_found as f64 / n_rel as f64 };
            let recall = recall_at(&rels, &ranking, k);
            prop_assert_eq!(recall, expected, "k = {}", k);
            prop_assert!(recall >= previous, "recall must not fall as k grows");
            previous = recall;
        }
        // Each precision term is at most 1, so AP cannot exceed the share of relevant retrieved.
        prop_assert!(average_precision(&rels, &ranking) <= previous + 1e-12);
        // Reciprocal rank is 0 exactly when no relevant doc is retrieved.
        prop_assert_eq!(reciprocal_rank(&rels, &ranking) == 0.0, previous == 0.0);
    }

    #[test]
    fn input_order_of_a_ranking_never_matters(
        rels in judgments(),
        (ranking, shuffled) in ranking()
            .prop_flat_map(|ranking| (Just(ranking.clone()), Just(ranking).prop_shuffle())),
    ) {
        prop_assert_eq!(evaluate_query(&rels, &ranking), evaluate_query(&rels, &shuffled));
    }

    #[test]
    fn push_order_of_a_run_never_matters_and_the_mean_covers_every_judged_query(
        per_query in prop::collection::vec((judgments(), ranking()), 1..6),
        seed in any::<u64>(),
    ) {
        let mut qrels = Qrels::new();
        let mut lines = Vec::new();
        for (query_idx, (rels, ranking)) in per_query.iter().enumerate() {
            let query_id = format!("q{query_idx}");
            for (doc, &rel) in rels {
                qrels.insert(query_id.clone(), doc.clone(), rel);
            }
            lines.extend(ranking.iter().map(|doc| (query_id.clone(), doc.clone())));
        }
        let build = |lines: &[(String, ScoredDoc)]| {
            let mut run = Run::new();
            for (query_id, doc) in lines {
                run.push(query_id.clone(), doc.doc_id.clone(), doc.score);
            }
            run
        };
        let in_order = evaluate(&qrels, &build(&lines));
        // A deterministic shuffle from the seed: reverse, then rotate.
        lines.reverse();
        if !lines.is_empty() {
            let rotate_by = (seed % lines.len() as u64) as usize;
            lines.rotate_left(rotate_by);
        }
        let shuffled = evaluate(&qrels, &build(&lines));
        prop_assert_eq!(&in_order, &shuffled);

        prop_assert_eq!(in_order.n_queries, qrels.len());
        if qrels.is_empty() {
            prop_assert_eq!(in_order.mean, QueryMetrics::default());
        }
        let n = in_order.n_queries.max(1) as f64;
        let mean_ap = in_order.per_query.values().map(|metrics| metrics.ap).sum::<f64>() / n;
        prop_assert!((in_order.mean.ap - mean_ap).abs() < 1e-12);
        for query_id in &in_order.queries_without_results {
            prop_assert_eq!(in_order.per_query[query_id], QueryMetrics::default());
        }
    }
}
