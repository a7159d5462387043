//! `hierarag`: the command-line entry point. This crate parses arguments (`cli`), resolves
//! them into settings (`settings`), prints (`printer`, `tables`) and maps failures to exit
//! codes; the work is done by the library crates (`hierarag-run` and those below it).

mod cli;
mod commands;
mod printer;
mod settings;
mod tables;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            // --help and --version print and succeed; a bad option is bad input (exit 1, as
            // documented), not clap's default 2, which we keep for internal errors.
            let code = if error.use_stderr() {
                printer::EXIT_BAD_INPUT
            } else {
                0
            };
            error.print().ok();
            return ExitCode::from(code);
        }
    };
    printer::init_logging(cli.global.quiet, cli.global.verbose);
    match commands::run(cli) {
        Ok(code) => code,
        Err(error) => {
            if printer::is_broken_pipe(&error) {
                return ExitCode::SUCCESS;
            }
            eprintln!("error: {error:#}");
            printer::exit_code_for(&error)
        }
    }
}
