//! Hand-computed table tests and parse-error tests.

use std::collections::BTreeMap;

use crate::{
    EvalOptions, Qrels, QueryMetrics, Run, ScoredDoc, TrecFormatError, average_precision, evaluate,
    evaluate_query, evaluate_query_with, ndcg_at, recall_at, reciprocal_rank, trec_ranking,
};

fn rels(pairs: &[(&str, i32)]) -> BTreeMap<String, i32> {
    pairs
        .iter()
        .map(|&(doc, rel)| (doc.to_owned(), rel))
        .collect()
}

fn docs(pairs: &[(&str, f64)]) -> Vec<ScoredDoc> {
    pairs
        .iter()
        .map(|&(doc, score)| ScoredDoc::new(doc, score))
        .collect()
}

/// 1 / log2(rank + 1), the nDCG discount of a 1-based rank.
fn discount(rank: u32) -> f64 {
    1.0 / f64::from(rank + 1).log2()
}

fn assert_metrics(case: &str, actual: QueryMetrics, expected: QueryMetrics) {
    let pairs = [
        ("ap", actual.ap, expected.ap),
        ("ndcg_cut_10", actual.ndcg_cut_10, expected.ndcg_cut_10),
        ("recall_10", actual.recall_10, expected.recall_10),
        ("recip_rank", actual.recip_rank, expected.recip_rank),
    ];
    for (name, got, want) in pairs {
        assert!(
            (got - want).abs() < 1e-12,
            "{case}, {name}: got {got}, want {want}"
        );
    }
}

