//! Answers made elsewhere, read from a file (`kind = "file"`) in the formats people have —
//! Ragas, DeepEval, RAGChecker, this tool's own, or any JSONL/CSV with a field map — matched to
//! the benchmark's questions by id or by the exact question text; and the documents of context
//! texts found in the index.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{Context, bail};
use hierarag_config::{AnswerFileFormat, FieldMap, FileSystem};
use hierarag_lang::Language;
use hierarag_rag::is_refusal_in;
use hierarag_records::{AnswerModel, AnswerRecord, AnswerUsage, BenchmarkRecord, ChunkRef};
use serde_json::{Map, Value};

/// One answer read from a file, before it is matched to a question.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerRow {
    /// Line (JSONL, CSV) or position in the list (JSON, from 1) in the file.
    pub line: usize,
    pub id: Option<String>,
    pub question: Option<String>,
    pub answer: String,
    /// Context texts, best first (may be empty).
    pub contexts: Vec<String>,
    /// Document ids of the contexts, or of the retrieved documents, best first.
    pub doc_ids: Vec<String>,
    /// How each of `doc_ids` was found when some contexts came as texts only
    /// ([`find_documents`]); empty when the ids were all given.
    pub found: Vec<FoundBy>,
}

/// How a context's document was found in the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FoundBy {
    /// A chunk holds the context's text, or the context holds the chunk's (whitespace
    /// normalised).
    Contains,
    /// The best BM25 match, holding at least [`BM25_MIN_SHARED_WORDS`] of the context's words.
    Bm25,
    /// Named by the context itself (a reply that gives some contexts with ids and some as
    /// texts only).
    Given,
}

impl FoundBy {
    pub fn as_str(self) -> &'static str {
        match self {
            FoundBy::Contains => "contains",
            FoundBy::Bm25 => "bm25",
            FoundBy::Given => "given",
        }
    }
}

/// The share of a context's distinct words (lowercased runs of letters and digits) that its
/// best BM25 chunk must hold for that chunk's document to be taken as the context's.
pub const BM25_MIN_SHARED_WORDS: f64 = 0.6;

/// Chunks searched per context for one that contains it.
const CANDIDATES: usize = 10;

/// The document of each context text in `index`: among the ten best BM25 chunks for the text,
/// the first that contains it or that it contains (whitespace normalised, case kept); else the
/// best one when it holds at least [`BM25_MIN_SHARED_WORDS`] of the context's distinct words;
/// else none.
pub fn find_documents(
    index: &hierarag_index::Bm25Index,
    contexts: &[String],
) -> anyhow::Result<Vec<Option<(String, FoundBy)>>> {
    let mut scratch = index.scratch();
    let mut out = Vec::with_capacity(contexts.len());
    for context in contexts {
        let wanted = normalise(context);
        if wanted.is_empty() {
            out.push(None);
            continue;
        }
        let hits = index.search(
            &mut scratch,
            context,
            CANDIDATES,
            hierarag_index::Level::Chunk,
        );
        let mut found = None;
        for hit in &hits {
            let text = normalise(&index.chunk_text(hit)?);
            if text.contains(&wanted) || wanted.contains(&text) {
                found = Some((index.doc_id(hit).to_owned(), FoundBy::Contains));
                break;
            }
        }
        if found.is_none()
            && let Some(best) = hits.first()
        {
            let words = |text: &str| -> std::collections::HashSet<String> {
                text.split(|c: char| !c.is_alphanumeric())
                    .filter(|w| !w.is_empty())
                    .map(str::to_lowercase)
                    .collect()
            };
            let context_words = words(context);
            let chunk_words = words(&index.chunk_text(best)?);
            let shared = context_words.intersection(&chunk_words).count();
            if !context_words.is_empty()
                && shared as f64 / context_words.len() as f64 >= BM25_MIN_SHARED_WORDS
            {
                found = Some((index.doc_id(best).to_owned(), FoundBy::Bm25));
            }
        }
        out.push(found);
    }
    Ok(out)
}

