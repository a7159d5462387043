//! [`Embedder`]: sentence embeddings through any [`EmbedBackend`]s, in batches, with the cache
//! in front and the shared attempt loop behind.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use futures_util::future::try_join_all;

use crate::cache::{ResponseCache, embed_text_key};
use crate::chat_client::same_model;
use crate::config::{ClientSettings, EmbedBackendKind, EmbeddingsConfig};
use crate::dispatch::Dispatcher;
use crate::endpoints::EndpointPool;
use crate::error::{ConfigError, LlmError};
use crate::http::http_client;
use crate::openai::OpenAiEmbeddings;
use crate::types::{CallError, EmbedBackend};
use crate::usage::UsageSummary;

/// Embeddings with a concurrency limit, endpoint balancing, timeouts, retries, a response
/// cache (per text) and usage accounting.
///
/// Each distinct text of a call is embedded once, and a text found in the cache is not
/// embedded again: a reference answer scored for several systems costs one embedding. The
/// usage counts texts as requests (and cache hits) and batches sent as calls.
#[derive(Debug)]
pub struct Embedder {
    dispatcher: Dispatcher<dyn EmbedBackend>,
    cache: Option<ResponseCache>,
    batch_size: usize,
}

impl Embedder {
    /// An embedder over `backends` (endpoints of one model), sending `batch_size` texts per
    /// request.
    pub fn new(
        backends: Vec<Arc<dyn EmbedBackend>>,
        settings: &ClientSettings,
        batch_size: usize,
    ) -> Result<Embedder, LlmError> {
        let (backend, model) = same_model(backends.iter().map(|b| (b.backend(), b.model())))?;
        let cache = settings
            .cache
            .as_deref()
            .map(ResponseCache::open)
            .transpose()?;
        Ok(Embedder {
            dispatcher: Dispatcher::new(EndpointPool::new(backends), settings, &backend, &model),
            cache,
            batch_size: batch_size.max(1),
        })
    }

    /// An embedder for an `openai` `[embeddings]` table. For `embedded`, build the model and
    /// call [`Embedder::new`] with `config.settings(run_dir)`.
    pub fn from_config(config: &EmbeddingsConfig, run_dir: &Path) -> Result<Embedder, LlmError> {
        config.validate("[embeddings]")?;
        if config.backend == EmbedBackendKind::Embedded {
            return Err(ConfigError::new(
                "[embeddings]",
                "embeddings.backend",
                "the embedded model is built by hierarag-models; pass it to Embedder::new",
            )
            .into());
        }
        let api_key = config.api_key()?;
        let http = http_client()
            .map_err(|message| ConfigError::new("[embeddings]", "embeddings", message))?;
        let backends: Vec<Arc<dyn EmbedBackend>> = config
            .base_urls
            .iter()
            .map(|url| {
                Arc::new(OpenAiEmbeddings::new(
                    http.clone(),
                    url,
                    &config.model,
                    api_key.clone(),
                )) as Arc<dyn EmbedBackend>
            })
            .collect();
        Embedder::new(backends, &config.settings(run_dir), config.batch_size)
    }

    pub fn backend(&self) -> &str {
        self.dispatcher.pool.first().backend()
    }

    pub fn model(&self) -> &str {
        self.dispatcher.pool.first().model()
    }

