//! `hierarag import`: a benchmark made elsewhere — DataMorgana's output, a Ragas test set,
//! DeepEval goldens, or any JSONL/CSV with a field map — turned into a run's
//! `benchmark.jsonl`, with its categories as the dimensions of a taxonomy beside it.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use hierarag_records::CategoryRef;
use hierarag_records::{BenchmarkRecord, ImportSource};
use hierarag_taxonomy::{Category, Dimension, Granularity, Level, Taxonomy};
use serde_json::{Map, Value};

use crate::answers::{list, read_csv, read_json_records};
use hierarag_records::RunDir;

/// The formats `hierarag import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportFormat {
    /// DataMorgana's output, JSONL or a JSON list: `question`, `answer`, `context`,
    /// `document_ids`, `question_categories` and `user_categories` (lists of
    /// `{categorization_name, category_name}`).
    Datamorgana,
    /// A Ragas test set (`Testset.to_jsonl` or `to_csv`): `user_input`, `reference`,
    /// `reference_contexts`, and as dimensions `synthesizer_name`, `query_style`,
    /// `query_length`; `persona_name` as the persona.
    Ragas,
    /// DeepEval goldens (`EvaluationDataset.save_as`, JSON, JSONL or CSV): `input`,
    /// `expected_output`, `context`, and the string values of `additional_metadata` as
    /// dimensions.
    Deepeval,
    /// One JSON object a line (or a JSON list), mapped by [`ImportFields`].
    Jsonl,
    /// A CSV with a header row, mapped by [`ImportFields`].
    Csv,
}

impl ImportFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            ImportFormat::Datamorgana => "datamorgana",
            ImportFormat::Ragas => "ragas",
            ImportFormat::Deepeval => "deepeval",
            ImportFormat::Jsonl => "jsonl",
            ImportFormat::Csv => "csv",
        }
    }
}

/// Which fields of a `jsonl` or `csv` file hold what (and, for every format, extra category
/// columns).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportFields {
    /// The question's id [default: none; ids are made from the line numbers].
    pub id: Option<String>,
    /// The question [default: `question`].
    pub question: Option<String>,
    /// The reference answer [default: `answer`]; `""`: the file has none (every question's
    /// reference is empty, and only the retrieval metrics mean something).
    pub answer: Option<String>,
    /// The relevant documents' ids (a list, or one id) [default: none].
    pub doc_ids: Option<String>,
    /// The reference contexts' texts (a list), to find the documents in an index.
    pub contexts: Option<String>,
    /// Fields whose values are categories: (field, dimension key).
    pub dimensions: Vec<(String, String)>,
}

/// What to import and how.
#[derive(Debug, Clone)]
pub struct ImportRequest {
    pub input: PathBuf,
    pub format: ImportFormat,
    pub fields: ImportFields,
    /// A taxonomy the categories must be in (TOML or DataMorgana JSON); without one, every
    /// dimension is flat (its categories at the coarse level).
    pub taxonomy: Option<PathBuf>,
    /// A BM25 index of the corpus: document ids are checked against it, and a question
    /// without ids gets the documents of its reference contexts.
    pub index: Option<PathBuf>,
    /// Skip a row without a question or reference answer (listed in `import.skipped.jsonl`)
    /// instead of failing.
    pub skip_bad_rows: bool,
    /// Replace an existing benchmark.jsonl.
    pub overwrite: bool,
}

/// What an import wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    pub benchmark: PathBuf,
    pub taxonomy: PathBuf,
    pub written: usize,
    /// Rows skipped (line, reason), also in `import.skipped.jsonl`.
    pub skipped: Vec<(usize, String)>,
    /// The dimensions with their categories and how many questions each has.
    pub dimensions: Vec<(String, Vec<(String, usize)>)>,
    /// Reference contexts found in the index, and not found.
    pub contexts_found: usize,
    pub contexts_missed: usize,
    /// Questions that name no document (retrieval metrics are absent for them).
    pub without_documents: usize,
}

/// The file rows go to when they are skipped.
pub const SKIPPED_FILE: &str = "import.skipped.jsonl";

