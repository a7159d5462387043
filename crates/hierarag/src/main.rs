//! `hierarag`: the command-line entry point (the work is in the library, `lib.rs`).

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(hierarag::main_with_args(std::env::args_os()))
}
