//! Human validation of a run: the items to rate drawn from its benchmark with their documents
//! from its corpus into `annotations.sqlite`, and the agreement of the ratings written beside
//! the analysis.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use hierarag_analysis::Analysis;
use hierarag_annotate::{
    Agreement, CategoryParents, Item, JudgeInputs, JudgePpi, Question, Rating, RatingsPlan, Sample,
    SampleOptions, Store, SystemAnswer, agreement, judge_agreement, judge_ppi, now_unix_s,
    plan_ratings,
};
use hierarag_corpus::{CorpusFormat, CorpusSpec, OnError};
use hierarag_generate::BenchmarkRecord;
use hierarag_judge::{AnswerGrade, PairRating};
use hierarag_pipeline::ScoreRecord;
use hierarag_pipeline::read_records;
use hierarag_rag::AnswerRecord;
use hierarag_records::CategoryRef;
use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::config::CorpusSection;
use crate::layout::RunDir;
use crate::manifest::Manifest;
use hierarag_pipeline::Reporter;

/// What to draw, and where the documents come from when not from the run's own config.
#[derive(Debug, Clone, Default)]
pub struct SampleRequest {
    /// Items to sample.
    pub n: usize,
    /// Sampled items that also get the category task.
    pub category_subset: usize,
    /// [default: the run's seed, else 42].
    pub seed: Option<u64>,
    /// Corpus inputs [default: the run config's].
    pub corpus: Vec<String>,
    pub format: Option<CorpusFormat>,
    pub id_field: Option<String>,
    pub text_field: Option<String>,
    /// The taxonomy file [default: the run's taxonomy.toml, else the built-in one].
    pub taxonomy: Option<PathBuf>,
    /// Replace an existing store (its ratings are lost).
    pub overwrite: bool,
    /// Put the questions no system answers (the run's `comparison.json`) first.
    pub from_compare: bool,
    /// Put the questions every system fails (the run's `items.json`) first.
    pub from_items: bool,
    /// Systems whose answers to the sampled questions are rated too (the answer task).
    pub answers: Vec<String>,
}