/// One question as read, before its categories are resolved.
struct Row {
    line: usize,
    id: Option<String>,
    question: String,
    answer: String,
    doc_ids: Vec<String>,
    contexts: Vec<String>,
    /// (dimension, category name as written).
    categories: Vec<(String, String)>,
    persona: BTreeMap<String, String>,
}

/// Imports `request.input` into `run`: `benchmark.jsonl` and `taxonomy.toml`.
pub fn import(run: &RunDir, request: &ImportRequest) -> anyhow::Result<Imported> {
    let path = &request.input;
    if run.benchmark().exists() && !request.overwrite {
        bail!(
            "{}: already exists; pass --overwrite to replace it",
            run.benchmark().display()
        );
    }
    let is_csv = request.format == ImportFormat::Csv
        || (matches!(request.format, ImportFormat::Ragas | ImportFormat::Deepeval)
            && path
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("csv")));
    let records: Vec<(usize, Map<String, Value>)> = if is_csv {
        read_csv(path)?
    } else {
        read_json_records(path, hierarag_config::AnswerFileFormat::Jsonl)?
    };
    if records.is_empty() {
        bail!("{}: no records", path.display());
    }
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for (line, record) in &records {
        match row_of(path, *line, record, request, is_csv) {
            Ok(row) => rows.push(row),
            Err(RowError::Missing(reason)) if request.skip_bad_rows => {
                skipped.push((*line, reason));
            }
            Err(RowError::Missing(reason)) => {
                bail!("{reason} (pass --on-error skip to skip such rows, listed in {SKIPPED_FILE})")
            }
            Err(RowError::Bad(error)) => return Err(error),
        }
    }
    if rows.is_empty() {
        bail!("{}: every row was skipped", path.display());
    }

    // Ids: the file's own, unique; else the line's.
    let mut seen = HashSet::new();
    for row in &rows {
        if let Some(id) = &row.id
            && !seen.insert(id.clone())
        {
            bail!(
                "{} line {}: id {id:?} appears more than once",
                path.display(),
                row.line
            );
        }
    }

    // Categories: the taxonomy's, or a flat taxonomy of what the file names.
    let (taxonomy, levels) = match &request.taxonomy {
        Some(file) => {
            let taxonomy = crate::taxonomy::load(Some(file))?;
            let levels = resolve_in(&taxonomy, &rows, path)?;
            (taxonomy, levels)
        }
        None => flat_taxonomy(&rows, path)?,
    };

    // Documents: checked against the index, or found from the contexts.
    let (mut contexts_found, mut contexts_missed) = (0, 0);
    if let Some(dir) = &request.index {
        let index = hierarag_index::Bm25Index::open(dir)
            .with_context(|| format!("opening the index {}", dir.display()))?;
        let known: HashSet<&str> = (0..index.n_documents() as u32)
            .map(|ord| index.doc_id_at(ord))
            .collect();
        for row in &mut rows {
            if let Some(unknown) = row.doc_ids.iter().find(|id| !known.contains(id.as_str())) {
                bail!(
                    "{} line {}: document id {unknown:?} is not in the index {} (is it the \
benchmark's corpus?)",
                    path.display(),
                    row.line,
                    dir.display()
                );
            }
            if row.doc_ids.is_empty() && !row.contexts.is_empty() {
                for hit in crate::answers::find_documents(&index, &row.contexts)? {
                    match hit {
                        Some((doc_id, _)) => {
                            if !row.doc_ids.contains(&doc_id) {
                                row.doc_ids.push(doc_id);
                            }
                            contexts_found += 1;
                        }
                        None => contexts_missed += 1,
                    }
                }
            }
        }
    }
    let without_documents = rows.iter().filter(|r| r.doc_ids.is_empty()).count();

    let width = rows
        .iter()
        .map(|r| r.line)
        .max()
        .unwrap_or(1)
        .to_string()
        .len()
        .max(4);
    let file = path.display().to_string();
    let records: Vec<BenchmarkRecord> = rows
        .into_iter()
        .map(|row| BenchmarkRecord {
            id: row
                .id
                .clone()
                .unwrap_or_else(|| format!("import-{:0width$}", row.line)),
            categories: row
                .categories
                .iter()
                .map(|(dimension, category)| {
                    let (key, level, name) = &levels[&(dimension.clone(), category.clone())];
                    CategoryRef {
                        dimension: key.clone(),
                        level: *level,
                        category: name.clone(),
                    }
                })
                .collect(),
            question: row.question,
            answer: row.answer,
            doc_ids: row.doc_ids,
            design: "import".into(),
            set: "import".into(),
            persona: row.persona,
            generator: None,
            candidates_considered: 0,
            attempts: 0,
            filter: None,
            source: Some(ImportSource {
                format: request.format.as_str().into(),
                file: file.clone(),
                line: row.line,
            }),
            unanswerable: false,
        })
        .collect();

    let mut counts: BTreeMap<(String, String), usize> = BTreeMap::new();
    for record in &records {
        for c in &record.categories {
            *counts
                .entry((c.dimension.clone(), c.category.clone()))
                .or_default() += 1;
        }
    }
    let dimensions = taxonomy
        .dimensions
        .iter()
        .filter(|d| counts.keys().any(|(key, _)| *key == d.key))
        .map(|d| {
            let categories = d
                .levels
                .iter()
                .flat_map(|l| &l.categories)
                .filter_map(|c| {
                    counts
                        .get(&(d.key.clone(), c.name.clone()))
                        .map(|n| (c.name.clone(), *n))
                })
                .collect();
            (d.key.clone(), categories)
        })
        .collect();

    std::fs::create_dir_all(run.root())
        .with_context(|| format!("creating {}", run.root().display()))?;
    let mut bytes = Vec::new();
    for record in &records {
        serde_json::to_writer(&mut bytes, record)?;
        bytes.push(b'\n');
    }
    hierarag_pipeline::write_atomic(&run.benchmark(), &bytes)?;
    hierarag_pipeline::write_atomic(&run.taxonomy(), taxonomy.to_toml_string().as_bytes())?;
    let skipped_path = run.root().join(SKIPPED_FILE);
    if skipped.is_empty() {
        let _ = std::fs::remove_file(&skipped_path);
    } else {
        let mut bytes = Vec::new();
        for (line, reason) in &skipped {
            serde_json::to_writer(
                &mut bytes,
                &serde_json::json!({"line": line, "reason": reason}),
            )?;
            bytes.push(b'\n');
        }
        hierarag_pipeline::write_atomic(&skipped_path, &bytes)?;
    }
    Ok(Imported {
        benchmark: run.benchmark(),
        taxonomy: run.taxonomy(),
        written: records.len(),
        skipped,
        dimensions,
        contexts_found,
        contexts_missed,
        without_documents,
    })
}