/// Words joined by single spaces.
fn normalise(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Gives the rows with context texts but no document ids the documents [`find_documents`]
/// finds; returns how many contexts were found and how many were not.
pub fn find_row_documents(
    index: &hierarag_index::Bm25Index,
    rows: &mut [AnswerRow],
) -> anyhow::Result<(usize, usize)> {
    let (mut found, mut missed) = (0, 0);
    for row in rows.iter_mut() {
        if !row.doc_ids.is_empty() || row.contexts.is_empty() {
            continue;
        }
        for hit in find_documents(index, &row.contexts)? {
            match hit {
                Some((doc_id, how)) => {
                    row.doc_ids.push(doc_id);
                    row.found.push(how);
                    found += 1;
                }
                None => missed += 1,
            }
        }
    }
    Ok((found, missed))
}

/// Reads every row of an answers file.
pub fn read_rows(file: &FileSystem) -> anyhow::Result<Vec<AnswerRow>> {
    let path = &file.path;
    let is_csv = file.format == AnswerFileFormat::Csv
        || (matches!(
            file.format,
            AnswerFileFormat::Ragas | AnswerFileFormat::Deepeval
        ) && path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("csv")));
    // DeepEval's JSONL and CSV join a list of contexts with `|` (its `save_as`).
    let joined = (file.format == AnswerFileFormat::Deepeval).then_some('|');
    let records: Vec<(usize, Map<String, Value>)> = if is_csv {
        read_csv(path)?
    } else {
        read_json_records(path, file.format)?
    };
    let fields = match file.format {
        AnswerFileFormat::Ragas => FieldMap {
            id: Some("id".into()),
            question: Some("user_input".into()),
            answer: Some("response".into()),
            contexts: Some("retrieved_contexts".into()),
            context_ids: Some("retrieved_context_ids".into()),
        },
        AnswerFileFormat::Deepeval => FieldMap {
            id: Some("name".into()),
            question: Some("input".into()),
            answer: Some("actual_output".into()),
            contexts: Some("retrieval_context".into()),
            context_ids: None,
        },
        AnswerFileFormat::Ragchecker => FieldMap {
            id: Some("query_id".into()),
            question: Some("query".into()),
            answer: Some("response".into()),
            contexts: Some("retrieved_context".into()),
            context_ids: None,
        },
        AnswerFileFormat::Hierarag => FieldMap {
            id: Some("id".into()),
            question: Some("question".into()),
            answer: Some("answer".into()),
            contexts: None,
            context_ids: Some("doc_ids".into()),
        },
        AnswerFileFormat::Jsonl | AnswerFileFormat::Csv => file.fields.clone(),
    };
    records
        .into_iter()
        .map(|(line, record)| row_of(path, line, &record, &fields, is_csv, joined))
        .collect()
}

/// JSONL (one object a line) or JSON (a list of objects; RAGChecker's `{"results": [...]}`).
pub(crate) fn read_json_records(
    path: &Path,
    format: AnswerFileFormat,
) -> anyhow::Result<Vec<(usize, Map<String, Value>)>> {
    let text =
        hierarag_fs::read_text(path).with_context(|| format!("{}: cannot read", path.display()))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let trimmed = text.trim_start();
    let whole_json = format == AnswerFileFormat::Ragchecker
        || (trimmed.starts_with('[') || (trimmed.starts_with('{') && !is_jsonl(trimmed)));
    if whole_json {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| anyhow::anyhow!("{}: not valid JSON: {e}", path.display()))?;
        let list = match value {
            Value::Array(list) => list,
            Value::Object(mut object) => match object.remove("results") {
                Some(Value::Array(list)) => list,
                _ => bail!(
                    "{}: expected a list of records{}",
                    path.display(),
                    if format == AnswerFileFormat::Ragchecker {
                        " in `results` (RAGChecker's input format)"
                    } else {
                        ", or one JSON object a line"
                    }
                ),
            },
            other => bail!(
                "{}: expected a list of records, found {other}",
                path.display()
            ),
        };
        return list
            .into_iter()
            .enumerate()
            .map(|(i, value)| match value {
                Value::Object(object) => Ok((i + 1, object)),
                _ => bail!("{}: record {} is not a JSON object", path.display(), i + 1),
            })
            .collect();
    }
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(object)) => out.push((i + 1, object)),
            Ok(_) => bail!("{} line {}: not a JSON object", path.display(), i + 1),
            Err(e) => bail!("{} line {}: not valid JSON: {e}", path.display(), i + 1),
        }
    }
    Ok(out)
}

