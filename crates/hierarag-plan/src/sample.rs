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

/// A sampled document: its id, its length in words, and the caller's tag (where it was read,
/// say; 0 when offered with [`Reservoir::offer`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampledDoc {
    pub id: String,
    pub words: usize,
    pub tag: u64,
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
    /// Whether a document was offered without its length.
    uncounted: bool,
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
    /// Whether every sampled document's `words` is its length (false when some were offered
    /// without it and not filled in since: set it once they are).
    pub lengths_known: bool,
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
            uncounted: false,
        }
    }

    /// Offers the next document of the corpus.
    pub fn offer(&mut self, id: &str, text: &str) {
        // Counting words costs a pass over the text, so do it only when it is needed.
        match self.bounds.is_unbounded() {
            true => {
                if let Some(slot) = self.take(id, None, 0) {
                    self.sample[slot].words = count_words(text);
                }
            }
            false => {
                self.take(id, Some(count_words(text)), 0);
            }
        }
    }

    /// Offers the next document by its id and length in words, with a tag kept beside it if it
    /// is sampled. `words` may be left out (`None`: 0 until the caller fills
    /// [`SampledDoc::words`] in, and the sample says its lengths are not known) only when there
    /// are no length bounds. Returns the document's
    /// slot in the sample when it takes one.
    ///
    /// # Panics
    /// When `words` is `None` and the reservoir has length bounds.
    pub fn offer_counted(&mut self, id: &str, words: Option<usize>, tag: u64) -> Option<usize> {
        if words.is_none() {
            assert!(
                self.bounds.is_unbounded(),
                "a document offered without its length to a reservoir with length bounds"
            );
            self.uncounted = true;
        }
        self.take(id, words, tag)
    }

    /// Counts the document, checks its length against the bounds when it is known, and gives
    /// it a slot with the reservoir's probability.
    fn take(&mut self, id: &str, words: Option<usize>, tag: u64) -> Option<usize> {
        self.read += 1;
        if let Some(words) = words {
            if self.bounds.min_words.is_some_and(|min| words < min) {
                self.too_short += 1;
                return None;
            }
            if self.bounds.max_words.is_some_and(|max| words > max) {
                self.too_long += 1;
                return None;
            }
        }
        let seen = self.eligible;
        self.eligible += 1;
        let slot = if (seen as usize) < self.capacity {
            self.sample.push(SampledDoc {
                id: String::new(),
                words: 0,
                tag: 0,
            });
            seen as usize
        } else {
            let j = self.rng.random_range(0..=seen);
            if j >= self.capacity as u64 {
                return None;
            }
            j as usize
        };
        let doc = &mut self.sample[slot];
        doc.id.clear();
        doc.id.push_str(id);
        doc.words = words.unwrap_or(0);
        doc.tag = tag;
        Some(slot)
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
            lengths_known: !self.uncounted,
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
/// `text.split_whitespace().count()`, an order of magnitude faster on mostly-ASCII text.
///
/// ASCII text is counted 255 bytes at a time as the word starts in the block (a non-space byte
/// after a space), summed in a `u8` so that the compiler vectorises the loop; a block holding
/// another character is decoded character by character.
pub fn count_words(text: &str) -> usize {
    // char::is_whitespace for ASCII: tab, line feed, vertical tab, form feed, carriage return
    // and space.
    fn is_space(byte: u8) -> bool {
        byte == b' ' || (b'\t'..=b'\r').contains(&byte)
    }
    const BLOCK: usize = 255;
    let bytes = text.as_bytes();
    let mut words = 0;
    let mut after_space = true;
    let mut i = 0;
    while i < bytes.len() {
        let end = (i + BLOCK).min(bytes.len());
        let block = &bytes[i..end];
        if block.is_ascii() {
            let first = u8::from(after_space && !is_space(block[0]));
            let starts: u8 = block
                .iter()
                .zip(&block[1..])
                .map(|(&before, &byte)| u8::from(is_space(before) & !is_space(byte)))
                .sum();
            words += usize::from(first + starts);
            after_space = is_space(block[block.len() - 1]);
            i = end;
        } else {
            // Character by character to the first character boundary at or past the block's end.
            while i < end {
                let c = text[i..].chars().next().expect("i is on a char boundary");
                let space = c.is_whitespace();
                words += usize::from(after_space && !space);
                after_space = space;
                i += c.len_utf8();
            }
        }
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

        /// Texts over several 255-byte blocks: words and spaces across block ends, mostly ASCII
        /// with a character of another script or a non-ASCII space now and then.
        #[test]
        fn equals_split_whitespace_across_blocks(
            text in "([a-z]{1,12}|[ \t\n\r\u{0B}\u{0C}]{1,3}|\u{A0}|\u{2003}|\u{E9}|\u{1F600}|\u{65E5}){0,400}"
        ) {
            prop_assert_eq!(count_words(&text), text.split_whitespace().count());
        }
    }
}
