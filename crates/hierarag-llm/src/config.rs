//! The `[llm]` and `[embeddings]` tables of a run config (TOML), and the client settings they
//! give.
//!
//! ```toml
//! [llm]
//! backend = "openai"                  # openai | anthropic | embedded
//! model = "gpt-4o-mini"
//! base_urls = ["https://api.openai.com/v1"]
//! api_key_env = "OPENAI_API_KEY"      # the variable's name, never the key
//! concurrency = 8
//! timeout_s = 120
//! max_attempts = 5
//! structured_output = true
//! cache = "llm-cache.sqlite"          # or "off"
//!
//! [embeddings]
//! backend = "embedded"                # openai | embedded
//! ```
//!
//! Other tables of the run config are ignored here; unknown keys inside these two are errors.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;
use crate::retry::RetryPolicy;

/// Which kind of chat backend serves `[llm]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatBackendKind {
    /// An OpenAI-compatible server (`/chat/completions`).
    OpenAi,
    /// Anthropic's Messages API.
    Anthropic,
    /// The in-process model of `hierarag-models`, built by the caller.
    Embedded,
}

/// Which kind of backend serves `[embeddings]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmbedBackendKind {
    /// An OpenAI-compatible server (`/embeddings`).
    OpenAi,
    /// The in-process model of `hierarag-models`, built by the caller.
    Embedded,
}

/// Where responses are cached: a SQLite file, or `"off"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum CacheSetting {
    Off,
    /// Relative paths are relative to the run directory (see [`CacheSetting::resolve`]).
    Path(PathBuf),
}

impl From<String> for CacheSetting {
    fn from(value: String) -> CacheSetting {
        if value == "off" {
            CacheSetting::Off
        } else {
            CacheSetting::Path(PathBuf::from(value))
        }
    }
}

impl From<CacheSetting> for String {
    fn from(setting: CacheSetting) -> String {
        match setting {
            CacheSetting::Off => "off".to_string(),
            CacheSetting::Path(path) => path.to_string_lossy().into_owned(),
        }
    }
}

impl CacheSetting {
    /// The cache file, a relative path taken relative to `base` (the run directory).
    pub fn resolve(&self, base: &Path) -> Option<PathBuf> {
        match self {
            CacheSetting::Off => None,
            CacheSetting::Path(path) => Some(base.join(path)),
        }
    }
}

/// The machinery shared by every backend: how many calls at once, how long each may take,
/// how to retry, where to cache.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientSettings {
    /// Calls in flight at once, over all endpoints.
    pub concurrency: usize,
    /// The limit on one attempt.
    pub timeout: Duration,
    pub retry: RetryPolicy,
    /// The SQLite response cache; `None` for no cache.
    pub cache: Option<PathBuf>,
    /// Seeds the backoff jitter; `None` seeds it from the clock.
    pub jitter_seed: Option<u64>,
}

impl Default for ClientSettings {
    fn default() -> ClientSettings {
        ClientSettings {
            concurrency: 4,
            timeout: Duration::from_secs(120),
            retry: RetryPolicy::default(),
            cache: None,
            jitter_seed: None,
        }
    }
}

