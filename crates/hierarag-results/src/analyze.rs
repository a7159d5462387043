//! The analysis of a run: benchmark, scores and answers joined by question id into the
//! analysis crate's observations, the human validation beside it, `analysis.json` written.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use hierarag_analysis::{
    Analysis, Observation, Scores, Settings, TagAnalysis, TaggedQuestion, Texts, analyze_tags,
};
use hierarag_pipeline::{ScoreRecord, read_records};
use hierarag_plan::CategoryRef;
use hierarag_rag::AnswerRecord;
use hierarag_tag::TagRecord;
use hierarag_taxonomy::Taxonomy;
use serde::Deserialize;

use crate::layout::RunDir;
use crate::manifest::Manifest;
use crate::tags::RunTags;

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
    crate::json::load(
        &run.agreement(),
        "an agreement file",
        "hierarag annotate agreement",
    )
}

/// What the analysis, the comparison and the power study need of a benchmark question: a
/// `benchmark.jsonl` line read without the generator's and filter's records, the documents and
/// the source, which are skipped while parsing. A question then takes a few hundred bytes of
/// memory instead of about 3 KB, which matters from 100,000 questions on.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct BenchmarkEntry {
    pub id: String,
    pub question: String,
    /// The reference answer.
    pub answer: String,
    pub design: String,
    pub set: String,
    pub categories: Vec<CategoryRef>,
    #[serde(default)]
    pub unanswerable: bool,
}

