//! Ragas samples and DeepEval goldens: one object per question with its reference answer and
//! source document texts, and the system's answer and retrieved chunk texts when it has one.

use std::collections::HashSet;
use std::path::Path;

use hierarag_fs::neutralize_cell;
use hierarag_index::Bm25Index;
use hierarag_rag::AnswerRecord;
use hierarag_records::BenchmarkRecord;
use serde_json::{Map, Value, json};

use super::files::{DelimitedFile, ExportFile};
use super::{
    RunInputs, category_labels, chunk_texts, document_texts, persona_object, unique_doc_ids, wrote,
};
use hierarag_pipeline::Reporter;

/// Which tool's field names to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tool {
    Ragas,
    Deepeval,
}

/// One question with the texts its export needs.
struct Sample<'a> {
    record: &'a BenchmarkRecord,
    /// The source documents' texts.
    reference_contexts: Vec<&'a str>,
    /// The answer and its retrieved chunks' texts, best first.
    answer: Option<(&'a AnswerRecord, Vec<&'a str>)>,
}

pub(super) fn write(
    tool: Tool,
    inputs: &RunInputs,
    index: &Bm25Index,
    out: &Path,
    csv: bool,
    reporter: &dyn Reporter,
) -> anyhow::Result<()> {
    let documents = document_texts(index, &inputs.source_documents(), reporter)?;
    let chunks = chunk_texts(index, &inputs.answers)?;
    let answers = inputs.answers_by_id();
    let samples: Vec<Sample> = inputs
        .benchmark
        .iter()
        .map(|record| Sample {
            record,
            reference_contexts: unique_doc_ids(record)
                .into_iter()
                .map(|id| documents[id].as_str())
                .collect(),
            answer: answers.get(record.id.as_str()).map(|answer| {
                let retrieved = answer
                    .retrieved
                    .iter()
                    .map(|chunk| chunks[&chunk.chunk_id].as_str())
                    .collect();
                (*answer, retrieved)
            }),
        })
        .collect();
    let n_answered = samples.iter().filter(|s| s.answer.is_some()).count();
    match tool {
        Tool::Ragas => {
            let rows: Vec<Map<String, Value>> = samples.iter().map(ragas_row).collect();
            let what = format!("{} samples, {n_answered} with a response", rows.len());
            write_jsonl(&out.join("ragas.jsonl"), &rows, &what, reporter)?;
            if csv {
                let leading = [
                    "id",
                    "user_input",
                    "reference",
                    "reference_contexts",
                    "response",
                    "retrieved_contexts",
                ];
                // Category columns, then persona columns, then the set and design.
                let mut trailing: Vec<String> = Vec::new();
                for record in &inputs.benchmark {
                    for name in record.persona.keys() {
                        let column = format!("persona/{name}");
                        if !trailing.contains(&column) {
                            trailing.push(column);
                        }
                    }
                }
                trailing.extend(["set".to_string(), "design".to_string()]);
                let trailing: Vec<&str> = trailing.iter().map(String::as_str).collect();
                write_csv(&out.join("ragas.csv"), &rows, &leading, &trailing, reporter)?;
            }
        }
        Tool::Deepeval => {
            let rows: Vec<Map<String, Value>> = samples.iter().map(deepeval_row).collect();
            let what = format!("{} goldens, {n_answered} with an actual output", rows.len());
            write_json_array(&out.join("deepeval.json"), &rows, &what, reporter)?;
            write_jsonl(&out.join("deepeval.jsonl"), &rows, &what, reporter)?;
            if csv {
                let leading = [
                    "input",
                    "expected_output",
                    "context",
                    "actual_output",
                    "retrieval_context",
                    "additional_metadata",
                ];
                write_csv(&out.join("deepeval.csv"), &rows, &leading, &[], reporter)?;
            }
        }
    }
    Ok(())
}

/// A Ragas `SingleTurnSample`'s fields, then the question's id and labels as flat keys
/// (`qc/coarse`, `persona/expertise`), which Ragas ignores and a data frame keeps as columns.
fn ragas_row(sample: &Sample) -> Map<String, Value> {
    let record = sample.record;
    let mut row = Map::new();
    row.insert("id".into(), json!(record.id));
    row.insert("user_input".into(), json!(record.question));
    row.insert("reference".into(), json!(record.answer));
    row.insert(
        "reference_contexts".into(),
        json!(sample.reference_contexts),
    );
    if let Some((answer, retrieved)) = &sample.answer {
        row.insert("response".into(), json!(answer.answer));
        row.insert("retrieved_contexts".into(), json!(retrieved));
    }
    row.extend(category_labels(record));
    for (name, persona) in &record.persona {
        row.insert(format!("persona/{name}"), json!(persona));
    }
    row.insert("set".into(), json!(record.set));
    row.insert("design".into(), json!(record.design));
    row
}