/// The `[llm]` table of a run config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    pub backend: ChatBackendKind,
    /// Required for `openai` and `anthropic`; for `embedded` the model names itself.
    #[serde(default)]
    pub model: String,
    /// Endpoints serving the same model, balanced by requests in flight. OpenAI-compatible:
    /// up to `/v1` (`http://127.0.0.1:8080/v1`); Anthropic: the host (`https://api.anthropic.com`).
    #[serde(default)]
    pub base_urls: Vec<String>,
    /// The name of the environment variable that holds the API key; none sends no key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    /// Seconds one attempt may take.
    #[serde(default = "default_chat_timeout_s")]
    pub timeout_s: f64,
    /// Attempts per request, the first included.
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,
    /// Backoff ceiling, in seconds, after the first failure; it doubles after each further one.
    #[serde(default = "default_backoff_s")]
    pub backoff_s: f64,
    #[serde(default = "default_max_backoff_s")]
    pub max_backoff_s: f64,
    /// Send a request's JSON schema as `response_format` (OpenAI-compatible servers).
    #[serde(default = "default_true")]
    pub structured_output: bool,
    #[serde(default = "default_cache")]
    pub cache: CacheSetting,
    /// Price of a million prompt tokens (any currency), for the cost in the run manifest.
    #[serde(default)]
    pub price_prompt_per_mtok: Option<f64>,
    /// Price of a million completion tokens.
    #[serde(default)]
    pub price_completion_per_mtok: Option<f64>,
    /// Price of a million prompt tokens read from the provider's prompt cache [default: the
    /// prompt price]. Left out of the manifest while unset, so that runs from before it
    /// existed record the same config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_cached_prompt_per_mtok: Option<f64>,
    /// Price of a million prompt tokens written to the provider's prompt cache (Anthropic
    /// charges 1.25 times the prompt price for its 5-minute cache) [default: the prompt price].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_cache_write_per_mtok: Option<f64>,
    /// Prices of a million prompt and completion tokens sent through the batch API
    /// (`batch = true`; OpenAI and Anthropic charge half) [default: the ordinary prices].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_batch_prompt_per_mtok: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_batch_completion_per_mtok: Option<f64>,
    /// Send this role's requests through the provider's batch API (OpenAI's `/v1/batches`,
    /// Anthropic's Message Batches) instead of one call each. Left out of the manifest while
    /// false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub batch: bool,
    /// Seconds before the first look at a submitted batch; the wait doubles up to 16 times it.
    #[serde(
        default = "default_batch_poll_s",
        skip_serializing_if = "is_default_batch_poll"
    )]
    pub batch_poll_s: f64,
}

/// The `[embeddings]` table of a run config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbeddingsConfig {
    pub backend: EmbedBackendKind,
    /// Required for `openai`; for `embedded` the model names itself.
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub base_urls: Vec<String>,
    #[serde(default)]
    pub api_key_env: Option<String>,
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    #[serde(default = "default_embed_timeout_s")]
    pub timeout_s: f64,
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,
    #[serde(default = "default_backoff_s")]
    pub backoff_s: f64,
    #[serde(default = "default_max_backoff_s")]
    pub max_backoff_s: f64,
    /// Texts per request to a server; for the embedded model, texts computed together (a call
    /// gives it many such batches, spread over its threads).
    #[serde(default = "default_batch_size")]
    pub batch_size: usize,
    #[serde(default = "default_cache")]
    pub cache: CacheSetting,
}

fn default_concurrency() -> usize {
    4
}
fn default_chat_timeout_s() -> f64 {
    120.0
}
fn default_embed_timeout_s() -> f64 {
    60.0
}
fn default_max_attempts() -> u32 {
    5
}
fn default_backoff_s() -> f64 {
    1.0
}
fn default_max_backoff_s() -> f64 {
    60.0
}
fn default_true() -> bool {
    true
}
fn default_batch_size() -> usize {
    32
}
fn default_batch_poll_s() -> f64 {
    15.0
}
fn is_default_batch_poll(value: &f64) -> bool {
    *value == default_batch_poll_s()
}
fn default_cache() -> CacheSetting {
    CacheSetting::Path(PathBuf::from("llm-cache.sqlite"))
}

#[derive(Deserialize)]
struct LlmFile {
    llm: Option<LlmConfig>,
}

#[derive(Deserialize)]
struct EmbeddingsFile {
    embeddings: Option<EmbeddingsConfig>,
}

impl LlmConfig {
    /// A config for `backend` and `model` with every other field at its default.
    pub fn new(backend: ChatBackendKind, model: &str) -> LlmConfig {
        LlmConfig {
            backend,
            model: model.to_string(),
            base_urls: Vec::new(),
            api_key_env: None,
            concurrency: default_concurrency(),
            timeout_s: default_chat_timeout_s(),
            max_attempts: default_max_attempts(),
            backoff_s: default_backoff_s(),
            max_backoff_s: default_max_backoff_s(),
            structured_output: true,
            cache: default_cache(),
            price_prompt_per_mtok: None,
            price_completion_per_mtok: None,
            price_cached_prompt_per_mtok: None,
            price_cache_write_per_mtok: None,
            price_batch_prompt_per_mtok: None,
            price_batch_completion_per_mtok: None,
            batch: false,
            batch_poll_s: default_batch_poll_s(),
        }
    }

    /// Reads and checks the `[llm]` table of a run config; `None` when the file has none.
    pub fn from_toml_str(text: &str, source_name: &str) -> Result<Option<LlmConfig>, ConfigError> {
        let file: LlmFile =
            toml::from_str(text).map_err(|e| toml_error(&e, text, source_name, "llm"))?;
        if let Some(config) = &file.llm {
            config.validate(source_name)?;
        }
        Ok(file.llm)
    }

