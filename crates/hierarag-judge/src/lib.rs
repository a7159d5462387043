//! An LLM judge (docs/design.md, "Judge"): it grades a system's answer against the reference
//! answer and the retrieved passages (correctness 0–3, hallucination 0–2, with a reason), and
//! rates a benchmark QA pair against its documents as the human annotators do (correctness
//! 0–3, hallucination 0–2, answerability 0–3). The rubric's anchors are in the prompt, the reply
//! is constrained by a JSON schema ([`rubric_schema`]), and a reply out of range gets a repair
//! message, then the item fails.
//!
//! A refusal is graded without a call: correct (3, no hallucination) when the question is
//! marked unanswerable, wrong (0, no hallucination) when it is not; an answer to an unanswerable
//! question is graded as usual for hallucination, with correctness 0.
//!
//! ```no_run
//! # async fn demo(client: &hierarag_llm::ChatClient) {
//! use hierarag_judge::{AnswerInput, Judge, JudgeSettings, Language};
//!
//! let judge = Judge::new(client, JudgeSettings::default(), Language::ENGLISH);
//! let input = AnswerInput {
//!     question: "Who wrote Hamlet?".into(),
//!     reference: "William Shakespeare.".into(),
//!     answer: "Shakespeare wrote it.".into(),
//!     contexts: vec!["Hamlet is a tragedy by William Shakespeare.".into()],
//!     refused: false,
//!     unanswerable: false,
//! };
//! let grade = judge.grade_answer("q1", &input).await.unwrap();
//! println!("{} / 3: {}", grade.correctness, grade.reason);
//! # }
//! ```

mod rubric;

use std::sync::Arc;

pub use hierarag_lang::Language;
use hierarag_llm::{ChatClient, ChatRequest, LlmError, Message, complete_parsed};
use hierarag_records::ModelInfo;
pub use hierarag_records::{AnswerGrade, PairRating};
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64_with_seed;

pub use rubric::{
    ANSWER_SCALES, ANSWERABILITY, CORRECTNESS, HALLUCINATION, PAIR_SCALES, Scale, answer_messages,
    pair_messages, parse_scores, repair_message, rubric_schema,
};

/// How the judge is asked (`[judge]` of a run config).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct JudgeSettings {
    pub max_tokens: u32,
    /// Repair messages after a reply that cannot be used (`repairs`, as in `[generate]` and
    /// `[tag]`; `retries`, its old name, is still read).
    #[serde(alias = "retries")]
    pub repairs: u32,
    /// Seed of the calls (default: the run's).
    pub seed: u64,
}

impl Default for JudgeSettings {
    fn default() -> JudgeSettings {
        JudgeSettings {
            max_tokens: 160,
            repairs: 2,
            seed: 42,
        }
    }
}

/// What the judge sees of one system answer.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerInput {
    pub question: String,
    pub reference: String,
    pub answer: String,
    /// The passages the system retrieved (for hallucination).
    pub contexts: Vec<String>,
    /// The system refused (the answer stage's refusal detection).
    pub refused: bool,
    /// The question is marked unanswerable: its right answer is a refusal.
    pub unanswerable: bool,
}

/// The quality screen of a generated benchmark (`[judge.screen]`): a pair is kept when the
/// judge's rating of it clears every bound. An unanswerable question (its reference a refusal)
/// is kept when the judge finds it not answerable from its documents (answerability at most
/// [`ScreenSettings::max_unanswerable`]); its correctness and hallucination are not looked at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ScreenSettings {
    /// The lowest reference correctness kept (0–3).
    pub min_correctness: u8,
    /// The most hallucination kept (0–2).
    pub max_hallucination: u8,
    /// The lowest answerability kept (0–3).
    pub min_answerability: u8,
    /// The highest answerability an unanswerable question may have (0–3).
    pub max_unanswerable: u8,
}

impl Default for ScreenSettings {
    fn default() -> ScreenSettings {
        ScreenSettings {
            min_correctness: 2,
            max_hallucination: 1,
            min_answerability: 2,
            max_unanswerable: 1,
        }
    }
}

