//! The records of the tagger: `tags.jsonl`.

use std::collections::BTreeMap;

use hierarag_taxonomy::Granularity;
use serde::{Deserialize, Serialize};

use crate::benchmark::ModelInfo;

/// One line of `tags.jsonl`: a question's labels on every tagged dimension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TagRecord {
    /// The benchmark question's id.
    pub id: String,
    /// Per dimension key.
    pub tags: BTreeMap<String, DimensionTag>,
    pub tagger: ModelInfo,
}

/// A question's labels on one dimension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DimensionTag {
    /// The category at each level of the dimension: the chosen finest one and its parents.
    pub categories: BTreeMap<Granularity, String>,
    /// With more than one vote: per level, the share of votes whose category at that level is
    /// the chosen one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<BTreeMap<Granularity, f64>>,
    /// With more than one vote: each vote's finest category, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub votes: Option<Vec<String>>,
}
