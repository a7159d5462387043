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
    let in_run =
        |given: &Option<PathBuf>, of_run: fn(&RunDir) -> PathBuf, flag: &str| match (given, &run) {
            (Some(path), _) => Ok(path.clone()),
            (None, Some(run)) => Ok(of_run(run)),
            (None, None) => bail!("give a run directory or --{flag}"),
        };
    let benchmark = in_run(&args.benchmark, RunDir::benchmark, "benchmark")?;
    let scores = in_run(&args.scores, |r| r.main_system().scores(), "scores")?;
    let answers = match (&args.answers, &run) {
        (Some(path), _) => Some(path.clone()),
        (None, Some(run)) => Some(run.main_system().answers()).filter(|p| p.exists()),
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
    let out = args
        .out
        .clone()
        .or_else(|| run.as_ref().map(|r| r.root().to_path_buf()))
        .unwrap_or_else(|| out_dir(None, &scores));
    let mut analysis = hierarag_run::analyze::analyze_files(
        &benchmark,
        &scores,
        answers.as_deref(),
        &taxonomy,
        &settings,
    )?;
    if let Some(run) = &run {
        analysis.human_validation = hierarag_run::analyze::load_agreement(run)?;
    }
    let path = hierarag_run::analyze::write(&analysis, Path::new(&out))?;
    if args.json {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut out, &analysis)?;
        writeln!(out)?;
    } else {
        tables::analysis_summary(&analysis)?;
    }
    printer.note(&format!("wrote {}", path.display()));
    Ok(ExitCode::SUCCESS)
}
