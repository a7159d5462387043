//! `hierarag judge` against a mock OpenAI-compatible server: every answer is graded (its
//! retrieved passages read from the run's index), a reply out of range is repaired once, then
//! recorded as a failure; refusals are graded by rule; the grades go into scores.jsonl (and
//! stay there when the answers are evaluated again); `analyze --metric judge` ranks the
//! categories by them; a rerun resumes; `--benchmark` rates every QA pair; and, with people's
//! ratings of both tasks imported, the agreement equals scikit-learn's and scipy's.

use std::path::Path;

use assert_cmd::Command;
use serde_json::{Value, json};

use crate::support::{BIN, chat_calls, chat_reply, count_lines, ok, start_chat_mock, write_lines};

const CATEGORIES: [&str; 4] = [
    "extractive_span",
    "entity_extraction",
    "fact_aggregation",
    "single_hop_inference",
];
const PER_CATEGORY: usize = 4;

fn hierarag() -> Command {
    let mut command = Command::new(BIN);
    command.env_remove("RUST_LOG");
    command
}

/// The text between `<tag>` and `</tag>` of the judge's prompt.
fn between<'a>(prompt: &'a str, tag: &str) -> &'a str {
    prompt
        .split_once(&format!("<{tag}>\n"))
        .and_then(|(_, rest)| rest.split_once(&format!("\n</{tag}>")))
        .map_or("", |(text, _)| text)
}

/// The judge: `grade=N` in the answer is its correctness; `RANGE` is always out of range,
/// `ONCE` is out of range until repaired; hallucination 2 when the passages are not the
/// index's chunk texts. A pair (the schema has answerability) is rated 2/0/3.
fn reply(body: &Value) -> Value {
    let messages = body["messages"].as_array().unwrap();
    let prompt = messages[1]["content"].as_str().unwrap();
    let schema = &body["response_format"]["json_schema"]["schema"]["properties"];
    if schema.get("answerability").is_some() {
        let documents = between(prompt, "documents");
        let answerability = if documents.contains("The text of doc-") {
            3
        } else {
            0
        };
        return chat_reply(
            &json!({"correctness": 2, "hallucination": 0, "answerability": answerability,
                    "reason": "fine"})
            .to_string(),
        );
    }
    let answer = between(prompt, "answer");
    let passages = between(prompt, "passages");
    let repaired = messages.len() > 2;
    let correctness = if answer.contains("RANGE") || (answer.contains("ONCE") && !repaired) {
        7
    } else {
        answer
            .split_once("grade=")
            .map_or(0, |(_, n)| n[..1].parse::<u8>().unwrap())
    };
    let hallucination = if passages.contains("The text of doc-") {
        0
    } else {
        2
    };
    chat_reply(
        &json!({"correctness": correctness, "hallucination": hallucination, "reason": "checked"})
            .to_string(),
    )
}

/// The grade question `i` of category `k` gets.
fn grade(k: usize, i: usize) -> u8 {
    ((k + i) % 4) as u8
}