    /// One vector per text, in order. The distinct texts not in the cache go in batches of
    /// `batch_size`, concurrently up to the concurrency limit; each batch is one call (retried),
    /// and its vectors are cached as soon as it returns.
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, LlmError> {
        let mut slot_of: HashMap<&str, usize> = HashMap::with_capacity(texts.len());
        let mut distinct: Vec<&String> = Vec::new();
        let slots: Vec<usize> = texts
            .iter()
            .map(|text| {
                *slot_of.entry(text.as_str()).or_insert_with(|| {
                    distinct.push(text);
                    distinct.len() - 1
                })
            })
            .collect();
        let keys: Option<Vec<String>> = self.cache.as_ref().map(|_| {
            distinct
                .iter()
                .map(|text| embed_text_key(self.backend(), self.model(), text))
                .collect()
        });
        let mut vectors: Vec<Option<Vec<f32>>> = match (&self.cache, &keys) {
            (Some(cache), Some(keys)) => cache.get_text_embeddings(keys)?,
            _ => vec![None; distinct.len()],
        };
        let cached = vectors.iter().flatten().count();
        self.dispatcher
            .usage
            .requests(distinct.len() as u64, cached as u64);
        let missing: Vec<usize> = (0..distinct.len())
            .filter(|&slot| vectors[slot].is_none())
            .collect();
        let batches = missing
            .chunks(self.batch_size)
            .map(|batch| self.embed_batch(batch, &distinct, keys.as_deref()));
        for (batch, batch_vectors) in missing
            .chunks(self.batch_size)
            .zip(try_join_all(batches).await?)
        {
            for (&slot, vector) in batch.iter().zip(batch_vectors) {
                vectors[slot] = Some(vector);
            }
        }
        Ok(slots
            .into_iter()
            .map(|slot| vectors[slot].clone().unwrap_or_default())
            .collect())
    }

    /// Embeds the texts at `slots` of `distinct` as one request and caches their vectors
    /// under `keys` (when there is a cache).
    async fn embed_batch(
        &self,
        slots: &[usize],
        distinct: &[&String],
        keys: Option<&[String]>,
    ) -> Result<Vec<Vec<f32>>, LlmError> {
        let texts: Vec<String> = slots.iter().map(|&slot| distinct[slot].clone()).collect();
        let vectors = self.embed_on(None, &texts).await?;
        if let (Some(cache), Some(keys)) = (&self.cache, keys) {
            let entries = slots
                .iter()
                .map(|&slot| keys[slot].clone())
                .zip(vectors.iter().cloned())
                .collect();
            cache
                .put_text_embeddings(entries, self.backend(), self.model())
                .await?;
        }
        Ok(vectors)
    }

    /// Totals since the embedder was built: texts asked for (distinct within a call) as
    /// requests, those found in the cache as cache hits, batches sent as calls.
    pub fn usage(&self) -> UsageSummary {
        self.dispatcher.usage.snapshot()
    }

    /// Embeds one short text on every endpoint, past the cache and with the usual retries, so
    /// that a wrong key, model or URL is found before a run starts its work.
    pub async fn check_endpoints(&self) -> Result<(), LlmError> {
        let texts = &["ok".to_string()][..];
        for index in 0..self.dispatcher.pool.backends().len() {
            self.embed_on(Some(index), texts).await?;
        }
        Ok(())
    }

    /// One request for `texts` (retried as configured) on endpoint `only`, or the least busy.
    async fn embed_on(
        &self,
        only: Option<usize>,
        texts: &[String],
    ) -> Result<Vec<Vec<f32>>, LlmError> {
        let (vectors, _) = self
            .dispatcher
            .call_at(
                only,
                |backend| backend.endpoint().to_string(),
                |backend| {
                    Box::pin(async move {
                        let vectors = backend.embed(texts).await?;
                        check_shape(&vectors, texts.len())?;
                        Ok(vectors)
                    })
                },
            )
            .await?;
        Ok(vectors)
    }

    /// The refusal (HTTP 401, 403 or 404) that stopped this embedder, if an endpoint sent one.
    pub fn refusal(&self) -> Option<LlmError> {
        self.dispatcher.refusal()
    }
}

/// One vector per text, all of one dimension; anything else is a broken reply.
fn check_shape(vectors: &[Vec<f32>], n_texts: usize) -> Result<(), CallError> {
    let broken = |reason: String| CallError::Retryable {
        reason,
        retry_after: None,
    };
    if vectors.len() != n_texts {
        return Err(broken(format!(
            "{} vectors for {n_texts} texts",
            vectors.len()
        )));
    }
    if let Some(first) = vectors.first()
        && vectors.iter().any(|v| v.len() != first.len())
    {
        return Err(broken("vectors of different dimensions".into()));
    }
    Ok(())
}
