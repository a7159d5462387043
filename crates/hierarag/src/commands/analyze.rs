//! `hierarag analyze`: which dimension and granularity discriminate, from a run's scores
//! (analysis.json).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::bail;
use hierarag_analysis::Settings;
use hierarag_run::{Manifest, Reporter, RunDir};

use crate::cli::AnalyzeArgs;
use crate::printer::Printer;
use crate::settings::{analysis_settings, out_dir};
use crate::tables;

pub fn run(args: &AnalyzeArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let run = args.dir.as_deref().map(RunDir::new);
    // One writer per run directory.
    let _lock = run.as_ref().map(RunDir::lock_existing).transpose()?;
    // The system analysed: --system, else the run's first (the implicit one without
    // [[system]]); a named system's analysis goes to its own folder.
    let system = match (&run, &args.system) {
        (Some(run), name) => Some(hierarag_run::systems::system_of_run(run, name.as_deref())?),
        (None, Some(_)) => bail!("--system needs a run directory"),
        (None, None) => None,
    };
    let in_run = |given: &Option<PathBuf>, of_run: &dyn Fn() -> Option<PathBuf>, flag: &str| match (
        given,
        of_run(),
    ) {
        (Some(path), _) => Ok(path.clone()),
        (None, Some(path)) => Ok(path),
        (None, None) => bail!("give a run directory or --{flag}"),
    };
    let benchmark = in_run(
        &args.benchmark,
        &|| run.as_ref().map(RunDir::benchmark),
        "benchmark",
    )?;
    let scores = in_run(
        &args.scores,
        &|| system.as_ref().map(|(_, s)| s.scores()),
        "scores",
    )?;
    let answers = match (&args.answers, &system) {
        (Some(path), _) => Some(path.clone()),
        (None, Some((_, system))) => Some(system.answers()).filter(|p| p.exists()),
        (None, None) => None,
    };
    let manifest = run
        .as_ref()
        .filter(|r| r.manifest().exists())
        .map(Manifest::load)
        .transpose()?;
    let base = match &manifest {
        Some(manifest) => hierarag_run::analyze::settings_of_manifest(manifest)?,
        None => Settings::default(),
    };
    let settings = analysis_settings(&args.settings, base)?;
    let taxonomy = hierarag_run::taxonomy::of_run(args.taxonomy.as_deref(), run.as_ref())?;
    // Without --out: a named system's folder, and the run's own analysis.json too for the
    // run's first system (the one the report shows).
    let (out, also_top) = match (&args.out, &run, &system) {
        (Some(out), _, _) => (out.clone(), None),
        (None, Some(run), Some((name, system))) if system.root() != run.root() => {
            let first = hierarag_run::systems::system_of_run(run, None)?.0;
            let top = (*name == first).then(|| run.root().to_path_buf());
            (system.root().to_path_buf(), top)
        }
        (None, Some(run), _) => (run.root().to_path_buf(), None),
        (None, None, _) => (out_dir(None, &scores), None),
    };
    let mut analysis = hierarag_run::analyze::analyze_files(
        &benchmark,
        &scores,
        answers.as_deref(),
        &taxonomy,
        &settings,
        run.as_ref(),
    )?;
    if let Some(run) = &run {
        analysis.human_validation = hierarag_run::analyze::load_agreement(run)?;
    }
    let path = hierarag_run::analyze::write(&analysis, Path::new(&out))?;
    if let Some(top) = &also_top {
        let path = hierarag_run::analyze::write(&analysis, top)?;
        printer.note(&format!(
            "wrote {} (the run's first system)",
            path.display()
        ));
    }
    if args.json {
        let mut out = crate::printer::stdout();
        serde_json::to_writer_pretty(&mut out, &analysis)?;
        writeln!(out)?;
    } else {
        tables::analysis_summary(&analysis)?;
    }
    printer.note(&format!("wrote {}", path.display()));
    Ok(ExitCode::SUCCESS)
}
