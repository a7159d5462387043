//! The systems of a run (`[[system]]`): where each one's files go. The replies of command,
//! function and HTTP systems made answer records, and answers read from a file, are
//! `hierarag-interchange`'s ([`hierarag_interchange::replies`] and
//! [`hierarag_interchange::answers`], re-exported here).

use std::path::PathBuf;

use anyhow::{Context, bail};
use serde_json::Value;

pub use hierarag_interchange::answers::{
    AnswerRow, BM25_MIN_SHARED_WORDS, FoundBy, Matched, answer_record, find_documents,
    find_row_documents, match_rows, read_rows,
};
pub use hierarag_interchange::replies::{
    AnswerFunction, CommandAnswers, FunctionAnswers, HttpAnswers,
};

use crate::config::{MAIN_SYSTEM, RunConfig};
use crate::layout::{RunDir, SystemDir};
use crate::manifest::Manifest;

/// Where a system of `config` keeps its files: the top of the run directory for the implicit
/// system of a config without `[[system]]`, `systems/<name>/` otherwise.
pub fn dir_of(run: &RunDir, config: &RunConfig, name: &str) -> SystemDir {
    if config.systems.is_empty() {
        run.main_system()
    } else {
        run.system(name)
    }
}

/// The systems of an existing run, in its config's order, with their folders: those of the
/// config recorded in its manifest, or the implicit one.
pub fn systems_of_run(run: &RunDir) -> anyhow::Result<Vec<(String, SystemDir)>> {
    let names: Vec<String> = if run.manifest().exists() {
        let manifest = Manifest::load(run)?;
        manifest
            .config
            .get("systems")
            .and_then(Value::as_array)
            .map(|systems| {
                systems
                    .iter()
                    .filter_map(|s| s.get("name").and_then(Value::as_str).map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let mut systems: Vec<(String, SystemDir)> = if names.is_empty() {
        vec![(MAIN_SYSTEM.to_owned(), run.main_system())]
    } else {
        names
            .into_iter()
            .map(|name| {
                let dir = run.system(&name);
                (name, dir)
            })
            .collect()
    };
    // Systems added to the run after it was made (a Python function's answers, by
    // `answer_with`), each marked by `systems/<name>/system.json`, in name order.
    let mut added: Vec<String> = match std::fs::read_dir(run.root().join("systems")) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .filter(|entry| entry.path().join(ADDED_SYSTEM).is_file())
            .filter_map(|entry| entry.file_name().to_str().map(str::to_owned))
            .collect(),
        Err(_) => Vec::new(),
    };
    added.sort();
    for name in added {
        if !systems.iter().any(|(known, _)| *known == name) {
            let dir = run.system(&name);
            systems.push((name, dir));
        }
    }
    Ok(systems)
}

/// [`systems_of_run`], and the `[[system]]`s of `config` that the run's manifest does not list
/// (answered by `hierarag answer --config C` into a run that `hierarag run` did not make), in
/// the config's order; the implicit system is left out when it has no answers and the config
/// names systems.
pub fn systems_of_run_and_config(
    run: &RunDir,
    config: &RunConfig,
) -> anyhow::Result<Vec<(String, SystemDir)>> {
    let mut systems = systems_of_run(run)?;
    if !config.systems.is_empty() {
        systems.retain(|(_, dir)| dir.root() != run.root() || dir.answers().exists());
        for system in &config.systems {
            if !systems.iter().any(|(name, _)| *name == system.name) {
                systems.push((system.name.clone(), run.system(&system.name)));
            }
        }
    }
    Ok(systems)
}

/// Removes `systems/<name>/` of a system added to `run` after it was made (its marker,
/// answers, scores and failures); returns the folder removed. A system of the run's config is
/// refused (it would come back with the next `run`): it is taken out of the config instead.
pub fn remove_added(run: &RunDir, name: &str) -> anyhow::Result<PathBuf> {
    crate::config::check_system_name(name)?;
    let folder = run.system(name);
    if folder.root().join(ADDED_SYSTEM).is_file() {
        std::fs::remove_dir_all(folder.root())
            .with_context(|| format!("removing {}", folder.root().display()))?;
        return Ok(folder.root().to_path_buf());
    }
    let systems = systems_of_run(run)?;
    if systems.iter().any(|(known, _)| known == name) {
        bail!(
            "system {name:?} is one of the run config's [[system]] tables: take it out of the \
config (and rerun with --reconfigure) instead"
        );
    }
    let names: Vec<&str> = systems.iter().map(|(n, _)| n.as_str()).collect();
    bail!(
        "{}: no system {name:?} was added to the run; its systems: {}",
        run.root().display(),
        names.join(", ")
    )
}

/// The file that marks `systems/<name>/` as a system added to a run after it was made:
/// `{"name", "kind"}` (kind `python` for a function's answers).
pub const ADDED_SYSTEM: &str = "system.json";

/// The system `name` of a run (None: its first), or an error listing the run's systems.
pub fn system_of_run(run: &RunDir, name: Option<&str>) -> anyhow::Result<(String, SystemDir)> {
    let systems = systems_of_run(run)?;
    match name {
        None => Ok(systems.into_iter().next().expect("a run has a system")),
        Some(name) => {
            let names: Vec<String> = systems.iter().map(|(n, _)| n.clone()).collect();
            systems
                .into_iter()
                .find(|(n, _)| n == name)
                .with_context(|| {
                    format!(
                        "{}: no system named {name:?}; its systems: {}",
                        run.root().display(),
                        names.join(", ")
                    )
                })
        }
    }
}
