//! `hierarag compare`: where a run's systems differ, whether it is real, and which
//! granularity shows it (comparison.json).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use hierarag_analysis::Settings;
use hierarag_run::{Manifest, Reporter, RunDir};

use crate::cli::CompareArgs;
use crate::printer::Printer;
use crate::settings::analysis_settings;
use crate::tables;

pub fn run(args: &CompareArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let runs: Vec<RunDir> = args.dirs.iter().map(RunDir::new).collect();
    let first = &runs[0];
    let listed = hierarag_run::compare::systems_of_runs(&runs, args.systems.as_deref())?;
    // A system without scores (never answered, or every answer failed) is left out, so that
    // it cannot turn the comparison into one of no question.
    let (systems, without) = hierarag_run::compare::with_scores(listed);
    if !without.is_empty() {
        printer.warn(&format!(
            "left out, with no scores: {} (answer and evaluate them, or remove them with \
             `hierarag system remove`)",
            without.join(", ")
        ));
    }
    let base = if first.manifest().exists() {
        hierarag_run::analyze::settings_of_manifest(&Manifest::load(first)?)?
    } else {
        Settings::default()
    };
    let settings = analysis_settings(&args.settings, base)?;
    let taxonomy = hierarag_run::taxonomy::of_run(args.taxonomy.as_deref(), Some(first))?;
    let threshold = args
        .threshold
        .unwrap_or_else(|| hierarag_analysis::default_threshold(settings.metric));
    let comparison =
        hierarag_run::compare::compare_systems(first, &systems, &taxonomy, &settings, threshold)?;
    let out: PathBuf = args
        .out
        .clone()
        .unwrap_or_else(|| first.root().to_path_buf());
    let _lock = RunDir::new(&out).lock()?;
    let path = hierarag_run::compare::write(&comparison, &out)?;
    if args.json {
        let mut stdout = crate::printer::stdout();
        serde_json::to_writer_pretty(&mut stdout, &comparison)?;
        writeln!(stdout)?;
    } else {
        tables::comparison_summary(&comparison)?;
        if let Some(ppi) = hierarag_run::annotate::load_ppi(first)? {
            tables::ppi_differences(&ppi)?;
        }
    }
    printer.note(&format!("wrote {}", path.display()));
    Ok(ExitCode::SUCCESS)
}
