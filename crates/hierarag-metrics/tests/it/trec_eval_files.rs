//! trec_eval's own test files (`tests/data/trec_eval`, see its SOURCES.md): we read every input
//! its `make quicktest` reads in the formats we support, and our measures equal the numbers
//! trec_eval printed into its expected outputs (`out.test*`), which are the only source of the
//! expected values here.
//!
//! trec_eval prints four decimals (`%.4f`), so a value agrees when it is within half a unit of
//! the fourth decimal of the printed one. Every input of these tests lists all judged queries in
//! the run, so trec_eval's mean (over queries in both files) and ours (over judged queries) are
//! the same mean; the tests check that too.
//!
//! The regression tests of issue 42, point 7, are named after its cases: trec_eval 10 reads `#`
//! comment lines in qrels and runs and truncates grades that are not integers, where we refused
//! all three; nDCG@10 was -0.0 with no gain in the top 10; and trec_eval's `-l` was missing.

use std::collections::BTreeMap;
use std::path::PathBuf;

use hierarag_metrics::{
    EvalOptions, Evaluation, ParsedQrels, Qrels, QueryMetrics, Run, evaluate, evaluate_with,
};

/// Half a unit of the fourth decimal that trec_eval prints, and a little for the rounding of the
/// printed value itself.
const PRINTED_TOLERANCE: f64 = 0.5e-4 + 1e-12;

/// Every (measure, query) value compared with trec_eval's outputs in
/// [`trec_eval_test_files_score_as_trec_eval_prints`]: 16 from each of the two per-query outputs
/// (four measures for three topics and their mean) and 2 (map and recip_rank, the only measures
/// of ours among its defaults) from each of the four runs checked against `out.test`.
const N_COMPARED: usize = 16 + 16 + 4 * 2;

fn data_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/trec_eval")
        .join(name)
}

