//! `hierarag tag` over a run directory: every benchmark question labelled on every dimension
//! of the run's taxonomy (`tags.jsonl`), resumable, cached and parallel like the other stages.

use std::path::Path;

use anyhow::Context;
use hierarag_generate::BenchmarkRecord;
use hierarag_pipeline::{StageOutcome, TagStage, read_input, read_records};
use hierarag_tag::{Example, TagRecord, Tagger};
use hierarag_taxonomy::Taxonomy;

use crate::config::RunConfig;
use crate::layout::RunDir;
use crate::manifest::now_unix_s;
use crate::models::chat_client;
use crate::reporter::{Reporter, StageProgress};
use crate::stages::{record_stage, report, runtime, stage_counter, usage};

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
    let started = now_unix_s();
    let root = run.root();
    std::fs::create_dir_all(root).with_context(|| format!("creating {}", root.display()))?;
    let benchmark: Vec<BenchmarkRecord> =
        read_input(benchmark_path, |r: &BenchmarkRecord| r.id.as_str())?;
    let client = chat_client(config.tagger_llm(), root, reporter)?;
    let examples = examples_of(&benchmark);
    let tagger = Tagger::new(taxonomy, &client, config.tag.clone(), &examples)
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
    let stage = TagStage {
        benchmark: &benchmark,
        tagger: &tagger,
        tags: &tags,
        failures: &failures,
        concurrency: config.tag_concurrency,
    };
    let counter = stage_counter(reporter, "tag");
    let outcome = runtime()?.block_on(stage.run(&StageProgress(&*counter)))?;
    drop(counter);
    let usages = vec![usage("tagger", &client, config.tagger_llm())];
    report("tag", &outcome, &usages, &failures, reporter);
    record_stage(
        run,
        "tag",
        started,
        &outcome,
        &[benchmark_path],
        &[&tags],
        usages,
    )?;
    Ok(outcome)
}

/// The tags of a run, if it has been tagged.
pub fn load_tags(run: &RunDir) -> anyhow::Result<Option<Vec<TagRecord>>> {
    let path = run.tags();
    if !path.exists() {
        return Ok(None);
    }
    Ok(Some(read_records(&path)?))
}