/// A hand-computed case: (name, judgments, run, expected measures).
type Case<'a> = (
    &'a str,
    Vec<(&'a str, i32)>,
    Vec<(&'a str, f64)>,
    QueryMetrics,
);

#[test]
fn table_of_hand_computed_queries() {
    let ten_misses: Vec<(String, f64)> = (0..10)
        .map(|i| (format!("miss{i}"), 2.0 + f64::from(i)))
        .collect();
    let mut beyond_ten: Vec<(&str, f64)> = ten_misses
        .iter()
        .map(|(doc, score)| (doc.as_str(), *score))
        .collect();
    beyond_ten.push(("rel", 1.0));
    let twelve_relevant: Vec<(String, i32)> = (0..12).map(|i| (format!("r{i:02}"), 1)).collect();
    let twelve_relevant_rels: Vec<(&str, i32)> = twelve_relevant
        .iter()
        .map(|(doc, rel)| (doc.as_str(), *rel))
        .collect();
    let twelve_relevant_run: Vec<(&str, f64)> = twelve_relevant
        .iter()
        .map(|(doc, _)| (doc.as_str(), 1.0))
        .collect();

    let cases: Vec<Case> = vec![
        (
            "one relevant document at rank 3",
            vec![("r", 1), ("a", 0)],
            vec![("a", 0.9), ("b", 0.8), ("r", 0.7)],
            QueryMetrics {
                ap: 1.0 / 3.0,
                ndcg_cut_10: 0.5,
                recall_10: 1.0,
                recip_rank: 1.0 / 3.0,
            },
        ),
        (
            // Relevant at ranks 1 and 3, a third one never retrieved.
            "several relevant documents",
            vec![("r1", 1), ("r2", 1), ("r3", 1)],
            vec![("r1", 4.0), ("x", 3.0), ("r2", 2.0), ("y", 1.0)],
            QueryMetrics {
                ap: (1.0 + 2.0 / 3.0) / 3.0,
                ndcg_cut_10: (1.0 + discount(3)) / (1.0 + discount(2) + discount(3)),
                recall_10: 2.0 / 3.0,
                recip_rank: 1.0,
            },
        ),
        (
            // Gain is the grade itself: 2^grade - 1 would give a different value.
            "graded relevance ranked worst first",
            vec![("a", 3), ("b", 2), ("c", 1)],
            vec![("c", 3.0), ("b", 2.0), ("a", 1.0)],
            QueryMetrics {
                ap: 1.0,
                ndcg_cut_10: (1.0 + 2.0 * discount(2) + 3.0 * discount(3))
                    / (3.0 + 2.0 * discount(2) + 1.0 * discount(3)),
                recall_10: 1.0,
                recip_rank: 1.0,
            },
        ),
        (
            // Equal scores: "d9" > "d10" byte-wise, so d9 ranks first and d10 second.
            "tie broken by doc id descending, relevant d10 second",
            vec![("d10", 1)],
            vec![("d10", 1.0), ("d9", 1.0)],
            QueryMetrics {
                ap: 0.5,
                ndcg_cut_10: discount(2),
                recall_10: 1.0,
                recip_rank: 0.5,
            },
        ),
        (
            "tie broken by doc id descending, relevant d9 first",
            vec![("d9", 1)],
            vec![("d10", 1.0), ("d9", 1.0)],
            QueryMetrics {
                ap: 1.0,
                ndcg_cut_10: 1.0,
                recall_10: 1.0,
                recip_rank: 1.0,
            },
        ),
        (
            // C compares -0.0 and 0.0 as equal, so the doc id decides: "b" > "a".
            "negative zero ties with zero",
            vec![("a", 1)],
            vec![("a", 0.0), ("b", -0.0)],
            QueryMetrics {
                ap: 0.5,
                ndcg_cut_10: discount(2),
                recall_10: 1.0,
                recip_rank: 0.5,
            },
        ),
        (
            "relevant document at rank 11",
            vec![("rel", 1)],
            beyond_ten,
            QueryMetrics {
                ap: 1.0 / 11.0,
                ndcg_cut_10: 0.0,
                recall_10: 0.0,
                recip_rank: 1.0 / 11.0,
            },
        ),
        (
            // The ideal DCG is cut at 10 too, so a perfect top 10 scores 1.
            "twelve relevant documents all retrieved",
            twelve_relevant_rels,
            twelve_relevant_run,
            QueryMetrics {
                ap: 1.0,
                ndcg_cut_10: 1.0,
                recall_10: 10.0 / 12.0,
                recip_rank: 1.0,
            },
        ),
        (
            "empty ranking",
            vec![("r", 2)],
            vec![],
            QueryMetrics::default(),
        ),
        (
            "no relevant judgments",
            vec![("a", 0), ("b", -1)],
            vec![("a", 2.0), ("b", 1.0)],
            QueryMetrics::default(),
        ),
        (
            // Verified with pytrec_eval: a negative grade adds 0, not a negative gain.
            "negative grade ranked first",
            vec![("a", -1), ("b", 1)],
            vec![("a", 2.0), ("b", 1.0)],
            QueryMetrics {
                ap: 0.5,
                ndcg_cut_10: discount(2),
                recall_10: 1.0,
                recip_rank: 0.5,
            },
        ),
        (
            // Grade 0 is judged but not relevant; unjudged documents count as non-relevant.
            "zero grade and unjudged above the relevant document",
            vec![("z", 0), ("r", 2)],
            vec![("z", 3.0), ("u", 2.0), ("r", 1.0)],
            QueryMetrics {
                ap: 1.0 / 3.0,
                ndcg_cut_10: 2.0 * discount(3) / 2.0,
                recall_10: 1.0,
                recip_rank: 1.0 / 3.0,
            },
        ),
    ];

    for (name, judged, ranking, expected) in cases {
        let (judged, ranking) = (rels(&judged), docs(&ranking));
        let actual = evaluate_query(&judged, &ranking);
        assert_metrics(name, actual, expected);
        // The building blocks must agree with evaluate_query.
        assert_eq!(average_precision(&judged, &ranking), actual.ap, "{name}");
        assert_eq!(ndcg_at(&judged, &ranking, 10), actual.ndcg_cut_10, "{name}");
        assert_eq!(recall_at(&judged, &ranking, 10), actual.recall_10, "{name}");
        assert_eq!(
            reciprocal_rank(&judged, &ranking),
            actual.recip_rank,
            "{name}"
        );
    }
}

#[test]
fn ndcg_and_recall_at_other_cutoffs() {
    let judged = rels(&[("a", 2), ("b", 1)]);
    let ranking = docs(&[("x", 3.0), ("b", 2.0), ("a", 1.0)]);
    assert_eq!(recall_at(&judged, &ranking, 0), 0.0);
    assert_eq!(recall_at(&judged, &ranking, 2), 0.5);
    assert_eq!(ndcg_at(&judged, &ranking, 0), 0.0);
    let expected = discount(2) / (2.0 + discount(2));
    assert!((ndcg_at(&judged, &ranking, 2) - expected).abs() < 1e-12);
}

#[test]
fn duplicate_doc_in_a_slice_counts_once_at_its_better_rank() {
    let judged = rels(&[("r", 1), ("s", 1)]);
    let ranking = docs(&[("r", 3.0), ("x", 2.0), ("r", 1.0)]);
    assert_eq!(trec_ranking(&ranking).len(), 2);
    assert_metrics(
        "duplicate",
        evaluate_query(&judged, &ranking),
        QueryMetrics {
            ap: 0.5,
            ndcg_cut_10: 1.0 / (1.0 + discount(2)),
            recall_10: 0.5,
            recip_rank: 1.0,
        },
    );
}

#[test]
fn query_missing_from_run_counts_as_zero_in_the_mean() {
    let mut qrels = Qrels::new();
    qrels.insert("q1", "d1", 1);
    qrels.insert("q2", "d2", 1);
    qrels.insert("q3", "d3", 0);
    let mut run = Run::new();
    run.push("q1", "d1", 1.0);
    run.push("q3", "d3", 1.0);
    run.push("unjudged", "d1", 1.0);

    let evaluation = evaluate(&qrels, &run);
    assert_eq!(evaluation.n_queries, 3);
    assert_eq!(evaluation.queries_without_results, ["q2"]);
    assert_eq!(evaluation.n_unjudged_run_queries, 1);
    assert_eq!(evaluation.per_query["q2"], QueryMetrics::default());
    assert!(!evaluation.per_query.contains_key("unjudged"));
    assert_metrics(
        "mean",
        evaluation.mean,
        QueryMetrics {
            ap: 1.0 / 3.0,
            ndcg_cut_10: 1.0 / 3.0,
            recall_10: 1.0 / 3.0,
            recip_rank: 1.0 / 3.0,
        },
    );
}

#[test]
fn empty_qrels_give_a_zero_mean_not_nan() {
    let mut run = Run::new();
    run.push("q1", "d1", 1.0);
    let evaluation = evaluate(&Qrels::new(), &run);
    assert_eq!(evaluation.n_queries, 0);
    assert_eq!(evaluation.mean, QueryMetrics::default());
    assert_eq!(evaluation.n_unjudged_run_queries, 1);
}

#[test]
fn push_replaces_the_score_of_a_repeated_doc() {
    let mut run = Run::new();
    run.push("q", "a", 1.0);
    run.push("q", "b", 2.0);
    run.push("q", "a", 3.0);
    assert_eq!(
        run.get("q").unwrap(),
        docs(&[("a", 3.0), ("b", 2.0)]).as_slice()
    );
}

#[test]
fn run_parsing_ignores_the_rank_column() {
    // The ranks say d1 first, but scores (and then ids) decide.
    let text = "q1 Q0 d1 1 0.5 tag\nq1 Q0 d2 2 0.7 tag\nq1 Q0 d3 3 0.7 tag\n";
    let run = Run::from_reader(text.as_bytes(), "run.txt").unwrap();
    let order: Vec<&str> = run
        .ranked("q1")
        .unwrap()
        .iter()
        .map(|doc| doc.doc_id.as_str())
        .collect();
    assert_eq!(order, ["d3", "d2", "d1"]);
}

#[test]
fn qrels_parse_ignores_iter_and_blank_lines() {
    let qrels =
        Qrels::from_reader("\nq1 0 d1 2\n  \nq1 x d2 -1\r\nq2 0 d1 0\n".as_bytes(), "q").unwrap();
    assert_eq!(qrels.len(), 2);
    assert_eq!(qrels.n_judgments(), 3);
    assert_eq!(qrels.get("q1"), Some(&rels(&[("d1", 2), ("d2", -1)])));
    assert_eq!(qrels.query_ids().collect::<Vec<_>>(), ["q1", "q2"]);
}

#[test]
fn written_run_reads_back_with_identical_scores_and_order() {
    let mut run = Run::new();
    run.push("q1", "d10", 0.1 + 0.2);
    run.push("q1", "d9", 0.1 + 0.2);
    run.push("q1", "d1", 1e-300);
    run.push("q2", "x", -3.5);
    run.push("q2", "y", f64::from(0.1f32));
    let mut text = Vec::new();
    run.write_trec(&mut text, "bm25").unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.starts_with("q1 Q0 d9 1 0.30000000000000004 bm25\n"),
        "{text}"
    );

    let back = Run::from_reader(text.as_bytes(), "written").unwrap();
    for query_id in ["q1", "q2"] {
        assert_eq!(run.ranked(query_id), back.ranked(query_id), "{query_id}");
    }
}

