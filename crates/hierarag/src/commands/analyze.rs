//! `hierarag analyze`: which dimension and granularity discriminate, from a run's scores
//! (analysis.json).

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use hierarag_analysis::{Analysis, Metric, Observation, Scores, Settings, Texts, format_delta};
use hierarag_generate::BenchmarkRecord;
use hierarag_pipeline::{
    ANSWERS_FILE, BENCHMARK_FILE, MANIFEST_FILE, Manifest, SCORES_FILE, ScoreRecord, read_records,
    write_atomic,
};
use hierarag_rag::AnswerRecord;
use hierarag_taxonomy::Taxonomy;

use crate::output::note;

/// The analysis file of a run directory.
pub const ANALYSIS_FILE: &str = "analysis.json";
pub use hierarag_annotate::AGREEMENT_FILE;
/// The taxonomy a run was planned with, kept beside its plan.
pub const TAXONOMY_FILE: &str = "taxonomy.toml";

/// `hierarag analyze`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Statistics (DESIGN.md §8), per (set, dimension, level) of questions:
  DiscPow   standard deviation of the category means of --metric (ddof 0)
  range     max − min of those means
  NMI       normalised mutual information of categories and --bins equal-frequency bins
  Δ         DiscPow / DiscPow of the next coarser level (4.8× or −16%)
  ρ         per split: σ_sib / (δ_vert + ε), σ_sib the std of the children's means,
            δ_vert |parent mean − mean of the children's means|; > 2 well calibrated, < 1 poor
Intervals are bootstrap percentile intervals (resampling within categories); the DiscPow
p-value comes from shuffling category labels within the level. The recommended level of a
dimension is the finest reached by steps whose DiscPow gain is supported by the interval of Δ."
)]
pub struct AnalyzeArgs {
    /// A run directory: reads benchmark.jsonl, scores.jsonl, answers.jsonl (optional, for
    /// corpus BLEU), taxonomy.toml and manifest.json there, writes analysis.json there.
    #[arg(value_name = "RUN_DIR", required_unless_present_all = ["benchmark", "scores"])]
    pub dir: Option<PathBuf>,
    /// The benchmark (categories and reference answers) [default: RUN_DIR/benchmark.jsonl].
    #[arg(long, value_name = "FILE")]
    pub benchmark: Option<PathBuf>,
    /// The scores [default: RUN_DIR/scores.jsonl].
    #[arg(long, value_name = "FILE")]
    pub scores: Option<PathBuf>,
    /// The answers, for corpus BLEU per category [default: RUN_DIR/answers.jsonl if present].
    #[arg(long, value_name = "FILE")]
    pub answers: Option<PathBuf>,
    /// The taxonomy (TOML or DataMorgana JSON) [default: RUN_DIR/taxonomy.toml, else the
    /// built-in one].
    #[arg(long, value_name = "FILE")]
    pub taxonomy: Option<PathBuf>,
    /// Where analysis.json goes [default: RUN_DIR, else the scores' directory].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub settings: SettingsArgs,
    /// Print analysis.json to stdout instead of the summary tables.
    #[arg(long)]
    pub json: bool,
}

/// Options of the statistics; unset ones come from the run config's [analysis] table (in a
/// run directory's manifest) or the defaults.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SettingsArgs {
    /// The metric whose category means are compared: ap, ndcg_10, recall_10, rr, cs, rouge1,
    /// bleu, refused [default: cs].
    #[arg(long, value_name = "METRIC")]
    pub metric: Option<Metric>,
    /// Degrees of freedom of the standard deviation (0 population, 1 sample) [default: 0].
    #[arg(long, value_name = "N")]
    pub ddof: Option<u32>,
    /// Equal-frequency bins of the metric for NMI [default: 5].
    #[arg(long, value_name = "N")]
    pub bins: Option<usize>,
    /// ε of the Coherence Ratio [default: 0.001].
    #[arg(long, value_name = "X")]
    pub epsilon: Option<f64>,
    /// Bootstrap resamples; 0 for no intervals [default: 1000].
    #[arg(long, value_name = "N")]
    pub bootstrap: Option<usize>,
    /// Label permutations for the DiscPow p-value; 0 for none [default: 1000].
    #[arg(long, value_name = "N")]
    pub permutations: Option<usize>,
    /// Coverage of the intervals [default: 0.95].
    #[arg(long, value_name = "X")]
    pub confidence: Option<f64>,
    /// Seed of the resampling [default: the run's seed, else 0].
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
}

