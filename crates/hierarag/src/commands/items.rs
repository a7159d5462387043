//! `hierarag items`: which questions carry the signal, and the core set (items.json,
//! core.jsonl).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use hierarag_analysis::Metric;
use hierarag_items::{CoreSettings, Flag, ItemsReport, Settings};
use hierarag_run::{Manifest, Reporter, RunDir};

use crate::cli::ItemsArgs;
use crate::printer::Printer;

pub fn run(args: &ItemsArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let runs: Vec<RunDir> = args.dirs.iter().map(RunDir::new).collect();
    let first = &runs[0];
    let listed = hierarag_run::compare::systems_of_runs(&runs, args.systems.as_deref())?;
    let (systems, without) = hierarag_run::compare::with_scores(listed);
    if !without.is_empty() {
        printer.warn(&format!("left out, with no scores: {}", without.join(", ")));
    }
    let manifest = first
        .manifest()
        .exists()
        .then(|| Manifest::load(first))
        .transpose()?;
    let base = match &manifest {
        Some(manifest) => Some(hierarag_run::analyze::settings_of_manifest(manifest)?),
        None => None,
    };
    let metric = args
        .metric
        .or(base.as_ref().map(|b| b.metric))
        .unwrap_or_default();
    let settings = Settings {
        threshold: args
            .threshold
            .unwrap_or_else(|| hierarag_analysis::default_threshold(metric)),
        min_discrimination: args.min_discrimination,
    };
    let core = CoreSettings {
        tolerance: args.tolerance.unwrap_or(0.02 * scale(metric)),
        min_per_category: args.min_per_category,
        draws: args.draws,
        seed: args.seed.or(manifest.as_ref().map(|m| m.seed)).unwrap_or(0),
    };
    let report = hierarag_run::items::items_of_systems(first, &systems, metric, &settings, &core)?;
    let out: PathBuf = args
        .out
        .clone()
        .unwrap_or_else(|| first.root().to_path_buf());
    let _lock = RunDir::new(&out).lock()?;
    let (path, core_path) = hierarag_run::items::write(&report, &first.benchmark(), &out)?;
    if args.json {
        let mut stdout = crate::printer::stdout();
        serde_json::to_writer_pretty(&mut stdout, &report)?;
        writeln!(stdout)?;
    } else {
        summary(&report)?;
    }
    for note in report.items.notes.iter().chain(&report.core.notes) {
        printer.note(note);
    }
    printer.note(&format!(
        "wrote {} and {}",
        path.display(),
        core_path.display()
    ));
    Ok(ExitCode::SUCCESS)
}

/// The top of a metric's range: its scores run from 0 to this.
fn scale(metric: Metric) -> f64 {
    match metric {
        Metric::Bleu => 100.0,
        Metric::JudgeCorrectness => 3.0,
        Metric::JudgeHallucination => 2.0,
        _ => 1.0,
    }
}

fn summary(report: &ItemsReport) -> anyhow::Result<()> {
    let mut out = crate::printer::stdout();
    let items = &report.items;
    writeln!(
        out,
        "{} questions, {} systems, metric {}, pass at {}",
        items.items.len(),
        items.systems.len(),
        report.metric,
        items.settings.threshold
    )?;
    for (flag, label) in [
        (Flag::Saturated, "saturated (every system passes)"),
        (Flag::Failed, "failed by every system (check the reference)"),
        (
            Flag::Negative,
            "negative (orders the systems the wrong way)",
        ),
    ] {
        let ids: Vec<&str> = items
            .items
            .iter()
            .filter(|i| i.flags.contains(&flag))
            .map(|i| i.id.as_str())
            .collect();
        let shown = ids.iter().take(8).copied().collect::<Vec<_>>().join(", ");
        let more = if ids.len() > 8 { ", …" } else { "" };
        writeln!(
            out,
            "  {:>5}  {label}{}",
            ids.len(),
            if ids.is_empty() {
                String::new()
            } else {
                format!(": {shown}{more}")
            }
        )?;
    }
    writeln!(
        out,
        "\ncategory                                 questions  informative  mean r"
    )?;
    for category in &items.categories {
        let name = format!(
            "{}/{}/{}",
            category.category.dimension, category.category.level, category.category.category
        );
        writeln!(
            out,
            "{name:<40} {:>9}  {:>10.0}%  {}",
            category.n,
            100.0 * category.informative_share,
            category
                .mean_discrimination
                .map_or_else(|| "-".to_owned(), |r| format!("{r:.2}"))
        )?;
    }
    let core = &report.core;
    writeln!(
        out,
        "\ncore set: {} of {} questions ({:.0}% fewer answers to pay for), every category mean \
within {} on these systems (largest error {:.4})",
        core.ids.len(),
        core.of,
        100.0 * core.saved_share(),
        core.settings.tolerance,
        core.max_error
    )?;
    if let Some(held) = &core.held_out {
        writeln!(
            out,
            "held out, each system in turn (chosen without it, checked on it): {} of {} within \
the tolerance with their order kept; largest error {:.4}",
            held.within,
            held.systems.len(),
            held.max_error
        )?;
    }
    Ok(())
}
