//! `hierarag power`: the questions a granularity finding needs, with a run as the pilot
//! (power.json).

use std::io::Write;
use std::process::ExitCode;

use anyhow::bail;
use hierarag_analysis::{PowerSettings, Settings};
use hierarag_run::{Manifest, Reporter, RunDir};

use crate::cli::PowerArgs;
use crate::printer::Printer;
use crate::settings::analysis_settings;
use crate::tables;

pub fn run(args: &PowerArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let run = RunDir::new(&args.dir);
    // One writer per run directory.
    let _lock = run.lock_existing()?;
    let manifest = run
        .manifest()
        .exists()
        .then(|| Manifest::load(&run))
        .transpose()?;
    let base = match &manifest {
        Some(manifest) => hierarag_run::analyze::settings_of_manifest(manifest)?,
        None => Settings::default(),
    };
    let settings = analysis_settings(&args.settings, base)?;
    let power = PowerSettings {
        power: args.power,
        simulations: args.simulations,
        bootstrap: args.study_bootstrap,
        comparisons: args.comparisons,
        per_category: args.per_category,
        max_per_category: args.max_per_category,
    };
    if let Err(problem) = power.check() {
        bail!("{problem}");
    }
    let taxonomy = hierarag_run::taxonomy::of_run(args.taxonomy.as_deref(), Some(&run))?;
    let (_, system) = hierarag_run::systems::system_of_run(&run, args.system.as_deref())?;
    let report =
        hierarag_run::power::plan_run(&run, &system, &taxonomy, &settings, &power, &printer)?;
    let path = hierarag_run::power::write(&report, run.root())?;
    if args.json {
        let mut out = crate::printer::stdout();
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        tables::power_summary(&report)?;
    }
    printer.note(&format!("wrote {}", path.display()));
    Ok(ExitCode::SUCCESS)
}