/// Whether a text that starts with `{` holds one object a line (its first line is a whole
/// object).
fn is_jsonl(text: &str) -> bool {
    text.lines()
        .next()
        .is_some_and(|first| serde_json::from_str::<Value>(first).is_ok())
}

/// A CSV with a header row; every cell a string.
pub(crate) fn read_csv(path: &Path) -> anyhow::Result<Vec<(usize, Map<String, Value>)>> {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(false)
        .from_path(path)
        .with_context(|| format!("{}: cannot read", path.display()))?;
    let headers: Vec<String> = reader
        .headers()
        .with_context(|| format!("{}: cannot read the header row", path.display()))?
        .iter()
        .map(|h| h.trim_start_matches('\u{feff}').to_owned())
        .collect();
    let mut out = Vec::new();
    for record in reader.records() {
        let record = record.with_context(|| format!("{}: not valid CSV", path.display()))?;
        let line = record.position().map_or(0, |p| p.line() as usize);
        let object: Map<String, Value> = headers
            .iter()
            .zip(record.iter())
            .map(|(h, cell)| (h.clone(), Value::String(cell.to_owned())))
            .collect();
        out.push((line, object));
    }
    Ok(out)
}

fn row_of(
    path: &Path,
    line: usize,
    record: &Map<String, Value>,
    fields: &FieldMap,
    is_csv: bool,
    joined: Option<char>,
) -> anyhow::Result<AnswerRow> {
    let at = |field: &str| format!("{} line {line}, field `{field}`", path.display());
    let text = |field: &Option<String>| -> anyhow::Result<Option<String>> {
        let Some(name) = field else { return Ok(None) };
        match record.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(other) => bail!("{}: expected a string, found {other}", at(name)),
        }
    };
    let answer_field = fields.answer.as_deref().unwrap_or("answer");
    let Some(answer) = text(&fields.answer)? else {
        bail!("{}: missing (the system's answer)", at(answer_field));
    };
    let id = text(&fields.id)?.filter(|s| !s.is_empty());
    let question = text(&fields.question)?;
    if id.is_none() && question.is_none() {
        bail!(
            "{} line {line}: neither an id ({}) nor the question ({}) to match it by",
            path.display(),
            fields.id.as_deref().unwrap_or("–"),
            fields.question.as_deref().unwrap_or("–")
        );
    }
    let mut contexts = Vec::new();
    let mut doc_ids = Vec::new();
    if let Some(name) = &fields.contexts {
        for item in list(record.get(name), is_csv, joined).with_context(|| at(name))? {
            match item {
                Value::String(s) => contexts.push(s),
                Value::Object(object) => {
                    if let Some(Value::String(s)) = object.get("text") {
                        contexts.push(s.clone());
                    }
                    match object.get("doc_id") {
                        Some(Value::String(id)) => doc_ids.push(id.clone()),
                        Some(Value::Number(id)) => doc_ids.push(id.to_string()),
                        _ => {}
                    }
                }
                other => bail!("{}: a context is {other}, not a string or object", at(name)),
            }
        }
    }
    if let Some(name) = &fields.context_ids {
        for item in list(record.get(name), is_csv, None).with_context(|| at(name))? {
            match item {
                Value::String(s) => doc_ids.push(s),
                Value::Number(n) => doc_ids.push(n.to_string()),
                other => bail!("{}: a document id is {other}, not a string", at(name)),
            }
        }
    }
    Ok(AnswerRow {
        line,
        id,
        question,
        answer,
        contexts,
        doc_ids,
        found: Vec::new(),
    })
}

