//! The generate, answer and evaluate stages over a run directory: clients built from the run
//! config, the pipeline crate's stage run on a runtime, its end reported and recorded in the
//! manifest.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use hierarag_corpus::{CorpusSpec, OnError};
use hierarag_generate::{BenchmarkRecord, Generator};
use hierarag_llm::{BatchLedger, ChatClient, EmbedBackendKind, LlmConfig};
use hierarag_metrics::TextTokenizers;
use hierarag_pipeline::{
    AnswerStage, EvaluateStage, Failure, GenerateStage, StageOutcome, file_fingerprint,
    file_sha256, read_input, write_atomic, write_failures, write_values_atomic,
};
use hierarag_plan::PlanItem;
use hierarag_rag::{
    AnswerRecord, Answerer, Bm25Retriever, DenseProgress, DenseRetriever, FusionSettings,
    HnswProgress, HybridRetriever, Retriever, RetrieverKind,
};

use crate::config::{CommandSystemConfig, FileSystem, HttpSystemConfig, RunConfig};
use crate::layout::{RunDir, SystemDir};
use crate::manifest::{Manifest, OutputFile, Spent, StageRecord, StageUsage, now_unix_s};
use crate::models::{batch_client, embedder};
use hierarag_pipeline::{Reporter, StageProgress};

/// A multi-threaded runtime for the stages.
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

/// Usage of a client with its role and cost.
pub(crate) fn usage(role: &str, client: &ChatClient, config: &LlmConfig) -> StageUsage {
    let summary = client.usage();
    StageUsage {
        role: role.into(),
        cost: config.cost(&summary, client.batch_mode()),
        summary,
    }
}

/// One pass of a stage over a run directory, from its start to its manifest entry: the one
/// way every stage starts (its folder made, the start time taken), shows its progress (a
/// counter named after it while the pipeline's pass runs) and ends (counts, usage, why it
/// stopped and its failures reported; inputs, outputs and usage recorded in the manifest).
pub(crate) struct StageRun<'a> {
    run: &'a RunDir,
    key: String,
    started: u64,
    reporter: &'a dyn Reporter,
}

