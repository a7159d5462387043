//! ROUGE-1 exactly as the `rouge-score` package computes it.

use std::collections::HashMap;

use hierarag_lang::{Segmentation, lowercase_tokens};
use serde::{Deserialize, Serialize};

/// ROUGE precision, recall and F-measure, each in [0, 1], named as `rouge_score.scoring.Score`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Default)]
pub struct RougeScore {
    /// Overlapping n-grams / n-grams of the prediction.
    pub precision: f64,
    /// Overlapping n-grams / n-grams of the reference.
    pub recall: f64,
    /// The harmonic mean `2PR / (P + R)`, 0 when both are 0.
    pub fmeasure: f64,
}

/// The tokens `rouge-score` 0.1.2's default tokenizer makes of `text` (no stemming).
///
/// The package lowercases the text with Python's `str.lower()`, replaces every run of characters
/// outside `[a-z0-9]` by a space and splits on spaces, so a token is a maximal run of ASCII
/// lowercase letters and digits. Everything else separates tokens and vanishes: punctuation,
/// accented and non-Latin letters (`café` gives `caf`, CJK gives nothing), emoji. Two non-ASCII
/// characters lowercase into ASCII and so do survive: `İ` (U+0130) becomes `i` followed by a
/// combining dot, which separates, and the Kelvin sign `K` (U+212A) becomes `k`.
pub fn rouge_tokenize(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut current = String::new();
    // Lowercasing char by char equals Python's whole-string `lower()` here: the only
    // context-dependent mapping (Greek final sigma) yields a non-ASCII letter either way.
    for lower in text.chars().flat_map(char::to_lowercase) {
        if lower.is_ascii_lowercase() || lower.is_ascii_digit() {
            current.push(lower);
        } else if !current.is_empty() {
            tokens.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        tokens.push(current);
    }
    tokens
}

/// ROUGE-1 of `prediction` against `reference`, equal to `rouge-score` 0.1.2's
/// `RougeScorer(['rouge1'], use_stemmer=False).score(reference, prediction)['rouge1']`.
///
/// Both texts are tokenized by [`rouge_tokenize`]. The overlap counts each unigram with
/// multiplicity, `min(count in reference, count in prediction)`; precision is
/// overlap / prediction tokens, recall is overlap / reference tokens (each 0 when its text has no
/// token), and the F-measure is `2 * P * R / (P + R)`, or 0 when P + R is 0. The divisions are
/// done in the package's order, so the values are bit-identical, not merely close.
///
/// ```
/// use hierarag_metrics::rouge1;
///
/// let score = rouge1("The cat sat on the mat.", "the cat sat");
/// assert_eq!(score.precision, 1.0);
/// assert_eq!(score.recall, 0.5);
/// assert_eq!(score.fmeasure, 2.0 / 3.0);
/// ```
pub fn rouge1(reference: &str, prediction: &str) -> RougeScore {
    rouge1_with(reference, prediction, RougeTokenizer::RougeScore)
}

/// Which tokens ROUGE-1 counts. rouge-score's own tokenizer keeps only `[a-z0-9]`, so text in
/// any other script has no token at all and scores 0; the other two count the words of every
/// script, as `rouge-score` does when it is given a tokenizer of its own
/// (`RougeScorer(['rouge1'], tokenizer=...)`).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum RougeTokenizer {
    /// rouge-score's default (the paper's, for English): [`rouge_tokenize`].
    #[default]
    RougeScore,
    /// Words of letters, marks and digits of every script, lowercased
    /// (`hierarag_lang::lowercase_tokens` with word segmentation).
    Unicode,
    /// The CJK analyzer's tokens, lowercased: overlapping bigrams of Han, kana and Hangul, words
    /// for the rest (`hierarag_lang::lowercase_tokens` with CJK bigrams).
    CjkBigram,
}

