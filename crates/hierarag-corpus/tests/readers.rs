//! Corpus readers on real files: every kind of bad input under both `--on-error` policies, and the
//! happy paths of the JSONL, Parquet and text-directory readers.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, BinaryArray, Float64Array, Int64Array, LargeStringArray, RecordBatch,
    StringArray, StringViewArray,
};
use arrow_schema::{DataType, Field, Schema};
use hierarag_corpus::{
    CorpusError, CorpusFormat, CorpusSpec, Document, Documents, Measure, OnError, ParquetCorpus,
    Position, RowRef, ScanSummary, Skipped,
};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::file::properties::WriterProperties;
use tempfile::TempDir;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

fn write_file(dir: &Path, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).unwrap();
    }
    fs::write(&path, bytes).unwrap();
    path
}

fn spec_of(paths: &[&Path]) -> CorpusSpec {
    CorpusSpec::new(paths.iter().map(|p| p.display().to_string()))
}

/// Reads everything under `on_error`, returning the documents, the first error (if any) and the
/// exhausted iterator for its summary and skip list.
fn read(spec: &CorpusSpec, on_error: OnError) -> (Vec<Document>, Option<CorpusError>, Documents) {
    let mut documents = spec.documents(on_error).expect("inputs resolve");
    let mut docs = Vec::new();
    let mut error = None;
    for item in documents.by_ref() {
        match item {
            Ok(doc) => docs.push(doc),
            Err(e) => {
                assert!(error.is_none(), "a second error after {error:?}: {e}");
                error = Some(e);
            }
        }
    }
    (docs, error, documents)
}

/// The error message of reading `spec` under `Fail`; also checks that the stream ends there.
fn fail_message(spec: &CorpusSpec) -> String {
    let mut documents = spec.documents(OnError::Fail).expect("inputs resolve");
    let error = documents
        .by_ref()
        .find_map(Result::err)
        .expect("reading should fail");
    assert!(
        documents.next().is_none(),
        "the stream goes on after an error under Fail"
    );
    with_causes(&error)
}

/// The message with its causes, as `{:#}` of an `anyhow` error prints it.
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text = format!("{text}: {cause}");
        source = cause.source();
    }
    text
}

fn ids(docs: &[Document]) -> Vec<&str> {
    docs.iter().map(|d| d.id.as_str()).collect()
}

fn assert_contains(message: &str, fragments: &[&str]) {
    for fragment in fragments {
        assert!(
            message.contains(fragment),
            "message {message:?} lacks {fragment:?}"
        );
    }
}

/// Writes a JSONL file whose line 3 is `bad_line`, around good lines 1 and 4 and a blank line 2,
/// then checks the error under `Fail` and the skip record under `Skip`.
fn check_bad_jsonl_line(bad_line: &[u8], field: &str, extra: &[&str]) {
    check_bad_jsonl_line_in(bad_line, Some(field), extra);
}

/// As [`check_bad_jsonl_line`]; `None` asserts that no field is named.
fn check_bad_jsonl_line_in(bad_line: &[u8], field: Option<&str>, extra: &[&str]) {
    let dir = TempDir::new().unwrap();
    let mut bytes = Vec::new();
    bytes.extend_from_slice(br#"{"id": "good-1", "text": "The first good document."}"#);
    bytes.extend_from_slice(b"\n\n");
    bytes.extend_from_slice(bad_line);
    bytes.push(b'\n');
    bytes.extend_from_slice(br#"{"id": "good-4", "text": "The last good document."}"#);
    bytes.push(b'\n');
    let path = write_file(dir.path(), "corpus.jsonl", &bytes);
    let spec = spec_of(&[&path]);
    let shown = path.display().to_string();

    let message = fail_message(&spec);
    let at = format!("{shown} line 3");
    assert!(message.starts_with(&at), "{message:?}");
    match field {
        Some(field) => assert_contains(&message, &[&format!("{at}, field `{field}`: ")]),
        None => assert!(!message.contains("field `"), "{message:?}"),
    }
    assert_contains(&message, extra);

    let (docs, error, documents) = read(&spec, OnError::Skip);
    assert!(error.is_none(), "{error:?}");
    assert_eq!(ids(&docs), ["good-1", "good-4"]);
    assert_eq!(docs[1].location.position, Position::Line(4));
    let skipped = documents.skipped();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0].location, at);
    assert_eq!(skipped[0].reason, message);
    let summary = documents.summary();
    assert_eq!((summary.n_documents, summary.n_skipped), (2, 1));
}

/// A FineWeb-shaped record batch: rows `start..start + n`, ids `<urn:uuid:…>`.
fn fineweb_batch(start: usize, n: usize) -> RecordBatch {
    let rows = start..start + n;
    let text: Vec<String> = rows
        .clone()
        .map(|i| format!("Document {i} of the crawl.\nIt talks about gardens, bread and rivers."))
        .collect();
    let id: Vec<String> = rows
        .clone()
        .map(|i| format!("<urn:uuid:{i:08x}-2d3a-4f1e-9c6b-5a7d8e9f0a1b>"))
        .collect();
    let url: Vec<String> = rows
        .clone()
        .map(|i| format!("http://example.org/blog/{i}.html"))
        .collect();
    let file_path: Vec<String> = rows
        .clone()
        .map(|i| {
            format!(
                "s3://commoncrawl/crawl-data/CC-MAIN-2013-20/segments/1368696381249.0/warc/\
                 CC-MAIN-20130516092621-{:05}-ip-10-60-113-184.ec2.internal.warc.gz",
                i % 1000
            )
        })
        .collect();
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("text", Arc::new(StringArray::from(text))),
        ("id", Arc::new(StringArray::from(id))),
        (
            "dump",
            Arc::new(StringArray::from(vec!["CC-MAIN-2013-20"; n])),
        ),
        ("url", Arc::new(StringArray::from(url))),
        (
            "date",
            Arc::new(StringArray::from(vec!["2013-05-18T05:48:54Z"; n])),
        ),
        ("file_path", Arc::new(StringArray::from(file_path))),
        ("language", Arc::new(StringArray::from(vec!["en"; n]))),
        (
            "language_score",
            Arc::new(Float64Array::from_iter_values(
                rows.clone().map(|i| 0.65 + (i % 30) as f64 / 100.0),
            )),
        ),
        (
            "token_count",
            Arc::new(Int64Array::from_iter_values(
                rows.map(|i| 12 + (i % 7) as i64),
            )),
        ),
    ];
    RecordBatch::try_from_iter(columns).unwrap()
}

fn fineweb_id(i: usize) -> String {
    format!("<urn:uuid:{i:08x}-2d3a-4f1e-9c6b-5a7d8e9f0a1b>")
}

fn write_parquet(path: &Path, batches: &[RecordBatch], max_row_group_rows: Option<usize>) {
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(max_row_group_rows)
        .build();
    let file = fs::File::create(path).unwrap();
    let mut writer = ArrowWriter::try_new(file, batches[0].schema(), Some(props)).unwrap();
    for batch in batches {
        writer.write(batch).unwrap();
    }
    writer.close().unwrap();
}

/// A two-column batch with the given id and text arrays.
fn batch_of(id: ArrayRef, text: ArrayRef) -> RecordBatch {
    let schema = Schema::new(vec![
        Field::new("id", id.data_type().clone(), true),
        Field::new("text", text.data_type().clone(), true),
    ]);
    RecordBatch::try_new(Arc::new(schema), vec![id, text]).unwrap()
}

fn string_ids(ids: &[&str]) -> ArrayRef {
    Arc::new(StringArray::from(ids.to_vec()))
}

// ---------------------------------------------------------------------------------------------
// Bad JSONL records: one test per case, each under Fail and Skip
// ---------------------------------------------------------------------------------------------

#[test]
fn malformed_json_line_names_file_line_column_and_field() {
    check_bad_jsonl_line(
        br#"{"id": "bad", "text": "unterminated"#,
        "text",
        &["malformed JSON at column 35: EOF while parsing a string"],
    );
}

#[test]
fn malformed_json_in_another_field_names_that_field() {
    check_bad_jsonl_line(
        br#"{"id": "bad", "meta": {"ok": tru}, "text": "fine"}"#,
        "meta",
        &["malformed JSON at column"],
    );
}