/// A list field: a JSON array; a string joined by `joined` (DeepEval's files); or in CSV a
/// cell holding a JSON array or a Python list literal (what pandas writes for a list column, as
/// Ragas' `to_csv` does). Absent, null or empty: no items.
pub(crate) fn list(
    value: Option<&Value>,
    is_csv: bool,
    joined: Option<char>,
) -> anyhow::Result<Vec<Value>> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => Ok(items.clone()),
        Some(Value::String(text)) if joined.is_some() => Ok(if text.is_empty() {
            Vec::new()
        } else {
            text.split(joined.expect("checked"))
                .map(|part| Value::String(part.to_owned()))
                .collect()
        }),
        Some(Value::String(cell)) if is_csv => {
            let cell = cell.trim();
            if cell.is_empty() {
                return Ok(Vec::new());
            }
            if let Ok(Value::Array(items)) = serde_json::from_str(cell) {
                return Ok(items);
            }
            python_string_list(cell)
                .map(|items| items.into_iter().map(Value::String).collect())
                .with_context(|| {
                    format!(
                        "expected a list (a JSON array or a Python list of strings): {cell:.60}"
                    )
                })
        }
        Some(other) => bail!("expected a list, found {other}"),
    }
}

/// `['a', "b's", 'c\n']`: a Python list of string literals (single or double quotes, the
/// usual backslash escapes), as `repr` writes it.
fn python_string_list(text: &str) -> anyhow::Result<Vec<String>> {
    let mut chars = text.chars().peekable();
    let skip_space = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>| {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
    };
    skip_space(&mut chars);
    if chars.next() != Some('[') {
        bail!("no opening [");
    }
    let mut out = Vec::new();
    loop {
        skip_space(&mut chars);
        match chars.next() {
            Some(']') => break,
            Some(quote @ ('\'' | '"')) => {
                let mut item = String::new();
                loop {
                    match chars.next() {
                        None => bail!("a string is not closed"),
                        Some(c) if c == quote => break,
                        Some('\\') => match chars.next() {
                            Some('n') => item.push('\n'),
                            Some('t') => item.push('\t'),
                            Some('r') => item.push('\r'),
                            Some('x') => {
                                let hex: String = chars.by_ref().take(2).collect();
                                item.push(char_of(&hex)?);
                            }
                            Some('u') => {
                                let hex: String = chars.by_ref().take(4).collect();
                                item.push(char_of(&hex)?);
                            }
                            Some('U') => {
                                let hex: String = chars.by_ref().take(8).collect();
                                item.push(char_of(&hex)?);
                            }
                            Some(c) => item.push(c),
                            None => bail!("a string ends in a backslash"),
                        },
                        Some(c) => item.push(c),
                    }
                }
                out.push(item);
                skip_space(&mut chars);
                match chars.next() {
                    Some(',') => continue,
                    Some(']') => break,
                    _ => bail!("expected , or ] after a string"),
                }
            }
            _ => bail!("expected a quoted string"),
        }
    }
    skip_space(&mut chars);
    if chars.next().is_some() {
        bail!("text after the closing ]");
    }
    Ok(out)
}

fn char_of(hex: &str) -> anyhow::Result<char> {
    u32::from_str_radix(hex, 16)
        .ok()
        .and_then(char::from_u32)
        .with_context(|| format!("bad escape \\x/\\u {hex}"))
}

/// The rows of a file matched to the benchmark.
#[derive(Debug, Default)]
pub struct Matched {
    /// One answer per matched question, in benchmark order.
    pub answers: Vec<AnswerRecord>,
    /// Benchmark questions no row answers.
    pub missing: Vec<String>,
    /// Lines of rows that match no question.
    pub unmatched: Vec<usize>,
    /// Lines of rows for a question an earlier row already answered (the first is kept).
    pub duplicates: Vec<usize>,
    /// Matched rows that name no document: no id, and no context text found in the index
    /// (their retrieval metrics are absent).
    pub without_doc_ids: usize,
}

