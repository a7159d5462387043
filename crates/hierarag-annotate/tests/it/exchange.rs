//! CSV export and import: a round trip, and import errors that name the row and column.

use crate::support::{item, rating};
use hierarag_annotate::{
    CSV_COLUMNS, ImportError, Item, RowError, Store, import_csv, read_csv, write_csv,
};

fn items() -> Vec<Item> {
    vec![
        item("q0", 0, "a1", true),
        item("q1", 1, "b2", false),
        item("q2", 2, "c1", true),
    ]
}

fn store(dir: &std::path::Path) -> Store {
    let store = Store::create(&dir.join("annotations.sqlite"), &items(), &[]).unwrap();
    store.add_annotator("alice").unwrap();
    store.add_annotator("bob").unwrap();
    store
}

fn export(store: &Store) -> String {
    let annotators: Vec<String> = store
        .annotators()
        .unwrap()
        .into_iter()
        .map(|a| a.name)
        .collect();
    let mut bytes = Vec::new();
    write_csv(
        &mut bytes,
        &store.items().unwrap(),
        &annotators,
        &store.ratings().unwrap(),
    )
    .unwrap();
    String::from_utf8(bytes).unwrap()
}

fn row_errors(result: Result<impl std::fmt::Debug, ImportError>) -> Vec<String> {
    match result {
        Err(ImportError::Rows(errors)) => errors.iter().map(RowError::to_string).collect(),
        other => panic!("expected row errors, got {other:?}"),
    }
}

#[test]
fn export_has_a_row_per_item_and_annotator() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let mut r = rating("q2", "bob");
    r.correctness = Some(2);
    r.category_pick = Some("c2".into());
    r.note = Some("close, \"but\" no".into());
    store.save_rating(&r).unwrap();
    let text = export(&store);
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    assert_eq!(reader.headers().unwrap(), CSV_COLUMNS.as_slice());
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 6);
    let keys: Vec<(&str, &str)> = rows.iter().map(|r| (&r[0], &r[1])).collect();
    assert_eq!(
        keys,
        [
            ("q0", "alice"),
            ("q0", "bob"),
            ("q1", "alice"),
            ("q1", "bob"),
            ("q2", "alice"),
            ("q2", "bob")
        ]
    );
    assert_eq!(&rows[0][2], "");
    assert_eq!(&rows[5][2], "2");
    assert_eq!(&rows[5][5], "c2");
    assert_eq!(&rows[5][6], "close, \"but\" no");
    assert!(rows[5][7].contains("a comma\nand a line break"));
    assert_eq!(&rows[5][10], "a1 | a2 | b1 | b2 | c1 | c2 | d1 | d2");
    assert_eq!(&rows[2][10], "");
    // A benchmark item has no system answer.
    assert_eq!(&rows[5][9], "");
}

#[test]
fn export_then_import_into_a_fresh_store_gives_the_same_ratings() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let mut a = rating("q0", "alice");
    a.correctness = Some(3);
    a.hallucination = Some(0);
    a.answerability = Some(2);
    a.category_pick = Some("a2".into());
    a.note = Some("multi\nline, note".into());
    let mut b = rating("q1", "bob");
    b.hallucination = Some(2);
    let mut c = rating("q2", "bob");
    c.category_pick = Some("c1".into());
    for r in [&a, &b, &c] {
        store.save_rating(r).unwrap();
    }
    let text = export(&store);

    let other = tempfile::tempdir().unwrap();
    let mut fresh = Store::create(&other.path().join("annotations.sqlite"), &items(), &[]).unwrap();
    let summary = import_csv(&mut fresh, text.as_bytes(), true, 1_700_000_000).unwrap();
    assert_eq!(summary.imported, 3);
    assert_eq!(summary.empty_rows, 3);
    assert_eq!(summary.new_annotators, ["alice", "bob"]);
    assert_eq!(fresh.ratings().unwrap(), store.ratings().unwrap());
    // Importing the same file again changes nothing.
    import_csv(&mut fresh, text.as_bytes(), false, 1_700_000_000).unwrap();
    assert_eq!(fresh.ratings().unwrap(), store.ratings().unwrap());
    assert_eq!(export(&fresh), text);
}