impl RougeTokenizer {
    /// Its name in outputs: `rouge-score`, `unicode` or `cjk-bigram`.
    pub fn name(self) -> &'static str {
        match self {
            RougeTokenizer::RougeScore => "rouge-score",
            RougeTokenizer::Unicode => "unicode",
            RougeTokenizer::CjkBigram => "cjk-bigram",
        }
    }

    /// The tokens of `text`.
    pub fn tokenize(self, text: &str) -> Vec<String> {
        match self {
            RougeTokenizer::RougeScore => rouge_tokenize(text),
            RougeTokenizer::Unicode => lowercase_tokens(text, Segmentation::Words),
            RougeTokenizer::CjkBigram => lowercase_tokens(text, Segmentation::CjkBigrams),
        }
    }
}

/// [`rouge1`] over the tokens of another [`RougeTokenizer`]: equal to rouge-score 0.1.2's
/// `RougeScorer(['rouge1'], tokenizer=T).score(reference, prediction)['rouge1']` with a
/// tokenizer `T` whose `tokenize` returns these tokens.
///
/// ```
/// use hierarag_metrics::{RougeTokenizer, rouge1, rouge1_with};
///
/// let (reference, prediction) = ("서울 인구는 약 천만 명입니다.", "서울의 인구는 약 천만 명이다.");
/// assert_eq!(rouge1(reference, prediction).fmeasure, 0.0);
/// assert!(rouge1_with(reference, prediction, RougeTokenizer::CjkBigram).fmeasure > 0.5);
/// ```
pub fn rouge1_with(reference: &str, prediction: &str, tokenizer: RougeTokenizer) -> RougeScore {
    let reference_tokens = tokenizer.tokenize(reference);
    let prediction_tokens = tokenizer.tokenize(prediction);
    let reference_counts = unigram_counts(&reference_tokens);
    let prediction_counts = unigram_counts(&prediction_tokens);
    let (n_reference, n_prediction) = (reference_tokens.len(), prediction_tokens.len());
    let overlap: usize = reference_counts
        .iter()
        .map(|(token, &count)| count.min(prediction_counts.get(token).copied().unwrap_or(0)))
        .sum();
    let precision = overlap as f64 / n_prediction.max(1) as f64;
    let recall = overlap as f64 / n_reference.max(1) as f64;
    RougeScore {
        precision,
        recall,
        fmeasure: fmeasure(precision, recall),
    }
}

/// ROUGE-1 of `prediction` against several references, equal to rouge-score 0.1.2's
/// `RougeScorer(['rouge1'], use_stemmer=False).score_multi(references, prediction)['rouge1']`:
/// the score against the reference with the highest F-measure, the first of them on a tie
/// (numpy's `argmax`). No reference scores 0 (rouge-score raises).
///
/// ```
/// use hierarag_metrics::{rouge1, rouge1_multi};
///
/// let best = rouge1_multi(&["a dog", "the cat sat"], "the cat sat down");
/// assert_eq!(best, rouge1("the cat sat", "the cat sat down"));
/// ```
pub fn rouge1_multi<R: AsRef<str>>(references: &[R], prediction: &str) -> RougeScore {
    rouge1_multi_with(references, prediction, RougeTokenizer::RougeScore)
}

/// [`rouge1_multi`] over the tokens of another [`RougeTokenizer`].
pub fn rouge1_multi_with<R: AsRef<str>>(
    references: &[R],
    prediction: &str,
    tokenizer: RougeTokenizer,
) -> RougeScore {
    let mut best: Option<RougeScore> = None;
    for reference in references {
        let score = rouge1_with(reference.as_ref(), prediction, tokenizer);
        if best.is_none_or(|best| score.fmeasure > best.fmeasure) {
            best = Some(score);
        }
    }
    best.unwrap_or_default()
}

/// `rouge_score.scoring.fmeasure`, with its order of operations.
fn fmeasure(precision: f64, recall: f64) -> f64 {
    if precision + recall > 0.0 {
        2.0 * precision * recall / (precision + recall)
    } else {
        0.0
    }
}

fn unigram_counts(tokens: &[String]) -> HashMap<&str, usize> {
    let mut counts = HashMap::new();
    for token in tokens {
        *counts.entry(token.as_str()).or_insert(0) += 1;
    }
    counts
}