/// Matches rows to benchmark questions: by id when a row's id is a question's, else by the
/// question's exact text (trimmed); rows of a text several questions share go to those
/// questions in benchmark order. Refusals are detected as for answers in `language`.
pub fn match_rows(
    rows: &[AnswerRow],
    benchmark: &[BenchmarkRecord],
    system: &str,
    file: &FileSystem,
    language: Language,
) -> Matched {
    let by_id: HashMap<&str, usize> = benchmark
        .iter()
        .enumerate()
        .map(|(i, r)| (r.id.as_str(), i))
        .collect();
    // A text several questions share is matched to them in benchmark order.
    let mut by_text: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, record) in benchmark.iter().enumerate() {
        by_text.entry(record.question.trim()).or_default().push(i);
    }
    let mut chosen: Vec<Option<&AnswerRow>> = vec![None; benchmark.len()];
    let mut matched = Matched::default();
    for row in rows {
        let by_own_id = row.id.as_deref().and_then(|id| by_id.get(id)).copied();
        let index = by_own_id.or_else(|| {
            let same = by_text.get(row.question.as_deref()?.trim())?;
            Some(
                same.iter()
                    .copied()
                    .find(|&i| chosen[i].is_none())
                    .unwrap_or(same[0]),
            )
        });
        match index {
            None => matched.unmatched.push(row.line),
            Some(i) if chosen[i].is_some() => matched.duplicates.push(row.line),
            Some(i) => chosen[i] = Some(row),
        }
    }
    for (record, row) in benchmark.iter().zip(chosen) {
        let Some(row) = row else {
            matched.missing.push(record.id.clone());
            continue;
        };
        if row.doc_ids.is_empty() {
            matched.without_doc_ids += 1;
        }
        matched.answers.push(answer_record(
            record,
            row,
            system,
            format!("file:{}", file.format.as_str()),
            serde_json::json!({
                "path": file.path.display().to_string(),
                "format": file.format.as_str(),
            }),
            language,
        ));
    }
    matched
}

/// The answer record of `row` for the question `record`, from the system `system` (its kind
/// as `retriever`, what it is in `params`), its refusal detected as for `language`.
pub fn answer_record(
    record: &BenchmarkRecord,
    row: &AnswerRow,
    system: &str,
    retriever: String,
    params: Value,
    language: Language,
) -> AnswerRecord {
    // Documents in first-seen order; the score falls with the rank (a ranking is all the
    // retrieval metrics need).
    let mut doc_ids: Vec<String> = Vec::new();
    let mut doc_ids_found: Vec<String> = Vec::new();
    for (i, id) in row.doc_ids.iter().enumerate() {
        if !doc_ids.contains(id) {
            doc_ids.push(id.clone());
            if let Some(how) = row.found.get(i) {
                doc_ids_found.push(how.as_str().to_owned());
            }
        }
    }
    let n = doc_ids.len();
    let doc_scores: Vec<f64> = (0..n).map(|rank| (n - rank) as f64).collect();
    let retrieved = row
        .doc_ids
        .iter()
        .enumerate()
        .map(|(i, doc_id)| ChunkRef {
            chunk_id: format!("{doc_id}#context{i}"),
            doc_id: doc_id.clone(),
            score: (row.doc_ids.len() - i) as f64,
        })
        .collect();
    let no_documents = doc_ids.is_empty();
    AnswerRecord {
        id: record.id.clone(),
        question: record.question.clone(),
        retriever,
        retrieved,
        doc_ids,
        doc_scores,
        answer: row.answer.clone(),
        refused: is_refusal_in(&row.answer, language),
        llm: AnswerModel {
            backend: "system".into(),
            model: system.to_owned(),
            params,
        },
        usage: AnswerUsage {
            prompt_tokens: 0,
            completion_tokens: 0,
        },
        doc_ids_found,
        no_documents,
        contexts: row.contexts.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_lists_as_pandas_writes_them() {
        assert_eq!(
            python_string_list(r#"['a', "b's", 'c\n', 'd\'e', '\xe9\u00e9']"#).unwrap(),
            ["a", "b's", "c\n", "d'e", "éé"]
        );
        assert_eq!(python_string_list("[]").unwrap(), Vec::<String>::new());
        assert!(python_string_list("['a'").is_err());
        assert!(python_string_list("['a'] x").is_err());
        assert!(python_string_list("[1, 2]").is_err());
    }
}