impl SettingsArgs {
    /// These options over `base`.
    pub fn apply(&self, base: Settings) -> anyhow::Result<Settings> {
        let mut settings = base;
        if let Some(metric) = self.metric {
            settings.metric = metric;
        }
        if let Some(ddof) = self.ddof {
            settings.ddof = ddof;
        }
        if let Some(bins) = self.bins {
            settings.nmi_bins = bins;
        }
        if let Some(epsilon) = self.epsilon {
            settings.epsilon = epsilon;
        }
        if let Some(bootstrap) = self.bootstrap {
            settings.bootstrap = bootstrap;
        }
        if let Some(permutations) = self.permutations {
            settings.permutations = permutations;
        }
        if let Some(confidence) = self.confidence {
            settings.confidence = confidence;
        }
        if let Some(seed) = self.seed {
            settings.seed = seed;
        }
        check(&settings)?;
        Ok(settings)
    }
}

/// Rejects settings the statistics cannot use.
pub fn check(settings: &Settings) -> anyhow::Result<()> {
    if settings.nmi_bins < 2 {
        bail!("the number of NMI bins (--bins, nmi_bins) must be at least 2");
    }
    if !(settings.confidence > 0.0 && settings.confidence < 1.0) {
        bail!("the confidence (--confidence) must be between 0 and 1, e.g. 0.95");
    }
    if !(settings.epsilon >= 0.0 && settings.epsilon.is_finite()) {
        bail!("epsilon (--epsilon) must be a finite number ≥ 0");
    }
    Ok(())
}

pub fn run(args: &AnalyzeArgs, quiet: bool) -> anyhow::Result<ExitCode> {
    let dir = args.dir.as_deref();
    let in_dir = |name: &str, given: &Option<PathBuf>| -> anyhow::Result<PathBuf> {
        match (given, dir) {
            (Some(path), _) => Ok(path.clone()),
            (None, Some(dir)) => Ok(dir.join(name)),
            (None, None) => bail!(
                "give a run directory or --{}",
                name.trim_end_matches(".jsonl")
            ),
        }
    };
    let benchmark = in_dir(BENCHMARK_FILE, &args.benchmark)?;
    let scores = in_dir(SCORES_FILE, &args.scores)?;
    let answers = match (&args.answers, dir) {
        (Some(path), _) => Some(path.clone()),
        (None, Some(dir)) => Some(dir.join(ANSWERS_FILE)).filter(|p| p.exists()),
        (None, None) => None,
    };
    let manifest = dir
        .filter(|d| d.join(MANIFEST_FILE).exists())
        .map(Manifest::load)
        .transpose()?;
    let base = match &manifest {
        Some(manifest) => settings_of_manifest(manifest)?,
        None => Settings::default(),
    };
    let settings = args.settings.apply(base)?;
    let taxonomy = load_taxonomy(args.taxonomy.as_deref(), dir)?;
    let out_dir = args
        .out
        .clone()
        .or_else(|| dir.map(Path::to_path_buf))
        .unwrap_or_else(|| super::stages::out_dir(None, &scores));
    let mut analysis = analyze_files(
        &benchmark,
        &scores,
        answers.as_deref(),
        &taxonomy,
        &settings,
    )?;
    if let Some(dir) = dir {
        analysis.human_validation = load_agreement(dir)?;
    }
    let path = write(&analysis, &out_dir)?;
    if args.json {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut out, &analysis)?;
        writeln!(out)?;
    } else {
        print_summary(&analysis)?;
    }
    note(quiet, format!("wrote {}", path.display()));
    Ok(ExitCode::SUCCESS)
}

/// The [analysis] settings a run was made with (the defaults, with the run's seed, if none).
pub fn settings_of_manifest(manifest: &Manifest) -> anyhow::Result<Settings> {
    match manifest.config.get("analysis") {
        Some(value) if !value.is_null() => serde_json::from_value(value.clone())
            .context("manifest.json: the [analysis] settings of the run config"),
        _ => Ok(Settings {
            seed: manifest.seed,
            ..Settings::default()
        }),
    }
}