enum RowError {
    /// No question or no reference answer: skippable.
    Missing(String),
    /// Anything else wrong with the row.
    Bad(anyhow::Error),
}

impl From<anyhow::Error> for RowError {
    fn from(error: anyhow::Error) -> RowError {
        RowError::Bad(error)
    }
}

/// One record as a [`Row`].
fn row_of(
    path: &Path,
    line: usize,
    record: &Map<String, Value>,
    request: &ImportRequest,
    is_csv: bool,
) -> Result<Row, RowError> {
    let at = |field: &str| format!("{} line {line}, field `{field}`", path.display());
    let text = |field: &str| -> Result<Option<String>, RowError> {
        match record.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(Value::Bool(b)) => Ok(Some(b.to_string())),
            Some(other) => Err(RowError::Bad(anyhow::anyhow!(
                "{}: expected a string, found {other}",
                at(field)
            ))),
        }
    };
    let strings = |field: &str, joined: Option<char>| -> Result<Vec<String>, RowError> {
        let items = list(record.get(field), is_csv, joined)
            .map_err(|e| RowError::Bad(anyhow::anyhow!("{}: {e:#}", at(field))))?;
        items
            .into_iter()
            .map(|item| match item {
                Value::String(s) => Ok(s),
                Value::Number(n) => Ok(n.to_string()),
                other => Err(RowError::Bad(anyhow::anyhow!(
                    "{}: an item is {other}, not a string",
                    at(field)
                ))),
            })
            .collect()
    };
    let fields = &request.fields;
    let (question_field, answer_field, contexts_field, doc_ids_field, joined) = match request.format
    {
        ImportFormat::Datamorgana => (
            "question",
            "answer",
            Some("context"),
            Some("document_ids"),
            None,
        ),
        ImportFormat::Ragas => (
            "user_input",
            "reference",
            Some("reference_contexts"),
            None,
            None,
        ),
        ImportFormat::Deepeval => ("input", "expected_output", Some("context"), None, Some('|')),
        ImportFormat::Jsonl | ImportFormat::Csv => (
            fields.question.as_deref().unwrap_or("question"),
            fields.answer.as_deref().unwrap_or("answer"),
            fields.contexts.as_deref(),
            fields.doc_ids.as_deref(),
            None,
        ),
    };
    let Some(question) = text(question_field)? else {
        return Err(RowError::Missing(format!(
            "{}: missing (the question)",
            at(question_field)
        )));
    };
    // An empty field name: the file has no reference answers (retrieval metrics only).
    let answer = if answer_field.is_empty() {
        String::new()
    } else {
        let Some(answer) = text(answer_field)? else {
            return Err(RowError::Missing(format!(
                "{}: missing (the reference answer)",
                at(answer_field)
            )));
        };
        answer
    };
    let id = match fields.id.as_deref() {
        Some(field) => Some(text(field)?.ok_or_else(|| {
            RowError::Bad(anyhow::anyhow!(
                "{}: missing (the question's id)",
                at(field)
            ))
        })?),
        None => None,
    };
    let contexts = match contexts_field {
        Some(field) => strings(field, joined)?,
        None => Vec::new(),
    };
    let doc_ids = match doc_ids_field {
        Some(field) => match record.get(field) {
            Some(Value::String(s)) if !is_csv || !s.trim_start().starts_with('[') => {
                if s.trim().is_empty() {
                    Vec::new()
                } else {
                    vec![s.trim().to_owned()]
                }
            }
            _ => strings(field, None)?,
        },
        None => Vec::new(),
    };

    let mut categories = Vec::new();
    let mut persona = BTreeMap::new();
    match request.format {
        ImportFormat::Datamorgana => {
            for (field, into_persona) in [("question_categories", false), ("user_categories", true)]
            {
                for item in list(record.get(field), is_csv, None)
                    .map_err(|e| RowError::Bad(anyhow::anyhow!("{}: {e:#}", at(field))))?
                {
                    let pair = item.as_object().and_then(|o| {
                        Some((
                            o.get("categorization_name")?.as_str()?.to_owned(),
                            o.get("category_name")?.as_str()?.to_owned(),
                        ))
                    });
                    let Some((dimension, category)) = pair else {
                        return Err(RowError::Bad(anyhow::anyhow!(
                            "{}: expected {{\"categorization_name\", \"category_name\"}}, found \
{item}",
                            at(field)
                        )));
                    };
                    if into_persona {
                        persona.insert(dimension, category);
                    } else {
                        categories.push((dimension, category));
                    }
                }
            }
        }
        ImportFormat::Ragas => {
            for (field, dimension) in [
                ("synthesizer_name", "synthesizer"),
                ("query_style", "query_style"),
                ("query_length", "query_length"),
            ] {
                if let Some(value) = text(field)? {
                    categories.push((dimension.to_owned(), value));
                }
            }
            if let Some(name) = text("persona_name")? {
                persona.insert("persona".into(), name);
            }
        }
        ImportFormat::Deepeval => {
            let metadata = match record.get("additional_metadata") {
                Some(Value::Object(object)) => Some(object.clone()),
                Some(Value::String(s)) if !s.trim().is_empty() => {
                    match serde_json::from_str::<Value>(s) {
                        Ok(Value::Object(object)) => Some(object),
                        _ => None,
                    }
                }
                _ => None,
            };
            for (key, value) in metadata.into_iter().flatten() {
                if let Value::String(category) = value
                    && !category.trim().is_empty()
                {
                    categories.push((key, category));
                }
            }
        }
        ImportFormat::Jsonl | ImportFormat::Csv => {}
    }
    for (field, dimension) in &fields.dimensions {
        if let Some(value) = text(field)? {
            categories.retain(|(d, _)| d != dimension);
            categories.push((dimension.clone(), value));
        }
    }
    Ok(Row {
        line,
        id,
        question,
        answer,
        doc_ids,
        contexts,
        categories,
        persona,
    })
}