    /// Checks values that TOML types cannot: non-empty model and endpoints for remote
    /// backends, URLs, positive limits, an environment variable's name (not a key).
    pub fn validate(&self, source_name: &str) -> Result<(), ConfigError> {
        for (field, price) in [
            ("price_prompt_per_mtok", self.price_prompt_per_mtok),
            ("price_completion_per_mtok", self.price_completion_per_mtok),
            (
                "price_cached_prompt_per_mtok",
                self.price_cached_prompt_per_mtok,
            ),
            (
                "price_cache_write_per_mtok",
                self.price_cache_write_per_mtok,
            ),
            (
                "price_batch_prompt_per_mtok",
                self.price_batch_prompt_per_mtok,
            ),
            (
                "price_batch_completion_per_mtok",
                self.price_batch_completion_per_mtok,
            ),
        ] {
            if price.is_some_and(|p| !(p >= 0.0 && p.is_finite())) {
                return Err(ConfigError::new(
                    source_name,
                    format!("llm.{field}"),
                    "must be a non-negative number",
                ));
            }
        }
        let remote = self.backend != ChatBackendKind::Embedded;
        if self.batch && !remote {
            return Err(ConfigError::new(
                source_name,
                "llm.batch",
                "the embedded model has no batch API; batch = true needs an openai or anthropic \
backend",
            ));
        }
        if self.batch && self.cache == CacheSetting::Off {
            return Err(ConfigError::new(
                source_name,
                "llm.batch",
                "batch results go to the response cache: batch = true needs cache on",
            ));
        }
        if !(self.batch_poll_s > 0.0 && self.batch_poll_s.is_finite()) {
            return Err(ConfigError::new(
                source_name,
                "llm.batch_poll_s",
                "must be a positive number of seconds",
            ));
        }
        let common = Common {
            table: "llm",
            remote,
            model: &self.model,
            base_urls: &self.base_urls,
            api_key_env: self.api_key_env.as_deref(),
            concurrency: self.concurrency,
            timeout_s: self.timeout_s,
            max_attempts: self.max_attempts,
            backoff_s: self.backoff_s,
            max_backoff_s: self.max_backoff_s,
        };
        common.validate(source_name)
    }

    /// The client settings, with a relative cache path resolved against `run_dir`.
    pub fn settings(&self, run_dir: &Path) -> ClientSettings {
        ClientSettings::from_limits(
            self.concurrency,
            self.timeout_s,
            self.max_attempts,
            self.backoff_s,
            self.max_backoff_s,
            self.cache.resolve(run_dir),
        )
    }

    /// The API key from the environment variable named by `api_key_env`.
    pub fn api_key(&self) -> Result<Option<String>, ConfigError> {
        api_key("llm", self.api_key_env.as_deref())
    }

    /// The prices of a million prompt and completion tokens, `None` where unset: through the
    /// batch API when `batched` (its prices where set, else the ordinary ones), else the
    /// ordinary prices.
    pub fn prices(&self, batched: bool) -> (Option<f64>, Option<f64>) {
        if batched {
            (
                self.price_batch_prompt_per_mtok
                    .or(self.price_prompt_per_mtok),
                self.price_batch_completion_per_mtok
                    .or(self.price_completion_per_mtok),
            )
        } else {
            (self.price_prompt_per_mtok, self.price_completion_per_mtok)
        }
    }

    /// What the calls of `usage` cost at the configured prices (the batch prices when
    /// `batched`); `None` when no price is set. Cache hits cost nothing (their tokens are not in
    /// the usage); prompt tokens read from the provider's prompt cache cost
    /// `price_cached_prompt_per_mtok`, those written to it `price_cache_write_per_mtok` (each by
    /// default the prompt price).
    pub fn cost(&self, usage: &crate::UsageSummary, batched: bool) -> Option<f64> {
        let (prompt_price, completion_price) = self.prices(batched);
        if prompt_price.is_none() && completion_price.is_none() {
            return None;
        }
        let price = prompt_price.unwrap_or(0.0);
        let cached = usage.cached_prompt_tokens.min(usage.prompt_tokens);
        let written = usage
            .cache_write_prompt_tokens
            .min(usage.prompt_tokens - cached);
        let prompt = price * (usage.prompt_tokens - cached - written) as f64
            + self.price_cached_prompt_per_mtok.unwrap_or(price) * cached as f64
            + self.price_cache_write_per_mtok.unwrap_or(price) * written as f64;
        let completion = completion_price.unwrap_or(0.0) * usage.completion_tokens as f64;
        Some((prompt + completion) / 1e6)
    }
}

