//! Oracle test: ROUGE-1 and BLEU equal `rouge-score` 0.1.2's and `sacrebleu` 2.6.0's on a
//! committed fixture of 331 answer/reference pairs from the Wikipedia sample and adversarial text.
//!
//! Also corpus BLEU with several references per prediction (and ROUGE-1 against the best of
//! them) on small corpora the same script builds from those pairs and by hand.
//!
//! The fixture and the expected values are written by `scripts/oracles/text_metrics_oracle.py`
//! (see its header to regenerate them); this test needs no Python. ROUGE-1 must agree to 1e-12
//! and BLEU to 1e-9, and every integer statistic of BLEU (lengths, matches, totals) exactly.
//! On the machine that wrote the fixture all 6,705 values agree bit for bit; the tolerances only
//! absorb serde_json's default float parsing (up to 1 ulp off without its `float_roundtrip`
//! feature) and last-bit differences between the C libraries' `exp` and `log`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use hierarag_metrics::{
    BleuScore, BleuTokenizer, RougeScore, corpus_bleu, corpus_bleu_multi_with, rouge1,
    rouge1_multi, sentence_bleu,
};
use serde::Deserialize;

const ROUGE_TOLERANCE: f64 = 1e-12;
const BLEU_TOLERANCE: f64 = 1e-9;
/// At least this many pairs; the fixture's kinds of pair must all be present.
const MIN_PAIRS: usize = 200;
const KINDS: [&str; 10] = [
    "empty",
    "identical",
    "long",
    "non_ascii",
    "numbers",
    "paraphrase",
    "partial",
    "refusal",
    "tok13a",
    "unrelated",
];

#[derive(Deserialize)]
struct Pair {
    id: String,
    reference: String,
    prediction: String,
}

#[derive(Deserialize)]
struct Expected {
    packages: BTreeMap<String, String>,
    pairs: BTreeMap<String, ExpectedPair>,
    corpus_bleu: BTreeMap<String, ExpectedCorpus>,
    multi_reference_bleu: Vec<ExpectedMultiReference>,
    multi_reference_corpus_bleu: Vec<ExpectedMultiReferenceCorpus>,
}

#[derive(Deserialize)]
struct ExpectedPair {
    rouge1: RougeScore,
    bleu: BleuScore,
}

#[derive(Deserialize)]
struct ExpectedCorpus {
    ids: Vec<String>,
    bleu: BleuScore,
}

#[derive(Deserialize)]
struct ExpectedMultiReference {
    prediction: String,
    references: Vec<String>,
    bleu: BleuScore,
}

/// A corpus with several references per prediction: `references[i]` are those of
/// `predictions[i]`; `rouge1[i]` is rouge-score's `score_multi` of segment i (English corpora).
#[derive(Deserialize)]
struct ExpectedMultiReferenceCorpus {
    name: String,
    tokenize: BleuTokenizer,
    predictions: Vec<String>,
    references: Vec<Vec<String>>,
    bleu: BleuScore,
    #[serde(default)]
    rouge1: Vec<RougeScore>,
}

fn data_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn read_pairs() -> Vec<Pair> {
    let path = data_path("text_metrics_pairs.jsonl");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    text.lines()
        .enumerate()
        .map(|(line_idx, line)| {
            serde_json::from_str(line)
                .unwrap_or_else(|error| panic!("{} line {}: {error}", path.display(), line_idx + 1))
        })
        .collect()
}

