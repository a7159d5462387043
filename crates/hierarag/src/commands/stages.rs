//! `hierarag generate`, `answer` and `evaluate`: one stage each over files.

use std::process::ExitCode;

use anyhow::Context;
use hierarag_run::config::{SystemConfig, SystemKind, model_config};
use hierarag_run::{Reporter, RunDir, SystemDir, stages};

use crate::cli::{AnswerArgs, EvaluateArgs, GenerateArgs};
use crate::printer::{Printer, exit_for};
use crate::settings::{answer_config, corpus_spec, generate_config, out_dir};

pub fn generate(args: &GenerateArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let config = generate_config(args)?;
    let spec = hierarag_run::corpus::resolve(&corpus_spec(&args.corpus), &printer)?;
    let run = RunDir::new(out_dir(args.out.as_deref(), &args.plan));
    let _lock = run.lock()?;
    let outcome = stages::generate(
        &config,
        &run,
        &args.plan,
        (&spec, args.corpus.on_error),
        None,
        &printer,
    )?;
    printer.note(&format!("wrote {}", run.benchmark().display()));
    let mut ok = outcome.ok();
    if outcome.stopped.is_none()
        && let Some(screen) = &config.judge.screen
    {
        let (rated, _) = hierarag_run::judge::screen_benchmark(
            &config,
            &run,
            screen,
            Some((&spec, args.corpus.on_error)),
            &printer,
        )?;
        ok &= rated.ok();
    }
    Ok(exit_for(ok))
}

pub fn answer(args: &AnswerArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let config = answer_config(args)?;
    let out = out_dir(args.out.as_deref(), &args.benchmark);
    let run = RunDir::new(&out);
    let _lock = run.lock()?;
    let systems: Vec<SystemConfig> = match &args.system {
        Some(name) => vec![
            config
                .systems
                .iter()
                .find(|s| &s.name == name)
                .cloned()
                .with_context(|| {
                    format!(
                        "--system {name}: the config has no such [[system]]{}",
                        if config.systems.is_empty() {
                            " (it has none: leave --system out)".to_owned()
                        } else {
                            format!(
                                "; its systems: {}",
                                config
                                    .systems
                                    .iter()
                                    .map(|s| s.name.as_str())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            )
                        }
                    )
                })?,
        ],
        None => config.answering_systems(),
    };
    config.check_systems()?;
    let mut ok = true;
    for system_config in &systems {
        let name = &system_config.name;
        let system = hierarag_run::systems::dir_of(&run, &config, name);
        let label = (!config.systems.is_empty()).then_some(name.as_str());
        let outcome = match &system_config.kind {
            SystemKind::Builtin(builtin) => stages::answer(
                &config.for_builtin(builtin),
                &run,
                &args.benchmark,
                args.index.as_deref().with_context(|| {
                    format!("system {name} (builtin) retrieves from an index: give --index")
                })?,
                &system,
                label,
                &printer,
            )?,
            SystemKind::File(file) => stages::import_answers(
                &run,
                &args.benchmark,
                args.index.as_deref(),
                name,
                file,
                &system,
                &printer,
            )?,
            SystemKind::Command(command) => stages::answer_with_command(
                &run,
                &args.benchmark,
                args.index.as_deref(),
                name,
                command,
                &system,
                &printer,
            )?,
            SystemKind::Http(http) => stages::answer_with_http(
                &run,
                &args.benchmark,
                args.index.as_deref(),
                name,
                http,
                &system,
                &printer,
            )?,
        };
        printer.note(&format!("wrote {}", system.answers().display()));
        ok &= outcome.ok();
    }
    Ok(exit_for(ok))
}

pub fn evaluate(args: &EvaluateArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let config = model_config(args.config.as_deref())?;
    let out = out_dir(args.out.as_deref(), &args.answers);
    let (run, system) = (RunDir::new(&out), SystemDir::at(&out));
    let _lock = run.lock()?;
    let outcome = stages::evaluate(
        &config,
        &run,
        &args.benchmark,
        &args.answers,
        &system,
        None,
        &printer,
    )?;
    printer.note(&format!("wrote {}", system.scores().display()));
    Ok(exit_for(outcome.ok()))
}