impl EmbeddingsConfig {
    /// A config for `backend` and `model` with every other field at its default.
    pub fn new(backend: EmbedBackendKind, model: &str) -> EmbeddingsConfig {
        EmbeddingsConfig {
            backend,
            model: model.to_string(),
            base_urls: Vec::new(),
            api_key_env: None,
            concurrency: default_concurrency(),
            timeout_s: default_embed_timeout_s(),
            max_attempts: default_max_attempts(),
            backoff_s: default_backoff_s(),
            max_backoff_s: default_max_backoff_s(),
            batch_size: default_batch_size(),
            cache: default_cache(),
        }
    }

    /// Reads and checks the `[embeddings]` table of a run config; `None` when the file has none.
    pub fn from_toml_str(
        text: &str,
        source_name: &str,
    ) -> Result<Option<EmbeddingsConfig>, ConfigError> {
        let file: EmbeddingsFile =
            toml::from_str(text).map_err(|e| toml_error(&e, text, source_name, "embeddings"))?;
        if let Some(config) = &file.embeddings {
            config.validate(source_name)?;
        }
        Ok(file.embeddings)
    }

    pub fn validate(&self, source_name: &str) -> Result<(), ConfigError> {
        let common = Common {
            table: "embeddings",
            remote: self.backend != EmbedBackendKind::Embedded,
            model: &self.model,
            base_urls: &self.base_urls,
            api_key_env: self.api_key_env.as_deref(),
            concurrency: self.concurrency,
            timeout_s: self.timeout_s,
            max_attempts: self.max_attempts,
            backoff_s: self.backoff_s,
            max_backoff_s: self.max_backoff_s,
        };
        common.validate(source_name)?;
        if self.batch_size == 0 {
            return Err(ConfigError::new(
                source_name,
                "embeddings.batch_size",
                "must be at least 1",
            ));
        }
        Ok(())
    }

    /// The client settings, with a relative cache path resolved against `run_dir`.
    pub fn settings(&self, run_dir: &Path) -> ClientSettings {
        ClientSettings::from_limits(
            self.concurrency,
            self.timeout_s,
            self.max_attempts,
            self.backoff_s,
            self.max_backoff_s,
            self.cache.resolve(run_dir),
        )
    }

    /// The API key from the environment variable named by `api_key_env`.
    pub fn api_key(&self) -> Result<Option<String>, ConfigError> {
        api_key("embeddings", self.api_key_env.as_deref())
    }
}

/// The fields both tables share, checked alike.
struct Common<'a> {
    table: &'static str,
    remote: bool,
    model: &'a str,
    base_urls: &'a [String],
    api_key_env: Option<&'a str>,
    concurrency: usize,
    timeout_s: f64,
    max_attempts: u32,
    backoff_s: f64,
    max_backoff_s: f64,
}

impl Common<'_> {
    fn validate(&self, source_name: &str) -> Result<(), ConfigError> {
        let fail = |field: &str, message: String| {
            Err(ConfigError::new(
                source_name,
                format!("{}.{field}", self.table),
                message,
            ))
        };
        if self.remote {
            if self.model.trim().is_empty() {
                return fail("model", "is required for this backend".into());
            }
            if self.base_urls.is_empty() {
                return fail(
                    "base_urls",
                    "needs at least one endpoint, e.g. [\"http://127.0.0.1:8080/v1\"]".into(),
                );
            }
            for url in self.base_urls {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return fail("base_urls", format!("{url:?} is not an http(s) URL"));
                }
            }
        } else if !self.base_urls.is_empty() {
            return fail(
                "base_urls",
                "the embedded backend runs in-process and takes no endpoints".into(),
            );
        }
        if let Some(name) = self.api_key_env {
            let looks_like_a_name =
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !looks_like_a_name {
                return fail(
                    "api_key_env",
                    "names the environment variable that holds the key (e.g. \"OPENAI_API_KEY\"); \
                     never put the key itself in the config"
                        .into(),
                );
            }
        }
        if self.concurrency == 0 {
            return fail("concurrency", "must be at least 1".into());
        }
        if !(self.timeout_s.is_finite() && self.timeout_s > 0.0) {
            return fail("timeout_s", "must be a positive number of seconds".into());
        }
        if self.max_attempts == 0 {
            return fail("max_attempts", "must be at least 1".into());
        }
        if !(self.backoff_s.is_finite() && self.backoff_s >= 0.0) {
            return fail("backoff_s", "must be zero or more seconds".into());
        }
        if !(self.max_backoff_s.is_finite() && self.max_backoff_s >= self.backoff_s) {
            return fail("max_backoff_s", "must be at least backoff_s".into());
        }
        Ok(())
    }
}