#[test]
fn malformed_json_line_with_trailing_garbage_is_an_error() {
    check_bad_jsonl_line_in(
        br#"{"id": "bad", "text": "fine"} trailing"#,
        None,
        &["malformed JSON at column 31: trailing characters"],
    );
}

#[test]
fn json_line_that_is_not_an_object_is_an_error() {
    check_bad_jsonl_line_in(
        br#"["bad", "not an object"]"#,
        None,
        &["malformed JSON at column", "expected a JSON object"],
    );
}

/// Regression: serde_json's own "at line 1 column N" contradicted the line named in front.
#[test]
fn malformed_json_message_has_no_second_line_number() {
    check_bad_jsonl_line_in(br#"{"id": "x" "text": "y"}"#, None, &["column 12"]);
    let dir = TempDir::new().unwrap();
    let path = write_file(dir.path(), "a.jsonl", "\n\n\n\n{oops}\n");
    let message = fail_message(&spec_of(&[&path]));
    assert!(!message.contains("line 1"), "{message:?}");
    assert_contains(&message, &["line 5: malformed JSON at column 2"]);
}

#[test]
fn missing_id_field_lists_the_fields_present() {
    check_bad_jsonl_line(
        br#"{"doc_id": "x", "text": "Some words here."}"#,
        "id",
        &["missing", "`doc_id`", "`text`"],
    );
}

#[test]
fn missing_text_field_lists_the_fields_present() {
    check_bad_jsonl_line(
        br#"{"id": "x", "body": "Some words here."}"#,
        "text",
        &["missing", "`id`", "`body`"],
    );
}

#[test]
fn id_of_wrong_type_is_an_error() {
    check_bad_jsonl_line(
        br#"{"id": ["a", "b"], "text": "Some words here."}"#,
        "id",
        &["expected a string or an integer", "found an array"],
    );
}

#[test]
fn fractional_id_is_an_error() {
    check_bad_jsonl_line(
        br#"{"id": 1.5, "text": "Some words here."}"#,
        "id",
        &["found the number 1.5"],
    );
}

#[test]
fn null_text_is_an_error() {
    check_bad_jsonl_line(
        br#"{"id": "x", "text": null}"#,
        "text",
        &["expected a string", "found null"],
    );
}

#[test]
fn non_utf8_bytes_in_jsonl_text_value_name_the_field() {
    check_bad_jsonl_line(
        b"{\"id\": \"x\", \"text\": \"caf\xe9 au lait\"}",
        "text",
        &["invalid UTF-8", "byte 24"],
    );
}

#[test]
fn non_utf8_bytes_in_jsonl_id_value_name_the_id_field() {
    check_bad_jsonl_line(
        b"{\"id\": \"x\xff\", \"text\": \"Some words here.\"}",
        "id",
        &["invalid UTF-8"],
    );
}

#[test]
fn empty_jsonl_document_is_an_error() {
    check_bad_jsonl_line(
        br#"{"id": "empty", "text": ""}"#,
        "text",
        &["`empty` is empty"],
    );
}

#[test]
fn whitespace_only_jsonl_document_is_an_error() {
    check_bad_jsonl_line(
        br#"{"id": "blank", "text": "  \n\t \u00a0 "}"#,
        "text",
        &["`blank` is empty"],
    );
}

#[test]
fn duplicate_id_in_one_file_names_both_lines() {
    check_bad_jsonl_line(
        br#"{"id": "good-1", "text": "Another text with the same id."}"#,
        "id",
        &["duplicate document id `good-1`", "first seen at", "line 1)"],
    );
}

#[test]
fn duplicate_id_across_two_files_names_both_files() {
    let dir = TempDir::new().unwrap();
    let a = write_file(
        dir.path(),
        "a.jsonl",
        "{\"id\": \"doc-1\", \"text\": \"one\"}\n{\"id\": \"doc-7\", \"text\": \"seven\"}\n",
    );
    let b = write_file(
        dir.path(),
        "b.jsonl",
        "{\"id\": \"doc-8\", \"text\": \"eight\"}\n{\"id\": \"doc-7\", \"text\": \"again\"}\n",
    );
    let spec = spec_of(&[&a, &b]);
    let message = fail_message(&spec);
    let here = format!("{} line 2, field `id`", b.display());
    let first = format!("first seen at {} line 2", a.display());
    assert_contains(&message, &[&here, &first, "`doc-7`"]);

    let (docs, error, documents) = read(&spec, OnError::Skip);
    assert!(error.is_none());
    assert_eq!(ids(&docs), ["doc-1", "doc-7", "doc-8"]);
    assert_eq!(documents.skipped().len(), 1);
    assert_eq!(documents.skipped()[0].reason, message);
    assert_eq!(documents.summary().n_skipped, 1);
}

#[test]
fn duplicate_id_across_jsonl_and_parquet_names_line_and_row() {
    let dir = TempDir::new().unwrap();
    let jsonl = write_file(
        dir.path(),
        "a.jsonl",
        "{\"id\": \"p-2\", \"text\": \"from json\"}\n",
    );
    let parquet = dir.path().join("b.parquet");
    write_parquet(
        &parquet,
        &[batch_of(
            string_ids(&["p-0", "p-1", "p-2"]),
            Arc::new(StringArray::from(vec!["zero", "one", "two"])),
        )],
        None,
    );
    let message = fail_message(&spec_of(&[&jsonl, &parquet]));
    let here = format!("{} row 2, field `id`", parquet.display());
    let first = format!("first seen at {} line 1", jsonl.display());
    assert_contains(&message, &[&here, &first]);
}

#[test]
fn skip_collects_every_bad_jsonl_record_and_keeps_the_good_ones() {
    let dir = TempDir::new().unwrap();
    let mut bytes = Vec::new();
    let lines: [&[u8]; 11] = [
        br#"{"id": "a", "text": "alpha"}"#,
        br#"{"id": "b", "text": "#,
        br#"{"text": "no id"}"#,
        br#"{"id": "c"}"#,
        br#"{"id": {"x": 1}, "text": "object id"}"#,
        br#"{"id": "d", "text": null}"#,
        b"{\"id\": \"e\", \"text\": \"\xc3\x28\"}",
        br#"{"id": "f", "text": "   "}"#,
        br#"{"id": "a", "text": "alpha again"}"#,
        b"",
        br#"{"id": 9, "text": "nine"}"#,
    ];
    for line in lines {
        bytes.extend_from_slice(line);
        bytes.push(b'\n');
    }
    let path = write_file(dir.path(), "mixed.jsonl", &bytes);
    let (docs, error, documents) = read(&spec_of(&[&path]), OnError::Skip);
    assert!(error.is_none());
    assert_eq!(ids(&docs), ["a", "9"]);
    let shown = path.display();
    let expected: Vec<(String, &str)> = vec![
        (
            format!("{shown} line 2"),
            "field `text`: malformed JSON at column 19",
        ),
        (format!("{shown} line 3"), "field `id`: missing"),
        (format!("{shown} line 4"), "field `text`: missing"),
        (format!("{shown} line 5"), "field `id`: expected"),
        (
            format!("{shown} line 6"),
            "field `text`: expected a string, found null",
        ),
        (format!("{shown} line 7"), "field `text`: invalid UTF-8"),
        (
            format!("{shown} line 8"),
            "field `text`: document `f` is empty",
        ),
        (
            format!("{shown} line 9"),
            "field `id`: duplicate document id `a`",
        ),
    ];
    let skipped = documents.skipped();
    assert_eq!(skipped.len(), expected.len(), "{skipped:#?}");
    for (skip, (location, reason)) in skipped.iter().zip(&expected) {
        assert_eq!(&skip.location, location);
        assert!(skip.reason.starts_with(location.as_str()), "{skip:?}");
        assert!(skip.reason.contains(reason), "{skip:?} lacks {reason:?}");
    }
    let summary = documents.summary();
    assert_eq!(summary.n_documents, 2);
    assert_eq!(summary.n_skipped, 8);
    assert_eq!(summary.text_bytes, ("alpha".len() + "nine".len()) as u64);
}

// ---------------------------------------------------------------------------------------------
// Bad text files
// ---------------------------------------------------------------------------------------------

#[test]
fn non_utf8_in_text_file_names_the_line_within_the_file() {
    let dir = TempDir::new().unwrap();
    let root = dir.path().join("docs");
    write_file(&root, "a.txt", "Fine text.\n");
    let bad = write_file(
        &root,
        "sub/bad.txt",
        b"first line\nsecond line\nthird \xff line\n",
    );
    let message = fail_message(&spec_of(&[&root]));
    let at = format!("{} line 3, field `text`", bad.display());
    assert_contains(&message, &[&at, "invalid UTF-8 at byte 6 of the line"]);
}

#[test]
fn empty_text_file_is_an_error() {
    let dir = TempDir::new().unwrap();
    let root = dir.path().join("docs");
    let empty = write_file(&root, "empty.md", " \n\n\t\n");
    let message = fail_message(&spec_of(&[&root]));
    let at = format!("{} line 1, field `text`", empty.display());
    assert_contains(&message, &[&at, "document `empty.md` is empty"]);
}

#[test]
fn same_directory_twice_gives_duplicate_paths() {
    let dir = TempDir::new().unwrap();
    let root = dir.path().join("docs");
    let a = write_file(&root, "a.txt", "Some text.");
    let message = fail_message(&spec_of(&[&root, &root]));
    let first = format!("first seen at {} line 1", a.display());
    assert_contains(
        &message,
        &["field `path`", "duplicate document id `a.txt`", &first],
    );
}

#[test]
fn skip_in_text_directory_keeps_the_good_files() {
    let dir = TempDir::new().unwrap();
    let root = dir.path().join("docs");
    write_file(&root, "a.txt", "Alpha text.");
    write_file(&root, "b.txt", b"bad \x80 bytes");
    write_file(&root, "c.md", "");
    write_file(&root, "sub/d.md", "# Delta\n\nMore text.");
    let (docs, error, documents) = read(&spec_of(&[&root]), OnError::Skip);
    assert!(error.is_none());
    assert_eq!(ids(&docs), ["a.txt", "sub/d.md"]);
    let skipped = documents.skipped();
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    assert_eq!(
        skipped[0].location,
        format!("{} line 1", root.join("b.txt").display())
    );
    assert!(skipped[0].reason.contains("invalid UTF-8"));
    assert_eq!(
        skipped[1].location,
        format!("{} line 1", root.join("c.md").display())
    );
    assert!(skipped[1].reason.contains("is empty"));
    assert_eq!(documents.summary().n_skipped, 2);
}

// ---------------------------------------------------------------------------------------------
// Bad Parquet files
// ---------------------------------------------------------------------------------------------

#[test]
fn garbage_parquet_file_is_unreadable() {
    let dir = TempDir::new().unwrap();
    let path = write_file(
        dir.path(),
        "garbage.parquet",
        b"this is not a parquet file at all\n",
    );
    let message = fail_message(&spec_of(&[&path]));
    let at = format!("{}: unreadable Parquet file", path.display());
    assert_contains(&message, &[&at]);
}

/// Regression: a truncated Parquet file, given alone under skip, ended the read without a word;
/// it is named with its reason under both policies, and under skip recorded with an unknown
/// number of rows (the footer that counts them is gone).
#[test]
fn truncated_parquet_file_is_named_with_its_reason_under_both_policies() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("truncated.parquet");
    write_parquet(&path, &[fineweb_batch(0, 200)], None);
    let bytes = fs::read(&path).unwrap();
    fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let spec = spec_of(&[&path]);
    let message = fail_message(&spec);
    let at = format!("{}: unreadable Parquet file: ", path.display());
    assert!(message.starts_with(&at), "{message:?}");
    assert!(message.len() > at.len() + 10, "no reason in {message:?}");

    let (docs, error, documents) = read(&spec, OnError::Skip);
    assert!(error.is_none() && docs.is_empty(), "{error:?} {docs:?}");
    let skipped = documents.skipped();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0].location, path.display().to_string());
    assert_eq!(skipped[0].reason, message);
    assert_eq!(skipped[0].records_lost, None);
    let summary = documents.summary();
    assert_eq!((summary.n_records_lost, summary.n_unknown_losses), (0, 1));
    assert_eq!(
        summary.describe_skipped(),
        "1 problem, the records of 1 unreadable file lost (number unknown)"
    );
}

