//! [`ChatClient`]: chat completion through any [`ChatBackend`]s, with the cache in front and the
//! shared attempt loop behind.

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::anthropic::AnthropicChat;
use crate::batch::{
    BatchLedger, BatchRound, Batching, LedgerLine, batching, now_unix_s, submission_id,
};
use crate::cache::{ResponseCache, chat_key};
use crate::config::{ChatBackendKind, ClientSettings, LlmConfig};
use crate::dispatch::Dispatcher;
use crate::endpoints::EndpointPool;
use crate::error::{ConfigError, LlmError};
use crate::http::http_client;
use crate::openai::OpenAiChat;
use crate::types::{BatchBackend, BatchResult, ChatBackend, ChatRequest, Completion, Message};
use crate::usage::UsageSummary;
use hierarag_cost::{Budget, Prices, Reservation};

/// A chat completion and how it was obtained.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// On a cache hit: the stored text, finish reason and usage of the original call.
    pub completion: Completion,
    /// Answered from the response cache, with no call.
    pub cached: bool,
    /// Attempts made (0 on a cache hit).
    pub attempts: u32,
}

/// Chat completion with a concurrency limit, endpoint balancing, timeouts, retries, a response
/// cache and usage accounting. Cheap to clone: clones share the limit, the endpoints, the cache
/// and the usage, so that tasks spawned on other threads can each hold one.
#[derive(Debug, Clone)]
pub struct ChatClient {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    dispatcher: Dispatcher<dyn ChatBackend>,
    cache: Option<ResponseCache>,
    /// The run's spending limit and this client's prices, when the run has a `[budget]`.
    budget: OnceLock<(Arc<Budget>, Prices)>,
    /// The provider's batch interface on the first endpoint (OpenAI and Anthropic backends).
    batch_api: Option<Arc<dyn BatchBackend>>,
    /// Batch mode, once set: requests the cache cannot answer are deferred to a batch.
    batching: OnceLock<Batching>,
    settings: ClientSettings,
}

impl ChatClient {
    /// A client over `backends`, endpoints of one backend kind and model (e.g. the in-process
    /// model from `hierarag-models`, or several servers). Opens the cache if `settings` names
    /// one.
    pub fn new(
        backends: Vec<Arc<dyn ChatBackend>>,
        settings: &ClientSettings,
    ) -> Result<ChatClient, LlmError> {
        ChatClient::build(backends, settings, None)
    }