/// benchmark.jsonl, a corpus and its index, the main system's answers and scores.
fn write_run(root: &Path) -> Vec<String> {
    let mut benchmark = Vec::new();
    let mut corpus = Vec::new();
    let mut answers = Vec::new();
    let mut scores = Vec::new();
    let mut ids = Vec::new();
    for (k, category) in CATEGORIES.iter().enumerate() {
        for i in 0..PER_CATEGORY {
            let id = format!("rq2-qc-fine-{category}-{i:02}");
            let doc = format!("doc-{}", benchmark.len());
            corpus.push(json!({"id": doc, "text": format!("The text of {doc}: a fact {k} {i}.")}));
            benchmark.push(json!({
                "id": id, "question": format!("Question {i} about {category}?"),
                "answer": "ref", "doc_ids": [doc], "design": "rq2", "set": "qc/fine",
                "categories": [{"dimension": "qc", "level": "fine", "category": category}],
                "persona": {}
            }));
            let (text, refused) = match (k, i) {
                (0, 1) => ("RANGE grade=3".to_string(), false),
                (1, 2) => (format!("ONCE grade={}", grade(k, i)), false),
                (2, 3) => ("I cannot answer from the given context.".to_string(), true),
                _ => (format!("An answer, grade={}", grade(k, i)), false),
            };
            answers.push(json!({
                "id": id, "question": format!("Question {i} about {category}?"),
                "retriever": "bm25",
                "retrieved": [{"chunk_id": format!("{doc}#0"), "doc_id": doc, "score": 1.0}],
                "doc_ids": [doc], "doc_scores": [1.0], "answer": text, "refused": refused,
                "llm": {"backend": "openai", "model": "m", "params": {}},
                "usage": {"prompt_tokens": 1, "completion_tokens": 1}
            }));
            scores.push(json!({
                "id": id, "ap": 1.0, "ndcg_10": 1.0, "recall_10": 1.0, "rr": 1.0,
                "cs": 0.5, "rouge1": 0.3, "bleu": 10.0, "refused": refused
            }));
            ids.push(id);
        }
    }
    write_lines(&root.join("benchmark.jsonl"), &benchmark);
    write_lines(&root.join("corpus.jsonl"), &corpus);
    write_lines(&root.join("answers.jsonl"), &answers);
    write_lines(&root.join("scores.jsonl"), &scores);
    ok(hierarag()
        .args(["index", "-q", "--corpus"])
        .arg(root.join("corpus.jsonl"))
        .arg("--out")
        .arg(root.join("index")));
    ids
}

fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn answers_are_graded_with_their_passages_and_the_grades_are_a_metric() {
    let (url, calls) = start_chat_mock(reply);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ids = write_run(root);
    let config = root.join("judge.toml");
    std::fs::write(
        &config,
        format!(
            "[judge]\nrepairs = 1\n[judge.llm]\nbackend = \"openai\"\nmodel = \"mock-1\"\n\
base_urls = [\"{url}\"]\n"
        ),
    )
    .unwrap();
    let judge = || {
        hierarag()
            .arg("judge")
            .arg(root)
            .arg("--config")
            .arg(&config)
            .output()
            .unwrap()
    };
    let out = judge();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("1 item failed"), "{stderr}");
    let failures = records(&root.join("judge.failures.jsonl"));
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0]["item_id"], ids[1]);
    let reason = failures[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("correctness 7 is not a whole number from 0 to 3")
            && reason.contains("after 1 repair message"),
        "{reason}"
    );
    // The refusal is graded without a call; every other answer once, the repaired one twice,
    // the failed one twice.
    let n = ids.len();
    assert_eq!(chat_calls(&calls), n - 1 + 2);

    let judgements = records(&root.join("judgements.jsonl"));
    assert_eq!(judgements.len(), n - 1);
    let scores = records(&root.join("scores.jsonl"));
    assert_eq!(scores.len(), n);
    for (q, id) in ids.iter().enumerate() {
        let (k, i) = (q / PER_CATEGORY, q % PER_CATEGORY);
        let score = &scores[q];
        assert_eq!(score["id"], *id);
        if (k, i) == (0, 1) {
            assert!(score.get("judge").is_none(), "{score}");
            continue;
        }
        let expected = if (k, i) == (2, 3) { 0 } else { grade(k, i) };
        assert_eq!(score["judge_correctness"], expected, "{score}");
        // The passages the judge saw were the index's chunk texts.
        assert_eq!(score["judge_hallucination"], 0, "{score}");
        let normalised = score["judge"].as_f64().unwrap();
        assert!(
            (normalised - f64::from(expected) / 3.0).abs() < 1e-12,
            "{score}"
        );
        let judgement = judgements.iter().find(|j| j["id"] == *id).unwrap();
        assert_eq!(judgement["judge"]["model"], "mock-1");
        if (k, i) == (2, 3) {
            assert_eq!(judgement["by_rule"], true);
            assert_eq!(judgement["reason"], "refused an answerable question");
        } else {
            assert_eq!(judgement["reason"], "checked");
        }
    }

    // A rerun resumes: only the failed answer is tried again, from the cache.
    let before = chat_calls(&calls);
    let out = judge();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("({} from an earlier pass)", n - 1)),
        "{stderr}"
    );
    assert_eq!(chat_calls(&calls), before);

    // The judge as the analysed metric: each category's mean is its questions' grades / 3.
    ok(hierarag()
        .args([
            "analyze",
            "-q",
            "--metric",
            "judge",
            "--bootstrap",
            "0",
            "--permutations",
            "0",
        ])
        .arg(root));
    let analysis: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("analysis.json")).unwrap())
            .unwrap();
    assert_eq!(analysis["settings"]["metric"], "judge");
    let fine = analysis["levels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["set"] == "qc/fine" && l["level"] == "fine")
        .expect("the fine level of qc");
    assert_eq!(analysis["counts"]["left_out"].as_array().unwrap().len(), 1);
    for (k, category) in CATEGORIES.iter().enumerate() {
        let stats = fine["categories"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["category"] == *category)
            .unwrap();
        let grades: Vec<f64> = (0..PER_CATEGORY)
            .filter(|&i| (k, i) != (0, 1))
            .map(|i| f64::from(if (k, i) == (2, 3) { 0 } else { grade(k, i) }) / 3.0)
            .collect();
        let mean = grades.iter().sum::<f64>() / grades.len() as f64;
        let got = stats["metric"]["value"].as_f64().unwrap();
        assert!((got - mean).abs() < 1e-12, "{category}: {got} vs {mean}");
        assert!((stats["means"]["judge"].as_f64().unwrap() - mean).abs() < 1e-12);
    }
    ok(hierarag().args(["report", "-q"]).arg(root));

    // Evaluating the answers again keeps the grades in the new scores.
    let before = std::fs::read_to_string(root.join("scores.jsonl")).unwrap();
    std::fs::remove_file(root.join("scores.jsonl")).unwrap();
    ok(hierarag()
        .args(["evaluate", "-q", "--benchmark"])
        .arg(root.join("benchmark.jsonl"))
        .arg("--answers")
        .arg(root.join("answers.jsonl")));
    let again = records(&root.join("scores.jsonl"));
    for (old, new) in records_of(&before).iter().zip(&again) {
        for field in ["judge", "judge_correctness", "judge_hallucination"] {
            assert_eq!(old.get(field), new.get(field), "{new}");
        }
    }

    // The benchmark's pairs, rated against their documents (from the index: no corpus).
    ok(hierarag()
        .arg("judge")
        .arg(root)
        .arg("--config")
        .arg(&config)
        .arg("--benchmark-only"));
    let ratings = records(&root.join("benchmark.judge.jsonl"));
    assert_eq!(ratings.len(), n);
    for rating in &ratings {
        assert_eq!(
            (
                &rating["correctness"],
                &rating["hallucination"],
                &rating["answerability"]
            ),
            (&json!(2), &json!(0), &json!(3)),
            "{rating}"
        );
    }
    assert_eq!(count_lines(&root.join("judgements.jsonl")), n - 1);
}

