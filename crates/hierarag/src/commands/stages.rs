//! `hierarag generate`, `answer` and `evaluate`: one stage each over files.

use std::process::ExitCode;

use hierarag_run::config::model_config;
use hierarag_run::{Reporter, RunDir, SystemDir, stages};

use crate::cli::{AnswerArgs, EvaluateArgs, GenerateArgs};
use crate::printer::{Printer, exit_for};
use crate::settings::{answer_config, corpus_spec, generate_config, out_dir};

pub fn generate(args: &GenerateArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let config = generate_config(args)?;
    let spec = hierarag_run::corpus::resolve(&corpus_spec(&args.corpus), &printer)?;
    let run = RunDir::new(out_dir(args.out.as_deref(), &args.plan));
    let outcome = stages::generate(
        &config,
        &run,
        &args.plan,
        &spec,
        args.corpus.on_error,
        &printer,
    )?;
    printer.note(&format!("wrote {}", run.benchmark().display()));
    Ok(exit_for(outcome.ok()))
}

pub fn answer(args: &AnswerArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let config = answer_config(args)?;
    let out = out_dir(args.out.as_deref(), &args.benchmark);
    let (run, system) = (RunDir::new(&out), SystemDir::at(&out));
    let outcome = stages::answer(
        &config,
        &run,
        &args.benchmark,
        &args.index,
        &system,
        &printer,
    )?;
    printer.note(&format!("wrote {}", system.answers().display()));
    Ok(exit_for(outcome.ok()))
}

pub fn evaluate(args: &EvaluateArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let config = model_config(args.config.as_deref())?;
    let out = out_dir(args.out.as_deref(), &args.answers);
    let (run, system) = (RunDir::new(&out), SystemDir::at(&out));
    let outcome = stages::evaluate(
        &config,
        &run,
        &args.benchmark,
        &args.answers,
        &system,
        &printer,
    )?;
    printer.note(&format!("wrote {}", system.scores().display()));
    Ok(exit_for(outcome.ok()))
}
