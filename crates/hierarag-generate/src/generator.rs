//! One plan item in, one benchmark record (or a failure) out.

use std::sync::Arc;

use hierarag_lang::Language;
use hierarag_llm::{ChatClient, ChatRequest, Message, complete_parsed, f32_json};
use hierarag_plan::PlanItem;
use hierarag_taxonomy::Taxonomy;
use serde_json::json;
use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::parse::{Candidate, parse_candidates, parse_verdicts};
use crate::prompt::{
    QuestionSpec, SourceDocument, candidates_schema, document_reference, filter_messages,
    generation_messages, repair_message, verdicts_schema,
};
use crate::record::Verdict;
use crate::record::{BenchmarkRecord, FilterOutcome, ModelInfo, RejectKind, RejectRecord};

/// How questions are generated and filtered.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GenerateSettings {
    /// Candidates asked for in one call (DataMorgana's k).
    pub candidates: usize,
    /// Ask a second LLM call to judge the candidates.
    pub filter: bool,
    pub temperature: f32,
    pub top_p: Option<f32>,
    /// Tokens for the generator's reply (all candidates together).
    pub max_tokens: u32,
    /// Generation calls per item when every candidate is rejected, the first included.
    pub max_attempts: u32,
    /// Repair messages after a reply that cannot be read, per call.
    pub repairs: u32,
    /// Longer documents are cut to this many words in prompts.
    pub max_document_words: usize,
    /// Tokens for the filter's reply.
    pub filter_max_tokens: u32,
}

impl Default for GenerateSettings {
    fn default() -> GenerateSettings {
        GenerateSettings {
            candidates: 3,
            filter: true,
            temperature: 0.7,
            top_p: None,
            max_tokens: 1024,
            max_attempts: 3,
            repairs: 1,
            max_document_words: 1500,
            filter_max_tokens: 512,
        }
    }
}

/// What became of one item.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemOutcome {
    pub item_id: String,
    /// The benchmark record, unless the item failed.
    pub record: Option<BenchmarkRecord>,
    /// Every rejected candidate and unreadable reply, in the order they happened.
    pub rejects: Vec<RejectRecord>,
    /// Why the item failed, when it did.
    pub failure: Option<String>,
}

/// Generates benchmark records with a generator model and, optionally, a filter model.
#[derive(Debug)]
pub struct Generator<'a> {
    taxonomy: &'a Taxonomy,
    calls: Arc<Calls>,
    language: Language,
}

/// What a generation needs once its item's categories and persona are looked up: shared by
/// the generations that run as tasks of their own ([`Generator::generate_owned`]).
#[derive(Debug)]
struct Calls {
    generator: ChatClient,
    filter: Option<ChatClient>,
    settings: GenerateSettings,
}

/// A seed that servers accept (31 bits), derived from the item seed and a label.
fn request_seed(item_seed: u64, label: &str) -> u64 {
    xxh3_64_with_seed(label.as_bytes(), item_seed) & 0x7fff_ffff
}

