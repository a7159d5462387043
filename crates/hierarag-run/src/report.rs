//! The report of a run: the run summary from its manifest and the questions with their
//! answers and scores, rendered by the report crate into `report.md` and `report.html`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use hierarag_analysis::Analysis;
use hierarag_generate::BenchmarkRecord;
use hierarag_pipeline::{ScoreRecord, read_records, write_atomic};
use hierarag_rag::AnswerRecord;
use hierarag_report::{
    FailureRow, QuestionRow, QuestionScores, ReportInput, RunSummary, StageRow, UsageRow,
};
use hierarag_taxonomy::Taxonomy;

use crate::layout::RunDir;
use crate::manifest::Manifest;

/// Renders both reports of a run directory into `out`; returns their paths.
pub fn write(
    run: &RunDir,
    analysis: &Analysis,
    taxonomy: &Taxonomy,
    title: Option<&str>,
    out: &Path,
) -> anyhow::Result<(PathBuf, PathBuf)> {
    let dir = run.root();
    let manifest = if run.manifest().exists() {
        Some(Manifest::load(run)?)
    } else {
        None
    };
    let (questions, designs) = question_rows(run)?;
    let mut summary = summary(dir, manifest.as_ref());
    if !designs.is_empty() {
        summary
            .facts
            .insert(1, ("design".into(), designs.join(", ")));
    }
    let input = ReportInput {
        title: title.map_or_else(
            || format!("HieraRAG report: {}", dir.display()),
            str::to_owned,
        ),
        summary,
        analysis,
        taxonomy: Some(taxonomy),
        questions,
    };
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let out = RunDir::new(out);
    let (md, html) = (out.report_md(), out.report_html());
    write_atomic(&md, hierarag_report::markdown(&input).as_bytes())?;
    write_atomic(&html, hierarag_report::html(&input).as_bytes())?;
    Ok((md, html))
}

/// The run summary from the manifest: config facts, stages, usage, failures.
fn summary(dir: &Path, manifest: Option<&Manifest>) -> RunSummary {
    let mut summary = RunSummary::default();
    summary
        .facts
        .push(("run directory".into(), dir.display().to_string()));
    let Some(manifest) = manifest else {
        return summary;
    };
    let config = &manifest.config;
    let text = |value: &serde_json::Value| match value {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    };
    if let Some(inputs) = config.pointer("/corpus/inputs").and_then(|v| v.as_array()) {
        let names: Vec<String> = inputs.iter().map(text).collect();
        summary.facts.push(("corpus".into(), names.join(", ")));
    }
    let model = |role: &str| -> Option<String> {
        let llm = config
            .get(role)
            .filter(|v| !v.is_null())
            .or_else(|| config.get("llm"))?;
        let backend = text(llm.get("backend")?);
        let model = llm.get("model").map(text).unwrap_or_default();
        Some(if model.is_empty() {
            backend
        } else {
            format!("{backend} {model}")
        })
    };
    for (label, role) in [
        ("generator", "generate_llm"),
        ("filter", "filter_llm"),
        ("answerer", "answer_llm"),
    ] {
        if let Some(description) = model(role) {
            summary.facts.push((label.into(), description));
        }
    }
    if let Some(retriever) = config.get("retriever") {
        summary.facts.push(("retriever".into(), text(retriever)));
    }
    summary
        .facts
        .push(("seed".into(), manifest.seed.to_string()));
    summary.facts.push((
        "tool".into(),
        format!("{} {}", manifest.tool, manifest.version),
    ));
    for (stage, record) in &manifest.stages {
        summary.stages.push(StageRow {
            stage: stage.clone(),
            items: record.items,
            written: record.written,
            failed: record.failed,
            seconds: record.seconds,
        });
        for usage in &record.usage {
            summary.usage.push(UsageRow {
                stage: stage.clone(),
                role: usage.role.clone(),
                model: format!("{} {}", usage.summary.backend, usage.summary.model),
                requests: usage.summary.requests,
                cache_hits: usage.summary.cache_hits,
                failures: usage.summary.failures,
                prompt_tokens: usage.summary.prompt_tokens,
                completion_tokens: usage.summary.completion_tokens,
                seconds: usage.summary.latency_ms / 1000.0,
                cost: usage.cost,
            });
        }
        summary
            .failures
            .extend(record.failures.iter().map(|f| FailureRow {
                stage: f.stage.clone(),
                item: f.item_id.clone(),
                reason: f.reason.clone(),
            }));
    }
    // Pipeline order rather than alphabetical.
    let order = [
        "index", "plan", "generate", "answer", "evaluate", "analyze", "report",
    ];
    summary.stages.sort_by_key(|s| {
        order
            .iter()
            .position(|o| *o == s.stage.split(':').next().unwrap_or(&s.stage))
            .unwrap_or(order.len())
    });
    summary
}

/// One row per benchmark question, with its answer and scores where they exist; and the
/// designs the questions come from.
fn question_rows(run: &RunDir) -> anyhow::Result<(Vec<QuestionRow>, Vec<String>)> {
    let benchmark: Vec<BenchmarkRecord> = optional_records(&run.benchmark())?;
    let (_, system) = crate::systems::system_of_run(run, None)?;
    let mut designs: Vec<String> = benchmark.iter().map(|r| r.design.clone()).collect();
    designs.sort_unstable();
    designs.dedup();
    let answers: HashMap<String, AnswerRecord> = optional_records(&system.answers())?
        .into_iter()
        .map(|a: AnswerRecord| (a.id.clone(), a))
        .collect();
    let scores: HashMap<String, ScoreRecord> = optional_records(&system.scores())?
        .into_iter()
        .map(|s: ScoreRecord| (s.id.clone(), s))
        .collect();
    let rows = benchmark
        .into_iter()
        .map(|record| {
            let answer = answers.get(&record.id);
            let score = scores.get(&record.id);
            QuestionRow {
                categories: record
                    .categories
                    .iter()
                    .map(|c| format!("{}/{}: {}", c.dimension, c.level, c.category))
                    .collect(),
                set: record.set,
                question: record.question,
                reference: record.answer,
                answer: answer.map(|a| a.answer.clone()),
                refused: answer.is_some_and(|a| a.refused),
                source_docs: record.doc_ids,
                retrieved_docs: answer.map(|a| a.doc_ids.clone()).unwrap_or_default(),
                scores: score.map(|s| QuestionScores {
                    ap: s.ap,
                    ndcg_10: s.ndcg_10,
                    recall_10: s.recall_10,
                    cs: s.cs,
                    rouge1: s.rouge1,
                    bleu: s.bleu,
                }),
                id: record.id,
            }
        })
        .collect();
    Ok((rows, designs))
}

fn optional_records<T: serde::de::DeserializeOwned>(path: &Path) -> anyhow::Result<Vec<T>> {
    if path.exists() {
        Ok(read_records(path)?)
    } else {
        Ok(Vec::new())
    }
}
