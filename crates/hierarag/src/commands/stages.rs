//! `hierarag generate`, `answer` and `evaluate`: one stage each over files, with progress
//! bars; `hierarag run` chains them through the same functions.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use hierarag_corpus::{CorpusSpec, OnError};
use hierarag_generate::{BenchmarkRecord, Generator};
use hierarag_llm::{ChatClient, Embedder, LlmConfig};
use hierarag_pipeline::{
    ANSWERS_FILE, AnswerStage, BENCHMARK_FILE, EvaluateStage, Failure, GenerateStage, Manifest,
    OutputFile, Progress, REJECTS_FILE, SCORES_FILE, StageOutcome, StageRecord, StageUsage,
    failures_file, file_fingerprint, file_sha256, now_unix_s, read_input,
};
use hierarag_plan::PlanItem;
use hierarag_rag::{
    AnswerRecord, Answerer, Bm25Retriever, DenseProgress, DenseRetriever, FusionSettings,
    HybridRetriever, Retriever, RetrieverKind,
};
use indicatif::ProgressBar;

use crate::output::{note, progress_bar};
use crate::run_config::RunConfig;

/// A progress bar as a stage's [`Progress`].
pub struct Bar(pub ProgressBar);

impl Progress for Bar {
    fn start(&self, total: u64, already_done: u64) {
        self.0.set_length(total);
        self.0.set_position(already_done);
        self.0.reset_eta();
    }
    fn advance(&self, n: u64) {
        self.0.inc(n);
    }
}

pub fn stage_bar(quiet: bool, stage: &str) -> Bar {
    Bar(progress_bar(
        quiet,
        Some(0),
        &format!("{stage:>9} [{{bar:30}}] {{pos}}/{{len}} {{per_sec}} eta {{eta}} [{{elapsed}}]"),
    ))
}

pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// The plan items of a plan file (errors name file, line and field).
pub fn read_plan(path: &Path) -> anyhow::Result<Vec<PlanItem>> {
    Ok(read_input(path, |item: &PlanItem| item.item_id.as_str())?)
}

/// The texts of the documents `ids`, in one streaming pass over the corpus.
pub fn collect_documents(
    spec: &CorpusSpec,
    on_error: OnError,
    ids: &HashSet<&str>,
    quiet: bool,
) -> anyhow::Result<HashMap<String, String>> {
    let bar = progress_bar(
        quiet,
        None,
        "{spinner} reading the corpus for the documents needed: {pos} read [{elapsed}]",
    );
    let mut found = HashMap::with_capacity(ids.len());
    let mut documents = spec.documents(on_error)?;
    for (n, document) in documents.by_ref().enumerate() {
        let document = document?;
        if ids.contains(document.id.as_str()) {
            found.insert(document.id, document.text);
            if found.len() == ids.len() {
                break;
            }
        }
        if n % 4096 == 0 {
            bar.set_position(n as u64);
        }
    }
    bar.finish_and_clear();
    Ok(found)
}

/// Builds one chat client per distinct model config of a role.
fn client(config: &LlmConfig, run_dir: &Path, quiet: bool) -> anyhow::Result<ChatClient> {
    super::llm::chat_client(config, run_dir, quiet)
}

/// Usage of a client with its role and cost.
fn usage(role: &str, client: &ChatClient, config: &LlmConfig) -> StageUsage {
    let summary = client.usage();
    StageUsage {
        role: role.into(),
        cost: config.cost(&summary),
        summary,
    }
}

/// Prints a stage's end: counts, usage, failures.
fn report(stage: &str, outcome: &StageOutcome, usages: &[StageUsage], dir: &Path, quiet: bool) {
    note(
        quiet,
        format!(
            "{stage}: {} of {} done ({} from an earlier pass), {} failed, {:.1} s",
            outcome.resumed + outcome.written,
            outcome.items,
            outcome.resumed,
            outcome.failures.len(),
            outcome.seconds
        ),
    );
    for usage in usages {
        let cost = usage
            .cost
            .map(|c| format!(", cost {c:.4}"))
            .unwrap_or_default();
        note(quiet, format!("  {}: {}{cost}", usage.role, usage.summary));
    }
    if let Some(reason) = &outcome.stopped {
        // Always shown, even with --quiet: it is why the exit code is 1.
        eprintln!(
            "{stage} stopped: {reason}; the items done are kept, rerun to go on once it is fixed"
        );
    }
    if !outcome.failures.is_empty() {
        // Failures are always shown, even with --quiet: they are why the exit code is 1.
        eprintln!(
            "{stage}: {} item{} failed (listed in {}):",
            outcome.failures.len(),
            if outcome.failures.len() == 1 { "" } else { "s" },
            failures_file(dir, stage).display()
        );
        for failure in outcome.failures.iter().take(10) {
            eprintln!("  {}: {}", failure.item_id, failure.reason);
        }
        if outcome.failures.len() > 10 {
            eprintln!("  … and {} more", outcome.failures.len() - 10);
        }
    }
}