/// A DeepEval `Golden` (an `LLMTestCase` once it has an actual output), with the question's id
/// and labels in `additional_metadata`.
fn deepeval_row(sample: &Sample) -> Map<String, Value> {
    let record = sample.record;
    let mut row = Map::new();
    row.insert("input".into(), json!(record.question));
    row.insert("expected_output".into(), json!(record.answer));
    row.insert("context".into(), json!(sample.reference_contexts));
    if let Some((answer, retrieved)) = &sample.answer {
        row.insert("actual_output".into(), json!(answer.answer));
        row.insert("retrieval_context".into(), json!(retrieved));
    }
    row.insert(
        "additional_metadata".into(),
        json!({
            "id": record.id,
            "categories": category_labels(record),
            "persona": persona_object(record),
            "set": record.set,
            "design": record.design,
        }),
    );
    row
}

fn write_jsonl(
    path: &Path,
    rows: &[Map<String, Value>],
    what: &str,
    reporter: &dyn Reporter,
) -> anyhow::Result<()> {
    let mut file = ExportFile::create(path)?;
    for row in rows {
        file.json_line(row)?;
    }
    file.finish()?;
    wrote(reporter, path, what);
    Ok(())
}

/// A JSON array with one element a line (what `json.load` reads, and still greppable).
fn write_json_array(
    path: &Path,
    rows: &[Map<String, Value>],
    what: &str,
    reporter: &dyn Reporter,
) -> anyhow::Result<()> {
    let mut file = ExportFile::create(path)?;
    file.bytes(b"[")?;
    for (n, row) in rows.iter().enumerate() {
        file.bytes(if n == 0 { b"\n" } else { b",\n" })?;
        file.bytes(serde_json::to_string(row)?.as_bytes())?;
    }
    file.bytes(b"\n]\n")?;
    file.finish()?;
    wrote(reporter, path, what);
    Ok(())
}

/// A CSV of the rows: the `leading` columns that any row has, then every other key in the
/// order first seen, then `trailing`. Strings are written as their text, lists and objects as
/// JSON text, and a key a row lacks as an empty cell; every cell but a number goes through
/// [`neutralize_cell`], so that a spreadsheet shows a question like `=HYPERLINK(…)` as text
/// (the JSON and JSONL files keep the exact text).
fn write_csv(
    path: &Path,
    rows: &[Map<String, Value>],
    leading: &[&str],
    trailing: &[&str],
    reporter: &dyn Reporter,
) -> anyhow::Result<()> {
    let mut seen: HashSet<&str> = HashSet::new();
    let mut middle: Vec<&str> = Vec::new();
    for key in rows.iter().flat_map(|row| row.keys()) {
        let key = key.as_str();
        if !leading.contains(&key) && !trailing.contains(&key) && seen.insert(key) {
            middle.push(key);
        }
    }
    let present = |key: &str| rows.iter().any(|row| row.contains_key(key));
    let columns: Vec<&str> = leading
        .iter()
        .copied()
        .filter(|key| present(key))
        .chain(middle)
        .chain(trailing.iter().copied().filter(|key| present(key)))
        .collect();
    let mut file = DelimitedFile::csv(path)?;
    file.record(
        columns
            .iter()
            .map(|column| neutralize_cell(column).into_owned()),
    )?;
    for row in rows {
        let cells: Vec<String> = columns
            .iter()
            .map(|column| match row.get(*column) {
                None | Some(Value::Null) => String::new(),
                // A number's text (`-0.5`) is data, not a formula.
                Some(Value::Number(number)) => number.to_string(),
                Some(Value::String(text)) => neutralize_cell(text).into_owned(),
                Some(value) => neutralize_cell(&value.to_string()).into_owned(),
            })
            .collect();
        file.record(&cells)?;
    }
    file.finish()?;
    wrote(
        reporter,
        path,
        format!("{} rows of {} columns", rows.len(), columns.len()),
    );
    Ok(())
}