fn read_text(name: &str) -> String {
    let path = data_path(name);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

fn parse_qrels(name: &str) -> ParsedQrels {
    Qrels::parse(read_text(name).as_bytes(), name).unwrap_or_else(|error| panic!("{error}"))
}

fn read_run(name: &str) -> Run {
    Run::from_reader(read_text(name).as_bytes(), name).unwrap_or_else(|error| panic!("{error}"))
}

/// A trec_eval output: (measure, query or `all`) → the printed value.
fn read_output(name: &str) -> BTreeMap<(String, String), String> {
    read_text(name)
        .lines()
        .map(|line| {
            let columns: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(columns.len(), 3, "{name}: {line:?}");
            (
                (columns[0].to_owned(), columns[1].to_owned()),
                columns[2].to_owned(),
            )
        })
        .collect()
}

/// Our value of one of trec_eval's measures.
fn measure(metrics: &QueryMetrics, name: &str) -> f64 {
    match name {
        "map" => metrics.ap,
        "recip_rank" => metrics.recip_rank,
        "ndcg_cut_10" => metrics.ndcg_cut_10,
        "recall_10" => metrics.recall_10,
        _ => panic!("not one of our measures: {name}"),
    }
}

/// Compares our measures with those trec_eval printed for every query (when the output was
/// written with `-q`) and for the mean (`all`), and returns the number of values compared;
/// mismatches are collected in `failures`.
fn compare(
    case: &str,
    evaluation: &Evaluation,
    output: &BTreeMap<(String, String), String>,
    measures: &[&str],
    failures: &mut Vec<String>,
) -> usize {
    let per_query = output.keys().any(|(_, query)| query != "all");
    let mut queries: Vec<&str> = if per_query {
        evaluation.per_query.keys().map(String::as_str).collect()
    } else {
        Vec::new()
    };
    queries.push("all");
    let mut n_compared = 0;
    for query in queries {
        let metrics = match query {
            "all" => &evaluation.mean,
            _ => &evaluation.per_query[query],
        };
        for &name in measures {
            let key = (name.to_owned(), query.to_owned());
            let printed = output
                .get(&key)
                .unwrap_or_else(|| panic!("{case}: trec_eval printed no {name} for {query}"));
            let want: f64 = printed.parse().unwrap();
            let got = measure(metrics, name);
            if (got - want).abs() > PRINTED_TOLERANCE {
                failures.push(format!(
                    "{case}: {name} {query}: ours {got}, trec_eval {printed}"
                ));
            }
            n_compared += 1;
        }
    }
    let num_q = &output[&("num_q".to_owned(), "all".to_owned())];
    assert_eq!(num_q, &evaluation.n_queries.to_string(), "{case}: num_q");
    assert!(
        evaluation.queries_without_results.is_empty() && evaluation.n_unjudged_run_queries == 0,
        "{case}: every judged query is in the run, so the two means agree"
    );
    n_compared
}

#[test]
fn trec_eval_test_files_score_as_trec_eval_prints() {
    const ALL_FOUR: &[&str] = &["map", "recip_rank", "ndcg_cut_10", "recall_10"];
    const DEFAULTS: &[&str] = &["map", "recip_rank"];
    let out_test = read_output("out.test");
    let results = read_run("results.test");
    let mut failures = Vec::new();
    let mut n_compared = 0;

    // The Makefile's quicktest lines, one for each input we read.
    let qrels = parse_qrels("qrels.test").qrels;
    let evaluation = evaluate(&qrels, &results);
    n_compared += compare(
        "-m all_trec -q qrels.test results.test",
        &evaluation,
        &read_output("out.test.aq"),
        ALL_FOUR,
        &mut failures,
    );
    n_compared += compare(
        "qrels.test results.test",
        &evaluation,
        &out_test,
        DEFAULTS,
        &mut failures,
    );
    for qrels_name in ["qrels.test.with-comments", "qrels.test.with-floats"] {
        let qrels = parse_qrels(qrels_name).qrels;
        n_compared += compare(
            &format!("{qrels_name} results.test"),
            &evaluate(&qrels, &results),
            &out_test,
            DEFAULTS,
            &mut failures,
        );
    }
    n_compared += compare(
        "qrels.test results.comment.test",
        &evaluate(&qrels, &read_run("results.comment.test")),
        &out_test,
        DEFAULTS,
        &mut failures,
    );
    let level_2 = EvalOptions { relevance_level: 2 };
    n_compared += compare(
        "-m all_trec -q -l2 qrels.rel_level results.test",
        &evaluate_with(&parse_qrels("qrels.rel_level").qrels, &results, &level_2),
        &read_output("out.test.aql"),
        ALL_FOUR,
        &mut failures,
    );

    assert!(
        failures.is_empty(),
        "{} of {n_compared} values differ from trec_eval's:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(n_compared, N_COMPARED);
}

#[test]
fn qrels_with_comment_lines_are_read_like_trec_eval() {
    let plain = parse_qrels("qrels.test");
    let commented = parse_qrels("qrels.test.with-comments");
    assert_eq!(commented.truncated_grades, None);
    // Three `#` lines skipped, every judgment kept, and a `#` inside a document id is data.
    assert_eq!(commented.qrels.n_judgments(), plain.qrels.n_judgments());
    assert_eq!(commented.qrels.get("301").unwrap()["CR#93E-1860"], 0);
    let results = read_run("results.test");
    assert_eq!(
        evaluate(&commented.qrels, &results),
        evaluate(&plain.qrels, &results)
    );

    // Line numbers still count the comment lines; an indented `#` line is a comment too.
    let text = "# assessor A\n  # indented\nq1 0 d1 1\n#q2 0 d1 1\nq1 0 d2 x\n";
    let error = Qrels::from_reader(text.as_bytes(), "qrels.txt").unwrap_err();
    assert_eq!(
        error.to_string(),
        "qrels.txt line 5, field `rel`: expected an integer, found `x`"
    );
    let text = "# assessor A\n  # indented\nq1 0 d1 1\n#q2 0 d1 1\n";
    let qrels = Qrels::from_reader(text.as_bytes(), "qrels.txt").unwrap();
    assert_eq!(qrels.query_ids().collect::<Vec<_>>(), ["q1"]);
}

#[test]
fn qrels_with_float_grades_are_truncated_with_a_warning() {
    let parsed = parse_qrels("qrels.test.with-floats");
    // trec_eval's quicktest expects the output of qrels.test from this file: its five grades
    // `1.5`, `0.3`, `1e+8`, `1.1.11` and `0x37` are read as 1, 0, 1, 1 and 0, the grades
    // qrels.test has on those lines.
    assert_eq!(parsed.qrels, parse_qrels("qrels.test").qrels);
    let truncated = parsed.truncated_grades.expect("a warning");
    assert_eq!(truncated.count, 5);
    assert_eq!(
        (truncated.first_line, truncated.first_text.as_str()),
        (3, "1.5")
    );
    assert_eq!(truncated.first_grade, 1);
    assert_eq!(
        truncated.to_string(),
        "qrels.test.with-floats line 3, field `rel`: grade `1.5` is not an integer and was read \
         as 1, as trec_eval reads it (5 such grades)"
    );

    // Truncation is toward zero; a grade without a leading integer is still an error.
    let parsed = Qrels::parse("q 0 a -1.9\nq 0 b -0.5\nq 0 c +2\n".as_bytes(), "q").unwrap();
    let grades: Vec<i32> = parsed.qrels.get("q").unwrap().values().copied().collect();
    assert_eq!(grades, [-1, 0, 2]);
    assert_eq!(parsed.truncated_grades.unwrap().count, 2);
    for bad in [".5", "nan", "-", "x1", "99999999999"] {
        let error = Qrels::parse(format!("q 0 a {bad}\n").as_bytes(), "q").unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("q line 1, field `rel`: expected an integer, found `{bad}`")
        );
    }
}

#[test]
fn run_with_comment_line_is_read() {
    let plain = read_run("results.test");
    let commented = read_run("results.comment.test");
    for query_id in plain.query_ids() {
        assert_eq!(
            commented.ranked(query_id),
            plain.ranked(query_id),
            "{query_id}"
        );
    }
    assert_eq!(commented.len(), plain.len());

    // Line numbers count the comment lines.
    let text = "# run of 2026-06-01\n\tq1 Q0 d1 1 0.5 t\n  # note\nq1 Q0 d2 2 high t\n";
    let error = Run::from_reader(text.as_bytes(), "run.txt").unwrap_err();
    assert_eq!(
        error.to_string(),
        "run.txt line 4, field `score`: expected a number, found `high`"
    );
}

#[test]
fn ndcg_without_relevant_in_top10_is_positive_zero() {
    // Topic 303 has no relevant document in the top 10 of results.test: trec_eval prints
    // ndcg_cut_10 0.0000 for it, and we printed -0.0000.
    let evaluation = evaluate(&parse_qrels("qrels.test").qrels, &read_run("results.test"));
    let ndcg = evaluation.per_query["303"].ndcg_cut_10;
    assert!(ndcg == 0.0 && ndcg.is_sign_positive(), "{ndcg:?}");
    assert_eq!(format!("{ndcg:.4}"), "0.0000");
    assert_eq!(serde_json::to_string(&ndcg).unwrap(), "0.0");

    let qrels = Qrels::from_reader("q 0 a 1\n".as_bytes(), "q").unwrap();
    let run = Run::from_reader("q Q0 b 1 1.0 t\n".as_bytes(), "r").unwrap();
    let ndcg = evaluate(&qrels, &run).per_query["q"].ndcg_cut_10;
    assert!(ndcg.is_sign_positive(), "{ndcg:?}");
}

#[test]
fn relevance_level_matches_trec_eval_l() {
    // `trec_eval -l2 qrels.rel_level results.test`, per query, as out.test.aql prints it.
    let qrels = parse_qrels("qrels.rel_level").qrels;
    let results = read_run("results.test");
    let level_2 = evaluate_with(&qrels, &results, &EvalOptions { relevance_level: 2 });
    let output = read_output("out.test.aql");
    for (query, metrics) in &level_2.per_query {
        for name in ["map", "recip_rank", "recall_10", "ndcg_cut_10"] {
            let printed: f64 = output[&(name.to_owned(), query.clone())].parse().unwrap();
            let got = measure(metrics, name);
            assert!(
                (got - printed).abs() <= PRINTED_TOLERANCE,
                "{name} {query}: {got} vs trec_eval's {printed}"
            );
        }
    }
    // The level decides AP, recall and RR, but not nDCG, whose gains are the grades.
    let level_1 = evaluate(&qrels, &results);
    assert_eq!(
        level_1,
        evaluate_with(&qrels, &results, &EvalOptions::default())
    );
    for (query, metrics) in &level_2.per_query {
        assert_eq!(metrics.ndcg_cut_10, level_1.per_query[query].ndcg_cut_10);
    }
    assert_ne!(level_2.mean.ap, level_1.mean.ap);
}