    /// [`ChatClient::new`] over backends that also have a batch interface (the first one's
    /// takes the batches).
    fn with_batches<B: ChatBackend + BatchBackend + 'static>(
        backends: Vec<Arc<B>>,
        settings: &ClientSettings,
    ) -> Result<ChatClient, LlmError> {
        let batch_api = backends
            .first()
            .map(|b| Arc::clone(b) as Arc<dyn BatchBackend>);
        let chat = backends
            .into_iter()
            .map(|b| b as Arc<dyn ChatBackend>)
            .collect();
        ChatClient::build(chat, settings, batch_api)
    }

    fn build(
        backends: Vec<Arc<dyn ChatBackend>>,
        settings: &ClientSettings,
        batch_api: Option<Arc<dyn BatchBackend>>,
    ) -> Result<ChatClient, LlmError> {
        let (backend, model) = same_model(backends.iter().map(|b| (b.backend(), b.model())))?;
        let cache = settings
            .cache
            .as_deref()
            .map(ResponseCache::open)
            .transpose()?;
        Ok(ChatClient {
            inner: Arc::new(Inner {
                dispatcher: Dispatcher::new(
                    EndpointPool::new(backends),
                    settings,
                    &backend,
                    &model,
                ),
                cache,
                budget: OnceLock::new(),
                batch_api,
                batching: OnceLock::new(),
                settings: settings.clone(),
            }),
        })
    }

    /// Puts the client in batch mode: from now on a request the cache cannot answer is not sent
    /// but deferred ([`LlmError::Deferred`]) until [`ChatClient::run_batches`] sends the
    /// deferred requests as batches, waiting `poll` before the first look at a batch (doubling
    /// up to 16 times that). Needs the response cache and a backend with a batch API.
    pub fn set_batch_mode(&self, poll: Duration) -> Result<(), LlmError> {
        let refuse = |message: &str| {
            Err(LlmError::Config(ConfigError::new(
                "[llm]",
                "llm.batch",
                message,
            )))
        };
        if self.inner.cache.is_none() {
            return refuse("batch mode needs the response cache (cache is \"off\")");
        }
        let Some(api) = &self.inner.batch_api else {
            return refuse("batch mode needs an openai or anthropic backend");
        };
        let _ = self.inner.batching.set(batching(
            Arc::clone(api),
            &self.inner.settings,
            self.backend(),
            self.model(),
            poll,
        ));
        Ok(())
    }

    /// Whether the client is in batch mode.
    pub fn batch_mode(&self) -> bool {
        self.inner.batching.get().is_some()
    }

    /// Requests deferred since the last round, not yet sent.
    pub fn deferred(&self) -> usize {
        self.inner
            .batching
            .get()
            .map_or(0, |b| b.lock().pending.len())
    }

    /// Counts this client's calls against `budget` at `prices`: a call that would pass it is
    /// not sent, and the client stops as after a refusal ([`ChatClient::refusal`]). Set once;
    /// later calls are ignored.
    pub fn set_budget(&self, budget: Arc<Budget>, prices: Prices) {
        let _ = self.inner.budget.set((budget, prices));
    }

    /// A client for an `openai` or `anthropic` `[llm]` table: one backend per base URL, the API
    /// key from its environment variable, the cache path resolved against `run_dir`. Batch mode
    /// (`batch = true`) is the stage's to set ([`ChatClient::set_batch_mode`]), for the stages
    /// that run in rounds. For
    /// `embedded`, build the model and call [`ChatClient::new`] with `config.settings(run_dir)`.
    pub fn from_config(config: &LlmConfig, run_dir: &Path) -> Result<ChatClient, LlmError> {
        config.validate("[llm]")?;
        let api_key = config.api_key()?;
        let http = http_client().map_err(|message| ConfigError::new("[llm]", "llm", message))?;
        let settings = config.settings(run_dir);
        let client = match config.backend {
            ChatBackendKind::OpenAi => ChatClient::with_batches(
                config
                    .base_urls
                    .iter()
                    .map(|url| {
                        Arc::new(OpenAiChat::new(
                            http.clone(),
                            url,
                            &config.model,
                            api_key.clone(),
                            config.structured_output,
                        ))
                    })
                    .collect(),
                &settings,
            )?,
            ChatBackendKind::Anthropic => ChatClient::with_batches(
                config
                    .base_urls
                    .iter()
                    .map(|url| {
                        Arc::new(AnthropicChat::new(
                            http.clone(),
                            url,
                            &config.model,
                            api_key.clone(),
                        ))
                    })
                    .collect(),
                &settings,
            )?,
            ChatBackendKind::Embedded => {
                return Err(ConfigError::new(
                    "[llm]",
                    "llm.backend",
                    "the embedded model is built by hierarag-models; pass it to ChatClient::new",
                )
                .into());
            }
        };
        Ok(client)
    }

    /// `openai`, `anthropic`, `embedded`, …
    pub fn backend(&self) -> &str {
        self.inner.dispatcher.pool.first().backend()
    }

    pub fn model(&self) -> &str {
        self.inner.dispatcher.pool.first().model()
    }

    /// The endpoints, in the order they were given.
    pub fn endpoints(&self) -> Vec<String> {
        let backends = self.inner.dispatcher.pool.backends();
        backends.iter().map(|b| b.endpoint().to_string()).collect()
    }

    /// Answers `request` from the cache, or calls a backend (retrying as configured) and
    /// stores the reply. The reply's usage latency is the successful attempt's wall time. A
    /// reply is in the cache file when this returns, so a caller may record what it depends on.
    pub async fn complete(&self, request: &ChatRequest) -> Result<Reply, LlmError> {
        let usage = &self.inner.dispatcher.usage;
        usage.request();
        // Hashing the canonical request costs microseconds; without a cache there is no need.
        // The key is of what the model receives: a backend that does not send the schema
        // (without structured output, or Anthropic) is keyed without it.
        let key = self.inner.cache.as_ref().map(|_| {
            let schema = request
                .json_schema
                .as_ref()
                .filter(|_| self.inner.dispatcher.pool.first().sends_json_schema());
            chat_key(self.backend(), self.model(), request, schema)
        });
        if let (Some(cache), Some(key)) = (&self.inner.cache, &key)
            && let Some(completion) = cache.get_completion(key)?
        {
            usage.cache_hit();
            return Ok(Reply {
                completion,
                cached: true,
                attempts: 0,
            });
        }
        // A cache that could not store a reply (a full disk): nothing more is sent, since
        // what came back could not be kept.
        if let Some(broken) = self.inner.cache.as_ref().and_then(ResponseCache::broken) {
            usage.failure(&broken.to_string());
            return Err(broken);
        }
        let budget = self.inner.budget.get();
        if let (Some(batching), Some(key)) = (self.inner.batching.get(), &key) {
            return Err(self.defer(batching, key.clone(), request));
        }
        // The first attempt's reservation is made here, so that a refused one is the budget's
        // error; each retry reserves anew (`Attempt`).
        let first = match budget {
            Some((budget, prices)) => Some(
                budget
                    .reserve(
                        request.prompt_tokens_at_most(),
                        request.max_tokens.into(),
                        prices,
                    )
                    .map_err(|reason| LlmError::Budget { reason })?,
            ),
            None => None,
        };
        let first = std::sync::Mutex::new(first);
        let result = self
            .inner
            .dispatcher
            .call(
                |backend| backend.endpoint().to_string(),
                |backend| {
                    let first = &first;
                    Box::pin(async move {
                        let taken = first.lock().unwrap_or_else(|e| e.into_inner()).take();
                        let attempt = Attempt::start(budget, taken, request)?;
                        let outcome = backend.complete(request).await;
                        attempt.end(&outcome);
                        outcome
                    })
                },
            )
            .await;
        let (mut completion, stats) = result?;
        completion.usage.latency_ms = stats.elapsed.as_secs_f64() * 1000.0;
        scrub_completion(&mut completion);
        usage.tokens(&completion.usage);
        if let (Some(cache), Some(key)) = (&self.inner.cache, &key) {
            cache
                .put_completion(key, self.backend(), self.model(), &completion)
                .await?;
        }
        Ok(Reply {
            completion,
            cached: false,
            attempts: stats.attempts,
        })
    }

    /// Defers `request` to the next batch (its cost reserved now against the budget), or
    /// fails it with the error its batch result was.
    fn defer(&self, batching: &Batching, key: String, request: &ChatRequest) -> LlmError {
        let usage = &self.inner.dispatcher.usage;
        if let Some(reason) = batching.lock().failed.get(&key) {
            usage.failure(reason);
            return LlmError::Call {
                backend: self.backend().to_string(),
                model: self.model().to_string(),
                endpoint: batching.api.pool.first().endpoint().to_string(),
                attempts: 1,
                gave_up: false,
                reason: format!("in a batch: {reason}"),
            };
        }
        let reservation = match self.inner.budget.get() {
            Some((budget, prices)) => match budget.reserve(
                request.prompt_tokens_at_most(),
                request.max_tokens.into(),
                prices,
            ) {
                Ok(reservation) => Some(reservation),
                Err(reason) => return LlmError::Budget { reason },
            },
            None => None,
        };
        // Counted when its batch result is read from the cache, as a request and a hit.
        usage.withdraw_request();
        let mut deferred = batching.lock();
        match deferred.pending.entry(key) {
            std::collections::btree_map::Entry::Occupied(_) => {
                // The same request from another item: one reservation is enough.
                self.release([reservation]);
            }
            std::collections::btree_map::Entry::Vacant(slot) => {
                slot.insert((request.clone(), reservation));
            }
        }
        LlmError::Deferred
    }

    /// Sends the requests deferred since the last round as batches of the provider and stores
    /// their results in the response cache, after first waiting for the batches `ledger` lists
    /// as submitted from this client but not ended (a run killed while it waited). Each batch
    /// is recorded in `ledger` as soon as it is submitted and again when its results are read;
    /// `report` hears its progress. Nothing to do outside batch mode.
    pub async fn run_batches(
        &self,
        ledger: &BatchLedger,
        report: &(dyn Fn(&str) + Sync),
    ) -> Result<BatchRound, LlmError> {
        let Some(batching) = self.inner.batching.get() else {
            return Ok(BatchRound::default());
        };
        let mut round = BatchRound::default();
        let endpoint = batching.api.pool.first().endpoint().to_string();
        // A create cut off by a crash: the batch it may have made is looked up, and waited
        // for as a submitted one; if there is none, its requests go in this round.
        for submission in ledger.open_submissions(self.backend(), self.model(), &endpoint)? {
            let found = batching
                .api
                .call(
                    |b| b.endpoint().to_string(),
                    |b| {
                        let submission = &submission;
                        Box::pin(async move { b.find(submission).await })
                    },
                )
                .await?
                .0;
            match found {
                Some(id) => ledger.append(&LedgerLine::Submitted {
                    batch_id: id,
                    backend: self.backend().to_string(),
                    model: self.model().to_string(),
                    endpoint: endpoint.clone(),
                    requests: 0,
                    unix_s: now_unix_s(),
                    submission: Some(submission),
                })?,
                None => ledger.append(&LedgerLine::NotCreated {
                    submission,
                    unix_s: now_unix_s(),
                })?,
            }
        }
        for id in ledger.open_batches(self.backend(), self.model(), &endpoint)? {
            report(&format!(
                "waiting for batch {id}, submitted by an earlier run"
            ));
            round.reattached += 1;
            self.finish_batch(batching, ledger, &id, &[], &mut round, report)
                .await?;
        }
        for chunk in batching.take_chunks() {
            let (held, entries): (Vec<(String, Option<Reservation>)>, Vec<String>) = chunk
                .into_iter()
                .map(|(key, entry, reservation)| ((key, reservation), entry))
                .unzip();
            // Marked before anything is sent; each attempt (a retry after a 5xx too) first
            // looks for the batch so marked, so that a create is never repeated blindly.
            let submission = submission_id(held.iter().map(|(key, _)| key.as_str()));
            ledger.append(&LedgerLine::Submitting {
                submission: submission.clone(),
                backend: self.backend().to_string(),
                model: self.model().to_string(),
                endpoint: endpoint.clone(),
                requests: held.len(),
                unix_s: now_unix_s(),
            })?;
            let submitted = batching
                .api
                .call(
                    |b| b.endpoint().to_string(),
                    |b| {
                        let (entries, submission) = (&entries, &submission);
                        Box::pin(async move {
                            match b.find(submission).await? {
                                Some(id) => Ok(id),
                                None => b.submit(entries, submission).await,
                            }
                        })
                    },
                )
                .await;
            let id = match submitted {
                Ok((id, _)) => id,
                Err(error) => {
                    self.release(held.iter().map(|(_, r)| *r));
                    return Err(error);
                }
            };
            ledger.append(&LedgerLine::Submitted {
                batch_id: id.clone(),
                backend: self.backend().to_string(),
                model: self.model().to_string(),
                endpoint: endpoint.clone(),
                requests: held.len(),
                unix_s: now_unix_s(),
                submission: Some(submission),
            })?;
            report(&format!("batch {id}: {} requests submitted", held.len()));
            round.submitted += 1;
            round.requests += held.len();
            self.finish_batch(batching, ledger, &id, &held, &mut round, report)
                .await?;
        }
        Ok(round)
    }

    /// Waits for batch `id`, stores its results, fails the requests it `held` that have none,
    /// settles their reservations and records the end in `ledger`.
    async fn finish_batch(
        &self,
        batching: &Batching,
        ledger: &BatchLedger,
        id: &str,
        held: &[(String, Option<Reservation>)],
        round: &mut BatchRound,
        report: &(dyn Fn(&str) + Sync),
    ) -> Result<(), LlmError> {
        let Some(status) = batching.wait(id, report).await? else {
            // The provider no longer knows the batch: nothing of it can be read, and its
            // requests are deferred again by the next pass, to the next batch.
            self.release(held.iter().map(|(_, r)| *r));
            ledger.append(&LedgerLine::Ended {
                batch_id: id.to_string(),
                state: "unknown to the provider".into(),
                succeeded: 0,
                failed: 0,
                unix_s: now_unix_s(),
            })?;
            report(&format!(
                "batch {id}: the provider does not know it (HTTP 404: deleted, or past its \
retention); its requests go in the next batch"
            ));
            return Ok(());
        };
        let results = if status.files.is_empty() && status.error.is_some() {
            Vec::new()
        } else {
            batching.results(&status).await?
        };
        let (succeeded, failed) = self.store_results(&results).await?;
        let mut reservations: std::collections::HashMap<&str, Option<Reservation>> =
            held.iter().map(|(k, r)| (k.as_str(), *r)).collect();
        for result in &results {
            let held = reservations.remove(result.custom_id.as_str());
            let Some((budget, prices)) = self.inner.budget.get() else {
                continue;
            };
            let (prompt, completion) = result.outcome.as_ref().map_or((0, 0), |c| {
                (c.usage.prompt_tokens, c.usage.completion_tokens)
            });
            match held {
                Some(Some(reservation)) => budget.settle(reservation, prompt, completion, prices),
                Some(None) => {}
                // A result of a batch an earlier process submitted (re-attached): its
                // reservation died with that process, and the provider bills it all the same.
                None => budget.spend(prompt, completion, prices),
            }
        }
        // Requests the batch never ran: their items fail in the next pass.
        let reason = status.error.clone().unwrap_or_else(|| {
            format!("the batch ended ({}) before this request ran", status.state)
        });
        let not_run: Vec<&str> = reservations.keys().copied().collect();
        {
            let mut deferred = batching.lock();
            for key in &not_run {
                deferred.failed.insert((*key).to_string(), reason.clone());
            }
        }
        self.release(reservations.into_values());
        round.succeeded += succeeded;
        round.failed += failed;
        round.not_run += not_run.len();
        ledger.append(&LedgerLine::Ended {
            batch_id: id.to_string(),
            state: status.state.clone(),
            succeeded,
            failed,
            unix_s: now_unix_s(),
        })?;
        report(&format!(
            "batch {id}: {} — {succeeded} results stored, {failed} failed{}",
            status.state,
            if not_run.is_empty() {
                String::new()
            } else {
                format!(", {} not run", not_run.len())
            }
        ));
        Ok(())
    }

    /// Gives back reservations of requests that were not sent.
    fn release(&self, reservations: impl IntoIterator<Item = Option<Reservation>>) {
        if let Some((budget, prices)) = self.inner.budget.get() {
            for reservation in reservations.into_iter().flatten() {
                budget.settle(reservation, 0, 0, prices);
            }
        }
    }

    /// Stores the completions of `results` in the cache under their `custom_id` (a request's
    /// cache key) and counts them as calls; an error result fails its request in batch mode.
    /// (stored, failed).
    async fn store_results(&self, results: &[BatchResult]) -> Result<(usize, usize), LlmError> {
        let Some(cache) = &self.inner.cache else {
            return Err(LlmError::Config(ConfigError::new(
                "[llm]",
                "llm.cache",
                "batch results go to the response cache, which is \"off\"",
            )));
        };
        let usage = &self.inner.dispatcher.usage;
        let mut completions = Vec::new();
        let mut failed = 0;
        for result in results {
            usage.attempt(Duration::ZERO, false);
            match &result.outcome {
                Ok(completion) => {
                    usage.tokens(&completion.usage);
                    let mut completion = completion.clone();
                    scrub_completion(&mut completion);
                    completions.push((result.custom_id.clone(), completion));
                }
                Err(reason) => {
                    let reason = &hierarag_fs::secrets::scrub_excerpt(reason);
                    if let Some(batching) = self.inner.batching.get() {
                        batching
                            .lock()
                            .failed
                            .insert(result.custom_id.clone(), reason.clone());
                    }
                    failed += 1;
                }
            }
        }
        let stored = completions.len();
        cache
            .put_completions(self.backend(), self.model(), completions)
            .await?;
        Ok((stored, failed))
    }

    /// The requests deferred since the last round, each its `custom_id` and its line of a
    /// batch input file in the provider's format (OpenAI's: `custom_id`, `method`, `url`,
    /// `body`; JSON text), in key order; they are no longer pending (their reservations are
    /// given back).
    pub fn take_batch_entries(&self) -> Vec<(String, String)> {
        let Some(batching) = self.inner.batching.get() else {
            return Vec::new();
        };
        let mut entries = Vec::new();
        for chunk in batching.take_chunks() {
            for (key, entry, reservation) in chunk {
                self.release([reservation]);
                entries.push((key, entry));
            }
        }
        entries
    }

    /// Reads an OpenAI-format batch output file into the response cache (each line's
    /// `custom_id` is the cache key it answers): (stored, the failed lines' ids and reasons).
    /// With `requested` (the ids `batch export` wrote out), a result for any other id is not
    /// stored and fails, named.
    pub async fn import_batch_output(
        &self,
        bytes: &[u8],
        requested: Option<&std::collections::HashSet<String>>,
    ) -> Result<(usize, Vec<(String, String)>), LlmError> {
        let results = crate::openai::read_batch_output(bytes)
            .map_err(|message| LlmError::Batch { message })?;
        // One result a request: a repeat is dropped (a call is counted once), and one that
        // differs from the first is a failure of the file, named; the first is kept.
        let mut first: std::collections::HashMap<String, usize> = Default::default();
        let mut unique = Vec::new();
        let mut failed = Vec::new();
        for (n, result) in results.into_iter().enumerate() {
            if requested.is_some_and(|ids| !ids.contains(&result.custom_id))
                && !result.custom_id.starts_with("line ")
            {
                failed.push((
                    result.custom_id,
                    format!(
                        "result {}: no request of `batch export` has this custom_id; not stored",
                        n + 1
                    ),
                ));
                continue;
            }
            match first.get(&result.custom_id) {
                Some(&at) if unique.get(at) == Some(&result) => {}
                Some(_) => failed.push((
                    result.custom_id,
                    format!(
                        "result {} repeats this custom_id with another result; the first is kept",
                        n + 1
                    ),
                )),
                None => {
                    first.insert(result.custom_id.clone(), unique.len());
                    unique.push(result);
                }
            }
        }
        let (stored, _) = self.store_results(&unique).await?;
        failed.splice(
            0..0,
            unique.into_iter().filter_map(|r| {
                let reason = r.outcome.err()?;
                Some((r.custom_id, hierarag_fs::secrets::scrub_excerpt(&reason)))
            }),
        );
        Ok((stored, failed))
    }

    /// Sends a one-token request to every endpoint, past the cache and with the usual
    /// retries, so that a wrong key, model or URL is found before a run starts its work; the
    /// first endpoint that fails, with its reason.
    pub async fn check_endpoints(&self) -> Result<(), LlmError> {
        let mut request = ChatRequest::new(vec![Message::user("Reply with the word OK.")]);
        request.max_tokens = 1;
        let request = &request;
        let budget = self.inner.budget.get();
        for index in 0..self.inner.dispatcher.pool.backends().len() {
            self.inner
                .dispatcher
                .call_at(
                    Some(index),
                    |backend| backend.endpoint().to_string(),
                    |backend| {
                        Box::pin(async move {
                            // Billed like any call: within the run's budget.
                            let attempt = Attempt::start(budget, None, request)?;
                            let outcome = backend.complete(request).await;
                            attempt.end(&outcome);
                            outcome
                        })
                    },
                )
                .await?;
        }
        Ok(())
    }

    /// Totals since the client was built.
    pub fn usage(&self) -> UsageSummary {
        self.inner.dispatcher.usage.snapshot()
    }

    /// The refusal (HTTP 401, 403 or 404) that stopped this client, if an endpoint sent one:
    /// after it, every call fails at once without a request, so a stage stops too.
    pub fn refusal(&self) -> Option<LlmError> {
        self.inner
            .dispatcher
            .refusal()
            .or_else(|| {
                let (budget, _) = self.inner.budget.get()?;
                budget.stopped().map(|reason| LlmError::Budget {
                    reason: reason.to_owned(),
                })
            })
            .or_else(|| self.inner.cache.as_ref()?.broken())
    }
}