fn records_of(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A judge that never fails: an answer gets the grade it names (`grade=N`) and hallucination
/// `i % 3`; a pair is rated from its question's number `i` and its category's length.
fn varied_reply(body: &Value) -> Value {
    let messages = body["messages"].as_array().unwrap();
    let prompt = messages[1]["content"].as_str().unwrap();
    let question = between(prompt, "question");
    let i: usize = question
        .strip_prefix("Question ")
        .and_then(|rest| rest.split_once(' '))
        .map(|(n, _)| n.parse().unwrap())
        .unwrap();
    let k = question.len();
    let schema = &body["response_format"]["json_schema"]["schema"]["properties"];
    let reply = if schema.get("answerability").is_some() {
        json!({"correctness": (i + k) % 4, "hallucination": (i * k) % 3,
               "answerability": 3 - (i % 4), "reason": "rated"})
    } else {
        let answer = between(prompt, "answer");
        let correctness = answer
            .split_once("grade=")
            .map_or(0, |(_, n)| n[..1].parse::<u8>().unwrap());
        json!({"correctness": correctness, "hallucination": i % 3, "reason": "graded"})
    };
    chat_reply(&reply.to_string())
}

/// Grades the run's answers with the mock judge `mock-2` at `url` (`hierarag judge` with
/// `args`), and gives the run the manifest `annotate` reads its seed from.
fn judge_as_mock_2(root: &Path, url: &str, args: &[&str]) {
    let config = root.join("judge.toml");
    std::fs::write(
        &config,
        format!(
            "[judge]\n[judge.llm]\nbackend = \"openai\"\nmodel = \"mock-2\"\n\
base_urls = [\"{url}\"]\n"
        ),
    )
    .unwrap();
    ok(hierarag()
        .args(["judge", "-q"])
        .arg(root)
        .arg("--config")
        .arg(&config)
        .args(args));
    let manifest = json!({"tool": "hierarag", "version": "0.1.0", "config": {}, "seed": 42,
                          "stages": {}});
    std::fs::write(root.join("manifest.json"), manifest.to_string()).unwrap();
}

/// `hierarag annotate ARGS[0] ROOT ARGS[1..]`, checked to succeed: its stdout and stderr.
fn annotate(root: &Path, args: &[&str]) -> (String, String) {
    let mut command = hierarag();
    command
        .arg("annotate")
        .arg(args[0])
        .arg(root)
        .args(&args[1..]);
    ok(&mut command)
}

/// A person's rating: the judge's, moved by −1, 0 or +1 as `seed` says, within `0..=max`.
fn person(judge: u8, max: u8, seed: usize) -> u8 {
    let moved = i64::from(judge) + (seed % 3) as i64 - 1;
    moved.clamp(0, i64::from(max)) as u8
}

/// The judge and the metrics against two people who rated both tasks (imported by CSV): every
/// κ and ρ in agreement.json equals scikit-learn's `cohen_kappa_score(weights="quadratic",
/// labels=range(max + 1))` and scipy's `spearmanr`, computed here from the same ratings; the
/// report shows them.
#[test]
fn the_judge_and_the_metrics_agree_with_people_as_scikit_learn_and_scipy_say() {
    let (url, _calls) = start_chat_mock(varied_reply);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ids = write_run(root);
    // Scores that differ between answers, so that every metric has a ρ.
    let scores: Vec<Value> = ids
        .iter()
        .enumerate()
        .map(|(q, id)| {
            json!({"id": id, "ap": 1.0, "ndcg_10": 1.0, "recall_10": 1.0, "rr": 1.0,
                   "cs": ((q * 7) % 16) as f64 / 16.0, "rouge1": ((q * 5) % 11) as f64 / 11.0,
                   "bleu": ((q * 3) % 13) as f64 * 5.0, "refused": q == 11})
        })
        .collect();
    write_lines(&root.join("scores.jsonl"), &scores);
    judge_as_mock_2(root, &url, &["--benchmark"]);
    let annotate = |args: &[&str]| annotate(root, args);
    let n = ids.len();
    annotate(&[
        "sample",
        "-q",
        "--n",
        &n.to_string(),
        "--category-subset",
        "0",
        "--answers",
        "main",
        "--corpus",
        root.join("corpus.jsonl").to_str().unwrap(),
    ]);
    annotate(&["annotators", "--add", "alice", "--add", "bob"]);
    let items = hierarag_annotate::Store::open(&root.join("annotations.sqlite"))
        .unwrap()
        .items()
        .unwrap();
    assert_eq!(items.len(), 2 * n);

    // The judge's values by item, and two people near them.
    let pair_ratings: Vec<Value> = records(&root.join("benchmark.judge.jsonl"));
    let grades: Vec<Value> = records(&root.join("judgements.jsonl"));
    let scores = records(&root.join("scores.jsonl"));
    assert_eq!((pair_ratings.len(), grades.len()), (n, n));
    let mut csv = String::from(
        "item_id,annotator,correctness,hallucination,answerability,category_pick,note\n",
    );
    // (task, scale, max) → (judge, alice, bob) per item, in item order.
    let mut columns: std::collections::BTreeMap<(String, String, u8), Vec<[u8; 3]>> =
        Default::default();
    // The answer items' mean correctness and scores, for the metrics' ρ.
    let mut answered: Vec<(f64, Value)> = Vec::new();
    for (position, item) in items.iter().enumerate() {
        let (task, judge, scales): (&str, Vec<u8>, &[(&str, u8)]) = match &item.answer {
            None => {
                let rating = pair_ratings
                    .iter()
                    .find(|r| r["id"] == item.item_id)
                    .unwrap();
                let values = ["correctness", "hallucination", "answerability"]
                    .map(|s| rating[s].as_u64().unwrap() as u8);
                (
                    "benchmark",
                    values.to_vec(),
                    &[
                        ("correctness", 3),
                        ("hallucination", 2),
                        ("answerability", 3),
                    ],
                )
            }
            Some(answer) => {
                assert_eq!(answer.system, "main");
                let grade = grades
                    .iter()
                    .find(|g| g["id"] == answer.question_id)
                    .unwrap();
                let values =
                    ["correctness", "hallucination"].map(|s| grade[s].as_u64().unwrap() as u8);
                (
                    "answers",
                    values.to_vec(),
                    &[("correctness", 3), ("hallucination", 2)],
                )
            }
        };
        let mut people = [Vec::new(), Vec::new()];
        for (s, (scale, max)) in scales.iter().enumerate() {
            let alice = person(judge[s], *max, position * 7 + s);
            let bob = person(judge[s], *max, position * 5 + 2 * s + 1);
            people[0].push(alice.to_string());
            people[1].push(bob.to_string());
            columns
                .entry((task.into(), (*scale).into(), *max))
                .or_default()
                .push([judge[s], alice, bob]);
        }
        for (name, values) in ["alice", "bob"].iter().zip(&mut people) {
            values.resize(3, String::new());
            csv.push_str(&format!("{},{name},{},,\n", item.item_id, values.join(",")));
        }
        if let Some(answer) = &item.answer {
            let [_, alice, bob] = *columns[&("answers".into(), "correctness".into(), 3)]
                .last()
                .unwrap();
            let score = scores
                .iter()
                .find(|s| s["id"] == answer.question_id)
                .unwrap();
            answered.push(((f64::from(alice) + f64::from(bob)) / 2.0, score.clone()));
        }
    }
    let filled = root.join("filled.csv");
    std::fs::write(&filled, &csv).unwrap();
    annotate(&["import", "-q", "--file", filled.to_str().unwrap()]);
    let (printed, _) = annotate(&["agreement"]);
    assert!(printed.contains("mock-2"), "{printed}");
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("agreement.json")).unwrap())
            .unwrap();
    let judge = &written["judge"];
    assert_eq!(judge["judge"], "mock-2 (openai)");
    assert_eq!(written["n_answer_items"], n);

    // scikit-learn and scipy on the same ratings.
    let mut cases = Vec::new();
    for ((task, scale, max), rows) in &columns {
        let column = |c: usize| rows.iter().map(|r| r[c]).collect::<Vec<u8>>();
        let mean: Vec<f64> = rows
            .iter()
            .map(|r| (f64::from(r[1]) + f64::from(r[2])) / 2.0)
            .collect();
        cases.push(
            json!({"task": task, "scale": scale, "max": max, "judge": column(0),
                          "alice": column(1), "bob": column(2), "mean": mean}),
        );
    }
    let metric_cases: Vec<Value> = ["cs", "rouge1", "bleu", "judge"]
        .iter()
        .map(|metric| {
            json!({"metric": metric,
                   "values": answered.iter().map(|(_, s)| s[*metric].as_f64().unwrap())
                       .collect::<Vec<_>>(),
                   "mean": answered.iter().map(|(m, _)| *m).collect::<Vec<_>>()})
        })
        .collect();
    let script = r#"
