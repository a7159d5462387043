//! `hierarag system remove RUN_DIR NAME`: a system added to a run, taken out of it.

use std::process::ExitCode;

use hierarag_run::{Reporter, RunDir};

use crate::cli::SystemCommand;
use crate::printer::Printer;

pub fn run(command: &SystemCommand, printer: Printer) -> anyhow::Result<ExitCode> {
    match command {
        SystemCommand::Remove(args) => {
            let run = RunDir::new(&args.dir);
            let _lock = run.lock_existing()?;
            let removed = hierarag_run::systems::remove_added(&run, &args.name)?;
            printer.note(&format!(
                "removed {} (a comparison.json that has it keeps it until `hierarag compare` \
                 runs again)",
                removed.display()
            ));
            Ok(ExitCode::SUCCESS)
        }
    }
}
