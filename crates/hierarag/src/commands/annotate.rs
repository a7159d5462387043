//! `hierarag annotate`: human validation of a run's benchmark — sample the items, add
//! annotators, serve the rating app, exchange ratings as CSV, compute agreement.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use hierarag_analysis::Analysis;
use hierarag_annotate::{
    AGREEMENT_FILE, ANNOTATIONS_FILE, Agreement, BaselineTest, CategoryParents, ImportError,
    Question, Sample, SampleOptions, Store, agreement, import_csv, now_unix_s, sample, write_csv,
};
use hierarag_corpus::OnError;
use hierarag_generate::BenchmarkRecord;
use hierarag_pipeline::{BENCHMARK_FILE, MANIFEST_FILE, Manifest, read_records, write_atomic};

use crate::cli::{CorpusArgs, FormatArg, OnErrorArg};
use crate::output::note;
use crate::run_config::CorpusSection;

/// At most this many import problems are printed.
const MAX_PRINTED_ERRORS: usize = 20;

/// `hierarag annotate …`.
#[derive(Debug, clap::Subcommand)]
pub enum AnnotateCommand {
    /// Draw the items to rate from a run's benchmark into RUN_DIR/annotations.sqlite.
    ///
    /// Stratified by (dimension, level) with proportional allocation (largest remainder, at
    /// least one per stratum when --n allows), drawn uniformly within each stratum; factorial
    /// questions count under their first category. --category-subset of the items also get the
    /// category task: a blind pick among the categories of their level. The source documents
    /// are read from the run's corpus (or --corpus). The same benchmark and seed give the same
    /// store content.
    Sample(SampleArgs),
    /// Add annotators and print each one's token and link path (/a/<token>).
    Annotators(AnnotatorsArgs),
    /// Serve the rating app for the annotators of a run directory.
    Serve(crate::commands::annotate_serve::ServeArgs),
    /// Write every (item, annotator) pair as a CSV row, rated or not, for spreadsheets.
    Export(ExportArgs),
    /// Read ratings from a CSV (as written by `export`); every row is checked before anything
    /// is written.
    Import(ImportArgs),
    /// Agreement of the annotators: Fleiss' κ per scale, answer quality, category agreement
    /// against chance, Cohen's κ per pair, and the link to the Coherence Ratio
    /// (RUN_DIR/agreement.json).
    #[command(after_help = "Definitions (DESIGN.md §8, human validation):
  κ per scale       Fleiss' κ over the items rated on the scale by every annotator who used it
  acceptable        mean correctness over the item's raters ≥ 2
  hallucination-free every rater gave hallucination 0
  answerable        mean answerability ≥ 2
  exact             the category pick is the intended category (chance 1/|choices|)
  parent-match      the pick is the intended category or a sibling (same parent); chance
                    |intended and siblings|/|choices|, e.g. 2/8 on a fine level in pairs
  p                 one-sided binomial p-value of the hits against chance
  r (ρ)             point-biserial r between 'every pick on the item is a parent-match' and the
                    Coherence Ratio of the split the item's category belongs to (analysis.json)")]
    Agreement(AgreementArgs),
}

/// `hierarag annotate sample`.
#[derive(Debug, clap::Args)]
pub struct SampleArgs {
    /// A run directory with benchmark.jsonl and manifest.json.
    #[arg(value_name = "RUN_DIR")]
    pub dir: PathBuf,
    /// Items to sample.
    #[arg(long, default_value_t = 110)]
    pub n: usize,
    /// Sampled items that also get the category task.
    #[arg(long, default_value_t = 60, value_name = "N")]
    pub category_subset: usize,
    /// Seed of every random choice [default: the run's seed, else 42].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Corpus inputs to read the documents from [default: the run config's, from
    /// manifest.json].
    #[arg(long = "corpus", num_args = 1.., value_name = "PATH")]
    pub corpus: Vec<String>,
    /// Corpus format [default: the run config's, else detected from each path].
    #[arg(long, value_enum)]
    pub format: Option<FormatArg>,
    /// JSON field or Parquet column holding the document id [default: the run config's, else
    /// id].
    #[arg(long)]
    pub id_field: Option<String>,
    /// JSON field or Parquet column holding the document text [default: the run config's,
    /// else text].
    #[arg(long)]
    pub text_field: Option<String>,
    /// The taxonomy (TOML or DataMorgana JSON) [default: RUN_DIR/taxonomy.toml, else the
    /// built-in one].
    #[arg(long, value_name = "FILE")]
    pub taxonomy: Option<PathBuf>,
    /// Replace an existing annotations.sqlite (its ratings are lost).
    #[arg(long)]
    pub overwrite: bool,
}

