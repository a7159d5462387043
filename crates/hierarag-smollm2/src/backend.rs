//! [`ChatBackend`] for the embedded model: a chat request in, a completion out.

use std::time::Instant;

use hierarag_llm::{BoxFuture, CallError, ChatBackend, ChatRequest, Completion, Usage};

use crate::engine::{GenerateParams, SmolLm2};
use crate::error::SmolLm2Error;

/// The backend name, part of the response-cache key.
pub const BACKEND: &str = "embedded";
/// The model name, part of the response-cache key.
pub const MODEL: &str = "SmolLM2-135M-Instruct-Q4_1";

/// The seed used when a request brings none, so that replies are reproducible anyway.
pub const DEFAULT_SEED: u64 = 0;

impl SmolLm2 {
    /// Answers a chat request synchronously: the template is applied, `temperature`, `top_p`,
    /// `max_tokens`, `seed` and `stop` are honoured, and a `json_schema` turns on constrained
    /// decoding (a schema llguidance cannot compile falls back to "any JSON object" with a
    /// warning).
    pub fn chat(&self, request: &ChatRequest) -> Result<Completion, SmolLm2Error> {
        let started = Instant::now();
        let prompt = self.chat_prompt(&request.messages)?;
        let mut params = GenerateParams {
            temperature: request.temperature,
            top_p: request.top_p,
            max_tokens: request.max_tokens as usize,
            seed: request.seed.unwrap_or(DEFAULT_SEED),
            stop: request.stop.clone(),
            json_schema: request.json_schema.as_ref().map(|s| s.schema.clone()),
        };
        let generation = match self.generate(&prompt, &params) {
            Err(SmolLm2Error::Schema { reason }) => {
                tracing::warn!(
                    schema = request.json_schema.as_ref().map_or("", |s| s.name.as_str()),
                    %reason,
                    "JSON schema not usable by the embedded model; constraining to any JSON object"
                );
                params.json_schema = Some(serde_json::json!({"type": "object"}));
                self.generate(&prompt, &params)?
            }
            other => other?,
        };
        tracing::debug!(
            prompt_tokens = prompt.len(),
            completion_tokens = generation.tokens.len(),
            prefill_tok_s = generation.timings.prefill_tokens_per_second(),
            decode_tok_s = generation.timings.decode_tokens_per_second(),
            mask_ms = generation.timings.mask.as_secs_f64() * 1000.0,
            "embedded completion"
        );
        Ok(Completion {
            text: generation.text,
            finish_reason: Some(generation.finish_reason.as_str().to_owned()),
            usage: Usage {
                prompt_tokens: prompt.len() as u64,
                completion_tokens: generation.tokens.len() as u64,
                cached_prompt_tokens: 0,
                cache_write_prompt_tokens: 0,
                latency_ms: started.elapsed().as_secs_f64() * 1000.0,
            },
        })
    }
}

impl ChatBackend for SmolLm2 {
    fn backend(&self) -> &str {
        BACKEND
    }

    fn model(&self) -> &str {
        MODEL
    }

    /// Computes the whole reply when first polled, on the polling thread (one request at a
    /// time; the model is behind a mutex).
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<Completion, CallError>> {
        Box::pin(async move {
            self.chat(request).map_err(|e| CallError::Fatal {
                reason: e.to_string(),
            })
        })
    }
}
