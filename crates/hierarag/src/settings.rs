//! Arguments (and the run config they name) resolved once into the typed settings that the
//! commands hand to the library crates.

use std::path::{Path, PathBuf};

use anyhow::bail;
use hierarag_analysis::Settings;
use hierarag_corpus::{ChunkParams, CorpusSpec};
use hierarag_index::Level;
use hierarag_run::config::{RunConfig, model_config};
use hierarag_run::plan::DesignOptions;

use crate::cli::{
    AnswerArgs, ChunkArgs, CorpusArgs, GenerateArgs, JudgeArgs, LevelArg, PlanArgs, SettingsArgs,
    TagArgs,
};

/// The corpus of `--corpus` and its options (`wiki-sample` not yet resolved).
pub fn corpus_spec(args: &CorpusArgs) -> CorpusSpec {
    CorpusSpec {
        inputs: args.inputs.clone(),
        format: args.format,
        id_field: args.id_field.clone(),
        text_field: args.text_field.clone(),
    }
}

pub fn chunk_params(args: &ChunkArgs) -> ChunkParams {
    ChunkParams {
        size: args.chunk_size,
        overlap: args.chunk_overlap,
    }
}

pub fn level(arg: LevelArg) -> Level {
    match arg {
        LevelArg::Doc => Level::Doc,
        LevelArg::Chunk => Level::Chunk,
    }
}

/// The design options of `hierarag plan`.
pub fn design_options(args: &PlanArgs) -> DesignOptions {
    DesignOptions {
        kind: args.design,
        config: args.config.clone(),
        per_dimension: args.per_dimension,
        per_level: args.per_level,
        per_cell: args.per_cell,
        dimensions: args.dimensions.clone(),
        factors: args.factors.clone(),
    }
}

/// The model settings of `hierarag generate`: the config file's with the options over them.
pub fn generate_config(args: &GenerateArgs) -> anyhow::Result<RunConfig> {
    let mut config = model_config(args.config.as_deref())?;
    if let Some(k) = args.candidates {
        config.generate.settings.candidates = k.max(1);
    }
    if args.no_filter {
        config.generate.settings.filter = false;
    }
    if args.screen && config.judge.screen.is_none() {
        config.judge.screen = Some(hierarag_run::config::ScreenSettings::default());
    }
    Ok(config)
}

/// The model settings of `hierarag answer`: the config file's with the options over them.
pub fn answer_config(args: &AnswerArgs) -> anyhow::Result<RunConfig> {
    let mut config = model_config(args.config.as_deref())?;
    if let Some(retriever) = args.retriever {
        config.answer.retriever = retriever;
    }
    if let Some(k) = args.top_k {
        config.answer.settings.top_k = k.max(1);
    }
    if let Some(t) = args.temperature {
        config.answer.settings.temperature = t;
    }
    if let Some(seed) = args.seed {
        config.run.seed = seed;
    }
    Ok(config)
}

/// The whole run config of a command over a run directory: `config`, else the config the run
/// was started with (when its file is still there); its `[run] dir` set to `run`. With the
/// path it was read from.
pub fn run_config_of(
    config: Option<&Path>,
    run: &hierarag_run::RunDir,
    reporter: &dyn hierarag_run::Reporter,
) -> anyhow::Result<(RunConfig, PathBuf)> {
    let path = match config {
        Some(path) => path.to_path_buf(),
        None => {
            let manifest = run
                .manifest()
                .exists()
                .then(|| hierarag_run::Manifest::load(run))
                .transpose()?;
            let Some(path) = manifest
                .as_ref()
                .and_then(|m| m.config.get("source"))
                .and_then(|s| s.as_str())
                .map(PathBuf::from)
                .filter(|p| p.is_file())
            else {
                bail!(
                    "{}: no run config recorded for this directory (or its file is gone): give \
--config FILE",
                    run.root().display()
                );
            };
            reporter.note(&format!("the run config {}", path.display()));
            path
        }
    };
    let mut loaded = RunConfig::load(&path)?;
    loaded.run.dir = run.root().to_path_buf();
    Ok((loaded, path))
}

