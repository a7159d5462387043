//! The built-in default taxonomy of the HieraRAG paper, shipped as `default.toml`.

use crate::model::Taxonomy;

/// The default taxonomy as TOML text, for `taxonomy init` to print and users to edit.
pub const DEFAULT_TAXONOMY_TOML: &str = include_str!("default.toml");

impl Taxonomy {
    /// The paper's taxonomy: qc, at and lv with 2/4/8 categories per level, coarse-only ph with 4,
    /// and user expertise (novice, expert) at 50/50.
    pub fn default_taxonomy() -> Taxonomy {
        Taxonomy::from_toml_str(DEFAULT_TAXONOMY_TOML, "<default taxonomy>")
            .expect("the built-in default taxonomy is valid (checked by a test)")
    }
}
