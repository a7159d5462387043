//! `hierarag report`: report.md and a self-contained report.html from a run directory.

use std::process::ExitCode;

use anyhow::Context;
use hierarag_analysis::Analysis;
use hierarag_run::{Reporter, RunDir};

use crate::cli::ReportArgs;
use crate::printer::Printer;

pub fn run(args: &ReportArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let run = RunDir::new(&args.dir);
    // One writer per run directory.
    let _lock = run.lock_existing()?;
    let path = run.analysis();
    let bytes = std::fs::read(&path).with_context(|| {
        format!(
            "{}: cannot read; run `hierarag analyze {}` first",
            path.display(),
            args.dir.display()
        )
    })?;
    let analysis: Analysis = serde_json::from_slice(&bytes)
        .with_context(|| format!("{}: not an analysis file", path.display()))?;
    let taxonomy = hierarag_run::taxonomy::of_run(args.taxonomy.as_deref(), Some(&run))?;
    let out = args.out.clone().unwrap_or_else(|| args.dir.clone());
    let (md, html) =
        hierarag_run::report::write(&run, &analysis, &taxonomy, args.title.as_deref(), &out)?;
    printer.note(&format!("wrote {} and {}", md.display(), html.display()));
    Ok(ExitCode::SUCCESS)
}
