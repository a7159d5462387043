//! Word-based chunking: a token is a maximal run of non-whitespace characters.

use serde::{Deserialize, Serialize};

/// How documents are cut into chunks. Recorded in the index manifest so that an index is never
/// reused with other parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkParams {
    /// Words per chunk (docs/design.md, "The RAG run": 512).
    pub size: usize,
    /// Words shared by two consecutive chunks (default 0).
    pub overlap: usize,
}

impl Default for ChunkParams {
    fn default() -> Self {
        ChunkParams {
            size: 512,
            overlap: 0,
        }
    }
}

/// Chunk parameters that cannot produce chunks.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ChunkParamsError {
    #[error("chunk size must be at least 1 word")]
    ZeroSize,
    #[error("chunk overlap ({overlap}) must be smaller than the chunk size ({size})")]
    OverlapTooLarge { size: usize, overlap: usize },
}

impl ChunkParams {
    /// Checks that the parameters make progress through a document.
    pub fn validate(&self) -> Result<(), ChunkParamsError> {
        if self.size == 0 {
            return Err(ChunkParamsError::ZeroSize);
        }
        if self.overlap >= self.size {
            return Err(ChunkParamsError::OverlapTooLarge {
                size: self.size,
                overlap: self.overlap,
            });
        }
        Ok(())
    }

    fn stride(&self) -> usize {
        self.size - self.overlap
    }
}

/// One chunk of a document: a slice of the original text from its first word to its last, so
/// that the whitespace between words (newlines included) is kept as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextChunk<'a> {
    /// Position of the chunk within its document, from 0.
    pub n: usize,
    /// The chunk's text.
    pub text: &'a str,
    /// Number of words in the chunk.
    pub n_words: usize,
}

/// The id of chunk `n` of document `doc_id`.
pub fn chunk_id(doc_id: &str, n: usize) -> String {
    format!("{doc_id}#{n}")
}

/// Splits a chunk id into document id and chunk number (the last `#` separates them, so document
/// ids may themselves contain `#`).
pub fn split_chunk_id(chunk_id: &str) -> Option<(&str, usize)> {
    let (doc, n) = chunk_id.rsplit_once('#')?;
    Some((doc, n.parse().ok()?))
}

/// Cuts `text` into chunks of `params.size` words, consecutive chunks sharing `params.overlap`
/// words. A text without words has no chunks. The last chunk may be shorter; with overlap, no
/// chunk is emitted whose words all belong to the previous one.
///
/// # Panics
/// If the parameters are invalid (see [`ChunkParams::validate`]).
pub fn chunks<'a>(text: &'a str, params: &ChunkParams) -> impl Iterator<Item = TextChunk<'a>> {
    params.validate().expect("valid chunk parameters");
    // Byte spans of every word; documents are bounded in size, and this is the only allocation.
    let spans: Vec<(usize, usize)> = text
        .split_whitespace()
        .map(|word| {
            let start = word.as_ptr() as usize - text.as_ptr() as usize;
            (start, start + word.len())
        })
        .collect();
    let size = params.size;
    let stride = params.stride();
    let n_words = spans.len();
    let n_chunks = if n_words == 0 {
        0
    } else if n_words <= size {
        1
    } else {
        (n_words - size).div_ceil(stride) + 1
    };
    (0..n_chunks).map(move |n| {
        let first = n * stride;
        let last = (first + size).min(n_words) - 1;
        TextChunk {
            n,
            text: &text[spans[first].0..spans[last].1],
            n_words: last - first + 1,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn texts(text: &str, size: usize, overlap: usize) -> Vec<String> {
        chunks(text, &ChunkParams { size, overlap })
            .map(|c| c.text.to_string())
            .collect()
    }

    #[test]
    fn exact_multiple_of_size_gives_full_chunks() {
        assert_eq!(texts("a b c d", 2, 0), ["a b", "c d"]);
    }

    #[test]
    fn remainder_becomes_a_short_last_chunk() {
        assert_eq!(texts("a b c d e", 2, 0), ["a b", "c d", "e"]);
    }

    #[test]
    fn overlap_repeats_words_without_a_redundant_tail() {
        assert_eq!(texts("a b c d e", 3, 1), ["a b c", "c d e"]);
        assert_eq!(texts("a b c d e f", 3, 1), ["a b c", "c d e", "e f"]);
    }

    #[test]
    fn whitespace_only_text_has_no_chunks() {
        assert!(texts(" \n\t ", 4, 0).is_empty());
    }

    #[test]
    fn unicode_whitespace_separates_words() {
        assert_eq!(
            texts("été\u{00a0}hiver\u{3000}printemps", 1, 0),
            ["été", "hiver", "printemps"]
        );
    }

    #[test]
    fn invalid_params_are_rejected() {
        assert_eq!(
            ChunkParams {
                size: 0,
                overlap: 0
            }
            .validate(),
            Err(ChunkParamsError::ZeroSize)
        );
        assert!(
            ChunkParams {
                size: 4,
                overlap: 4
            }
            .validate()
            .is_err()
        );
    }

    #[test]
    fn chunk_ids_round_trip_with_hash_in_doc_id() {
        let id = chunk_id("C#_(language)", 3);
        assert_eq!(id, "C#_(language)#3");
        assert_eq!(split_chunk_id(&id), Some(("C#_(language)", 3)));
    }

    proptest! {
        #[test]
        fn chunks_cover_every_word_in_order(words in prop::collection::vec("[a-z]{1,5}", 0..60),
                                            size in 1usize..10, overlap_frac in 0usize..10) {
            let overlap = overlap_frac % size;
            let text = words.join(" ");
            let params = ChunkParams { size, overlap };
            let out: Vec<TextChunk> = chunks(&text, &params).collect();
            // Without overlap the chunks concatenate back to the word sequence.
            let mut seen: Vec<&str> = Vec::new();
            for (i, c) in out.iter().enumerate() {
                prop_assert_eq!(c.n, i);
                prop_assert!(c.n_words <= size && c.n_words > 0);
                let ws: Vec<&str> = c.text.split_whitespace().collect();
                prop_assert_eq!(ws.len(), c.n_words);
                let skip = if i == 0 { 0 } else { overlap };
                prop_assert_eq!(&ws[..skip], &seen[seen.len() - skip..]);
                seen.extend_from_slice(&ws[skip..]);
            }
            let all: Vec<&str> = words.iter().map(String::as_str).collect();
            prop_assert_eq!(seen, all);
        }
    }
}
