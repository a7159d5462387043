//! `hierarag`: the command-line entry point. Each subcommand is one pipeline stage reading and
//! writing files (DESIGN.md §2); this crate parses arguments, shows progress and maps failures to
//! exit codes, and leaves the work to the library crates.

mod cli;
mod commands;
mod output;
mod run_config;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            // --help and --version print and succeed; a bad option is bad input (exit 1, as
            // documented), not clap's default 2, which we keep for internal errors.
            let code = if error.use_stderr() {
                output::EXIT_BAD_INPUT
            } else {
                0
            };
            error.print().ok();
            return ExitCode::from(code);
        }
    };
    output::init_logging(cli.global.quiet, cli.global.verbose);
    match commands::run(cli) {
        Ok(code) => code,
        Err(error) => {
            if output::is_broken_pipe(&error) {
                return ExitCode::SUCCESS;
            }
            eprintln!("error: {error:#}");
            output::exit_code_for(&error)
        }
    }
}