impl ScreenSettings {
    /// A bound outside its scale, named.
    pub fn validate(&self) -> Result<(), String> {
        let bounds = [
            ("min_correctness", self.min_correctness, CORRECTNESS.max),
            (
                "max_hallucination",
                self.max_hallucination,
                HALLUCINATION.max,
            ),
            (
                "min_answerability",
                self.min_answerability,
                ANSWERABILITY.max,
            ),
            ("max_unanswerable", self.max_unanswerable, ANSWERABILITY.max),
        ];
        match bounds.iter().find(|(_, value, max)| value > max) {
            Some((name, value, max)) => {
                Err(format!("{name} = {value} is outside the scale 0–{max}"))
            }
            None => Ok(()),
        }
    }

    /// Why `rating` drops its pair, or `None` when the pair is kept.
    pub fn drops(&self, rating: &PairRating, unanswerable: bool) -> Option<String> {
        if unanswerable {
            return (rating.answerability > self.max_unanswerable).then(|| {
                format!(
                    "an unanswerable question the judge finds answerable ({} > {})",
                    rating.answerability, self.max_unanswerable
                )
            });
        }
        let mut reasons = Vec::new();
        if rating.correctness < self.min_correctness {
            reasons.push(format!(
                "correctness {} < {}",
                rating.correctness, self.min_correctness
            ));
        }
        if rating.hallucination > self.max_hallucination {
            reasons.push(format!(
                "hallucination {} > {}",
                rating.hallucination, self.max_hallucination
            ));
        }
        if rating.answerability < self.min_answerability {
            reasons.push(format!(
                "answerability {} < {}",
                rating.answerability, self.min_answerability
            ));
        }
        (!reasons.is_empty()).then(|| reasons.join(", "))
    }
}

/// Grades answers and rates QA pairs through a chat model. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Judge {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    client: ChatClient,
    settings: JudgeSettings,
    language: Language,
}

impl Judge {
    /// A judge of texts in `language` (for another language than English the prompts say so,
    /// and ask for the reason in it).
    pub fn new(client: &ChatClient, settings: JudgeSettings, language: Language) -> Judge {
        Judge {
            inner: Arc::new(Inner {
                client: client.clone(),
                settings,
                language,
            }),
        }
    }

    /// Why no later call can succeed (an endpoint refused the client), once that is so.
    pub fn refusal(&self) -> Option<LlmError> {
        self.inner.client.refusal()
    }

    /// Grades one answer; an error is why it has no grade (a call that failed for good, or
    /// replies out of range after the repairs).
    pub async fn grade_answer(&self, id: &str, input: &AnswerInput) -> Result<AnswerGrade, String> {
        let inner = &self.inner;
        let no_passages = input.contexts.is_empty();
        let grade = |correctness, hallucination, reason: &str, by_rule| AnswerGrade {
            id: id.to_string(),
            correctness,
            // A refusal asserts nothing; any other answer checked against no evidence has no
            // hallucination grade.
            hallucination: (by_rule || !no_passages).then_some(hallucination),
            reason: reason.to_string(),
            by_rule,
            no_passages: no_passages && !by_rule,
            judge: inner.info(),
        };
        match (input.refused, input.unanswerable) {
            (true, true) => return Ok(grade(3, 0, "refused an unanswerable question", true)),
            (true, false) => return Ok(grade(0, 0, "refused an answerable question", true)),
            _ => {}
        }
        let messages = answer_messages(
            &input.question,
            &input.reference,
            &input.answer,
            &input.contexts,
            inner.language,
        );
        let (scores, reason) = inner.ask(id, "answer", messages, &ANSWER_SCALES).await?;
        if input.unanswerable {
            let reason = format!("answered an unanswerable question; {reason}");
            return Ok(grade(0, scores[1], &reason, false));
        }
        Ok(grade(scores[0], scores[1], &reason, false))
    }

    /// Rates one QA pair against its documents.
    pub async fn rate_pair(
        &self,
        id: &str,
        question: &str,
        reference: &str,
        documents: &[String],
    ) -> Result<PairRating, String> {
        let messages = pair_messages(question, reference, documents, self.inner.language);
        let (scores, reason) = self.inner.ask(id, "pair", messages, &PAIR_SCALES).await?;
        Ok(PairRating {
            id: id.to_string(),
            correctness: scores[0],
            hallucination: scores[1],
            answerability: scores[2],
            reason,
            judge: self.inner.info(),
        })
    }
}