/// The model settings a stand-alone stage over an existing run uses: `config`, else the
/// config the run was started with (when its file is still there), else the defaults; with
/// the run's seed where no file was read.
fn run_model_config(
    config: Option<&Path>,
    run: &hierarag_run::RunDir,
    whose: &str,
    reporter: &dyn hierarag_run::Reporter,
) -> anyhow::Result<(RunConfig, Option<u64>)> {
    let manifest = run
        .manifest()
        .exists()
        .then(|| hierarag_run::Manifest::load(run))
        .transpose()?;
    let started_with = manifest
        .as_ref()
        .and_then(|m| m.config.get("source"))
        .and_then(|s| s.as_str())
        .map(PathBuf::from)
        .filter(|p| p.is_file());
    let path = config.map(Path::to_path_buf).or(started_with);
    if let (None, Some(path)) = (config, &path) {
        reporter.note(&format!("the {whose} settings from {}", path.display()));
    }
    let loaded = model_config(path.as_deref())?;
    let run_seed = path
        .is_none()
        .then(|| manifest.as_ref().map(|m| m.seed))
        .flatten();
    Ok((loaded, run_seed))
}

/// The tagger's settings of `hierarag tag`: `--config`, else the config the run was started
/// with (when its file is still there), else the defaults with the run's seed; the options
/// over them.
pub fn tag_config(
    args: &TagArgs,
    run: &hierarag_run::RunDir,
    reporter: &dyn hierarag_run::Reporter,
) -> anyhow::Result<RunConfig> {
    let (mut config, run_seed) =
        run_model_config(args.config.as_deref(), run, "tagger's", reporter)?;
    if let Some(seed) = run_seed {
        config.tag.settings.seed = seed;
    }
    if let Some(votes) = args.votes {
        if votes == 0 {
            bail!("--votes must be at least 1");
        }
        config.tag.settings.votes = votes;
    }
    if let Some(examples) = args.examples {
        config.tag.settings.examples = examples;
    }
    if let Some(dimensions) = &args.dimensions {
        config.tag.settings.dimensions = dimensions.clone();
    }
    if let Some(concurrency) = args.concurrency {
        config.tag.concurrency = concurrency.max(1);
    }
    Ok(config)
}

/// The statistics: the options over `base` (a run's [analysis] settings, or the defaults).
pub fn analysis_settings(args: &SettingsArgs, base: Settings) -> anyhow::Result<Settings> {
    let mut settings = base;
    if let Some(metric) = args.metric {
        settings.metric = metric;
    }
    if let Some(ddof) = args.ddof {
        settings.ddof = ddof;
    }
    if let Some(bins) = args.bins {
        settings.nmi_bins = bins;
    }
    if let Some(epsilon) = args.epsilon {
        settings.epsilon = epsilon;
    }
    if let Some(bootstrap) = args.bootstrap {
        settings.bootstrap = bootstrap;
    }
    if let Some(permutations) = args.permutations {
        settings.permutations = permutations;
    }
    if let Some(confidence) = args.confidence {
        settings.confidence = confidence;
    }
    if let Some(seed) = args.seed {
        settings.seed = seed;
    }
    if let Err(problem) = settings.check() {
        bail!("{problem}");
    }
    Ok(settings)
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

/// The judge's settings of `hierarag judge`, found as the tagger's are; the options over them.
pub fn judge_config(
    args: &JudgeArgs,
    run: &hierarag_run::RunDir,
    reporter: &dyn hierarag_run::Reporter,
) -> anyhow::Result<RunConfig> {
    let (mut config, run_seed) =
        run_model_config(args.config.as_deref(), run, "judge's", reporter)?;
    if let Some(seed) = run_seed {
        config.judge.settings.seed = seed;
    }
    if let Some(concurrency) = args.concurrency {
        config.judge.concurrency = concurrency.max(1);
    }
    Ok(config)
}
