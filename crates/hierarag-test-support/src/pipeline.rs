//! The model server of the main job's tests: deterministic replies read off the request, so
//! that two runs write the same bytes. Generation: candidates made from the document's words;
//! filter: every candidate but the second passes; answering: the first passage's first words
//! (refusing most questions of the unanswerable category, and a few answerable ones); judge: a
//! pair from a castle document rates poorly; tagger: a category by the question's length;
//! embeddings: hashed bags of words; and the corpus it answers about ([`write_corpus`]). Usage
//! is billed as a provider would: the messages' words × 1.35 and a reply's JSON schema
//! (`response_format`) at four bytes a token.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::mock::Reply;

thread_local! {
    /// The prompt tokens of the request the mock is answering on this thread: its words × 1.35.
    static PROMPT_TOKENS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// A chat completion whose usage counts the request's and the reply's words × 1.35, as a
/// server's tokenizer would roughly.
fn reply(text: String) -> Reply {
    let prompt = PROMPT_TOKENS.with(std::cell::Cell::get);
    let completion = (text.split_whitespace().count() as f64 * 1.35).round() as u64;
    Reply::json(
        200,
        json!({
            "id": "mock",
            "object": "chat.completion",
            "model": "mock-1",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion}
        }),
    )
}

fn words_after<'a>(text: &'a str, marker: &str, n: usize) -> Vec<&'a str> {
    text.split(marker)
        .nth(1)
        .unwrap_or("")
        .split_whitespace()
        .take(n)
        .collect()
}

pub fn chat(body: &Value) -> Reply {
    let messages = body["messages"].as_array().unwrap();
    let words: usize = messages
        .iter()
        .map(|m| {
            m["content"]
                .as_str()
                .unwrap_or("")
                .split_whitespace()
                .count()
        })
        .sum();
    // A reply's JSON schema is billed as prompt tokens too (about four bytes a token).
    let schema_bytes = body["response_format"]["json_schema"]["schema"]
        .as_object()
        .map_or(0, |_| {
            body["response_format"]["json_schema"]["schema"]
                .to_string()
                .len()
        });
    PROMPT_TOKENS.with(|p| p.set((words as f64 * 1.35 + schema_bytes as f64 / 4.0).round() as u64));
    let system = messages[0]["content"].as_str().unwrap_or("");
    let user = messages.last().unwrap()["content"].as_str().unwrap_or("");
    // Only generation fails on the marked document (answers may still retrieve it).
    if user.contains("FAILME") && system.contains("question-answer pairs") {
        return Reply::json(
            400,
            json!({"error": {"message": "this document is refused by the mock"}}),
        );
    }
    // The tagger: a category picked by the question's length, so that the questions spread
    // over every category offered.
    if let Some(names) = body["response_format"]["json_schema"]["schema"]["properties"]["category"]
        ["enum"]
        .as_array()
    {
        let question = user
            .rsplit_once("<question>\n")
            .and_then(|(_, rest)| rest.split_once("\n</question>"))
            .map_or(user, |(text, _)| text);
        let pick = &names[question.len() % names.len()];
        return reply(json!({ "category": pick }).to_string());
    }
    if system.contains("grader") {
        // The judge: a pair from a castle document has a poor reference; every answer is
        // mostly correct.
        let rating = if body["response_format"]["json_schema"]["schema"]["properties"]
            .get("answerability")
            .is_some()
        {
            let poor = user.contains("castle");
            json!({"correctness": if poor { 1 } else { 3 }, "hallucination": 0,
                   "answerability": 3, "reason": if poor { "vague" } else { "fine" }})
        } else {
            json!({"correctness": 2, "hallucination": 0, "reason": "close"})
        };
        return reply(rating.to_string());
    }
    if system.contains("reviewer") {
        let n = user.matches("Candidate ").count();
        let verdicts: Vec<Value> = (1..=n)
            .map(|c| {
                json!({"candidate": c, "faithful": c != 2, "fits_category": true,
                       "standalone": true, "reason": if c == 2 { "unsupported" } else { "fine" }})
            })
            .collect();
        return reply(json!({ "verdicts": verdicts }).to_string());
    }
    // A Korean corpus must be asked for Korean pairs (docs/design.md, "Languages"); without
    // the language line the mock replies what no generator can read.
    let korean = user.chars().any(|c| ('\u{ac00}'..='\u{d7a3}').contains(&c));
    if korean && (system.contains("question-answer pairs") || system.contains("reviewer")) {
        let line = "- language = Korean (한국어): the question and its answer are written in \
Korean (한국어), the language of the documents\n";
        if !user.contains(line) {
            return reply("no language line".into());
        }
    }
    if system.contains("question-answer pairs") {
        let k: usize = words_after(user, "Write ", 1)[0].parse().unwrap();
        // Candidates of a real model's length (a question of a dozen words, an answer of
        // twenty), so that the filter's prompt, which shows them, is as long as with one.
        let words = words_after(user, "<document number=\"1\">", 30);
        let constraint = words_after(user, "characteristics:\n-", 3).join(" ");
        let candidates: Vec<Value> = (0..k)
            .map(|i| {
                json!({
                    "question": format!("Which {} about {} ({constraint})?", ["fact", "detail", "claim"][i % 3], words[i..i + 8].join(" ")),
                    "answer": words[i..i + 20].join(" "),
                })
            })
            .collect();
        return reply(json!({ "candidates": candidates }).to_string());
    }
    // Answering: refuse most questions of the unanswerable category, and a few answerable
    // ones, so that refusal precision and recall are neither 0 nor 1.
    let question = user.rsplit("Question:").next().unwrap_or("");
    // Korean questions about claims are refused with the sentence the prompt asks for.
    let korean_refusal = "주어진 문맥으로는 이 질문에 답할 수 없습니다.";
    if korean && question.contains("claim") {
        assert!(
            system.ends_with("Answer concisely, in Korean (한국어).")
                && user.ends_with(&format!("reply exactly: \"{korean_refusal}\"")),
            "{system}\n{user}"
        );
        return reply(format!("{korean_refusal}."));
    }
    if (question.contains("= unanswerable") && !question.contains("claim"))
        || (question.contains("= answerable") && question.contains("claim"))
    {
        return reply("I cannot answer this question from the given context.".into());
    }
    let answer = words_after(user, "[1]", 8).join(" ");
    reply(if answer.is_empty() {
        "I cannot answer this question from the given context.".into()
    } else {
        answer
    })
}

