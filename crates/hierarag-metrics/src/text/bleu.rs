//! BLEU exactly as `sacrebleu` 2.6.0 computes it: 13a tokenizer, n-gram statistics, exp smoothing.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::{is_python_whitespace, python_split};

/// The highest n-gram order BLEU counts (sacrebleu's `MAX_NGRAM_ORDER`).
pub const BLEU_MAX_ORDER: usize = 4;

/// A BLEU score with the statistics it was computed from, named as sacrebleu's `BLEUScore`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Default)]
pub struct BleuScore {
    /// BLEU on sacrebleu's 0–100 scale.
    pub score: f64,
    /// The (smoothed) n-gram precisions for n = 1..=4, in percent. All 0 when no n-gram matched,
    /// and 0 for the orders the prediction has no n-gram of (it is too short).
    pub precisions: [f64; BLEU_MAX_ORDER],
    /// The brevity penalty, `exp(1 - ref_len / sys_len)` when the prediction is shorter, else 1.
    pub bp: f64,
    /// Tokens in the prediction(s).
    pub sys_len: usize,
    /// Tokens in the reference(s) of the closest length, summed over segments.
    pub ref_len: usize,
    /// Matched n-grams per order (clipped by the reference counts).
    pub counts: [usize; BLEU_MAX_ORDER],
    /// N-grams per order in the prediction(s).
    pub totals: [usize; BLEU_MAX_ORDER],
}

/// sacrebleu's `13a` tokenizer (`Tokenizer13a`, the mteval-v13a tokenization WMT uses): the tokens
/// of `line`, joined by single spaces.
///
/// In order: remove `<skipped>`, join `-\n` hyphenations, turn other newlines into spaces, decode
/// `&quot;`, `&amp;`, `&lt;` and `&gt;` (one after the other, so `&amp;lt;` becomes `<`), then apply
/// the four substitutions of sacrebleu's `TokenizerRegexp` to the line padded with a space on each
/// side: space around each of ``!"#$%&()*+/:;<=>?@[\]^_`{|}~`` (not `'`, `-`, `.` or `,`); split a
/// `.` or `,` from a preceding non-digit and then from a following non-digit; split `-` from a
/// preceding digit. Finally split on Python's whitespace. Non-ASCII punctuation (`—`, `«`, `。`) is
/// never split off.
/// BLEU also strips trailing whitespace from a segment before this (sacrebleu's
/// `_preprocess_segment`), which [`sentence_bleu`] and [`corpus_bleu`] do.
///
/// ```
/// use hierarag_metrics::tokenize_13a;
///
/// assert_eq!(tokenize_13a("Hello, world. 1,000.5 km (x-y)"), "Hello , world . 1,000.5 km ( x-y )");
/// assert_eq!(tokenize_13a("state-\nof-the-art &amp; 3-4"), "stateof-the-art & 3 - 4");
/// ```
pub fn tokenize_13a(line: &str) -> String {
    let mut line = line
        .replace("<skipped>", "")
        .replace("-\n", "")
        .replace('\n', " ");
    if line.contains('&') {
        line = line
            .replace("&quot;", "\"")
            .replace("&amp;", "&")
            .replace("&lt;", "<")
            .replace("&gt;", ">");
    }
    tokenize_regexp(&format!(" {line} "))
}

/// sacrebleu's `TokenizerRegexp`, the part that 13a and `zh` share: its four substitutions,
/// then the tokens split on Python's whitespace and joined by single spaces.
fn tokenize_regexp(line: &str) -> String {
    let padded: Vec<char> = line.chars().collect();

    // `([\{-\~\[-\` -\&\(-\+\:-\@\/])` -> ` \1 `
    let mut spaced = Vec::with_capacity(padded.len() * 2);
    for &c in &padded {
        if is_13a_symbol(c) {
            spaced.extend([' ', c, ' ']);
        } else {
            spaced.push(c);
        }
    }
    let is_digit = |c: char| c.is_ascii_digit();
    let is_period_or_comma = |c: char| c == '.' || c == ',';
    // `([^0-9])([\.,])` -> `\1 \2 `
    let spaced = substitute_pairs(
        &spaced,
        |first| !is_digit(first),
        is_period_or_comma,
        |first, second| [first, ' ', second, ' '],
    );
    // `([\.,])([^0-9])` -> ` \1 \2`
    let spaced = substitute_pairs(
        &spaced,
        is_period_or_comma,
        |second| !is_digit(second),
        |first, second| [' ', first, ' ', second],
    );
    // `([0-9])(-)` -> `\1 \2 `
    let spaced = substitute_pairs(
        &spaced,
        is_digit,
        |second| second == '-',
        |first, second| [first, ' ', second, ' '],
    );
    let spaced: String = spaced.into_iter().collect();
    python_split(&spaced).collect::<Vec<_>>().join(" ")
}