#[test]
fn import_errors_name_row_and_column_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store(dir.path());
    let text = "\
item_id,annotator,correctness,hallucination,answerability,category_pick,note
q0,alice,3,0,2,a1,fine
q9,alice,1,,,,
q0,carol,1,,,,
q1,bob,4,x,2.5,,
q0,bob,,,,z9,
q1,alice,,,,a1,
q0,alice,2,,,,again
,,,,,,
";
    let errors = row_errors(import_csv(&mut store, text.as_bytes(), false, 0));
    assert_eq!(
        errors,
        [
            "row 3, column item_id: no item `q9` in the sample",
            "row 4, column annotator: unknown annotator `carol` (add them with `hierarag \
             annotate annotators --add carol`, or pass --add-annotators)",
            "row 5, column correctness: 4 is out of range 0–3",
            "row 5, column hallucination: `x` is not an integer (expected 0–2)",
            "row 5, column answerability: `2.5` is not an integer (expected 0–3)",
            "row 6, column category_pick: `z9` is not one of the choices of item `q0` (a1, a2, \
             b1, b2, c1, c2, d1, d2)",
            "row 7, column category_pick: item `q1` has no category task, so no category can \
             be picked",
            "row 8, column item_id: item `q0` and annotator `alice` repeat row 2",
        ]
    );
    assert!(store.ratings().unwrap().is_empty());
    assert_eq!(store.annotators().unwrap().len(), 2);
}

#[test]
fn missing_columns_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let errors = row_errors(read_csv(
        "item_id,annotator,correctness,note\nq0,alice,1,\n".as_bytes(),
        &store.items().unwrap(),
        &["alice".into()],
        false,
        0,
    ));
    assert_eq!(
        errors,
        [
            "row 1, column hallucination: missing column in the header",
            "row 1, column answerability: missing column in the header",
            "row 1, column category_pick: missing column in the header",
        ]
    );
}

#[test]
fn columns_may_come_in_any_order_and_extra_ones_are_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store(dir.path());
    let text = "\
extra,note,category_pick,answerability,hallucination,correctness,annotator,item_id
whatever,ok,c2,1,1,1,bob,q2
";
    import_csv(&mut store, text.as_bytes(), false, 5).unwrap();
    let mut expected = rating("q2", "bob");
    expected.correctness = Some(1);
    expected.hallucination = Some(1);
    expected.answerability = Some(1);
    expected.category_pick = Some("c2".into());
    expected.note = Some("ok".into());
    expected.updated_unix_s = 5;
    assert_eq!(store.ratings().unwrap(), [expected]);
}

#[test]
fn a_row_with_too_few_cells_is_an_error_naming_the_row() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store(dir.path());
    let text = "item_id,annotator,correctness,hallucination,answerability,category_pick,note\n\
                q0,alice,3,0,2,a1,fine\nq1,bob,3\n";
    let errors = row_errors(import_csv(&mut store, text.as_bytes(), false, 0));
    assert_eq!(
        errors,
        ["row 3, column (row): 3 cell(s), but the header has 7"]
    );
    assert!(store.ratings().unwrap().is_empty());
}

/// Texts a spreadsheet would run as formulas (OWASP's starts, a full-width one) and a text that
/// really begins with a quote.
const FORMULAS: [&str; 7] = [
    "=HYPERLINK(\"http://x\",\"click\")",
    "+1",
    "-2",
    "@SUM(A1)",
    "\tindented",
    "'quoted",
    "\u{FF1D}1+1",
];