/// `Open-ended question` → `open_ended_question`: lowercase letters and digits joined by
/// single underscores (a taxonomy's snake_case); `c_` in front of a leading digit.
pub fn snake_case(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    while out.ends_with('_') {
        out.pop();
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert_str(0, "c_");
    }
    if out.is_empty() {
        out.push_str("unnamed");
    }
    out
}

/// (dimension, category as written) → (the taxonomy's dimension key, level, category name).
type Levels = BTreeMap<(String, String), (String, Granularity, String)>;

/// A flat taxonomy of the rows' categories: one dimension per categorization (its key in
/// snake_case), its categories at the coarse level in order of first appearance.
fn flat_taxonomy(rows: &[Row], path: &Path) -> anyhow::Result<(Taxonomy, Levels)> {
    let mut dimensions: Vec<(String, Vec<String>)> = Vec::new();
    for row in rows {
        for (dimension, category) in &row.categories {
            match dimensions.iter_mut().find(|(d, _)| d == dimension) {
                Some((_, categories)) => {
                    if !categories.contains(category) {
                        categories.push(category.clone());
                    }
                }
                None => dimensions.push((dimension.clone(), vec![category.clone()])),
            }
        }
    }
    let mut taxonomy = Taxonomy::default();
    let mut levels = Levels::new();
    let mut keys = BTreeSet::new();
    for (dimension, categories) in dimensions {
        let key = snake_case(&dimension);
        if !keys.insert(key.clone()) {
            bail!(
                "{}: two categorizations are both {key:?} in snake_case; rename one",
                path.display()
            );
        }
        let mut names = BTreeSet::new();
        let mut level = Level {
            granularity: Granularity::Coarse,
            categories: Vec::new(),
        };
        for category in categories {
            let name = snake_case(&category);
            if !names.insert(name.clone()) {
                bail!(
                    "{}: categories of {dimension:?} are the same in snake_case ({name:?}); \
rename one",
                    path.display()
                );
            }
            level.categories.push(Category::new(
                name.clone(),
                format!("Imported from {}: {category}", path.display()),
            ));
            levels.insert(
                (dimension.clone(), category),
                (key.clone(), Granularity::Coarse, name),
            );
        }
        taxonomy.dimensions.push(Dimension {
            key,
            name: dimension.clone(),
            levels: vec![level],
        });
    }
    Ok((taxonomy, levels))
}

