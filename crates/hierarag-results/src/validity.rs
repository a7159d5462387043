//! The validity check of a run (docs/design.md, "Validity"): the human-written benchmark of
//! `[human]` in `RUN/human/` (imported, tagged against the run's taxonomy, answered and scored
//! by the same systems over the run's index) set beside the generated one, `validity.json`.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use hierarag_analysis::{Metric, Settings};
use hierarag_index::{Bm25Index, Level};
use hierarag_lang::Language;
use hierarag_pipeline::{Reporter, read_records};
use hierarag_records::{BenchmarkRecord, TagRecord};
use hierarag_taxonomy::Taxonomy;
use hierarag_validity::{Benchmark, Question, SystemResult, Validity};

use crate::config::{HumanFormat, HumanSection};
use crate::import::{ImportFields, ImportFormat, ImportRequest};
use crate::layout::{RunDir, SystemDir};

/// How deep the BM25 ranking is read for the relevant document's rank: one not found in the
/// top `GOLD_DEPTH` counts as `GOLD_DEPTH + 1`.
pub const GOLD_DEPTH: usize = 1000;

/// Imports the `[human]` file into `RUN/human/` (once: a benchmark already there is kept),
/// refusing one whose questions are not in the corpus' language.
pub fn import_human(
    run: &RunDir,
    human: &HumanSection,
    language: Language,
    reporter: &dyn Reporter,
) -> anyhow::Result<RunDir> {
    let dir = run.human();
    if dir.benchmark().exists() {
        return Ok(dir);
    }
    let request = ImportRequest {
        input: human.file.clone(),
        format: match human.format() {
            HumanFormat::Jsonl => ImportFormat::Jsonl,
            HumanFormat::Csv => ImportFormat::Csv,
        },
        fields: ImportFields {
            id: human.id.clone(),
            question: Some(human.question.clone()),
            answer: Some(human.answer.clone()),
            doc_ids: human.doc_ids.clone(),
            contexts: None,
            dimensions: Vec::new(),
        },
        taxonomy: None,
        index: Some(run.index()),
        skip_bad_rows: false,
        overwrite: false,
    };
    std::fs::create_dir_all(dir.root())
        .with_context(|| format!("creating {}", dir.root().display()))?;
    let imported = crate::import::import(&dir, &request)
        .with_context(|| format!("[human] file {}", human.file.display()))?;
    let records: Vec<BenchmarkRecord> = read_records(&imported.benchmark)?;
    if let Some(mismatch) =
        crate::language::check_texts(language, records.iter().map(|r| r.question.as_str()))
    {
        std::fs::remove_file(&imported.benchmark).ok();
        bail!(
            "[human] file {}: its questions are not in the corpus language, {} ({mismatch}); \
a human-written benchmark is compared with questions generated in the corpus language, so \
give one in that language, or set [corpus] language to the language of both",
            human.file.display(),
            language.name(),
        );
    }
    reporter.note(&format!(
        "imported {} human-written questions from {} into {}{}",
        imported.written,
        human.file.display(),
        dir.root().display(),
        if imported.without_documents > 0 {
            format!(
                " ({} name no document: no retrieval metrics for them)",
                imported.without_documents
            )
        } else {
            String::new()
        }
    ));
    Ok(dir)
}

/// The system folders of `human` that mirror the run's systems.
pub fn human_system(run: &RunDir, human: &RunDir, name: &str, dir: &SystemDir) -> SystemDir {
    if dir.root() == run.root() {
        human.main_system()
    } else {
        human.system(name)
    }
}