#[test]
fn write_trec_refuses_ids_with_whitespace() {
    let mut run = Run::new();
    run.push("q1", "doc one", 1.0);
    let error = run.write_trec(&mut Vec::new(), "tag").unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::InvalidInput);
    assert!(error.to_string().contains("`doc one`"), "{error}");
}

#[test]
fn relevance_level_zero_counts_judged_documents_but_never_unjudged_ones() {
    // As trec_eval -l0: a judged grade of 0 is relevant, an unjudged document (x) and a negative
    // grade (c) are not, in the ranking and in the number of relevant documents alike.
    let judged = rels(&[("a", 0), ("b", 1), ("c", -1)]);
    let ranking = docs(&[("x", 4.0), ("a", 3.0), ("c", 2.0), ("b", 1.0)]);
    let level_0 = EvalOptions { relevance_level: 0 };
    let expected = QueryMetrics {
        ap: (1.0 / 2.0 + 2.0 / 4.0) / 2.0,
        ndcg_cut_10: evaluate_query(&judged, &ranking).ndcg_cut_10,
        recall_10: 1.0,
        recip_rank: 0.5,
    };
    assert_metrics(
        "level 0",
        evaluate_query_with(&judged, &ranking, &level_0),
        expected,
    );
    // A level below 0 counts as 0.
    let below = EvalOptions {
        relevance_level: -2,
    };
    assert_eq!(
        evaluate_query_with(&judged, &ranking, &below),
        evaluate_query_with(&judged, &ranking, &level_0)
    );
    // Level 2: nothing is relevant, so every measure but nDCG is 0.
    let level_2 = EvalOptions { relevance_level: 2 };
    let metrics = evaluate_query_with(&judged, &ranking, &level_2);
    assert_eq!(
        (metrics.ap, metrics.recall_10, metrics.recip_rank),
        (0.0, 0.0, 0.0)
    );
    assert_eq!(metrics.ndcg_cut_10, expected.ndcg_cut_10);
}

