//! Tokens of text in any script: words of letters, marks and digits, and CJK bigrams.

use std::sync::LazyLock;

use regex::Regex;

use crate::language::Segmentation;
use crate::script::is_cjk;

/// A word: a maximal run of letters, marks and digits of any script (Unicode general
/// categories L, M and N). Marks belong to words so that Devanagari or Thai vowel signs do not
/// split them.
static WORD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[\p{L}\p{M}\p{N}]+").expect("a valid pattern"));

/// Calls `emit(token, start, end)` for every token of `text` in order, with its byte offsets.
///
/// A token is a word ([`Segmentation::Words`]); with [`Segmentation::CjkBigrams`], every run of
/// CJK characters inside a word (Han, kana, Hangul: [`is_cjk`]) is cut into its overlapping
/// bigrams, a run of one character giving that character, while the rest of the word stays
/// whole. So `서울의 인구` gives `서울 울의 인구`, `東京タワー` gives `東京 京タ タワ ワー`, and
/// `Seoul2024년` gives `Seoul2024 년`. This is what Lucene's CJKAnalyzer does, except that its
/// tokenizer keeps letters and digits of other scripts glued to Hangul (`2024년`) in one word.
/// Tokens are not lowercased here.
pub fn for_each_token(
    text: &str,
    segmentation: Segmentation,
    mut emit: impl FnMut(&str, usize, usize),
) {
    for word in WORD.find_iter(text) {
        match segmentation {
            Segmentation::Words => emit(word.as_str(), word.start(), word.end()),
            Segmentation::CjkBigrams => cut_word(text, word.start(), word.end(), &mut emit),
        }
    }
}

/// Emits the CJK bigrams and the other runs of the word `text[start..end]`.
fn cut_word(text: &str, start: usize, end: usize, emit: &mut impl FnMut(&str, usize, usize)) {
    let word = &text[start..end];
    // Byte offsets (within the word) of the characters of the current CJK run.
    let mut cjk_run: Vec<usize> = Vec::new();
    let mut other_start: Option<usize> = None;
    let flush_cjk =
        |run: &mut Vec<usize>, run_end: usize, emit: &mut dyn FnMut(&str, usize, usize)| {
            match run.len() {
                0 => {}
                1 => emit(&word[run[0]..run_end], start + run[0], start + run_end),
                _ => {
                    for pair in 0..run.len() - 1 {
                        let pair_end = run.get(pair + 2).copied().unwrap_or(run_end);
                        emit(
                            &word[run[pair]..pair_end],
                            start + run[pair],
                            start + pair_end,
                        );
                    }
                }
            }
            run.clear();
        };
    for (at, c) in word.char_indices() {
        if is_cjk(c) {
            if let Some(from) = other_start.take() {
                emit(&word[from..at], start + from, start + at);
            }
            cjk_run.push(at);
        } else {
            if !cjk_run.is_empty() {
                flush_cjk(&mut cjk_run, at, emit);
            }
            other_start.get_or_insert(at);
        }
    }
    if let Some(from) = other_start {
        emit(&word[from..], start + from, end);
    }
    flush_cjk(&mut cjk_run, word.len(), emit);
}

/// The tokens of `text` lowercased first (with Unicode's full mapping, as Python's
/// `str.lower()`): what ROUGE-1 counts for a language other than English.
pub fn lowercase_tokens(text: &str, segmentation: Segmentation) -> Vec<String> {
    let lower = text.to_lowercase();
    let mut tokens = Vec::new();
    for_each_token(&lower, segmentation, |token, _, _| {
        tokens.push(token.to_string())
    });
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cut(text: &str, segmentation: Segmentation) -> Vec<String> {
        let mut tokens = Vec::new();
        for_each_token(text, segmentation, |token, start, end| {
            assert_eq!(&text[start..end], token);
            tokens.push(token.to_string());
        });
        tokens
    }

    #[test]
    fn words_of_every_script_keep_their_marks() {
        assert_eq!(
            cut("Café, naïve—Москва 2024! हिन्दी ไทย", Segmentation::Words),
            ["Café", "naïve", "Москва", "2024", "हिन्दी", "ไทย"]
        );
        assert_eq!(
            cut("서울의 인구는 약 천만 명이다.", Segmentation::Words),
            ["서울의", "인구는", "약", "천만", "명이다"]
        );
    }

    #[test]
    fn cjk_runs_become_bigrams_and_single_characters_stay() {
        assert_eq!(
            cut("서울의 인구는 약 천만 명이다.", Segmentation::CjkBigrams),
            ["서울", "울의", "인구", "구는", "약", "천만", "명이", "이다"]
        );
        assert_eq!(
            cut("東京タワーは333m。", Segmentation::CjkBigrams),
            ["東京", "京タ", "タワ", "ワー", "ーは", "333m"]
        );
        assert_eq!(
            cut("Seoul2024년 KTX와", Segmentation::CjkBigrams),
            ["Seoul2024", "년", "KTX", "와"]
        );
        assert_eq!(cut("中", Segmentation::CjkBigrams), ["中"]);
        assert!(cut("。、！ ...", Segmentation::CjkBigrams).is_empty());
    }

    #[test]
    fn lowercase_tokens_lowercase_the_whole_text_first() {
        assert_eq!(
            lowercase_tokens("ΟΔΟΣ Straße İstanbul", Segmentation::Words),
            ["\u{3bf}\u{3b4}\u{3bf}\u{3c2}", "straße", "i\u{307}stanbul"]
        );
    }

    proptest! {
        #[test]
        fn tokens_are_non_empty_slices_in_order(text in "\\PC{0,40}") {
            for segmentation in [Segmentation::Words, Segmentation::CjkBigrams] {
                let mut last_start = 0;
                for_each_token(&text, segmentation, |token, start, end| {
                    assert!(!token.is_empty());
                    assert!(start >= last_start && end > start);
                    assert_eq!(&text[start..end], token);
                    last_start = start;
                });
            }
        }
    }
}
