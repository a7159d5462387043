//! `hierarag power`: how many questions a run's granularity findings need, from the run as a
//! pilot, and what generating them would cost (`power.json`).
//!
//! The analysis crate plans each test ([`hierarag_analysis::power`]); this module reads the run
//! and prices each plan like the pilot: plan items per accepted question from the pilot's
//! plan and benchmark, LLM calls and tokens per item by the plan estimate over the pilot's own
//! items of those sets (their documents read from the run's corpus), and one answering call a
//! question.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use hierarag_analysis::{PowerAnalysis, PowerSettings, Settings};
use hierarag_plan::{GenerationSettings, PlanItem, count_words, estimate_items};
use hierarag_taxonomy::Taxonomy;
use serde::{Deserialize, Serialize};

use crate::config::CorpusSection;
use crate::layout::RunDir;
use crate::manifest::Manifest;
use hierarag_pipeline::Reporter;

/// `power.json`: the plans, and what each would cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PowerReport {
    #[serde(flatten)]
    pub power: PowerAnalysis,
    /// Per planned test, in the same order: the cost of the size it needs (`steps[i].per_category`
    /// set) and of the planned size (`--per-category` given).
    pub costs: Vec<StepCost>,
    /// Why a cost is missing or rough.
    pub cost_notes: Vec<String>,
}

/// The questions one planned step needs, and the LLM work to make and answer them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepCost {
    /// `needed`: the questions for the wanted power; `planned`: the planned design's.
    pub size: SizeKind,
    pub dimension: String,
    pub level: hierarag_taxonomy::Granularity,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub against: Option<hierarag_taxonomy::Granularity>,
    /// Accepted questions over the step's levels.
    pub questions: usize,
    /// Plan items to generate for them, at the pilot's share of items that became questions.
    pub plan_items: u64,
    pub generation_calls: u64,
    pub filter_calls: u64,
    /// One answer a question, for one system.
    pub answer_calls: u64,
    /// Generation and filter prompt and completion tokens (None when the pilot's documents
    /// could not be read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
}

/// Which size a [`StepCost`] prices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SizeKind {
    Needed,
    Planned,
}

/// Plans the run in `run` as a pilot (the scores of `system`) and prices the plans.
pub fn plan_run(
    run: &RunDir,
    system: &crate::layout::SystemDir,
    taxonomy: &Taxonomy,
    settings: &Settings,
    power: &PowerSettings,
    reporter: &dyn Reporter,
) -> anyhow::Result<PowerReport> {
    let scored = crate::analyze::load_scored(&run.benchmark(), &system.scores(), None)?;
    if scored.scores_missing {
        anyhow::bail!(
            "{}: not found; the pilot needs scores (run `hierarag answer` and `hierarag \
evaluate`, or `hierarag run`)",
            system.scores().display()
        );
    }
    let counter = reporter.counter("simulating studies of each planned test", "tests", None);
    let analysis = hierarag_analysis::power(
        &scored.observations,
        taxonomy,
        settings,
        power,
        &|done, total| {
            counter.set_length(total as u64);
            counter.set_position(done as u64);
        },
    );
    drop(counter);
    let mut cost_notes = Vec::new();
    let plan: Vec<PlanItem> = if run.plan().exists() {
        hierarag_pipeline::read_input(&run.plan(), |item: &PlanItem| item.item_id.as_str())?
    } else {
        cost_notes.push(format!(
            "{}: not found, so the plan items per question are taken as 1",
            run.plan().display()
        ));
        Vec::new()
    };
    let manifest = run
        .manifest()
        .exists()
        .then(|| Manifest::load(run))
        .transpose()?;
    let generation = generation_settings(manifest.as_ref());
    let doc_words = document_words(manifest.as_ref(), &plan, reporter, &mut cost_notes);
    let mut costs = Vec::new();
    for step in &analysis.steps {
        let categories = step.categories + step.against_categories;
        let sizes = [
            (SizeKind::Needed, step.questions),
            (
                SizeKind::Planned,
                power.per_category.map(|n| n * categories),
            ),
        ];
        for (size, questions) in sizes {
            let Some(questions) = questions else {
                continue;
            };
            costs.push(price(
                step,
                size,
                questions,
                &plan,
                &scored.benchmark,
                doc_words.as_deref(),
                taxonomy,
                generation,
            ));
        }
    }
    Ok(PowerReport {
        power: analysis,
        costs,
        cost_notes,
    })
}

