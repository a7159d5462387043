//! `hierarag export`: a run's benchmark (and answers) in other tools' formats.

use std::process::ExitCode;

use hierarag_run::RunDir;
use hierarag_run::export::{ExportRequest, export};

use crate::cli::ExportArgs;
use crate::printer::Printer;

pub fn run(args: &ExportArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let request = ExportRequest {
        run: RunDir::new(&args.run),
        format: args.format,
        out: args.out.clone(),
        index: args.index.clone(),
        csv: args.csv,
    };
    export(&request, &printer)?;
    Ok(ExitCode::SUCCESS)
}