import json, math, sys
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score
data = json.load(sys.stdin)
def kappa(a, b, top):
    return float(cohen_kappa_score(a, b, labels=list(range(top + 1)), weights="quadratic"))
def rho(x, y):
    r = spearmanr(x, y)
    return [float(r.statistic), float(r.pvalue)]
out = {"scales": [], "metrics": []}
for case in data["scales"]:
    rounded = [math.floor(m + 0.5) for m in case["mean"]]
    out["scales"].append({
        "task": case["task"], "scale": case["scale"],
        "alice": [kappa(case["judge"], case["alice"], case["max"])] + rho(case["judge"], case["alice"]),
        "bob": [kappa(case["judge"], case["bob"], case["max"])] + rho(case["judge"], case["bob"]),
        "mean": [kappa(case["judge"], rounded, case["max"])] + rho(case["judge"], case["mean"]),
        "human_kappa": kappa(case["alice"], case["bob"], case["max"]),
    })
for case in data["metrics"]:
    out["metrics"].append({"metric": case["metric"], "rho": rho(case["values"], case["mean"])})
print(json.dumps(out))
"#;
    let expected = crate::support::json_of(
        std::process::Command::new(crate::support::python()).args(["-c", script]),
        Some(&json!({"scales": cases, "metrics": metric_cases})),
    );

    let close = |got: &Value, want: &Value, what: &str| {
        let (got, want) = (got.as_f64().unwrap(), want.as_f64().unwrap());
        assert!(
            (got - want).abs() <= 1e-12 * want.abs().max(1e-300) || (got - want).abs() < 1e-15,
            "{what}: {got} vs {want}"
        );
    };
    let mut checked = 0;
    for case in expected["scales"].as_array().unwrap() {
        let task = judge["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["task"] == case["task"])
            .unwrap();
        let scale = task["scales"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["scale"] == case["scale"])
            .unwrap();
        let what = format!("{} {}", case["task"], case["scale"]);
        assert_eq!(scale["n_items"], n, "{what}");
        close(&scale["human_kappa"], &case["human_kappa"], &what);
        let versus = scale["annotators"]
            .as_array()
            .unwrap()
            .iter()
            .chain(std::iter::once(&scale["mean"]));
        for (vs, who) in versus.zip(["alice", "bob", "mean"]) {
            let what = format!("{what} against {who}");
            assert_eq!(vs["n"], n, "{what}");
            close(&vs["kappa"], &case[who][0], &format!("{what}: κ"));
            close(&vs["spearman"], &case[who][1], &format!("{what}: ρ"));
            close(&vs["p"], &case[who][2], &format!("{what}: p"));
            checked += 1;
        }
    }
    assert_eq!(checked, 5 * 3);
    for case in expected["metrics"].as_array().unwrap() {
        let metric = judge["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["metric"] == case["metric"] && m["dimension"] == "all")
            .unwrap();
        assert_eq!(metric["n"], n);
        close(
            &metric["rho"],
            &case["rho"][0],
            &format!("{}: ρ", case["metric"]),
        );
        close(
            &metric["p"],
            &case["rho"][1],
            &format!("{}: p", case["metric"]),
        );
    }

    // The analysis carries it and the report shows both tables.
    ok(hierarag()
        .args(["analyze", "-q", "--bootstrap", "0", "--permutations", "0"])
        .arg(root));
    ok(hierarag().args(["report", "-q"]).arg(root));
    let md = std::fs::read_to_string(root.join("report.md")).unwrap();
    assert!(
        md.contains("The judge and the metrics against people (judge: mock-2 (openai))"),
        "{md}"
    );
    let kappa = judge["tasks"][1]["scales"][0]["mean"]["kappa"]
        .as_f64()
        .unwrap();
    assert!(
        md.contains(&format!(
            "| answers | correctness | mean | {n} | {kappa:.3} |"
        )),
        "{md}"
    );
    assert!(
        md.contains("Spearman ρ with the people's correctness"),
        "{md}"
    );
    assert!(md.contains(judge["verdict"].as_str().unwrap()), "{md}");
}

/// People rate the answers to a random half of the questions, one level below the judge on
/// most (the judge is lenient); `annotate agreement --width 0.3` writes ppi.json, whose
/// prediction-powered means equal ppi-python's `ppi_mean_pointestimate` and `ppi_mean_ci` on
/// the same numbers, beside the judge-only and people-only means; the report shows them.
#[test]
fn judge_means_corrected_by_a_sample_of_ratings_equal_ppi_python() {
    let (url, _calls) = start_chat_mock(varied_reply);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ids = write_run(root);
    judge_as_mock_2(root, &url, &[]);
    let annotate = |args: &[&str]| annotate(root, args);
    let half = ids.len() / 2;
    let (planned, _) = annotate(&[
        "sample",
        "-q",
        "--n",
        &half.to_string(),
        "--category-subset",
        "0",
        "--answers",
        "main",
        "--width",
        "0.3",
        "--corpus",
        root.join("corpus.jsonl").to_str().unwrap(),
    ]);
    assert!(
        planned.contains("correctness of main: 43 rated answers for the width asked (the people-only bound, before any rating)"),
        "{planned}"
    );
    annotate(&["annotators", "--add", "alice"]);
    let items = hierarag_annotate::Store::open(&root.join("annotations.sqlite"))
        .unwrap()
        .items()
        .unwrap();
    let grades = records(&root.join("judgements.jsonl"));
    let judge_of = |id: &str| -> [u8; 2] {
        let grade = grades.iter().find(|g| g["id"] == id).unwrap();
        ["correctness", "hallucination"].map(|s| grade[s].as_u64().unwrap() as u8)
    };
    let mut csv = String::from(
        "item_id,annotator,correctness,hallucination,answerability,category_pick,note\n",
    );
    // The people's correctness of each rated answer, by question id.
    let mut people = std::collections::HashMap::new();
    for (position, item) in items.iter().enumerate() {
        let Some(answer) = &item.answer else { continue };
        let [correctness, hallucination] = judge_of(&answer.question_id);
        let rated = if position % 4 == 0 {
            correctness
        } else {
            correctness.saturating_sub(1)
        };
        people.insert(answer.question_id.clone(), rated);
        csv.push_str(&format!(
            "{},alice,{rated},{hallucination},,,\n",
            item.item_id
        ));
    }
    assert_eq!(people.len(), half);
    let filled = root.join("filled.csv");
    std::fs::write(&filled, &csv).unwrap();
    annotate(&["import", "-q", "--file", filled.to_str().unwrap()]);
    let (printed, _) = annotate(&["agreement", "--width", "0.3"]);
    assert!(
        printed.contains("The judge corrected by the people (PPI++, 95% intervals"),
        "{printed}"
    );
    let ppi: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("ppi.json")).unwrap()).unwrap();
    let overall = &ppi["scales"][0]["systems"][0]["overall"];
    assert_eq!(ppi["scales"][0]["scale"], "correctness");
    assert_eq!(overall["n_rated"], half);
    assert_eq!(overall["n_judged"], ids.len());

    // ppi-python on the same numbers.
    let y: Vec<f64> = ids
        .iter()
        .filter_map(|id| people.get(id).map(|p| f64::from(*p) / 3.0))
        .collect();
    let yhat: Vec<f64> = ids
        .iter()
        .filter(|id| people.contains_key(*id))
        .map(|id| f64::from(judge_of(id)[0]) / 3.0)
        .collect();
    let unlabeled: Vec<f64> = ids
        .iter()
        .filter(|id| !people.contains_key(*id))
        .map(|id| f64::from(judge_of(id)[0]) / 3.0)
        .collect();
    let script = r#"
