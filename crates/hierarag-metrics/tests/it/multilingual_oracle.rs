//! Oracle test: for corpora in other languages, ROUGE-1 with the language's tokenizer equals
//! `rouge-score` 0.1.2 given that tokenizer, and BLEU equals `sacrebleu` 2.6.0 with the
//! tokenizer the language chooses (`char` for Korean and Japanese, `zh` for Chinese, `13a` for
//! the rest), on a committed fixture of 49 pairs in ten languages.
//!
//! The fixture and the expected values are written by
//! `scripts/oracles/multilingual_text_oracle.py`, whose tokenizer for rouge-score is written
//! from the specification in Python, independently of hierarag-lang; this test needs no
//! Python. Tokens must be equal, ROUGE-1 agree to 1e-12, BLEU to 1e-9 and BLEU's counts
//! exactly.

use std::collections::BTreeMap;
use std::path::PathBuf;

use hierarag_lang::Language;
use hierarag_metrics::{RougeScore, TextTokenizers, rouge1};
use serde::Deserialize;

#[derive(Deserialize)]
struct Pair {
    id: String,
    language: String,
    reference: String,
    prediction: String,
}

#[derive(Deserialize)]
struct Expected {
    packages: BTreeMap<String, String>,
    pairs: BTreeMap<String, ExpectedPair>,
    corpus_bleu: BTreeMap<String, f64>,
}

#[derive(Deserialize)]
struct ExpectedPair {
    rouge1_tokenizer: String,
    bleu_tokenizer: String,
    reference_tokens: Vec<String>,
    prediction_tokens: Vec<String>,
    rouge1: RougeScore,
    bleu: ExpectedBleu,
}

#[derive(Deserialize)]
struct ExpectedBleu {
    score: f64,
    counts: [usize; 4],
    totals: [usize; 4],
    sys_len: usize,
    ref_len: usize,
}

fn data(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

#[test]
fn text_metrics_in_ten_languages_equal_rouge_score_and_sacrebleu() {
    let pairs: Vec<Pair> = data("multilingual_pairs.jsonl")
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let expected: Expected = serde_json::from_str(&data("multilingual_expected.json")).unwrap();
    assert_eq!(expected.packages["rouge-score"], "0.1.2");
    assert_eq!(expected.packages["sacrebleu"], "2.6.0");
    assert_eq!(pairs.len(), expected.pairs.len());
    assert!(pairs.len() >= 45, "{} pairs", pairs.len());

    let mut by_language: BTreeMap<&str, (Vec<&str>, Vec<&str>)> = BTreeMap::new();
    let mut problems = Vec::new();
    for pair in &pairs {
        let language = Language::from_code(&pair.language).unwrap();
        let tokenizers = TextTokenizers::for_language(language);
        let want = &expected.pairs[&pair.id];
        assert_eq!(
            tokenizers.rouge1.name(),
            want.rouge1_tokenizer,
            "{}",
            pair.id
        );
        assert_eq!(tokenizers.bleu.name(), want.bleu_tokenizer, "{}", pair.id);
        if tokenizers.rouge1.tokenize(&pair.reference) != want.reference_tokens
            || tokenizers.rouge1.tokenize(&pair.prediction) != want.prediction_tokens
        {
            problems.push(format!(
                "{}: tokens {:?} / {:?}, rouge-score's tokenizer {:?} / {:?}",
                pair.id,
                tokenizers.rouge1.tokenize(&pair.reference),
                tokenizers.rouge1.tokenize(&pair.prediction),
                want.reference_tokens,
                want.prediction_tokens
            ));
        }
        let rouge = tokenizers.rouge1(&pair.reference, &pair.prediction);
        for (ours, theirs) in [
            (rouge.precision, want.rouge1.precision),
            (rouge.recall, want.rouge1.recall),
            (rouge.fmeasure, want.rouge1.fmeasure),
        ] {
            if (ours - theirs).abs() > 1e-12 {
                problems.push(format!(
                    "{}: ROUGE-1 {rouge:?}, rouge-score {:?}",
                    pair.id, want.rouge1
                ));
                break;
            }
        }
        let bleu = tokenizers.sentence_bleu(&pair.prediction, &[&pair.reference]);
        if (bleu.score - want.bleu.score).abs() > 1e-9
            || bleu.counts != want.bleu.counts
            || bleu.totals != want.bleu.totals
            || (bleu.sys_len, bleu.ref_len) != (want.bleu.sys_len, want.bleu.ref_len)
        {
            problems.push(format!(
                "{}: BLEU {} {:?}/{:?} ({}, {}), sacrebleu {} {:?}/{:?} ({}, {})",
                pair.id,
                bleu.score,
                bleu.counts,
                bleu.totals,
                bleu.sys_len,
                bleu.ref_len,
                want.bleu.score,
                want.bleu.counts,
                want.bleu.totals,
                want.bleu.sys_len,
                want.bleu.ref_len
            ));
        }
        let entry = by_language.entry(pair.language.as_str()).or_default();
        entry.0.push(&pair.prediction);
        entry.1.push(&pair.reference);
    }
    for (code, (predictions, references)) in &by_language {
        let tokenizers = TextTokenizers::for_language(Language::from_code(code).unwrap());
        let ours = tokenizers.corpus_bleu(predictions, references).score;
        let theirs = expected.corpus_bleu[*code];
        if (ours - theirs).abs() > 1e-9 {
            problems.push(format!("{code}: corpus BLEU {ours}, sacrebleu {theirs}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_korean_pair_that_scored_zero_now_overlaps() {
    let (reference, prediction) = (
        "서울 인구는 약 천만 명입니다.",
        "서울의 인구는 약 천만 명이다.",
    );
    assert_eq!(rouge1(reference, prediction).fmeasure, 0.0);
    let korean = TextTokenizers::for_language(Language::from_code("ko").unwrap());
    let score = korean.rouge1(reference, prediction);
    // 서울 인구 구는 약 천만 명입 입니 니다 / 서울 울의 인구 구는 약 천만 명이 이다: 5 of 8 each way.
    assert_eq!((score.precision, score.recall), (5.0 / 8.0, 5.0 / 8.0));
    assert!(korean.sentence_bleu(prediction, &[reference]).score > 0.0);
    assert!(TextTokenizers::for_language(Language::ENGLISH).is_default());
}