/// Overwrites the start of the first column chunk (`text` in the FineWeb schema) of each of
/// `row_groups` with 0xff bytes, so that its first page header cannot be decoded.
fn damage_row_groups(path: &Path, row_groups: &[usize]) {
    let metadata = ParquetRecordBatchReaderBuilder::try_new(fs::File::open(path).unwrap())
        .unwrap()
        .metadata()
        .clone();
    let mut bytes = fs::read(path).unwrap();
    for &group in row_groups {
        let (start, len) = metadata.row_group(group).column(0).byte_range();
        let start = start as usize;
        for byte in &mut bytes[start..start + 64.min(len as usize)] {
            *byte = 0xff;
        }
    }
    fs::write(path, &bytes).unwrap();
}

/// Regression: the error named "row 3072" (the start of a 1,024-row read batch), and skip kept
/// 3,072 documents, silently dropping the 1,828 intact rows after the damaged row group.
#[test]
fn parquet_damaged_row_group_is_named_and_skip_keeps_every_other_row() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("corpus.parquet");
    write_parquet(&path, &[fineweb_batch(0, 5000)], Some(100));
    damage_row_groups(&path, &[37]);
    let spec = spec_of(&[&path]);

    let mut documents = spec.documents(OnError::Fail).unwrap();
    let before: Vec<Document> = documents.by_ref().map_while(Result::ok).collect();
    assert_eq!(
        before.len(),
        3700,
        "every row before the damaged group is read"
    );
    assert!(documents.next().is_none());
    let message = fail_message(&spec);
    let at = format!(
        "{} row group 37 (rows 3700–3799): unreadable Parquet data: ",
        path.display()
    );
    assert!(message.starts_with(&at), "{message:?}");
    assert!(!message.contains("after its first"), "{message:?}");

    let (docs, error, documents) = read(&spec, OnError::Skip);
    assert!(error.is_none(), "{error:?}");
    let expected: Vec<String> = (0..5000)
        .filter(|i| !(3700..3800).contains(i))
        .map(fineweb_id)
        .collect();
    assert_eq!(ids(&docs), expected);
    assert_eq!(docs[3700].location.position, Position::Row(3800));
    let skipped = documents.skipped();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(
        skipped[0].location,
        format!("{} row group 37 (rows 3700–3799)", path.display())
    );
    assert_eq!(skipped[0].reason, message);
    assert_eq!(skipped[0].records_lost, Some(100));
    let summary = documents.summary();
    assert_eq!(
        (
            summary.n_documents,
            summary.n_skipped,
            summary.n_records_lost
        ),
        (4900, 1, 100)
    );
    assert_eq!(summary.describe_skipped(), "1 problem, 100 records lost");
}

#[test]
fn parquet_damaged_first_and_last_row_groups_lose_only_their_rows() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("ends.parquet");
    // Ten row groups, the last one short: 0–99, …, 800–899, 900–949.
    write_parquet(&path, &[fineweb_batch(0, 950)], Some(100));
    damage_row_groups(&path, &[0, 9]);
    let spec = spec_of(&[&path]);
    let message = fail_message(&spec);
    let at = format!(
        "{} row group 0 (rows 0–99): unreadable Parquet data: ",
        path.display()
    );
    assert!(message.starts_with(&at), "{message:?}");

    let (docs, error, documents) = read(&spec, OnError::Skip);
    assert!(error.is_none(), "{error:?}");
    let expected: Vec<String> = (100..900).map(fineweb_id).collect();
    assert_eq!(ids(&docs), expected);
    let skipped: Vec<(&str, Option<u64>)> = documents
        .skipped()
        .iter()
        .map(|s| (s.location.as_str(), s.records_lost))
        .collect();
    let group_0 = format!("{} row group 0 (rows 0–99)", path.display());
    let group_9 = format!("{} row group 9 (rows 900–949)", path.display());
    assert_eq!(
        skipped,
        [(group_0.as_str(), Some(100)), (group_9.as_str(), Some(50))]
    );
    assert_eq!(documents.summary().n_records_lost, 150);
}

