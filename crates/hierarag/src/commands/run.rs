//! `hierarag run CONFIG.toml`: index → plan → generate → answer → evaluate in one run
//! directory, resuming whatever an earlier pass left.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, bail};
use hierarag_corpus::OnError;
use hierarag_generate::BenchmarkRecord;
use hierarag_index::BuildOptions;
use hierarag_pipeline::{
    ANSWERS_FILE, BENCHMARK_FILE, Manifest, OutputFile, PLAN_FILE, SCORES_FILE, ScoreRecord,
    StageOutcome, StageRecord, file_sha256, now_unix_s, read_records, write_atomic,
};

use super::analyze::TAXONOMY_FILE;
use crate::cli::{ChunkArgs, CorpusArgs, FormatArg, OnErrorArg, PlanArgs};
use crate::output::note;
use crate::run_config::RunConfig;

/// `hierarag run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The run config (TOML): [run] dir and seed, [corpus], [design], [llm], … — see
    /// examples/quickstart.toml.
    #[arg(value_name = "CONFIG")]
    pub config: PathBuf,
    /// The run directory (overrides [run] dir).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Continue a run directory whose manifest records a different config (results made
    /// with the old settings are kept and mixed with new ones).
    #[arg(long)]
    pub reconfigure: bool,
    /// Do not send the one-token request to every configured endpoint before the run starts
    /// (API key variables are still checked). Useful to rerun a run whose replies are all in
    /// the response cache while the server is down.
    #[arg(long)]
    pub no_check_endpoints: bool,
}

pub fn run(args: &RunArgs, quiet: bool) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let mut config = RunConfig::load(&args.config)?;
    if let Some(dir) = &args.dir {
        config.run.dir = dir.clone();
    }
    let dir = config.run.dir.clone();
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    check_config(&dir, &config, args.reconfigure)?;
    let corpus_args = corpus_args(&config);
    let plan_path = dir.join(PLAN_FILE);
    let plan_args = PlanArgs {
        design: None,
        corpus: corpus_args.clone(),
        taxonomy: config.taxonomy.clone(),
        config: Some(args.config.clone()),
        seed: config.run.seed,
        per_dimension: None,
        per_level: None,
        per_cell: None,
        dimensions: Vec::new(),
        factors: Vec::new(),
        min_words: config.plan.min_words,
        max_words: config.plan.max_words,
        out: Some(plan_path.clone()),
        overwrite: false,
        dry_run: false,
        candidates: config.generate.candidates,
        no_filter: !config.generate.filter,
    };
    // Everything that can be checked without the corpus is checked before any stage runs:
    // the taxonomy and the design's dimensions, categories and personas, the API key
    // variables, and (one small request each) the endpoints.
    let taxonomy = super::taxonomy::load(config.taxonomy.as_deref())?;
    super::plan::design(&plan_args, &taxonomy)?;
    super::llm::check_models(&config, !args.no_check_endpoints, quiet)?;
    Manifest::update(&dir, |manifest| {
        manifest.config = comparable(&config);
        manifest.seed = config.run.seed;
    })?;
    note(
        quiet,
        format!(
            "run {} → {} (generator {}, answerer {})",
            args.config.display(),
            dir.display(),
            describe(config.generator_llm()),
            describe(config.answerer_llm())
        ),
    );

    // 1. index
    let spec = super::index::corpus_spec(&corpus_args, quiet)?;
    let on_error = match corpus_args.on_error {
        OnErrorArg::Fail => OnError::Fail,
        OnErrorArg::Skip => OnError::Skip,
    };
    let index_dir = dir.join("index");
    let stage_started = now_unix_s();
    let clock = Instant::now();
    let chunking = ChunkArgs {
        chunk_size: config.index.chunk_size,
        chunk_overlap: config.index.chunk_overlap,
    };
    let options = BuildOptions {
        chunking: super::index::chunk_params(&chunking),
        on_error,
        writer_heap_bytes: config.index.writer_heap_mb << 20,
        threads: config.index.threads,
        overwrite: false,
    };
    let built = super::index::build(&spec, &index_dir, &options, quiet)?;
    let counts = built.manifest().counts.clone();
    simple_stage(
        &dir,
        "index",
        stage_started,
        clock,
        counts.documents as usize,
        &[&index_dir.join("manifest.json")],
    )?;

    // 2. plan
    let stage_started = now_unix_s();
    let clock = Instant::now();
    super::plan::run(&plan_args, quiet).map_err(|error| {
        if error.is::<super::plan::DifferentPlan>() {
            error.context(
                "making the plan (a different plan.jsonl in the run directory means the [design] \
or corpus changed: use a fresh --dir)",
            )
        } else {
            error
        }
    })?;
    let n_items = read_records::<serde_json::Value>(&plan_path)?.len();
    // The taxonomy beside the plan, so that analyze and report find the same categories.
    let taxonomy_path = dir.join(TAXONOMY_FILE);
    write_atomic(&taxonomy_path, taxonomy.to_toml_string().as_bytes())?;
    simple_stage(
        &dir,
        "plan",
        stage_started,
        clock,
        n_items,
        &[&plan_path, &taxonomy_path],
    )?;

    // 3–5. generate, answer, evaluate; a stage that stopped (an endpoint refused the client)
    // ends the run there.
    let generated = super::stages::generate(&config, &plan_path, &spec, on_error, &dir, quiet)?;
    if let Some(code) = stopped_at("generate", &generated) {
        return Ok(code);
    }
    let answered =
        super::stages::answer(&config, &dir.join(BENCHMARK_FILE), &index_dir, &dir, quiet)?;
    if let Some(code) = stopped_at("answer", &answered) {
        return Ok(code);
    }
    let evaluated = super::stages::evaluate(
        &config,
        &dir.join(BENCHMARK_FILE),
        &dir.join(ANSWERS_FILE),
        &dir,
        quiet,
    )?;
    if let Some(code) = stopped_at("evaluate", &evaluated) {
        return Ok(code);
    }

    // 6. analyze
    let stage_started = now_unix_s();
    let clock = Instant::now();
    let analysis = super::analyze::analyze_files(
        &dir.join(BENCHMARK_FILE),
        &dir.join(SCORES_FILE),
        Some(&dir.join(ANSWERS_FILE)),
        &taxonomy,
        &config.analysis,
    )?;
    let mut analysis = analysis;
    analysis.human_validation = super::analyze::load_agreement(&dir)?;
    let analysis_path = super::analyze::write(&analysis, &dir)?;
    simple_stage(
        &dir,
        "analyze",
        stage_started,
        clock,
        analysis.counts.analysed,
        &[&analysis_path],
    )?;

    // 7. report
    let stage_started = now_unix_s();
    let clock = Instant::now();
    let (report_md, report_html) = super::report::write(&dir, &analysis, &taxonomy, None, &dir)?;
    simple_stage(
        &dir,
        "report",
        stage_started,
        clock,
        analysis.counts.analysed,
        &[&report_md],
    )?;

    let outcomes = [&generated, &answered, &evaluated];
    print_summary(&dir, &outcomes, started.elapsed().as_secs_f64())?;
    super::analyze::print_recommendations(&analysis)?;
    note(quiet, format!("report: {}", report_html.display()));
    Ok(super::stages::exit_code(&outcomes))
}

