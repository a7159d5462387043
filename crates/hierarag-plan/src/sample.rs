//! Uniform, seeded document sampling in one pass over a corpus of unknown size (reservoir
//! sampling, Algorithm R), with optional length bounds; memory holds the sample, not the corpus.

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::PlanError;
use crate::seeds::derive_seed;

/// Word-count bounds on the documents a plan may use (a word is a whitespace-separated token,
/// as in chunking).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LengthBounds {
    pub min_words: Option<usize>,
    pub max_words: Option<usize>,
}

impl LengthBounds {
    pub fn is_unbounded(&self) -> bool {
        self.min_words.is_none() && self.max_words.is_none()
    }
}

/// A sampled document: its id and length in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampledDoc {
    pub id: String,
    pub words: usize,
}

/// Keeps a uniform random sample of `capacity` documents from a stream offered one at a time.
///
/// Every eligible document has the same chance to be in the final sample, whatever the corpus
/// size; the same seed and the same corpus order give the same sample.
#[derive(Debug)]
pub struct Reservoir {
    capacity: usize,
    bounds: LengthBounds,
    rng: ChaCha8Rng,
    sample: Vec<SampledDoc>,
    read: u64,
    eligible: u64,
    too_short: u64,
    too_long: u64,
}

/// The outcome of a pass over the corpus.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentSample {
    /// Sampled documents in random order (the reservoir shuffled with the seed).
    pub docs: Vec<SampledDoc>,
    /// Documents offered.
    pub read: u64,
    /// Documents within the length bounds.
    pub eligible: u64,
    pub too_short: u64,
    pub too_long: u64,
    pub bounds: LengthBounds,
}

impl Reservoir {
    /// A reservoir for `capacity` documents; `seed` is the plan seed.
    pub fn new(capacity: usize, bounds: LengthBounds, seed: u64) -> Reservoir {
        Reservoir {
            capacity,
            bounds,
            rng: ChaCha8Rng::seed_from_u64(derive_seed(seed, "documents")),
            sample: Vec::with_capacity(capacity.min(1 << 20)),
            read: 0,
            eligible: 0,
            too_short: 0,
            too_long: 0,
        }
    }

    /// Offers the next document of the corpus.
    pub fn offer(&mut self, id: &str, text: &str) {
        self.read += 1;
        let bounded = !self.bounds.is_unbounded();
        // Counting words costs a pass over the text, so do it only when it is needed.
        let words = bounded.then(|| count_words(text));
        if let Some(words) = words {
            if self.bounds.min_words.is_some_and(|min| words < min) {
                self.too_short += 1;
                return;
            }
            if self.bounds.max_words.is_some_and(|max| words > max) {
                self.too_long += 1;
                return;
            }
        }
        let seen = self.eligible;
        self.eligible += 1;
        let slot = if (seen as usize) < self.capacity {
            self.sample.push(SampledDoc {
                id: String::new(),
                words: 0,
            });
            seen as usize
        } else {
            let j = self.rng.random_range(0..=seen);
            if j >= self.capacity as u64 {
                return;
            }
            j as usize
        };
        let doc = &mut self.sample[slot];
        doc.id.clear();
        doc.id.push_str(id);
        doc.words = words.unwrap_or_else(|| count_words(text));
    }

    /// Documents offered so far.
    pub fn read(&self) -> u64 {
        self.read
    }

    /// Ends the pass: the sample in random order, with the counts.
    pub fn finish(mut self) -> DocumentSample {
        self.sample.shuffle(&mut self.rng);
        DocumentSample {
            docs: self.sample,
            read: self.read,
            eligible: self.eligible,
            too_short: self.too_short,
            too_long: self.too_long,
            bounds: self.bounds,
        }
    }
}

impl DocumentSample {
    pub(crate) fn no_documents(&self) -> PlanError {
        let mut detail = format!("{} read", self.read);
        if let Some(min) = self.bounds.min_words {
            detail += &format!(", {} shorter than {min} words", self.too_short);
        }
        if let Some(max) = self.bounds.max_words {
            detail += &format!(", {} longer than {max} words", self.too_long);
        }
        PlanError::NoDocuments { detail }
    }
}

/// Whitespace-separated words, as in chunking: the same count as
/// `text.split_whitespace().count()`, several times faster on mostly-ASCII text, because only
/// non-ASCII characters are decoded.
pub fn count_words(text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut words = 0;
    let mut in_word = false;
    let mut i = 0;
    while i < bytes.len() {
        let byte = bytes[i];
        let (space, width) = if byte.is_ascii() {
            // char::is_whitespace for ASCII: tab, line feed, vertical tab, form feed, carriage
            // return and space.
            (matches!(byte, b'\t'..=b'\r' | b' '), 1)
        } else {
            let c = text[i..].chars().next().expect("i is on a char boundary");
            (c.is_whitespace(), c.len_utf8())
        };
        if space {
            in_word = false;
        } else if !in_word {
            in_word = true;
            words += 1;
        }
        i += width;
    }
    words
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::count_words;

    #[test]
    fn counts_like_split_whitespace_on_every_kind_of_space() {
        for text in [
            "",
            " ",
            "one",
            " one  two\tthree\nfour\r\nfive\u{0B}six\u{0C}seven ",
            "non\u{A0}breaking\u{2003}em\u{3000}ideographic\u{85}next-line",
            "caf\u{E9} na\u{EF}ve \u{1F600} \u{65E5}\u{672C}",
        ] {
            assert_eq!(
                count_words(text),
                text.split_whitespace().count(),
                "{text:?}"
            );
        }
    }

    proptest! {
        #[test]
        fn equals_split_whitespace(text in "(\\PC|\\s|\u{A0}|\u{2028}|\u{85}){0,80}") {
            prop_assert_eq!(count_words(&text), text.split_whitespace().count());
        }
    }
}