impl ClientSettings {
    /// The settings of a config table's limits: `concurrency` calls in flight, `timeout_s` an
    /// attempt, `max_attempts` with backoff from `backoff_s` doubling to `max_backoff_s`, the
    /// cache file (if any); the jitter seeded from the clock.
    pub fn from_limits(
        concurrency: usize,
        timeout_s: f64,
        max_attempts: u32,
        backoff_s: f64,
        max_backoff_s: f64,
        cache: Option<PathBuf>,
    ) -> ClientSettings {
        ClientSettings {
            concurrency,
            timeout: Duration::from_secs_f64(timeout_s),
            retry: RetryPolicy {
                max_attempts,
                base_delay: Duration::from_secs_f64(backoff_s),
                max_delay: Duration::from_secs_f64(max_backoff_s),
                ..RetryPolicy::default()
            },
            cache,
            jitter_seed: None,
        }
    }
}

fn api_key(table: &str, name: Option<&str>) -> Result<Option<String>, ConfigError> {
    let Some(name) = name else {
        return Ok(None);
    };
    match std::env::var(name) {
        Ok(key) if !key.trim().is_empty() => {
            // From here on, no text the process lets out holds it.
            hierarag_fs::secrets::register(&key);
            Ok(Some(key.trim().to_string()))
        }
        _ => Err(ConfigError::new(
            &format!("[{table}]"),
            format!("{table}.api_key_env"),
            format!("the environment variable {name} is not set (it should hold the API key)"),
        )),
    }
}

/// A TOML error inside `table`, with the line and column it starts at.
fn toml_error(error: &toml::de::Error, text: &str, source_name: &str, table: &str) -> ConfigError {
    let place = error.span().map(|span| {
        let before = &text[..span.start.min(text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        format!(" (line {line}, column {column})")
    });
    ConfigError::new(
        source_name,
        format!("{table}{}", place.unwrap_or_default()),
        error.message().trim_end(),
    )
}

impl fmt::Display for ChatBackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ChatBackendKind::OpenAi => "openai",
            ChatBackendKind::Anthropic => "anthropic",
            ChatBackendKind::Embedded => "embedded",
        })
    }
}

impl fmt::Display for EmbedBackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EmbedBackendKind::OpenAi => "openai",
            EmbedBackendKind::Embedded => "embedded",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: &str = r#"
[design]
kind = "rq1"

[llm]
backend = "openai"
model = "gpt-4o-mini"
base_urls = ["http://127.0.0.1:8080/v1", "http://127.0.0.1:8081/v1"]
api_key_env = "OPENAI_API_KEY"
concurrency = 8
timeout_s = 30
max_attempts = 3
structured_output = false
cache = "off"

