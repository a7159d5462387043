//! One module per subcommand.

mod data;
mod eval;
mod index;
mod llm;
mod models;
mod plan;
mod quickstart;
mod retrieve;
mod search;
mod taxonomy;

use std::process::ExitCode;

use crate::cli::{Cli, Command, DataCommand, EvalCommand};

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let quiet = cli.global.quiet;
    match cli.command {
        Command::Quickstart(args) => quickstart::run(&args, quiet),
        Command::Index(args) => index::run(&args, quiet),
        Command::Search(args) => search::run(&args),
        Command::Retrieve(args) => retrieve::run(&args, quiet),
        Command::Eval(EvalCommand::Retrieval(args)) => eval::run(&args),
        Command::Data(DataCommand::Fetch(args)) => data::run(&args, quiet),
        Command::Models(command) => models::run(&command, quiet),
        Command::Llm(command) => llm::run(&command, quiet),
        Command::Taxonomy(command) => taxonomy::run(&command),
        Command::Plan(args) => plan::run(&args, quiet),
    }
}