/// Exit code 1 when `outcome` stopped early: the stage has said why; the later stages are
/// not run.
fn stopped_at(stage: &str, outcome: &StageOutcome) -> Option<ExitCode> {
    outcome.stopped.as_ref()?;
    const STAGES: [&str; 5] = ["generate", "answer", "evaluate", "analyze", "report"];
    let after = STAGES
        .iter()
        .position(|s| *s == stage)
        .map_or(&STAGES[..0], |i| &STAGES[i + 1..]);
    eprintln!(
        "run stopped at {stage}; not run: {} (what is done is kept)",
        after.join(", ")
    );
    Some(ExitCode::from(crate::output::EXIT_BAD_INPUT))
}

/// The resolved config as recorded in the manifest (without where it was read from).
fn comparable(config: &RunConfig) -> serde_json::Value {
    let mut value = config.to_json();
    if let Some(object) = value.as_object_mut() {
        object.remove("source");
    }
    value
}

/// A run directory continues only with the config it was started with (unless
/// `--reconfigure`), so that one benchmark never mixes settings silently.
fn check_config(dir: &Path, config: &RunConfig, reconfigure: bool) -> anyhow::Result<()> {
    let manifest = Manifest::load(dir)?;
    if manifest.config.is_null() || reconfigure {
        return Ok(());
    }
    // The analysis settings change no record: a run continues with other ones.
    let without_analysis = |mut value: serde_json::Value| {
        if let Some(object) = value.as_object_mut() {
            object.remove("analysis");
        }
        value
    };
    let now = without_analysis(comparable(config));
    let before = without_analysis(manifest.config.clone());
    if before == now {
        return Ok(());
    }
    let changed: Vec<String> = match (before.as_object(), now.as_object()) {
        (Some(old), Some(new)) => new
            .iter()
            .filter(|(key, value)| old.get(*key) != Some(value))
            .map(|(key, _)| key.clone())
            .collect(),
        _ => vec!["(all)".into()],
    };
    bail!(
        "{} was started with a different config (changed: {}); use another --dir, or pass \
--reconfigure to continue it with the new settings",
        dir.display(),
        changed.join(", ")
    )
}

