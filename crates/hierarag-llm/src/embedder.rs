//! [`Embedder`]: sentence embeddings through any [`EmbedBackend`]s, in batches, with the cache
//! in front and the shared attempt loop behind.

use std::path::Path;
use std::sync::Arc;

use futures_util::future::try_join_all;

use crate::cache::{ResponseCache, embed_cache_key};
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
/// cache (per batch) and usage accounting.
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

    /// One vector per text, in order. Texts go in batches of `batch_size`, concurrently up to
    /// the concurrency limit; each batch is one request (cached, retried) in the usage.
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, LlmError> {
        let batches = texts
            .chunks(self.batch_size)
            .map(|batch| self.embed_batch(batch));
        let vectors = try_join_all(batches).await?;
        Ok(vectors.into_iter().flatten().collect())
    }

    async fn embed_batch(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, LlmError> {
        let usage = &self.dispatcher.usage;
        usage.request();
        // As in ChatClient: hash the batch only when there is a cache to look it up in.
        let key = self
            .cache
            .as_ref()
            .map(|_| embed_cache_key(self.backend(), self.model(), texts));
        if let (Some(cache), Some(key)) = (&self.cache, &key)
            && let Some(vectors) = cache.get_embeddings(key)?
            && vectors.len() == texts.len()
        {
            usage.cache_hit();
            return Ok(vectors);
        }
        let vectors = self.embed_on(None, texts).await?;
        if let (Some(cache), Some(key)) = (&self.cache, &key) {
            cache
                .put_embeddings(key, self.backend(), self.model(), &vectors)
                .await?;
        }
        Ok(vectors)
    }

    /// Totals since the embedder was built; one request per batch.
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