/// The run's human validation (`agreement.json` of `hierarag annotate agreement`), if any.
pub fn load_agreement(dir: &Path) -> anyhow::Result<Option<hierarag_analysis::Agreement>> {
    let path = dir.join(AGREEMENT_FILE);
    if !path.exists() {
        return Ok(None);
    }
    let bytes = std::fs::read(&path).with_context(|| format!("{}: cannot read", path.display()))?;
    let agreement = serde_json::from_slice(&bytes).with_context(|| {
        format!(
            "{}: not an agreement file (rerun `hierarag annotate agreement`)",
            path.display()
        )
    })?;
    Ok(Some(agreement))
}

/// `--taxonomy`, else the run's `taxonomy.toml`, else the built-in taxonomy.
pub fn load_taxonomy(path: Option<&Path>, dir: Option<&Path>) -> anyhow::Result<Taxonomy> {
    if path.is_some() {
        return super::taxonomy::load(path);
    }
    match dir.map(|d| d.join(TAXONOMY_FILE)).filter(|p| p.exists()) {
        Some(saved) => super::taxonomy::load(Some(&saved)),
        None => super::taxonomy::load(None),
    }
}

/// Joins benchmark, scores and (optionally) answers by question id and analyses them.
pub fn analyze_files(
    benchmark: &Path,
    scores: &Path,
    answers: Option<&Path>,
    taxonomy: &Taxonomy,
    settings: &Settings,
) -> anyhow::Result<Analysis> {
    if !benchmark.exists() {
        bail!(
            "{}: not found (it is written by `hierarag generate`)",
            benchmark.display()
        );
    }
    let benchmark: Vec<BenchmarkRecord> = read_records(benchmark)?;
    // Without scores there is nothing to compare yet: say so in the analysis, not by failing.
    let scores_missing = !scores.exists();
    let scores: Vec<ScoreRecord> = if scores_missing {
        Vec::new()
    } else {
        read_records(scores)?
    };
    let answers: HashMap<String, String> = match answers {
        Some(path) => read_records::<AnswerRecord>(path)?
            .into_iter()
            .map(|a| (a.id, a.answer))
            .collect(),
        None => HashMap::new(),
    };
    let by_id: HashMap<&str, &BenchmarkRecord> =
        benchmark.iter().map(|r| (r.id.as_str(), r)).collect();
    let mut observations = Vec::with_capacity(scores.len());
    let mut unknown = Vec::new();
    for score in &scores {
        let Some(record) = by_id.get(score.id.as_str()) else {
            unknown.push(score.id.clone());
            continue;
        };
        observations.push(Observation {
            id: score.id.clone(),
            set: record.set.clone(),
            categories: record.categories.clone(),
            scores: Scores {
                ap: score.ap,
                ndcg_10: score.ndcg_10,
                recall_10: score.recall_10,
                rr: score.rr,
                cs: score.cs,
                rouge1: score.rouge1,
                bleu: score.bleu,
                refused: score.refused,
            },
            texts: answers.get(&score.id).map(|answer| Texts {
                prediction: answer.clone(),
                reference: record.answer.clone(),
            }),
        });
    }
    if !unknown.is_empty() {
        bail!(
            "{} scored question{} not in the benchmark (first: {}); are the files from the same run?",
            unknown.len(),
            if unknown.len() == 1 { " is" } else { "s are" },
            unknown[0]
        );
    }
    let mut analysis = hierarag_analysis::analyze(&observations, taxonomy, settings);
    let scored: std::collections::HashSet<&str> = scores.iter().map(|s| s.id.as_str()).collect();
    analysis.counts.unscored = benchmark
        .iter()
        .filter(|r| !scored.contains(r.id.as_str()))
        .count();
    if scores_missing {
        analysis.notes.insert(
            0,
            format!(
                "no scores yet ({SCORES_FILE} not found): the {} benchmark questions cannot be \
compared; run `hierarag answer` and `hierarag evaluate`",
                benchmark.len()
            ),
        );
    } else if analysis.counts.unscored > 0 {
        analysis.notes.insert(
            0,
            format!(
                "{} of {} benchmark questions have no score (not answered, or their answer \
failed) and are left out of every statistic",
                analysis.counts.unscored,
                benchmark.len()
            ),
        );
    }
    Ok(analysis)
}

