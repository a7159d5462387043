//! `hierarag plan`.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, bail};
use hierarag_corpus::OnError;
use hierarag_plan::{
    Design, DesignConfig, DesignKind, GenerationSettings, Layout, LengthBounds, PerLevel, Plan,
    Reservoir,
};
use hierarag_taxonomy::Taxonomy;

use crate::cli::{DesignArg, OnErrorArg, PlanArgs};
use crate::output::{note, progress_bar};

const DEFAULT_PER_DIMENSION: usize = 400;
const DEFAULT_PER_CELL: usize = 250;
const DEFAULT_FACTORS: [&str; 2] = ["lv", "qc"];

pub fn run(args: &PlanArgs, quiet: bool) -> anyhow::Result<ExitCode> {
    let taxonomy = super::taxonomy::load(args.taxonomy.as_deref())?;
    let design = design(args, &taxonomy)?;
    check_bounds(args)?;
    let layout = Layout::new(&design, &taxonomy, args.seed);
    let bounds = LengthBounds {
        min_words: args.min_words,
        max_words: args.max_words,
    };
    let spec = super::index::corpus_spec(&args.corpus, quiet)?;
    let on_error = match args.corpus.on_error {
        OnErrorArg::Fail => OnError::Fail,
        OnErrorArg::Skip => OnError::Skip,
    };

    let started = Instant::now();
    let bar = progress_bar(
        quiet,
        None,
        "{spinner} sampling documents: {pos} read, {per_sec} [{elapsed}]",
    );
    let mut reservoir = Reservoir::new(layout.doc_slots(), bounds, args.seed);
    let mut documents = spec.documents(on_error)?;
    for document in documents.by_ref() {
        let document = document?;
        reservoir.offer(&document.id, &document.text);
        if reservoir.read().is_multiple_of(4096) {
            bar.set_position(reservoir.read());
        }
    }
    bar.finish_and_clear();
    let skipped = documents.skipped();
    if !skipped.is_empty() {
        note(
            quiet,
            format!(
                "skipped {}; first: {}",
                hierarag_corpus::ReadSummary::of_skipped(skipped).describe_skipped(),
                skipped[0].reason
            ),
        );
    }
    let plan = layout.assign(reservoir.finish())?;
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
    let mut bytes = Vec::new();
    plan.write_jsonl(&mut bytes)?;
    let written = write_plan(out, &bytes, args.overwrite)?;
    let what = if written { "wrote" } else { "up to date:" };
    note(
        quiet,
        format!(
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
        ),
    );
    Ok(ExitCode::SUCCESS)
}

/// Document length bounds that can be met.
pub fn check_bounds(args: &PlanArgs) -> anyhow::Result<()> {
    if let (Some(min), Some(max)) = (args.min_words, args.max_words)
        && min > max
    {
        bail!("--min-words {min} is more than --max-words {max}");
    }
    Ok(())
}

/// The plan file already holds another plan (and `--overwrite` was not given).
#[derive(Debug)]
pub struct DifferentPlan(std::path::PathBuf);

impl std::fmt::Display for DifferentPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} already holds a different plan; pass --overwrite to replace it (items already generated from it would no longer match)",
            self.0.display()
        )
    }
}

impl std::error::Error for DifferentPlan {}

