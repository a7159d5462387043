//! Fixtures shared by the tests: items of a small fine level, and ratings.

use hierarag_annotate::{Item, Rating};
use hierarag_taxonomy::Granularity;

/// The eight fine categories of the fixture, in pairs under the medium parents A–D.
pub const FINE: [(&str, &str); 8] = [
    ("a1", "A"),
    ("a2", "A"),
    ("b1", "B"),
    ("b2", "B"),
    ("c1", "C"),
    ("c2", "C"),
    ("d1", "D"),
    ("d2", "D"),
];

/// An item of category `category` on the fine level of `qc`, with the category task when
/// `task` (all eight fine categories as choices).
pub fn item(id: &str, position: u32, category: &str, task: bool) -> Item {
    let parent = FINE
        .iter()
        .find(|(name, _)| *name == category)
        .map(|(_, parent)| parent.to_string());
    Item {
        item_id: id.into(),
        position,
        set: "qc/fine".into(),
        dimension: "qc".into(),
        level: Granularity::Fine,
        category: category.into(),
        parent,
        category_task: task,
        question: format!("Question {id}, with \"quotes\", a comma\nand a line break?"),
        reference: format!("Reference {id}."),
        documents: vec![(format!("doc-{id}"), format!("Text of {id}."))],
        choices: if task {
            FINE.iter().map(|(name, _)| name.to_string()).collect()
        } else {
            Vec::new()
        },
        answer: None,
    }
}

pub fn rating(item_id: &str, annotator: &str) -> Rating {
    Rating {
        item_id: item_id.into(),
        annotator: annotator.into(),
        correctness: None,
        hallucination: None,
        answerability: None,
        category_pick: None,
        note: None,
        updated_unix_s: 1_700_000_000,
    }
}
