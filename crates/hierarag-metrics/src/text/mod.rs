//! Text metrics of a generated answer against its reference: ROUGE-1 and BLEU, bit-for-bit.
//!
//! Each function here is a port of one reference Python package, down to its tokenizer and the
//! order of its floating-point operations, so that our numbers equal the ones papers report:
//! - [`rouge1`] matches `rouge-score` 0.1.2
//!   (`RougeScorer(['rouge1'], use_stemmer=False).score(reference, prediction)['rouge1']`);
//! - [`sentence_bleu`] and [`corpus_bleu`] match `sacrebleu` 2.6.0 (`sacrebleu.sentence_bleu` /
//!   `sacrebleu.corpus_bleu` with their defaults: 13a tokenizer, case-sensitive, exp smoothing),
//!   also with several references per prediction ([`corpus_bleu_multi`]);
//! - [`rouge1_multi`] matches rouge-score's `score_multi` (the best of several references).
//!
//! `tests/text_oracle.rs` checks all three against values the packages computed on a committed
//! fixture of real and adversarial text (`scripts/oracles/text_metrics_oracle.py`).

mod bleu;
mod rouge;

#[cfg(test)]
mod tests;

pub use bleu::{
    BLEU_MAX_ORDER, BleuScore, BleuTokenizer, corpus_bleu, corpus_bleu_multi,
    corpus_bleu_multi_with, corpus_bleu_with, is_sacrebleu_chinese, sentence_bleu,
    sentence_bleu_with, tokenize_13a, tokenize_char, tokenize_zh,
};
pub use rouge::{
    RougeScore, RougeTokenizer, rouge_tokenize, rouge1, rouge1_multi, rouge1_multi_with,
    rouge1_with,
};

use hierarag_lang::{Language, Segmentation};
use serde::{Deserialize, Serialize};

/// The tokenizers of both text metrics for one language (docs/design.md, "Languages").
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TextTokenizers {
    pub rouge1: RougeTokenizer,
    pub bleu: BleuTokenizer,
}

impl TextTokenizers {
    /// English keeps the reference packages' defaults (rouge-score's tokenizer, 13a). Chinese,
    /// Japanese and Korean count CJK bigrams for ROUGE-1 (as the index does) and use sacrebleu's
    /// `zh` tokenizer (Chinese) or `char` (Japanese and Korean, whose `ja-mecab` / `ko-mecab`
    /// need MeCab); every other language counts Unicode words for ROUGE-1 and keeps 13a,
    /// sacrebleu's default for it.
    pub fn for_language(language: Language) -> TextTokenizers {
        if language.is_english() {
            return TextTokenizers::default();
        }
        match language.segmentation() {
            Segmentation::Words => TextTokenizers {
                rouge1: RougeTokenizer::Unicode,
                bleu: BleuTokenizer::Thirteen,
            },
            Segmentation::CjkBigrams => TextTokenizers {
                rouge1: RougeTokenizer::CjkBigram,
                bleu: if language.code() == "zh" {
                    BleuTokenizer::Zh
                } else {
                    BleuTokenizer::Char
                },
            },
        }
    }

    /// Whether these are the English defaults.
    pub fn is_default(&self) -> bool {
        *self == TextTokenizers::default()
    }

    /// ROUGE-1 F-measure and sentence BLEU of one answer against its reference.
    pub fn rouge1(&self, reference: &str, prediction: &str) -> RougeScore {
        rouge1_with(reference, prediction, self.rouge1)
    }

    pub fn sentence_bleu<R: AsRef<str>>(&self, prediction: &str, references: &[R]) -> BleuScore {
        sentence_bleu_with(prediction, references, self.bleu)
    }

    pub fn corpus_bleu<P: AsRef<str>, R: AsRef<str>>(
        &self,
        predictions: &[P],
        references: &[R],
    ) -> BleuScore {
        corpus_bleu_with(predictions, references, self.bleu)
    }

    /// ROUGE-1 against the best of several references ([`rouge1_multi`]).
    pub fn rouge1_multi<R: AsRef<str>>(&self, references: &[R], prediction: &str) -> RougeScore {
        rouge1_multi_with(references, prediction, self.rouge1)
    }

    /// Corpus BLEU with several references per prediction ([`corpus_bleu_multi`]).
    pub fn corpus_bleu_multi<P, Rs, R>(&self, predictions: &[P], references: &[Rs]) -> BleuScore
    where
        P: AsRef<str>,
        Rs: AsRef<[R]>,
        R: AsRef<str>,
    {
        corpus_bleu_multi_with(predictions, references, self.bleu)
    }
}

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
