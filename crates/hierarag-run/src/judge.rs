//! `hierarag judge` over a run directory: the LLM judge grades every answer of a system
//! (`judgements.jsonl`, whose grades go into `scores.jsonl` as `judge_correctness`,
//! `judge_hallucination` and `judge`), and rates every benchmark QA pair as the annotators do
//! (`benchmark.judge.jsonl`); with `[judge.screen]`, the pairs it rates below the bounds leave
//! the benchmark for `screened.jsonl`. Resumable, cached and parallel like the other stages.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use anyhow::Context;
use hierarag_corpus::{CorpusSpec, OnError};
use hierarag_generate::BenchmarkRecord;
use hierarag_index::Bm25Index;
use hierarag_judge::{Judge, PairRating, ScreenSettings};
use hierarag_pipeline::{
    Journal, JudgeStage, RatePairsStage, StageOutcome, merge_grades, read_input, read_records,
    retain_records,
};
use hierarag_rag::AnswerRecord;
use serde::{Deserialize, Serialize};

use crate::config::RunConfig;
use crate::layout::{RunDir, SystemDir};
use crate::models::batch_client;
use crate::stages::{StageRun, runtime, stage_key, usage};
use hierarag_pipeline::Reporter;

/// Grades the answers (`answers_path`, normally the system's) not yet in `system`'s
/// `judgements.jsonl` with the `[judge]`
/// settings and `[judge.llm]` model of `config`, then writes every grade into the system's
/// `scores.jsonl` (when it has been evaluated). The passages a grade checks hallucination
/// against are the context texts the system returned, else the answer's retrieved chunks, read
/// from the run's index; an answer with neither is graded for correctness only.
pub fn judge_answers(
    config: &RunConfig,
    run: &RunDir,
    benchmark_path: &Path,
    answers_path: &Path,
    system: &SystemDir,
    label: Option<&str>,
    reporter: &dyn Reporter,
) -> anyhow::Result<StageOutcome> {
    let pass = StageRun::start(run, stage_key("judge", label), system.root(), reporter)?;
    let key = pass.key().to_owned();
    let benchmark: Vec<BenchmarkRecord> =
        read_input(benchmark_path, |r: &BenchmarkRecord| r.id.as_str())?;
    let answers: Vec<AnswerRecord> = read_input(answers_path, |r: &AnswerRecord| r.id.as_str())?;
    let max_words = config.answer.settings.max_chunk_words;
    let passages = passages_of(run, &answers, max_words, &key, reporter)?;
    let judge_llm = config.judge_llm();
    let client = batch_client(judge_llm, run.root(), judge_llm.batch, reporter)?;
    let judge = Judge::new(
        &client,
        config.judge.settings.clone(),
        crate::language::of_run(Some(config), run),
    );
    let (judgements, failures) = (system.judgements(), system.failures("judge"));
    let stage = JudgeStage {
        benchmark: &benchmark,
        answers: &answers,
        passages: &passages,
        judge: &judge,
        judgements: &judgements,
        failures: &failures,
        concurrency: config.judge.concurrency,
    };
    let progress = pass.progress();
    let outcome = pass.passes(&runtime()?, &[&client], || stage.run(&progress))?;
    drop(progress);
    let graded = merge_grades(&system.scores(), &judgements)?;
    if system.scores().exists() {
        reporter.note(&format!(
            "{key}: {graded} scores of {} carry the judge's grade",
            system.scores().display()
        ));
    }
    let usages = vec![usage("judge", &client, config.judge_llm())];
    let scores = system.scores();
    let mut outputs = vec![judgements.as_path()];
    if scores.exists() {
        outputs.push(&scores);
    }
    pass.finish(
        &outcome,
        usages,
        &failures,
        &[benchmark_path, answers_path],
        &outputs,
    )?;
    Ok(outcome)
}

