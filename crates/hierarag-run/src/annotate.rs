//! Human validation of a run: the items to rate drawn from its benchmark with their documents
//! from its corpus into `annotations.sqlite`, and the agreement of the ratings written beside
//! the analysis.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use hierarag_analysis::Analysis;
use hierarag_annotate::{
    Agreement, CategoryParents, Question, Sample, SampleOptions, Store, agreement, now_unix_s,
};
use hierarag_corpus::{CorpusFormat, CorpusSpec, OnError};
use hierarag_generate::BenchmarkRecord;
use hierarag_pipeline::{read_records, write_atomic};

use crate::config::CorpusSection;
use crate::layout::RunDir;
use crate::manifest::Manifest;
use crate::reporter::Reporter;

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

    if request.overwrite {
        remove_store(&path)?;
    }
    let mut meta = drawn.meta();
    meta.push(("created_unix_s", now_unix_s().to_string()));
    meta.push(("benchmark", benchmark_path.display().to_string()));
    Store::create(&path, &drawn.items, &meta)?;
    Ok(drawn)
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
/// when there is one, so that the report shows it).
pub fn agreement_of(run: &RunDir) -> anyhow::Result<Agreement> {
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
    let result = agreement(&items, &ratings, &parents, analysis.as_ref());
    let mut bytes = serde_json::to_vec_pretty(&result)?;
    bytes.push(b'\n');
    write_atomic(&run.agreement(), &bytes)?;
    if let Some(mut analysis) = analysis {
        analysis.human_validation = Some(result.clone());
        crate::analyze::write(&analysis, run.root())?;
    }
    Ok(result)
}