import json, sys
import numpy as np
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
d = json.load(sys.stdin)
y, yhat, unl = (np.array(d[k]) for k in ("y", "yhat", "unlabeled"))
lo, hi = ppi_mean_ci(y, yhat, unl, alpha=0.05)
print(json.dumps({"estimate": float(ppi_mean_pointestimate(y, yhat, unl)[0]),
                  "ci": [float(np.ravel(lo)[0]), float(np.ravel(hi)[0])],
                  "judge": float(np.concatenate([yhat, unl]).mean()), "people": float(y.mean())}))
"#;
    let expected = crate::support::json_of(
        std::process::Command::new(crate::support::python()).args(["-c", script]),
        Some(&json!({"y": y, "yhat": yhat, "unlabeled": unlabeled})),
    );
    let close = |got: &Value, want: &Value, what: &str| {
        let (got, want) = (got.as_f64().unwrap(), want.as_f64().unwrap());
        assert!(
            (got - want).abs() < 1e-9,
            "{what}: {got} vs ppi-python's {want}"
        );
    };
    let estimate = &overall["ppi"];
    close(&estimate["estimate"], &expected["estimate"], "estimate");
    close(&estimate["ci"][0], &expected["ci"][0], "interval low");
    close(&estimate["ci"][1], &expected["ci"][1], "interval high");
    close(
        &overall["judge_only"]["mean"],
        &expected["judge"],
        "judge-only mean",
    );
    close(
        &overall["people_only"]["mean"],
        &expected["people"],
        "people-only mean",
    );
    // The lenient judge's mean is above the people's; PPI pulls it back down.
    assert!(expected["judge"].as_f64() > expected["people"].as_f64());
    assert!(estimate["estimate"].as_f64() < overall["judge_only"]["mean"].as_f64());
    // How many ratings a width of 0.3 needs, from the ratings so far.
    assert_eq!(
        ppi["plans"][0]["needed"]["method"], "pilot",
        "{:#}",
        ppi["plans"]
    );

    ok(hierarag()
        .args(["analyze", "-q", "--bootstrap", "0", "--permutations", "0"])
        .arg(root));
    ok(hierarag().args(["report", "-q"]).arg(root));
    let md = std::fs::read_to_string(root.join("report.md")).unwrap();
    for needle in [
        "## The judge corrected by people",
        "### correctness per system",
        r"| PPI \[CI\] | judge only \[CI\] | people only \[CI\] |",
        "### correctness per category",
    ] {
        assert!(md.contains(needle), "{needle} not in {md}");
    }
}

