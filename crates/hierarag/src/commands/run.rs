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
    if args.dry_run {
        let estimate = chain::estimate(&config, &args.config)?;
        crate::printer::printed(tables::estimate(&estimate))?;
        return Ok(ExitCode::SUCCESS);
    }
    let _lock = hierarag_run::RunDir::new(&config.run.dir).lock()?;
    let options = RunOptions {
        config_path: args.config.clone(),
        reconfigure: args.reconfigure,
        check_endpoints: !args.no_check_endpoints,
        export_batch: None,
    };
    let outcome = chain::run(&config, &options, &printer)?;
    if let Some(stage) = outcome.stopped_at
        && let Some(budget) = hierarag_run::models::budget_of(&config.run.dir)
        && let Some(reason) = budget.stopped()
    {
        let (cost, tokens) = budget.spent();
        let reason = reason.trim_start_matches("budget: ");
        let left = outcome
            .stages
            .iter()
            .rev()
            .find(|(name, _)| *name == stage)
            .map_or(0, |(_, o)| o.items.saturating_sub(o.resumed + o.written));
        crate::printer::tell(&format!(
            "run stopped at {stage} by its [budget]: {reason}. Spent in this directory so far: \
{cost:.4} and {tokens} tokens. Left to do: {left} item{} of {stage}, then {}. Every finished \
record is kept: rerun with a larger [budget] to go on where it stopped.",
            if left == 1 { "" } else { "s" },
            chain::stages_after(stage, &config).join(", ")
        ));
        return Ok(ExitCode::from(1));
    }
    if let Some(stage) = outcome.stopped_at {
        // The stage has said why it stopped.
        crate::printer::tell(&format!(
            "run stopped at {stage}; not run: {} (what is done is kept)",
            chain::stages_after(stage, &config).join(", ")
        ));
        return Ok(ExitCode::from(EXIT_BAD_INPUT));
    }
    let code = crate::printer::exit_for(outcome.ok());
    let printed = tables::run_summary(&outcome).and_then(|()| match &outcome.analysis {
        Some(analysis) => tables::recommendations(analysis),
        None => Ok(()),
    });
    // `hierarag run … | head` closes stdout: the summary is cut short, the exit status is
    // still the run's.
    crate::printer::printed(printed)?;
    if let Some(html) = &outcome.report_html {
        use hierarag_run::Reporter;
        printer.note(&format!("report: {}", html.display()));
    }
    Ok(code)
}
