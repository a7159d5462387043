//! Text metrics of a generated answer against its reference: ROUGE-1 and BLEU, bit-for-bit.
//!
//! Each function here is a port of one reference Python package, down to its tokenizer and the
//! order of its floating-point operations, so that our numbers equal the ones papers report:
//! - [`rouge1`] matches `rouge-score` 0.1.2
//!   (`RougeScorer(['rouge1'], use_stemmer=False).score(reference, prediction)['rouge1']`);
//! - [`sentence_bleu`] and [`corpus_bleu`] match `sacrebleu` 2.6.0 (`sacrebleu.sentence_bleu` /
//!   `sacrebleu.corpus_bleu` with their defaults: 13a tokenizer, case-sensitive, exp smoothing).
//!
//! `tests/text_oracle.rs` checks all three against values the packages computed on a committed
//! fixture of real and adversarial text (`scripts/oracles/text_metrics_oracle.py`).

mod bleu;
mod rouge;

#[cfg(test)]
mod tests;

pub use bleu::{BLEU_MAX_ORDER, BleuScore, corpus_bleu, sentence_bleu, tokenize_13a};
pub use rouge::{RougeScore, rouge_tokenize, rouge1};

/// Python's `str.isspace()`, which `str.split()` and `str.rstrip()` split and strip on.
///
/// It is Rust's `char::is_whitespace` (Unicode White_Space) plus the four ASCII information
/// separators U+001C..U+001F, which Python counts as whitespace because their bidirectional class
/// is B or S.
fn is_python_whitespace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `text.split()` with no argument: runs of whitespace separate, and no token is empty.
fn python_split(text: &str) -> impl Iterator<Item = &str> {
    text.split(is_python_whitespace)
        .filter(|token| !token.is_empty())
}
