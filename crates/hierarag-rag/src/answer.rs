//! The answering prompt, refusal detection, and one question answered.

use hierarag_llm::{ChatClient, ChatRequest, Message, f32_json};
use serde::{Deserialize, Serialize};

use crate::error::RagError;
use crate::retrieve::{RetrievedChunk, Retriever, ranked_documents};

/// What the answering model is asked to say when the context does not hold the answer.
pub const REFUSAL: &str = "I cannot answer this question from the given context.";

const SYSTEM: &str = "You answer questions using only the numbered context passages you are \
given. Do not use any other knowledge. If the passages do not contain the answer, reply \
exactly: \"I cannot answer this question from the given context.\" Answer concisely.";

/// How questions are answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AnswerSettings {
    /// Chunks given to the model (the paper's k = 10).
    pub top_k: usize,
    pub temperature: f32,
    pub top_p: Option<f32>,
    pub max_tokens: u32,
    /// Longer chunks are cut to this many words in the prompt (chunks are ≤ 512 words by
    /// default, so this only matters for small-context models).
    pub max_chunk_words: usize,
}

impl Default for AnswerSettings {
    fn default() -> AnswerSettings {
        AnswerSettings {
            top_k: 10,
            temperature: 0.6,
            top_p: None,
            max_tokens: 256,
            max_chunk_words: 512,
        }
    }
}

/// The answering messages: numbered chunks, then the question.
pub fn answer_messages(
    question: &str,
    chunks: &[RetrievedChunk],
    max_words: usize,
) -> Vec<Message> {
    let mut context = String::new();
    for (n, chunk) in chunks.iter().enumerate() {
        let text: Vec<&str> = chunk.text.split_whitespace().take(max_words).collect();
        context.push_str(&format!("[{}] {}\n\n", n + 1, text.join(" ")));
    }
    if chunks.is_empty() {
        context.push_str("(no passages were found)\n\n");
    }
    let user = format!(
        "Context passages:\n\n{context}Question: {question}\n\nAnswer using only the passages \
above. If they do not contain the answer, reply exactly: \"{REFUSAL}\""
    );
    vec![Message::system(SYSTEM), Message::user(user)]
}

/// Phrases by which an answer declines to answer (compared in lowercase, with curly
/// apostrophes straightened).
const REFUSAL_PHRASES: &[&str] = &[
    "cannot answer",
    "can't answer",
    "can not answer",
    "unable to answer",
    "not able to answer",
    "cannot be answered",
    "can't be answered",
    "cannot determine",
    "can't determine",
    "unable to determine",
    "cannot find",
    "can't find",
    "not enough information",
    "insufficient information",
    "no information",
    "does not contain",
    "doesn't contain",
    "do not contain",
    "don't contain",
    "does not provide",
    "doesn't provide",
    "do not provide",
    "don't provide",
    "does not mention",
    "doesn't mention",
    "do not mention",
    "don't mention",
    "not mentioned",
    "not provided",
    "not specified",
    "i don't know",
    "i do not know",
];

/// Whether an answer declines to answer: empty, or saying it cannot answer from the context.
pub fn is_refusal(answer: &str) -> bool {
    let text = answer
        .trim()
        .to_lowercase()
        .replace(['\u{2019}', '\u{2018}'], "'");
    text.is_empty() || REFUSAL_PHRASES.iter().any(|phrase| text.contains(phrase))
}

/// One retrieved chunk as `answers.jsonl` records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkRef {
    pub chunk_id: String,
    pub doc_id: String,
    pub score: f64,
}

/// The answering model and its parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerModel {
    pub backend: String,
    pub model: String,
    pub params: serde_json::Value,
}

/// What one answer cost in tokens. Times and cache hits are not recorded per answer (they
/// differ between runs, and the file must not); the run manifest has them per stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// One line of `answers.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerRecord {
    /// The benchmark question's id.
    pub id: String,
    pub question: String,
    pub retriever: String,
    /// The chunks given to the model, best first.
    pub retrieved: Vec<ChunkRef>,
    /// The ranked documents (each at its best chunk), best first: the run for AP/nDCG/R@10.
    pub doc_ids: Vec<String>,
    /// Their scores (each document's best chunk score), aligned with `doc_ids`.
    pub doc_scores: Vec<f64>,
    pub answer: String,
    pub refused: bool,
    pub llm: AnswerModel,
    pub usage: AnswerUsage,
}