impl<'a> StageRun<'a> {
    /// Starts the stage `key` of `run`, whose files go to `dir` (made here).
    pub(crate) fn start(
        run: &'a RunDir,
        key: impl Into<String>,
        dir: &Path,
        reporter: &'a dyn Reporter,
    ) -> anyhow::Result<StageRun<'a>> {
        let started = now_unix_s();
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(StageRun {
            run,
            key: key.into(),
            started,
            reporter,
        })
    }

    pub(crate) fn key(&self) -> &str {
        &self.key
    }

    /// The progress of the pipeline's pass: a counter of items, cleared when it is dropped
    /// (pass it as a temporary: `stage.run(&run.progress())`).
    pub(crate) fn progress(&self) -> StageProgress {
        StageProgress(self.reporter.counter(&self.key, "items", Some(0)))
    }

    /// The pipeline's passes of this stage: one, or, when one of `clients` is in batch mode,
    /// passes with batch rounds between them until none defers a request (the batches recorded
    /// in the run's `batches.jsonl`). `pass` runs one pass, with the stage's progress.
    pub(crate) fn passes<F, Fut>(
        &self,
        runtime: &tokio::runtime::Runtime,
        clients: &[&ChatClient],
        pass: F,
    ) -> anyhow::Result<StageOutcome>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<StageOutcome, hierarag_pipeline::PipelineError>>,
    {
        let ledger = BatchLedger::new(&self.run.batches());
        Ok(runtime.block_on(hierarag_pipeline::in_batches(
            clients,
            &ledger,
            self.reporter,
            pass,
        ))?)
    }

    /// Reports the end of the pass and records it in the manifest: `inputs` hashed, `outputs`
    /// hashed and counted, `usages` with their costs.
    pub(crate) fn finish(
        self,
        outcome: &StageOutcome,
        usages: Vec<StageUsage>,
        failures_path: &Path,
        inputs: &[&Path],
        outputs: &[&Path],
    ) -> anyhow::Result<()> {
        self.report(outcome, &usages, failures_path);
        let mut record = StageRecord {
            started_unix_s: self.started,
            finished_unix_s: now_unix_s(),
            seconds: outcome.seconds,
            items: outcome.items,
            resumed: outcome.resumed,
            written: outcome.written,
            failed: outcome.failures.len(),
            failures: outcome.failures.clone(),
            stopped: outcome.stopped.clone(),
            usage: usages,
            ..StageRecord::default()
        };
        for path in inputs {
            if let Some(hash) = file_sha256(path)? {
                record.inputs.insert(file_name(path), hash);
            }
        }
        for path in outputs {
            let (sha256, records) = file_fingerprint(path)?.unwrap_or_default();
            record
                .outputs
                .insert(file_name(path), OutputFile { sha256, records });
        }
        let spent = record.usage.iter().filter(|u| u.role != "embeddings").fold(
            Spent::default(),
            |sum, u| Spent {
                cost: sum.cost + u.cost.unwrap_or(0.0),
                tokens: sum.tokens + u.summary.prompt_tokens + u.summary.completion_tokens,
            },
        );
        Manifest::update(self.run, |manifest| {
            manifest.spent.cost += spent.cost;
            manifest.spent.tokens += spent.tokens;
            manifest.stages.insert(self.key, record);
        })?;
        Ok(())
    }

    /// Counts and usage as notes; why the stage stopped and its failures always.
    fn report(&self, outcome: &StageOutcome, usages: &[StageUsage], failures_path: &Path) {
        let (stage, reporter) = (&self.key, self.reporter);
        reporter.note(&format!(
            "{stage}: {} of {} done ({} from an earlier pass), {} failed, {:.1} s",
            outcome.resumed + outcome.written,
            outcome.items,
            outcome.resumed,
            outcome.failures.len(),
            outcome.seconds
        ));
        for usage in usages {
            let cost = usage
                .cost
                .map(|c| format!(", cost {c:.4}"))
                .unwrap_or_default();
            reporter.note(&format!("  {}: {}{cost}", usage.role, usage.summary));
        }
        if let Some(reason) = &outcome.stopped {
            reporter.warn(&format!(
                "{stage} stopped: {reason}; the items done are kept, rerun to go on once it is \
fixed"
            ));
        }
        if !outcome.failures.is_empty() {
            let mut lines = vec![format!(
                "{stage}: {} item{} failed (listed in {}):",
                outcome.failures.len(),
                if outcome.failures.len() == 1 { "" } else { "s" },
                failures_path.display()
            )];
            for failure in outcome.failures.iter().take(10) {
                lines.push(format!("  {}: {}", failure.item_id, failure.reason));
            }
            if outcome.failures.len() > 10 {
                lines.push(format!("  … and {} more", outcome.failures.len() - 10));
            }
            reporter.warn(&lines.join("\n"));
        }
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// The generate stage: plan + corpus → the run's benchmark and rejects. With `export`, the
/// generator and the filter answer from the cache only, and the requests they cannot answer
/// are written to that file as an OpenAI-format batch input (for a batch engine such as vLLM's
/// `run_batch`) instead of being sent.
pub fn generate(
    config: &RunConfig,
    run: &RunDir,
    plan_path: &Path,
    (corpus, on_error): (&CorpusSpec, OnError),
    export: Option<&Path>,
    reporter: &dyn Reporter,
) -> anyhow::Result<StageOutcome> {
    let root = run.root();
    let pass = StageRun::start(run, "generate", root, reporter)?;
    let plan = read_plan(plan_path)?;
    let taxonomy = crate::taxonomy::load(config.taxonomy.as_deref())?;
    let needed: HashSet<&str> = plan
        .iter()
        .flat_map(|item| item.doc_ids.iter().map(String::as_str))
        .collect();
    let documents = crate::corpus::collect_documents(corpus, on_error, &needed, reporter)?;
    if export.is_some() {
        for (role, llm) in [
            ("generator", config.generator_llm()),
            ("filter", config.filter_llm()),
        ] {
            if llm.backend != hierarag_llm::ChatBackendKind::OpenAi {
                anyhow::bail!(
                    "batch export writes OpenAI-format requests: the {role} needs an openai \
backend (it has {:?})",
                    llm.backend
                );
            }
        }
    }
    let batched = |llm: &LlmConfig| llm.batch || export.is_some();
    let generator_llm = config.generator_llm();
    let generator_client = batch_client(generator_llm, root, batched(generator_llm), reporter)?;
    let filter_client = if config.generate.settings.filter {
        let llm = config.filter_llm();
        Some(batch_client(llm, root, batched(llm), reporter)?)
    } else {
        None
    };
    let clients: Vec<&ChatClient> = [Some(&generator_client), filter_client.as_ref()]
        .into_iter()
        .flatten()
        .collect();
    let generator = Generator::new(
        &taxonomy,
        &generator_client,
        filter_client.as_ref(),
        config.generate.settings.clone(),
    )
    .in_language(crate::language::of_run(Some(config), run));
    let (benchmark, rejects, failures) = (run.benchmark(), run.rejects(), run.failures("generate"));
    let stage = GenerateStage {
        plan: &plan,
        documents: &documents,
        generator: &generator,
        benchmark: &benchmark,
        rejects: &rejects,
        failures: &failures,
        screened: &run.screened(),
        concurrency: config.generate.concurrency,
    };
    let progress = pass.progress();
    let runtime = runtime()?;
    let outcome = match export {
        None => pass.passes(&runtime, &clients, || stage.run(&progress))?,
        Some(file) => {
            let mut outcome = runtime.block_on(stage.run(&progress))?;
            // The deferred items are not failures: their requests are in the file.
            let deferred = hierarag_llm::LlmError::Deferred.to_string();
            outcome.failures.retain(|f| !f.reason.contains(&deferred));
            write_failures(&failures, &outcome.failures)?;
            let mut lines = String::new();
            let mut custom_ids = Vec::new();
            for (custom_id, entry) in clients.iter().flat_map(|c| c.take_batch_entries()) {
                custom_ids.push(custom_id);
                lines.push_str(&entry);
                lines.push('\n');
            }
            write_atomic(file, lines.as_bytes())?;
            // What `batch import` takes results for.
            hierarag_llm::BatchLedger::new(&run.batches()).append(
                &hierarag_llm::LedgerLine::Exported {
                    file: file.display().to_string(),
                    custom_ids,
                    unix_s: hierarag_results::manifest::now_unix_s(),
                },
            )?;
            outcome
        }
    };
    drop(progress);
    let mut usages = vec![usage(
        "generator",
        &generator_client,
        config.generator_llm(),
    )];
    if let Some(filter) = &filter_client {
        usages.push(usage("filter", filter, config.filter_llm()));
    }
    pass.finish(
        &outcome,
        usages,
        &failures,
        &[plan_path],
        &[&benchmark, &rejects],
    )?;
    Ok(outcome)
}

/// The folder of the asset store (`HIERARAG_HOME`) where the embedded model's chunk
/// embeddings are shared by every run directory (hierarag_rag::dense says how).
pub const SHARED_EMBEDDINGS: &str = "embeddings";

/// The retriever of a config over an index; dense and hybrid embed every chunk once (stored
/// beside the index and reused, and for the embedded model shared with other run directories
/// over the same corpus through the asset store's `embeddings/`) with the `[embeddings]` model.
pub fn retriever(
    kind: RetrieverKind,
    index_dir: &Path,
    config: &RunConfig,
    runtime: &tokio::runtime::Runtime,
    reporter: &dyn Reporter,
) -> anyhow::Result<Box<dyn Retriever>> {
    let index = Arc::new(
        hierarag_index::Bm25Index::open(index_dir)
            .with_context(|| format!("opening the index {}", index_dir.display()))?,
    );
    if kind == RetrieverKind::Bm25 {
        return Ok(Box::new(Bm25Retriever::new(index)));
    }
    if let Some(warning) =
        crate::language::embeddings_warning(index.manifest().language, &config.embeddings)
    {
        reporter.warn(&format!("{} retrieval: {warning}", kind.as_str()));
    }
    // The chunk embeddings are stored beside the index; a response cache would only copy them.
    let mut embeddings = config.embeddings.clone();
    embeddings.cache = hierarag_llm::CacheSetting::Off;
    let embedder = Arc::new(embedder(&embeddings, index_dir, reporter)?);
    let cache_dir = DenseRetriever::default_cache_dir(&index, &embedder);
    let counter = reporter.counter("embed", "chunks", Some(0));
    let mut graph_counter = None;
    // Embeddings shared by the run directories of this machine, beside the assets: the
    // embedded model's only, whose name pins its weights (a server's model name need not).
    let shared = (config.embeddings.backend == EmbedBackendKind::Embedded)
        .then(hierarag_assets::Store::from_env)
        .and_then(Result::ok)
        .map(|store| store.root().join(SHARED_EMBEDDINGS));
    let dense = runtime.block_on(DenseRetriever::build_shared(
        index.clone(),
        embedder,
        &cache_dir,
        shared.as_deref(),
        &config.dense,
        &mut |progress| match progress {
            DenseProgress::Reused { .. } | DenseProgress::Hnsw(HnswProgress::Reused { .. }) => {}
            DenseProgress::Shared {
                from,
                copied,
                n_chunks,
                ..
            } => reporter.note(&format!(
                "took the embeddings of {n_chunks} chunks from {} ({}) instead of embedding them again",
                from.display(),
                if copied { "copied" } else { "linked" }
            )),
            DenseProgress::Published { dir, error: None } => reporter.note(&format!(
                "kept the chunk embeddings in {} for other runs over this corpus (delete it any time)",
                dir.display()
            )),
            DenseProgress::Published {
                dir,
                error: Some(error),
            } => reporter.warn(&format!(
                "could not keep the chunk embeddings in {} for other runs: {error}",
                dir.display()
            )),
            DenseProgress::Building {
                reason, n_chunks, ..
            } => {
                counter.set_length(n_chunks);
                reporter.note(&format!(
                    "embedding {n_chunks} chunks for dense retrieval ({reason})"
                ));
            }
            DenseProgress::Embedded { done, .. } => counter.set_position(done),
            DenseProgress::Hnsw(HnswProgress::Building { reason, n_rows, .. }) => {
                reporter.note(&format!(
                    "building the HNSW graph of {n_rows} chunk embeddings ({reason})"
                ));
                graph_counter = Some(reporter.counter("hnsw", "chunks", Some(n_rows)));
            }
            DenseProgress::Hnsw(HnswProgress::Inserted { done, .. }) => {
                if let Some(graph) = &graph_counter {
                    graph.set_position(done);
                }
            }
        },
    ))?;
    drop(counter);
    drop(graph_counter);
    match kind {
        RetrieverKind::Dense => Ok(Box::new(dense)),
        _ => Ok(Box::new(HybridRetriever::new(
            Bm25Retriever::new(index),
            dense,
            FusionSettings::default(),
        )?)),
    }
}

/// The name a stage of a system is reported and recorded under: `answer` for the implicit
/// system of a config without `[[system]]` (`label` None), `answer:<name>` otherwise.
pub fn stage_key(stage: &str, label: Option<&str>) -> String {
    match label {
        None => stage.to_owned(),
        Some(name) => format!("{stage}:{name}"),
    }
}

/// The answer stage: benchmark + index → the system's answers (`label`: the system's name,
/// None for the implicit one).
pub fn answer(
    config: &RunConfig,
    run: &RunDir,
    benchmark_path: &Path,
    index_dir: &Path,
    system: &SystemDir,
    label: Option<&str>,
    reporter: &dyn Reporter,
) -> anyhow::Result<StageOutcome> {
    let pass = StageRun::start(run, stage_key("answer", label), system.root(), reporter)?;
    let benchmark: Vec<BenchmarkRecord> =
        read_input(benchmark_path, |r: &BenchmarkRecord| r.id.as_str())?;
    let runtime = runtime()?;
    let retriever = retriever(
        config.answer.retriever,
        index_dir,
        config,
        &runtime,
        reporter,
    )?;
    let answer_llm = config.answerer_llm();
    let answer_client = batch_client(answer_llm, run.root(), answer_llm.batch, reporter)?;
    let language = crate::language::of_run(Some(config), run);
    let answerer = Answerer::new(
        retriever.as_ref(),
        &answer_client,
        config.answer.settings.clone(),
        language,
    );
    let (answers, failures) = (system.answers(), system.failures("answer"));
    let stage = AnswerStage {
        benchmark: &benchmark,
        answerer: &answerer,
        answers: &answers,
        failures: &failures,
        concurrency: config.answer.concurrency,
        seed: config.run.seed,
    };
    let progress = pass.progress();
    let outcome = pass.passes(&runtime, &[&answer_client], || stage.run(&progress))?;
    drop(progress);
    let usages = vec![usage("answerer", &answer_client, config.answerer_llm())];
    pass.finish(&outcome, usages, &failures, &[benchmark_path], &[&answers])?;
    Ok(outcome)
}

/// The evaluate stage: benchmark + answers → the system's scores (`label` as for [`answer`]).
pub fn evaluate(
    config: &RunConfig,
    run: &RunDir,
    benchmark_path: &Path,
    answers_path: &Path,
    system: &SystemDir,
    label: Option<&str>,
    reporter: &dyn Reporter,
) -> anyhow::Result<StageOutcome> {
    let pass = StageRun::start(run, stage_key("evaluate", label), system.root(), reporter)?;
    let benchmark: Vec<BenchmarkRecord> =
        read_input(benchmark_path, |r: &BenchmarkRecord| r.id.as_str())?;
    let answers: Vec<AnswerRecord> = read_input(answers_path, |r: &AnswerRecord| r.id.as_str())?;
    let language = crate::language::of_run(Some(config), run);
    warn_language(pass.key(), language, config, &benchmark, &answers, reporter);
    let embedder = Arc::new(embedder(&config.embeddings, run.root(), reporter)?);
    let (scores, failures) = (system.scores(), system.failures("evaluate"));
    let stage = EvaluateStage {
        benchmark: &benchmark,
        answers: &answers,
        embedder: &embedder,
        scores: &scores,
        failures: &failures,
        batch: config.evaluate.batch,
        tokenizers: TextTokenizers::for_language(language),
    };
    let outcome = runtime()?.block_on(stage.run(&pass.progress()))?;
    // Scores made after the judge graded their answers carry its grades too.
    if system.judgements().exists() {
        hierarag_pipeline::merge_grades(&scores, &system.judgements())?;
    }
    let usages = vec![StageUsage {
        role: "embeddings".into(),
        cost: None,
        summary: embedder.usage(),
    }];
    pass.finish(
        &outcome,
        usages,
        &failures,
        &[benchmark_path, answers_path],
        &[&scores],
    )?;
    Ok(outcome)
}

/// Warns before scoring when most letters of the references and answers are not in the
/// configured language, when CS is taken with the English MiniLM on another language, and says
/// which tokenizers the text metrics use for a language other than English.
fn warn_language(
    key: &str,
    language: hierarag_lang::Language,
    config: &RunConfig,
    benchmark: &[BenchmarkRecord],
    answers: &[AnswerRecord],
    reporter: &dyn Reporter,
) {
    let texts = benchmark
        .iter()
        .map(|r| r.answer.as_str())
        .chain(answers.iter().map(|a| a.answer.as_str()));
    if let Some(mismatch) = crate::language::check_texts(language, texts) {
        reporter.warn(&format!("{key}: the references and answers: {mismatch}"));
    }
    if let Some(warning) = crate::language::embeddings_warning(language, &config.embeddings) {
        reporter.warn(&format!("{key}: CS: {warning}"));
    }
    if let Some(tokenizers) = crate::language::describe_tokenizers(language) {
        reporter.note(&format!("{key}: {tokenizers}"));
    }
}

/// The answer stage of a `kind = "file"` system: the file's rows matched to the benchmark's
/// questions and written as the system's answers; questions no row answers are its failures.
pub fn import_answers(
    run: &RunDir,
    benchmark_path: &Path,
    index_dir: Option<&Path>,
    name: &str,
    file: &FileSystem,
    system: &SystemDir,
    reporter: &dyn Reporter,
) -> anyhow::Result<StageOutcome> {
    let clock = std::time::Instant::now();
    // The index is opened below, and only when some context needs looking up.
    let SystemStage {
        pass, benchmark, ..
    } = SystemStage::start(run, benchmark_path, None, name, system, reporter)?;
    let key = pass.key().to_owned();
    let mut rows = crate::systems::read_rows(file)
        .with_context(|| format!("system {name}: reading its answers"))?;
    // Contexts given as texts only: their documents are looked up in the index.
    let needs_lookup = rows
        .iter()
        .any(|r| r.doc_ids.is_empty() && !r.contexts.is_empty());
    match index_dir
        .filter(|_| needs_lookup)
        .map(open_index)
        .transpose()?
        .flatten()
    {
        Some(index) => {
            let (found, missed) = crate::systems::find_row_documents(&index, &mut rows)?;
            reporter.note(&format!(
                "{key}: {found} of {} context texts given without document ids found in the \
index ({missed} not found)",
                found + missed
            ));
        }
        _ if needs_lookup => reporter.warn(&format!(
            "{key}: contexts come without document ids and there is no index to find them in \
(give --index)"
        )),
        _ => {}
    }
    let language = crate::language::of_run(None, run);
    let matched = crate::systems::match_rows(&rows, &benchmark, name, file, language);
    let values: Vec<serde_json::Value> = matched
        .answers
        .iter()
        .map(|a| serde_json::to_value(a).expect("an answer serialises"))
        .collect();
    write_values_atomic(&system.answers(), &values.iter().collect::<Vec<_>>())?;
    let failures: Vec<Failure> = matched
        .missing
        .iter()
        .map(|id| Failure {
            stage: "answer".into(),
            item_id: id.clone(),
            reason: format!("no row of {} answers this question", file.path.display()),
        })
        .collect();
    let failures_path = system.failures("answer");
    write_failures(&failures_path, &failures)?;
    reporter.note(&format!(
        "{key}: {} of {} rows of {} ({}) matched a question by id or question text",
        matched.answers.len(),
        rows.len(),
        file.path.display(),
        file.format.as_str()
    ));
    let lines = |lines: &[usize]| {
        let shown: Vec<String> = lines.iter().take(10).map(usize::to_string).collect();
        format!(
            "{}{}",
            shown.join(", "),
            if lines.len() > 10 { ", …" } else { "" }
        )
    };
    if !matched.unmatched.is_empty() {
        reporter.warn(&format!(
            "{key}: {} {} no question of the benchmark (lines {}); are they from another \
benchmark?",
            matched.unmatched.len(),
            if matched.unmatched.len() == 1 {
                "row matches"
            } else {
                "rows match"
            },
            lines(&matched.unmatched)
        ));
    }
    if !matched.duplicates.is_empty() {
        reporter.warn(&format!(
            "{key}: {} {} a question an earlier row answered; the first is kept (lines {})",
            matched.duplicates.len(),
            if matched.duplicates.len() == 1 {
                "row answers"
            } else {
                "rows answer"
            },
            lines(&matched.duplicates)
        ));
    }
    if matched.without_doc_ids > 0 {
        reporter.warn(&format!(
            "{key}: {} answer{} name no document (no document ids, and no context text found \
in the index); their retrieval metrics (AP, nDCG@10, Recall@10, RR) are absent",
            matched.without_doc_ids,
            if matched.without_doc_ids == 1 {
                ""
            } else {
                "s"
            },
        ));
    }
    let outcome = StageOutcome {
        items: benchmark.len(),
        resumed: 0,
        written: matched.answers.len(),
        failures,
        seconds: clock.elapsed().as_secs_f64(),
        stopped: None,
    };
    pass.finish(
        &outcome,
        Vec::new(),
        &failures_path,
        &[benchmark_path, &file.path],
        &[&system.answers()],
    )?;
    Ok(outcome)
}

/// The answer stage of a `kind = "command"` system: the program started once and asked every
/// unanswered question, `concurrency` at a time; resumable like every stage, its stderr in
/// `command.log` of the system's folder.
#[allow(clippy::too_many_arguments)]
pub fn answer_with_command(
    run: &RunDir,
    benchmark_path: &Path,
    index_dir: Option<&Path>,
    name: &str,
    command: &CommandSystemConfig,
    system: &SystemDir,
    reporter: &dyn Reporter,
) -> anyhow::Result<StageOutcome> {
    let SystemStage {
        pass,
        benchmark,
        index,
    } = SystemStage::start(run, benchmark_path, index_dir, name, system, reporter)?;
    let key = pass.key().to_owned();
    let log = system.root().join("command.log");
    let runtime = runtime()?;
    let outcome = runtime.block_on(async {
        let program = hierarag_systems::CommandSystem::new(hierarag_systems::CommandSettings {
            command: command.command.clone(),
            log: log.clone(),
            timeout: std::time::Duration::from_secs_f64(command.timeout_s),
            max_restarts: command.max_restarts,
            max_reply_bytes: command.max_reply_bytes,
            max_log_bytes: command.max_log_bytes,
        })?;
        let answers = crate::systems::CommandAnswers {
            name,
            program,
            command: &command.command,
            index: index.as_ref(),
            language: crate::language::of_run(None, run),
        };
        let outcome =
            run_system_stage(&pass, &benchmark, &answers, system, command.concurrency).await?;
        if answers.program.restarts() > 0 {
            reporter.warn(&format!(
                "{key}: the program exited and was started again {} time{} (see {})",
                answers.program.restarts(),
                if answers.program.restarts() == 1 {
                    ""
                } else {
                    "s"
                },
                log.display()
            ));
        }
        anyhow::Ok(outcome)
    })?;
    pass.finish(
        &outcome,
        Vec::new(),
        &system.failures("answer"),
        &[benchmark_path],
        &[&system.answers()],
    )?;
    Ok(outcome)
}

/// The answer stage of a `kind = "http"` system: each unanswered question POSTed to the
/// service, `concurrency` in flight, through the LLM layer's client (retries, `Retry-After`,
/// the response cache); resumable like every stage, each answer's latency appended to
/// `latency.jsonl` of the system's folder.
#[allow(clippy::too_many_arguments)]
pub fn answer_with_http(
    run: &RunDir,
    benchmark_path: &Path,
    index_dir: Option<&Path>,
    name: &str,
    http: &HttpSystemConfig,
    system: &SystemDir,
    reporter: &dyn Reporter,
) -> anyhow::Result<StageOutcome> {
    let headers = http
        .headers_from_env()
        .map_err(|message| anyhow::anyhow!("[system {name}]: {message}"))?;
    let SystemStage {
        pass,
        benchmark,
        index,
    } = SystemStage::start(run, benchmark_path, index_dir, name, system, reporter)?;
    let root = system.root();
    // One latency line per answered question: lines of questions whose answer was never
    // written (a pass that stopped between the two, on a full disk say) go, since the
    // question is asked again.
    let answered = hierarag_pipeline::Journal::open(&system.answers(), "id")?
        .done()
        .clone();
    hierarag_pipeline::retain_records(&root.join("latency.jsonl"), "id", &answered)?;
    let runtime = runtime()?;
    let (outcome, usage, quantiles) = runtime.block_on(async {
        let service = hierarag_systems::HttpSystem::new(hierarag_systems::HttpSettings {
            name: name.to_owned(),
            url: http.url.clone(),
            headers,
            body: http.body.clone(),
            mapping: http.mapping(),
            client: http.client_settings(run.root(), name),
            max_reply_bytes: http.max_reply_bytes,
        })
        .with_context(|| format!("[system {name}]"))?;
        let answers = crate::systems::HttpAnswers::new(
            name,
            service,
            index.as_ref(),
            crate::language::of_run(None, run),
            &root.join("latency.jsonl"),
        )?;
        // Twice the requests in flight, so that the next question is ready when a reply frees
        // a slot (its record written meanwhile).
        let outcome =
            run_system_stage(&pass, &benchmark, &answers, system, 2 * http.concurrency).await?;
        anyhow::Ok((
            outcome,
            answers.service.usage(),
            answers.latency_quantiles(),
        ))
    })?;
    let usages = vec![StageUsage {
        role: "service".into(),
        summary: usage,
        cost: None,
    }];
    pass.finish(
        &outcome,
        usages,
        &system.failures("answer"),
        &[benchmark_path],
        &[&system.answers()],
    )?;
    if let Some((median, p95)) = quantiles {
        reporter.note(&format!(
            "  latency of the calls made: median {median:.0} ms, 95th percentile {p95:.0} ms \
(each question's in {})",
            root.join("latency.jsonl").display()
        ));
    }
    Ok(outcome)
}

pub use hierarag_interchange::replies::AnswerFunction;

/// A system of the run that answers with a function (a Python callable, through the Python
/// package): every unanswered question of the run's benchmark given to `call`, `concurrency`
/// at a time, into `systems/<name>/answers.jsonl` (resumable like every stage, failures in
/// `answer.failures.jsonl`), the folder marked as a system of the run
/// ([`crate::systems::ADDED_SYSTEM`]). `interrupted` is asked a few times a second; when it
/// says so the stage stops, keeping every answer written, and the error says so.
pub fn answer_with_function(
    run: &RunDir,
    name: &str,
    call: AnswerFunction,
    concurrency: usize,
    interrupted: &dyn Fn() -> bool,
    reporter: &dyn Reporter,
) -> anyhow::Result<StageOutcome> {
    crate::config::check_system_name(name)?;
    let system = run.system(name);
    let index_dir = run.index();
    let SystemStage {
        pass,
        benchmark,
        index,
    } = SystemStage::start(
        run,
        &run.benchmark(),
        Some(&index_dir),
        name,
        &system,
        reporter,
    )?;
    let key = pass.key().to_owned();
    let runtime = runtime()?;
    let outcome = runtime.block_on(async {
        let answers = crate::systems::FunctionAnswers {
            name,
            call,
            index: index.as_ref(),
            language: crate::language::of_run(None, run),
        };
        let stage = run_system_stage(&pass, &benchmark, &answers, &system, concurrency.max(1));
        let watch = async {
            let mut tick = tokio::time::interval(std::time::Duration::from_millis(200));
            loop {
                tick.tick().await;
                if interrupted() {
                    return;
                }
            }
        };
        tokio::select! {
            outcome = stage => outcome,
            () = watch => anyhow::bail!(
                "{key}: interrupted; the answers written so far are kept in {} and the next \
        call goes on from there",
                system.answers().display()
            ),
        }
    });
    drop(runtime);
    // The system joins the run with its first answer: a call whose every question failed
    // leaves no system for `analyze`, `compare` and `report` to trip on.
    let marker = system.root().join(crate::systems::ADDED_SYSTEM);
    if !marker.exists() && hierarag_pipeline::has_records(&system.answers()) {
        write_atomic(
            &marker,
            serde_json::json!({"name": name, "kind": "python"})
                .to_string()
                .as_bytes(),
        )?;
    }
    let outcome = outcome?;
    pass.finish(
        &outcome,
        Vec::new(),
        &system.failures("answer"),
        &[&run.benchmark()],
        &[&system.answers()],
    )?;
    Ok(outcome)
}

/// What the answer stage of a system asked one question at a time starts from.
struct SystemStage<'a> {
    pass: StageRun<'a>,
    benchmark: Vec<BenchmarkRecord>,
    index: Option<hierarag_index::Bm25Index>,
}

