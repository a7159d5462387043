//! The report of a run: the run summary from its manifest, the questions with their
//! answers and scores, and the comparison of its systems when `comparison.json` is there,
//! rendered by the report crate into `report.md` and `report.html`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use hierarag_analysis::Analysis;
use hierarag_generate::BenchmarkRecord;
use hierarag_pipeline::{ScoreRecord, read_records, write_atomic};
use hierarag_rag::AnswerRecord;
use hierarag_report::{
    FailureRow, QuestionRow, QuestionScores, ReportInput, RunSummary, StageRow, SystemMeans,
    SystemReport, UsageRow,
};
use hierarag_taxonomy::Taxonomy;

use crate::layout::{RunDir, SystemDir};
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
    let systems = crate::systems::systems_of_run(run)?;
    let (questions, designs) = question_rows(run, &systems[0].1)?;
    let others = other_analyses(&systems[1..])?;
    let systems = system_reports(&systems, manifest.as_ref(), analysis, &others)?;
    let comparison = crate::compare::load(dir)?;
    let validity = crate::validity::load(run)?;
    let items = crate::items::load(run)?;
    let ppi = crate::annotate::load_ppi(run)?;
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
        systems,
        comparison: comparison.as_ref(),
        validity: validity.as_ref(),
        items: items.as_ref(),
        ppi: ppi.as_ref(),
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
        "index", "plan", "generate", "answer", "evaluate", "analyze", "compare", "report",
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
fn question_rows(
    run: &RunDir,
    system: &SystemDir,
) -> anyhow::Result<(Vec<QuestionRow>, Vec<String>)> {
    let benchmark: Vec<BenchmarkRecord> = optional_records(&run.benchmark())?;
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

/// The `analysis.json` of each of `systems`, by name (absent ones left out).
fn other_analyses(systems: &[(String, SystemDir)]) -> anyhow::Result<HashMap<String, Analysis>> {
    let mut out = HashMap::new();
    for (name, system) in systems {
        let path = RunDir::new(system.root()).analysis();
        if let Some(analysis) = crate::json::load(&path, "an analysis", "hierarag analyze")? {
            out.insert(name.clone(), analysis);
        }
    }
    Ok(out)
}

/// One report entry per named system of the run (none for a run of one unnamed system): what
/// it is, how many questions it answered and had scored, its means, its analysis (`first` for
/// the first system, whose analysis the report shows).
fn system_reports<'a>(
    systems: &[(String, SystemDir)],
    manifest: Option<&Manifest>,
    first: &'a Analysis,
    others: &'a HashMap<String, Analysis>,
) -> anyhow::Result<Vec<SystemReport<'a>>> {
    let configs: Vec<serde_json::Value> = manifest
        .and_then(|m| m.config.get("systems"))
        .and_then(serde_json::Value::as_array)
        .cloned()
        .unwrap_or_default();
    if configs.is_empty() {
        return Ok(Vec::new());
    }
    let default_retriever = manifest
        .and_then(|m| m.config.get("retriever"))
        .and_then(serde_json::Value::as_str)
        .unwrap_or("bm25")
        .to_owned();
    let mut out = Vec::new();
    for (i, (name, system)) in systems.iter().enumerate() {
        let config = configs
            .iter()
            .find(|c| c.get("name").and_then(serde_json::Value::as_str) == Some(name));
        let field = |key: &str| {
            config
                .and_then(|c| c.get(key))
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        };
        let kind = match field("kind").as_deref() {
            Some("builtin") => format!(
                "builtin ({})",
                field("retriever").unwrap_or_else(|| default_retriever.clone())
            ),
            Some("file") => format!("file ({})", field("format").unwrap_or_default()),
            Some(other) => other.to_owned(),
            None => String::new(),
        };
        let answered = optional_records::<AnswerRecord>(&system.answers())?.len();
        let scores: Vec<ScoreRecord> = optional_records(&system.scores())?;
        out.push(SystemReport {
            kind,
            answered,
            scored: scores.len(),
            means: means(&scores),
            analysis: if i == 0 {
                Some(first)
            } else {
                others.get(name)
            },
            name: name.clone(),
        });
    }
    Ok(out)
}

/// Means over scored questions (`None` for none); a retrieval mean over those that have it.
pub fn means<'a>(scores: impl IntoIterator<Item = &'a ScoreRecord>) -> SystemMeans {
    let scores: Vec<&ScoreRecord> = scores.into_iter().collect();
    // `+ 0.0` turns a mean of -0.0 into 0.0.
    let mean = |values: Vec<f64>| {
        (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64 + 0.0)
    };
    let over =
        |f: fn(&ScoreRecord) -> Option<f64>| mean(scores.iter().copied().filter_map(f).collect());
    SystemMeans {
        map: over(|s| s.ap),
        ndcg_10: over(|s| s.ndcg_10),
        recall_10: over(|s| s.recall_10),
        cs: over(|s| Some(s.cs)),
        rouge1: over(|s| Some(s.rouge1)),
        bleu: over(|s| Some(s.bleu)),
        refusal_rate: over(|s| Some(f64::from(u8::from(s.refused)))),
        judge: over(|s| s.judge),
        empty_rankings: scores.iter().filter(|s| s.empty_ranking).count(),
    }
}

fn optional_records<T: serde::de::DeserializeOwned>(path: &Path) -> anyhow::Result<Vec<T>> {
    if path.exists() {
        Ok(read_records(path)?)
    } else {
        Ok(Vec::new())
    }
}
