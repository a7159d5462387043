//! `hierarag judge` against a mock OpenAI-compatible server: every answer is graded (its
//! retrieved passages read from the run's index), a reply out of range is repaired once, then
//! recorded as a failure; refusals are graded by rule; the grades go into scores.jsonl (and
//! stay there when the answers are evaluated again); `analyze --metric judge` ranks the
//! categories by them; a rerun resumes; `--benchmark` rates every QA pair.

use std::path::Path;
use std::sync::atomic::Ordering;

use assert_cmd::Command;
use serde_json::{Value, json};

use crate::support::{BIN, chat_reply, count_lines, ok, start_chat_mock, write_lines};

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
            "[judge]\nretries = 1\n[judge.llm]\nbackend = \"openai\"\nmodel = \"mock-1\"\n\
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
    assert_eq!(calls.load(Ordering::SeqCst), n - 1 + 2);

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
    let before = calls.load(Ordering::SeqCst);
    let out = judge();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("({} from an earlier pass)", n - 1)),
        "{stderr}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), before);

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
