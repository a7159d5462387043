//! The attempt loop every client shares: a concurrency limit, the least busy endpoint, a
//! timeout per attempt, retries with backoff, and usage accounting.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tokio::sync::Semaphore;

use crate::config::ClientSettings;
use crate::endpoints::EndpointPool;
use crate::error::LlmError;
use crate::retry::RetryPolicy;
use crate::types::{BoxFuture, CallError};
use crate::usage::UsageRecorder;

/// What a successful call returns besides its value.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallStats {
    /// Attempts made, the successful one included.
    pub(crate) attempts: u32,
    /// Wall time of the successful attempt.
    pub(crate) elapsed: Duration,
}

/// Sends attempts to a pool of backends of one kind (`dyn ChatBackend`, `dyn EmbedBackend`).
#[derive(Debug)]
pub(crate) struct Dispatcher<B: ?Sized> {
    pub(crate) pool: EndpointPool<B>,
    permits: Semaphore,
    timeout: Duration,
    retry: RetryPolicy,
    jitter: Mutex<ChaCha8Rng>,
    pub(crate) usage: UsageRecorder,
    backend: String,
    model: String,
    /// Set by the first reply that refuses this client (401/403/404): (endpoint, reason).
    refused: OnceLock<(String, String)>,
}

impl<B: ?Sized> Dispatcher<B> {
    pub(crate) fn new(
        pool: EndpointPool<B>,
        settings: &ClientSettings,
        backend: &str,
        model: &str,
    ) -> Dispatcher<B> {
        let seed = settings.jitter_seed.unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        });
        Dispatcher {
            pool,
            permits: Semaphore::new(settings.concurrency.max(1)),
            timeout: settings.timeout,
            retry: RetryPolicy {
                max_attempts: settings.retry.max_attempts.max(1),
                ..settings.retry
            },
            jitter: Mutex::new(ChaCha8Rng::seed_from_u64(seed)),
            usage: UsageRecorder::new(backend, model),
            backend: backend.to_string(),
            model: model.to_string(),
            refused: OnceLock::new(),
        }
    }

    /// The error of the first reply that refused this client, if one did.
    pub(crate) fn refusal(&self) -> Option<LlmError> {
        self.refused
            .get()
            .map(|(endpoint, reason)| LlmError::Refused {
                backend: self.backend.clone(),
                model: self.model.clone(),
                endpoint: endpoint.clone(),
                reason: reason.clone(),
            })
    }

    /// Calls `attempt` on the least busy endpoint until it succeeds, fails fatally, or the
    /// attempts run out. The concurrency permit is held during an attempt, not during the
    /// wait before the next one. Every failure is counted in the usage and returned. Once an
    /// endpoint has refused the client (401/403/404), no attempt is made: every call fails
    /// with that refusal at once.
    pub(crate) async fn call<'a, T>(
        &'a self,
        endpoint_of: impl Fn(&B) -> String,
        attempt: impl Fn(Arc<B>) -> BoxFuture<'a, Result<T, CallError>>,
    ) -> Result<(T, CallStats), LlmError> {
        self.call_at(None, endpoint_of, attempt).await
    }

    /// [`Dispatcher::call`] on endpoint `only` when given, else on the least busy one.
    pub(crate) async fn call_at<'a, T>(
        &'a self,
        only: Option<usize>,
        endpoint_of: impl Fn(&B) -> String,
        attempt: impl Fn(Arc<B>) -> BoxFuture<'a, Result<T, CallError>>,
    ) -> Result<(T, CallStats), LlmError> {
        let mut attempts = 0;
        loop {
            if let Some(refusal) = self.refusal() {
                self.usage.failure(&refusal.to_string());
                return Err(refusal);
            }
            attempts += 1;
            let permit = self
                .permits
                .acquire()
                .await
                .expect("the semaphore is never closed");
            // A call that waited for its permit while another was refused sends nothing.
            if let Some(refusal) = self.refusal() {
                drop(permit);
                self.usage.failure(&refusal.to_string());
                return Err(refusal);
            }
            let lease = match only {
                Some(index) => self.pool.lease_at(index),
                None => self.pool.lease(),
            };
            let endpoint = endpoint_of(lease.backend());
            let started = Instant::now();
            let outcome = tokio::time::timeout(self.timeout, attempt(Arc::clone(lease.backend())))
                .await
                .unwrap_or_else(|_| {
                    Err(CallError::Retryable {
                        reason: format!("no reply within {:.1} s", self.timeout.as_secs_f64()),
                        retry_after: None,
                    })
                })
                // A server that quotes the key back in its error: the reason is scrubbed
                // before anything counts, logs or stores it.
                .map_err(|error| error.map_reason(hierarag_fs::secrets::scrub_excerpt));
            let elapsed = started.elapsed();
            // A refusal is known before the permit goes to a waiting call, which then sends
            // nothing. Only the first is kept; calls already in flight may bring theirs.
            if let Err(CallError::Refused { reason }) = &outcome {
                let _ = self.refused.set((endpoint.clone(), reason.clone()));
                self.usage.attempt(elapsed, attempts > 1);
                self.usage.failure(reason);
                return Err(self.refusal().expect("set above"));
            }
            drop(lease);
            drop(permit);
            // A call waiting for the permit was woken onto this worker thread, behind this
            // task: let it send its request before this one goes on to store and record its
            // reply, so that the slot is busy again within microseconds.
            tokio::task::yield_now().await;
            self.usage.attempt(elapsed, attempts > 1);
            let (reason, retry_after, retryable) = match outcome {
                Ok(value) => return Ok((value, CallStats { attempts, elapsed })),
                Err(CallError::Fatal { reason } | CallError::Refused { reason }) => {
                    (reason, None, false)
                }
                Err(CallError::Retryable {
                    reason,
                    retry_after,
                }) => (reason, retry_after, true),
            };
            if !retryable || attempts >= self.retry.max_attempts {
                self.usage.failure(&reason);
                return Err(LlmError::Call {
                    backend: self.backend.clone(),
                    model: self.model.clone(),
                    endpoint,
                    attempts,
                    gave_up: retryable,
                    reason,
                });
            }
            let wait = {
                let mut rng = self.jitter.lock().unwrap_or_else(|e| e.into_inner());
                self.retry.delay(attempts, retry_after, &mut *rng)
            };
            tracing::warn!(
                backend = %self.backend,
                model = %self.model,
                %endpoint,
                attempt = attempts,
                wait_ms = wait.as_millis() as u64,
                "{reason}; retrying"
            );
            tokio::time::sleep(wait).await;
        }
    }
}