/// Rows of a damaged row group read before the damage are kept; only the rest of it is lost.
#[test]
fn parquet_damage_inside_a_row_group_keeps_the_rows_read_before_it() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("pages.parquet");
    // Two row groups of 2048 rows, plain-encoded in pages of 256 rows: damage three quarters
    // into the first group's text chunk lies in a page of its second 1024-row batch.
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(2048))
        .set_dictionary_enabled(false)
        .set_data_page_row_count_limit(256)
        .set_write_batch_size(256)
        .build();
    let batch = fineweb_batch(0, 4096);
    let file = fs::File::create(&path).unwrap();
    let mut writer = ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    let metadata = ParquetRecordBatchReaderBuilder::try_new(fs::File::open(&path).unwrap())
        .unwrap()
        .metadata()
        .clone();
    assert_eq!(metadata.num_row_groups(), 2);
    let (start, len) = metadata.row_group(0).column(0).byte_range();
    let damage = (start + len * 3 / 4) as usize;
    let mut bytes = fs::read(&path).unwrap();
    for byte in &mut bytes[damage..damage + 64] {
        *byte = 0xff;
    }
    fs::write(&path, &bytes).unwrap();
    let spec = spec_of(&[&path]);
    let message = fail_message(&spec);
    let at = format!(
        "{} row group 0 (rows 0–2047): unreadable Parquet data: ",
        path.display()
    );
    assert!(message.starts_with(&at), "{message:?}");
    assert!(
        message.ends_with("(after its first 1024 rows)"),
        "{message:?}"
    );

    let (docs, error, documents) = read(&spec, OnError::Skip);
    assert!(error.is_none(), "{error:?}");
    let expected: Vec<String> = (0..1024).chain(2048..4096).map(fineweb_id).collect();
    assert_eq!(ids(&docs), expected);
    assert_eq!(documents.skipped().len(), 1);
    assert_eq!(documents.skipped()[0].records_lost, Some(1024));
}

/// Regression: an empty input made "the corpus has no document to index", naming nothing. Each
/// kind is an error naming it under fail; under skip it is listed (no record lost) and the other
/// inputs are read.
#[test]
fn empty_jsonl_file_directory_and_zero_row_parquet_are_errors_naming_them() {
    let dir = TempDir::new().unwrap();
    let good = write_file(
        dir.path(),
        "good.jsonl",
        "{\"id\": \"a\", \"text\": \"x\"}\n",
    );
    let empty_jsonl = write_file(dir.path(), "empty.jsonl", "");
    let blank_jsonl = write_file(dir.path(), "blank.jsonl", "\n  \n\n");
    let empty_dir = dir.path().join("empty-dir");
    fs::create_dir(&empty_dir).unwrap();
    let no_text_dir = dir.path().join("no-text-dir");
    write_file(&no_text_dir, "data.csv", "id,text\n1,one\n");
    let zero_rows = dir.path().join("zero.parquet");
    write_parquet(&zero_rows, &[fineweb_batch(0, 0)], None);
    let cases: [(&Path, &str); 5] = [
        (&empty_jsonl, "the file holds no record (no non-blank line)"),
        (&blank_jsonl, "the file holds no record (no non-blank line)"),
        (&empty_dir, "the directory holds no .txt or .md file"),
        (&no_text_dir, "the directory holds no .txt or .md file"),
        (&zero_rows, "the Parquet file has zero rows"),
    ];
    for (path, what) in cases {
        let expected = format!("{}: empty input: {what}", path.display());
        assert_eq!(fail_message(&spec_of(&[path])), expected);
        assert_eq!(fail_message(&spec_of(&[&good, path])), expected);

        let (docs, error, documents) = read(&spec_of(&[path, &good]), OnError::Skip);
        assert!(error.is_none(), "{error:?}");
        assert_eq!(ids(&docs), ["a"]);
        let skipped = documents.skipped();
        assert_eq!(skipped.len(), 1, "{skipped:?}");
        assert_eq!(skipped[0].location, path.display().to_string());
        assert_eq!(skipped[0].reason, expected);
        assert_eq!(skipped[0].records_lost, Some(0));
    }

    // A file whose every record is bad is not empty: its records are what is reported.
    let bad = write_file(dir.path(), "bad.jsonl", "{oops}\n");
    assert_contains(
        &fail_message(&spec_of(&[&bad])),
        &["line 1: malformed JSON"],
    );
}

#[test]
fn skip_lists_written_before_records_lost_still_read() {
    let old: Skipped =
        serde_json::from_str(r#"{"location": "a.jsonl line 2", "reason": "r"}"#).unwrap();
    assert_eq!(old.records_lost, Some(0));
    let unknown: Skipped =
        serde_json::from_str(r#"{"location": "a.parquet", "reason": "r", "records_lost": null}"#)
            .unwrap();
    assert_eq!(unknown.records_lost, None);
}

#[test]
fn parquet_without_text_column_lists_the_columns() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("no-text.parquet");
    let batch = fineweb_batch(0, 3);
    let batch = batch.project(&[1, 2, 3]).unwrap(); // id, dump, url
    write_parquet(&path, &[batch], None);
    let message = fail_message(&spec_of(&[&path]));
    let at = format!("{}, field `text`: no such column", path.display());
    assert_contains(&message, &[&at, "`id`, `dump`, `url`"]);
}

#[test]
fn parquet_null_text_cell_names_the_row() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("nulls.parquet");
    // 3000 rows in row groups of 1000, so the bad row sits in a later batch and row group.
    let n = 3000;
    let id_values: Vec<String> = (0..n).map(|i| format!("doc-{i}")).collect();
    let texts: Vec<Option<String>> = (0..n)
        .map(|i| (i != 1500).then(|| format!("text number {i}")))
        .collect();
    write_parquet(
        &path,
        &[batch_of(
            Arc::new(StringArray::from(id_values)),
            Arc::new(StringArray::from(texts)),
        )],
        Some(1000),
    );
    let spec = spec_of(&[&path]);
    let message = fail_message(&spec);
    let at = format!("{} row 1500, field `text`", path.display());
    assert_contains(&message, &[&at, "expected a string, found null"]);

    let (docs, error, documents) = read(&spec, OnError::Skip);
    assert!(error.is_none());
    assert_eq!(docs.len(), n - 1);
    assert_eq!(docs[1500].id, "doc-1501");
    assert_eq!(docs[1500].location.position, Position::Row(1501));
    assert_eq!(
        documents.skipped()[0].location,
        format!("{} row 1500", path.display())
    );
    assert_eq!(documents.summary().n_skipped, 1);
}

#[test]
fn parquet_null_id_cell_names_the_row_and_id_field() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("null-id.parquet");
    write_parquet(
        &path,
        &[batch_of(
            Arc::new(StringArray::from(vec![Some("a"), None])),
            Arc::new(StringArray::from(vec!["one", "two"])),
        )],
        None,
    );
    let message = fail_message(&spec_of(&[&path]));
    let at = format!("{} row 1, field `id`", path.display());
    assert_contains(&message, &[&at, "found null"]);
}

#[test]
fn parquet_empty_text_cell_names_the_row() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("empty.parquet");
    write_parquet(
        &path,
        &[batch_of(
            string_ids(&["a", "b", "c"]),
            Arc::new(StringArray::from(vec!["one", "two", " \n "])),
        )],
        None,
    );
    let message = fail_message(&spec_of(&[&path]));
    let at = format!("{} row 2, field `text`", path.display());
    assert_contains(&message, &[&at, "document `c` is empty"]);
}

#[test]
fn parquet_non_utf8_binary_text_names_the_row() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("binary.parquet");
    let texts: Vec<&[u8]> = vec![b"good text", b"bad \xfe\xff text", b"more good text"];
    write_parquet(
        &path,
        &[batch_of(
            string_ids(&["a", "b", "c"]),
            Arc::new(BinaryArray::from(texts)),
        )],
        None,
    );
    let spec = spec_of(&[&path]);
    let message = fail_message(&spec);
    let at = format!("{} row 1, field `text`", path.display());
    assert_contains(&message, &[&at, "invalid UTF-8 at byte 4 of the value"]);

    let (docs, _, documents) = read(&spec, OnError::Skip);
    assert_eq!(ids(&docs), ["a", "c"]);
    assert_eq!(documents.skipped().len(), 1);
}

