//! `manifest.json` at the root of a run directory: what ran, with what, and what it cost.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use hierarag_llm::UsageSummary;
use serde::{Deserialize, Serialize};

use hierarag_pipeline::{Failure, PipelineError, write_atomic};

use crate::config::RunConfig;
use crate::layout::RunDir;

/// A run's manifest (docs/design.md, "Pipeline and run directory"): the resolved config, the tool version, seeds, model
/// identifiers, input and output hashes, per-stage timings and LLM usage.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub tool: String,
    pub version: String,
    /// The config the run was started with, resolved (defaults filled in), as JSON.
    #[serde(default)]
    pub config: serde_json::Value,
    #[serde(default)]
    pub seed: u64,
    /// Stage name → what its last completed pass did, in pipeline order of first run.
    #[serde(default)]
    pub stages: BTreeMap<String, StageRecord>,
    /// What the run was estimated to cost when it started (`hierarag run --dry-run` prints
    /// the same), to set beside what the stages' `usage` spent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate: Option<hierarag_config::estimate::RunEstimate>,
    /// What every pass of every stage in this directory spent on chat calls, added up (a
    /// stage's `usage` is its last pass only): what `[budget]` counts as spent already.
    #[serde(default, skip_serializing_if = "Spent::is_zero")]
    pub spent: Spent,
}

/// Chat calls' cost and tokens, added up over passes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spent {
    /// In the currency of the configured prices (0 where none is set).
    pub cost: f64,
    /// Prompt and completion tokens.
    pub tokens: u64,
}

impl Spent {
    fn is_zero(&self) -> bool {
        *self == Spent::default()
    }
}

/// One stage's last pass.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StageRecord {
    /// Seconds since the Unix epoch when the pass started and ended.
    pub started_unix_s: u64,
    pub finished_unix_s: u64,
    /// Wall time of the pass (a resumed pass counts only itself).
    pub seconds: f64,
    /// Input files → sha256.
    #[serde(default)]
    pub inputs: BTreeMap<String, String>,
    /// Output files → sha256 and record count.
    #[serde(default)]
    pub outputs: BTreeMap<String, OutputFile>,
    /// Items the stage had to do, found already done, did now, and lost.
    pub items: usize,
    pub resumed: usize,
    pub written: usize,
    pub failed: usize,
    /// The failed items with their reasons (also in `<stage>.failures.jsonl`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<Failure>,
    /// Why the pass stopped early (an endpoint refused the client), when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// One entry per LLM or embedding client the stage used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub usage: Vec<StageUsage>,
}

/// An output file's fingerprint.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputFile {
    pub sha256: String,
    pub records: usize,
}

/// A client's usage in one stage, with its role and cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageUsage {
    /// `generator`, `filter`, `answerer`, `embeddings`.
    pub role: String,
    #[serde(flatten)]
    pub summary: UsageSummary,
    /// In the currency of the configured prices; absent when no price is configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

/// Seconds since the Unix epoch.
pub fn now_unix_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Manifest {
    /// Reads `manifest.json` from a run directory; a missing one is a fresh manifest.
    pub fn load(run: &RunDir) -> Result<Manifest, PipelineError> {
        let path = run.manifest();
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| PipelineError::Record {
                path,
                line: e.line(),
                message: e.to_string(),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Manifest {
                tool: "hierarag".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                ..Manifest::default()
            }),
            Err(source) => Err(PipelineError::Io { path, source }),
        }
    }

    /// Writes the manifest atomically.
    pub fn save(&self, run: &RunDir) -> Result<(), PipelineError> {
        let mut bytes = serde_json::to_vec_pretty(self).expect("a manifest serialises");
        bytes.push(b'\n');
        write_atomic(&run.manifest(), &bytes)
    }

    /// Loads, changes and saves the manifest of `run_dir` in one step.
    pub fn update(
        run: &RunDir,
        change: impl FnOnce(&mut Manifest),
    ) -> Result<Manifest, PipelineError> {
        let mut manifest = Manifest::load(run)?;
        manifest.tool = "hierarag".into();
        manifest.version = env!("CARGO_PKG_VERSION").into();
        change(&mut manifest);
        manifest.save(run)?;
        Ok(manifest)
    }
}

/// The settings a run's answers are scored with, as its manifest recorded them
/// (`[embeddings]`, `[evaluate]`), the defaults for what it does not record: the config of a
/// system added to a finished run (Python's `answer_with`), whose config file may be gone.
pub fn scoring_config_of_run(run: &RunDir) -> anyhow::Result<RunConfig> {
    let mut config = crate::config::model_config(None)?;
    let manifest = Manifest::load(run)?;
    let at = |table: &str, error: serde_json::Error| {
        anyhow::anyhow!(
            "{}: config.{table} is not a [{table}] table: {error}",
            run.manifest().display()
        )
    };
    if let Some(embeddings) = manifest.config.get("embeddings") {
        config.embeddings =
            serde_json::from_value(embeddings.clone()).map_err(|e| at("embeddings", e))?;
    }
    if let Some(evaluate) = manifest.config.get("evaluate") {
        config.evaluate =
            serde_json::from_value(evaluate.clone()).map_err(|e| at("evaluate", e))?;
    }
    Ok(config)
}
