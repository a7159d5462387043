//! The item analysis of a run's systems (`hierarag items`): each system's scores joined with
//! the benchmark, which questions carry the signal and the core set (hierarag-items),
//! `items.json`, and the core set as a benchmark file (`core.jsonl`, the benchmark's own lines).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use hierarag_analysis::Metric;
use hierarag_items::{CoreSettings, ItemsReport, Question, Settings, SystemScores};
use hierarag_pipeline::write_atomic;
use serde::Deserialize;

use crate::layout::{RunDir, SystemDir};

/// The item analysis of `systems` on the benchmark of `run`.
pub fn items_of_systems(
    run: &RunDir,
    systems: &[(String, SystemDir)],
    metric: Metric,
    settings: &Settings,
    core: &CoreSettings,
) -> anyhow::Result<ItemsReport> {
    if systems.is_empty() {
        bail!("{}: no system has scores to analyse", run.root().display());
    }
    let benchmark = crate::analyze::read_benchmark(&run.benchmark())?;
    let mut categories = HashMap::new();
    let mut scored = Vec::with_capacity(systems.len());
    for (name, system) in systems {
        let (observations, _, _) = crate::analyze::join_scored(&benchmark, &system.scores(), None)?;
        let mut scores = HashMap::with_capacity(observations.len());
        for observation in observations {
            if let Some(value) = metric.value(&observation.scores) {
                scores.insert(observation.id.clone(), value);
                categories
                    .entry(observation.id)
                    .or_insert(observation.categories);
            }
        }
        scored.push(SystemScores {
            name: name.clone(),
            scores,
        });
    }
    let questions: Vec<Question> = benchmark
        .iter()
        .filter_map(|entry| {
            categories.remove(&entry.id).map(|categories| Question {
                id: entry.id.clone(),
                categories,
            })
        })
        .collect();
    Ok(ItemsReport {
        metric: metric.as_str().to_owned(),
        items: hierarag_items::items(&questions, &scored, settings),
        core: hierarag_items::core_set(&questions, &scored, core),
    })
}

/// Writes `items.json` into `dir`, and the core set's lines of `benchmark` into `core.jsonl`
/// beside it; returns both paths.
pub fn write(
    report: &ItemsReport,
    benchmark: &Path,
    dir: &Path,
) -> anyhow::Result<(PathBuf, PathBuf)> {
    let out = RunDir::new(dir);
    crate::json::write(report, &out.items())?;
    let text = std::fs::read_to_string(benchmark)
        .with_context(|| format!("{}: cannot read", benchmark.display()))?;
    let wanted: HashSet<&str> = report.core.ids.iter().map(String::as_str).collect();
    let mut core = String::new();
    for (number, line) in text.lines().enumerate() {
        #[derive(Deserialize)]
        struct Id {
            id: String,
        }
        if line.trim().is_empty() {
            continue;
        }
        let record: Id = serde_json::from_str(line)
            .with_context(|| format!("{}:{}: no question id", benchmark.display(), number + 1))?;
        if wanted.contains(record.id.as_str()) {
            core.push_str(line);
            core.push('\n');
        }
    }
    write_atomic(&out.core_benchmark(), core.as_bytes())?;
    Ok((out.items(), out.core_benchmark()))
}

/// The run's `items.json`, when it has one.
pub fn load(run: &RunDir) -> anyhow::Result<Option<ItemsReport>> {
    crate::json::load(&run.items(), "an items file", "hierarag items")
}