#[test]
fn parquet_text_column_of_wrong_type_is_an_error() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("ints.parquet");
    write_parquet(
        &path,
        &[batch_of(
            string_ids(&["a"]),
            Arc::new(Int64Array::from(vec![7])),
        )],
        None,
    );
    let message = fail_message(&spec_of(&[&path]));
    let at = format!("{} row 0, field `text`", path.display());
    assert_contains(&message, &[&at, "a column of type Int64"]);
}

#[test]
fn skip_passes_over_unreadable_parquet_shards() {
    let dir = TempDir::new().unwrap();
    let shards = dir.path().join("shards");
    fs::create_dir(&shards).unwrap();
    write_parquet(&shards.join("000.parquet"), &[fineweb_batch(0, 5)], None);
    write_file(&shards, "001.parquet", b"PAR1 garbage");
    let truncated = shards.join("002.parquet");
    write_parquet(&truncated, &[fineweb_batch(5, 5)], None);
    let bytes = fs::read(&truncated).unwrap();
    fs::write(&truncated, &bytes[..bytes.len() - 10]).unwrap();
    write_parquet(
        &shards.join("003.parquet"),
        &[fineweb_batch(10, 5).project(&[1, 2]).unwrap()],
        None,
    );
    let texts = vec![Some("ok"), None, Some("fine")];
    write_parquet(
        &shards.join("004.parquet"),
        &[batch_of(
            string_ids(&["n-0", "n-1", "n-2"]),
            Arc::new(StringArray::from(texts)),
        )],
        None,
    );
    let spec = CorpusSpec::new([format!("{}/*.parquet", shards.display())]);

    let message = fail_message(&spec);
    assert_contains(&message, &["001.parquet: unreadable Parquet file"]);

    let (docs, error, documents) = read(&spec, OnError::Skip);
    assert!(error.is_none());
    let mut expected: Vec<String> = (0..5).map(fineweb_id).collect();
    expected.extend(["n-0".to_string(), "n-2".to_string()]);
    assert_eq!(ids(&docs), expected);
    let locations: Vec<String> = documents
        .skipped()
        .iter()
        .map(|s| s.location.clone())
        .collect();
    let at = |name: &str| shards.join(name).display().to_string();
    assert_eq!(
        locations,
        [
            at("001.parquet"),
            at("002.parquet"),
            at("003.parquet"),
            format!("{} row 1", at("004.parquet")),
        ]
    );
    assert!(
        documents.skipped()[2]
            .reason
            .contains("field `text`: no such column")
    );
    // Unreadable footers hide their row counts; a missing column loses every row the footer
    // counts; a bad cell loses its row.
    let lost: Vec<Option<u64>> = documents.skipped().iter().map(|s| s.records_lost).collect();
    assert_eq!(lost, [None, None, Some(5), Some(1)]);
    let summary = documents.summary();
    assert_eq!((summary.n_documents, summary.n_skipped), (7, 4));
    assert_eq!((summary.n_records_lost, summary.n_unknown_losses), (6, 2));
    assert_eq!(
        summary.describe_skipped(),
        "4 problems, 6 records lost and those of 2 unreadable files (number unknown)"
    );
}

// ---------------------------------------------------------------------------------------------
// Happy paths: JSONL
// ---------------------------------------------------------------------------------------------

#[test]
fn jsonl_with_custom_id_and_text_fields() {
    let dir = TempDir::new().unwrap();
    let path = write_file(
        dir.path(),
        "custom.jsonl",
        concat!(
            r#"{"doc_id": "x-1", "id": "ignored", "body": "Body one.", "text": "ignored", "meta": {"a": [1, 2]}}"#,
            "\n",
            r#"{"meta": null, "body": "Body two.", "doc_id": "x-2"}"#,
            "\n",
        ),
    );
    let mut spec = spec_of(&[&path]);
    spec.id_field = "doc_id".into();
    spec.text_field = "body".into();
    let (docs, error, _) = read(&spec, OnError::Fail);
    assert!(error.is_none());
    assert_eq!(ids(&docs), ["x-1", "x-2"]);
    assert_eq!(docs[0].text, "Body one.");
    assert_eq!(docs[1].text, "Body two.");

    // A record missing the custom field is named by that field.
    let bad = write_file(
        dir.path(),
        "bad.jsonl",
        "{\"doc_id\": \"x\", \"text\": \"t\"}\n",
    );
    spec.inputs = vec![bad.display().to_string()];
    let message = fail_message(&spec);
    assert_contains(&message, &["line 1, field `body`: missing"]);
}

#[test]
fn integer_ids_become_strings() {
    let dir = TempDir::new().unwrap();
    let path = write_file(
        dir.path(),
        "ints.jsonl",
        "{\"id\": 42, \"text\": \"a\"}\n{\"id\": -7, \"text\": \"b\"}\n{\"id\": 18446744073709551615, \"text\": \"c\"}\n",
    );
    let (docs, error, _) = read(&spec_of(&[&path]), OnError::Fail);
    assert!(error.is_none());
    assert_eq!(ids(&docs), ["42", "-7", "18446744073709551615"]);

    // The string "42" and the integer 42 are the same id.
    let dup = write_file(
        dir.path(),
        "dup.jsonl",
        "{\"id\": 42, \"text\": \"a\"}\n{\"id\": \"42\", \"text\": \"b\"}\n",
    );
    let message = fail_message(&spec_of(&[&dup]));
    assert_contains(
        &message,
        &["line 2, field `id`: duplicate document id `42`"],
    );
}

#[test]
fn blank_lines_are_skipped_but_counted() {
    let dir = TempDir::new().unwrap();
    let path = write_file(
        dir.path(),
        "blanks.jsonl",
        "\n{\"id\": \"a\", \"text\": \"x\"}\n   \n\t\n{\"id\": \"b\", \"text\": \"y\"}\n\n{\"id\": \"c\"}\n\n",
    );
    let spec = spec_of(&[&path]);
    let mut documents = spec.documents(OnError::Fail).unwrap();
    let a = documents.next().unwrap().unwrap();
    let b = documents.next().unwrap().unwrap();
    assert_eq!(
        (a.id.as_str(), a.location.position),
        ("a", Position::Line(2))
    );
    assert_eq!(
        (b.id.as_str(), b.location.position),
        ("b", Position::Line(5))
    );
    let message = documents.next().unwrap().unwrap_err().to_string();
    assert_contains(&message, &[&format!("{} line 7", path.display())]);
    assert!(documents.next().is_none());
    assert_eq!(documents.summary().n_skipped, 0);
}

#[test]
fn crlf_lines_are_read_and_numbered() {
    let dir = TempDir::new().unwrap();
    let path = write_file(
        dir.path(),
        "crlf.jsonl",
        "{\"id\": \"a\", \"text\": \"line one\"}\r\n\r\n{\"id\": \"b\", \"text\": \"two\\r\\nlines\"}\r\n{\"id\": \"c\", \"text\": 3}\r\n",
    );
    let (docs, error, _) = read(&spec_of(&[&path]), OnError::Fail);
    assert_eq!(ids(&docs), ["a", "b"]);
    assert_eq!(docs[0].text, "line one");
    assert_eq!(docs[1].text, "two\r\nlines");
    assert_eq!(docs[1].location.position, Position::Line(3));
    let message = error.unwrap().to_string();
    assert_contains(&message, &["line 4, field `text`", "found the number 3"]);
}

#[test]
fn last_line_without_newline_is_read() {
    let dir = TempDir::new().unwrap();
    let path = write_file(
        dir.path(),
        "no-eol.jsonl",
        "{\"id\": \"a\", \"text\": \"x\"}\n{\"id\": \"b\", \"text\": \"y\"}",
    );
    let (docs, error, _) = read(&spec_of(&[&path]), OnError::Fail);
    assert!(error.is_none());
    assert_eq!(ids(&docs), ["a", "b"]);
}

#[test]
fn unicode_text_survives_intact() {
    let dir = TempDir::new().unwrap();
    let text = "Ünïcödé — 日本語のテキスト 🌍 \u{2028} done";
    let line = serde_json::json!({"id": "u", "text": text}).to_string();
    let path = write_file(dir.path(), "u.ndjson", format!("{line}\n"));
    let (docs, error, documents) = read(&spec_of(&[&path]), OnError::Fail);
    assert!(error.is_none());
    assert_eq!(docs[0].text, text);
    assert_eq!(documents.summary().text_bytes, text.len() as u64);
}