/// A benchmark joined with its scores (and answers) by question id.
#[derive(Debug)]
pub struct Scored {
    pub benchmark: Vec<BenchmarkEntry>,
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

/// The questions of a `benchmark.jsonl`; its absence is an error that says what writes it.
pub fn read_benchmark(path: &Path) -> anyhow::Result<Vec<BenchmarkEntry>> {
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
    benchmark: &[BenchmarkEntry],
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
    let by_id: HashMap<&str, &BenchmarkEntry> =
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
            unanswerable: record.unanswerable,
            scores: Scores {
                ap: score.ap,
                ndcg_10: score.ndcg_10,
                recall_10: score.recall_10,
                rr: score.rr,
                cs: score.cs,
                rouge1: score.rouge1,
                bleu: score.bleu,
                refused: score.refused,
                judge_correctness: score.judge_correctness.map(f64::from),
                judge_hallucination: score.judge_hallucination.map(f64::from),
                judge: score.judge,
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

/// Joins benchmark, scores and (optionally) answers by question id and analyses them. With
/// `run`, its tags (`hierarag tag`) are analysed too, and supply the categories of imported
/// questions that have none below the coarse level.
pub fn analyze_files(
    benchmark: &Path,
    scores: &Path,
    answers: Option<&Path>,
    taxonomy: &Taxonomy,
    settings: &Settings,
    run: Option<&RunDir>,
) -> anyhow::Result<Analysis> {
    let scores_path = scores;
    let Scored {
        benchmark,
        observations,
        scores_missing,
        unscored,
    } = load_scored(benchmark, scores, answers)?;
    let tags = match run {
        Some(run) => crate::tags::load_tags(run)?,
        None => None,
    };
    let mut tag_notes = Vec::new();
    let (observations, analysed_taxonomy, tag_sets) = match &tags {
        Some(tags) => on_tags(&benchmark, observations, taxonomy, tags, &mut tag_notes),
        None => (observations, taxonomy.clone(), Vec::new()),
    };
    let mut analysis = hierarag_analysis::analyze(&observations, &analysed_taxonomy, settings);
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
    if !scores_missing {
        let scores: Vec<ScoreRecord> = read_records(scores_path)?;
        let judged = scores
            .iter()
            .filter(|s| s.judge_correctness.is_some())
            .count();
        let without = scores
            .iter()
            .filter(|s| s.judge_correctness.is_some() && s.judge_hallucination.is_none())
            .count();
        if without > 0 {
            analysis.notes.push(format!(
                "{without} of {judged} judged answers came with no passage (the system returned \
no context text, and no retrieved chunk could be read): the judge graded their correctness \
only, and judge_hallucination leaves them out"
            ));
        }
    }
    if let (Some(tags), Some(run)) = (&tags, run) {
        let scored: HashMap<&str, Scores> = observations
            .iter()
            .map(|o| (o.id.as_str(), o.scores))
            .collect();
        let mut result = tag_analysis(&benchmark, &scored, tags, &analysis, settings, run)?;
        result.tag_sets = tag_sets;
        result.notes.splice(0..0, tag_notes);
        analysis.tags = Some(result);
    }
    Ok(analysis)
}

/// With tags, imported questions that carry no category below the coarse level are analysed
/// on their tags: one observation per tagged dimension and level (`<id>@<dimension>/<level>`,
/// set `tags/<dimension>`), in place of their own labels on the dimensions the tags cover; the
/// taxonomy analysed is the tags' with the run's other dimensions after it.
fn on_tags(
    benchmark: &[BenchmarkEntry],
    observations: Vec<Observation>,
    taxonomy: &Taxonomy,
    tags: &RunTags,
    notes: &mut Vec<String>,
) -> (Vec<Observation>, Taxonomy, Vec<String>) {
    let imported: Vec<&BenchmarkEntry> =
        benchmark.iter().filter(|r| r.design == "import").collect();
    let flat = imported.iter().all(|r| {
        r.categories
            .iter()
            .all(|c| c.level == hierarag_taxonomy::Granularity::Coarse)
    });
    if imported.is_empty() || !flat {
        return (observations, taxonomy.clone(), Vec::new());
    }
    let tagged: HashMap<&str, &TagRecord> = tags
        .records
        .iter()
        .map(|record| (record.id.as_str(), record))
        .collect();
    let covered: Vec<&str> = tags
        .taxonomy
        .dimensions
        .iter()
        .map(|d| d.key.as_str())
        .collect();
    let is_import: HashMap<&str, bool> = benchmark
        .iter()
        .map(|r| (r.id.as_str(), r.design == "import"))
        .collect();
    let mut kept = Vec::with_capacity(observations.len());
    let mut replaced = 0;
    let mut added: Vec<Observation> = Vec::new();
    let mut done: std::collections::HashSet<String> = std::collections::HashSet::new();
    for observation in observations {
        // A multi-labelled import was split per dimension as `<id>@<dimension>`.
        let base = match observation.id.split_once('@') {
            Some((base, _)) if !is_import.contains_key(observation.id.as_str()) => base,
            _ => observation.id.as_str(),
        };
        if !is_import.get(base).copied().unwrap_or(false) {
            kept.push(observation);
            continue;
        }
        let own_dimension_covered = observation
            .categories
            .iter()
            .any(|c| covered.contains(&c.dimension.as_str()));
        if done.insert(base.to_string())
            && let Some(record) = tagged.get(base)
        {
            for (dimension, tag) in &record.tags {
                for (level, category) in &tag.categories {
                    added.push(Observation {
                        id: format!("{base}@{dimension}/{level}"),
                        set: format!("tags/{dimension}"),
                        categories: vec![hierarag_plan::CategoryRef {
                            dimension: dimension.clone(),
                            level: *level,
                            category: category.clone(),
                        }],
                        ..observation.clone()
                    });
                }
            }
        }
        if own_dimension_covered {
            replaced += 1;
        } else {
            kept.push(observation);
        }
    }
    let mut tag_sets: Vec<String> = added.iter().map(|o| o.set.clone()).collect();
    tag_sets.sort();
    tag_sets.dedup();
    if !added.is_empty() {
        notes.push(format!(
            "imported questions analysed on their tags: {} observation(s) in {}; a question \
counts once per tagged level, so the levels of a dimension share their questions and Δ and \
ρ compare the same questions grouped three ways{}",
            added.len(),
            tag_sets.join(", "),
            if replaced > 0 {
                format!(
                    "; {replaced} observation(s) of the file's own labels on a tagged dimension \
are left out (compared with the tags under agreement)"
                )
            } else {
                String::new()
            }
        ));
    }
    kept.extend(added);
    let mut merged = tags.taxonomy.clone();
    merged.dimensions.extend(
        taxonomy
            .dimensions
            .iter()
            .filter(|d| !covered.contains(&d.key.as_str()))
            .cloned(),
    );
    if merged.user_categorizations.is_empty() {
        merged.user_categorizations = taxonomy.user_categorizations.clone();
    }
    (kept, merged, tag_sets)
}

/// The tag analysis of a run: agreement, confounders and adjusted effects, and the tagger
/// beside the people of the category task when the run has an annotation store.
fn tag_analysis(
    benchmark: &[BenchmarkEntry],
    scored: &HashMap<&str, Scores>,
    tags: &RunTags,
    analysis: &Analysis,
    settings: &Settings,
    run: &RunDir,
) -> anyhow::Result<TagAnalysis> {
    let by_id: HashMap<&str, &TagRecord> = tags
        .records
        .iter()
        .map(|record| (record.id.as_str(), record))
        .collect();
    let questions: Vec<TaggedQuestion> = benchmark
        .iter()
        .map(|record| TaggedQuestion {
            id: record.id.clone(),
            set: record.set.clone(),
            intended: record.categories.clone(),
            imported: record.design == "import",
            scores: scored.get(record.id.as_str()).copied(),
            tags: by_id
                .get(record.id.as_str())
                .map(|t| {
                    t.tags
                        .iter()
                        .map(|(d, tag)| (d.clone(), tag.categories.clone()))
                        .collect()
                })
                .unwrap_or_default(),
        })
        .collect();
    let mut result = analyze_tags(&questions, &tags.taxonomy, analysis, settings);
    result.tagger = tags
        .records
        .first()
        .map(|r| format!("{} ({})", r.tagger.model, r.tagger.backend));
    let store_path = run.annotations();
    if store_path.exists() {
        let store = hierarag_annotate::Store::open(&store_path)?;
        let items = store.items()?;
        let ratings = store.ratings()?;
        let picks: HashMap<String, String> = items
            .iter()
            .filter_map(|item| {
                let tag = by_id
                    .get(item.item_id.as_str())?
                    .tags
                    .get(&item.dimension)?;
                Some((
                    item.item_id.clone(),
                    tag.categories.get(&item.level)?.clone(),
                ))
            })
            .collect();
        result.annotator = hierarag_annotate::tagger_as_annotator(&items, &ratings, &picks);
    }
    Ok(result)
}

/// Writes `analysis.json` atomically into `dir`; returns its path.
pub fn write(analysis: &Analysis, dir: &Path) -> anyhow::Result<PathBuf> {
    let path = RunDir::new(dir).analysis();
    crate::json::write(analysis, &path)?;
    Ok(path)
}