/// An output file's hash and record count (one record a line), in one read.
fn output(path: &Path) -> anyhow::Result<OutputFile> {
    let (sha256, records) = file_fingerprint(path)?.unwrap_or_default();
    Ok(OutputFile { sha256, records })
}

/// Records a stage in the manifest of `run_dir`.
fn record_stage(
    run_dir: &Path,
    stage: &str,
    started: u64,
    outcome: &StageOutcome,
    inputs: &[&Path],
    outputs: &[&Path],
    usage: Vec<StageUsage>,
) -> anyhow::Result<()> {
    let mut record = StageRecord {
        started_unix_s: started,
        finished_unix_s: now_unix_s(),
        seconds: outcome.seconds,
        items: outcome.items,
        resumed: outcome.resumed,
        written: outcome.written,
        failed: outcome.failures.len(),
        failures: outcome.failures.clone(),
        stopped: outcome.stopped.clone(),
        usage,
        ..StageRecord::default()
    };
    for path in inputs {
        if let Some(hash) = file_sha256(path)? {
            record.inputs.insert(file_name(path), hash);
        }
    }
    for path in outputs {
        record.outputs.insert(file_name(path), output(path)?);
    }
    Manifest::update(run_dir, |manifest| {
        manifest.stages.insert(stage.to_string(), record);
    })?;
    Ok(())
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// The generate stage: plan + corpus → benchmark.jsonl, rejects.jsonl.
pub fn generate(
    config: &RunConfig,
    plan_path: &Path,
    corpus: &CorpusSpec,
    on_error: OnError,
    out_dir: &Path,
    quiet: bool,
) -> anyhow::Result<StageOutcome> {
    let started = now_unix_s();
    std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let plan = read_plan(plan_path)?;
    let taxonomy = super::taxonomy::load(config.taxonomy.as_deref())?;
    let needed: HashSet<&str> = plan
        .iter()
        .flat_map(|item| item.doc_ids.iter().map(String::as_str))
        .collect();
    let documents = collect_documents(corpus, on_error, &needed, quiet)?;
    let generator_client = client(config.generator_llm(), out_dir, quiet)?;
    let filter_client = if config.generate.filter {
        Some(client(config.filter_llm(), out_dir, quiet)?)
    } else {
        None
    };
    let generator = Generator::new(
        &taxonomy,
        &generator_client,
        filter_client.as_ref(),
        config.generate.clone(),
    );
    let stage = GenerateStage {
        plan: &plan,
        documents: &documents,
        generator: &generator,
        out_dir,
        concurrency: config.generate_concurrency,
    };
    let bar = stage_bar(quiet, "generate");
    let outcome = runtime()?.block_on(stage.run(&bar))?;
    bar.0.finish_and_clear();
    let mut usages = vec![usage(
        "generator",
        &generator_client,
        config.generator_llm(),
    )];
    if let Some(filter) = &filter_client {
        usages.push(usage("filter", filter, config.filter_llm()));
    }
    report("generate", &outcome, &usages, out_dir, quiet);
    record_stage(
        out_dir,
        "generate",
        started,
        &outcome,
        &[plan_path],
        &[&out_dir.join(BENCHMARK_FILE), &out_dir.join(REJECTS_FILE)],
        usages,
    )?;
    Ok(outcome)
}

/// The retriever of a config over an index; dense and hybrid embed every chunk once (stored
/// beside the index and reused) with the `[embeddings]` model.
pub fn retriever(
    kind: RetrieverKind,
    index_dir: &Path,
    config: &RunConfig,
    runtime: &tokio::runtime::Runtime,
    quiet: bool,
) -> anyhow::Result<Box<dyn Retriever>> {
    let index = Arc::new(
        hierarag_index::Bm25Index::open(index_dir)
            .with_context(|| format!("opening the index {}", index_dir.display()))?,
    );
    if kind == RetrieverKind::Bm25 {
        return Ok(Box::new(Bm25Retriever::new(index)));
    }
    // The chunk embeddings are stored beside the index; a response cache would only copy them.
    let mut embeddings = config.embeddings.clone();
    embeddings.cache = hierarag_llm::CacheSetting::Off;
    let embedder = Arc::new(super::llm::embedder(&embeddings, index_dir, quiet)?);
    let cache_dir = DenseRetriever::default_cache_dir(&index, &embedder);
    let bar = progress_bar(
        quiet,
        Some(0),
        "    embed [{bar:30}] {pos}/{len} chunks {per_sec} eta {eta} [{elapsed}]",
    );
    let dense = runtime.block_on(DenseRetriever::build(
        index.clone(),
        embedder,
        &cache_dir,
        &mut |progress| match progress {
            DenseProgress::Reused { .. } => {}
            DenseProgress::Building {
                reason, n_chunks, ..
            } => {
                bar.set_length(n_chunks);
                bar.println(format!(
                    "embedding {n_chunks} chunks for dense retrieval ({reason})"
                ));
            }
            DenseProgress::Embedded { done, .. } => bar.set_position(done),
        },
    ))?;
    bar.finish_and_clear();
    match kind {
        RetrieverKind::Dense => Ok(Box::new(dense)),
        _ => Ok(Box::new(HybridRetriever::new(
            Bm25Retriever::new(index),
            dense,
            FusionSettings::default(),
        )?)),
    }
}

/// The answer stage: benchmark + index → answers.jsonl.
pub fn answer(
    config: &RunConfig,
    benchmark_path: &Path,
    index_dir: &Path,
    out_dir: &Path,
    quiet: bool,
) -> anyhow::Result<StageOutcome> {
    let started = now_unix_s();
    std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let benchmark: Vec<BenchmarkRecord> =
        read_input(benchmark_path, |r: &BenchmarkRecord| r.id.as_str())?;
    let runtime = runtime()?;
    let retriever = retriever(config.retriever, index_dir, config, &runtime, quiet)?;
    let answer_client = client(config.answerer_llm(), out_dir, quiet)?;
    let answerer = Answerer::new(retriever.as_ref(), &answer_client, config.answer.clone());
    let stage = AnswerStage {
        benchmark: &benchmark,
        answerer: &answerer,
        out_dir,
        concurrency: config.answer_concurrency,
        seed: config.run.seed,
    };
    let bar = stage_bar(quiet, "answer");
    let outcome = runtime.block_on(stage.run(&bar))?;
    bar.0.finish_and_clear();
    let usages = vec![usage("answerer", &answer_client, config.answerer_llm())];
    report("answer", &outcome, &usages, out_dir, quiet);
    record_stage(
        out_dir,
        "answer",
        started,
        &outcome,
        &[benchmark_path],
        &[&out_dir.join(ANSWERS_FILE)],
        usages,
    )?;
    Ok(outcome)
}

/// The evaluate stage: benchmark + answers → scores.jsonl.
pub fn evaluate(
    config: &RunConfig,
    benchmark_path: &Path,
    answers_path: &Path,
    out_dir: &Path,
    quiet: bool,
) -> anyhow::Result<StageOutcome> {
    let started = now_unix_s();
    std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let benchmark: Vec<BenchmarkRecord> =
        read_input(benchmark_path, |r: &BenchmarkRecord| r.id.as_str())?;
    let answers: Vec<AnswerRecord> = read_input(answers_path, |r: &AnswerRecord| r.id.as_str())?;
    let embedder: Arc<Embedder> =
        Arc::new(super::llm::embedder(&config.embeddings, out_dir, quiet)?);
    let stage = EvaluateStage {
        benchmark: &benchmark,
        answers: &answers,
        embedder: &embedder,
        out_dir,
        batch: config.evaluate.batch,
    };
    let bar = stage_bar(quiet, "evaluate");
    let outcome = runtime()?.block_on(stage.run(&bar))?;
    bar.0.finish_and_clear();
    let summary = embedder.usage();
    let usages = vec![StageUsage {
        role: "embeddings".into(),
        cost: None,
        summary,
    }];
    report("evaluate", &outcome, &usages, out_dir, quiet);
    record_stage(
        out_dir,
        "evaluate",
        started,
        &outcome,
        &[benchmark_path, answers_path],
        &[&out_dir.join(SCORES_FILE)],
        usages,
    )?;
    Ok(outcome)
}

/// Exit code 1 when any item failed.
pub fn exit_code(outcomes: &[&StageOutcome]) -> ExitCode {
    if outcomes.iter().all(|o| o.ok()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::output::EXIT_BAD_INPUT)
    }
}

