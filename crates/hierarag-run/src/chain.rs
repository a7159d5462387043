//! The main job, `hierarag run`: the checks that need no corpus, then index → plan → generate →
//! answer → evaluate → analyze → compare (with two or more systems) → with `[human]`, the
//! human-written benchmark imported, tagged, answered and scored, and validity → report in one
//! run directory, resuming whatever an earlier pass left.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, bail};
use hierarag_analysis::Analysis;
use hierarag_corpus::ChunkParams;
use hierarag_index::BuildOptions;
use hierarag_pipeline::{StageOutcome, file_sha256, read_records, write_atomic};
use hierarag_plan::LengthBounds;

use crate::config::{RunConfig, SystemKind};
use crate::layout::RunDir;
use crate::manifest::{Manifest, OutputFile, StageRecord, now_unix_s};
use crate::plan::{DesignOptions, DifferentPlan};
use hierarag_config::estimate::{RunEstimate, Shape};
use hierarag_pipeline::Reporter;

/// How `hierarag run` goes about its work.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The run config file (read again by the plan for its `[design]` table).
    pub config_path: PathBuf,
    /// Continue a run directory whose manifest records a different config.
    pub reconfigure: bool,
    /// Send one small request to every endpoint before any stage.
    pub check_endpoints: bool,
    /// Instead of calling the generator and the filter, write the requests the generate stage
    /// cannot answer from the cache to this OpenAI-format batch input file and stop there
    /// (`hierarag batch export`).
    pub export_batch: Option<PathBuf>,
}

/// What a run did.
#[derive(Debug)]
pub struct RunOutcome {
    pub run: RunDir,
    /// The generate, answer and evaluate passes that ran, in order.
    pub stages: Vec<(&'static str, StageOutcome)>,
    /// The stage that stopped the run (an endpoint refused the client), if one did: the
    /// later stages did not run.
    pub stopped_at: Option<&'static str>,
    /// The analysis and the report, when the run got that far.
    pub analysis: Option<Analysis>,
    pub report_html: Option<PathBuf>,
    pub seconds: f64,
}

impl RunOutcome {
    /// Whether every item of every stage was done and the run went to its end.
    pub fn ok(&self) -> bool {
        self.stopped_at.is_none() && self.stages.iter().all(|(_, o)| o.ok())
    }
}

/// The stages after the stage that stopped a run, which did not run: compare only for a run
/// of two or more systems, the judge's only with `[judge]`, the human-written benchmark's only
/// with `[human]`.
pub fn stages_after(stage: &str, config: &RunConfig) -> Vec<&'static str> {
    const STAGES: [&str; 14] = [
        "generate",
        "screen",
        "answer",
        "evaluate",
        "judge",
        "judge-benchmark",
        "analyze",
        "compare",
        "human tag",
        "human answer",
        "human evaluate",
        "human judge",
        "validity",
        "report",
    ];
    STAGES
        .iter()
        .position(|s| *s == stage)
        .map_or(&STAGES[..0], |i| &STAGES[i + 1..])
        .iter()
        .copied()
        .filter(|s| match *s {
            "compare" => config.answering_systems().len() >= 2,
            "judge" => config.judge.on,
            "human judge" => config.judge.on && config.human.is_some(),
            "human tag" | "human answer" | "human evaluate" | "validity" => config.human.is_some(),
            "judge-benchmark" => config.judge.on && config.judge.benchmark,
            "screen" => config.judge.screen.is_some(),
            _ => true,
        })
        .collect()
}