[embeddings]
backend = "embedded"
batch_size = 64
"#;

    #[test]
    fn reads_both_tables_and_ignores_the_others() {
        let llm = LlmConfig::from_toml_str(FULL, "run.toml").unwrap().unwrap();
        assert_eq!(llm.backend, ChatBackendKind::OpenAi);
        assert_eq!(llm.base_urls.len(), 2);
        assert_eq!(llm.cache, CacheSetting::Off);
        assert!(!llm.structured_output);
        let settings = llm.settings(Path::new("/run"));
        assert_eq!(settings.concurrency, 8);
        assert_eq!(settings.timeout, Duration::from_secs(30));
        assert_eq!(settings.retry.max_attempts, 3);
        assert_eq!(settings.cache, None);

        let embeddings = EmbeddingsConfig::from_toml_str(FULL, "run.toml")
            .unwrap()
            .unwrap();
        assert_eq!(embeddings.backend, EmbedBackendKind::Embedded);
        assert_eq!(embeddings.batch_size, 64);
        assert_eq!(
            embeddings.settings(Path::new("/run")).cache,
            Some(PathBuf::from("/run/llm-cache.sqlite"))
        );
    }

    #[test]
    fn a_file_without_the_table_gives_none() {
        assert_eq!(
            LlmConfig::from_toml_str("[design]\nkind = \"rq1\"\n", "r.toml"),
            Ok(None)
        );
    }

    #[test]
    fn defaults_fill_what_is_left_out() {
        let config = LlmConfig::from_toml_str("[llm]\nbackend = \"embedded\"\n", "r.toml")
            .unwrap()
            .unwrap();
        assert_eq!(config, LlmConfig::new(ChatBackendKind::Embedded, ""));
        let absolute = CacheSetting::from("/tmp/c.sqlite".to_string());
        assert_eq!(
            absolute.resolve(Path::new("/run")),
            Some(PathBuf::from("/tmp/c.sqlite"))
        );
    }

    #[test]
    fn bad_tables_name_the_file_and_the_field() {
        let cases = [
            (
                "[llm]\nbackend = \"openai\"\nconcurency = 3\n",
                "run.toml: llm (line 3, column 1): unknown field `concurency`",
            ),
            (
                "[llm]\nbackend = \"gpt\"\n",
                "run.toml: llm (line 2, column 11): unknown variant `gpt`",
            ),
            (
                "[llm]\nbackend = \"openai\"\nbase_urls = [\"http://x/v1\"]\n",
                "run.toml: llm.model: is required",
            ),
            (
                "[llm]\nbackend = \"openai\"\nmodel = \"m\"\n",
                "run.toml: llm.base_urls: needs at least one endpoint",
            ),
            (
                "[llm]\nbackend = \"anthropic\"\nmodel = \"m\"\nbase_urls = [\"api.anthropic.com\"]\n",
                "run.toml: llm.base_urls: \"api.anthropic.com\" is not an http(s) URL",
            ),
            (
                "[llm]\nbackend = \"embedded\"\nbase_urls = [\"http://x\"]\n",
                "run.toml: llm.base_urls: the embedded backend",
            ),
            (
                "[llm]\nbackend = \"embedded\"\napi_key_env = \"sk-abc123\"\n",
                "run.toml: llm.api_key_env: names the environment variable",
            ),
            (
                "[llm]\nbackend = \"embedded\"\nconcurrency = 0\n",
                "run.toml: llm.concurrency: must be at least 1",
            ),
            (
                "[llm]\nbackend = \"embedded\"\ntimeout_s = 0\n",
                "run.toml: llm.timeout_s: must be a positive",
            ),
            (
                "[llm]\nbackend = \"embedded\"\nmax_attempts = 0\n",
                "run.toml: llm.max_attempts: must be at least 1",
            ),
            (
                "[llm]\nbackend = \"embedded\"\nbackoff_s = 5\nmax_backoff_s = 1\n",
                "run.toml: llm.max_backoff_s: must be at least backoff_s",
            ),
        ];
        for (text, expected) in cases {
            let error = LlmConfig::from_toml_str(text, "run.toml")
                .unwrap_err()
                .to_string();
            assert!(
                error.starts_with(expected),
                "{text:?}\n  got: {error}\n want: {expected}"
            );
        }
        let error = EmbeddingsConfig::from_toml_str(
            "[embeddings]\nbackend = \"embedded\"\nbatch_size = 0\n",
            "run.toml",
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "run.toml: embeddings.batch_size: must be at least 1"
        );
        let error =
            EmbeddingsConfig::from_toml_str("[embeddings]\nbackend = \"anthropic\"\n", "run.toml")
                .unwrap_err();
        assert!(
            error.to_string().contains("unknown variant `anthropic`"),
            "{error}"
        );
    }

    #[test]
    fn a_missing_key_variable_is_an_error_naming_it() {
        let mut config = LlmConfig::new(ChatBackendKind::OpenAi, "m");
        config.api_key_env = Some("HIERARAG_TEST_SURELY_UNSET_KEY".into());
        let error = config.api_key().unwrap_err().to_string();
        assert_eq!(
            error,
            "[llm]: llm.api_key_env: the environment variable HIERARAG_TEST_SURELY_UNSET_KEY is \
             not set (it should hold the API key)"
        );
        config.api_key_env = None;
        assert_eq!(config.api_key(), Ok(None));
    }
}