/// sacrebleu's `zh` tokenizer (`TokenizerZh`): the line stripped of surrounding whitespace,
/// a space put on each side of every character sacrebleu counts as Chinese
/// ([`is_sacrebleu_chinese`]), then the substitutions of 13a (without 13a's own preprocessing
/// or padding).
///
/// ```
/// use hierarag_metrics::tokenize_zh;
///
/// // Unlike 13a, the line is not padded: a final period after a digit stays attached.
/// assert_eq!(tokenize_zh("北京是首都。It's 2024."), "北 京 是 首 都 。 It's 2024.");
/// ```
pub fn tokenize_zh(line: &str) -> String {
    let line = line.trim_matches(is_python_whitespace);
    let mut spaced = String::with_capacity(line.len() * 2);
    for c in line.chars() {
        if is_sacrebleu_chinese(c) {
            spaced.push(' ');
            spaced.push(c);
            spaced.push(' ');
        } else {
            spaced.push(c);
        }
    }
    tokenize_regexp(&spaced)
}

/// Whether sacrebleu 2.6.0's `TokenizerZh._is_chinese_char` is true of `c`: its `_UCODE_RANGES`,
/// compared as Python compares strings. Two of those bounds are written as five-digit `\u`
/// escapes, which Python reads as a four-digit escape followed by a digit: `'\u20000'` to
/// `'\u2a6d6'` therefore holds U+2001..=U+2A6D (general punctuation, symbols, arrows and more,
/// not CJK Extension B), and `'\u2f800'` to `'\u2fa1d'` holds U+2F81..=U+2FA1. We keep what the
/// package does, not what it meant.
pub fn is_sacrebleu_chinese(c: char) -> bool {
    matches!(
        u32::from(c),
        0x3400..=0x4DB5
            | 0x4E00..=0x9FA5
            | 0x9FA6..=0x9FBB
            | 0xF900..=0xFA2D
            | 0xFA30..=0xFA6A
            | 0xFA70..=0xFAD9
            | 0x2001..=0x2A6D
            | 0x2F81..=0x2FA1
            | 0xFF00..=0xFFEF
            | 0x2E80..=0x2EFF
            | 0x3000..=0x303F
            | 0x31C0..=0x31EF
            | 0x2F00..=0x2FDF
            | 0x2FF0..=0x2FFF
            | 0x3100..=0x312F
            | 0x31A0..=0x31BF
            | 0xFE10..=0xFE1F
            | 0xFE30..=0xFE4F
            // (0x2600..=0x26FF and 0x2700..=0x27BF, the package's next two ranges, lie inside
            // 0x2001..=0x2A6D above.)
            | 0x3200..=0x32FF
            | 0x3300..=0x33FF
    )
}

/// sacrebleu's `char` tokenizer (`TokenizerChar`): every character of the line, spaces too,
/// joined by single spaces, so that BLEU's split on whitespace counts each character that is
/// not whitespace as a token.
///
/// ```
/// use hierarag_metrics::tokenize_char;
///
/// assert_eq!(tokenize_char("서울 인구"), "서 울   인 구");
/// ```
pub fn tokenize_char(line: &str) -> String {
    let mut joined = String::with_capacity(line.len() * 2);
    for (n, c) in line.chars().enumerate() {
        if n > 0 {
            joined.push(' ');
        }
        joined.push(c);
    }
    joined
}

