//! What a plan will cost: LLM calls and a rough token count, for `hierarag plan --dry-run`.

use hierarag_taxonomy::Taxonomy;

use crate::plan::{Plan, PlanItem};

/// Settings of the generation stage that decide its cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GenerationSettings {
    /// Candidate question-answer pairs asked for in one generation call (docs/design.md, "Generation": 3).
    pub candidates: usize,
    /// Whether each item's candidates go through a second, filtering call.
    pub filter: bool,
}

impl Default for GenerationSettings {
    fn default() -> Self {
        GenerationSettings {
            candidates: 3,
            filter: true,
        }
    }
}

/// LLM calls and tokens a plan implies, before retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LlmEstimate {
    pub generation_calls: u64,
    pub filter_calls: u64,
    /// Prompt tokens, estimated from word counts.
    pub input_tokens: u64,
    /// Completion tokens, estimated.
    pub output_tokens: u64,
}

impl LlmEstimate {
    pub fn calls(&self) -> u64 {
        self.generation_calls + self.filter_calls
    }
}

pub use hierarag_cost::TOKENS_PER_WORD;
/// Instructions around the document in the generation prompt, in words.
const GENERATION_PROMPT_WORDS: usize = 220;
/// Instructions of the filter prompt, in words.
const FILTER_PROMPT_WORDS: usize = 150;
/// A generated question with its answer, in words.
const CANDIDATE_WORDS: usize = 60;
/// The filter's verdict on one candidate, in words.
const VERDICT_WORDS: usize = 25;

impl Plan {
    /// Calls and tokens for generating this plan; each item is one generation call (plus one
    /// filter call), its prompt the document(s), the category and persona descriptions and the
    /// instructions. `None` when the plan does not know its documents' lengths.
    pub fn estimate(
        &self,
        taxonomy: &Taxonomy,
        settings: GenerationSettings,
    ) -> Option<LlmEstimate> {
        let doc_words = self.doc_words.as_ref()?;
        Some(estimate_items(&self.items, doc_words, taxonomy, settings))
    }
}

/// [`Plan::estimate`] of any items, given the length in words of each item's documents (e.g.
/// the items of a pilot's plan, to price a larger one like them).
pub fn estimate_items(
    items: &[PlanItem],
    doc_words: &[Vec<usize>],
    taxonomy: &Taxonomy,
    settings: GenerationSettings,
) -> LlmEstimate {
    let mut input_words = 0usize;
    let mut output_words = 0usize;
    for (item, doc_words) in items.iter().zip(doc_words) {
        let documents: usize = doc_words.iter().sum();
        let categories: usize = item
            .categories
            .iter()
            .filter_map(|c| taxonomy.category(&c.dimension, &c.category))
            .map(|(_, category)| category.description.split_whitespace().count())
            .sum();
        let personas: usize = taxonomy
            .personas()
            .filter(|p| item.persona.values().any(|name| *name == p.name))
            .map(|p| p.description.split_whitespace().count())
            .sum();
        let candidates = settings.candidates * CANDIDATE_WORDS;
        input_words += GENERATION_PROMPT_WORDS + documents + categories + personas;
        output_words += candidates;
        if settings.filter {
            input_words += FILTER_PROMPT_WORDS + documents + categories + candidates;
            output_words += settings.candidates * VERDICT_WORDS;
        }
    }
    let n = items.len() as u64;
    LlmEstimate {
        generation_calls: n,
        filter_calls: if settings.filter { n } else { 0 },
        input_tokens: (input_words as f64 * TOKENS_PER_WORD).round() as u64,
        output_tokens: (output_words as f64 * TOKENS_PER_WORD).round() as u64,
    }
}