/// Parse errors: each message must name the source, the 1-based line and the field.
mod parse_errors {
    use super::*;

    fn qrels_error(text: &str) -> String {
        Qrels::from_reader(text.as_bytes(), "qrels.txt")
            .unwrap_err()
            .to_string()
    }

    fn run_error(text: &str) -> String {
        Run::from_reader(text.as_bytes(), "run.txt")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn qrels_rel_not_an_integer() {
        assert_eq!(
            qrels_error("q1 0 d1 1\n\nq1 0 d2 x\n"),
            "qrels.txt line 3, field `rel`: expected an integer, found `x`"
        );
        // A decimal is truncated as trec_eval truncates it (see `Qrels::parse`); a text
        // without a leading integer is not.
        assert_eq!(
            qrels_error("q1 0 d1 .5\n"),
            "qrels.txt line 1, field `rel`: expected an integer, found `.5`"
        );
    }

    #[test]
    fn qrels_wrong_number_of_columns() {
        assert_eq!(
            qrels_error("q1 0 d1 1\nq1 d2 1\n"),
            "qrels.txt line 2: expected 4 whitespace-separated columns (`qid iter docno rel`), \
             found 3"
        );
    }

    #[test]
    fn qrels_duplicate_judgment() {
        assert_eq!(
            qrels_error("q1 0 d1 1\nq2 0 d1 1\nq1 0 d1 2\n"),
            "qrels.txt line 3, field `docno`: document `d1` appears twice for query `q1` \
             (first on line 1)"
        );
    }

    #[test]
    fn run_wrong_number_of_columns() {
        assert_eq!(
            run_error("q1 Q0 d1 1 0.5\n"),
            "run.txt line 1: expected 6 whitespace-separated columns \
             (`qid Q0 docno rank score tag`), found 5"
        );
    }

    #[test]
    fn run_score_not_a_number() {
        assert_eq!(
            run_error("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 high t\n"),
            "run.txt line 2, field `score`: expected a number, found `high`"
        );
    }

    #[test]
    fn run_score_not_finite() {
        for score in ["NaN", "inf", "-infinity"] {
            assert_eq!(
                run_error(&format!("q1 Q0 d1 1 {score} t\n")),
                format!("run.txt line 1, field `score`: expected a finite number, found `{score}`")
            );
        }
    }

    #[test]
    fn run_duplicate_doc_for_the_same_query() {
        let text = "q1 Q0 d1 1 0.9 t\nq2 Q0 d1 1 0.9 t\nq1 Q0 d2 2 0.8 t\nq1 Q0 d1 3 0.7 t\n";
        assert_eq!(
            run_error(text),
            "run.txt line 4, field `docno`: document `d1` appears twice for query `q1` \
             (first on line 1)"
        );
    }

    #[test]
    fn invalid_utf8_names_the_line() {
        let error = Run::from_reader(&b"q1 Q0 d1 1 0.5 t\nq1 Q0 \xff 2 0.4 t\n"[..], "run.txt")
            .unwrap_err();
        assert!(
            matches!(error, TrecFormatError::Read { line: 2, .. }),
            "{error:?}"
        );
        assert!(
            error
                .to_string()
                .starts_with("run.txt line 2: cannot read the line"),
            "{error}"
        );
    }
}
