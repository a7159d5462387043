//! `hierarag export`: a run's benchmark (and answers) in other tools' formats.

use std::process::ExitCode;

use hierarag_run::RunDir;
use hierarag_run::export::{ExportRequest, export};

use crate::cli::ExportArgs;
use crate::printer::Printer;

pub fn run(args: &ExportArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let run = RunDir::new(&args.run);
    // The answers of the run's first system (a run without a manifest: its main one).
    let answers = hierarag_run::systems::system_of_run(&run, None)?
        .1
        .answers();
    let request = ExportRequest {
        run,
        format: args.format,
        answers,
        out: args.out.clone(),
        index: args.index.clone(),
        csv: args.csv,
    };
    export(&request, &printer)?;
    Ok(ExitCode::SUCCESS)
}