/// The text of every chunk the answers without context texts of their own retrieved, by chunk
/// id, from the run's index, as the answer stage passed it to the model (cut at `max_words`
/// words): what the system was given is what its answer's claims are checked against. Empty
/// (with a warning) when the run has no index or the answers name no chunk.
fn passages_of(
    run: &RunDir,
    answers: &[AnswerRecord],
    max_words: usize,
    key: &str,
    reporter: &dyn Reporter,
) -> anyhow::Result<HashMap<String, String>> {
    let without = answers
        .iter()
        .filter(|a| a.contexts.is_empty() && a.retrieved.is_empty())
        .count();
    if without > 0 {
        reporter.warn(&format!(
            "{key}: {without} of {} answers come with no passage: the judge grades their \
correctness only, and their hallucination is left absent (`no_passages` in judgements.jsonl)",
            answers.len()
        ));
    }
    let wanted: HashSet<&str> = answers
        .iter()
        .filter(|a| a.contexts.is_empty())
        .flat_map(|a| a.retrieved.iter().map(|c| c.doc_id.as_str()))
        .collect();
    if wanted.is_empty() {
        return Ok(HashMap::new());
    }
    let Some(index) = open_index(run)? else {
        reporter.warn(&format!(
            "{key}: the run has no index ({}): the judge sees no retrieved passage",
            run.index().display()
        ));
        return Ok(HashMap::new());
    };
    let chunks = index
        .chunks_of(&wanted)
        .with_context(|| format!("reading passages from {}", run.index().display()))?;
    Ok(chunks
        .into_iter()
        .map(|c| (c.chunk_id, hierarag_rag::passage_text(&c.text, max_words)))
        .collect())
}

fn open_index(run: &RunDir) -> anyhow::Result<Option<Bm25Index>> {
    let dir = run.index();
    if !dir.join("manifest.json").exists() {
        return Ok(None);
    }
    Ok(Some(Bm25Index::open(&dir).with_context(|| {
        format!("opening the index {}", dir.display())
    })?))
}

/// Rates every benchmark QA pair not yet in the run's `benchmark.judge.jsonl` on the
/// annotators' scales (reference correctness, hallucination, answerability) against the
/// pair's source documents: from the config's corpus when it has one, else the run's index.
pub fn judge_benchmark(
    config: &RunConfig,
    run: &RunDir,
    benchmark_path: &Path,
    reporter: &dyn Reporter,
) -> anyhow::Result<StageOutcome> {
    rate_benchmark(config, run, benchmark_path, None, reporter)
}

/// [`judge_benchmark`], the documents read from `corpus` when given.
fn rate_benchmark(
    config: &RunConfig,
    run: &RunDir,
    benchmark_path: &Path,
    corpus: Option<(&CorpusSpec, OnError)>,
    reporter: &dyn Reporter,
) -> anyhow::Result<StageOutcome> {
    let key = "judge-benchmark";
    let pass = StageRun::start(run, key, run.root(), reporter)?;
    let benchmark: Vec<BenchmarkRecord> =
        read_input(benchmark_path, |r: &BenchmarkRecord| r.id.as_str())?;
    let needed: HashSet<&str> = benchmark
        .iter()
        .flat_map(|r| r.doc_ids.iter().map(String::as_str))
        .collect();
    let documents = match corpus {
        Some((spec, on_error)) => {
            crate::corpus::collect_documents(spec, on_error, &needed, reporter)?
        }
        None => documents_of(config, run, &needed, reporter)?,
    };
    let missing = benchmark
        .iter()
        .filter(|r| r.doc_ids.iter().any(|id| !documents.contains_key(id)))
        .count();
    if missing > 0 {
        reporter.warn(&format!(
            "{key}: {missing} of {} pairs have a source document that was not found: the judge \
rates them against the documents that were",
            benchmark.len()
        ));
    }
    let judge_llm = config.judge_llm();
    let client = batch_client(judge_llm, run.root(), judge_llm.batch, reporter)?;
    let judge = Judge::new(
        &client,
        config.judge.settings.clone(),
        crate::language::of_run(Some(config), run),
    );
    let (ratings, failures) = (run.benchmark_judgements(), run.failures(key));
    let stage = RatePairsStage {
        benchmark: &benchmark,
        documents: &documents,
        judge: &judge,
        ratings: &ratings,
        failures: &failures,
        concurrency: config.judge.concurrency,
    };
    let progress = pass.progress();
    let outcome = pass.passes(&runtime()?, &[&client], || stage.run(&progress))?;
    drop(progress);
    let usages = vec![usage("judge", &client, config.judge_llm())];
    pass.finish(&outcome, usages, &failures, &[benchmark_path], &[&ratings])?;
    Ok(outcome)
}

/// A QA pair the judge's screen took out of the benchmark: one line of `screened.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScreenedPair {
    pub id: String,
    /// Which bounds the rating missed.
    pub reason: String,
    pub rating: PairRating,
    pub record: BenchmarkRecord,
}

/// What the screen did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Screened {
    /// Pairs in the benchmark before and after.
    pub before: usize,
    pub kept: usize,
    /// Pairs the judge could not rate in this pass (kept, and rated again next time).
    pub unrated: usize,
}