/// One attempt's hold on the budget: its reservation, settled at what the reply used, given
/// back when the provider refused the request (a 4xx, 429 too: nothing was generated), and charged
/// whole when the attempt failed otherwise or was abandoned (a timeout drops it): the
/// provider may have done, and billed, the work.
struct Attempt<'a> {
    held: Option<(&'a Arc<Budget>, &'a Prices, Reservation)>,
}

impl<'a> Attempt<'a> {
    /// Takes `first` (the call's first reservation) or reserves for a retry; a refused
    /// reservation fails the attempt for good and stops the budget.
    fn start(
        budget: Option<&'a (Arc<Budget>, Prices)>,
        first: Option<Reservation>,
        request: &ChatRequest,
    ) -> Result<Attempt<'a>, crate::types::CallError> {
        let Some((budget, prices)) = budget else {
            return Ok(Attempt { held: None });
        };
        let reservation = match first {
            Some(reservation) => reservation,
            None => budget
                .reserve(
                    request.prompt_tokens_at_most(),
                    request.max_tokens.into(),
                    prices,
                )
                .map_err(|reason| crate::types::CallError::Fatal { reason })?,
        };
        Ok(Attempt {
            held: Some((budget, prices, reservation)),
        })
    }

    fn end(mut self, outcome: &Result<Completion, crate::types::CallError>) {
        let Some((budget, prices, reservation)) = self.held.take() else {
            return;
        };
        match outcome {
            Ok(completion) => budget.settle(
                reservation,
                completion.usage.prompt_tokens,
                completion.usage.completion_tokens,
                prices,
            ),
            Err(
                crate::types::CallError::Fatal { .. } | crate::types::CallError::Refused { .. },
            ) => {
                budget.settle(reservation, 0, 0, prices);
            }
            // Too many requests: refused before any work.
            Err(crate::types::CallError::Retryable { reason, .. })
                if reason.starts_with("HTTP 429") =>
            {
                budget.settle(reservation, 0, 0, prices);
            }
            Err(crate::types::CallError::Retryable { .. }) => budget.charge(reservation),
        }
    }
}