/// Every row's categories found in `taxonomy` (by name, or by name in snake_case), at the
/// level they are on; an unknown dimension or category is an error listing the valid ones.
fn resolve_in(taxonomy: &Taxonomy, rows: &[Row], path: &Path) -> anyhow::Result<Levels> {
    let mut levels = Levels::new();
    for row in rows {
        for (dimension, category) in &row.categories {
            let Some(d) = taxonomy
                .dimension(dimension)
                .or_else(|| taxonomy.dimension(&snake_case(dimension)))
            else {
                let keys: Vec<&str> = taxonomy.dimensions.iter().map(|d| d.key.as_str()).collect();
                bail!(
                    "{} line {}: dimension {dimension:?} is not in the taxonomy; its dimensions \
are {}",
                    path.display(),
                    row.line,
                    keys.join(", ")
                );
            };
            let found = d
                .category(category)
                .or_else(|| d.category(&snake_case(category)));
            let Some((level, c)) = found else {
                let names: Vec<&str> = d
                    .levels
                    .iter()
                    .flat_map(|l| &l.categories)
                    .map(|c| c.name.as_str())
                    .collect();
                bail!(
                    "{} line {}: category {category:?} is not in dimension {} of the \
taxonomy; its categories are {}",
                    path.display(),
                    row.line,
                    d.key,
                    names.join(", ")
                );
            };
            levels.insert(
                (dimension.clone(), category.clone()),
                (d.key.clone(), level, c.name.clone()),
            );
        }
    }
    Ok(levels)
}
