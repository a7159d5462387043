//! `hierarag judge`: every answer of a run graded by an LLM judge (judgements.jsonl, merged
//! into scores.jsonl), and with `--benchmark` every QA pair rated (benchmark.judge.jsonl).

use std::path::Path;
use std::process::ExitCode;

use anyhow::bail;
use hierarag_run::config::RunConfig;
use hierarag_run::{Reporter, RunDir, SystemDir};

use crate::cli::JudgeArgs;
use crate::printer::{Printer, exit_for};
use crate::settings::judge_config;

pub fn run(args: &JudgeArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let run = RunDir::new(&args.dir);
    // One writer per run directory.
    let _lock = run.lock_existing()?;
    let config = judge_config(args, &run, &printer)?;
    // (answers file, the folder its judgements and scores are in, the system's label)
    let mut todo: Vec<(std::path::PathBuf, SystemDir, Option<String>)> = Vec::new();
    if let Some(answers) = &args.answers {
        let parent = answers
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        todo.push((answers.clone(), SystemDir::at(parent), None));
    } else if !args.benchmark_only {
        let systems = hierarag_run::systems::systems_of_run_and_config(&run, &config)?;
        let named = systems.len() > 1 || systems.iter().any(|(_, dir)| dir.root() != run.root());
        if let Some(names) = &args.systems
            && let Some(unknown) = names.iter().find(|n| !systems.iter().any(|(s, _)| s == *n))
        {
            let known: Vec<&str> = systems.iter().map(|(n, _)| n.as_str()).collect();
            bail!(
                "--systems: the run has no system {unknown:?} (it has {})",
                known.join(", ")
            );
        }
        for (name, system) in systems {
            if args
                .systems
                .as_ref()
                .is_some_and(|names| !names.contains(&name))
            {
                continue;
            }
            if !system.answers().exists() {
                printer.warn(&format!(
                    "{name}: no answers yet ({}); nothing to grade",
                    system.answers().display()
                ));
                continue;
            }
            todo.push((system.answers(), system, named.then_some(name)));
        }
    }
    let mut ok = true;
    for (answers, system, label) in &todo {
        let (graded, stopped) = grade(&config, &run, answers, system, label.as_deref(), &printer)?;
        ok &= graded;
        if stopped {
            return Ok(exit_for(false));
        }
    }
    if args.benchmark || args.benchmark_only {
        let outcome =
            hierarag_run::judge::judge_benchmark(&config, &run, &run.benchmark(), &printer)?;
        printer.note(&format!("wrote {}", run.benchmark_judgements().display()));
        ok &= outcome.ok();
    }
    Ok(exit_for(ok))
}

/// Grades one answers file; whether every answer was graded, and whether an endpoint refused.
fn grade(
    config: &RunConfig,
    run: &RunDir,
    answers: &Path,
    system: &SystemDir,
    label: Option<&str>,
    printer: &Printer,
) -> anyhow::Result<(bool, bool)> {
    let outcome = hierarag_run::judge::judge_answers(
        config,
        run,
        &run.benchmark(),
        answers,
        system,
        label,
        printer,
    )?;
    printer.note(&format!("wrote {}", system.judgements().display()));
    Ok((outcome.ok(), outcome.stopped.is_some()))
}
