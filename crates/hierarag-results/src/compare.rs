//! The comparison of a run's systems (or of several runs on one benchmark): each system's
//! scores joined with the benchmark, compared by the analysis crate, `comparison.json`
//! written.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use hierarag_analysis::{Comparison, Settings, SystemScores};
use hierarag_pipeline::{file_sha256, has_records};
use hierarag_taxonomy::Taxonomy;

use crate::config::MAIN_SYSTEM;
use crate::layout::{RunDir, SystemDir};

/// The file a comparison is written to, in the (first) run directory.
pub const COMPARISON_FILE: &str = "comparison.json";

/// The systems to compare: every system of every run (named `<run>/<system>` when there are
/// several runs), or those of `wanted` in its order.
pub fn systems_of_runs(
    runs: &[RunDir],
    wanted: Option<&[String]>,
) -> anyhow::Result<Vec<(String, SystemDir)>> {
    let Some(first) = runs.first() else {
        bail!("give a run directory to compare");
    };
    // One benchmark: the same bytes in every run.
    let sha = |run: &RunDir| -> anyhow::Result<String> {
        file_sha256(&run.benchmark())?.with_context(|| {
            format!(
                "{}: not found (it is written by `hierarag generate`)",
                run.benchmark().display()
            )
        })
    };
    let expected = sha(first)?;
    for run in &runs[1..] {
        let actual = sha(run)?;
        if actual != expected {
            bail!(
                "{} and {} are different benchmarks (sha256 {} and {}): systems are compared \
on the same questions, so the runs must share one benchmark.jsonl",
                first.benchmark().display(),
                run.benchmark().display(),
                &expected[..12],
                &actual[..12]
            );
        }
    }
    let mut all = Vec::new();
    for run in runs {
        let label = run.root().file_name().map_or_else(
            || run.root().display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        for (name, dir) in crate::systems::systems_of_run(run)? {
            let full = match (runs.len(), name.as_str()) {
                (1, _) => name,
                (_, MAIN_SYSTEM) => label.clone(),
                _ => format!("{label}/{name}"),
            };
            if all.iter().any(|(n, _): &(String, SystemDir)| *n == full) {
                bail!(
                    "two systems are both called {full:?}: compare runs whose directories have \
different names"
                );
            }
            all.push((full, dir));
        }
    }
    let Some(wanted) = wanted else {
        return Ok(all);
    };
    let names: Vec<String> = all.iter().map(|(n, _)| n.clone()).collect();
    wanted
        .iter()
        .map(|name| {
            all.iter()
                .find(|(n, _)| n == name)
                .cloned()
                .with_context(|| {
                    format!(
                        "--systems: no system named {name:?}; the systems are {}",
                        names.join(", ")
                    )
                })
        })
        .collect()
}

/// Systems by name, with their folders.
pub type NamedSystems = Vec<(String, SystemDir)>;

/// `systems` split into those with scores to compare and the names of those without (no
/// `scores.jsonl`, or an empty one: never answered, or every answer failed), which a
/// comparison leaves out.
pub fn with_scores(systems: NamedSystems) -> (NamedSystems, Vec<String>) {
    let mut scored = Vec::new();
    let mut without = Vec::new();
    for (name, dir) in systems {
        if has_records(&dir.scores()) {
            scored.push((name, dir));
        } else {
            without.push(name);
        }
    }
    (scored, without)
}

/// Compares `systems` on the benchmark of `run` (the first run); fills in the question texts
/// of the questions no system answers.
pub fn compare_systems(
    run: &RunDir,
    systems: &[(String, SystemDir)],
    taxonomy: &Taxonomy,
    settings: &Settings,
    threshold: f64,
) -> anyhow::Result<Comparison> {
    if systems.len() < 2 {
        bail!(
            "a comparison needs two or more systems; {} has {}",
            run.root().display(),
            systems
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let benchmark = crate::analyze::read_benchmark(&run.benchmark())?;
    let mut scored = Vec::with_capacity(systems.len());
    for (name, system) in systems {
        if !system.scores().exists() {
            bail!(
                "system {name:?} has no scores yet ({} not found): run `hierarag answer` and \
`hierarag evaluate` for it first",
                system.scores().display()
            );
        }
        let answers = Some(system.answers()).filter(|p| p.exists());
        let (observations, _, _) =
            crate::analyze::join_scored(&benchmark, &system.scores(), answers.as_deref())?;
        scored.push(SystemScores {
            name: name.clone(),
            observations,
        });
    }
    let mut comparison = hierarag_analysis::compare(&scored, taxonomy, settings, threshold);
    let questions: std::collections::HashMap<&str, &str> = benchmark
        .iter()
        .map(|r| (r.id.as_str(), r.question.as_str()))
        .collect();
    for item in &mut comparison.unanswered {
        item.question = questions.get(item.id.as_str()).map(|q| (*q).to_owned());
    }
    let unscored = benchmark.len() - comparison.common;
    if unscored > 0 {
        comparison.notes.insert(
            0,
            format!(
                "{unscored} of {} benchmark questions are not scored for every system and are \
left out of the comparison",
                benchmark.len()
            ),
        );
    }
    Ok(comparison)
}

/// Writes `comparison.json` atomically into `dir`; returns its path.
pub fn write(comparison: &Comparison, dir: &Path) -> anyhow::Result<PathBuf> {
    let path = dir.join(COMPARISON_FILE);
    crate::json::write(comparison, &path)?;
    Ok(path)
}

/// The comparison of a run directory, if one was written.
pub fn load(dir: &Path) -> anyhow::Result<Option<Comparison>> {
    crate::json::load(
        &dir.join(COMPARISON_FILE),
        "a comparison",
        "hierarag compare",
    )
}
