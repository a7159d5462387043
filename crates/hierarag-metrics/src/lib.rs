//! Retrieval metrics with exact trec_eval semantics (AP, nDCG@10, Recall@10, reciprocal rank) and
//! text metrics with the exact semantics of rouge-score and sacrebleu (ROUGE-1, BLEU).
//!
//! This crate scores a retrieval [`Run`] against relevance judgments ([`Qrels`]) and gives the
//! same numbers as `trec_eval` 9 and 10 / `pytrec_eval` (checked against pytrec_eval to 1e-9 by
//! `tests/pytrec_eval_oracle.rs`, and against the outputs trec_eval's own test files expect by
//! `tests/trec_eval_files.rs`), with one deliberate difference from docs/design.md, "Metrics": a
//! judged query that retrieved nothing scores 0 and counts in the mean, where trec_eval drops it
//! (unless given `-c`). It reads what trec_eval 10 reads: `#` comment lines, and grades that are
//! not integers, truncated (and reported, so that the caller can warn).
//! It is pure logic: parsing reads any [`std::io::BufRead`], nothing touches the filesystem, and
//! nothing is printed.
//!
//! The semantics, as trec_eval implements them:
//! - a query's documents are ranked by score descending, ties broken by document id descending
//!   (byte-wise, so `d9` ranks above `d10`); the rank column of a run file is ignored;
//! - a document is relevant when its grade is at least 1 (trec_eval's `-l`, set by
//!   [`EvalOptions`]); unjudged documents are non-relevant;
//! - nDCG's gain is the grade itself, negative grades count as 0, and the ideal ranking is the
//!   judged positive grades sorted best first, cut at the same depth.
//!
//! Main types and functions:
//! - [`Qrels`] and [`Run`], parsed from TREC text with [`Qrels::from_reader`] (or
//!   [`Qrels::parse`], which also returns the [`TruncatedGrades`]) and [`Run::from_reader`], or
//!   built in memory; parse failures are [`TrecFormatError`]s naming the input, line and field;
//! - [`evaluate`] → [`Evaluation`]: per-query [`QueryMetrics`] and their mean; [`evaluate_with`]
//!   takes [`EvalOptions`] (the relevance level);
//! - [`evaluate_query`] and the building blocks [`average_precision`], [`ndcg_at`],
//!   [`recall_at`] and [`reciprocal_rank`] for a single query;
//! - [`trec_order`] / [`trec_ranking`], the ranking order itself, and [`Run::write_trec`] /
//!   [`format_run_line`] to write runs that other tools rank identically.
//!
//! It also scores a generated answer against its reference answer (docs/design.md, "Metrics"), porting the
//! reference Python packages down to their tokenizers and floating-point order of operations
//! (checked against them by `tests/text_oracle.rs` on 331 pairs of real and adversarial text):
//! - [`rouge1`] → [`RougeScore`], equal to `rouge-score` 0.1.2 without stemming, with its
//!   tokenizer [`rouge_tokenize`];
//! - [`sentence_bleu`] and [`corpus_bleu`] → [`BleuScore`] (0–100), equal to `sacrebleu` 2.6.0
//!   with its defaults (13a tokenizer [`tokenize_13a`], exp smoothing, effective order for
//!   sentences only); both take several references per prediction ([`corpus_bleu_multi`]), and
//!   [`rouge1_multi`] scores against the best of several, as rouge-score's `score_multi`;
//! - for corpora in other languages, [`TextTokenizers::for_language`] picks the tokenizers:
//!   ROUGE-1 over Unicode words or CJK bigrams ([`RougeTokenizer`], rouge-score with that
//!   tokenizer) and sacrebleu's `zh` or `char` tokenizer ([`BleuTokenizer`]), checked against
//!   rouge-score and sacrebleu by `tests/multilingual_oracle.rs`.
//!
//! # Example
//!
//! ```
//! use hierarag_metrics::{Qrels, Run, evaluate};
//!
//! let qrels = Qrels::from_reader("q1 0 d1 1\nq1 0 d2 0\nq2 0 d7 2\n".as_bytes(), "qrels.txt")?;
//! let run = Run::from_reader(
//!     "q1 Q0 d2 1 0.9 bm25\nq1 Q0 d1 2 0.5 bm25\n".as_bytes(),
//!     "run.txt",
//! )?;
//! let evaluation = evaluate(&qrels, &run);
//!
//! // q1 finds its only relevant document at rank 2; q2 retrieved nothing and scores 0.
//! assert_eq!(evaluation.per_query["q1"].recip_rank, 0.5);
//! assert_eq!(evaluation.queries_without_results, ["q2"]);
//! assert_eq!(evaluation.mean.ap, (0.5 + 0.0) / 2.0);
//! # Ok::<(), hierarag_metrics::TrecFormatError>(())
//! ```
//!
//! ```
//! use hierarag_metrics::{rouge1, sentence_bleu};
//!
//! let reference = "The lighthouse was built in 1841.";
//! let answer = "It was built in 1841.";
//! // Tokens it, was, built, in, 1841 against the, lighthouse, was, built, in, 1841.
//! let rouge = rouge1(reference, answer);
//! assert_eq!((rouge.precision, rouge.recall), (4.0 / 5.0, 4.0 / 6.0));
//! let bleu = sentence_bleu(answer, &[reference]);
//! assert!(bleu.score > 40.0 && bleu.score < 100.0);
//! ```

mod error;
mod evaluate;
mod measures;
mod parse;
mod qrels;
mod run;
mod text;

#[cfg(test)]
mod tests;

pub use error::TrecFormatError;
pub use evaluate::{Evaluation, evaluate, evaluate_with, mean};
pub use measures::{
    CUTOFF, EvalOptions, QueryMetrics, RELEVANCE_LEVEL, average_precision, evaluate_query,
    evaluate_query_with, ndcg_at, recall_at, reciprocal_rank,
};
pub use qrels::{ParsedQrels, Qrels, TruncatedGrades};
pub use run::{Run, ScoredDoc, format_run_line, trec_order, trec_ranking};
pub use text::{
    BLEU_MAX_ORDER, BleuScore, BleuTokenizer, RougeScore, RougeTokenizer, TextTokenizers,
    corpus_bleu, corpus_bleu_multi, corpus_bleu_multi_with, corpus_bleu_with, is_sacrebleu_chinese,
    rouge_tokenize, rouge1, rouge1_multi, rouge1_multi_with, rouge1_with, sentence_bleu,
    sentence_bleu_with, tokenize_13a, tokenize_char, tokenize_zh,
};