/// `hierarag annotate annotators`.
#[derive(Debug, clap::Args)]
pub struct AnnotatorsArgs {
    #[arg(value_name = "RUN_DIR")]
    pub dir: PathBuf,
    /// An annotator to add (repeatable); an existing name keeps its token.
    #[arg(long = "add", value_name = "NAME")]
    pub add: Vec<String>,
}

/// `hierarag annotate export`.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    #[arg(value_name = "RUN_DIR")]
    pub dir: PathBuf,
    /// Where the CSV goes; `-` for stdout [default: RUN_DIR/ratings.csv].
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// `hierarag annotate import`.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    #[arg(value_name = "RUN_DIR")]
    pub dir: PathBuf,
    /// The CSV: columns item_id, annotator, correctness (0–3), hallucination (0–2),
    /// answerability (0–3), category_pick, note; others are ignored. Empty cells are "not
    /// rated"; rows with every rating cell empty are skipped.
    #[arg(long, value_name = "FILE")]
    pub file: PathBuf,
    /// Add annotators the store does not know instead of rejecting their rows.
    #[arg(long)]
    pub add_annotators: bool,
}

/// `hierarag annotate agreement`.
#[derive(Debug, clap::Args)]
pub struct AgreementArgs {
    /// A run directory with annotations.sqlite (and analysis.json for the Coherence Ratio).
    #[arg(value_name = "RUN_DIR")]
    pub dir: PathBuf,
    /// Print agreement.json to stdout instead of the tables.
    #[arg(long)]
    pub json: bool,
}

pub fn run(command: &AnnotateCommand, quiet: bool) -> anyhow::Result<ExitCode> {
    match command {
        AnnotateCommand::Sample(args) => run_sample(args, quiet),
        AnnotateCommand::Annotators(args) => run_annotators(args),
        AnnotateCommand::Serve(args) => super::annotate_serve::run(args, quiet),
        AnnotateCommand::Export(args) => run_export(args, quiet),
        AnnotateCommand::Import(args) => run_import(args, quiet),
        AnnotateCommand::Agreement(args) => run_agreement(args, quiet),
    }
}

/// The store of a run directory.
pub fn store_path(dir: &Path) -> PathBuf {
    dir.join(ANNOTATIONS_FILE)
}