/// Which of sacrebleu's tokenizers BLEU cuts text with, named by its signature (`13a`, `zh`,
/// `char`).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BleuTokenizer {
    /// `13a`, sacrebleu's default and the one for every language but Chinese, Japanese and
    /// Korean (the paper's).
    #[default]
    #[serde(rename = "13a")]
    Thirteen,
    /// `zh`, sacrebleu's choice for Chinese.
    #[serde(rename = "zh")]
    Zh,
    /// `char`: sacrebleu's choices for Japanese and Korean (`ja-mecab`, `ko-mecab`) need MeCab
    /// and its dictionaries, which no Rust crate ships without a download at build time, so
    /// those languages count characters.
    #[serde(rename = "char")]
    Char,
}

impl BleuTokenizer {
    /// sacrebleu's name for it (`tokenize=` and the signature's `tok:`).
    pub fn name(self) -> &'static str {
        match self {
            BleuTokenizer::Thirteen => "13a",
            BleuTokenizer::Zh => "zh",
            BleuTokenizer::Char => "char",
        }
    }

    /// The tokens of one segment joined by spaces, as sacrebleu's tokenizer returns them.
    pub fn tokenize(self, line: &str) -> String {
        match self {
            BleuTokenizer::Thirteen => tokenize_13a(line),
            BleuTokenizer::Zh => tokenize_zh(line),
            BleuTokenizer::Char => tokenize_char(line),
        }
    }
}

/// The character class `[\{-\~\[-\` -\&\(-\+\:-\@\/]` of the first 13a substitution: the ASCII
/// space and punctuation except `'`, `,`, `-` and `.`.
fn is_13a_symbol(c: char) -> bool {
    matches!(c, '{'..='~' | '['..='`' | ' '..='&' | '('..='+' | ':'..='@' | '/')
}

/// Python's `re.sub` of a two-character pattern `(first)(second)`: scans left to right, and after
/// a match resumes behind it, so matches never overlap (`a..b` splits only the first `.` here).
fn substitute_pairs(
    text: &[char],
    first: impl Fn(char) -> bool,
    second: impl Fn(char) -> bool,
    replacement: impl Fn(char, char) -> [char; 4],
) -> Vec<char> {
    let mut out = Vec::with_capacity(text.len() + text.len() / 2);
    let mut char_idx = 0;
    while char_idx < text.len() {
        let c = text[char_idx];
        match text.get(char_idx + 1) {
            Some(&next) if first(c) && second(next) => {
                out.extend(replacement(c, next));
                char_idx += 2;
            }
            _ => {
                out.push(c);
                char_idx += 1;
            }
        }
    }
    out
}

/// The BLEU tokens of one segment: trailing whitespace stripped (Python's `rstrip()`), then the
/// tokenizer.
fn segment_tokens(segment: &str, tokenizer: BleuTokenizer) -> String {
    tokenizer.tokenize(segment.trim_end_matches(is_python_whitespace))
}