/// Draws the items to rate from `run`'s benchmark and writes the store; returns the sample.
pub fn sample(
    run: &RunDir,
    request: &SampleRequest,
    reporter: &dyn Reporter,
) -> anyhow::Result<Sample> {
    let benchmark_path = run.benchmark();
    if !benchmark_path.exists() {
        bail!(
            "{}: not found (it is written by `hierarag generate` or `hierarag run`)",
            benchmark_path.display()
        );
    }
    let path = run.annotations();
    if path.exists() && !request.overwrite {
        bail!(
            "{}: already exists; pass --overwrite to sample again (its ratings are lost)",
            path.display()
        );
    }
    let manifest = run
        .manifest()
        .exists()
        .then(|| Manifest::load(run))
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
    let taxonomy = crate::taxonomy::of_run(request.taxonomy.as_deref(), Some(run))?;
    let seed = request
        .seed
        .or_else(|| manifest.as_ref().map(|m| m.seed))
        .unwrap_or(42);
    let options = SampleOptions {
        n: request.n,
        category_subset: request.category_subset,
        seed,
    };
    let first: Vec<String> = if request.from_compare {
        let comparison = crate::compare::load(run.root())?.with_context(|| {
            format!(
                "--from-compare: {} has no {} (run `hierarag compare` first)",
                run.root().display(),
                crate::compare::COMPARISON_FILE
            )
        })?;
        reporter.note(&format!(
            "{} question{} no system answers go first",
            comparison.unanswered.len(),
            if comparison.unanswered.len() == 1 {
                ""
            } else {
                "s"
            }
        ));
        comparison.unanswered.into_iter().map(|u| u.id).collect()
    } else if request.from_items {
        let items = crate::items::load(run)?.with_context(|| {
            format!(
                "--from-items: {} has no items.json (run `hierarag items` first)",
                run.root().display()
            )
        })?;
        let failed: Vec<String> = items
            .items
            .items
            .into_iter()
            .filter(|i| i.flags.contains(&hierarag_items::Flag::Failed))
            .map(|i| i.id)
            .collect();
        reporter.note(&format!(
            "{} question{} every system fails go first",
            failed.len(),
            if failed.len() == 1 { "" } else { "s" }
        ));
        failed
    } else {
        Vec::new()
    };
    let mut drawn = hierarag_annotate::sample_with_first(&questions, &taxonomy, &options, &first)
        .with_context(|| format!("sampling from {}", benchmark_path.display()))?;
    for line in &drawn.notes {
        reporter.note(&format!("note: {line}"));
    }

    let (spec, on_error) = corpus_of(run, request, manifest.as_ref())?;
    let spec = crate::corpus::resolve(&spec, reporter)?;
    let texts: HashMap<String, String> = {
        let needed: HashSet<&str> = drawn.doc_ids().into_iter().collect();
        crate::corpus::collect_documents(&spec, on_error, &needed, reporter).with_context(|| {
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

    let answer_items = answer_items(run, &drawn.items, &request.answers, seed)?;
    if !answer_items.is_empty() {
        reporter.note(&format!(
            "{} answer{} of {} to rate too (the answer task; which system answered is not shown)",
            answer_items.len(),
            if answer_items.len() == 1 { "" } else { "s" },
            request.answers.join(", ")
        ));
    }
    drawn.items.extend(answer_items);
    // Replacing the store while the annotation app serves it would lose every rating saved
    // after: the app's lock refuses it.
    let _lock = hierarag_annotate::lock_store(&path)?;
    if request.overwrite {
        remove_store(&path)?;
    }
    let mut meta = drawn.meta();
    meta.push(("created_unix_s", now_unix_s().to_string()));
    meta.push(("benchmark", benchmark_path.display().to_string()));
    Store::create(&path, &drawn.items, &meta)?;
    Ok(drawn)
}

/// The answer-task items: each sampled question answered by each of `systems`, with the
/// question's documents, after the benchmark's items in an order that mixes the systems. An
/// item's id is a hash of the system and the question, so that it does not name the system.
fn answer_items(
    run: &RunDir,
    pair_items: &[Item],
    systems: &[String],
    seed: u64,
) -> anyhow::Result<Vec<Item>> {
    let mut items = Vec::new();
    for name in systems {
        let (name, system) = crate::systems::system_of_run(run, Some(name))?;
        let path = system.answers();
        if !path.exists() {
            bail!(
                "--answers {name}: {} not found (answer the benchmark first)",
                path.display()
            );
        }
        let answers: Vec<AnswerRecord> = read_records(&path)?;
        let by_id: HashMap<&str, &AnswerRecord> =
            answers.iter().map(|a| (a.id.as_str(), a)).collect();
        for pair in pair_items {
            let Some(answer) = by_id.get(pair.item_id.as_str()) else {
                continue;
            };
            let hash = xxh3_64_with_seed(format!("{name}/{}", pair.item_id).as_bytes(), seed);
            items.push(Item {
                item_id: format!("answer-{hash:016x}"),
                position: 0,
                category_task: false,
                choices: Vec::new(),
                answer: Some(SystemAnswer {
                    question_id: pair.item_id.clone(),
                    system: name.clone(),
                    text: answer.answer.clone(),
                }),
                ..pair.clone()
            });
        }
    }
    items.sort_by(|a, b| a.item_id.cmp(&b.item_id));
    for (n, item) in items.iter_mut().enumerate() {
        item.position = u32::try_from(pair_items.len() + n).unwrap_or(u32::MAX);
    }
    Ok(items)
}

/// The corpus to read documents from: the request's options over the run config's [corpus].
fn corpus_of(
    run: &RunDir,
    request: &SampleRequest,
    manifest: Option<&Manifest>,
) -> anyhow::Result<(CorpusSpec, OnError)> {
    let section: Option<CorpusSection> = match manifest.map(|m| &m.config["corpus"]) {
        Some(value) if !value.is_null() => Some(
            serde_json::from_value(value.clone())
                .context("reading the [corpus] config recorded in manifest.json")?,
        ),
        _ => None,
    };
    let inputs = if !request.corpus.is_empty() {
        request.corpus.clone()
    } else if let Some(section) = &section {
        section.inputs.clone()
    } else {
        bail!(
            "no corpus to read the documents from: {} records no [corpus] config; pass \
             --corpus PATH",
            run.manifest().display()
        );
    };
    let spec = CorpusSpec {
        inputs,
        format: request
            .format
            .or_else(|| section.as_ref().and_then(|s| s.format)),
        id_field: request
            .id_field
            .clone()
            .or_else(|| section.as_ref().map(|s| s.id_field.clone()))
            .unwrap_or_else(|| "id".into()),
        text_field: request
            .text_field
            .clone()
            .or_else(|| section.as_ref().map(|s| s.text_field.clone()))
            .unwrap_or_else(|| "text".into()),
    };
    let on_error = section.as_ref().map_or(OnError::Fail, |s| s.on_error);
    Ok((spec, on_error))
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

/// The agreement of `run`'s ratings, written to `agreement.json` (and into `analysis.json`
/// when there is one, so that the report shows it); with rated answers, the judge's means
/// corrected by them too, written to `ppi.json` (with how many ratings an interval of total
/// width `width` needs, when given). A rating of an answer its system no longer gives (the
/// system answered again since) is left out of both, said in the third value and in the
/// PPI's notes.
pub fn agreement_of(
    run: &RunDir,
    width: Option<f64>,
) -> anyhow::Result<(Agreement, Option<JudgePpi>, Option<String>)> {
    let store = Store::open(&run.annotations())?;
    let items = store.items()?;
    let ratings = store.ratings()?;
    let parents = match CategoryParents::from_meta(&store.meta()?) {
        Some(parents) => parents,
        None => CategoryParents::from_taxonomy(&crate::taxonomy::of_run(None, Some(run))?),
    };
    let analysis_path = run.analysis();
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
    let mut result = agreement(&items, &ratings, &parents, analysis.as_ref());
    let metric = match &analysis {
        Some(analysis) => analysis.settings.metric,
        None => run_settings_metric(run)?,
    };
    let inputs = judge_inputs(run, &items, metric.as_str())?;
    // The people's agreement with one another stands; what is set beside the judge (its
    // agreement, PPI) is only the ratings of answers the systems still give.
    let (current, stale) = current_ratings(run, &items, &ratings)?;
    result.judge = judge_agreement(&items, &current, &inputs);
    crate::json::write(&result, &run.agreement())?;
    let confidence = analysis.as_ref().map_or(0.95, |a| a.settings.confidence);
    if let Some(mut analysis) = analysis {
        analysis.human_validation = Some(result.clone());
        crate::analyze::write(&analysis, run.root())?;
    }
    let mut ppi = ppi_of(run, &items, &current, &inputs, 1.0 - confidence, width)?;
    if let Some(ppi) = &mut ppi {
        if let Some(note) = &stale {
            ppi.notes.insert(0, note.clone());
        }
        crate::json::write(ppi, &run.ppi())?;
    }
    Ok((result, ppi, stale))
}

/// The ratings of `items` whose answer is still the one the system gives (its text in the
/// system's `answers.jsonl` is the rated text), and, when some are not (the system answered
/// again after they were rated), a note of how many were left out.
fn current_ratings(
    run: &RunDir,
    items: &[Item],
    ratings: &[Rating],
) -> anyhow::Result<(Vec<Rating>, Option<String>)> {
    let mut answers: HashMap<String, HashMap<String, String>> = HashMap::new();
    let mut changed: HashSet<&str> = HashSet::new();
    for item in items {
        let Some(answer) = &item.answer else {
            continue;
        };
        if !answers.contains_key(&answer.system) {
            let (_, system) = crate::systems::system_of_run(run, Some(&answer.system))?;
            let texts = if system.answers().exists() {
                read_records::<AnswerRecord>(&system.answers())?
                    .into_iter()
                    .map(|record| (record.id, record.answer))
                    .collect()
            } else {
                HashMap::new()
            };
            answers.insert(answer.system.clone(), texts);
        }
        let now = answers[&answer.system].get(&answer.question_id);
        if now != Some(&answer.text) {
            changed.insert(item.item_id.as_str());
        }
    }
    let (current, stale): (Vec<Rating>, Vec<Rating>) = ratings
        .iter()
        .cloned()
        .partition(|rating| !changed.contains(rating.item_id.as_str()));
    let note = (!stale.is_empty()).then(|| {
        let answers: HashSet<&str> = stale.iter().map(|r| r.item_id.as_str()).collect();
        format!(
            "{} rating{} of {} answer{} left out of the judge's agreement and PPI: the system \
answers {} differently now (answered again after the rating{})",
            stale.len(),
            if stale.len() == 1 { "" } else { "s" },
            answers.len(),
            if answers.len() == 1 { "" } else { "s" },
            if answers.len() == 1 {
                "that question"
            } else {
                "those questions"
            },
            if stale.len() == 1 { "" } else { "s" },
        )
    });
    Ok((current, note))
}

/// The judge's means corrected by the people's ratings of the systems whose answers were
/// rated, in the run's order; `None` when no answer was rated.
fn ppi_of(
    run: &RunDir,
    items: &[Item],
    ratings: &[Rating],
    inputs: &JudgeInputs,
    alpha: f64,
    width: Option<f64>,
) -> anyhow::Result<Option<JudgePpi>> {
    let rated: HashSet<&str> = items
        .iter()
        .filter_map(|i| i.answer.as_ref().map(|a| a.system.as_str()))
        .collect();
    let systems: Vec<String> = crate::systems::systems_of_run(run)?
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| rated.contains(name.as_str()))
        .collect();
    if systems.is_empty() {
        return Ok(None);
    }
    let categories: HashMap<String, Vec<CategoryRef>> =
        crate::analyze::read_benchmark(&run.benchmark())?
            .into_iter()
            .map(|entry| (entry.id, entry.categories))
            .collect();
    let mut ppi = judge_ppi(items, ratings, inputs, &categories, &systems, alpha);
    if let Some(width) = width {
        ppi.plans = plan_ratings(items, ratings, inputs, &systems, width, alpha);
    }
    Ok(Some(ppi))
}

/// How many rated answers each system of the store's answer task needs for a PPI interval of
/// total width `width` at level `1 − alpha`, with the ratings so far as the pilot.
pub fn ratings_needed(run: &RunDir, width: f64, alpha: f64) -> anyhow::Result<Vec<RatingsPlan>> {
    let store = Store::open(&run.annotations())?;
    let items = store.items()?;
    let (ratings, _) = current_ratings(run, &items, &store.ratings()?)?;
    let inputs = judge_inputs(run, &items, "cs")?;
    let mut systems: Vec<String> = Vec::new();
    for item in &items {
        if let Some(answer) = &item.answer
            && !systems.contains(&answer.system)
        {
            systems.push(answer.system.clone());
        }
    }
    Ok(plan_ratings(
        &items, &ratings, &inputs, &systems, width, alpha,
    ))
}

/// The run's `ppi.json`, when it has one.
pub fn load_ppi(run: &RunDir) -> anyhow::Result<Option<JudgePpi>> {
    crate::json::load(&run.ppi(), "a PPI file", "hierarag annotate agreement")
}

/// The analysed metric of a run without an analysis: its config's `[analysis] metric`, else CS.
fn run_settings_metric(run: &RunDir) -> anyhow::Result<hierarag_analysis::Metric> {
    if !run.manifest().exists() {
        return Ok(hierarag_analysis::Metric::default());
    }
    let manifest = Manifest::load(run)?;
    Ok(manifest
        .config
        .get("analysis")
        .and_then(|a| a.get("metric"))
        .and_then(|m| serde_json::from_value(m.clone()).ok())
        .unwrap_or_default())
}

/// What the judge and the metrics said about the rated items: the run's
/// `benchmark.judge.jsonl`, and the judgements and scores of every system an answer item
/// names.
fn judge_inputs(run: &RunDir, items: &[Item], metric: &str) -> anyhow::Result<JudgeInputs> {
    let mut inputs = JudgeInputs {
        analysed_metric: metric.to_string(),
        ..JudgeInputs::default()
    };
    let describe =
        |info: &hierarag_generate::ModelInfo| format!("{} ({})", info.model, info.backend);
    if run.benchmark_judgements().exists() {
        let ratings: Vec<PairRating> = read_records(&run.benchmark_judgements())?;
        for rating in ratings {
            inputs.model.get_or_insert_with(|| describe(&rating.judge));
            inputs.pairs.insert(
                rating.id.clone(),
                [
                    rating.correctness,
                    rating.hallucination,
                    rating.answerability,
                ],
            );
        }
    }
    let systems: std::collections::BTreeSet<&str> = items
        .iter()
        .filter_map(|i| i.answer.as_ref().map(|a| a.system.as_str()))
        .collect();
    for name in systems {
        let (name, system) = crate::systems::system_of_run(run, Some(name))?;
        let grades: Vec<AnswerGrade> = read_records(&system.judgements())?;
        for grade in grades {
            inputs.model.get_or_insert_with(|| describe(&grade.judge));
            inputs.answers.insert(
                (grade.id.clone(), name.clone()),
                [Some(grade.correctness), grade.hallucination],
            );
        }
        let scores: Vec<ScoreRecord> = read_records(&system.scores())?;
        for score in scores {
            let mut values = vec![
                ("cs".to_string(), score.cs),
                ("rouge1".to_string(), score.rouge1),
                ("bleu".to_string(), score.bleu),
            ];
            if let Some(judge) = score.judge {
                values.push(("judge".to_string(), judge));
            }
            inputs
                .scores
                .insert((score.id.clone(), name.clone()), values);
        }
    }
    Ok(inputs)
}