impl<'a> Generator<'a> {
    /// `filter` is used only when `settings.filter` is on.
    pub fn new(
        taxonomy: &'a Taxonomy,
        generator: &'a ChatClient,
        filter: Option<&'a ChatClient>,
        settings: GenerateSettings,
    ) -> Generator<'a> {
        let filter = if settings.filter { filter } else { None };
        Generator {
            taxonomy,
            calls: Arc::new(Calls {
                generator: generator.clone(),
                filter: filter.cloned(),
                settings,
            }),
            language: Language::ENGLISH,
        }
    }

    /// The generator for a corpus in `language`: questions and answers are asked for in it,
    /// and an unanswerable question's reference is its refusal sentence.
    pub fn in_language(mut self, language: Language) -> Generator<'a> {
        self.language = language;
        self
    }

    pub fn settings(&self) -> &GenerateSettings {
        &self.calls.settings
    }

    /// The constraints of an item, looked up in the taxonomy; an error names the item and
    /// the category or persona the taxonomy lacks.
    pub fn spec(&self, item: &PlanItem) -> Result<QuestionSpec, String> {
        let mut constraints = Vec::new();
        let mut multi_doc = false;
        let mut unanswerable = false;
        for category in &item.categories {
            let dimension = self
                .taxonomy
                .dimension(&category.dimension)
                .ok_or_else(|| {
                    format!(
                        "item {}: dimension {:?} is not in the taxonomy",
                        item.item_id, category.dimension
                    )
                })?;
            let (_, found) = dimension.category(&category.category).ok_or_else(|| {
                format!(
                    "item {}: category {:?} is not in dimension {:?} of the taxonomy",
                    item.item_id, category.category, category.dimension
                )
            })?;
            multi_doc |= found.is_multi_doc;
            unanswerable |= found.is_unanswerable;
            constraints.push((
                dimension.name.clone(),
                found.name.clone(),
                found.description.clone(),
            ));
        }
        let mut personas = Vec::new();
        for (categorization, persona) in &item.persona {
            let found = self
                .taxonomy
                .user_categorizations
                .iter()
                .find(|c| &c.name == categorization)
                .and_then(|c| c.personas.iter().find(|p| &p.name == persona))
                .ok_or_else(|| {
                    format!(
                        "item {}: persona {categorization} = {persona:?} is not in the taxonomy",
                        item.item_id
                    )
                })?;
            personas.push((
                categorization.clone(),
                persona.clone(),
                found.description.clone(),
            ));
        }
        Ok(QuestionSpec {
            constraints,
            personas,
            multi_doc,
            unanswerable,
            language: self.language,
        })
    }

    /// The refusal (HTTP 401/403/404) that stopped the generator's or the filter's client, if
    /// one did: no later item can succeed, so a stage stops.
    pub fn refusal(&self) -> Option<hierarag_llm::LlmError> {
        self.calls
            .generator
            .refusal()
            .or_else(|| self.calls.filter.as_ref().and_then(ChatClient::refusal))
    }

    /// Generates one item: up to `max_attempts` generation calls, each followed by the
    /// checks and the filter, until a candidate survives. LLM calls that fail for good (after
    /// the client's retries) fail the item at once.
    pub async fn generate(&self, item: &PlanItem, documents: &[SourceDocument]) -> ItemOutcome {
        match self.spec(item) {
            Ok(spec) => self.calls.generate(item, documents, &spec).await,
            Err(reason) => failed(item, reason),
        }
    }

    /// [`Generator::generate`] as a future that borrows nothing (the item's categories and
    /// persona are looked up now), so that a stage can spawn it on a runtime's worker threads.
    pub fn generate_owned(
        &self,
        item: PlanItem,
        documents: Vec<SourceDocument>,
    ) -> impl Future<Output = ItemOutcome> + Send + use<> {
        let spec = self.spec(&item);
        let calls = Arc::clone(&self.calls);
        async move {
            match spec {
                Ok(spec) => calls.generate(&item, &documents, &spec).await,
                Err(reason) => failed(&item, reason),
            }
        }
    }
}

/// An item that failed before any call.
fn failed(item: &PlanItem, reason: String) -> ItemOutcome {
    ItemOutcome {
        item_id: item.item_id.clone(),
        record: None,
        rejects: Vec::new(),
        failure: Some(reason),
    }
}

impl Calls {
    fn generator_info(&self, seed: u64) -> ModelInfo {
        ModelInfo {
            backend: self.generator.backend().to_string(),
            model: self.generator.model().to_string(),
            params: json!({
                "candidates": self.settings.candidates,
                "temperature": f32_json(self.settings.temperature),
                "top_p": self.settings.top_p.map(f32_json),
                "max_tokens": self.settings.max_tokens,
                "seed": seed,
            }),
        }
    }