/// The n-grams of orders 1..=4 of `tokens`, with their counts.
fn ngram_counts<'t>(tokens: &'t [&'t str]) -> HashMap<&'t [&'t str], usize> {
    let mut counts = HashMap::new();
    for order in 1..=BLEU_MAX_ORDER {
        for ngram in tokens.windows(order) {
            *counts.entry(ngram).or_insert(0) += 1;
        }
    }
    counts
}

/// The sufficient statistics of one or more segments, which add up over a corpus
/// (sacrebleu's `[hyp_len, ref_len, correct..., total...]`).
#[derive(Clone, Copy, Debug, Default)]
struct BleuStatistics {
    sys_len: usize,
    ref_len: usize,
    counts: [usize; BLEU_MAX_ORDER],
    totals: [usize; BLEU_MAX_ORDER],
}

impl BleuStatistics {
    /// sacrebleu's `_compute_segment_statistics`: n-gram matches clipped by the maximum count in
    /// any reference, and the length of the reference closest in length (ties to the shorter).
    fn of_segment<R: AsRef<str>>(
        prediction: &str,
        references: &[R],
        tokenizer: BleuTokenizer,
    ) -> Self {
        let reference_tokens: Vec<String> = references
            .iter()
            .map(|reference| segment_tokens(reference.as_ref(), tokenizer))
            .collect();
        let reference_tokens: Vec<Vec<&str>> = reference_tokens
            .iter()
            .map(|tokens| python_split(tokens).collect())
            .collect();
        let mut reference_counts: HashMap<&[&str], usize> = HashMap::new();
        for tokens in &reference_tokens {
            for (ngram, count) in ngram_counts(tokens) {
                let max_count = reference_counts.entry(ngram).or_insert(0);
                *max_count = (*max_count).max(count);
            }
        }

        let prediction_tokens = segment_tokens(prediction, tokenizer);
        let prediction_tokens: Vec<&str> = python_split(&prediction_tokens).collect();
        let sys_len = prediction_tokens.len();
        let mut statistics = Self {
            sys_len,
            ref_len: closest_reference_length(
                sys_len,
                reference_tokens.iter().map(|tokens| tokens.len()),
            ),
            ..Self::default()
        };
        for (ngram, count) in ngram_counts(&prediction_tokens) {
            let order_idx = ngram.len() - 1;
            statistics.totals[order_idx] += count;
            if let Some(&reference_count) = reference_counts.get(ngram) {
                statistics.counts[order_idx] += count.min(reference_count);
            }
        }
        statistics
    }

    fn add(&mut self, other: &Self) {
        self.sys_len += other.sys_len;
        self.ref_len += other.ref_len;
        for order_idx in 0..BLEU_MAX_ORDER {
            self.counts[order_idx] += other.counts[order_idx];
            self.totals[order_idx] += other.totals[order_idx];
        }
    }

    /// sacrebleu's `BLEU.compute_bleu` with `smooth_method='exp'`, operation for operation.
    ///
    /// With `effective_order`, the geometric mean runs over the orders up to the last one the
    /// prediction has n-grams of (sentence BLEU); without, over all four, so that a missing order
    /// scores 0 (corpus BLEU).
    fn score(&self, effective_order: bool) -> BleuScore {
        let sys_len = self.sys_len;
        let ref_len = self.ref_len;
        let bp = if sys_len >= ref_len {
            1.0
        } else if sys_len > 0 {
            (1.0 - ref_len as f64 / sys_len as f64).exp()
        } else {
            0.0
        };
        let mut result = BleuScore {
            score: 0.0,
            precisions: [0.0; BLEU_MAX_ORDER],
            bp,
            sys_len,
            ref_len,
            counts: self.counts,
            totals: self.totals,
        };
        if self.counts.iter().all(|&count| count == 0) {
            return result;
        }

        let mut smooth_mteval = 1.0;
        let mut eff_order = BLEU_MAX_ORDER;
        for order_idx in 0..BLEU_MAX_ORDER {
            let (count, total) = (self.counts[order_idx], self.totals[order_idx]);
            if total == 0 {
                break;
            }
            if effective_order {
                eff_order = order_idx + 1;
            }
            result.precisions[order_idx] = if count == 0 {
                smooth_mteval *= 2.0;
                100.0 / (smooth_mteval * total as f64)
            } else {
                100.0 * count as f64 / total as f64
            };
        }

        // Python 3.11's `sum()` of floats adds left to right (3.12 compensates, which can move
        // the last bit; the oracle tolerance of 1e-9 covers either).
        let mut log_sum = 0.0;
        for &precision in &result.precisions[..eff_order] {
            log_sum += floored_log(precision);
        }
        result.score = bp * (log_sum / eff_order as f64).exp();
        result
    }
}

/// sacrebleu's `my_log`: the natural log, with log(0) floored to -9999999999.
fn floored_log(value: f64) -> f64 {
    if value == 0.0 {
        -9_999_999_999.0
    } else {
        value.ln()
    }
}

/// sacrebleu's `_get_closest_ref_len`: the reference length closest to the prediction's, the
/// shorter one on a tie; 0 when there is no reference.
fn closest_reference_length(sys_len: usize, ref_lens: impl Iterator<Item = usize>) -> usize {
    let mut closest: Option<(usize, usize)> = None;
    for ref_len in ref_lens {
        let diff = sys_len.abs_diff(ref_len);
        closest = match closest {
            Some((closest_diff, closest_len))
                if diff > closest_diff || (diff == closest_diff && ref_len >= closest_len) =>
            {
                Some((closest_diff, closest_len))
            }
            _ => Some((diff, ref_len)),
        };
    }
    closest.map_or(0, |(_, ref_len)| ref_len)
}

/// Sentence BLEU of `prediction` against one or more `references`, equal to `sacrebleu` 2.6.0's
/// `sacrebleu.sentence_bleu(prediction, references)` with its defaults: 13a tokenizer
/// ([`tokenize_13a`], after stripping trailing whitespace), case-sensitive, exp smoothing and
/// effective order.
///
/// N-grams of orders 1 to 4 match with multiplicity, each clipped by its highest count in any one
/// reference. The brevity penalty compares with the reference closest in length (the shorter on a
/// tie). When nothing matches at all the score is 0. Otherwise an order without a match gets the
/// exp-smoothed precision `100 / (2^k * total)` (k counting such orders), orders the prediction is
/// too short for are left out (effective order), and the score is
/// `bp * exp(sum(ln precision) / order)` on the 0–100 scale, computed in sacrebleu's order of
/// operations, so that values agree to the last bit or two. An empty prediction or reference
/// scores 0; with no reference at all (sacrebleu raises) the score is 0 and `ref_len` is 0.
///
/// ```
/// use hierarag_metrics::sentence_bleu;
///
/// // Identical texts: exp(ln 100) rounds to 100.00000000000004 with glibc, in sacrebleu and here.
/// let same = sentence_bleu("The cat sat on the mat.", &["The cat sat on the mat."]);
/// assert!((same.score - 100.0).abs() < 1e-9);
/// // Two tokens, one unigram match, no bigram: precisions 50 and 100 / (2 * 1).
/// let short = sentence_bleu("The dog", &["The cat"]);
/// assert_eq!(short.precisions, [50.0, 50.0, 0.0, 0.0]);
/// assert!((short.score - 50.0).abs() < 1e-9);
/// ```
pub fn sentence_bleu<R: AsRef<str>>(prediction: &str, references: &[R]) -> BleuScore {
    sentence_bleu_with(prediction, references, BleuTokenizer::Thirteen)
}

/// [`sentence_bleu`] with another of sacrebleu's tokenizers: equal to
/// `sacrebleu.sentence_bleu(prediction, references, tokenize=tokenizer.name())`.
pub fn sentence_bleu_with<R: AsRef<str>>(
    prediction: &str,
    references: &[R],
    tokenizer: BleuTokenizer,
) -> BleuScore {
    BleuStatistics::of_segment(prediction, references, tokenizer).score(true)
}

/// Corpus BLEU of `predictions` against one reference each, equal to `sacrebleu` 2.6.0's
/// `sacrebleu.corpus_bleu(predictions, [references])` with its defaults: 13a tokenizer,
/// case-sensitive, exp smoothing, no effective order.
///
/// The statistics of [`sentence_bleu`] (matches, totals, lengths) are summed over all segments
/// before one score is computed, so this is not the mean of sentence BLEU. Without effective
/// order, a corpus with no 4-gram at all (every prediction shorter than four tokens) scores 0.
/// An empty corpus scores 0 (sacrebleu raises). For several references per prediction, see
/// [`corpus_bleu_multi`].
///
/// # Panics
///
/// When `predictions` and `references` differ in length (sacrebleu silently drops the surplus).
///
/// ```
/// use hierarag_metrics::corpus_bleu;
///
/// let score = corpus_bleu(
///     &["the cat sat on the mat", "a dog barked"],
///     &["the cat sat on the mat", "the dog barked loudly"],
/// );
/// assert!(score.score > 0.0 && score.score < 100.0);
/// assert_eq!((score.sys_len, score.ref_len), (9, 10));
/// ```
pub fn corpus_bleu<P: AsRef<str>, R: AsRef<str>>(predictions: &[P], references: &[R]) -> BleuScore {
    corpus_bleu_with(predictions, references, BleuTokenizer::Thirteen)
}

/// [`corpus_bleu`] with another of sacrebleu's tokenizers: equal to
/// `sacrebleu.corpus_bleu(predictions, [references], tokenize=tokenizer.name())`.
///
/// # Panics
///
/// When `predictions` and `references` differ in length.
pub fn corpus_bleu_with<P: AsRef<str>, R: AsRef<str>>(
    predictions: &[P],
    references: &[R],
    tokenizer: BleuTokenizer,
) -> BleuScore {
    assert_eq!(
        predictions.len(),
        references.len(),
        "corpus_bleu needs one reference per prediction"
    );
    let references: Vec<&[R]> = references.iter().map(std::slice::from_ref).collect();
    corpus_bleu_multi_with(predictions, &references, tokenizer)
}

/// Corpus BLEU of `predictions` against several references each, equal to `sacrebleu` 2.6.0's
/// multi-reference `sacrebleu.corpus_bleu(predictions, [references_1, references_2, ...])` with
/// its defaults.
///
/// `references[i]` holds the references of `predictions[i]` (segment by segment, where sacrebleu
/// takes one stream per reference), and segments may have different numbers of them, as
/// sacrebleu allows by padding its streams with `None`. Each segment's statistics are those of
/// [`sentence_bleu`] against all its references: an n-gram's matches are clipped by its highest
/// count in any one reference (not the sum over references), and the reference length is that
/// of the reference closest in length to the prediction, the shorter on a tie. They are summed
/// over the corpus before one score is computed, as [`corpus_bleu`] does, which this equals when
/// every segment has one reference. A segment without any reference adds no reference length
/// and no match (sacrebleu would add -1 to the length).
///
/// # Panics
///
/// When `predictions` and `references` differ in length.
///
/// ```
/// use hierarag_metrics::{corpus_bleu, corpus_bleu_multi};
///
/// let predictions = ["the cat sat on the mat", "a dog barked"];
/// let references = [
///     vec!["the cat sat on the mat"],
///     vec!["the dog barked loudly", "a dog barked at night"],
/// ];
/// let multi = corpus_bleu_multi(&predictions, &references);
/// // The second reference of the second segment matches more n-grams.
/// let single = corpus_bleu(&predictions, &["the cat sat on the mat", "the dog barked loudly"]);
/// assert!(multi.score > single.score);
/// // Lengths 3 against 4 and 5: the closest is 4.
/// assert_eq!((multi.sys_len, multi.ref_len), (9, 10));
/// ```
pub fn corpus_bleu_multi<P, Rs, R>(predictions: &[P], references: &[Rs]) -> BleuScore
where
    P: AsRef<str>,
    Rs: AsRef<[R]>,
    R: AsRef<str>,
{
    corpus_bleu_multi_with(predictions, references, BleuTokenizer::Thirteen)
}

/// [`corpus_bleu_multi`] with another of sacrebleu's tokenizers: equal to
/// `sacrebleu.corpus_bleu(predictions, [references_1, ...], tokenize=tokenizer.name())`.
///
/// # Panics
///
/// When `predictions` and `references` differ in length.
pub fn corpus_bleu_multi_with<P, Rs, R>(
    predictions: &[P],
    references: &[Rs],
    tokenizer: BleuTokenizer,
) -> BleuScore
where
    P: AsRef<str>,
    Rs: AsRef<[R]>,
    R: AsRef<str>,
{
    assert_eq!(
        predictions.len(),
        references.len(),
        "corpus_bleu_multi needs one list of references per prediction"
    );
    let mut statistics = BleuStatistics::default();
    for (prediction, segment_references) in predictions.iter().zip(references) {
        statistics.add(&BleuStatistics::of_segment(
            prediction.as_ref(),
            segment_references.as_ref(),
            tokenizer,
        ));
    }
    statistics.score(false)
}
