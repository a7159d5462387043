//! The analysis of a run: benchmark, scores and answers joined by question id into the
//! analysis crate's observations, the human validation beside it, `analysis.json` written.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use hierarag_analysis::{Analysis, Observation, Scores, Settings, Texts};
use hierarag_generate::BenchmarkRecord;
use hierarag_pipeline::{ScoreRecord, read_records, write_atomic};
use hierarag_rag::AnswerRecord;
use hierarag_taxonomy::Taxonomy;

use crate::layout::RunDir;
use crate::manifest::Manifest;

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
pub fn load_agreement(run: &RunDir) -> anyhow::Result<Option<hierarag_analysis::Agreement>> {
    let path = run.agreement();
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

/// A benchmark joined with its scores (and answers) by question id.
#[derive(Debug)]
pub struct Scored {
    pub benchmark: Vec<BenchmarkRecord>,
    pub observations: Vec<Observation>,
    /// The scores file was not there (nothing answered or evaluated yet).
    pub scores_missing: bool,
    /// How many benchmark questions have no score.
    pub unscored: usize,
}

/// Joins benchmark, scores and (optionally) answers by question id; a scored id the benchmark
/// lacks is an error.
pub fn load_scored(
    benchmark: &Path,
    scores: &Path,
    answers: Option<&Path>,
) -> anyhow::Result<Scored> {
    let benchmark = read_benchmark(benchmark)?;
    let (observations, scores_missing, unscored) = join_scored(&benchmark, scores, answers)?;
    Ok(Scored {
        benchmark,
        observations,
        scores_missing,
        unscored,
    })
}

/// The records of a `benchmark.jsonl`; its absence is an error that says what writes it.
pub fn read_benchmark(path: &Path) -> anyhow::Result<Vec<BenchmarkRecord>> {
    if !path.exists() {
        bail!(
            "{}: not found (it is written by `hierarag generate` or `hierarag import`)",
            path.display()
        );
    }
    Ok(read_records(path)?)
}

/// [`load_scored`] on a benchmark already read (several systems' scores against one):
/// the observations, whether the scores file was missing, and how many questions have no score.
pub fn join_scored(
    benchmark: &[BenchmarkRecord],
    scores: &Path,
    answers: Option<&Path>,
) -> anyhow::Result<(Vec<Observation>, bool, usize)> {
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
        let observation = Observation {
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
        };
        observations.extend(per_dimension(observation, &record.design));
    }
    if !unknown.is_empty() {
        bail!(
            "{} scored question{} not in the benchmark (first: {}); are the files from the same run?",
            unknown.len(),
            if unknown.len() == 1 { " is" } else { "s are" },
            unknown[0]
        );
    }
    let scored: std::collections::HashSet<&str> = scores.iter().map(|s| s.id.as_str()).collect();
    let unscored = benchmark
        .iter()
        .filter(|r| !scored.contains(r.id.as_str()))
        .count();
    Ok((observations, scores_missing, unscored))
}

/// An imported question categorised on several dimensions at once is analysed once per
/// dimension: as `<id>@<dimension>` in the set `import/<dimension>`, so that every dimension's
/// levels are compared over all the questions (a generated question has one category, or one
/// per factor of its factorial cell, and stays as it is).
fn per_dimension(observation: Observation, design: &str) -> Vec<Observation> {
    if design != "import" || observation.categories.len() < 2 {
        return vec![observation];
    }
    observation
        .categories
        .iter()
        .map(|category| Observation {
            id: format!("{}@{}", observation.id, category.dimension),
            set: format!("{}/{}", observation.set, category.dimension),
            categories: vec![category.clone()],
            ..observation.clone()
        })
        .collect()
}

/// Joins benchmark, scores and (optionally) answers by question id and analyses them.
pub fn analyze_files(
    benchmark: &Path,
    scores: &Path,
    answers: Option<&Path>,
    taxonomy: &Taxonomy,
    settings: &Settings,
) -> anyhow::Result<Analysis> {
    let scores_path = scores;
    let Scored {
        benchmark,
        observations,
        scores_missing,
        unscored,
    } = load_scored(benchmark, scores, answers)?;
    let mut analysis = hierarag_analysis::analyze(&observations, taxonomy, settings);
    analysis.counts.unscored = unscored;
    if scores_missing {
        analysis.notes.insert(
            0,
            format!(
                "no scores yet ({} not found): the {} benchmark questions cannot be \
compared; run `hierarag answer` and `hierarag evaluate`",
                scores_path
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
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

/// Writes `analysis.json` atomically into `dir`; returns its path.
pub fn write(analysis: &Analysis, dir: &Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = RunDir::new(dir).analysis();
    let mut bytes = serde_json::to_vec_pretty(analysis)?;
    bytes.push(b'\n');
    write_atomic(&path, &bytes)?;
    Ok(path)
}