/// Runs the main job of `config` in its `[run] dir`.
pub fn run(
    config: &RunConfig,
    options: &RunOptions,
    reporter: &dyn Reporter,
) -> anyhow::Result<RunOutcome> {
    let started = Instant::now();
    let run = RunDir::new(&config.run.dir);
    let root = run.root();
    std::fs::create_dir_all(root).with_context(|| format!("creating {}", root.display()))?;
    check_config(&run, config, options.reconfigure)?;
    let corpus = config
        .corpus
        .as_ref()
        .context("a run config for `hierarag run` needs a [corpus] table")?;
    let design_options = DesignOptions {
        config: Some(options.config_path.clone()),
        ..DesignOptions::default()
    };
    // Everything that can be checked without the corpus is checked before any stage runs:
    // the taxonomy and the design's dimensions, categories and personas, what each system
    // needs (header variables, answers files, programs), the API key variables, and (one
    // small request each) the endpoints.
    let taxonomy = crate::taxonomy::load(config.taxonomy.as_deref())?;
    let design = crate::plan::design(&design_options, &taxonomy)?;
    config.check_systems()?;
    if let Some(human) = &config.human {
        hierarag_results::validity::check_human(human)?;
    }
    if let Some(file) = &config.run.benchmark
        && !file.is_file()
    {
        bail!(
            "[run] benchmark {}: no such file (give a benchmark.jsonl, or the core.jsonl of \
`hierarag items`)",
            file.display()
        );
    }
    // [budget]: what this directory's earlier runs spent counts.
    let budget = match &config.budget {
        Some(limit) => {
            let priced = [
                config.generator_llm(),
                config.filter_llm(),
                config.answerer_llm(),
                config.judge_llm(),
                config.tagger_llm(),
            ]
            .iter()
            .any(|llm| {
                // A batched role is priced at its batch prices when it has them.
                let (prompt, completion) = llm.prices(llm.batch);
                prompt.is_some() || completion.is_some()
            });
            if limit.max_tokens.is_none() && !priced {
                reporter.warn(
                    "[budget] max_cost is set but no role has a price (price_prompt_per_mtok, \
price_completion_per_mtok): every call counts as free, so the budget never stops the run; set \
the prices, or max_tokens",
                );
            }
            // What earlier runs spent: the spending journal, which a killed run wrote to as
            // it went; a directory from before the journal starts it with its manifests'.
            let spent = Manifest::load(&run)?.spent;
            let human = Manifest::load(&run.human())?.spent;
            let budget = hierarag_llm::Budget::journaled(
                limit.max_cost,
                limit.max_tokens,
                &run.spend(),
                (spent.cost + human.cost, spent.tokens + human.tokens),
            )
            .with_context(|| format!("{}: the spending journal", run.spend().display()))?;
            Some(std::sync::Arc::new(budget))
        }
        None => None,
    };
    crate::models::set_budget(root, budget);
    let runtime = crate::stages::runtime()?;
    crate::models::check_models(config, options.check_endpoints, &runtime, reporter)?;
    drop(runtime);
    let estimate = match estimate(config, &options.config_path) {
        Ok(estimate) => Some(estimate),
        Err(error) => {
            reporter.note(&format!("no cost estimate: {error:#}"));
            None
        }
    };
    Manifest::update(&run, |manifest| {
        manifest.config = comparable(config);
        manifest.seed = config.run.seed;
        if estimate.is_some() {
            manifest.estimate = estimate;
        }
    })?;
    reporter.note(&format!(
        "run {} → {} (generator {}, answerer {})",
        options.config_path.display(),
        root.display(),
        describe(config.generator_llm()),
        describe(config.answerer_llm())
    ));

    // 1. index
    let spec = crate::corpus::resolve(&corpus.spec(), reporter)?;
    let on_error = corpus.on_error;
    let stage_started = now_unix_s();
    let clock = Instant::now();
    let build = BuildOptions {
        chunking: ChunkParams {
            size: config.index.chunk_size,
            overlap: config.index.chunk_overlap,
        },
        on_error,
        writer_heap_bytes: config.index.writer_heap_mb << 20,
        threads: config.index.threads,
        overwrite: false,
        language: corpus.language,
    };
    let built = crate::index::build(&spec, &run.index(), &build, reporter)?;
    let n_documents = built.manifest().counts.documents as usize;
    simple_stage(
        &run,
        "index",
        stage_started,
        clock,
        n_documents,
        &[&run.index().join("manifest.json")],
    )?;

    // 2. plan, with the taxonomy beside it so that analyze and report find the same
    // categories; or, with [run] benchmark, that benchmark instead of a plan and a generation
    if let Some(file) = &config.run.benchmark {
        given_benchmark(&run, file, &taxonomy, reporter)?;
    } else {
        let stage_started = now_unix_s();
        let clock = Instant::now();
        let bounds = LengthBounds {
            min_words: config.plan.min_words,
            max_words: config.plan.max_words,
        };
        let plan = crate::plan::sample(
            &design,
            &taxonomy,
            &spec,
            crate::plan::Sampling {
                on_error,
                bounds,
                seed: config.run.seed,
                lengths: crate::plan::Lengths::WhenRead,
            },
            reporter,
        )?;
        let written = crate::plan::write_plan(&run.plan(), &plan, false).map_err(|error| {
            if error.is::<DifferentPlan>() {
                error.context(
                    "making the plan (a different plan.jsonl in the run directory means the [design] \
    or corpus changed: use a fresh --dir)",
                )
            } else {
                error
            }
        })?;
        reporter.note(&format!(
            "{} {} ({} items of design {} in {} set{}, {} documents, seed {})",
            if written { "wrote" } else { "up to date:" },
            run.plan().display(),
            plan.items.len(),
            design.kind,
            design.sets.len(),
            if design.sets.len() == 1 { "" } else { "s" },
            plan.distinct_documents,
            config.run.seed,
        ));
        let n_items = read_records::<serde_json::Value>(&run.plan())?.len();
        write_atomic(&run.taxonomy(), taxonomy.to_toml_string().as_bytes())?;
        simple_stage(
            &run,
            "plan",
            stage_started,
            clock,
            n_items,
            &[&run.plan(), &run.taxonomy()],
        )?;
    }

    // 3–5. generate, then answer and evaluate with each system; a stage that stopped (an
    // endpoint refused the client) ends the run there.
    let mut outcome = RunOutcome {
        run: run.clone(),
        stages: Vec::new(),
        stopped_at: None,
        analysis: None,
        report_html: None,
        seconds: 0.0,
    };
    let systems = config.answering_systems();
    let mut generated = config.run.benchmark.is_some() || {
        let generated = crate::stages::generate(
            config,
            &run,
            &run.plan(),
            (&spec, on_error),
            options.export_batch.as_deref(),
            reporter,
        )?;
        finished(&mut outcome, "generate", generated)
    };
    if options.export_batch.is_some() {
        outcome.seconds = started.elapsed().as_secs_f64();
        return Ok(outcome);
    }
    if generated
        && config.run.benchmark.is_none()
        && let Some(screen) = &config.judge.screen
    {
        let (rated, _) = crate::judge::screen_benchmark(
            config,
            &run,
            screen,
            Some((&spec, on_error)),
            reporter,
        )?;
        generated = finished(&mut outcome, "screen", rated);
    }
    if generated {
        answer_all(config, &run, &run, &mut outcome, SYNTHETIC_STAGES, reporter)?;
        if outcome.stopped_at.is_none() && config.judge.benchmark {
            let rated = crate::judge::judge_benchmark(config, &run, &run.benchmark(), reporter)?;
            finished(&mut outcome, "judge-benchmark", rated);
        }
    }
    if outcome.stopped_at.is_some() {
        outcome.seconds = started.elapsed().as_secs_f64();
        return Ok(outcome);
    }

    // 6. analyze each system; the first one's analysis and report sit at the top of the run
    // directory, every named system's also in its own folder.
    let stage_started = now_unix_s();
    let clock = Instant::now();
    let mut first: Option<hierarag_analysis::Analysis> = None;
    let mut analysis_paths = Vec::new();
    for system_config in &systems {
        let system = crate::systems::dir_of(&run, config, &system_config.name);
        let mut analysis = crate::analyze::analyze_files(
            &run.benchmark(),
            &system.scores(),
            Some(&system.answers()),
            &taxonomy,
            &config.analysis,
            Some(&run),
        )?;
        analysis.human_validation = crate::analyze::load_agreement(&run)?;
        if system.root() != root {
            analysis_paths.push(crate::analyze::write(&analysis, system.root())?);
        }
        if first.is_none() {
            analysis_paths.push(crate::analyze::write(&analysis, root)?);
            first = Some(analysis);
        }
    }
    let analysis = first.expect("a run has a system");
    simple_stage(
        &run,
        "analyze",
        stage_started,
        clock,
        analysis.counts.analysed,
        &analysis_paths
            .iter()
            .map(PathBuf::as_path)
            .collect::<Vec<_>>(),
    )?;

    // 7. compare, with two or more systems that have scores: comparison.json beside the
    // analysis.
    let (named, without) = crate::compare::with_scores(
        systems
            .iter()
            .map(|s| {
                (
                    s.name.clone(),
                    crate::systems::dir_of(&run, config, &s.name),
                )
            })
            .collect(),
    );
    if systems.len() >= 2 && !without.is_empty() {
        reporter.warn(&format!(
            "compare: {} left out, with no scored answer",
            without.join(", ")
        ));
    }
    if named.len() >= 2 {
        let stage_started = now_unix_s();
        let clock = Instant::now();
        let threshold = hierarag_analysis::default_threshold(config.analysis.metric);
        let comparison =
            crate::compare::compare_systems(&run, &named, &taxonomy, &config.analysis, threshold)?;
        let path = crate::compare::write(&comparison, root)?;
        reporter.note(&format!(
            "compared {} systems on {} questions: {}",
            named.len(),
            comparison.common,
            path.display()
        ));
        simple_stage(
            &run,
            "compare",
            stage_started,
            clock,
            comparison.common,
            &[&path],
        )?;
    }

    // 8. the human-written benchmark of [human]: imported, tagged, answered and scored by
    // the same systems, and set beside the generated one in validity.json.
    if let Some(human_section) = &config.human {
        let human = crate::validity::import_human(&run, human_section, corpus.language, reporter)?;
        let tagged = crate::tag::tag(config, &human, &human.benchmark(), &taxonomy, reporter)?;
        if finished(&mut outcome, "human tag", tagged) {
            answer_all(config, &run, &human, &mut outcome, HUMAN_STAGES, reporter)?;
        }
        if outcome.stopped_at.is_some() {
            outcome.seconds = started.elapsed().as_secs_f64();
            return Ok(outcome);
        }
        let stage_started = now_unix_s();
        let clock = Instant::now();
        let validity =
            crate::validity::validity_of_run(&run, &taxonomy, &config.analysis, reporter)?;
        let path = crate::validity::write(&validity, root)?;
        for line in &validity.verdict {
            reporter.note(&format!("validity: {line}"));
        }
        simple_stage(
            &run,
            "validity",
            stage_started,
            clock,
            validity.human_questions,
            &[&path],
        )?;
    }

    // 9. report
    let stage_started = now_unix_s();
    let clock = Instant::now();
    let (report_md, report_html) = crate::report::write(&run, &analysis, &taxonomy, None, root)?;
    simple_stage(
        &run,
        "report",
        stage_started,
        clock,
        analysis.counts.analysed,
        &[&report_md],
    )?;
    outcome.analysis = Some(analysis);
    outcome.report_html = Some(report_html);
    outcome.seconds = started.elapsed().as_secs_f64();
    Ok(outcome)
}

