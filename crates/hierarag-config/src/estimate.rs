//! What a run will cost before any call (`hierarag run CONFIG --dry-run`, and `estimate` in
//! the manifest when the run starts): for every role the run will use, the calls, prompt and
//! completion tokens and the price at the role's configured prices.
//!
//! Prompts are the real ones: each role's prompt builder (the generator's and filter's, the
//! answerer's, the judge's, the tagger's) is run on placeholder texts of the estimated lengths
//! (a document of the corpus' mean length, `top_k` chunks of the chunk length, a question, a
//! reference and an answer of typical lengths), and its words are counted. Words become tokens
//! at [`TOKENS_PER_WORD`], a stated approximation for English text with common BPE
//! vocabularies; the completions are the replies' typical lengths, capped by the role's
//! `max_tokens`. Every assumption is written beside the table.

use hierarag_lang::Language;
use hierarag_llm::{LlmConfig, Message};
use hierarag_plan::TOKENS_PER_WORD;
use hierarag_taxonomy::Taxonomy;
use serde::{Deserialize, Serialize};

use crate::{RunConfig, SystemKind};

/// What the estimate needs to know that the config does not say.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    /// Questions the run will answer: the design's items, or the given benchmark's questions.
    pub questions: usize,
    /// `[run] benchmark` is set: no generation, no filter, no screen.
    pub given_benchmark: bool,
    /// The mean words of a corpus document, and where the figure comes from.
    pub doc_words: f64,
    pub doc_words_source: String,
    /// The share of candidates the filter rejected in an earlier pass of this run directory
    /// (the pilot), when there was one.
    pub reject_rate: Option<f64>,
    /// Questions of the `[human]` file (0 without one).
    pub human_questions: usize,
}

/// One role's calls, tokens and price.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoleEstimate {
    /// `generator`, `filter`, `screen`, `answerer`, `judge`, `judge-benchmark`, `tagger`.
    pub role: String,
    /// The system a role works for (the answerer and judge of each system).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// `model (backend)`.
    pub model: String,
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// At the role's `price_prompt_per_mtok` and `price_completion_per_mtok`; absent when
    /// neither is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

/// The estimate of a whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEstimate {
    pub roles: Vec<RoleEstimate>,
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// The sum of the priced roles; absent when no role has a price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    /// What the figures assume, in words.
    pub assumptions: Vec<String>,
}

/// Words of a generated question, of a reference answer and of a system's answer.
const QUESTION_WORDS: usize = 15;
const REFERENCE_WORDS: usize = 25;
const ANSWER_WORDS: usize = 60;
/// Words of a candidate (question and answer) in the generator's reply, of a verdict in the
/// filter's, of a grade with its reason in the judge's, of a label in the tagger's.
const CANDIDATE_WORDS: usize = 60;
const VERDICT_WORDS: usize = 25;
const GRADE_WORDS: usize = 40;
const LABEL_WORDS: usize = 10;

fn words(n: usize) -> String {
    vec!["word"; n].join(" ")
}

fn prompt_words(messages: &[Message]) -> usize {
    messages
        .iter()
        .map(|m| m.content.split_whitespace().count())
        .sum()
}

fn tokens(words: f64) -> u64 {
    (words * TOKENS_PER_WORD).round() as u64
}

/// Bytes of JSON a token, for a schema sent as `response_format` (the "about four characters
/// a token" of common BPE vocabularies; a schema's keys and types are English words).
const SCHEMA_BYTES_PER_TOKEN: f64 = 4.0;

/// The tokens `llm` is billed for `schema` on each call: its JSON where the role sends it as
/// `response_format` (OpenAI-compatible with `structured_output`), none where it does not
/// (Anthropic; the embedded model, which decodes by it in process).
fn schema_tokens(llm: &LlmConfig, schema: &hierarag_llm::JsonSchema) -> f64 {
    let sent = llm.structured_output && llm.backend == hierarag_llm::ChatBackendKind::OpenAi;
    if !sent {
        return 0.0;
    }
    let bytes = serde_json::to_string(&schema.schema).map_or(0, |text| text.len());
    bytes as f64 / SCHEMA_BYTES_PER_TOKEN
}

