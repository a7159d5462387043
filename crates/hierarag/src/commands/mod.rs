//! One module per subcommand: each turns its arguments into settings, calls the library
//! crates, and prints what it found; none calls another.

mod analyze;
mod annotate;
mod batch;
mod compare;
mod data;
mod eval;
mod eval_text;
mod export;
mod import;
mod index;
mod items;
mod judge;
mod llm;
mod models;
mod plan;
mod power;
mod report;
mod retrieve;
mod run;
mod search;
mod smoke;
mod stages;
mod system;
mod tag;
mod taxonomy;
mod validity;

use std::process::ExitCode;

use crate::cli::{Cli, Command, DataCommand, EvalCommand};
use crate::printer::Printer;

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let printer = Printer {
        quiet: cli.global.quiet,
    };
    match cli.command {
        Command::Smoke(args) => smoke::run(&args, printer),
        Command::Index(args) => index::run(&args, printer),
        Command::Search(args) => search::run(&args),
        Command::Retrieve(args) => retrieve::run(&args, printer),
        Command::Eval(EvalCommand::Retrieval(args)) => eval::run(&args, printer),
        Command::Eval(EvalCommand::Text(args)) => eval_text::run(&args, printer),
        Command::Data(DataCommand::Fetch(args)) => data::run(&args, printer),
        Command::Models(command) => models::run(&command, printer),
        Command::Llm(command) => llm::run(&command, printer),
        Command::Taxonomy(command) => taxonomy::run(&command),
        Command::Plan(args) => plan::run(&args, printer),
        Command::Run(args) => run::run(&args, printer),
        Command::Generate(args) => stages::generate(&args, printer),
        Command::Answer(args) => stages::answer(&args, printer),
        Command::Evaluate(args) => stages::evaluate(&args, printer),
        Command::Analyze(args) => analyze::run(&args, printer),
        Command::Compare(args) => compare::run(&args, printer),
        Command::Validity(args) => validity::run(&args, printer),
        Command::Items(args) => items::run(&args, printer),
        Command::Tag(args) => tag::run(&args, printer),
        Command::Judge(args) => judge::run(&args, printer),
        Command::Power(args) => power::run(&args, printer),
        Command::Report(args) => report::run(&args, printer),
        Command::Export(args) => export::run(&args, printer),
        Command::Import(args) => import::run(&args, printer),
        Command::Annotate(command) => annotate::run(&command, printer),
        Command::Batch(command) => batch::run(&command, printer),
        Command::System(command) => system::run(&command, printer),
    }
}