#[test]
fn forced_format_reads_a_file_with_another_extension() {
    let dir = TempDir::new().unwrap();
    let path = write_file(
        dir.path(),
        "corpus.txt",
        "{\"id\": \"a\", \"text\": \"x\"}\n",
    );
    let mut spec = spec_of(&[&path]);
    spec.format = Some(CorpusFormat::Jsonl);
    let (docs, error, _) = read(&spec, OnError::Fail);
    assert!(error.is_none());
    assert_eq!(ids(&docs), ["a"]);
}

// ---------------------------------------------------------------------------------------------
// Happy paths: Parquet
// ---------------------------------------------------------------------------------------------

#[test]
fn fineweb_schema_is_read_with_default_fields() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("000_00000.parquet");
    write_parquet(&path, &[fineweb_batch(0, 10)], None);
    let (docs, error, documents) = read(&spec_of(&[&path]), OnError::Fail);
    assert!(error.is_none());
    assert_eq!(docs.len(), 10);
    assert_eq!(docs[3].id, fineweb_id(3));
    assert_eq!(
        docs[3].text,
        "Document 3 of the crawl.\nIt talks about gardens, bread and rivers."
    );
    assert_eq!(docs[3].location.position, Position::Row(3));
    assert_eq!(&*docs[3].location.path, path.as_path());
    assert_eq!(documents.summary().n_documents, 10);
}

#[test]
fn glob_over_three_shards_reads_all_rows_in_sorted_shard_order() {
    let dir = TempDir::new().unwrap();
    let shards = dir.path().join("data").join("CC-MAIN-2013-20");
    fs::create_dir_all(&shards).unwrap();
    // Written out of order; the largest shard spans several batches and row groups.
    write_parquet(
        &shards.join("002_00000.parquet"),
        &[fineweb_batch(3000, 7)],
        None,
    );
    write_parquet(
        &shards.join("000_00000.parquet"),
        &[fineweb_batch(0, 2500)],
        Some(700),
    );
    write_parquet(
        &shards.join("001_00000.parquet"),
        &[fineweb_batch(2500, 500)],
        None,
    );
    write_file(&shards, "notes.txt", "not matched by the glob");
    let spec = CorpusSpec::new([format!("{}/*.parquet", shards.display())]);
    let files: Vec<PathBuf> = spec
        .resolve()
        .unwrap()
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    assert_eq!(
        files,
        [
            "000_00000.parquet",
            "001_00000.parquet",
            "002_00000.parquet"
        ]
        .map(|n| shards.join(n))
    );

    let (docs, error, documents) = read(&spec, OnError::Fail);
    assert!(error.is_none());
    assert_eq!(docs.len(), 3007);
    for (i, doc) in docs.iter().enumerate() {
        assert_eq!(doc.id, fineweb_id(i));
    }
    assert_eq!(docs[2499].location.position, Position::Row(2499));
    assert_eq!(docs[2500].location.position, Position::Row(0));
    assert_eq!(&*docs[2500].location.path, shards.join("001_00000.parquet"));
    assert_eq!(docs[3006].location.position, Position::Row(6));
    assert_eq!(documents.summary().n_documents, 3007);
}

#[test]
fn several_inputs_are_read_in_the_order_given() {
    let dir = TempDir::new().unwrap();
    let parquet = dir.path().join("b.parquet");
    write_parquet(&parquet, &[fineweb_batch(0, 2)], None);
    let jsonl = write_file(
        dir.path(),
        "a.jsonl",
        "{\"id\": \"j\", \"text\": \"json\"}\n",
    );
    let root = dir.path().join("docs");
    write_file(&root, "t.txt", "text file");
    let (docs, error, _) = read(&spec_of(&[&parquet, &jsonl, &root]), OnError::Fail);
    assert!(error.is_none());
    let expected = [fineweb_id(0), fineweb_id(1), "j".into(), "t.txt".into()];
    assert_eq!(ids(&docs), expected);
}

#[test]
fn parquet_with_custom_columns_and_integer_ids() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("custom.parquet");
    let schema = Schema::new(vec![
        Field::new("doc_id", DataType::Int64, false),
        Field::new("body", DataType::Utf8, false),
        Field::new("text", DataType::Utf8, false),
    ]);
    let batch = RecordBatch::try_new(
        Arc::new(schema),
        vec![
            Arc::new(Int64Array::from(vec![10, 11])),
            Arc::new(StringArray::from(vec!["body ten", "body eleven"])),
            Arc::new(StringArray::from(vec!["", ""])),
        ],
    )
    .unwrap();
    write_parquet(&path, &[batch], None);
    let mut spec = spec_of(&[&path]);
    spec.id_field = "doc_id".into();
    spec.text_field = "body".into();
    let (docs, error, _) = read(&spec, OnError::Fail);
    assert!(error.is_none());
    assert_eq!(ids(&docs), ["10", "11"]);
    assert_eq!(docs[1].text, "body eleven");
}

/// Reads back the Arrow type the file stores for `text`, to be sure the test covers that type.
fn stored_text_type(path: &Path) -> DataType {
    let builder = ParquetRecordBatchReaderBuilder::try_new(fs::File::open(path).unwrap()).unwrap();
    builder
        .schema()
        .field_with_name("text")
        .unwrap()
        .data_type()
        .clone()
}

#[test]
fn utf8view_and_large_utf8_columns_are_read() {
    let dir = TempDir::new().unwrap();
    let cases: Vec<(&str, ArrayRef, ArrayRef)> = vec![
        (
            "view.parquet",
            Arc::new(StringViewArray::from(vec!["v-0", "v-1"])),
            Arc::new(StringViewArray::from(vec![
                "a short text",
                "a text long enough not to be inlined in the view",
            ])),
        ),
        (
            "large.parquet",
            Arc::new(LargeStringArray::from(vec!["l-0", "l-1"])),
            Arc::new(LargeStringArray::from(vec!["large one", "large two"])),
        ),
    ];
    for (name, id, text) in cases {
        let path = dir.path().join(name);
        let text_type = text.data_type().clone();
        write_parquet(&path, &[batch_of(id, text)], None);
        assert_eq!(stored_text_type(&path), text_type);
        let (docs, error, _) = read(&spec_of(&[&path]), OnError::Fail);
        assert!(error.is_none(), "{name}: {error:?}");
        assert_eq!(docs.len(), 2, "{name}");
        assert!(docs[1].text.contains("t"), "{name}");
    }
}

// ---------------------------------------------------------------------------------------------
// Happy paths: text directories
// ---------------------------------------------------------------------------------------------

#[test]
fn text_directory_ids_are_relative_paths_in_sorted_order() {
    let dir = TempDir::new().unwrap();
    let root = dir.path().join("notes");
    write_file(&root, "z.txt", "Zed.");
    write_file(&root, "a.txt", "Alpha.\r\nSecond line.");
    write_file(&root, "sub/b.md", "# Bee\n\nText.");
    write_file(&root, "sub/deeper/c.TXT", "Sea.");
    write_file(&root, "sub/ignored.csv", "a,b\n1,2\n");
    write_file(&root, "README", "no extension");
    write_file(&root, "image.png", b"\x89PNG\r\n\x1a\n\xff\xff");
    let (docs, error, documents) = read(&spec_of(&[&root]), OnError::Fail);
    assert!(error.is_none(), "{error:?}");
    assert_eq!(
        ids(&docs),
        ["a.txt", "sub/b.md", "sub/deeper/c.TXT", "z.txt"]
    );
    assert_eq!(docs[0].text, "Alpha.\r\nSecond line.");
    assert_eq!(&*docs[1].location.path, root.join("sub/b.md").as_path());
    assert_eq!(documents.summary().n_documents, 4);
}

#[test]
fn detect_picks_formats_from_paths() {
    let dir = TempDir::new().unwrap();
    assert_eq!(
        CorpusFormat::detect(dir.path()),
        Some(CorpusFormat::TextDir)
    );
    for (name, format) in [
        ("a.jsonl", Some(CorpusFormat::Jsonl)),
        ("a.NDJSON", Some(CorpusFormat::Jsonl)),
        ("a.json", Some(CorpusFormat::Jsonl)),
        ("a.parquet", Some(CorpusFormat::Parquet)),
        ("a.pq", Some(CorpusFormat::Parquet)),
        ("a.csv", None),
        ("a", None),
    ] {
        assert_eq!(CorpusFormat::detect(Path::new(name)), format, "{name}");
    }
}

