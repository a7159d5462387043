//! `hierarag index`.

use std::process::ExitCode;

use hierarag_index::BuildOptions;

use crate::cli::IndexArgs;
use crate::printer::Printer;
use crate::settings::{chunk_params, corpus_spec};

pub fn run(args: &IndexArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let spec = hierarag_run::corpus::resolve(&corpus_spec(&args.corpus), &printer)?;
    let options = BuildOptions {
        chunking: chunk_params(&args.chunking),
        on_error: args.corpus.on_error,
        writer_heap_bytes: args.writer_heap_mb << 20,
        threads: args.threads,
        overwrite: args.overwrite,
        language: args.language,
    };
    hierarag_run::index::build(&spec, &args.out, &options, &printer)?;
    Ok(ExitCode::SUCCESS)
}
