//! Hand-checked table tests and proptest invariants of the text metrics.

use proptest::prelude::*;

use super::bleu::tokenize_13a;
use super::{BleuScore, corpus_bleu, is_python_whitespace, rouge_tokenize, rouge1, sentence_bleu};

#[test]
fn python_whitespace_is_exactly_str_isspace() {
    // `[hex(i) for i in range(0x110000) if chr(i).isspace()]`, Python 3.11 (Unicode 14).
    let expected: Vec<u32> = [
        0x9..=0xd,
        0x1c..=0x20,
        0x85..=0x85,
        0xa0..=0xa0,
        0x1680..=0x1680,
        0x2000..=0x200a,
        0x2028..=0x2029,
        0x202f..=0x202f,
        0x205f..=0x205f,
        0x3000..=0x3000,
    ]
    .into_iter()
    .flatten()
    .collect();
    let actual: Vec<u32> = (0..=0x10_ffff)
        .filter_map(char::from_u32)
        .filter(|&c| is_python_whitespace(c))
        .map(u32::from)
        .collect();
    assert_eq!(actual, expected);
}

#[test]
fn rouge_tokenizer_keeps_only_ascii_letters_and_digits() {
    let cases: &[(&str, &[&str])] = &[
        ("Hello, World!", &["hello", "world"]),
        (
            "It's 3.14 -- e.g. U.S.A.",
            &["it", "s", "3", "14", "e", "g", "u", "s", "a"],
        ),
        ("café naïve Zürich", &["caf", "na", "ve", "z", "rich"]),
        // U+0130 lowercases to `i` + U+0307; the Kelvin sign to ASCII `k`.
        ("İstanbul 300\u{212a}", &["i", "stanbul", "300k"]),
        ("東京 🎉 ¿¡…!", &[]),
        ("", &[]),
        ("  \n\t ", &[]),
        (
            "snake_case CamelCase2024",
            &["snake", "case", "camelcase2024"],
        ),
    ];
    for &(text, expected) in cases {
        assert_eq!(rouge_tokenize(text), expected, "{text:?}");
    }
}

#[test]
fn rouge1_table() {
    // (reference, prediction, precision, recall, fmeasure)
    let cases: &[(&str, &str, f64, f64, f64)] = &[
        ("The cat sat.", "the CAT sat", 1.0, 1.0, 1.0),
        ("the cat sat on the mat", "the cat", 1.0, 2.0 / 6.0, 0.5),
        // Counted with multiplicity: min(2, 3) "the" + min(1, 0) "cat".
        (
            "the the cat",
            "the the the",
            2.0 / 3.0,
            2.0 / 3.0,
            2.0 / 3.0,
        ),
        ("a b c d", "e f", 0.0, 0.0, 0.0),
        ("a b c d", "", 0.0, 0.0, 0.0),
        ("", "a b", 0.0, 0.0, 0.0),
        ("", "", 0.0, 0.0, 0.0),
        ("東京", "東京", 0.0, 0.0, 0.0),
    ];
    for &(reference, prediction, precision, recall, fmeasure) in cases {
        let score = rouge1(reference, prediction);
        assert_eq!(
            (score.precision, score.recall, score.fmeasure),
            (precision, recall, fmeasure),
            "{reference:?} vs {prediction:?}"
        );
    }
}