/// The quality screen of a generated benchmark: the judge rates every pair
/// ([`judge_benchmark`]), then the pairs whose rating misses a bound of `screen` are appended
/// to `screened.jsonl` with their ratings and dropped from `benchmark.judge.jsonl` and
/// `benchmark.jsonl` (rewritten atomically; the kept lines are unchanged). Generation treats a screened pair as done, so it is not made again. Refused
/// once a system of the run has answered (its answers would name questions that are gone).
/// The documents come from `corpus` when given, else as [`judge_benchmark`] finds them.
pub fn screen_benchmark(
    config: &RunConfig,
    run: &RunDir,
    screen: &ScreenSettings,
    corpus: Option<(&CorpusSpec, OnError)>,
    reporter: &dyn Reporter,
) -> anyhow::Result<(StageOutcome, Screened)> {
    let outcome = rate_benchmark(config, run, &run.benchmark(), corpus, reporter)?;
    let benchmark: Vec<BenchmarkRecord> = read_records(&run.benchmark())?;
    let ratings: HashMap<String, PairRating> =
        read_records::<PairRating>(&run.benchmark_judgements())?
            .into_iter()
            .map(|r| (r.id.clone(), r))
            .collect();
    let mut dropped = Vec::new();
    let mut kept = HashSet::new();
    for record in &benchmark {
        let rating = ratings.get(&record.id);
        match rating.and_then(|r| screen.drops(r, record.unanswerable)) {
            Some(reason) => dropped.push(ScreenedPair {
                id: record.id.clone(),
                reason,
                rating: rating.expect("a rating").clone(),
                record: record.clone(),
            }),
            None => {
                kept.insert(record.id.clone());
            }
        }
    }
    let screened = Screened {
        before: benchmark.len(),
        kept: kept.len(),
        unrated: benchmark
            .iter()
            .filter(|r| !ratings.contains_key(&r.id))
            .count(),
    };
    if !dropped.is_empty() {
        let answered: Vec<String> = config
            .answering_systems()
            .iter()
            .map(|s| crate::systems::dir_of(run, config, &s.name).answers())
            .filter(|path| path.exists())
            .map(|path| path.display().to_string())
            .collect();
        if !answered.is_empty() {
            anyhow::bail!(
                "screen: {} pair(s) fall below [judge.screen], but the benchmark has been \
answered already ({}): screening now would leave answers to questions that are gone; screen in \
a fresh run directory, or remove [judge.screen]",
                dropped.len(),
                answered.join(", ")
            );
        }
        // screened.jsonl first (it keeps the ratings), then the ratings, then the benchmark:
        // after a crash between two of these the next pass rates the pair again (from the
        // response cache) or finds it screened, and only rewrites.
        let mut journal = Journal::open(&run.screened(), "id")?;
        for pair in &dropped {
            if !journal.contains(&pair.id) {
                journal.append(pair)?;
            }
        }
        drop(journal);
        retain_records(&run.benchmark_judgements(), "id", &kept)?;
        retain_records(&run.benchmark(), "id", &kept)?;
    }
    reporter.note(&format!(
        "screen: {} of {} pairs kept; {} dropped to {}{}",
        screened.kept,
        screened.before,
        dropped.len(),
        run.screened().display(),
        if screened.unrated > 0 {
            format!(
                " ({} the judge could not rate are kept; they are rated again next time)",
                screened.unrated
            )
        } else {
            String::new()
        }
    ));
    Ok((outcome, screened))
}

/// The texts of the documents `needed`: read from the config's corpus, or else put together
/// from the chunks of the run's index.
fn documents_of(
    config: &RunConfig,
    run: &RunDir,
    needed: &HashSet<&str>,
    reporter: &dyn Reporter,
) -> anyhow::Result<HashMap<String, String>> {
    if let Some(corpus) = &config.corpus {
        let spec = crate::corpus::resolve(&corpus.spec(), reporter)?;
        return crate::corpus::collect_documents(&spec, corpus.on_error, needed, reporter);
    }
    let index = open_index(run)?.with_context(|| {
        format!(
            "the judge needs the pairs' source documents: give a run config with a [corpus] \
(--config), or a run with an index ({})",
            run.index().display()
        )
    })?;
    let mut documents: HashMap<String, String> = HashMap::new();
    for chunk in index.chunks_of(needed)? {
        let text = documents.entry(chunk.doc_id).or_default();
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&chunk.text);
    }
    Ok(documents)
}