/// Answers questions with a retriever and a chat model.
#[derive(Debug)]
pub struct Answerer<'a> {
    retriever: &'a dyn Retriever,
    client: &'a ChatClient,
    settings: AnswerSettings,
}

impl<'a> Answerer<'a> {
    pub fn new(
        retriever: &'a dyn Retriever,
        client: &'a ChatClient,
        settings: AnswerSettings,
    ) -> Answerer<'a> {
        Answerer {
            retriever,
            client,
            settings,
        }
    }

    pub fn settings(&self) -> &AnswerSettings {
        &self.settings
    }

    /// Retrieves, prompts and records one answer. `seed` makes sampling reproducible (the
    /// caller derives it from the run seed and the question id).
    pub async fn answer(
        &self,
        id: &str,
        question: &str,
        seed: u64,
    ) -> Result<AnswerRecord, RagError> {
        let chunks = self
            .retriever
            .retrieve(question, self.settings.top_k)
            .await?;
        let mut request = ChatRequest::new(answer_messages(
            question,
            &chunks,
            self.settings.max_chunk_words,
        ));
        request.temperature = self.settings.temperature;
        request.top_p = self.settings.top_p;
        request.max_tokens = self.settings.max_tokens;
        request.seed = Some(seed);
        let reply = self.client.complete(&request).await?;
        let answer = reply.completion.text.trim().to_string();
        let documents = ranked_documents(&chunks);
        Ok(AnswerRecord {
            id: id.to_string(),
            question: question.to_string(),
            retriever: self.retriever.name().to_string(),
            retrieved: chunks
                .iter()
                .map(|c| ChunkRef {
                    chunk_id: c.chunk_id.clone(),
                    doc_id: c.doc_id.clone(),
                    score: c.score,
                })
                .collect(),
            doc_ids: documents.iter().map(|(id, _)| id.clone()).collect(),
            doc_scores: documents.iter().map(|(_, score)| *score).collect(),
            refused: is_refusal(&answer),
            answer,
            llm: AnswerModel {
                backend: self.client.backend().to_string(),
                model: self.client.model().to_string(),
                params: serde_json::json!({
                    "temperature": f32_json(self.settings.temperature),
                    "top_p": self.settings.top_p.map(f32_json),
                    "max_tokens": self.settings.max_tokens,
                    "top_k": self.settings.top_k,
                    "seed": seed,
                }),
            },
            usage: AnswerUsage {
                prompt_tokens: reply.completion.usage.prompt_tokens,
                completion_tokens: reply.completion.usage.completion_tokens,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_recognised() {
        for text in [
            REFUSAL,
            "I can’t answer that from these passages.",
            "The context does not contain this information.",
            "",
            "  ",
            "Sorry, I don't know.",
        ] {
            assert!(is_refusal(text), "{text:?}");
        }
        for text in ["Ada Lovelace.", "It was founded in 1843 in London."] {
            assert!(!is_refusal(text), "{text:?}");
        }
    }

    #[test]
    fn the_prompt_numbers_the_chunks_and_states_the_refusal() {
        let chunks = vec![
            RetrievedChunk {
                chunk_id: "a#0".into(),
                doc_id: "a".into(),
                score: 2.0,
                text: "one two three".into(),
            },
            RetrievedChunk {
                chunk_id: "b#0".into(),
                doc_id: "b".into(),
                score: 1.0,
                text: "four five".into(),
            },
        ];
        let messages = answer_messages("Who?", &chunks, 2);
        let user = &messages[1].content;
        assert!(user.contains("[1] one two\n"));
        assert!(user.contains("[2] four five\n"));
        assert!(user.contains("Question: Who?"));
        assert!(user.contains(REFUSAL));
    }

    #[test]
    fn documents_are_ranked_at_their_best_chunk() {
        let chunk = |doc: &str, n: u32, score: f64| RetrievedChunk {
            chunk_id: format!("{doc}#{n}"),
            doc_id: doc.into(),
            score,
            text: String::new(),
        };
        let chunks = vec![chunk("a", 1, 3.0), chunk("b", 0, 2.0), chunk("a", 0, 1.0)];
        assert_eq!(
            ranked_documents(&chunks),
            vec![("a".to_string(), 3.0), ("b".to_string(), 2.0)]
        );
    }
}
