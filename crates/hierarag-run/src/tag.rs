//! `hierarag tag` over a run directory: every benchmark question labelled on every dimension
//! of the run's taxonomy (`tags.jsonl`), resumable, cached and parallel like the other stages.

use std::path::Path;

use anyhow::{Context, bail};
use hierarag_generate::BenchmarkRecord;
use hierarag_pipeline::{StageOutcome, TagStage, read_input};
use hierarag_tag::{Example, Tagger};
use hierarag_taxonomy::Taxonomy;

use crate::config::RunConfig;
use crate::layout::RunDir;
use crate::models::batch_client;
use crate::stages::{StageRun, runtime, usage};
use hierarag_pipeline::Reporter;

/// The examples a run's own questions give: each generated question (not an imported one,
/// whose categories were not made for the taxonomy's descriptions) under each category it was
/// generated for.
pub fn examples_of(benchmark: &[BenchmarkRecord]) -> Vec<Example> {
    benchmark
        .iter()
        .filter(|record| record.source.is_none())
        .flat_map(|record| {
            record.categories.iter().map(|category| Example {
                id: record.id.clone(),
                dimension: category.dimension.clone(),
                category: category.category.clone(),
                question: record.question.clone(),
            })
        })
        .collect()
}

/// Tags the questions of `benchmark` not yet in the run's `tags.jsonl` with the `[tag]`
/// settings and `[tag.llm]` model of `config`.
pub fn tag(
    config: &RunConfig,
    run: &RunDir,
    benchmark_path: &Path,
    taxonomy: &Taxonomy,
    reporter: &dyn Reporter,
) -> anyhow::Result<StageOutcome> {
    let root = run.root();
    let pass = StageRun::start(run, "tag", root, reporter)?;
    let benchmark: Vec<BenchmarkRecord> =
        read_input(benchmark_path, |r: &BenchmarkRecord| r.id.as_str())?;
    let tagger_llm = config.tagger_llm();
    let client = batch_client(tagger_llm, root, tagger_llm.batch, reporter)?;
    let examples = examples_of(&benchmark);
    let tagger = Tagger::new(taxonomy, &client, config.tag.settings.clone(), &examples)
        .map_err(|e| anyhow::anyhow!("[tag] dimensions: {e}"))?;
    let with_examples = tagger
        .dimensions()
        .iter()
        .flat_map(|d| &d.choices)
        .filter(|c| !c.examples.is_empty())
        .count();
    reporter.note(&format!(
        "tagging {} questions on {} dimension{} ({}; {} categor{} with examples from the run)",
        benchmark.len(),
        tagger.dimensions().len(),
        if tagger.dimensions().len() == 1 {
            ""
        } else {
            "s"
        },
        tagger
            .dimensions()
            .iter()
            .map(|d| format!("{} of {}", d.choices.len(), d.key))
            .collect::<Vec<_>>()
            .join(", "),
        with_examples,
        if with_examples == 1 { "y" } else { "ies" },
    ));
    let (tags, failures) = (run.tags(), run.failures("tag"));
    keep_taxonomy(run, taxonomy)?;
    let stage = TagStage {
        benchmark: &benchmark,
        tagger: &tagger,
        tags: &tags,
        failures: &failures,
        concurrency: config.tag.concurrency,
    };
    let progress = pass.progress();
    let outcome = pass.passes(&runtime()?, &[&client], || stage.run(&progress))?;
    drop(progress);
    let usages = vec![usage("tagger", &client, config.tagger_llm())];
    pass.finish(&outcome, usages, &failures, &[benchmark_path], &[&tags])?;
    Ok(outcome)
}

/// Writes the taxonomy being tagged against beside `tags.jsonl`; tags made against another
/// taxonomy are an error (their categories would mix).
fn keep_taxonomy(run: &RunDir, taxonomy: &Taxonomy) -> anyhow::Result<()> {
    let path = run.tags_taxonomy();
    let text = taxonomy.to_toml_string();
    let tagged = std::fs::metadata(run.tags()).is_ok_and(|m| m.len() > 0);
    if tagged && path.exists() {
        let before = std::fs::read_to_string(&path)
            .with_context(|| format!("{}: cannot read", path.display()))?;
        if before != text {
            bail!(
                "{} was made against another taxonomy ({}); tag with that one, or remove both \
files to tag again",
                run.tags().display(),
                path.display()
            );
        }
        return Ok(());
    }
    hierarag_pipeline::write_atomic(&path, text.as_bytes())?;
    Ok(())
}