impl Drop for Attempt<'_> {
    fn drop(&mut self) {
        if let Some((budget, _, reservation)) = self.held.take() {
            budget.charge(reservation);
        }
    }
}

/// A reply's text with every registered secret scrubbed (a provider or gateway that echoes
/// the key), before the cache or a caller sees it.
fn scrub_completion(completion: &mut Completion) {
    if let std::borrow::Cow::Owned(clean) = hierarag_fs::secrets::scrub(&completion.text) {
        completion.text = clean;
    }
}

/// The (backend, model) all endpoints share; several models behind one client would make the
/// cache key and the usage lie.
pub(crate) fn same_model<'a>(
    mut pairs: impl Iterator<Item = (&'a str, &'a str)>,
) -> Result<(String, String), ConfigError> {
    let Some((backend, model)) = pairs.next() else {
        return Err(ConfigError::new(
            "client",
            "backends",
            "a client needs at least one backend",
        ));
    };
    for (other_backend, other_model) in pairs {
        if (other_backend, other_model) != (backend, model) {
            return Err(ConfigError::new(
                "client",
                "backends",
                format!(
                    "all endpoints must serve one model: {backend} {model} and {other_backend} {other_model} differ"
                ),
            ));
        }
    }
    Ok((backend.to_string(), model.to_string()))
}