fn describe(config: &hierarag_llm::LlmConfig) -> String {
    match config.backend {
        hierarag_llm::ChatBackendKind::Embedded => "embedded SmolLM2-135M".into(),
        backend => format!("{backend} {}", config.model),
    }
}

fn corpus_args(config: &RunConfig) -> CorpusArgs {
    let corpus = config
        .corpus
        .as_ref()
        .expect("RunConfig::load requires a [corpus] table");
    CorpusArgs {
        inputs: corpus.inputs.clone(),
        format: corpus.format.as_deref().map(|f| match f {
            "parquet" => FormatArg::Parquet,
            "textdir" => FormatArg::Textdir,
            _ => FormatArg::Jsonl,
        }),
        id_field: corpus.id_field.clone(),
        text_field: corpus.text_field.clone(),
        on_error: if corpus.on_error == "skip" {
            OnErrorArg::Skip
        } else {
            OnErrorArg::Fail
        },
    }
}

/// Records a stage without LLM calls or failures in the manifest.
fn simple_stage(
    dir: &Path,
    stage: &str,
    started: u64,
    clock: Instant,
    items: usize,
    outputs: &[&Path],
) -> anyhow::Result<()> {
    let mut record = StageRecord {
        started_unix_s: started,
        finished_unix_s: now_unix_s(),
        seconds: clock.elapsed().as_secs_f64(),
        items,
        written: items,
        ..StageRecord::default()
    };
    for path in outputs {
        let name = path.strip_prefix(dir).unwrap_or(path).display().to_string();
        record.outputs.insert(
            name,
            OutputFile {
                sha256: file_sha256(path)?.unwrap_or_default(),
                records: items,
            },
        );
    }
    Manifest::update(dir, |m| {
        m.stages.insert(stage.to_string(), record);
    })?;
    Ok(())
}

/// Means over the scored questions, overall and per category.
fn print_summary(dir: &Path, outcomes: &[&StageOutcome], seconds: f64) -> anyhow::Result<()> {
    let benchmark: Vec<BenchmarkRecord> = read_records(&dir.join(BENCHMARK_FILE))?;
    let scores: Vec<ScoreRecord> = read_records(&dir.join(SCORES_FILE))?;
    let categories: BTreeMap<&str, &BenchmarkRecord> =
        benchmark.iter().map(|r| (r.id.as_str(), r)).collect();
    let mut groups: BTreeMap<String, Vec<&ScoreRecord>> = BTreeMap::new();
    for score in &scores {
        groups.entry("all".into()).or_default().push(score);
        if let Some(record) = categories.get(score.id.as_str()) {
            for category in &record.categories {
                groups
                    .entry(format!(
                        "{}/{}:{}",
                        category.dimension,
                        category.level.as_str(),
                        category.category
                    ))
                    .or_default()
                    .push(score);
            }
        }
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:<44} {:>5} {:>6} {:>7} {:>6} {:>6} {:>7} {:>6} {:>7}",
        "questions", "n", "AP", "nDCG@10", "R@10", "CS", "ROUGE-1", "BLEU", "refused"
    )?;
    for (name, group) in &groups {
        let n = group.len() as f64;
        // `+ 0.0` turns a mean of -0.0 into 0.0 for printing.
        let mean = |f: fn(&ScoreRecord) -> f64| group.iter().map(|s| f(s)).sum::<f64>() / n + 0.0;
        writeln!(
            out,
            "{:<44} {:>5} {:>6.3} {:>7.3} {:>6.3} {:>6.3} {:>7.3} {:>6.2} {:>7.3}",
            name,
            group.len(),
            mean(|s| s.ap),
            mean(|s| s.ndcg_10),
            mean(|s| s.recall_10),
            mean(|s| s.cs),
            mean(|s| s.rouge1),
            mean(|s| s.bleu),
            mean(|s| f64::from(u8::from(s.refused)))
        )?;
    }
    let failures = super::stages::all_failures(outcomes);
    writeln!(
        out,
        "\nresults in {}: {} (questions), {}, {}, {}, manifest.json — {} question{} scored in {:.0} s{}",
        dir.display(),
        BENCHMARK_FILE,
        ANSWERS_FILE,
        SCORES_FILE,
        super::analyze::ANALYSIS_FILE,
        scores.len(),
        if scores.len() == 1 { "" } else { "s" },
        seconds,
        if failures.is_empty() {
            String::new()
        } else {
            format!(
                "; {} item{} failed (see the *.failures.jsonl files; rerun to retry them)",
                failures.len(),
                if failures.len() == 1 { "" } else { "s" }
            )
        }
    )?;
    Ok(())
}