fn run_sample(args: &SampleArgs, quiet: bool) -> anyhow::Result<ExitCode> {
    let dir = &args.dir;
    let benchmark_path = dir.join(BENCHMARK_FILE);
    if !benchmark_path.exists() {
        bail!(
            "{}: not found (it is written by `hierarag generate` or `hierarag run`)",
            benchmark_path.display()
        );
    }
    let path = store_path(dir);
    if path.exists() && !args.overwrite {
        bail!(
            "{}: already exists; pass --overwrite to sample again (its ratings are lost)",
            path.display()
        );
    }
    let manifest = dir
        .join(MANIFEST_FILE)
        .exists()
        .then(|| Manifest::load(dir))
        .transpose()?;
    let records: Vec<BenchmarkRecord> = read_records(&benchmark_path)?;
    let questions: Vec<Question> = records
        .into_iter()
        .map(|record| Question {
            id: record.id,
            set: record.set,
            categories: record.categories,
            question: record.question,
            reference: record.answer,
            doc_ids: record.doc_ids,
        })
        .collect();
    let taxonomy = super::analyze::load_taxonomy(args.taxonomy.as_deref(), Some(dir))?;
    let seed = args
        .seed
        .or_else(|| manifest.as_ref().map(|m| m.seed))
        .unwrap_or(42);
    let options = SampleOptions {
        n: args.n,
        category_subset: args.category_subset,
        seed,
    };
    let mut drawn = sample(&questions, &taxonomy, &options)
        .with_context(|| format!("sampling from {}", benchmark_path.display()))?;
    for line in &drawn.notes {
        note(quiet, format!("note: {line}"));
    }

    let corpus = corpus_args(args, manifest.as_ref())?;
    let spec = super::index::corpus_spec(&corpus, quiet)?;
    let on_error = match corpus.on_error {
        OnErrorArg::Fail => OnError::Fail,
        OnErrorArg::Skip => OnError::Skip,
    };
    let texts: HashMap<String, String> = {
        let needed: HashSet<&str> = drawn.doc_ids().into_iter().collect();
        super::stages::collect_documents(&spec, on_error, &needed, quiet).with_context(|| {
            format!(
                "reading the documents of the sampled questions from {} (pass --corpus to \
                     read them from elsewhere)",
                spec.inputs.join(", ")
            )
        })?
    };
    let missing = drawn.fill_documents(&texts);
    if !missing.is_empty() {
        let shown: Vec<&str> = missing.iter().take(10).map(String::as_str).collect();
        bail!(
            "{} document(s) of the sampled questions are not in the corpus {}: {}{}; pass the \
             run's corpus with --corpus",
            missing.len(),
            spec.inputs.join(", "),
            shown.join(", "),
            if missing.len() > shown.len() {
                ", …"
            } else {
                ""
            }
        );
    }

    if args.overwrite {
        remove_store(&path)?;
    }
    let mut meta = drawn.meta();
    meta.push(("created_unix_s", now_unix_s().to_string()));
    meta.push(("benchmark", benchmark_path.display().to_string()));
    Store::create(&path, &drawn.items, &meta)?;
    print_strata(&drawn)?;
    note(
        quiet,
        format!(
            "wrote {} ({} items, {} with the category task); next: `hierarag annotate \
             annotators {} --add NAME`, then `hierarag annotate serve {}`",
            path.display(),
            drawn.items.len(),
            drawn.n_category_task(),
            dir.display(),
            dir.display()
        ),
    );
    Ok(ExitCode::SUCCESS)
}

/// The corpus to read documents from: the options over the run config's [corpus].
fn corpus_args(args: &SampleArgs, manifest: Option<&Manifest>) -> anyhow::Result<CorpusArgs> {
    let section: Option<CorpusSection> = match manifest.map(|m| &m.config["corpus"]) {
        Some(value) if !value.is_null() => Some(
            serde_json::from_value(value.clone())
                .context("reading the [corpus] config recorded in manifest.json")?,
        ),
        _ => None,
    };
    let inputs = if !args.corpus.is_empty() {
        args.corpus.clone()
    } else if let Some(section) = &section {
        section.inputs.clone()
    } else {
        bail!(
            "no corpus to read the documents from: {} records no [corpus] config; pass \
             --corpus PATH",
            args.dir.join(MANIFEST_FILE).display()
        );
    };
    let format = args.format.or_else(|| {
        section
            .as_ref()
            .and_then(|s| s.format.as_deref())
            .map(|f| match f {
                "parquet" => FormatArg::Parquet,
                "textdir" => FormatArg::Textdir,
                _ => FormatArg::Jsonl,
            })
    });
    let from_section = |pick: fn(&CorpusSection) -> &String, default: &str| {
        section
            .as_ref()
            .map_or_else(|| default.to_string(), |s| pick(s).clone())
    };
    Ok(CorpusArgs {
        inputs,
        format,
        id_field: args
            .id_field
            .clone()
            .unwrap_or_else(|| from_section(|s| &s.id_field, "id")),
        text_field: args
            .text_field
            .clone()
            .unwrap_or_else(|| from_section(|s| &s.text_field, "text")),
        on_error: match section.as_ref().map(|s| s.on_error.as_str()) {
            Some("skip") => OnErrorArg::Skip,
            _ => OnErrorArg::Fail,
        },
    })
}

/// Removes a store with its WAL files.
fn remove_store(path: &Path) -> anyhow::Result<()> {
    for suffix in ["", "-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let file = PathBuf::from(name);
        match std::fs::remove_file(&file) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("removing {}", file.display())),
        }
    }
    Ok(())
}

fn print_strata(drawn: &Sample) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
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

