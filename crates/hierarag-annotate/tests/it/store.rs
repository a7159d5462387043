//! The annotation store: create, open, upsert, validation, and concurrent writers.

use std::path::Path;

use crate::support::{item, rating};
use hierarag_annotate::{Item, Rating, Store, StoreError};

fn items() -> Vec<Item> {
    vec![
        item("q1", 1, "a1", true),
        item("q0", 0, "b2", false),
        item("q2", 2, "c1", true),
    ]
}

fn create(dir: &Path) -> Store {
    Store::create(
        &dir.join("annotations.sqlite"),
        &items(),
        &[("seed", "7".to_string())],
    )
    .unwrap()
}

/// A change that makes a rating invalid.
type Change = fn(&mut Rating);

fn invalid_field(error: StoreError) -> String {
    match error {
        StoreError::Invalid { field, .. } => field,
        other => panic!("expected Invalid, got {other:?}"),
    }
}

#[test]
fn items_and_meta_come_back_as_written_in_position_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let mut expected = items();
    expected.sort_by_key(|item| item.position);
    assert_eq!(store.items().unwrap(), expected);
    assert_eq!(store.item("q2").unwrap(), Some(expected[2].clone()));
    assert_eq!(store.item("nope").unwrap(), None);
    assert_eq!(
        store.meta().unwrap(),
        [("seed".to_string(), "7".to_string())]
    );
    drop(store);
    // Reopened: the same content; WAL mode and schema version were set.
    let store = Store::open(&dir.path().join("annotations.sqlite")).unwrap();
    assert_eq!(store.items().unwrap(), expected);
    let connection = rusqlite::Connection::open(dir.path().join("annotations.sqlite")).unwrap();
    let mode: String = connection
        .pragma_query_value(None, "journal_mode", |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let version: i64 = connection
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .unwrap();
    assert_eq!(version, 2);
    // A store of the first schema (no answer items) is brought up to date when opened.
    connection
        .execute_batch("ALTER TABLE items DROP COLUMN answer; PRAGMA user_version = 1;")
        .unwrap();
    drop(connection);
    drop(store);
    let store = Store::open(&dir.path().join("annotations.sqlite")).unwrap();
    assert_eq!(store.items().unwrap(), expected);
}

#[test]
fn create_refuses_an_existing_file_and_open_a_missing_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("annotations.sqlite");
    let error = Store::open(&path).unwrap_err();
    assert!(matches!(error, StoreError::Missing { .. }));
    assert!(
        error.to_string().contains("hierarag annotate sample"),
        "{error}"
    );
    assert!(error.to_string().contains("annotations.sqlite"), "{error}");
    drop(create(dir.path()));
    let error = Store::create(&path, &items(), &[]).unwrap_err();
    assert!(matches!(error, StoreError::Exists { .. }), "{error:?}");
}

#[test]
fn a_failed_create_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("annotations.sqlite");
    let mut twice = items();
    twice.push(item("q1", 9, "a2", false));
    let error = Store::create(&path, &twice, &[]).unwrap_err();
    assert_eq!(invalid_field(error), "item_id");
    assert!(!path.exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn open_rejects_a_file_that_is_not_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("annotations.sqlite");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE TABLE t (x)")
        .unwrap();
    let error = Store::open(&path).unwrap_err();
    assert!(matches!(error, StoreError::Corrupt { .. }), "{error:?}");
    assert!(error.to_string().contains("schema version 0"), "{error}");
}

#[test]
fn annotators_get_stable_hex_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let alice = store.add_annotator("alice").unwrap();
    let bob = store.add_annotator("bob").unwrap();
    assert_eq!(alice.token.len(), 32);
    assert!(alice.token.chars().all(|c| c.is_ascii_hexdigit()));
    assert_ne!(alice.token, bob.token);
    assert_eq!(store.add_annotator("alice").unwrap(), alice);
    assert_eq!(store.annotators().unwrap(), [alice.clone(), bob]);
    assert_eq!(store.annotator_by_token(&alice.token).unwrap(), Some(alice));
    assert_eq!(store.annotator_by_token("0123").unwrap(), None);
    for bad in ["", "  ", " alice", "a\nb"] {
        assert_eq!(
            invalid_field(store.add_annotator(bad).unwrap_err()),
            "annotator"
        );
    }
}