/// Where a stand-alone stage writes: `--out`, else the directory of its main input.
pub fn out_dir(out: Option<&Path>, input: &Path) -> PathBuf {
    out.map(Path::to_path_buf).unwrap_or_else(|| {
        input
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
    })
}

/// Failures of every stage, for the final summary.
pub fn all_failures<'a>(outcomes: &'a [&'a StageOutcome]) -> Vec<&'a Failure> {
    outcomes.iter().flat_map(|o| o.failures.iter()).collect()
}

/// `hierarag generate`.
#[derive(Debug, clap::Args)]
pub struct GenerateArgs {
    /// The plan (from `hierarag plan`).
    #[arg(long, value_name = "FILE")]
    pub plan: PathBuf,
    /// The corpus the plan was made from (its documents' texts go into the prompts).
    #[command(flatten)]
    pub corpus: crate::cli::CorpusArgs,
    /// A run config whose [llm], [generate], [filter] and [taxonomy] tables set the models
    /// and settings; the embedded SmolLM2 with the defaults when not given.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Where benchmark.jsonl and rejects.jsonl go [default: the plan's directory].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Candidates asked for per call (overrides the config).
    #[arg(long, value_name = "K")]
    pub candidates: Option<usize>,
    /// Skip the filtering call: keep a candidate that passes the checks without a model.
    #[arg(long)]
    pub no_filter: bool,
}

/// `hierarag answer`.
#[derive(Debug, clap::Args)]
pub struct AnswerArgs {
    /// The benchmark (from `hierarag generate`).
    #[arg(long, value_name = "FILE")]
    pub benchmark: PathBuf,
    /// The index of the corpus (from `hierarag index`).
    #[arg(long, value_name = "DIR")]
    pub index: PathBuf,
    /// A run config whose [llm]/[answer] tables set the model and settings; the embedded
    /// SmolLM2 with the defaults when not given.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The retriever (overrides [answer] retriever).
    #[arg(long, value_enum)]
    pub retriever: Option<RetrieverArg>,
    /// Chunks given to the model (overrides [answer] top_k; default 10).
    #[arg(long, value_name = "K")]
    pub top_k: Option<usize>,
    /// Sampling temperature (overrides [answer] temperature; default 0.6).
    #[arg(long)]
    pub temperature: Option<f32>,
    /// Seed of the answers' sampling (overrides [run] seed; default 42).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Where answers.jsonl goes [default: the benchmark's directory].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum RetrieverArg {
    /// BM25 over the index's chunks (the paper's).
    Bm25,
    /// MiniLM embeddings, exact cosine search.
    Dense,
    /// Reciprocal rank fusion of BM25 and dense.
    Hybrid,
}

/// `hierarag evaluate`.
#[derive(Debug, clap::Args)]
pub struct EvaluateArgs {
    /// The benchmark (reference answers and source documents).
    #[arg(long, value_name = "FILE")]
    pub benchmark: PathBuf,
    /// The answers (from `hierarag answer`).
    #[arg(long, value_name = "FILE")]
    pub answers: PathBuf,
    /// A run config whose [embeddings] table sets the embedding model; the embedded MiniLM
    /// when not given.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Where scores.jsonl goes [default: the answers' directory].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

pub fn run_generate(args: &GenerateArgs, quiet: bool) -> anyhow::Result<ExitCode> {
    let mut config = crate::run_config::model_config(args.config.as_deref())?;
    if let Some(k) = args.candidates {
        config.generate.candidates = k.max(1);
    }
    if args.no_filter {
        config.generate.filter = false;
    }
    let spec = super::index::corpus_spec(&args.corpus, quiet)?;
    let on_error = match args.corpus.on_error {
        crate::cli::OnErrorArg::Fail => OnError::Fail,
        crate::cli::OnErrorArg::Skip => OnError::Skip,
    };
    let out = out_dir(args.out.as_deref(), &args.plan);
    let outcome = generate(&config, &args.plan, &spec, on_error, &out, quiet)?;
    note(
        quiet,
        format!("wrote {}", out.join(BENCHMARK_FILE).display()),
    );
    Ok(exit_code(&[&outcome]))
}

pub fn run_answer(args: &AnswerArgs, quiet: bool) -> anyhow::Result<ExitCode> {
    let mut config = crate::run_config::model_config(args.config.as_deref())?;
    if let Some(retriever) = args.retriever {
        config.retriever = match retriever {
            RetrieverArg::Bm25 => RetrieverKind::Bm25,
            RetrieverArg::Dense => RetrieverKind::Dense,
            RetrieverArg::Hybrid => RetrieverKind::Hybrid,
        };
    }
    if let Some(k) = args.top_k {
        config.answer.top_k = k.max(1);
    }
    if let Some(t) = args.temperature {
        config.answer.temperature = t;
    }
    if let Some(seed) = args.seed {
        config.run.seed = seed;
    }
    let out = out_dir(args.out.as_deref(), &args.benchmark);
    let outcome = answer(&config, &args.benchmark, &args.index, &out, quiet)?;
    note(quiet, format!("wrote {}", out.join(ANSWERS_FILE).display()));
    Ok(exit_code(&[&outcome]))
}

pub fn run_evaluate(args: &EvaluateArgs, quiet: bool) -> anyhow::Result<ExitCode> {
    let config = crate::run_config::model_config(args.config.as_deref())?;
    let out = out_dir(args.out.as_deref(), &args.answers);
    let outcome = evaluate(&config, &args.benchmark, &args.answers, &out, quiet)?;
    note(quiet, format!("wrote {}", out.join(SCORES_FILE).display()));
    Ok(exit_code(&[&outcome]))
}