#[test]
fn formula_injection_cells_are_neutralised_on_export_and_restored_on_import() {
    // Item ids, annotators, questions, references, choices, picks and notes all begin like a
    // formula.
    let ids = [
        "=q0",
        "+q1",
        "-q2",
        "@q3",
        "'q4",
        "\u{FF20}q5",
        "\u{FF0D}q6",
    ];
    let rotated = |n: usize| -> Vec<String> {
        (0..FORMULAS.len())
            .map(|k| FORMULAS[(n + k) % FORMULAS.len()].to_string())
            .collect()
    };
    let items: Vec<Item> = (0..FORMULAS.len())
        .map(|n| {
            let mut item = item(ids[n], n as u32, "a1", true);
            item.question = FORMULAS[n].to_string();
            item.reference = FORMULAS[(n + 1) % FORMULAS.len()].to_string();
            item.choices = rotated(n);
            item
        })
        .collect();
    let annotators = ["=alice", "@bob"];
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::create(&dir.path().join("annotations.sqlite"), &items, &[]).unwrap();
    let mut ratings = Vec::new();
    for (n, item) in items.iter().enumerate() {
        for (a, annotator) in annotators.iter().enumerate() {
            let mut r = rating(&item.item_id, annotator);
            r.correctness = Some(a as u8);
            // Picks, like ids and names, are trimmed on import: not the tab.
            let pick = match (n + 2 + a) % FORMULAS.len() {
                4 => 5,
                k => k,
            };
            r.category_pick = Some(FORMULAS[pick].to_string());
            r.note = Some(FORMULAS[(n + 3 + a) % FORMULAS.len()].to_string());
            ratings.push(r);
        }
    }
    for annotator in annotators {
        store.add_annotator(annotator).unwrap();
    }
    store.save_ratings(&ratings).unwrap();
    let text = export(&store);

    // Every text cell is the value with one `'` in front; the CSV quoting still applies.
    assert!(
        text.contains("\"'=HYPERLINK(\"\"http://x\"\",\"\"click\"\")\""),
        "{text}"
    );
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), items.len() * annotators.len());
    let mut sorted_annotators = annotators;
    sorted_annotators.sort_unstable();
    for (row, (item, annotator)) in rows.iter().zip(
        items
            .iter()
            .flat_map(|item| sorted_annotators.iter().map(move |a| (item, *a))),
    ) {
        let r = ratings
            .iter()
            .find(|r| r.item_id == item.item_id && r.annotator == annotator)
            .unwrap();
        let expected = [
            (0, item.item_id.clone()),
            (1, annotator.to_string()),
            (5, r.category_pick.clone().unwrap()),
            (6, r.note.clone().unwrap()),
            (7, item.question.clone()),
            (8, item.reference.clone()),
            (10, item.choices.join(" | ")),
        ];
        for (column, value) in expected {
            assert_eq!(row[column], format!("'{value}"), "{}", CSV_COLUMNS[column]);
        }
        // The rating numbers are written as numbers.
        assert_eq!(&row[2], r.correctness.unwrap().to_string());
    }

    // Import gives back every value byte for byte, and exports the same file again.
    let other = tempfile::tempdir().unwrap();
    let mut fresh = Store::create(&other.path().join("annotations.sqlite"), &items, &[]).unwrap();
    let summary = import_csv(&mut fresh, text.as_bytes(), true, 1_700_000_000).unwrap();
    assert_eq!(summary.imported, ratings.len());
    assert_eq!(summary.new_annotators, sorted_annotators);
    assert_eq!(fresh.ratings().unwrap(), store.ratings().unwrap());
    assert_eq!(export(&fresh), text);
}

#[test]
fn formula_injection_in_an_imported_file_is_read_as_text_or_rejected_naming_row_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store(dir.path());
    // A quote the export would not have added stays; one it would have added goes; a formula
    // in a rating column is not a number.
    let text = "\
item_id,annotator,correctness,hallucination,answerability,category_pick,note
q0,alice,3,,,,'hello
q0,bob,3,,,,\"=HYPERLINK(\"\"http://x\"\")\"
q1,alice,3,,,,'-2
q1,bob,=1+1,'-1,'2,,
";
    let errors = row_errors(import_csv(&mut store, text.as_bytes(), false, 0));
    assert_eq!(
        errors,
        [
            "row 5, column correctness: `=1+1` is not an integer (expected 0–3)",
            "row 5, column hallucination: -1 is out of range 0–2",
            "row 5, column answerability: `'2` is not an integer (expected 0–3)",
        ]
    );
    assert!(store.ratings().unwrap().is_empty());
    let good: String = text
        .lines()
        .take(4)
        .map(|line| format!("{line}\n"))
        .collect();
    import_csv(&mut store, good.as_bytes(), false, 0).unwrap();
    let notes: Vec<Option<String>> = store
        .ratings()
        .unwrap()
        .into_iter()
        .map(|r| r.note)
        .collect();
    assert_eq!(
        notes,
        [
            Some("'hello".to_string()),
            Some("=HYPERLINK(\"http://x\")".to_string()),
            Some("-2".to_string()),
        ]
    );
}
