//! `hierarag validity`: the run's human-written benchmark beside its generated one
//! (validity.json).

use std::io::Write;
use std::process::ExitCode;

use hierarag_analysis::Settings;
use hierarag_run::{Manifest, Reporter, RunDir};

use crate::cli::ValidityArgs;
use crate::printer::Printer;
use crate::settings::analysis_settings;

pub fn run(args: &ValidityArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let run = RunDir::new(&args.dir);
    let Some(_lock) = run.lock_existing()? else {
        anyhow::bail!("{}: no such run directory", args.dir.display());
    };
    let base = if run.manifest().exists() {
        hierarag_run::analyze::settings_of_manifest(&Manifest::load(&run)?)?
    } else {
        Settings::default()
    };
    let settings = analysis_settings(&args.settings, base)?;
    let taxonomy = hierarag_run::taxonomy::of_run(args.taxonomy.as_deref(), Some(&run))?;
    let validity = hierarag_run::validity::validity_of_run(&run, &taxonomy, &settings, &printer)?;
    let path = hierarag_run::validity::write(&validity, run.root())?;
    if args.json {
        let mut stdout = crate::printer::stdout();
        serde_json::to_writer_pretty(&mut stdout, &validity)?;
        writeln!(stdout)?;
    } else {
        let mut stdout = crate::printer::stdout();
        for line in &validity.verdict {
            writeln!(stdout, "{line}")?;
        }
    }
    for note in &validity.notes {
        printer.note(note);
    }
    printer.note(&format!("wrote {}", path.display()));
    Ok(ExitCode::SUCCESS)
}
