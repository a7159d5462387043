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

/// What `RUN/human/` was imported from (`source.json`): the `[human]` file, its sha256, and
/// its questions.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HumanSource {
    pub file: PathBuf,
    pub sha256: String,
    pub questions: usize,
}

/// The file of `RUN/human/` that says what it was imported from.
pub fn human_source_path(human: &RunDir) -> PathBuf {
    human.root().join("source.json")
}

/// Reads the `[human]` file as the import does, writing nothing in the run, so that a missing
/// or broken file is an error before the run's first stage rather than after its main job;
/// its questions (records, whatever the format: JSONL, a JSON list, CSV).
pub fn check_human(human: &HumanSection) -> anyhow::Result<usize> {
    let scratch = tempfile::tempdir().context("a scratch directory for checking [human]")?;
    let request = human_import_request(human, None);
    let imported = crate::import::import(&RunDir::new(scratch.path()), &request)
        .with_context(|| format!("[human] file {}", human.file.display()))?;
    Ok(imported.written)
}

fn human_import_request(human: &HumanSection, index: Option<PathBuf>) -> ImportRequest {
    ImportRequest {
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
        index,
        skip_bad_rows: false,
        overwrite: false,
    }
}

/// Imports the `[human]` file into `RUN/human/`, refusing one whose questions are not in the
/// corpus' language. Once imported, the file's sha256 is recorded (`source.json`): the same
/// file is not read again, and a changed one (corrected, longer, another under the same
/// config) is imported again, what changed said, and its tags, answers and scores made anew
/// (the human run's `manifest.json`, with what it spent, is kept).
pub fn import_human(
    run: &RunDir,
    human: &HumanSection,
    language: Language,
    reporter: &dyn Reporter,
) -> anyhow::Result<RunDir> {
    let dir = run.human();
    let sha256 = hierarag_pipeline::file_sha256(&human.file)?
        .with_context(|| format!("[human] file {}: no such file", human.file.display()))?;
    let source_path = human_source_path(&dir);
    if dir.benchmark().exists() {
        let recorded: Option<HumanSource> = std::fs::read(&source_path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok());
        match recorded {
            Some(recorded) if recorded.sha256 == sha256 => return Ok(dir),
            Some(recorded) => {
                reporter.warn(&format!(
                    "[human] file {} is not the one imported into {} ({} questions from {}, sha256 {}…; now sha256 {}…): importing it again, and tagging, answering and scoring its questions anew",
                    human.file.display(),
                    dir.root().display(),
                    recorded.questions,
                    recorded.file.display(),
                    &recorded.sha256[..12],
                    &sha256[..12],
                ));
                clear_human(&dir)?;
            }
            // Imported by a version that did not record its source: taken as this file.
            None => {
                let questions = read_records::<BenchmarkRecord>(&dir.benchmark())?.len();
                write_source(&source_path, human, &sha256, questions)?;
                return Ok(dir);
            }
        }
    }
    let request = human_import_request(human, Some(run.index()));
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
    write_source(&source_path, human, &sha256, imported.written)?;
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

fn write_source(
    path: &Path,
    human: &HumanSection,
    sha256: &str,
    questions: usize,
) -> anyhow::Result<()> {
    let source = HumanSource {
        file: human.file.clone(),
        sha256: sha256.to_string(),
        questions,
    };
    let mut bytes = serde_json::to_vec_pretty(&source).expect("a source serialises");
    bytes.push(b'\n');
    hierarag_pipeline::write_atomic(path, &bytes)?;
    Ok(())
}

/// Removes what was made of an earlier `[human]` file (its benchmark, tags, systems, the
/// import's notes), keeping the human run's `manifest.json` (what it spent counts on).
fn clear_human(dir: &RunDir) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir.root())
        .with_context(|| format!("reading {}", dir.root().display()))?
    {
        let path = entry?.path();
        if path.file_name().is_some_and(|name| name == "manifest.json") {
            continue;
        }
        let removed = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        removed.with_context(|| format!("removing {}", path.display()))?;
    }
    Ok(())
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