impl Inner {
    fn info(&self) -> ModelInfo {
        ModelInfo {
            backend: self.client.backend().to_string(),
            model: self.client.model().to_string(),
            params: serde_json::json!({
                "temperature": 0.0,
                "max_tokens": self.settings.max_tokens,
                "seed": self.settings.seed,
            }),
        }
    }

    /// One greedy call, and repair messages while the reply cannot be used.
    async fn ask(
        &self,
        id: &str,
        task: &str,
        messages: Vec<Message>,
        scales: &[Scale],
    ) -> Result<(Vec<u8>, String), String> {
        let mut request = ChatRequest::new(messages);
        request.max_tokens = self.settings.max_tokens;
        request.seed = Some(
            xxh3_64_with_seed(format!("judge/{task}/{id}").as_bytes(), self.settings.seed)
                & 0x7fff_ffff,
        );
        request.json_schema = Some(rubric_schema(task, scales));
        complete_parsed(
            &self.client,
            request,
            self.settings.repairs,
            |text| parse_scores(text, scales),
            |problem| repair_message(problem, scales),
        )
        .await
        .map_err(|e| e.to_string())?
        .map_err(|unreadable| unreadable.describe())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use hierarag_llm::{BoxFuture, CallError, ChatBackend, ClientSettings, Completion, Usage};

    use super::*;

    /// Replies in order, and the requests it saw.
    #[derive(Debug, Default)]
    struct Scripted {
        replies: Mutex<Vec<String>>,
        seen: Mutex<Vec<ChatRequest>>,
    }

    impl ChatBackend for Scripted {
        fn backend(&self) -> &str {
            "openai"
        }
        fn model(&self) -> &str {
            "scripted"
        }
        fn complete<'a>(
            &'a self,
            request: &'a ChatRequest,
        ) -> BoxFuture<'a, Result<Completion, CallError>> {
            self.seen.lock().unwrap().push(request.clone());
            let text = self.replies.lock().unwrap().remove(0);
            Box::pin(async move {
                Ok(Completion {
                    text,
                    finish_reason: Some("stop".into()),
                    usage: Usage::default(),
                })
            })
        }
    }

    fn judge_of(replies: &[&str]) -> (Judge, Arc<Scripted>) {
        let backend = Arc::new(Scripted {
            replies: Mutex::new(replies.iter().map(|r| r.to_string()).collect()),
            ..Scripted::default()
        });
        let client = ChatClient::new(
            vec![Arc::clone(&backend) as Arc<dyn ChatBackend>],
            &ClientSettings::default(),
        )
        .unwrap();
        (
            Judge::new(&client, JudgeSettings::default(), Language::ENGLISH),
            backend,
        )
    }

    fn input(refused: bool, unanswerable: bool) -> AnswerInput {
        AnswerInput {
            question: "Who wrote Hamlet?".into(),
            reference: "William Shakespeare.".into(),
            answer: "Shakespeare.".into(),
            contexts: vec!["Hamlet is by William Shakespeare.".into()],
            refused,
            unanswerable,
        }
    }

    #[tokio::test]
    async fn an_out_of_range_reply_is_repaired_then_the_item_fails() {
        let (judge, backend) = judge_of(&[
            "{\"correctness\": 5, \"hallucination\": 0, \"reason\": \"great\"}",
            "{\"correctness\": 3, \"hallucination\": 0, \"reason\": \"same fact\"}",
        ]);
        let grade = judge
            .grade_answer("q1", &input(false, false))
            .await
            .unwrap();
        assert_eq!((grade.correctness, grade.hallucination), (3, Some(0)));
        assert_eq!(grade.reason, "same fact");
        assert!((grade.normalised() - 1.0).abs() < 1e-15);
        let seen = backend.seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 2);
        // The repair follows the bad reply and names the problem; the schema is sent.
        assert!(
            seen[1].messages[3]
                .content
                .contains("correctness 5 is not a whole number")
        );
        assert!(seen[0].json_schema.is_some());

        let (judge, _) = judge_of(&["no", "still no", "{\"correctness\": 9}"]);
        let error = judge
            .grade_answer("q2", &input(false, false))
            .await
            .unwrap_err();
        assert_eq!(
            error,
            "correctness 9 is not a whole number from 0 to 3 (after 2 repair messages)"
        );
    }

    #[tokio::test]
    async fn a_judge_call_with_no_passages_is_marked_and_has_no_hallucination_grade() {
        let (judge, backend) = judge_of(&[
            "{\"correctness\": 2, \"hallucination\": 2, \"reason\": \"nothing to check\"}",
        ]);
        let without = AnswerInput {
            contexts: Vec::new(),
            ..input(false, false)
        };
        let grade = judge.grade_answer("q", &without).await.unwrap();
        assert_eq!(
            (grade.correctness, grade.hallucination, grade.no_passages),
            (2, None, true)
        );
        let line = serde_json::to_value(&grade).unwrap();
        assert_eq!(line["no_passages"], true);
        assert!(line.get("hallucination").is_none(), "{line}");
        // A refusal asserts nothing: graded by the rule, passages or not.
        let refused = AnswerInput {
            contexts: Vec::new(),
            ..input(true, false)
        };
        let grade = judge.grade_answer("r", &refused).await.unwrap();
        assert_eq!((grade.hallucination, grade.no_passages), (Some(0), false));
        assert_eq!(backend.seen.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn refusals_are_graded_by_the_rule_and_an_answer_to_an_unanswerable_question_is_wrong() {
        let (judge, backend) = judge_of(&[
            "{\"correctness\": 3, \"hallucination\": 2, \"reason\": \"made up\"}",
            "{\"correctness\": 2, \"hallucination\": 1, \"answerability\": 3, \"reason\": \"ok\"}",
        ]);
        let right = judge.grade_answer("a", &input(true, true)).await.unwrap();
        assert_eq!(
            (right.correctness, right.hallucination, right.by_rule),
            (3, Some(0), true)
        );
        let wrong = judge.grade_answer("b", &input(true, false)).await.unwrap();
        assert_eq!((wrong.correctness, wrong.by_rule), (0, true));
        assert!(backend.seen.lock().unwrap().is_empty());
        let answered = judge.grade_answer("c", &input(false, true)).await.unwrap();
        assert_eq!((answered.correctness, answered.hallucination), (0, Some(2)));
        assert!(
            answered
                .reason
                .starts_with("answered an unanswerable question")
        );
        let pair = judge
            .rate_pair("p", "Who?", "Him.", &["doc".to_string()])
            .await
            .unwrap();
        assert_eq!(
            (pair.correctness, pair.hallucination, pair.answerability),
            (2, 1, 3)
        );
        let seen = backend.seen.lock().unwrap();
        let rubric = &seen[1].messages[1].content;
        for anchor in ANSWERABILITY.anchors {
            assert!(rubric.contains(anchor), "{rubric}");
        }
    }

    #[test]
    fn the_screen_keeps_a_pair_that_clears_every_bound_and_names_what_drops_one() {
        let rating = |correctness, hallucination, answerability| PairRating {
            id: "q".into(),
            correctness,
            hallucination,
            answerability,
            reason: String::new(),
            judge: ModelInfo {
                backend: "openai".into(),
                model: "m".into(),
                params: serde_json::Value::Null,
            },
        };
        let screen = ScreenSettings::default();
        assert_eq!(screen.drops(&rating(2, 1, 2), false), None);
        assert_eq!(screen.drops(&rating(3, 0, 3), false), None);
        assert_eq!(
            screen.drops(&rating(1, 2, 1), false).as_deref(),
            Some("correctness 1 < 2, hallucination 2 > 1, answerability 1 < 2")
        );
        // An unanswerable question is kept when the judge cannot answer it either.
        assert_eq!(screen.drops(&rating(0, 2, 1), true), None);
        assert_eq!(
            screen.drops(&rating(3, 0, 3), true).as_deref(),
            Some("an unanswerable question the judge finds answerable (3 > 1)")
        );
        let bad = ScreenSettings {
            max_hallucination: 3,
            ..ScreenSettings::default()
        };
        assert_eq!(
            bad.validate(),
            Err("max_hallucination = 3 is outside the scale 0–2".into())
        );
        assert_eq!(screen.validate(), Ok(()));
    }
}