pub fn embeddings(body: &Value) -> Reply {
    let inputs: Vec<String> = match &body["input"] {
        Value::Array(items) => items
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect(),
        Value::String(s) => vec![s.clone()],
        _ => Vec::new(),
    };
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let mut vector = [0.0f32; 16];
            for word in text.to_lowercase().split_whitespace() {
                let h = word
                    .bytes()
                    .fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
                vector[(h % 16) as usize] += 1.0;
            }
            vector[15] += 0.5;
            json!({"object": "embedding", "index": i, "embedding": vector.to_vec()})
        })
        .collect();
    Reply::json(
        200,
        json!({"object": "list", "data": data, "model": "mock-embed",
                "usage": {"prompt_tokens": 1, "total_tokens": 1}}),
    )
}

const TOPICS: [&str; 8] = [
    "river",
    "castle",
    "orchestra",
    "volcano",
    "library",
    "railway",
    "glacier",
    "harbour",
];

/// `dir/corpus.jsonl`: `documents` plain English documents (`doc00`, `doc01`, …) about eight
/// topics, the one numbered `failing` marked FAILME (the generation requests of its items
/// are refused by [`chat`]).
pub fn write_corpus(dir: &Path, documents: usize, failing: Option<usize>) -> PathBuf {
    let mut lines = String::new();
    for n in 0..documents {
        let topic = TOPICS[n % TOPICS.len()];
        let marker = if failing == Some(n) { " FAILME" } else { "" };
        let text = format!(
            "The {topic} of Example{n}{marker} was first described in {year} by a traveller \
named Writer{n}. It lies near the town of Place{n} and is known for its {adj} history. \
Visitors to the {topic} report that local guides tell stories about Example{n} every summer, \
and the regional museum keeps records of the {topic} since {year}.",
            year = 1800 + n * 3,
            adj = ["long", "quiet", "violent", "curious"][n % 4],
        );
        lines.push_str(&json!({"id": format!("doc{n:02}"), "text": text}).to_string());
        lines.push('\n');
    }
    let path = dir.join("corpus.jsonl");
    std::fs::write(&path, lines).unwrap();
    path
}