/// Writes analysis.json atomically; returns its path.
pub fn write(analysis: &Analysis, dir: &Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(ANALYSIS_FILE);
    let mut bytes = serde_json::to_vec_pretty(analysis)?;
    bytes.push(b'\n');
    write_atomic(&path, &bytes)?;
    Ok(path)
}

fn opt(value: Option<f64>, digits: usize) -> String {
    value.map_or_else(|| "–".into(), |v| format!("{v:.digits$}"))
}

/// Tables 1 and 2, the splits and the recommendations, on stdout.
pub fn print_summary(analysis: &Analysis) -> anyhow::Result<()> {
    let metric = analysis.settings.metric.mean_label();
    let mut out = std::io::stdout().lock();
    if !analysis.table1.is_empty() {
        writeln!(out, "Dimensions at the coarse level (Table 1)")?;
        writeln!(
            out,
            "  {:<12} {:>5} {:>6} {:>6} {:>6} {:>5}",
            "dimension", "n", "MAP", metric, "range", "rank"
        )?;
        for row in &analysis.table1 {
            writeln!(
                out,
                "  {:<12} {:>5} {:>6.3} {:>6.3} {:>6} {:>5}",
                row.dimension,
                row.n,
                row.map,
                row.metric,
                opt(row.range, 3),
                row.rank.map_or_else(|| "–".into(), |r| r.to_string())
            )?;
        }
    }
    if !analysis.table2.is_empty() {
        writeln!(out, "\nGranularity (Table 2)")?;
        writeln!(
            out,
            "  {:<10} {:<10} {:>5} {:>6} {:>6} {:>6} {:>8} {:>6}",
            "dimension", "level", "n", "MAP", metric, "NMI", "DiscPow", "Δ"
        )?;
        for row in &analysis.table2 {
            writeln!(
                out,
                "  {:<10} {:<10} {:>5} {:>6.3} {:>6.3} {:>6} {:>8} {:>6}",
                row.dimension,
                format!("{} ({})", row.level, row.n_categories),
                row.n,
                row.map,
                row.metric,
                opt(row.nmi, 3),
                opt(row.discpow.map(|d| d.value), 3),
                row.delta
                    .map_or_else(|| "–".into(), |d| format_delta(d.value))
            )?;
        }
    }
    if !analysis.splits.is_empty() {
        writeln!(out, "\nSplits (Coherence Ratio)")?;
        for split in &analysis.splits {
            writeln!(
                out,
                "  {:<4} {:<28} σ_sib {:.3}  δ_vert {:.3}  ρ {:>7.2}  {}",
                split.dimension,
                split.parent,
                split.sigma_sib.value,
                split.delta_vert.value,
                split.rho.value,
                split.calibration.describe()
            )?;
        }
    }
    for factorial in &analysis.factorials {
        writeln!(out, "\nFactorial {}", factorial.set)?;
        for effect in factorial.main_effects.iter().chain(&factorial.interaction) {
            writeln!(out, "  {:<44} {:+.3}", effect.contrast, effect.value.value)?;
        }
        if let Some(anova) = &factorial.anova {
            writeln!(
                out,
                "  interaction F({}, {}) = {:.2}, p = {:.3}",
                anova.interaction.df, anova.residual_df, anova.interaction.f, anova.interaction.p
            )?;
        }
    }
    drop(out);
    print_recommendations(analysis)?;
    let mut out = std::io::stdout().lock();
    if !analysis.notes.is_empty() {
        writeln!(out, "\nNot computed")?;
        for line in &analysis.notes {
            writeln!(out, "  {line}")?;
        }
    }
    Ok(())
}

/// The recommended granularity of each dimension, with the reason, on stdout.
pub fn print_recommendations(analysis: &Analysis) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    let recommendations: Vec<_> = analysis
        .dimensions
        .iter()
        .filter_map(|d| d.recommendation.as_ref().map(|r| (d, r)))
        .collect();
    if !recommendations.is_empty() {
        writeln!(out, "\nRecommended granularity")?;
        for (dimension, recommendation) in recommendations {
            writeln!(
                out,
                "  {}: {} — {}",
                dimension.dimension, recommendation.level, recommendation.reason
            )?;
        }
    }
    Ok(())
}