#[test]
fn tokenize_13a_table() {
    // Expected values from sacrebleu 2.6.0's `Tokenizer13a()(line)`.
    let cases = [
        ("a..b", "a . . b"),
        (".abc", ". abc"),
        ("3.5,1", "3.5,1"),
        ("x-y 3-4", "x-y 3 - 4"),
        ("e.g. U.S.A.", "e . g . U . S . A ."),
        ("Hello, world. 1,000.5 -3", "Hello , world . 1,000.5 -3"),
        ("a\u{1c}b", "a b"),
        ("a\u{a0}b", "a b"),
        ("naïve café", "naïve café"),
        ("&amp;lt;", "<"),
        ("&amp;amp;", "& amp ;"),
        ("&quot;Hi&quot; &amp; &lt;b&gt;", "\" Hi \" & < b >"),
        ("state-\nof-the-art", "stateof-the-art"),
        ("a-<skipped>\nb", "ab"),
        ("x <skipped> y", "x y"),
        (
            "Price: $5.00, or 5,00 EUR.",
            "Price : $ 5.00 , or 5,00 EUR .",
        ),
        ("(see p. 12-14)", "( see p . 12 - 14 )"),
        ("don't stop", "don't stop"),
        ("东京，2024年。", "东京，2024年。"),
        ("Hello 🎉!!", "Hello 🎉 ! !"),
        (" lead\ttab\u{3000}wide  ", "lead tab wide"),
        ("", ""),
    ];
    for (line, expected) in cases {
        assert_eq!(tokenize_13a(line), expected, "{line:?}");
    }
}

#[test]
fn bleu_strips_trailing_whitespace_before_joining_hyphenations() {
    // sacrebleu strips `abc-\n` to `abc-` first, so the `-\n` join never happens.
    let score = sentence_bleu("abc-\n", &["abc-"]);
    assert_eq!((score.sys_len, score.counts[0]), (1, 1));
    let joined = sentence_bleu("abc-\ndef", &["abcdef"]);
    assert_eq!((joined.sys_len, joined.counts[0]), (1, 1));
}

fn assert_close(case: &str, name: &str, got: f64, want: f64) {
    assert!(
        (got - want).abs() < 1e-12,
        "{case}, {name}: got {got}, want {want}"
    );
}

#[test]
fn sentence_bleu_hand_computed() {
    // One unigram match of two, no bigram: precisions 50 and exp-smoothed 100 / (2 * 1); the
    // prediction has no 3- or 4-grams, so the effective order is 2.
    let score = sentence_bleu("The dog", &["The cat"]);
    assert_eq!(score.counts, [1, 0, 0, 0]);
    assert_eq!(score.totals, [2, 1, 0, 0]);
    assert_eq!(score.precisions, [50.0, 50.0, 0.0, 0.0]);
    assert_close("dog/cat", "score", score.score, 50.0);

    // Case matters, and nothing matching scores 0 with zero precisions.
    let score = sentence_bleu("the dog", &["The cat"]);
    assert_eq!(score.score, 0.0);
    assert_eq!(score.precisions, [0.0; 4]);

    // Brevity: 2 tokens against 4 gives bp = exp(1 - 4/2).
    let score = sentence_bleu("a b", &["a b c d"]);
    assert_eq!(score.bp, (-1.0f64).exp());
    assert_close("short", "score", score.score, 100.0 * (-1.0f64).exp());

    // Each further order without a match halves the smoothed precision again:
    // 100 / (2 * 3 bigrams), 100 / (4 * 2 trigrams), 100 / (8 * 1 four-gram).
    let score = sentence_bleu("a x b y", &["a b"]);
    assert_eq!(score.counts, [2, 0, 0, 0]);
    assert_eq!(score.totals, [4, 3, 2, 1]);
    assert_eq!(
        score.precisions,
        [50.0, 100.0 / 6.0, 100.0 / 8.0, 100.0 / 8.0]
    );
}

#[test]
fn sentence_bleu_edge_cases() {
    let empty = BleuScore {
        bp: 0.0,
        ref_len: 3,
        ..BleuScore::default()
    };
    assert_eq!(sentence_bleu("", &["a b c"]), empty);
    let empty_reference = sentence_bleu("a b c", &[""]);
    assert_eq!((empty_reference.score, empty_reference.bp), (0.0, 1.0));
    assert_eq!(sentence_bleu("", &[""]).score, 0.0);
    let no_reference: [&str; 0] = [];
    assert_eq!(sentence_bleu("a b", &no_reference).score, 0.0);
}