    async fn generate(
        &self,
        item: &PlanItem,
        documents: &[SourceDocument],
        spec: &QuestionSpec,
    ) -> ItemOutcome {
        let mut outcome = ItemOutcome {
            item_id: item.item_id.clone(),
            record: None,
            rejects: Vec::new(),
            failure: None,
        };
        let mut considered = 0;
        let attempts = self.settings.max_attempts.max(1);
        for attempt in 1..=attempts {
            let seed = request_seed(item.seed, &format!("generate/{attempt}"));
            let candidates = match self.candidates(spec, documents, seed).await {
                Ok(Ok(candidates)) => candidates,
                Ok(Err(problem)) => {
                    outcome.rejects.push(reject(
                        item,
                        attempt,
                        None,
                        RejectKind::Unparseable,
                        problem,
                    ));
                    continue;
                }
                Err(call) => {
                    outcome.failure = Some(format!("generation call failed: {call}"));
                    return outcome;
                }
            };
            considered += candidates.len();

            // Checks that need no model: duplicates and references to the document.
            let mut checked = Vec::new();
            for (n, candidate) in candidates.iter().enumerate() {
                let duplicate = candidates[..n]
                    .iter()
                    .any(|c| c.question.to_lowercase() == candidate.question.to_lowercase());
                if duplicate {
                    outcome.rejects.push(reject(
                        item,
                        attempt,
                        Some((n, candidate)),
                        RejectKind::Duplicate,
                        "repeats an earlier question of the same reply".into(),
                    ));
                } else if let Some(phrase) = document_reference(&candidate.question) {
                    outcome.rejects.push(reject(
                        item,
                        attempt,
                        Some((n, candidate)),
                        RejectKind::ReferencesDocument,
                        format!("the question mentions {phrase:?}"),
                    ));
                } else {
                    checked.push(n);
                }
            }
            if checked.is_empty() {
                continue;
            }

            let mut survivors: Vec<(usize, Option<Verdict>)> = Vec::new();
            let mut judged = 0;
            match &self.filter {
                None => survivors.extend(checked.iter().map(|&n| (n, None))),
                Some(filter) => {
                    let to_judge: Vec<Candidate> =
                        checked.iter().map(|&n| candidates[n].clone()).collect();
                    let filter_seed = request_seed(item.seed, &format!("filter/{attempt}"));
                    match self
                        .verdicts(filter, spec, documents, &to_judge, filter_seed)
                        .await
                    {
                        Err(call) => {
                            outcome.failure = Some(format!("filter call failed: {call}"));
                            return outcome;
                        }
                        Ok(Err(problem)) => {
                            for &n in &checked {
                                outcome.rejects.push(reject(
                                    item,
                                    attempt,
                                    Some((n, &candidates[n])),
                                    RejectKind::FilterUnparseable,
                                    problem.clone(),
                                ));
                            }
                            continue;
                        }
                        Ok(Ok(verdicts)) => {
                            judged = verdicts.len();
                            for (&n, verdict) in checked.iter().zip(verdicts) {
                                if verdict.passed() {
                                    survivors.push((n, Some(verdict)));
                                } else {
                                    let reason = verdict.failure();
                                    outcome.rejects.push(reject(
                                        item,
                                        attempt,
                                        Some((n, &candidates[n])),
                                        RejectKind::Filter,
                                        reason,
                                    ));
                                }
                            }
                        }
                    }
                }
            }
            if survivors.is_empty() {
                continue;
            }

            // One survivor, chosen with the item seed; the others are rejected as unchosen
            // only implicitly (they passed), so they do not go to rejects.jsonl.
            let pick = xxh3_64_with_seed(b"survivor", item.seed ^ u64::from(attempt)) as usize
                % survivors.len();
            let passed = survivors.len();
            let (n, verdict) = survivors.swap_remove(pick);
            let chosen = &candidates[n];
            // An unanswerable question's reference is the refusal, whatever the model wrote.
            let answer = if spec.unanswerable {
                spec.language.refusal().to_string()
            } else {
                chosen.answer.clone()
            };
            outcome.record = Some(BenchmarkRecord {
                id: item.item_id.clone(),
                question: chosen.question.clone(),
                answer,
                doc_ids: item.doc_ids.clone(),
                design: item.design.as_str().to_string(),
                set: item.set.clone(),
                categories: item.categories.clone(),
                persona: item.persona.clone(),
                generator: Some(self.generator_info(seed)),
                candidates_considered: considered,
                attempts: attempt,
                filter: Some(FilterOutcome {
                    enabled: self.filter.is_some(),
                    model: self.filter.as_ref().map(|f| ModelInfo {
                        backend: f.backend().to_string(),
                        model: f.model().to_string(),
                        params: json!({
                            "temperature": 0.0,
                            "max_tokens": self.settings.filter_max_tokens,
                        }),
                    }),
                    passed,
                    judged,
                    verdict,
                }),
                source: None,
                unanswerable: spec.unanswerable,
            });
            return outcome;
        }
        outcome.failure = Some(format!(
            "no candidate survived {attempts} generation attempt{} ({} rejected; see rejects.jsonl)",
            if attempts == 1 { "" } else { "s" },
            outcome.rejects.len()
        ));
        outcome
    }