/// One role's row: `calls` calls of `prompt` words each and `schema` tokens of a reply's
/// schema each, replies of `completion` words each capped at `max_tokens`.
#[allow(clippy::too_many_arguments)]
fn row(
    role: &str,
    system: Option<&str>,
    llm: &LlmConfig,
    calls: f64,
    prompt: usize,
    schema: Option<&hierarag_llm::JsonSchema>,
    completion: usize,
    max_tokens: u32,
) -> RoleEstimate {
    let per_completion = tokens(completion as f64).min(u64::from(max_tokens));
    let calls_rounded = calls.round() as u64;
    let schema = schema.map_or(0.0, |schema| schema_tokens(llm, schema));
    let prompt_tokens = (prompt as f64 * calls * TOKENS_PER_WORD + schema * calls).round() as u64;
    let completion_tokens = per_completion * calls_rounded;
    let (prompt_price, completion_price) = llm.prices(llm.batch);
    let cost = (prompt_price.is_some() || completion_price.is_some()).then(|| {
        (prompt_price.unwrap_or(0.0) * prompt_tokens as f64
            + completion_price.unwrap_or(0.0) * completion_tokens as f64)
            / 1e6
    });
    RoleEstimate {
        role: role.to_owned(),
        system: system.map(str::to_owned),
        model: match llm.backend {
            hierarag_llm::ChatBackendKind::Embedded => "embedded SmolLM2-135M".to_owned(),
            backend => format!("{} ({})", llm.model, format!("{backend:?}").to_lowercase()),
        },
        calls: calls_rounded,
        prompt_tokens,
        completion_tokens,
        cost,
    }
}