#[test]
fn sentence_bleu_multiple_references() {
    // 3 tokens between references of 2 and 4: a tie, resolved to the shorter.
    let score = sentence_bleu("a b c", &["a b c d", "x y"]);
    assert_eq!(score.ref_len, 2);
    let score = sentence_bleu("a b c", &["x y", "a b c d"]);
    assert_eq!(score.ref_len, 2);
    // Clipping takes the highest count in any single reference: "a" twice, not three times.
    let score = sentence_bleu("a a a", &["a a", "a"]);
    assert_eq!(score.counts[0], 2);
}

#[test]
fn corpus_bleu_sums_statistics_without_effective_order() {
    // Every prediction is shorter than four tokens: no 4-gram, so corpus BLEU is 0 even though
    // each sentence BLEU is positive.
    let predictions = ["a b", "c d e"];
    let references = ["a b", "c d e"];
    assert!(sentence_bleu(predictions[0], &[references[0]]).score > 99.0);
    let score = corpus_bleu(&predictions, &references);
    assert_eq!(score.score, 0.0);
    assert_eq!((score.sys_len, score.ref_len), (5, 5));
    assert_eq!(score.totals, [5, 3, 1, 0]);

    let empty: [&str; 0] = [];
    assert_eq!(corpus_bleu(&empty, &empty).score, 0.0);
}

#[test]
#[should_panic(expected = "one reference per prediction")]
fn corpus_bleu_rejects_unpaired_inputs() {
    corpus_bleu(&["a"], &["a", "b"]);
}

/// Text mixing plain words, ASCII punctuation and arbitrary characters.
fn text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => prop::sample::select(vec![
            "the", "The", "cat", "sat", "on", "mat", "1,000.5", "3-4", "e.g.", "&amp;", "-\n",
        ])
        .prop_map(str::to_owned),
        2 => "[ -~]{1,4}",
        1 => any::<char>().prop_map(String::from),
    ];
    prop::collection::vec(piece, 0..25).prop_map(|pieces| pieces.join(" "))
}

proptest! {
    #[test]
    fn rouge1_is_bounded_and_symmetric(reference in text(), prediction in text()) {
        let forward = rouge1(&reference, &prediction);
        for value in [forward.precision, forward.recall, forward.fmeasure] {
            prop_assert!((0.0..=1.0).contains(&value));
        }
        let backward = rouge1(&prediction, &reference);
        prop_assert_eq!(forward.precision, backward.recall);
        prop_assert_eq!(forward.recall, backward.precision);
        prop_assert_eq!(forward.fmeasure, backward.fmeasure);
    }

    #[test]
    fn identical_texts_score_one_and_a_hundred(text in text()) {
        if !rouge_tokenize(&text).is_empty() {
            prop_assert_eq!(rouge1(&text, &text).fmeasure, 1.0);
        }
        let bleu = sentence_bleu(&text, &[&text]);
        if bleu.sys_len > 0 {
            prop_assert!((bleu.score - 100.0).abs() < 1e-9, "{}", bleu.score);
        }
    }

    #[test]
    fn bleu_is_bounded(prediction in text(), reference in text(), other in text()) {
        for score in [
            sentence_bleu(&prediction, &[&reference]),
            sentence_bleu(&prediction, &[&reference, &other]),
            corpus_bleu(&[&prediction, &other], &[&reference, &reference]),
        ] {
            prop_assert!((0.0..=100.0 + 1e-9).contains(&score.score), "{score:?}");
            prop_assert!((0.0..=1.0).contains(&score.bp));
            for order_idx in 0..4 {
                prop_assert!(score.counts[order_idx] <= score.totals[order_idx]);
            }
        }
    }

    #[test]
    fn one_segment_corpus_is_sentence_bleu(prediction in text(), reference in text()) {
        // With four or more tokens the effective order is 4 anyway, so both agree exactly.
        let sentence = sentence_bleu(&prediction, &[&reference]);
        let corpus = corpus_bleu(&[&prediction], &[&reference]);
        if sentence.sys_len >= 4 {
            prop_assert_eq!(sentence, corpus);
        } else {
            prop_assert_eq!(sentence.counts, corpus.counts);
        }
    }
}
