//! Plans: the design resolved from the command line and the run config, documents sampled
//! from the corpus in one streaming pass, `plan.jsonl` written.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use hierarag_corpus::{CorpusSpec, Measure, OnError, ReadSummary, RowRef, Skipped};
use hierarag_plan::{
    Design, DesignConfig, DesignKind, Layout, LengthBounds, PerLevel, Plan, Reservoir, count_words,
};
use hierarag_taxonomy::Taxonomy;

use hierarag_pipeline::Reporter;

const DEFAULT_PER_DIMENSION: usize = 400;
const DEFAULT_PER_CELL: usize = 250;
const DEFAULT_FACTORS: [&str; 2] = ["lv", "qc"];

/// The design as the command line gives it; what is unset comes from the `[design]` table of
/// `config` (a run config file), then the paper's defaults.
#[derive(Debug, Clone, Default)]
pub struct DesignOptions {
    pub kind: Option<DesignKind>,
    pub config: Option<PathBuf>,
    /// rq1: items per dimension.
    pub per_dimension: Option<usize>,
    /// rq2: items per (dimension, level).
    pub per_level: Option<PerLevel>,
    /// rq3: items per cell.
    pub per_cell: Option<usize>,
    /// rq1/rq2: only these dimensions.
    pub dimensions: Vec<String>,
    /// rq3: the dimensions to cross.
    pub factors: Vec<String>,
}

/// Samples the documents of `design`'s items from the corpus (uniformly, in one streaming
/// pass, within `bounds`) and lays the plan out with `seed`.
///
/// A corpus of Parquet files is read on every core, row groups in parallel; without length
/// bounds (and under `--on-error fail`) only its id column is read, and with
/// [`Lengths::Always`] the texts of the sampled rows alone afterwards, by row selection. A
/// text is then checked only when its document is sampled, by generation (`hierarag index`
/// checks every one). The sample is the same either way.
pub fn sample(
    design: &Design,
    taxonomy: &Taxonomy,
    corpus: &CorpusSpec,
    sampling: Sampling,
    reporter: &dyn Reporter,
) -> anyhow::Result<Plan> {
    let Sampling {
        on_error,
        bounds,
        seed,
        lengths,
    } = sampling;
    if let (Some(min), Some(max)) = (bounds.min_words, bounds.max_words)
        && min > max
    {
        bail!("--min-words {min} is more than --max-words {max}");
    }
    let layout = Layout::new(design, taxonomy, seed);
    let mut reservoir = Reservoir::new(layout.doc_slots(), bounds, seed);
    let counter = reporter.counter("sampling documents", "read", None);
    let sample = match corpus.parquet()? {
        Some(parquet) => {
            // Only ids are read when no length is needed to decide; under --on-error skip the
            // texts are read too, so that a document with a bad text is skipped as by every
            // other stage instead of being sampled.
            let read_texts = !bounds.is_unbounded() || on_error == OnError::Skip;
            let summary = parquet.scan(
                on_error,
                read_texts.then_some(&count_words as &Measure),
                &mut |row| {
                    reservoir.offer_counted(row.id, row.measure, row.row.to_u64());
                    if reservoir.read().is_multiple_of(4096) {
                        counter.set_position(reservoir.read());
                    }
                },
            )?;
            drop(counter);
            note_skipped(&summary.skipped, reporter);
            let mut sample = reservoir.finish();
            if !read_texts && lengths == Lengths::Always {
                // The sampled documents' texts, for their lengths (and to check they are not
                // empty): only the pages holding them are decoded.
                let rows: Vec<RowRef> = sample
                    .docs
                    .iter()
                    .map(|doc| RowRef::from_u64(doc.tag))
                    .collect();
                for (doc, document) in sample.docs.iter_mut().zip(parquet.fetch(&rows)?) {
                    doc.words = count_words(&document.text);
                }
                sample.lengths_known = true;
            }
            sample
        }
        None => {
            let mut documents = corpus.documents(on_error)?;
            for document in documents.by_ref() {
                let document = document?;
                reservoir.offer(&document.id, &document.text);
                if reservoir.read().is_multiple_of(4096) {
                    counter.set_position(reservoir.read());
                }
            }
            drop(counter);
            note_skipped(documents.skipped(), reporter);
            reservoir.finish()
        }
    };
    Ok(layout.assign(sample)?)
}

fn note_skipped(skipped: &[Skipped], reporter: &dyn Reporter) {
    if !skipped.is_empty() {
        reporter.note(&format!(
            "skipped {}; first: {}",
            ReadSummary::of_skipped(skipped).describe_skipped(),
            skipped[0].reason
        ));
    }
}

/// How documents are read and drawn for a plan.
#[derive(Debug, Clone, Copy)]
pub struct Sampling {
    pub on_error: OnError,
    pub bounds: LengthBounds,
    pub seed: u64,
    pub lengths: Lengths,
}

/// Whether a plan must know its documents' lengths (for [`Plan::estimate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lengths {
    /// Read the sampled documents' texts if the pass did not (a dry run's estimate).
    Always,
    /// Only as the pass reads them: a Parquet corpus without length bounds reads ids alone, and
    /// the sampled texts are read (and checked) when questions are generated from them.
    WhenRead,
}

impl Lengths {
    pub fn from_dry_run(dry_run: bool) -> Lengths {
        if dry_run {
            Lengths::Always
        } else {
            Lengths::WhenRead
        }
    }
}

/// The plan file already holds another plan (and `--overwrite` was not given).
#[derive(Debug)]
pub struct DifferentPlan(PathBuf);

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

/// The design of `args`, falling back on the [design] table of its config file: every
/// dimension, category and persona checked against the taxonomy.
pub fn design(args: &DesignOptions, taxonomy: &Taxonomy) -> anyhow::Result<Design> {
    let (config, config_name) = match &args.config {
        Some(path) => {
            let text = hierarag_fs::read_text(path)
                .with_context(|| format!("{}: cannot read", path.display()))?;
            let name = path.display().to_string();
            let config = DesignConfig::from_toml_str(&text, &name)?.unwrap_or_default();
            (config, name)
        }
        None => (DesignConfig::default(), String::new()),
    };
    let kind = match args.kind {
        Some(kind) => kind,
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
pub fn write_plan(out: &Path, plan: &Plan, overwrite: bool) -> anyhow::Result<bool> {
    let mut bytes = Vec::new();
    plan.write_jsonl(&mut bytes)?;
    let bytes = bytes.as_slice();
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
    hierarag_pipeline::write_atomic(out, bytes)?;
    Ok(true)
}