/// The names a side's stages go by in the outcome: answer, evaluate, judge.
type StageNames = [&'static str; 3];
const SYNTHETIC_STAGES: StageNames = ["answer", "evaluate", "judge"];
const HUMAN_STAGES: StageNames = ["human answer", "human evaluate", "human judge"];

/// Answers the benchmark of `target` (the run itself, or its human-written benchmark) with
/// every system over the run's index, scores the answers and, with `[judge]`, grades them;
/// stops at the first stage an endpoint refused (`outcome.stopped_at`).
fn answer_all(
    config: &RunConfig,
    run: &RunDir,
    target: &RunDir,
    outcome: &mut RunOutcome,
    [answer_stage, evaluate_stage, judge_stage]: StageNames,
    reporter: &dyn Reporter,
) -> anyhow::Result<()> {
    let label = |name: &str| (!config.systems.is_empty()).then(|| name.to_owned());
    let benchmark = target.benchmark();
    for system_config in &config.answering_systems() {
        let name = &system_config.name;
        let system = crate::systems::dir_of(target, config, name);
        let label = label(name);
        let answered = match &system_config.kind {
            SystemKind::Builtin(builtin) => crate::stages::answer(
                &config.for_builtin(builtin),
                target,
                &benchmark,
                &run.index(),
                &system,
                label.as_deref(),
                reporter,
            )?,
            SystemKind::File(_) if target != run => {
                reporter.warn(&format!(
                    "{name}: answers read from a file cover the generated benchmark only; the \
human-written questions are left unanswered by it (answer them with `hierarag answer {}` and a \
file of their answers)",
                    target.root().display()
                ));
                continue;
            }
            SystemKind::File(file) => crate::stages::import_answers(
                target,
                &benchmark,
                Some(&run.index()),
                name,
                file,
                &system,
                reporter,
            )?,
            SystemKind::Command(command) => crate::stages::answer_with_command(
                target,
                &benchmark,
                Some(&run.index()),
                name,
                command,
                &system,
                reporter,
            )?,
            SystemKind::Http(http) => crate::stages::answer_with_http(
                target,
                &benchmark,
                Some(&run.index()),
                name,
                http,
                &system,
                reporter,
            )?,
        };
        if !finished(outcome, answer_stage, answered) {
            break;
        }
        let evaluated = crate::stages::evaluate(
            config,
            target,
            &benchmark,
            &system.answers(),
            &system,
            label.as_deref(),
            reporter,
        )?;
        if !finished(outcome, evaluate_stage, evaluated) {
            break;
        }
        if config.judge.on {
            let judged = crate::judge::judge_answers(
                config,
                target,
                &benchmark,
                &system.answers(),
                &system,
                label.as_deref(),
                reporter,
            )?;
            if !finished(outcome, judge_stage, judged) {
                break;
            }
        }
    }
    Ok(())
}

/// Adds a stage's pass to the outcome; whether the run goes on (it did not stop).
fn finished(outcome: &mut RunOutcome, stage: &'static str, pass: StageOutcome) -> bool {
    let stopped = pass.stopped.is_some();
    outcome.stages.push((stage, pass));
    if stopped {
        outcome.stopped_at = Some(stage);
    }
    !stopped
}

/// The resolved config as recorded in the manifest (without where it was read from).
fn comparable(config: &RunConfig) -> serde_json::Value {
    let mut value = config.to_json();
    if let Some(object) = value.as_object_mut() {
        object.remove("source");
    }
    value
}

/// A manifest's config as this version records it: `[judge] retries` and `[tag] retries` are
/// now `repairs` (the name `[generate]` has), so that a run started before goes on.
fn migrated(mut config: serde_json::Value) -> serde_json::Value {
    for table in ["judge", "tag"] {
        if let Some(settings) = config.get_mut(table).and_then(|t| t.as_object_mut())
            && let Some(repairs) = settings.remove("retries")
        {
            settings.insert("repairs".into(), repairs);
        }
    }
    config
}

/// A run directory continues only with the config it was started with (unless
/// `reconfigure`), so that one benchmark never mixes settings silently.
/// The mean words of a document of the Wikipedia sample, measured over its 10,033 documents:
/// the estimate's figure for it before it is fetched.
const WIKI_SAMPLE_MEAN_WORDS: f64 = 77.3;

/// Documents whose words the estimate counts.
const ESTIMATE_DOCUMENTS: usize = 2000;

/// What `config`'s run will cost before any call (`hierarag run --dry-run`): nothing is
/// fetched, indexed or written; the corpus' first documents are read for their length when
/// the corpus is on this machine.
pub fn estimate(config: &RunConfig, config_path: &Path) -> anyhow::Result<RunEstimate> {
    let taxonomy = crate::taxonomy::load(config.taxonomy.as_deref())?;
    let questions = match &config.run.benchmark {
        Some(file) => crate::analyze::read_benchmark(file)
            .with_context(|| format!("[run] benchmark {}", file.display()))?
            .len(),
        None => {
            let options = DesignOptions {
                config: Some(config_path.to_path_buf()),
                ..DesignOptions::default()
            };
            crate::plan::design(&options, &taxonomy)?.n_items()
        }
    };
    let corpus = config
        .corpus
        .as_ref()
        .context("a run config for `hierarag run` needs a [corpus] table")?;
    let mut spec = corpus.spec();
    let mut fetched_sample = true;
    for input in &mut spec.inputs {
        if input == crate::corpus::WIKI_SAMPLE_NAME && !Path::new(input).exists() {
            let path = hierarag_assets::wiki_sample_path(&hierarag_assets::Store::from_env()?);
            fetched_sample = path.exists();
            *input = path.to_string_lossy().into_owned();
        }
    }
    let (doc_words, doc_words_source) = match spec.mean_words(ESTIMATE_DOCUMENTS) {
        Some((mean, n)) => (mean, format!("the mean of the corpus' first {n} documents")),
        None if !fetched_sample => (
            WIKI_SAMPLE_MEAN_WORDS,
            "the Wikipedia sample's mean, which is not fetched yet".to_owned(),
        ),
        None => (
            500.0,
            "assumed: the corpus could not be read on this machine".to_owned(),
        ),
    };
    // The filter's reject rate in an earlier pass of this run directory.
    let run = RunDir::new(&config.run.dir);
    let reject_rate = if run.benchmark().exists() && config.run.benchmark.is_none() {
        // Only each line's filter outcome is kept (the rest is skipped while parsing).
        #[derive(serde::Deserialize)]
        struct Filtered {
            #[serde(default)]
            filter: Option<hierarag_records::FilterOutcome>,
        }
        let records: Vec<Filtered> = read_records(&run.benchmark())?;
        let (passed, judged) = records
            .iter()
            .filter_map(|r| r.filter.as_ref())
            .fold((0, 0), |(p, j), f| (p + f.passed, j + f.judged));
        (judged > 0).then(|| 1.0 - passed as f64 / judged as f64)
    } else {
        None
    };
    // Records as the import reads them (a JSON list, CSV cells with line breaks), not lines.
    let human_questions = match &config.human {
        Some(human) => hierarag_results::validity::check_human(human)?,
        None => 0,
    };
    let shape = Shape {
        questions,
        given_benchmark: config.run.benchmark.is_some(),
        doc_words,
        doc_words_source,
        reject_rate,
        human_questions,
    };
    Ok(hierarag_config::estimate::estimate(
        config, &taxonomy, &shape,
    ))
}

/// Puts the `[run] benchmark` file into the run directory (once: the same bytes already there
/// are kept, different ones are refused) with the taxonomy beside it.
fn given_benchmark(
    run: &RunDir,
    file: &std::path::Path,
    taxonomy: &hierarag_taxonomy::Taxonomy,
    reporter: &dyn Reporter,
) -> anyhow::Result<()> {
    let bytes = std::fs::read(file)
        .with_context(|| format!("[run] benchmark {}: cannot read", file.display()))?;
    let n = crate::analyze::read_benchmark(file)
        .with_context(|| format!("[run] benchmark {}", file.display()))?
        .len();
    match std::fs::read(run.benchmark()) {
        Ok(existing) if existing == bytes => {}
        Ok(_) => bail!(
            "{} holds a different benchmark than [run] benchmark {}: use a fresh --dir",
            run.benchmark().display(),
            file.display()
        ),
        Err(_) => write_atomic(&run.benchmark(), &bytes)?,
    }
    write_atomic(&run.taxonomy(), taxonomy.to_toml_string().as_bytes())?;
    reporter.note(&format!(
        "answering the {n} questions of {} ([run] benchmark): no plan, no generation",
        file.display()
    ));
    Ok(())
}

fn check_config(run: &RunDir, config: &RunConfig, reconfigure: bool) -> anyhow::Result<()> {
    let manifest = Manifest::load(run)?;
    if manifest.config.is_null() || reconfigure {
        return Ok(());
    }
    // The analysis settings change no record: a run continues with other ones. Nor do the
    // judge's, while the run was not judged (a judge turned on later mixes nothing).
    let judged_before = manifest.config.get("judge_on") == Some(&serde_json::Value::Bool(true));
    let without_analysis = |mut value: serde_json::Value| {
        if let Some(object) = value.as_object_mut() {
            object.remove("analysis");
            if !judged_before {
                object.retain(|key, _| !key.starts_with("judge"));
            }
        }
        value
    };
    let now = without_analysis(comparable(config));
    let before = without_analysis(migrated(manifest.config.clone()));
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
        run.root().display(),
        changed.join(", ")
    )
}