impl<'a> SystemStage<'a> {
    /// The stage started (the system's folder made), the benchmark read, the index opened
    /// when there is one.
    fn start(
        run: &'a RunDir,
        benchmark_path: &Path,
        index_dir: Option<&Path>,
        name: &str,
        system: &SystemDir,
        reporter: &'a dyn Reporter,
    ) -> anyhow::Result<SystemStage<'a>> {
        let pass = StageRun::start(
            run,
            stage_key("answer", Some(name)),
            system.root(),
            reporter,
        )?;
        Ok(SystemStage {
            pass,
            benchmark: read_input(benchmark_path, |r: &BenchmarkRecord| r.id.as_str())?,
            index: index_dir.map(open_index).transpose()?.flatten(),
        })
    }
}

/// Answers the questions of `benchmark` not yet in the system's `answers.jsonl`, `concurrency`
/// in progress, with a progress counter.
async fn run_system_stage<S: hierarag_pipeline::AnswerSystem>(
    pass: &StageRun<'_>,
    benchmark: &[BenchmarkRecord],
    answers: &S,
    system: &SystemDir,
    concurrency: usize,
) -> anyhow::Result<StageOutcome> {
    let (answers_path, failures_path) = (system.answers(), system.failures("answer"));
    let stage = hierarag_pipeline::SystemAnswerStage {
        benchmark,
        system: answers,
        answers: &answers_path,
        failures: &failures_path,
        concurrency,
    };
    Ok(stage.run(&pass.progress()).await?)
}

/// The index in `dir`, when one was built there (a system's contexts are looked up in it).
fn open_index(dir: &Path) -> anyhow::Result<Option<hierarag_index::Bm25Index>> {
    if !dir.join("manifest.json").exists() {
        return Ok(None);
    }
    hierarag_index::Bm25Index::open(dir)
        .map(Some)
        .with_context(|| format!("opening the index {}", dir.display()))
}