/// The design from the command line, falling back on the [design] table of --config: every
/// dimension, category and persona checked against the taxonomy.
pub fn design(args: &PlanArgs, taxonomy: &Taxonomy) -> anyhow::Result<Design> {
    let (config, config_name) = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("{}: cannot read", path.display()))?;
            let name = path.display().to_string();
            let config = DesignConfig::from_toml_str(&text, &name)?.unwrap_or_default();
            (config, name)
        }
        None => (DesignConfig::default(), String::new()),
    };
    let kind = match args.design {
        Some(DesignArg::Rq1) => DesignKind::Rq1,
        Some(DesignArg::Rq2) => DesignKind::Rq2,
        Some(DesignArg::Rq3) => DesignKind::Rq3,
        Some(DesignArg::Custom) => DesignKind::Custom,
        None => match config.kind {
            Some(kind) => kind,
            None => bail!(
                "which design? pass --design rq1|rq2|rq3|custom (or set `kind` in the [design] table of --config)"
            ),
        },
    };
    let misplaced = [
        (
            "--per-dimension",
            args.per_dimension.is_some(),
            DesignKind::Rq1,
        ),
        ("--per-level", args.per_level.is_some(), DesignKind::Rq2),
        ("--per-cell", args.per_cell.is_some(), DesignKind::Rq3),
        ("--factors", !args.factors.is_empty(), DesignKind::Rq3),
    ];
    for (flag, given, applies_to) in misplaced {
        if given && kind != applies_to {
            bail!("{flag} applies to design {applies_to}, not {kind}");
        }
    }
    if !args.dimensions.is_empty() && !matches!(kind, DesignKind::Rq1 | DesignKind::Rq2) {
        bail!("--dimensions applies to designs rq1 and rq2, not {kind} (rq3 takes --factors)");
    }
    let dimensions = if args.dimensions.is_empty() {
        config.dimensions.clone().unwrap_or_default()
    } else {
        args.dimensions.clone()
    };
    // A dimension named in the config is an error at its line there.
    let at_key = |key: &str, from_config: bool| {
        let context = config
            .key_lines
            .get(key)
            .filter(|_| from_config)
            .map(|line| format!("{config_name}: [design] {key} (line {line})"));
        move |error: hierarag_plan::PlanError| match context {
            Some(context) => anyhow::Error::new(error).context(context),
            None => anyhow::Error::new(error),
        }
    };
    let design = match kind {
        DesignKind::Rq1 => Design::rq1(
            taxonomy,
            args.per_dimension
                .or(config.per_dimension)
                .unwrap_or(DEFAULT_PER_DIMENSION),
            &dimensions,
        )
        .map_err(at_key("dimensions", args.dimensions.is_empty()))?,
        DesignKind::Rq2 => Design::rq2(
            taxonomy,
            args.per_level
                .or(config.per_level.map(PerLevel::from))
                .unwrap_or(PerLevel::PAPER),
            &dimensions,
        )
        .map_err(at_key("dimensions", args.dimensions.is_empty()))?,
        DesignKind::Rq3 => {
            let factors = if !args.factors.is_empty() {
                args.factors.clone()
            } else if let Some(factors) = &config.factors {
                factors.clone()
            } else {
                DEFAULT_FACTORS.iter().map(|f| f.to_string()).collect()
            };
            Design::rq3(
                taxonomy,
                args.per_cell
                    .or(config.per_cell)
                    .unwrap_or(DEFAULT_PER_CELL),
                &factors,
            )
            .map_err(at_key("factors", args.factors.is_empty()))?
        }
        DesignKind::Custom => {
            if args.config.is_none() {
                bail!(
                    "design custom reads its cells from a run config: pass --config run.toml with [[design.cell]] entries (see `hierarag plan --help`)"
                );
            }
            Design::custom(taxonomy, &config.cells, &config_name)?
        }
    };
    Ok(design)
}

/// Writes the plan atomically; an identical existing file is left alone (returns false), a
/// different one is replaced only with --overwrite.
fn write_plan(out: &Path, bytes: &[u8], overwrite: bool) -> anyhow::Result<bool> {
    if let Ok(existing) = std::fs::read(out) {
        if existing == bytes {
            return Ok(false);
        }
        if !overwrite {
            return Err(DifferentPlan(out.to_path_buf()).into());
        }
    }
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut partial = out.as_os_str().to_owned();
    partial.push(".partial");
    let partial = std::path::PathBuf::from(partial);
    std::fs::write(&partial, bytes).with_context(|| format!("writing {}", partial.display()))?;
    std::fs::rename(&partial, out).with_context(|| format!("writing {}", out.display()))?;
    Ok(true)
}

fn print_summary(
    plan: &Plan,
    taxonomy: &Taxonomy,
    design: &Design,
    seed: u64,
    settings: GenerationSettings,
) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
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
    let estimate = plan.estimate(taxonomy, settings);
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