// ---------------------------------------------------------------------------------------------
// Input resolution errors
// ---------------------------------------------------------------------------------------------

#[test]
fn unknown_extension_suggests_format_flag() {
    let dir = TempDir::new().unwrap();
    let path = write_file(dir.path(), "corpus.csv", "id,text\n");
    for on_error in [OnError::Fail, OnError::Skip] {
        let message = spec_of(&[&path])
            .documents(on_error)
            .unwrap_err()
            .to_string();
        assert_contains(
            &message,
            &[&path.display().to_string(), "--format", "`.csv`"],
        );
    }
}

#[test]
fn nonexistent_path_is_an_error() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("missing.jsonl");
    for on_error in [OnError::Fail, OnError::Skip] {
        let error = spec_of(&[&path]).documents(on_error).unwrap_err();
        assert_eq!(error.path(), Some(path.as_path()));
        let message = with_causes(&error);
        assert_contains(&message, &[&path.display().to_string(), "no such file"]);
    }
}

#[test]
fn glob_matching_nothing_is_an_error() {
    let dir = TempDir::new().unwrap();
    write_file(dir.path(), "a.jsonl", "{\"id\": \"a\", \"text\": \"x\"}\n");
    let pattern = format!("{}/*.parquet", dir.path().display());
    for on_error in [OnError::Fail, OnError::Skip] {
        let error = CorpusSpec::new([pattern.clone()])
            .documents(on_error)
            .unwrap_err();
        assert!(!error.is_skippable());
        assert_eq!(
            error.to_string(),
            format!("{pattern}: no input file matched")
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Streaming
// ---------------------------------------------------------------------------------------------

#[test]
fn large_jsonl_streams_without_collecting() {
    const N: usize = 200_000;
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("big.jsonl");
    let mut out = BufWriter::new(fs::File::create(&path).unwrap());
    let mut expected_bytes = 0u64;
    for i in 0..N {
        let text = format!("document {i} has a few words");
        expected_bytes += text.len() as u64;
        writeln!(
            out,
            r#"{{"id": "d{i}", "text": "{text}", "extra": [1, 2, 3]}}"#
        )
        .unwrap();
    }
    out.into_inner().unwrap().sync_all().unwrap();

    let mut documents = CorpusSpec::new([path.display().to_string()])
        .documents(OnError::Fail)
        .unwrap();
    let mut n = 0usize;
    let mut last_id = String::new();
    for doc in documents.by_ref() {
        let doc = doc.unwrap();
        n += 1;
        last_id = doc.id;
    }
    assert_eq!(n, N);
    assert_eq!(last_id, format!("d{}", N - 1));
    let summary = documents.summary();
    assert_eq!(summary.n_documents, N as u64);
    assert_eq!(summary.n_skipped, 0);
    assert_eq!(summary.text_bytes, expected_bytes);
}

#[test]
fn documents_is_send() {
    fn assert_send<T: Send>() {}
    assert_send::<Documents>();
}

// ---------------------------------------------------------------------------------------------
// The Parquet scan for sampling: the same rows, checks and skips as the document stream
// ---------------------------------------------------------------------------------------------

/// Three shards: FineWeb rows 0–2499 in row groups of 300; a small shard whose rows 1–3 are a
/// duplicate id, a null id and an empty text; FineWeb rows 5000–5699 in row groups of 200 with
/// row group 1 (rows 200–399) damaged in its text column.
fn three_shards(dir: &Path) -> [PathBuf; 3] {
    let a = dir.join("a.parquet");
    write_parquet(&a, &[fineweb_batch(0, 2500)], Some(300));
    let b = dir.join("b.parquet");
    write_parquet(
        &b,
        &[batch_of(
            Arc::new(StringArray::from(vec![
                Some("b0"),
                Some(fineweb_id(5).as_str()),
                None,
                Some("b3"),
                Some("b4"),
            ])),
            Arc::new(StringArray::from(vec![
                "one two",
                "x y",
                "a null id",
                " \n\t ",
                "the last words\u{A0}here",
            ])),
        )],
        Some(2),
    );
    let c = dir.join("c.parquet");
    write_parquet(&c, &[fineweb_batch(5000, 700)], Some(200));
    damage_row_groups(&c, &[1]);
    [a, b, c]
}

fn word_count(text: &str) -> usize {
    text.split_whitespace().count()
}

/// A row a scan handed out: id, measure, file, row.
type Handed = (String, Option<usize>, usize, u64);

/// Scans `spec` as one Parquet corpus: the rows handed out and the result.
fn scan(
    spec: &CorpusSpec,
    on_error: OnError,
    measure: bool,
) -> (Vec<Handed>, Result<ScanSummary, CorpusError>) {
    let corpus = spec.parquet().unwrap().expect("every input is Parquet");
    let mut rows = Vec::new();
    let result = corpus.scan(
        on_error,
        measure.then_some(&word_count as &Measure),
        &mut |row| {
            rows.push((
                row.id.to_string(),
                row.measure,
                row.row.file(),
                row.row.row(),
            ))
        },
    );
    (rows, result)
}

#[test]
fn parquet_scan_hands_out_the_rows_and_skips_of_the_document_stream() {
    let dir = TempDir::new().unwrap();
    let shards = three_shards(dir.path());
    let spec = spec_of(&[&shards[0], &shards[1], &shards[2]]);

    let (docs, error, documents) = read(&spec, OnError::Skip);
    assert!(error.is_none(), "{error:?}");
    assert_eq!(docs.len(), 2500 + 2 + 500);
    let (rows, summary) = scan(&spec, OnError::Skip, true);
    let summary = summary.unwrap();
    assert_eq!(rows, handed_of(&docs, &shards));
    assert_eq!(summary.n_rows, docs.len() as u64);
    assert_eq!(summary.skipped, documents.skipped());
    assert_eq!(
        summary
            .skipped
            .iter()
            .map(|s| s.records_lost)
            .collect::<Vec<_>>(),
        [Some(1), Some(1), Some(1), Some(200)]
    );

    // Under fail, the first problem (the duplicate id) is the same error. Ids are checked
    // when the pass ends or meets another failure (the empty text right after the duplicate
    // here), so the repeated row itself was handed out too.
    let (fail_rows, error) = scan(&spec, OnError::Fail, true);
    assert_eq!(with_causes(&error.unwrap_err()), fail_message(&spec));
    assert_eq!(fail_rows.len(), 2502);
    assert_eq!(fail_rows[..2501], rows[..2501]);
    let repeated = &fail_rows[2501].0;
    assert!(rows[..2501].iter().any(|row| &row.0 == repeated));

    // Reading ids only, the texts are not checked: the empty text and the damaged text pages
    // go unseen, while ids are checked as before.
    let ids_only = spec_of(&[&shards[0], &shards[2]]);
    let (rows, summary) = scan(&ids_only, OnError::Fail, false);
    assert_eq!(summary.unwrap().n_rows, 3200);
    let expected: Vec<(String, Option<usize>, usize, u64)> = (0..2500)
        .map(|i| (fineweb_id(i), None, 0, i as u64))
        .chain((0..700).map(|i| (fineweb_id(5000 + i), None, 1, i as u64)))
        .collect();
    assert_eq!(rows, expected);
    let (_, error) = scan(&spec, OnError::Fail, false);
    let message = with_causes(&error.unwrap_err());
    let at = format!("{} row 1, field `id`", shards[1].display());
    assert_contains(&message, &[&at, "duplicate document id", &fineweb_id(5)]);
}

/// The rows a scan hands out, as the document stream gives them: id, measure, file, row.
fn handed_of(docs: &[Document], shards: &[PathBuf]) -> Vec<Handed> {
    docs.iter()
        .map(|doc| {
            let file = shards
                .iter()
                .position(|s| s.as_path() == &*doc.location.path)
                .unwrap();
            let Position::Row(row) = doc.location.position else {
                panic!("{:?}", doc.location)
            };
            (doc.id.clone(), Some(word_count(&doc.text)), file, row)
        })
        .collect()
}

// A scan decodes a window of row groups (tens of thousands of rows) while it checks the one
// before: rows, skips and the first error stay in corpus order across windows and files.
#[test]
fn parquet_scan_keeps_corpus_order_across_many_windows() {
    let dir = TempDir::new().unwrap();
    let a = dir.path().join("a.parquet");
    write_parquet(&a, &[fineweb_batch(0, 70_000)], Some(1_000));
    let b = dir.path().join("b.parquet");
    write_parquet(&b, &[fineweb_batch(70_000, 50_000)], Some(700));
    damage_row_groups(&b, &[40]);
    // Rows 0–9 repeat b's last ten ids, rows 10–19 are new.
    let c = dir.path().join("c.parquet");
    write_parquet(&c, &[fineweb_batch(119_990, 20)], Some(1_000));
    let shards = [a, b, c];
    let spec = spec_of(&[&shards[0], &shards[1], &shards[2]]);

    let (docs, error, documents) = read(&spec, OnError::Skip);
    assert!(error.is_none(), "{error:?}");
    assert_eq!(docs.len(), 70_000 + 50_000 - 700 + 10);
    let (rows, summary) = scan(&spec, OnError::Skip, true);
    let summary = summary.unwrap();
    assert_eq!(rows, handed_of(&docs, &shards));
    assert_eq!(summary.skipped, documents.skipped());
    assert_eq!(summary.skipped.len(), 1 + 10);

    // Under fail the damaged row group, a window before the repeats, is the error; reading
    // ids only it goes unseen, and the first repeat is.
    let (_, error) = scan(&spec, OnError::Fail, true);
    assert_eq!(with_causes(&error.unwrap_err()), fail_message(&spec));
    let (rows, error) = scan(&spec, OnError::Fail, false);
    assert_eq!(rows.len(), 120_020);
    let message = with_causes(&error.unwrap_err());
    let at = format!("{} row 0, field `id`", shards[2].display());
    let first = format!("{} row 49990", shards[1].display());
    assert_contains(
        &message,
        &[&at, "duplicate document id", &fineweb_id(119_990), &first],
    );
}

#[test]
fn parquet_fetch_reads_the_documents_of_chosen_rows() {
    let dir = TempDir::new().unwrap();
    let shards = three_shards(dir.path());
    let spec = spec_of(&[&shards[0], &shards[1], &shards[2]]);
    let corpus = spec.parquet().unwrap().unwrap();
    let (docs, _, _) = read(&spec, OnError::Skip);
    let at = |file: usize, row: u64| {
        docs.iter()
            .find(|d| {
                &*d.location.path == shards[file].as_path()
                    && d.location.position == Position::Row(row)
            })
            .unwrap()
            .clone()
    };
    // Rows from every file, out of order, first and last rows of row groups among them.
    let wanted = [
        (2, 650),
        (0, 0),
        (0, 299),
        (1, 4),
        (0, 300),
        (0, 2499),
        (2, 10),
        (0, 1234),
    ];
    let corpus_rows: Vec<RowRef> = wanted
        .iter()
        .map(|&(file, row)| {
            let found = scan_row(&corpus, file, row);
            assert_eq!((found.file(), found.row()), (file, row));
            found
        })
        .collect();
    let fetched = corpus.fetch(&corpus_rows).unwrap();
    let expected: Vec<Document> = wanted.iter().map(|&(file, row)| at(file, row)).collect();
    assert_eq!(fetched, expected);
    assert_eq!(fetched[3].text, "the last words\u{A0}here");

    // A row of the damaged row group, and an empty text, are errors naming where they are.
    let damaged = corpus.fetch(&[scan_row(&corpus, 2, 250)]).unwrap_err();
    let message = with_causes(&damaged);
    let at = format!("{} row group 1 (rows 200–399)", shards[2].display());
    assert!(message.starts_with(&at), "{message}");
    let empty = corpus.fetch(&[scan_row(&corpus, 1, 3)]).unwrap_err();
    let message = with_causes(&empty);
    assert_contains(&message, &[&format!("{} row 3", shards[1].display()), "b3"]);
}

/// The [`RowRef`] the scan gives the row `row` of file `file`.
fn scan_row(corpus: &ParquetCorpus, file: usize, row: u64) -> RowRef {
    let mut found = None;
    corpus
        .scan(OnError::Skip, None, &mut |scanned| {
            if (scanned.row.file(), scanned.row.row()) == (file, row) {
                found = Some(scanned.row);
            }
        })
        .unwrap();
    found.expect("the scan hands out the row")
}

#[test]
fn a_corpus_with_an_input_that_is_not_parquet_is_not_a_parquet_corpus() {
    let dir = TempDir::new().unwrap();
    let shards = three_shards(dir.path());
    let jsonl = write_file(
        dir.path(),
        "more.jsonl",
        "{\"id\": \"j\", \"text\": \"t\"}\n",
    );
    assert!(spec_of(&[&shards[0], &jsonl]).parquet().unwrap().is_none());
    let glob = CorpusSpec::new([dir.path().join("*.parquet").display().to_string()]);
    let corpus = glob.parquet().unwrap().unwrap();
    assert_eq!(corpus.files().len(), 3);
}

/// Regression: row groups read at once through clones of one file handle shared its offset, so
/// a 1 M-row shard failed with "snappy: corrupt input" in its second row group.
#[test]
fn parquet_scan_reads_row_groups_at_once_without_mixing_their_bytes() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("many-groups.parquet");
    let batches: Vec<RecordBatch> = (0..8).map(|k| fineweb_batch(k * 5000, 5000)).collect();
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(1000))
        .set_compression(parquet::basic::Compression::SNAPPY)
        .build();
    let mut writer = ArrowWriter::try_new(
        fs::File::create(&path).unwrap(),
        batches[0].schema(),
        Some(props),
    )
    .unwrap();
    for batch in &batches {
        writer.write(batch).unwrap();
    }
    writer.close().unwrap();
    let spec = spec_of(&[&path]);
    let (docs, error, _) = read(&spec, OnError::Fail);
    assert!(error.is_none(), "{error:?}");
    for _ in 0..3 {
        let (rows, summary) = scan(&spec, OnError::Fail, true);
        summary.unwrap();
        assert_eq!(rows.len(), 40_000);
        assert!(
            rows.iter()
                .zip(&docs)
                .all(|(row, doc)| row.0 == doc.id && row.1 == Some(word_count(&doc.text)))
        );
    }
}

#[test]
fn parquet_scan_under_fail_names_the_first_repeat_in_corpus_order() {
    // Ids checked when the pass is over must still give the error a row-by-row check gives:
    // the earliest repeated row (here `b` in row 1 of the second file, not `a` in its row 3,
    // nor the third `b`),
    // named with the row where its id first appeared, across files and row groups, whether
    // texts are read or not.
    let dir = TempDir::new().unwrap();
    let texts = |n: usize| -> ArrayRef {
        Arc::new(StringArray::from(
            (0..n).map(|i| format!("text {i}")).collect::<Vec<_>>(),
        ))
    };
    let first = dir.path().join("000.parquet");
    let second = dir.path().join("001.parquet");
    write_parquet(
        &first,
        &[batch_of(string_ids(&["x", "a", "y", "b", "z"]), texts(5))],
        Some(2),
    );
    write_parquet(
        &second,
        &[batch_of(
            string_ids(&["w", "b", "v", "a", "b", "u"]),
            texts(6),
        )],
        Some(2),
    );
    let spec = spec_of(&[&first, &second]);
    let expected = fail_message(&spec);
    assert_contains(
        &expected,
        &["001.parquet", "row 1", "000.parquet", "row 3", "`b`"],
    );
    for measure in [true, false] {
        let (rows, error) = scan(&spec, OnError::Fail, measure);
        assert_eq!(
            with_causes(&error.unwrap_err()),
            expected,
            "measure {measure}"
        );
        assert_eq!(
            rows.len(),
            11,
            "every row is handed out before the end-of-pass check"
        );
    }
    let (rows, summary) = scan(&spec, OnError::Skip, false);
    assert_eq!(summary.unwrap().skipped.len(), 3);
    assert_eq!(rows.len(), 8);
}
