//! The integration tests of `hierarag-items`, one binary.

mod core;
mod irt_oracle;
mod items;

use std::collections::HashMap;

use hierarag_items::SystemScores;
use hierarag_records::CategoryRef;
use hierarag_taxonomy::Granularity;

/// A category of `dimension` at `level`.
fn category(dimension: &str, level: Granularity, name: &str) -> CategoryRef {
    CategoryRef {
        dimension: dimension.into(),
        level,
        category: name.into(),
    }
}

/// Systems `s0`, `s1`, … with the scores of each row, by question id.
fn systems(rows: Vec<HashMap<String, f64>>) -> Vec<SystemScores> {
    rows.into_iter()
        .enumerate()
        .map(|(s, scores)| SystemScores {
            name: format!("s{s}"),
            scores,
        })
        .collect()
}