fn run_annotators(args: &AnnotatorsArgs) -> anyhow::Result<ExitCode> {
    let store = Store::open(&store_path(&args.dir))?;
    for name in &args.add {
        store.add_annotator(name)?;
    }
    let mut out = std::io::stdout().lock();
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

fn run_export(args: &ExportArgs, quiet: bool) -> anyhow::Result<ExitCode> {
    let store = Store::open(&store_path(&args.dir))?;
    let items = store.items()?;
    let annotators: Vec<String> = store.annotators()?.into_iter().map(|a| a.name).collect();
    let ratings = store.ratings()?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| args.dir.join("ratings.csv"));
    if out.as_os_str() == "-" {
        write_csv(std::io::stdout().lock(), &items, &annotators, &ratings)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut bytes = Vec::new();
    let rows = write_csv(&mut bytes, &items, &annotators, &ratings)?;
    write_atomic(&out, &bytes)?;
    note(
        quiet,
        format!(
            "wrote {} ({rows} rows: {} items × {} annotators, {} rated)",
            out.display(),
            items.len(),
            annotators.len(),
            ratings.len()
        ),
    );
    Ok(ExitCode::SUCCESS)
}

fn run_import(args: &ImportArgs, quiet: bool) -> anyhow::Result<ExitCode> {
    let mut store = Store::open(&store_path(&args.dir))?;
    let file = std::fs::File::open(&args.file)
        .with_context(|| format!("{}: cannot open", args.file.display()))?;
    match import_csv(&mut store, file, args.add_annotators, now_unix_s()) {
        Ok(summary) => {
            let added = if summary.new_annotators.is_empty() {
                String::new()
            } else {
                format!("; added annotators {}", summary.new_annotators.join(", "))
            };
            note(
                quiet,
                format!(
                    "imported {} rating(s) from {} ({} empty row(s) skipped){added}",
                    summary.imported,
                    args.file.display(),
                    summary.empty_rows
                ),
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(ImportError::Rows(errors)) => {
            for error in errors.iter().take(MAX_PRINTED_ERRORS) {
                eprintln!("{}: {error}", args.file.display());
            }
            if errors.len() > MAX_PRINTED_ERRORS {
                eprintln!("… and {} more", errors.len() - MAX_PRINTED_ERRORS);
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

fn run_agreement(args: &AgreementArgs, quiet: bool) -> anyhow::Result<ExitCode> {
    let store = Store::open(&store_path(&args.dir))?;
    let items = store.items()?;
    let ratings = store.ratings()?;
    let parents = match CategoryParents::from_meta(&store.meta()?) {
        Some(parents) => parents,
        None => {
            CategoryParents::from_taxonomy(&super::analyze::load_taxonomy(None, Some(&args.dir))?)
        }
    };
    let analysis_path = args.dir.join(super::analyze::ANALYSIS_FILE);
    let analysis: Option<Analysis> = if analysis_path.exists() {
        let text = std::fs::read_to_string(&analysis_path)
            .with_context(|| format!("{}: cannot read", analysis_path.display()))?;
        Some(
            serde_json::from_str(&text)
                .with_context(|| format!("{}: not an analysis", analysis_path.display()))?,
        )
    } else {
        None
    };
    let result = agreement(&items, &ratings, &parents, analysis.as_ref());
    let path = args.dir.join(AGREEMENT_FILE);
    let mut bytes = serde_json::to_vec_pretty(&result)?;
    bytes.push(b'\n');
    write_atomic(&path, &bytes)?;
    // The analysis carries the human validation too, so that the report shows it.
    if let Some(mut analysis) = analysis {
        analysis.human_validation = Some(result.clone());
        super::analyze::write(&analysis, &args.dir)?;
    }
    if args.json {
        let mut out = std::io::stdout().lock();
        out.write_all(&bytes)?;
    } else {
        print_agreement(&result)?;
    }
    note(quiet, format!("wrote {}", path.display()));
    Ok(ExitCode::SUCCESS)
}

fn opt(value: Option<f64>, digits: usize) -> String {
    value.map_or_else(|| "–".into(), |v| format!("{v:.digits$}"))
}

fn print_agreement(result: &Agreement) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
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
    if !result.notes.is_empty() {
        writeln!(out, "\nNotes")?;
        for line in &result.notes {
            writeln!(out, "- {line}")?;
        }
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
