//! `hierarag tag`: every question of a run labelled on every dimension (tags.jsonl).

use std::process::ExitCode;

use hierarag_run::{Reporter, RunDir};

use crate::cli::TagArgs;
use crate::printer::{Printer, exit_for};
use crate::settings::tag_config;

pub fn run(args: &TagArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let run = RunDir::new(&args.dir);
    // One writer per run directory.
    let _lock = run.lock_existing()?;
    let config = tag_config(args, &run, &printer)?;
    let taxonomy = hierarag_run::taxonomy::of_run(args.taxonomy.as_deref(), Some(&run))?;
    let outcome = hierarag_run::tag::tag(&config, &run, &run.benchmark(), &taxonomy, &printer)?;
    printer.note(&format!("wrote {}", run.tags().display()));
    Ok(exit_for(outcome.ok()))
}