fn describe(config: &hierarag_llm::LlmConfig) -> String {
    match config.backend {
        hierarag_llm::ChatBackendKind::Embedded => "embedded SmolLM2-135M".into(),
        backend => format!("{backend} {}", config.model),
    }
}

/// Records a stage without LLM calls or failures in the manifest.
fn simple_stage(
    run: &RunDir,
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
        let name = path
            .strip_prefix(run.root())
            .unwrap_or(path)
            .display()
            .to_string();
        record.outputs.insert(
            name,
            OutputFile {
                sha256: file_sha256(path)?.unwrap_or_default(),
                records: items,
            },
        );
    }
    Manifest::update(run, |m| {
        m.stages.insert(stage.to_string(), record);
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn a_manifest_that_says_retries_matches_the_config_that_says_repairs() {
        let text = "[corpus]\ninputs = [\"c.jsonl\"]\n[judge]\nrepairs = 1\n[tag]\nrepairs = 3\n";
        let config = RunConfig::parse(text, Path::new("run.toml")).unwrap();
        assert_eq!(
            (config.judge.settings.repairs, config.tag.settings.repairs),
            (1, 3)
        );
        // The old name is still read, to the same settings.
        let old_text = text.replace("repairs", "retries");
        let old_config = RunConfig::parse(&old_text, Path::new("run.toml")).unwrap();
        assert_eq!(comparable(&old_config), comparable(&config));
        // A manifest of the version before recorded the judge's and the tagger's under it.
        let mut recorded = comparable(&config);
        for (table, n) in [("judge", 1), ("tag", 3)] {
            let settings = recorded[table].as_object_mut().unwrap();
            settings.remove("repairs").unwrap();
            settings.insert("retries".into(), n.into());
        }
        assert_ne!(recorded, comparable(&config));
        assert_eq!(migrated(recorded), comparable(&config));
    }
}