/// Issue 56, point 6: ratings are of the answer they rated. After the system answers three of
/// the rated questions again, differently, `annotate agreement` leaves those ratings out of
/// the judge's agreement and PPI, and says so (stderr and the PPI's notes).
#[test]
fn ratings_of_answers_the_system_no_longer_gives_are_left_out_of_ppi() {
    let (url, _calls) = start_chat_mock(varied_reply);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ids = write_run(root);
    judge_as_mock_2(root, &url, &[]);
    let corpus = root.join("corpus.jsonl");
    let half = (ids.len() / 2).to_string();
    annotate(
        root,
        &[
            "sample",
            "-q",
            "--n",
            &half,
            "--category-subset",
            "0",
            "--answers",
            "main",
            "--corpus",
            corpus.to_str().unwrap(),
        ],
    );
    annotate(root, &["annotators", "--add", "alice"]);
    let items = hierarag_annotate::Store::open(&root.join("annotations.sqlite"))
        .unwrap()
        .items()
        .unwrap();
    let mut csv = String::from(
        "item_id,annotator,correctness,hallucination,answerability,category_pick,note\n",
    );
    let mut rated = Vec::new();
    for item in &items {
        let Some(answer) = &item.answer else { continue };
        csv.push_str(&format!("{},alice,2,0,,,\n", item.item_id));
        rated.push(answer.question_id.clone());
    }
    let filled = root.join("filled.csv");
    std::fs::write(&filled, &csv).unwrap();
    annotate(root, &["import", "-q", "--file", filled.to_str().unwrap()]);
    let n_rated = |root: &Path| -> Value {
        serde_json::from_slice(&std::fs::read(root.join("ppi.json")).unwrap()).unwrap()
    };
    let (_, stderr) = annotate(root, &["agreement"]);
    assert!(!stderr.contains("left out"), "{stderr}");
    let before = n_rated(root);
    assert_eq!(
        before["scales"][0]["systems"][0]["overall"]["n_rated"],
        rated.len()
    );

    // The system is answered again: three of the rated answers change.
    let changed: Vec<&String> = rated.iter().take(3).collect();
    let answers: Vec<Value> = records(&root.join("answers.jsonl"))
        .into_iter()
        .map(|mut answer| {
            if changed.iter().any(|id| answer["id"] == id.as_str()) {
                answer["answer"] = json!("a different answer, given later");
            }
            answer
        })
        .collect();
    write_lines(&root.join("answers.jsonl"), &answers);
    let (_, stderr) = annotate(root, &["agreement"]);
    let said = "3 ratings of 3 answers left out of the judge's agreement and PPI";
    assert!(stderr.contains(said), "{stderr}");
    let after = n_rated(root);
    assert_eq!(
        after["scales"][0]["systems"][0]["overall"]["n_rated"],
        rated.len() - 3
    );
    assert!(
        after["notes"][0].as_str().unwrap().contains(said),
        "{after}"
    );
}
