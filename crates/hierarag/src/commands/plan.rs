//! `hierarag plan`.

use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

use hierarag_plan::{Design, GenerationSettings, LengthBounds, Plan};
use hierarag_run::Reporter;
use hierarag_run::plan::{Lengths, Sampling};
use hierarag_taxonomy::Taxonomy;

use crate::cli::PlanArgs;
use crate::printer::Printer;
use crate::settings::{corpus_spec, design_options};

pub fn run(args: &PlanArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let taxonomy = hierarag_run::taxonomy::load(args.taxonomy.as_deref())?;
    let design = hierarag_run::plan::design(&design_options(args), &taxonomy)?;
    let bounds = LengthBounds {
        min_words: args.min_words,
        max_words: args.max_words,
    };
    let spec = hierarag_run::corpus::resolve(&corpus_spec(&args.corpus), &printer)?;
    let started = Instant::now();
    let plan = hierarag_run::plan::sample(
        &design,
        &taxonomy,
        &spec,
        Sampling {
            on_error: args.corpus.on_error,
            bounds,
            seed: args.seed,
            lengths: Lengths::from_dry_run(args.dry_run),
        },
        &printer,
    )?;
    let settings = GenerationSettings {
        candidates: args.candidates,
        filter: !args.no_filter,
    };
    if args.dry_run {
        print_summary(&plan, &taxonomy, &design, args.seed, settings)?;
        return Ok(ExitCode::SUCCESS);
    }
    let out = args
        .out
        .as_deref()
        .expect("clap requires --out without --dry-run");
    let written = hierarag_run::plan::write_plan(out, &plan, args.overwrite)?;
    let what = if written { "wrote" } else { "up to date:" };
    printer.note(&format!(
        "{what} {} ({} items of design {} in {} set{}, {} documents{}, seed {}) in {:.1} s",
        out.display(),
        plan.items.len(),
        design.kind,
        design.sets.len(),
        if design.sets.len() == 1 { "" } else { "s" },
        plan.distinct_documents,
        if plan.reused_documents {
            ", some used twice: the corpus is smaller than the plan"
        } else {
            ""
        },
        args.seed,
        started.elapsed().as_secs_f64()
    ));
    Ok(ExitCode::SUCCESS)
}

fn print_summary(
    plan: &Plan,
    taxonomy: &Taxonomy,
    design: &Design,
    seed: u64,
    settings: GenerationSettings,
) -> anyhow::Result<()> {
    let mut out = crate::printer::stdout();
    writeln!(
        out,
        "design {}, seed {seed}: {} items in {} set{}",
        design.kind,
        plan.items.len(),
        design.sets.len(),
        if design.sets.len() == 1 { "" } else { "s" }
    )?;
    for (set, cells) in plan.cell_counts() {
        let total: usize = cells.iter().map(|(_, n)| n).sum();
        writeln!(out, "\nset {set}: {total} items")?;
        let width = cells
            .iter()
            .map(|(label, _)| label.len())
            .max()
            .unwrap_or(0);
        for (label, n) in cells {
            writeln!(out, "  {label:<width$}  {n:>6}")?;
        }
    }
    writeln!(out, "\npersonas:")?;
    for ((categorization, persona), n) in plan.persona_counts() {
        writeln!(out, "  {categorization}={persona:<20} {n:>6}")?;
    }
    let slots: usize = plan.items.iter().map(|item| item.doc_ids.len()).sum();
    writeln!(
        out,
        "\ndocuments: {} read, {} within the length bounds; {slots} needed, {} different{}",
        plan.documents_read,
        plan.documents_eligible,
        plan.distinct_documents,
        if plan.reused_documents {
            " (the corpus is smaller than the plan: some are used twice)"
        } else {
            ""
        }
    )?;
    let estimate = plan
        .estimate(taxonomy, settings)
        .expect("a dry run samples with the documents' lengths");
    writeln!(
        out,
        "LLM calls: {} generation + {} filter = {} (before retries)",
        estimate.generation_calls,
        estimate.filter_calls,
        estimate.calls()
    )?;
    writeln!(
        out,
        "tokens: ≈{} in, ≈{} out ({} candidates a call; estimated at {} tokens a word)",
        human(estimate.input_tokens),
        human(estimate.output_tokens),
        settings.candidates,
        hierarag_plan::TOKENS_PER_WORD
    )?;
    Ok(())
}

/// 1234 → `1.2k`, 4_100_000 → `4.1M`.
fn human(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}
