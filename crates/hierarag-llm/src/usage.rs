//! Usage accounting: what a client was asked, what it called, what it cost, what failed.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Totals for one client (one backend and model) since it was built; written to the run
/// manifest, and shown as one line at the end of a stage.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageSummary {
    pub backend: String,
    pub model: String,
    /// Requests made to the client: chat completions, or texts to embed (each distinct text
    /// of a call once).
    pub requests: u64,
    /// Requests answered from the response cache, with no call.
    pub cache_hits: u64,
    /// Attempts sent to a backend, retries included (for embeddings, batches of texts).
    pub calls: u64,
    /// Attempts after the first of a request.
    pub retries: u64,
    /// Requests that failed for good.
    pub failures: u64,
    /// Why requests failed (the last attempt's reason) → how many times.
    pub failure_reasons: BTreeMap<String, u64>,
    /// Tokens of the calls made; cache hits cost nothing and are not counted.
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Of `prompt_tokens`, those the provider read from its prompt cache (priced at
    /// `price_cached_prompt_per_mtok`).
    #[serde(default, skip_serializing_if = "crate::types::is_zero")]
    pub cached_prompt_tokens: u64,
    /// Of `prompt_tokens`, those written to the provider's prompt cache.
    #[serde(default, skip_serializing_if = "crate::types::is_zero")]
    pub cache_write_prompt_tokens: u64,
    /// Wall time spent in calls (every attempt), in milliseconds.
    pub latency_ms: f64,
}

impl fmt::Display for UsageSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}: {} requests ({} cached), {} calls, {} {}, {} failed, ",
            self.backend,
            self.model,
            self.requests,
            self.cache_hits,
            self.calls,
            self.retries,
            if self.retries == 1 {
                "retry"
            } else {
                "retries"
            },
            self.failures,
        )?;
        // A service that is not a model server (`http`) counts no tokens.
        if self.backend != "http" {
            write!(f, "{} prompt", self.prompt_tokens)?;
            if self.cached_prompt_tokens > 0 {
                write!(f, " ({} cached)", self.cached_prompt_tokens)?;
            }
            if self.cache_write_prompt_tokens > 0 {
                write!(
                    f,
                    " ({} written to the cache)",
                    self.cache_write_prompt_tokens
                )?;
            }
            write!(f, " + {} completion tokens, ", self.completion_tokens)?;
        }
        write!(f, "{:.1} s in calls", self.latency_ms / 1000.0)?;
        // The most frequent reason, so that a failing stage says why on its last line.
        if let Some((reason, count)) = self
            .failure_reasons
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))
        {
            write!(f, "; most frequent failure (×{count}): {reason}")?;
        }
        Ok(())
    }
}

/// The shared, lock-protected counters behind a client's [`UsageSummary`].
#[derive(Debug)]
pub(crate) struct UsageRecorder {
    summary: Mutex<UsageSummary>,
}

impl UsageRecorder {
    pub(crate) fn new(backend: &str, model: &str) -> UsageRecorder {
        UsageRecorder {
            summary: Mutex::new(UsageSummary {
                backend: backend.to_string(),
                model: model.to_string(),
                ..UsageSummary::default()
            }),
        }
    }

    fn update(&self, change: impl FnOnce(&mut UsageSummary)) {
        // A panic while holding this lock cannot leave the counters half-updated in a way that
        // matters, so a poisoned lock is used as is.
        let mut summary = self.summary.lock().unwrap_or_else(|e| e.into_inner());
        change(&mut summary);
    }

    pub(crate) fn snapshot(&self) -> UsageSummary {
        self.summary
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(crate) fn request(&self) {
        self.update(|s| s.requests += 1);
    }

    /// Takes back a request that was deferred to a batch (it is counted when answered).
    pub(crate) fn withdraw_request(&self) {
        self.update(|s| s.requests = s.requests.saturating_sub(1));
    }

    pub(crate) fn cache_hit(&self) {
        self.update(|s| s.cache_hits += 1);
    }

    /// `requests` requests at once, `cache_hits` of them answered from the cache (texts to
    /// embed).
    pub(crate) fn requests(&self, requests: u64, cache_hits: u64) {
        self.update(|s| {
            s.requests += requests;
            s.cache_hits += cache_hits;
        });
    }

    pub(crate) fn attempt(&self, elapsed: Duration, is_retry: bool) {
        self.update(|s| {
            s.calls += 1;
            s.retries += u64::from(is_retry);
            s.latency_ms += elapsed.as_secs_f64() * 1000.0;
        });
    }

    pub(crate) fn tokens(&self, usage: &crate::types::Usage) {
        self.update(|s| {
            s.prompt_tokens += usage.prompt_tokens;
            s.completion_tokens += usage.completion_tokens;
            s.cached_prompt_tokens += usage.cached_prompt_tokens;
            s.cache_write_prompt_tokens += usage.cache_write_prompt_tokens;
        });
    }

    pub(crate) fn failure(&self, reason: &str) {
        self.update(|s| {
            s.failures += 1;
            *s.failure_reasons.entry(reason.to_string()).or_default() += 1;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_one_line_with_counts_and_the_most_frequent_failure() {
        let recorder = UsageRecorder::new("openai", "m");
        recorder.request();
        recorder.request();
        recorder.request();
        recorder.cache_hit();
        recorder.attempt(Duration::from_millis(1500), false);
        recorder.attempt(Duration::from_millis(500), true);
        recorder.tokens(&crate::types::Usage {
            prompt_tokens: 10,
            completion_tokens: 5,
            ..crate::types::Usage::default()
        });
        recorder.failure("HTTP 500: boom");
        recorder.failure("HTTP 500: boom");
        recorder.failure("timed out");
        let line = recorder.snapshot().to_string();
        assert_eq!(
            line,
            "openai m: 3 requests (1 cached), 2 calls, 1 retry, 3 failed, 10 prompt + 5 completion \
             tokens, 2.0 s in calls; most frequent failure (×2): HTTP 500: boom"
        );
        assert!(!line.contains('\n'));
    }

    #[test]
    fn summary_serializes_every_counter() {
        let recorder = UsageRecorder::new("anthropic", "claude");
        recorder.failure("HTTP 400: bad");
        let json = serde_json::to_value(recorder.snapshot()).unwrap();
        assert_eq!(json["failures"], 1);
        assert_eq!(json["failure_reasons"]["HTTP 400: bad"], 1);
        assert_eq!(json["backend"], "anthropic");
    }
}