#[test]
fn ratings_are_upserted_and_ordered_by_position_then_annotator() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    store.add_annotator("bob").unwrap();
    store.add_annotator("alice").unwrap();
    let mut first = rating("q2", "bob");
    first.correctness = Some(1);
    first.note = Some("unsure".into());
    store.save_rating(&first).unwrap();
    let mut second = rating("q1", "bob");
    second.category_pick = Some("a2".into());
    store.save_rating(&second).unwrap();
    let mut third = rating("q1", "alice");
    third.hallucination = Some(2);
    store.save_rating(&third).unwrap();
    // The same (item, annotator) again replaces the whole rating.
    let mut replaced = rating("q2", "bob");
    replaced.correctness = Some(3);
    replaced.answerability = Some(0);
    replaced.updated_unix_s = 1_800_000_000;
    store.save_rating(&replaced).unwrap();

    let all = store.ratings().unwrap();
    assert_eq!(all, [third.clone(), second.clone(), replaced.clone()]);
    assert_eq!(store.ratings_of("bob").unwrap(), [second, replaced]);
    assert_eq!(store.ratings_of("carol").unwrap(), Vec::<Rating>::new());
}

#[test]
fn empty_picks_and_blank_notes_count_as_none() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    store.add_annotator("alice").unwrap();
    let mut blank = rating("q0", "alice");
    blank.category_pick = Some(String::new());
    blank.note = Some("  ".into());
    store.save_rating(&blank).unwrap();
    let saved = &store.ratings().unwrap()[0];
    assert_eq!(saved.category_pick, None);
    assert_eq!(saved.note, None);
}

#[test]
fn invalid_ratings_name_the_field_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    store.add_annotator("alice").unwrap();
    let cases: [(&str, Change); 7] = [
        ("correctness", |r| r.correctness = Some(4)),
        ("hallucination", |r| r.hallucination = Some(3)),
        ("answerability", |r| r.answerability = Some(9)),
        ("category_pick", |r| r.category_pick = Some("z9".into())),
        // q0 has no category task: no pick is allowed.
        ("category_pick", |r| {
            r.item_id = "q0".into();
            r.category_pick = Some("b2".into());
        }),
        ("item_id", |r| r.item_id = "q9".into()),
        ("annotator", |r| r.annotator = "mallory".into()),
    ];
    for (field, change) in cases {
        let mut bad = rating("q1", "alice");
        change(&mut bad);
        let error = store.save_rating(&bad).unwrap_err();
        assert!(error.to_string().starts_with(field), "{error}");
        assert_eq!(invalid_field(error), field);
    }
    assert!(store.ratings().unwrap().is_empty());
}

#[test]
fn save_ratings_is_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = create(dir.path());
    store.add_annotator("alice").unwrap();
    let mut good = rating("q1", "alice");
    good.correctness = Some(2);
    let mut bad = rating("q2", "alice");
    bad.category_pick = Some("nope".into());
    let error = store.save_ratings(&[good.clone(), bad]).unwrap_err();
    assert_eq!(invalid_field(error), "category_pick");
    assert!(store.ratings().unwrap().is_empty());
    let unknown = rating("q2", "nobody");
    let error = store.save_ratings(&[good.clone(), unknown]).unwrap_err();
    assert_eq!(invalid_field(error), "annotator");
    assert!(store.ratings().unwrap().is_empty());
    store.save_ratings(&[good.clone()]).unwrap();
    assert_eq!(store.ratings().unwrap(), [good]);
}

#[test]
fn the_store_can_move_between_threads() {
    fn assert_send<T: Send>() {}
    assert_send::<Store>();
}

/// Four threads, each on its own connection, upsert 100 ratings each (every rating twice,
/// the second time with its final value): all 400 rows end up there with their final values.
#[test]
fn concurrent_writers_on_their_own_connections_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("annotations.sqlite");
    let many: Vec<Item> = (0..100)
        .map(|i| item(&format!("q{i:03}"), i, "a1", true))
        .collect();
    let store = Store::create(&path, &many, &[]).unwrap();
    let writers = ["w0", "w1", "w2", "w3"];
    for name in writers {
        store.add_annotator(name).unwrap();
    }
    drop(store);
    std::thread::scope(|scope| {
        for (w, name) in writers.iter().enumerate() {
            let path = path.clone();
            scope.spawn(move || {
                let store = Store::open(&path).unwrap();
                for round in 0..2 {
                    for i in 0..100u8 {
                        let mut r = rating(&format!("q{i:03}"), name);
                        r.correctness = Some(if round == 0 { 0 } else { (i + w as u8) % 4 });
                        r.note = Some(format!("{name} round {round}"));
                        store.save_rating(&r).unwrap();
                    }
                }
            });
        }
    });
    let store = Store::open(&path).unwrap();
    let all = store.ratings().unwrap();
    assert_eq!(all.len(), 400);
    for (w, name) in writers.iter().enumerate() {
        let theirs = store.ratings_of(name).unwrap();
        assert_eq!(theirs.len(), 100);
        for (i, r) in theirs.iter().enumerate() {
            assert_eq!(r.correctness, Some((i as u8 + w as u8) % 4));
            assert_eq!(r.note.as_deref(), Some(format!("{name} round 1").as_str()));
        }
    }
}