/// Sets the run's generated benchmark beside its human-written one in `RUN/human/`.
pub fn validity_of_run(
    run: &RunDir,
    taxonomy: &Taxonomy,
    settings: &Settings,
    reporter: &dyn Reporter,
) -> anyhow::Result<Validity> {
    let human = run.human();
    if !human.benchmark().exists() {
        bail!(
            "{}: no human-written benchmark; add a [human] table to the run config and run it \
again (docs/guide/validity.md)",
            human.root().display()
        );
    }
    let index = Bm25Index::open(&run.index())
        .with_context(|| format!("opening the index of {}", run.root().display()))?;
    let systems = crate::systems::systems_of_run(run)?;
    let mut sides = Vec::new();
    for is_human in [false, true] {
        let side = if is_human { &human } else { run };
        let records: Vec<BenchmarkRecord> = read_records(&side.benchmark())?;
        let tags: Option<Vec<TagRecord>> = if is_human {
            let tags = crate::tags::load_tags(side)?.with_context(|| {
                format!(
                    "{}: not tagged yet (`hierarag run` tags it; or `hierarag tag {}`)",
                    side.root().display(),
                    side.root().display()
                )
            })?;
            Some(tags.records)
        } else {
            None
        };
        let questions = questions(&records, tags.as_deref(), &index)?;
        let entries = crate::analyze::read_benchmark(&side.benchmark())?;
        let mut results = Vec::new();
        for (name, system) in &systems {
            let system = if is_human {
                human_system(run, &human, name, system)
            } else {
                system.clone()
            };
            if !system.scores().exists() {
                continue;
            }
            let analysis = crate::analyze::analyze_files(
                &side.benchmark(),
                &system.scores(),
                Some(&system.answers()),
                taxonomy,
                settings,
                Some(side),
            )?;
            let (observations, _, _) =
                crate::analyze::join_scored(&entries, &system.scores(), None)?;
            let scores = observations.into_iter().map(|o| (o.id, o.scores)).collect();
            results.push(SystemResult {
                name: name.clone(),
                scores,
                analysis,
            });
        }
        sides.push(Benchmark {
            questions,
            systems: results,
        });
    }
    let human_side = sides.pop().expect("two sides");
    let synthetic = sides.pop().expect("two sides");
    let mut metrics = vec![settings.metric];
    for metric in [Metric::Ndcg10, Metric::Cs, Metric::Judge] {
        if !metrics.contains(&metric) {
            metrics.push(metric);
        }
    }
    let validity_settings = hierarag_validity::Settings {
        metric: settings.metric,
        metrics,
        bootstrap: settings.bootstrap,
        confidence: settings.confidence,
        seed: settings.seed,
    };
    reporter.note(&format!(
        "validity: {} generated and {} human-written questions, {} system(s)",
        synthetic.questions.len(),
        human_side.questions.len(),
        synthetic.systems.len()
    ));
    Ok(hierarag_validity::validity(
        taxonomy,
        &synthetic,
        &human_side,
        &validity_settings,
    ))
}

/// The questions as the check reads them ([`hierarag_validity::question`]), each one's relevant
/// document ranked by BM25 against the index.
fn questions(
    records: &[BenchmarkRecord],
    tags: Option<&[TagRecord]>,
    index: &Bm25Index,
) -> anyhow::Result<Vec<Question>> {
    let wanted: HashSet<&str> = records
        .iter()
        .flat_map(|r| r.doc_ids.iter().map(String::as_str))
        .collect();
    let mut documents: HashMap<String, String> = HashMap::new();
    for chunk in index.chunks_of(&wanted)? {
        let text = documents.entry(chunk.doc_id).or_default();
        text.push_str(&chunk.text);
        text.push('\n');
    }
    let tagged: HashMap<&str, &TagRecord> = tags
        .unwrap_or_default()
        .iter()
        .map(|t| (t.id.as_str(), t))
        .collect();
    let mut scratch = index.scratch();
    let language = index.manifest().language;
    Ok(records
        .iter()
        .map(|record| {
            let gold_rank = (!record.doc_ids.is_empty()).then(|| {
                let hits = index.search(&mut scratch, &record.question, GOLD_DEPTH, Level::Doc);
                let rank = hits
                    .iter()
                    .position(|hit| record.doc_ids.iter().any(|id| id == index.doc_id(hit)))
                    .map_or(GOLD_DEPTH + 1, |i| i + 1);
                rank as f64
            });
            let tag = tags.map(|_| tagged.get(record.id.as_str()).copied());
            hierarag_validity::question(record, tag, &documents, gold_rank, language)
        })
        .collect())
}

/// Writes `validity.json` in `dir`.
pub fn write(validity: &Validity, dir: &Path) -> anyhow::Result<PathBuf> {
    let path = RunDir::new(dir).validity();
    crate::json::write(validity, &path)?;
    Ok(path)
}

/// The run's `validity.json`, when it has one.
pub fn load(run: &RunDir) -> anyhow::Result<Option<Validity>> {
    crate::json::load(&run.validity(), "a validity file", "hierarag validity")
}
