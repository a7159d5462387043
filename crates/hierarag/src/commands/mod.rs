//! One module per subcommand.

pub mod analyze;
pub mod annotate;
pub mod annotate_serve;
mod data;
mod eval;
pub mod eval_text;
pub mod export;
mod index;
mod llm;
mod models;
mod plan;
mod quickstart;
pub mod report;
mod retrieve;
pub mod run;
mod search;
pub mod stages;
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
        Command::Eval(EvalCommand::Text(args)) => eval_text::run(&args),
        Command::Data(DataCommand::Fetch(args)) => data::run(&args, quiet),
        Command::Models(command) => models::run(&command, quiet),
        Command::Llm(command) => llm::run(&command, quiet),
        Command::Taxonomy(command) => taxonomy::run(&command),
        Command::Plan(args) => plan::run(&args, quiet),
        Command::Run(args) => run::run(&args, quiet),
        Command::Generate(args) => stages::run_generate(&args, quiet),
        Command::Answer(args) => stages::run_answer(&args, quiet),
        Command::Evaluate(args) => stages::run_evaluate(&args, quiet),
        Command::Analyze(args) => analyze::run(&args, quiet),
        Command::Report(args) => report::run(&args, quiet),
        Command::Export(args) => export::run(&args, quiet),
        Command::Annotate(command) => annotate::run(&command, quiet),
    }
}
