//! `hierarag annotate`: human validation of a run's benchmark — sample the items, add
//! annotators, serve the rating app, exchange ratings as CSV, compute agreement.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;

use anyhow::{Context, bail};
use hierarag_annotate::{
    Agreement, BaselineTest, ImportError, Sample, Store, import_csv, now_unix_s, write_csv,
};
use hierarag_annotate_server::{ServeOptions, bind, check_address, serve};
use hierarag_pipeline::write_atomic;
use hierarag_run::annotate::SampleRequest;
use hierarag_run::{Reporter, RunDir};

use crate::cli::{
    AgreementArgs, AnnotateCommand, AnnotatorsArgs, ImportArgs, RatingsExportArgs, SampleArgs,
    ServeArgs,
};
use crate::printer::Printer;

/// At most this many import problems are printed.
const MAX_PRINTED_ERRORS: usize = 20;

pub fn run(command: &AnnotateCommand, printer: Printer) -> anyhow::Result<ExitCode> {
    match command {
        AnnotateCommand::Sample(args) => run_sample(args, printer),
        AnnotateCommand::Annotators(args) => run_annotators(args),
        AnnotateCommand::Serve(args) => run_serve(args, printer),
        AnnotateCommand::Export(args) => run_export(args, printer),
        AnnotateCommand::Import(args) => run_import(args, printer),
        AnnotateCommand::Agreement(args) => run_agreement(args, printer),
    }
}

fn run_sample(args: &SampleArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let run = RunDir::new(&args.dir);
    let request = SampleRequest {
        n: args.n,
        category_subset: args.category_subset,
        seed: args.seed,
        corpus: args.corpus.clone(),
        format: args.format,
        id_field: args.id_field.clone(),
        text_field: args.text_field.clone(),
        taxonomy: args.taxonomy.clone(),
        overwrite: args.overwrite,
        from_compare: args.from_compare,
        from_items: args.from_items,
        answers: args.answers.clone(),
    };
    let drawn = hierarag_run::annotate::sample(&run, &request, &printer)?;
    print_strata(&drawn)?;
    if let Some(width) = args.width {
        let plans = hierarag_run::annotate::ratings_needed(&run, width, 0.05)?;
        print_plans(&plans)?;
    }
    printer.note(&format!(
        "wrote {} ({} items, {} with the category task); next: `hierarag annotate \
         annotators {} --add NAME`, then `hierarag annotate serve {}`",
        run.annotations().display(),
        drawn.items.len(),
        drawn.n_category_task(),
        args.dir.display(),
        args.dir.display()
    ));
    Ok(ExitCode::SUCCESS)
}

fn run_agreement(args: &AgreementArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let run = RunDir::new(&args.dir);
    if let Some(width) = args.width
        && !(width > 0.0 && width < 2.0)
    {
        anyhow::bail!("--width: {width} is not a width of an interval on a 0-1 scale");
    }
    let (result, ppi, stale) = hierarag_run::annotate::agreement_of(&run, args.width)?;
    if let Some(stale) = &stale {
        printer.warn(&format!("warning: {stale}"));
    }
    if args.json {
        let mut out = crate::printer::stdout();
        serde_json::to_writer_pretty(&mut out, &result)?;
        writeln!(out)?;
    } else {
        print_agreement(&result)?;
        if let Some(ppi) = &ppi {
            print_ppi(ppi)?;
        }
    }
    printer.note(&format!("wrote {}", run.agreement().display()));
    if ppi.is_some() {
        printer.note(&format!("wrote {}", run.ppi().display()));
    }
    Ok(ExitCode::SUCCESS)
}

