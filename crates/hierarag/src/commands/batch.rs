//! `hierarag batch export` and `import`: a stage's pending requests out to a batch engine of
//! the user's, and its replies into the run's response cache.

use std::process::ExitCode;

use hierarag_run::chain::{self, RunOptions};
use hierarag_run::{Reporter, RunDir};

use crate::cli::{BatchCommand, BatchExportArgs, BatchImportArgs, BatchStage};
use crate::printer::{Printer, exit_for};
use crate::settings::run_config_of;

pub fn run(command: &BatchCommand, printer: Printer) -> anyhow::Result<ExitCode> {
    match command {
        BatchCommand::Export(args) => export(args, printer),
        BatchCommand::Import(args) => import(args, printer),
    }
}

fn export(args: &BatchExportArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let run = RunDir::new(&args.dir);
    let (config, config_path) = run_config_of(args.config.as_deref(), &run, &printer)?;
    let _lock = run.lock()?;
    let stage = match args.stage {
        BatchStage::Generate => "generate",
    };
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| run.root().join(format!("batch-{stage}-input.jsonl")));
    let options = RunOptions {
        config_path,
        reconfigure: false,
        check_endpoints: false,
        export_batch: Some(out.clone()),
    };
    let outcome = chain::run(&config, &options, &printer)?;
    let requests = hierarag_run::batch::count_lines(&out)?;
    let pass = outcome.stages.iter().find(|(name, _)| *name == stage);
    let done = pass.map_or(0, |(_, p)| p.resumed + p.written);
    let items = pass.map_or(0, |(_, p)| p.items);
    if requests == 0 {
        crate::printer::say(&format!(
            "nothing pending: the {stage} stage's {done} of {items} items are answered from the \
response cache; `hierarag run` goes on from there"
        ));
    } else {
        crate::printer::say(&format!(
            "wrote {requests} request{} to {} ({done} of {items} items done); run them through \
your batch engine and `hierarag batch import {} OUTPUT`",
            if requests == 1 { "" } else { "s" },
            out.display(),
            run.root().display()
        ));
    }
    Ok(exit_for(true))
}

fn import(args: &BatchImportArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let run = RunDir::new(&args.dir);
    let (config, _) = run_config_of(args.config.as_deref(), &run, &printer)?;
    let _lock = run.lock_existing()?;
    let imported = hierarag_run::batch::import(&config, &run, &args.file, &printer)?;
    crate::printer::say(&format!(
        "{}: {} replies stored in the response cache, {} failed",
        args.file.display(),
        imported.stored,
        imported.failed.len()
    ));
    for (custom_id, reason) in imported.failed.iter().take(10) {
        printer.warn(&format!("  {custom_id}: {reason}"));
    }
    if imported.failed.len() > 10 {
        printer.warn(&format!("  … and {} more", imported.failed.len() - 10));
    }
    Ok(exit_for(imported.failed.is_empty()))
}