fn read_expected() -> Expected {
    let path = data_path("text_metrics_expected.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// Collects mismatches so that one run names every failing case, not just the first.
#[derive(Default)]
struct Mismatches(String, usize);

impl Mismatches {
    fn check_float(&mut self, case: &str, field: &str, got: f64, want: f64, tolerance: f64) {
        if (got - want).abs() > tolerance || got.is_nan() != want.is_nan() {
            self.push(case, field, &got, &want);
        }
    }

    fn check_exact<T: PartialEq + std::fmt::Debug>(
        &mut self,
        case: &str,
        field: &str,
        got: &T,
        want: &T,
    ) {
        if got != want {
            self.push(case, field, got, want);
        }
    }

    fn push(
        &mut self,
        case: &str,
        field: &str,
        got: &dyn std::fmt::Debug,
        want: &dyn std::fmt::Debug,
    ) {
        self.1 += 1;
        if self.1 <= 30 {
            writeln!(self.0, "  {case}, {field}: got {got:?}, want {want:?}").unwrap();
        }
    }

    fn check_bleu(&mut self, case: &str, got: &BleuScore, want: &BleuScore) {
        self.check_float(case, "bleu score", got.score, want.score, BLEU_TOLERANCE);
        self.check_float(case, "bleu bp", got.bp, want.bp, BLEU_TOLERANCE);
        assert_eq!(
            got.precisions.len(),
            want.precisions.len(),
            "{case}: bleu precisions"
        );
        for (order_idx, (&got_p, &want_p)) in
            got.precisions.iter().zip(&want.precisions).enumerate()
        {
            let field = format!("bleu precision {}", order_idx + 1);
            self.check_float(case, &field, got_p, want_p, BLEU_TOLERANCE);
        }
        self.check_exact(case, "bleu sys_len", &got.sys_len, &want.sys_len);
        self.check_exact(case, "bleu ref_len", &got.ref_len, &want.ref_len);
        self.check_exact(case, "bleu counts", &got.counts, &want.counts);
        self.check_exact(case, "bleu totals", &got.totals, &want.totals);
    }

    fn assert_none(self, what: &str) {
        assert!(
            self.1 == 0,
            "{} mismatches with {what} (first 30):\n{}",
            self.1,
            self.0
        );
    }
}

#[test]
fn fixture_has_every_kind_of_pair_and_matching_ids() {
    let pairs = read_pairs();
    let expected = read_expected();
    assert!(pairs.len() >= MIN_PAIRS, "only {} pairs", pairs.len());
    let ids: Vec<&str> = pairs.iter().map(|pair| pair.id.as_str()).collect();
    let expected_ids: Vec<&str> = expected.pairs.keys().map(String::as_str).collect();
    let mut sorted_ids = ids.clone();
    sorted_ids.sort_unstable();
    sorted_ids.dedup();
    assert_eq!(
        sorted_ids.len(),
        ids.len(),
        "duplicate ids in the pairs file"
    );
    assert_eq!(
        sorted_ids, expected_ids,
        "pairs and expected values name different ids"
    );
    for kind in KINDS {
        assert!(
            ids.iter().any(|id| id.starts_with(&format!("{kind}-"))),
            "no pair of kind {kind}"
        );
    }
    assert_eq!(expected.packages["rouge-score"], "0.1.2");
    assert_eq!(expected.packages["sacrebleu"], "2.6.0");
}

#[test]
fn rouge1_equals_rouge_score_on_every_pair() {
    let expected = read_expected();
    let mut mismatches = Mismatches::default();
    for pair in read_pairs() {
        let got = rouge1(&pair.reference, &pair.prediction);
        let want = expected.pairs[&pair.id].rouge1;
        mismatches.check_float(
            &pair.id,
            "rouge1 precision",
            got.precision,
            want.precision,
            ROUGE_TOLERANCE,
        );
        mismatches.check_float(
            &pair.id,
            "rouge1 recall",
            got.recall,
            want.recall,
            ROUGE_TOLERANCE,
        );
        mismatches.check_float(
            &pair.id,
            "rouge1 fmeasure",
            got.fmeasure,
            want.fmeasure,
            ROUGE_TOLERANCE,
        );
    }
    mismatches.assert_none("rouge-score");
}

#[test]
fn sentence_bleu_equals_sacrebleu_on_every_pair() {
    let expected = read_expected();
    let mut mismatches = Mismatches::default();
    for pair in read_pairs() {
        let got = sentence_bleu(&pair.prediction, &[&pair.reference]);
        mismatches.check_bleu(&pair.id, &got, &expected.pairs[&pair.id].bleu);
    }
    mismatches.assert_none("sacrebleu.sentence_bleu");
}

#[test]
fn sentence_bleu_with_several_references_equals_sacrebleu() {
    let expected = read_expected();
    assert!(!expected.multi_reference_bleu.is_empty());
    let mut mismatches = Mismatches::default();
    for (case_idx, case) in expected.multi_reference_bleu.iter().enumerate() {
        let got = sentence_bleu(&case.prediction, &case.references);
        mismatches.check_bleu(
            &format!("multi_reference_bleu[{case_idx}]"),
            &got,
            &case.bleu,
        );
    }
    mismatches.assert_none("sacrebleu.sentence_bleu with several references");
}

#[test]
fn corpus_bleu_equals_sacrebleu_on_all_pairs_and_each_kind() {
    let pairs = read_pairs();
    let expected = read_expected();
    let by_id: BTreeMap<&str, &Pair> = pairs.iter().map(|pair| (pair.id.as_str(), pair)).collect();
    assert_eq!(expected.corpus_bleu["all"].ids.len(), pairs.len());
    let mut mismatches = Mismatches::default();
    for (name, corpus) in &expected.corpus_bleu {
        let predictions: Vec<&str> = corpus
            .ids
            .iter()
            .map(|id| by_id[id.as_str()].prediction.as_str())
            .collect();
        let references: Vec<&str> = corpus
            .ids
            .iter()
            .map(|id| by_id[id.as_str()].reference.as_str())
            .collect();
        let got = corpus_bleu(&predictions, &references);
        mismatches.check_bleu(&format!("corpus {name}"), &got, &corpus.bleu);
    }
    mismatches.assert_none("sacrebleu.corpus_bleu");
}

#[test]
fn multi_reference_corpus_bleu_equals_sacrebleu() {
    let expected = read_expected();
    let corpora = &expected.multi_reference_corpus_bleu;
    // The cases of the oracle script: its sentence cases, two corpora of pairs (two references
    // each, one to four each), closest-length ties, clipping, and the zh and char tokenizers.
    assert_eq!(corpora.len(), 7);
    assert!(
        corpora
            .iter()
            .any(|corpus| corpus.references.iter().any(|refs| refs.len() == 1))
            && corpora
                .iter()
                .any(|corpus| corpus.references.iter().any(|refs| refs.len() >= 3)),
        "the corpora must mix numbers of references per segment"
    );
    let mut mismatches = Mismatches::default();
    for corpus in corpora {
        let got = corpus_bleu_multi_with(&corpus.predictions, &corpus.references, corpus.tokenize);
        mismatches.check_bleu(&format!("corpus {}", corpus.name), &got, &corpus.bleu);
    }
    mismatches.assert_none("sacrebleu.corpus_bleu with several references");
}

#[test]
fn rouge1_with_several_references_equals_rouge_score_score_multi() {
    let expected = read_expected();
    let mut n_segments = 0;
    let mut mismatches = Mismatches::default();
    for corpus in &expected.multi_reference_corpus_bleu {
        for (segment_idx, want) in corpus.rouge1.iter().enumerate() {
            let case = format!("{} segment {segment_idx}", corpus.name);
            let got = rouge1_multi(
                &corpus.references[segment_idx],
                &corpus.predictions[segment_idx],
            );
            for (field, got, want) in [
                ("precision", got.precision, want.precision),
                ("recall", got.recall, want.recall),
                ("fmeasure", got.fmeasure, want.fmeasure),
            ] {
                mismatches.check_float(&case, field, got, want, ROUGE_TOLERANCE);
            }
            n_segments += 1;
        }
    }
    assert_eq!(n_segments, 15 + 40 + 40 + 4 + 2);
    mismatches.assert_none("rouge-score's score_multi");
}