fn run_annotators(args: &AnnotatorsArgs) -> anyhow::Result<ExitCode> {
    let store = Store::open(&RunDir::new(&args.dir).annotations())?;
    for name in &args.add {
        store.add_annotator(name)?;
    }
    let mut out = crate::printer::stdout();
    let annotators = store.annotators()?;
    if annotators.is_empty() {
        writeln!(
            out,
            "no annotators yet; add them with `hierarag annotate annotators {} --add NAME`",
            args.dir.display()
        )?;
    }
    let width = annotators.iter().map(|a| a.name.len()).max().unwrap_or(0);
    for annotator in &annotators {
        writeln!(
            out,
            "{:<width$}  {}  /a/{}",
            annotator.name, annotator.token, annotator.token
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

fn run_export(args: &RatingsExportArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let store = Store::open(&RunDir::new(&args.dir).annotations())?;
    let items = store.items()?;
    let annotators: Vec<String> = store.annotators()?.into_iter().map(|a| a.name).collect();
    let ratings = store.ratings()?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| args.dir.join("ratings.csv"));
    if out.as_os_str() == "-" {
        write_csv(crate::printer::stdout(), &items, &annotators, &ratings)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut bytes = Vec::new();
    let rows = write_csv(&mut bytes, &items, &annotators, &ratings)?;
    write_atomic(&out, &bytes)?;
    printer.note(&format!(
        "wrote {} ({rows} rows: {} items × {} annotators, {} rated)",
        out.display(),
        items.len(),
        annotators.len(),
        ratings.len()
    ));
    Ok(ExitCode::SUCCESS)
}

fn run_import(args: &ImportArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let mut store = Store::open(&RunDir::new(&args.dir).annotations())?;
    let file = std::fs::File::open(&args.file)
        .with_context(|| format!("{}: cannot open", args.file.display()))?;
    match import_csv(&mut store, file, args.add_annotators, now_unix_s()) {
        Ok(summary) => {
            let added = if summary.new_annotators.is_empty() {
                String::new()
            } else {
                format!("; added annotators {}", summary.new_annotators.join(", "))
            };
            printer.note(&format!(
                "imported {} rating(s) from {} ({} empty row(s) skipped){added}",
                summary.imported,
                args.file.display(),
                summary.empty_rows
            ));
            Ok(ExitCode::SUCCESS)
        }
        Err(ImportError::Rows(errors)) => {
            for error in errors.iter().take(MAX_PRINTED_ERRORS) {
                crate::printer::tell(&format!("{}: {error}", args.file.display()));
            }
            if errors.len() > MAX_PRINTED_ERRORS {
                crate::printer::tell(&format!("… and {} more", errors.len() - MAX_PRINTED_ERRORS));
            }
            bail!(
                "{}: {} problem(s); nothing was imported",
                args.file.display(),
                errors.len()
            )
        }
        Err(error) => Err(error).with_context(|| format!("importing {}", args.file.display())),
    }
}

fn run_serve(args: &ServeArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let options = ServeOptions {
        allow_remote: args.allow_remote,
    };
    check_address(SocketAddr::new(args.host, args.port), &options)?;
    let path = RunDir::new(&args.dir).annotations();
    let store = Store::open(&path)?;
    // Held while serving, from before the links are printed: sampling again over the store
    // would lose every rating saved after.
    let _lock = hierarag_annotate::lock_store(&path)?;
    for name in &args.annotators {
        store
            .add_annotator(name)
            .with_context(|| format!("{}: adding annotator `{name}`", path.display()))?;
    }
    let annotators = store.annotators()?;
    if !args.host.to_canonical().is_loopback() && annotators.is_empty() {
        anyhow::bail!(
            "serving on {}, which is not a loopback address, needs at least one annotator, since \
             tokens are the only access control: add one with `--annotator NAME`",
            args.host
        );
    }
    let n_items = store.items()?.len();
    drop(store);

    let runtime = hierarag_run::stages::runtime()?;
    runtime.block_on(async {
        let listener = bind(args.host, args.port, &options).await?;
        let addr: SocketAddr = listener.local_addr()?;
        // Data (the links) to stdout, the rest to stderr.
        let mut out = crate::printer::stdout();
        for annotator in &annotators {
            writeln!(
                out,
                "{}\thttp://{addr}/a/{}",
                annotator.name, annotator.token
            )?;
        }
        out.flush()?;
        drop(out);
        if annotators.is_empty() {
            printer.note(&format!(
                "no annotators yet: add them with `--annotator NAME` or \
                 `hierarag annotate annotators {} --add NAME` (the server picks them up)",
                args.dir.display()
            ));
        }
        if addr.ip().is_unspecified() {
            printer.note(
                "listening on every address: replace the address in the links by this machine's",
            );
        }
        printer.note(&format!(
            "serving {n_items} items of {} on http://{addr}/ (one link per annotator above); \
             Ctrl-C to stop",
            path.display()
        ));
        serve(listener, &args.dir, options).await?;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

fn print_strata(drawn: &Sample) -> anyhow::Result<()> {
    let mut out = crate::printer::stdout();
    let width = drawn
        .strata
        .iter()
        .map(|s| s.label().len())
        .max()
        .unwrap_or(0)
        .max("stratum".len());
    writeln!(
        out,
        "{:<width$}  {:>9}  {:>7}  {:>13}",
        "stratum", "benchmark", "sampled", "category task"
    )?;
    for stratum in &drawn.strata {
        writeln!(
            out,
            "{:<width$}  {:>9}  {:>7}  {:>13}",
            stratum.label(),
            stratum.benchmark,
            stratum.sampled,
            stratum.category_task
        )?;
    }
    writeln!(
        out,
        "{:<width$}  {:>9}  {:>7}  {:>13}",
        "total",
        drawn.strata.iter().map(|s| s.benchmark).sum::<usize>(),
        drawn.items.len(),
        drawn.n_category_task()
    )?;
    Ok(())
}

fn opt(value: Option<f64>, digits: usize) -> String {
    value.map_or_else(|| "–".into(), |v| format!("{v:.digits$}"))
}

fn print_agreement(result: &Agreement) -> anyhow::Result<()> {
    let mut out = crate::printer::stdout();
    writeln!(
        out,
        "{} items ({} with the category task), {} rating(s) by {} annotator(s): {}",
        result.n_items,
        result.n_category_task,
        result.n_ratings,
        result.annotators.len(),
        result.annotators.join(", ")
    )?;
    writeln!(out, "\nRating scales (Fleiss' κ)")?;
    writeln!(
        out,
        "{:<14}  {:>5}  {:>6}  {:>5}  {:>7}",
        "scale", "range", "raters", "items", "κ"
    )?;
    for scale in &result.scales {
        writeln!(
            out,
            "{:<14}  {:>5}  {:>6}  {:>5}  {:>7}",
            scale.scale,
            format!("0–{}", scale.max),
            scale.raters.len(),
            scale.n_items,
            opt(scale.kappa, 3)
        )?;
    }
    let share = |s: Option<hierarag_annotate::Share>| {
        s.map_or_else(
            || "–".into(),
            |s| format!("{:.1}% ({}/{})", 100.0 * s.share, s.count, s.n),
        )
    };
    writeln!(out, "\nQuality")?;
    writeln!(
        out,
        "acceptable (mean correctness ≥ 2)   {}",
        share(result.quality.acceptable)
    )?;
    writeln!(
        out,
        "hallucination-free (all raters 0)   {}",
        share(result.quality.hallucination_free)
    )?;
    writeln!(
        out,
        "answerability: mean {}, share ≥ 2  {}",
        opt(result.quality.answerability_mean, 2),
        share(result.quality.answerable)
    )?;
    if let Some(category) = &result.category {
        writeln!(
            out,
            "\nCategory agreement ({} items with picks)",
            category.n_items
        )?;
        writeln!(
            out,
            "{:<16}  {:>5}  {:>24}  {:>24}",
            "annotator", "picks", "exact (chance, p)", "parent-match (chance, p)"
        )?;
        let test = |t: &BaselineTest| {
            format!(
                "{:.1}% ({:.1}%, {})",
                100.0 * t.rate,
                100.0 * t.baseline,
                t.p.map_or_else(|| "–".into(), format_p)
            )
        };
        for row in category.per_annotator.iter().chain([&category.pooled]) {
            writeln!(
                out,
                "{:<16}  {:>5}  {:>24}  {:>24}",
                row.annotator.as_deref().unwrap_or("all (pooled)"),
                row.n,
                test(&row.exact),
                test(&row.parent)
            )?;
        }
        if !category.pairs.is_empty() {
            writeln!(out, "\nAnnotator pairs on category picks (Cohen's κ)")?;
            for pair in &category.pairs {
                writeln!(
                    out,
                    "{} – {}: κ {} over {} items ({} same)",
                    pair.a,
                    pair.b,
                    opt(pair.kappa, 3),
                    pair.n,
                    pair.same
                )?;
            }
        }
        if let Some(link) = &category.coherence {
            writeln!(
                out,
                "\nAgreement vs Coherence Ratio ρ: point-biserial r {} (p {}) over {} items \
                 ({} agreed, {} without a split)",
                opt(link.r, 3),
                link.p.map_or_else(|| "–".into(), format_p),
                link.n,
                link.agreed,
                link.without_split
            )?;
        }
    }
    if let Some(judge) = &result.judge {
        print_judge(&mut out, judge)?;
    }
    if !result.notes.is_empty() {
        writeln!(out, "\nNotes")?;
        for line in &result.notes {
            writeln!(out, "- {line}")?;
        }
    }
    Ok(())
}

/// The judge against the people per task and scale, then each metric against their mean
/// correctness of the answers.
fn print_judge(
    out: &mut impl Write,
    judge: &hierarag_annotate::JudgeAgreement,
) -> anyhow::Result<()> {
    writeln!(
        out,
        "\nThe judge against people{} (quadratic-weighted κ; Spearman's ρ)",
        judge
            .judge
            .as_ref()
            .map_or_else(String::new, |m| format!(", {m}"))
    )?;
    writeln!(
        out,
        "{:<11} {:<14} {:<14} {:>5} {:>7} {:>7} {:>9}",
        "task", "scale", "against", "n", "κ", "ρ", "p"
    )?;
    for task in &judge.tasks {
        for scale in &task.scales {
            let rows = scale.annotators.iter().chain(scale.mean.iter());
            for vs in rows {
                writeln!(
                    out,
                    "{:<11} {:<14} {:<14} {:>5} {:>7} {:>7} {:>9}",
                    task.task,
                    scale.scale,
                    vs.annotator,
                    vs.n,
                    opt(vs.kappa, 3),
                    opt(vs.spearman, 3),
                    vs.p.map_or_else(|| "–".into(), format_p)
                )?;
            }
            writeln!(
                out,
                "{:<11} {:<14} {:<14} {:>5} {:>7}",
                task.task,
                scale.scale,
                "people (ceil.)",
                "",
                opt(scale.human_kappa, 3)
            )?;
        }
    }
    if !judge.metrics.is_empty() {
        writeln!(
            out,
            "\nMetrics against the people's mean correctness of the answers (Spearman's ρ)"
        )?;
        writeln!(
            out,
            "{:<10} {:<14} {:>5} {:>7} {:>9}",
            "metric", "dimension", "n", "ρ", "p"
        )?;
        for metric in &judge.metrics {
            writeln!(
                out,
                "{:<10} {:<14} {:>5} {:>7} {:>9}",
                metric.metric,
                metric.dimension,
                metric.n,
                opt(metric.rho, 3),
                metric.p.map_or_else(|| "–".into(), format_p)
            )?;
        }
    }
    if let Some(verdict) = &judge.verdict {
        writeln!(out, "\n{verdict}")?;
    }
    Ok(())
}

fn format_p(p: f64) -> String {
    if p < 0.001 {
        "p<0.001".into()
    } else {
        format!("p={p:.3}")
    }
}

/// The judge's means corrected by the people's ratings, overall per system and per pair.
fn print_ppi(ppi: &hierarag_annotate::JudgePpi) -> anyhow::Result<()> {
    let mut out = crate::printer::stdout();
    let interval = |m: Option<&hierarag_annotate::MeanInterval>| {
        m.map_or_else(
            || "–".to_owned(),
            |m| format!("{:.3} [{:.3}, {:.3}]", m.mean, m.ci[0], m.ci[1]),
        )
    };
    let level = 100.0 * (1.0 - ppi.alpha);
    writeln!(
        out,
        "\nThe judge corrected by the people (PPI++, {level:.0}% intervals, 0-1 scale)"
    )?;
    for scale in &ppi.scales {
        writeln!(
            out,
            "{:<16}  {:>24}  {:>24}  {:>24}  {:>7}  {:>11}",
            scale.scale, "PPI", "judge only", "people only", "rated", "effective n"
        )?;
        let rows = scale
            .systems
            .iter()
            .map(|s| (s.system.clone(), &s.overall))
            .chain(
                scale
                    .differences
                    .iter()
                    .map(|d| (format!("{} − {}", d.system_a, d.system_b), &d.overall)),
            );
        for (name, row) in rows {
            let ppi_text = row.ppi.as_ref().map_or_else(
                || "–".to_owned(),
                |p| format!("{:.3} [{:.3}, {:.3}]", p.estimate, p.ci[0], p.ci[1]),
            );
            writeln!(
                out,
                "{name:<16}  {ppi_text:>24}  {:>24}  {:>24}  {:>7}  {:>11}",
                interval(row.judge_only.as_ref()),
                interval(row.people_only.as_ref()),
                format!("{}/{}", row.n_rated, row.n_judged),
                row.ppi
                    .as_ref()
                    .and_then(|p| p.effective_n_rated)
                    .map_or_else(|| "–".to_owned(), |n| format!("{n:.0}"))
            )?;
        }
    }
    print_plans(&ppi.plans)?;
    Ok(())
}

/// How many rated answers each system needs for the width asked.
fn print_plans(plans: &[hierarag_annotate::RatingsPlan]) -> anyhow::Result<()> {
    let mut out = crate::printer::stdout();
    for plan in plans {
        writeln!(
            out,
            "{} of {}: {} rated answers for the width asked ({})",
            plan.scale,
            plan.system,
            plan.needed
                .n_rated
                .map_or_else(|| "more than there are".to_owned(), |n| n.to_string()),
            match plan.needed.method {
                hierarag_annotate::PlanMethod::Pilot => "from the ratings so far",
                hierarag_annotate::PlanMethod::PeopleOnlyBound =>
                    "the people-only bound, before any rating",
            }
        )?;
    }
    Ok(())
}