/// The cost of `questions` questions of one test, like the pilot's of the same sets.
#[allow(clippy::too_many_arguments)]
fn price(
    step: &hierarag_analysis::StepPower,
    size: SizeKind,
    questions: usize,
    plan: &[PlanItem],
    benchmark: &[crate::analyze::BenchmarkEntry],
    doc_words: Option<&[Vec<usize>]>,
    taxonomy: &Taxonomy,
    generation: GenerationSettings,
) -> StepCost {
    let sets: Vec<&str> = std::iter::once(step.set.as_str())
        .chain(step.against_set.as_deref())
        .collect();
    let items: Vec<usize> = (0..plan.len())
        .filter(|&i| sets.contains(&plan[i].set.as_str()))
        .collect();
    let accepted = benchmark
        .iter()
        .filter(|r| sets.contains(&r.set.as_str()))
        .count();
    let items_per_question = if items.is_empty() || accepted == 0 {
        1.0
    } else {
        items.len() as f64 / accepted as f64
    };
    let plan_items = (questions as f64 * items_per_question).ceil() as u64;
    let per_item = doc_words.filter(|_| !items.is_empty()).map(|words| {
        let chosen: Vec<PlanItem> = items.iter().map(|&i| plan[i].clone()).collect();
        let lengths: Vec<Vec<usize>> = items.iter().map(|&i| words[i].clone()).collect();
        let estimate = estimate_items(&chosen, &lengths, taxonomy, generation);
        (
            estimate.input_tokens as f64 / items.len() as f64,
            estimate.output_tokens as f64 / items.len() as f64,
        )
    });
    StepCost {
        size,
        dimension: step.dimension.clone(),
        level: step.level,
        against: step.against,
        questions,
        plan_items,
        generation_calls: plan_items,
        filter_calls: if generation.filter { plan_items } else { 0 },
        answer_calls: questions as u64,
        input_tokens: per_item.map(|(input, _)| (input * plan_items as f64).round() as u64),
        output_tokens: per_item.map(|(_, output)| (output * plan_items as f64).round() as u64),
    }
}

/// Candidates a call and the filter, from the run's config (the defaults without one).
fn generation_settings(manifest: Option<&Manifest>) -> GenerationSettings {
    let mut settings = GenerationSettings::default();
    if let Some(generate) = manifest.and_then(|m| m.config.get("generate")) {
        if let Some(candidates) = generate.get("candidates").and_then(|v| v.as_u64()) {
            settings.candidates = candidates as usize;
        }
        if let Some(filter) = generate.get("filter").and_then(|v| v.as_bool()) {
            settings.filter = filter;
        }
    }
    settings
}

/// The words of each plan item's documents, read from the run's corpus; None (with a note)
/// when the corpus is not known or cannot be read.
fn document_words(
    manifest: Option<&Manifest>,
    plan: &[PlanItem],
    reporter: &dyn Reporter,
    notes: &mut Vec<String>,
) -> Option<Vec<Vec<usize>>> {
    if plan.is_empty() {
        return None;
    }
    let corpus = manifest
        .and_then(|m| m.config.get("corpus"))
        .filter(|c| !c.is_null())
        .and_then(|c| serde_json::from_value::<CorpusSection>(c.clone()).ok());
    let Some(corpus) = corpus else {
        notes.push(
            "the run's manifest names no corpus, so tokens are not estimated (calls are)".into(),
        );
        return None;
    };
    let ids: HashSet<&str> = plan
        .iter()
        .flat_map(|item| item.doc_ids.iter().map(String::as_str))
        .collect();
    let read = crate::corpus::resolve(&corpus.spec(), reporter)
        .and_then(|spec| crate::corpus::collect_documents(&spec, corpus.on_error, &ids, reporter));
    match read {
        Ok(texts) => Some(
            plan.iter()
                .map(|item| {
                    item.doc_ids
                        .iter()
                        .map(|id| texts.get(id).map_or(0, |text| count_words(text)))
                        .collect()
                })
                .collect(),
        ),
        Err(error) => {
            notes.push(format!(
                "the run's corpus could not be read ({error:#}), so tokens are not estimated \
(calls are)"
            ));
            None
        }
    }
}

/// Writes `power.json` atomically into `dir`; returns its path.
pub fn write(report: &PowerReport, dir: &Path) -> anyhow::Result<PathBuf> {
    let path = RunDir::new(dir).power();
    crate::json::write(report, &path)?;
    Ok(path)
}
