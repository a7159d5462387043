//! `hierarag`'s command line as a library: [`main_with_args`] parses arguments (`cli`),
//! resolves them into settings (`settings`), prints (`printer`, `tables`) and maps failures to
//! exit codes; the work is done by the library crates (`hierarag-run` and those below it). The
//! binary (`main.rs`) and the Python package's `hierarag` command both call it, so they are
//! the same program.

mod cli;
mod commands;
mod printer;
mod settings;
mod tables;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser;

/// Runs the command line `args` (the program name first, as `std::env::args_os` gives it) and
/// returns its exit code: 0 success, 1 bad input or failed items, 2 an internal error.
pub fn main_with_args<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match cli::Cli::try_parse_from(args) {
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
            return code;
        }
    };
    printer::init_logging(cli.global.quiet, cli.global.verbose);
    let code = match commands::run(cli) {
        Ok(code) => code,
        Err(error) => {
            if printer::is_broken_pipe(&error) {
                return 0;
            }
            crate::printer::tell(&format!("error: {error:#}"));
            printer::exit_code_for(&error)
        }
    };
    code_of(code)
}

/// [`main_with_args`] without the summary tables on stdout (what `--json` asks for is still
/// printed): the Python package's commands called with `quiet=True`.
pub fn main_with_args_without_tables<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    tables::hidden(|| main_with_args(args))
}

/// The command line's reporter (notes and warnings on stderr, progress bars on a terminal;
/// with `quiet` only errors), for stages run from elsewhere in this process.
pub fn reporter(quiet: bool) -> impl hierarag_run::Reporter {
    printer::Printer { quiet }
}

/// The number an [`ExitCode`] stands for (`ExitCode` keeps it private).
fn code_of(code: ExitCode) -> u8 {
    (0..=u8::MAX)
        .find(|&n| ExitCode::from(n) == code)
        .unwrap_or(printer::EXIT_INTERNAL)
}
