//! A benchmark question as the check reads it, from its record: its categories (a generated
//! question's design, a human question's tags) and the properties measured without a model.

use std::collections::{HashMap, HashSet};

use hierarag_lang::{Language, lowercase_tokens};
use hierarag_records::{BenchmarkRecord, CategoryRef, TagRecord};

use crate::Question;

/// A tag whose votes agree less than this at some level leaves its question unplaced on that
/// dimension.
pub const PLACED_CONFIDENCE: f64 = 0.5;

/// The question of `record`. `tags`: `None` for a generated question (its design's categories),
/// `Some(tag)` for a human one (`Some(None)` when the tagger gave it no tag). `documents`: the
/// texts of the relevant documents by id; `gold_rank`: the best rank of one in the BM25
/// ranking of the question, measured by the caller.
pub fn question(
    record: &BenchmarkRecord,
    tags: Option<Option<&TagRecord>>,
    documents: &HashMap<String, String>,
    gold_rank: Option<f64>,
    language: Language,
) -> Question {
    let segmentation = language.segmentation();
    let (categories, unplaced) = match tags {
        None => (record.categories.clone(), Vec::new()),
        Some(Some(tag)) => placed(tag),
        Some(None) => (Vec::new(), vec!["(not tagged)".to_owned()]),
    };
    let tokens = lowercase_tokens(&record.question, segmentation);
    let words = tokens.len() as f64;
    let question_tokens: HashSet<String> = tokens.into_iter().collect();
    let relevant: Vec<HashSet<String>> = record
        .doc_ids
        .iter()
        .filter_map(|id| documents.get(id))
        .map(|text| lowercase_tokens(text, segmentation).into_iter().collect())
        .collect();
    let overlap = (!relevant.is_empty() && !question_tokens.is_empty()).then(|| {
        let found = question_tokens
            .iter()
            .filter(|t| relevant.iter().any(|d| d.contains(*t)))
            .count();
        found as f64 / question_tokens.len() as f64
    });
    let answer_words = lowercase_tokens(&record.answer, segmentation).len() as f64;
    Question {
        id: record.id.clone(),
        categories,
        unplaced,
        words,
        overlap,
        gold_rank,
        answer_words: (answer_words > 0.0 && !record.unanswerable).then_some(answer_words),
        refusal_expected: record.unanswerable,
        has_reference: !record.answer.trim().is_empty(),
    }
}

/// A tagged question's categories at every level, and the dimensions whose votes agreed on
/// less than [`PLACED_CONFIDENCE`] of some level.
fn placed(tag: &TagRecord) -> (Vec<CategoryRef>, Vec<String>) {
    let mut categories = Vec::new();
    let mut unplaced = Vec::new();
    for (dimension, labels) in &tag.tags {
        for (level, category) in &labels.categories {
            categories.push(CategoryRef {
                dimension: dimension.clone(),
                level: *level,
                category: category.clone(),
            });
        }
        if labels
            .confidence
            .as_ref()
            .is_some_and(|c| c.values().any(|&share| share < PLACED_CONFIDENCE))
        {
            unplaced.push(dimension.clone());
        }
    }
    (categories, unplaced)
}