/// The estimate of `config`'s run over `taxonomy`, for a run of `shape`.
pub fn estimate(config: &RunConfig, taxonomy: &Taxonomy, shape: &Shape) -> RunEstimate {
    let language = config
        .corpus
        .as_ref()
        .map_or(Language::ENGLISH, |c| c.language);
    let generate = &config.generate.settings;
    let answer = &config.answer.settings;
    let judge = &config.judge.settings;
    let n = shape.questions as f64;
    let doc_words = (shape.doc_words.round() as usize).min(generate.max_document_words);
    let chunk_words = shape
        .doc_words
        .min(config.index.chunk_size as f64)
        .min(answer.max_chunk_words as f64)
        .round() as usize;
    let mut assumptions = vec![
        format!(
            "tokens are words × {TOKENS_PER_WORD} (common BPE vocabularies on English text), \
counted on the real prompts filled with texts of the lengths below, plus a reply's JSON schema \
at {SCHEMA_BYTES_PER_TOKEN} bytes a token where it is sent as response_format (billed as \
prompt tokens)"
        ),
        format!(
            "{} questions; a document has {:.0} words ({}), a retrieved chunk {chunk_words}",
            shape.questions, shape.doc_words, shape.doc_words_source
        ),
        format!(
            "a question has {QUESTION_WORDS} words, a reference answer {REFERENCE_WORDS}, a \
system's answer {ANSWER_WORDS}"
        ),
    ];
    let mut roles = Vec::new();

    // A category description and a persona of the taxonomy, of their mean lengths.
    let mean_words = |texts: Vec<&str>| {
        let n = texts.len().max(1);
        texts
            .iter()
            .map(|t| t.split_whitespace().count())
            .sum::<usize>()
            / n
    };
    let category_words = mean_words(
        taxonomy
            .dimensions
            .iter()
            .flat_map(|d| d.levels.iter().flat_map(|l| l.categories.iter()))
            .map(|c| c.description.as_str())
            .collect(),
    );
    let persona_words = mean_words(
        taxonomy
            .personas()
            .map(|p| p.description.as_str())
            .collect(),
    );
    let spec = hierarag_generate::QuestionSpec {
        constraints: vec![("dimension".into(), "category".into(), words(category_words))],
        personas: vec![("persona".into(), "persona".into(), words(persona_words))],
        multi_doc: false,
        unanswerable: false,
        language,
    };
    let document = vec![hierarag_generate::SourceDocument {
        id: "doc".into(),
        text: words(doc_words),
    }];

    if !shape.given_benchmark {
        let k = generate.candidates;
        // Every candidate rejected: the item is generated again, up to max_attempts calls.
        let attempts = match shape.reject_rate {
            Some(rate) => {
                let all_rejected = rate.clamp(0.0, 1.0).powi(k as i32);
                let expected: f64 = (0..generate.max_attempts)
                    .map(|a| all_rejected.powi(a as i32))
                    .sum();
                assumptions.push(format!(
                    "the filter rejected {:.0}% of candidates in this run's earlier pass: {expected:.2} \
generation calls an item",
                    100.0 * rate
                ));
                expected
            }
            None => {
                assumptions.push(
                    "one generation call an item (no earlier pass to measure the filter's reject \
rate; each item whose candidates are all rejected costs another)"
                        .into(),
                );
                1.0
            }
        };
        let generation = hierarag_generate::prompt::generation_messages(
            &spec,
            &document,
            k,
            generate.max_document_words,
        );
        roles.push(row(
            "generator",
            None,
            config.generator_llm(),
            n * attempts,
            prompt_words(&generation),
            Some(&hierarag_generate::prompt::candidates_schema(k)),
            k * CANDIDATE_WORDS,
            generate.max_tokens,
        ));
        if generate.filter {
            let candidates: Vec<hierarag_generate::Candidate> = (0..k)
                .map(|_| hierarag_generate::Candidate {
                    question: words(QUESTION_WORDS),
                    answer: words(REFERENCE_WORDS),
                })
                .collect();
            let filter = hierarag_generate::prompt::filter_messages(
                &spec,
                &document,
                &candidates,
                generate.max_document_words,
            );
            roles.push(row(
                "filter",
                None,
                config.filter_llm(),
                n * attempts,
                prompt_words(&filter),
                Some(&hierarag_generate::prompt::verdicts_schema(k)),
                k * VERDICT_WORDS,
                generate.filter_max_tokens,
            ));
        }
    }
    let pair = hierarag_judge::pair_messages(
        &words(QUESTION_WORDS),
        &words(REFERENCE_WORDS),
        &[words(doc_words)],
        language,
    );
    let pair_schema = hierarag_judge::rubric_schema("pair", &hierarag_judge::PAIR_SCALES);
    if config.judge.screen.is_some() && !shape.given_benchmark {
        roles.push(row(
            "screen",
            None,
            config.judge_llm(),
            n,
            prompt_words(&pair),
            Some(&pair_schema),
            GRADE_WORDS,
            judge.max_tokens,
        ));
    }
    if config.judge.on && config.judge.benchmark {
        roles.push(row(
            "judge-benchmark",
            None,
            config.judge_llm(),
            n,
            prompt_words(&pair),
            Some(&pair_schema),
            GRADE_WORDS,
            judge.max_tokens,
        ));
    }
    let questions_answered = n + shape.human_questions as f64;
    if shape.human_questions > 0 {
        // Each question on each dimension: the finest level's categories listed, with examples.
        for dimension in &taxonomy.dimensions {
            let Some(finest) = dimension.levels.last() else {
                continue;
            };
            let listed: usize = finest
                .categories
                .iter()
                .map(|c| c.description.split_whitespace().count() + 6)
                .sum();
            let examples = config.tag.settings.examples * finest.categories.len() * QUESTION_WORDS;
            let names: Vec<&str> = finest.categories.iter().map(|c| c.name.as_str()).collect();
            roles.push(row(
                "tagger",
                Some(&dimension.key),
                config.tagger_llm(),
                shape.human_questions as f64 * f64::from(config.tag.settings.votes.max(1)),
                120 + listed + examples + QUESTION_WORDS,
                Some(&hierarag_tag::choice_schema(&names)),
                LABEL_WORDS,
                config.tag.settings.max_tokens,
            ));
        }
        assumptions.push(format!(
            "the {} human-written questions of [human] are tagged on every dimension, answered \
and judged like the generated ones",
            shape.human_questions
        ));
    }
    for system in config.answering_systems() {
        let passages = match &system.kind {
            SystemKind::Builtin(builtin) => {
                let top_k = builtin.top_k.unwrap_or(answer.top_k);
                let llm = builtin.llm.as_ref().unwrap_or(config.answerer_llm());
                let chunks: Vec<hierarag_rag::RetrievedChunk> = (0..top_k)
                    .map(|i| hierarag_rag::RetrievedChunk {
                        chunk_id: format!("doc#{i}"),
                        doc_id: "doc".into(),
                        score: 1.0,
                        text: words(chunk_words),
                    })
                    .collect();
                let messages = hierarag_rag::answer_messages(
                    &words(QUESTION_WORDS),
                    &chunks,
                    answer.max_chunk_words,
                    language,
                );
                roles.push(row(
                    "answerer",
                    Some(&system.name),
                    llm,
                    questions_answered,
                    prompt_words(&messages),
                    None,
                    ANSWER_WORDS,
                    answer.max_tokens,
                ));
                top_k
            }
            // Another system answers with its own models, at its own cost.
            _ => 0,
        };
        if config.judge.on {
            let contexts = vec![words(chunk_words); passages];
            let messages = hierarag_judge::answer_messages(
                &words(QUESTION_WORDS),
                &words(REFERENCE_WORDS),
                &words(ANSWER_WORDS),
                &contexts,
                language,
            );
            roles.push(row(
                "judge",
                Some(&system.name),
                config.judge_llm(),
                questions_answered,
                prompt_words(&messages),
                Some(&hierarag_judge::rubric_schema(
                    "answer",
                    &hierarag_judge::ANSWER_SCALES,
                )),
                GRADE_WORDS,
                judge.max_tokens,
            ));
        }
    }
    if config
        .answering_systems()
        .iter()
        .any(|s| !matches!(s.kind, SystemKind::Builtin(_)))
    {
        assumptions.push(
            "http, command and file systems answer with their own models: their cost is not \
here (their answers are judged here when [judge] is set)"
                .into(),
        );
    }
    if config.judge.on {
        assumptions.push(
            "refusals are graded by rule, without a call: the judge's calls are an upper bound"
                .into(),
        );
    }
    let batched: Vec<&str> = [
        ("generator", config.generator_llm()),
        ("filter", config.filter_llm()),
        ("screen", config.judge_llm()),
        ("judge-benchmark", config.judge_llm()),
        ("answerer", config.answerer_llm()),
        ("judge", config.judge_llm()),
        ("tagger", config.tagger_llm()),
    ]
    .into_iter()
    .filter(|(role, llm)| llm.batch && roles.iter().any(|r| r.role == *role && r.calls > 0))
    .map(|(role, _)| role)
    .collect();
    if !batched.is_empty() {
        assumptions.push(format!(
            "{} through the batch API (batch = true), at the batch prices where set \
(price_batch_prompt_per_mtok, price_batch_completion_per_mtok)",
            batched.join(", ")
        ));
    }
    let priced: Vec<f64> = roles.iter().filter_map(|r| r.cost).collect();
    let unpriced: Vec<String> = roles
        .iter()
        .filter(|r| r.cost.is_none() && r.calls > 0)
        .map(|r| r.role.clone())
        .collect();
    if !priced.is_empty() && !unpriced.is_empty() {
        assumptions.push(format!(
            "no price is set for {}: the total leaves them out",
            unpriced.join(", ")
        ));
    }
    RunEstimate {
        calls: roles.iter().map(|r| r.calls).sum(),
        prompt_tokens: roles.iter().map(|r| r.prompt_tokens).sum(),
        completion_tokens: roles.iter().map(|r| r.completion_tokens).sum(),
        cost: (!priced.is_empty()).then(|| priced.iter().sum()),
        roles,
        assumptions,
    }
}