    /// One generation call, with repair messages while the reply cannot be read. The outer
    /// error is a call that failed for good; the inner one a reply that stayed unreadable.
    async fn candidates(
        &self,
        spec: &QuestionSpec,
        documents: &[SourceDocument],
        seed: u64,
    ) -> Result<Result<Vec<Candidate>, String>, hierarag_llm::LlmError> {
        let k = self.settings.candidates.max(1);
        let mut request = ChatRequest::new(generation_messages(
            spec,
            documents,
            k,
            self.settings.max_document_words,
        ));
        request.temperature = self.settings.temperature;
        request.top_p = self.settings.top_p;
        request.max_tokens = self.settings.max_tokens;
        request.seed = Some(seed);
        request.json_schema = Some(candidates_schema(k));
        let parsed = complete_parsed(
            &self.generator,
            request,
            self.settings.repairs,
            parse_candidates,
            |problem| repair_message(problem, k),
        )
        .await?;
        Ok(parsed
            .map(|mut candidates| {
                candidates.truncate(k);
                candidates
            })
            .map_err(|unreadable| unreadable.problem))
    }

    /// One filter call (greedy), with repair messages while the reply cannot be read.
    async fn verdicts(
        &self,
        filter: &ChatClient,
        spec: &QuestionSpec,
        documents: &[SourceDocument],
        candidates: &[Candidate],
        seed: u64,
    ) -> Result<Result<Vec<Verdict>, String>, hierarag_llm::LlmError> {
        let mut request = ChatRequest::new(filter_messages(
            spec,
            documents,
            candidates,
            self.settings.max_document_words,
        ));
        request.temperature = 0.0;
        request.max_tokens = self.settings.filter_max_tokens;
        request.seed = Some(seed);
        request.json_schema = Some(verdicts_schema(candidates.len()));
        let parsed = complete_parsed(
            filter,
            request,
            self.settings.repairs,
            |text| parse_verdicts(text, candidates.len()),
            |problem| {
                Message::user(format!(
                    "Your reply could not be read: {problem}. Reply again with JSON only: \
{{\"verdicts\": [...]}} with one object per candidate, each with candidate, faithful, \
fits_category, standalone and reason."
                ))
            },
        )
        .await?;
        Ok(parsed.map_err(|unreadable| unreadable.problem))
    }
}

fn reject(
    item: &PlanItem,
    attempt: u32,
    candidate: Option<(usize, &Candidate)>,
    kind: RejectKind,
    reason: String,
) -> RejectRecord {
    RejectRecord {
        item_id: item.item_id.clone(),
        attempt,
        candidate: candidate.map(|(n, _)| n + 1),
        question: candidate.map(|(_, c)| c.question.clone()),
        answer: candidate.map(|(_, c)| c.answer.clone()),
        kind,
        reason,
    }
}
