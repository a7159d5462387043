//! `hierarag run CONFIG.toml`: the main job, then its summary on stdout.

use std::process::ExitCode;

use hierarag_run::chain::{self, RunOptions};
use hierarag_run::config::RunConfig;

use crate::cli::RunArgs;
use crate::printer::{EXIT_BAD_INPUT, Printer};
use crate::tables;

pub fn run(args: &RunArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let mut config = RunConfig::load(&args.config)?;
    if let Some(dir) = &args.dir {
        config.run.dir = dir.clone();
    }
    let options = RunOptions {
        config_path: args.config.clone(),
        reconfigure: args.reconfigure,
        check_endpoints: !args.no_check_endpoints,
    };
    let outcome = chain::run(&config, &options, &printer)?;
    if let Some(stage) = outcome.stopped_at {
        // The stage has said why it stopped.
        eprintln!(
            "run stopped at {stage}; not run: {} (what is done is kept)",
            chain::stages_after(stage, &config).join(", ")
        );
        return Ok(ExitCode::from(EXIT_BAD_INPUT));
    }
    tables::run_summary(&outcome)?;
    if let Some(analysis) = &outcome.analysis {
        tables::recommendations(analysis)?;
    }
    if let Some(html) = &outcome.report_html {
        use hierarag_run::Reporter;
        printer.note(&format!("report: {}", html.display()));
    }
    Ok(crate::printer::exit_for(outcome.ok()))
}
