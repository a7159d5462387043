//! Errors of designs, custom-design configs and plans.

/// Everything that can stop a plan from being made; messages name the file and cell at fault
/// and list the valid choices.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("{context}no dimension `{dimension}`; the taxonomy has: {valid}")]
    UnknownDimension {
        /// `run.toml: design.cell[2]: `, or empty.
        context: String,
        dimension: String,
        valid: String,
    },
    #[error("{context}dimension `{dimension}` has no category `{category}`; valid: {valid}")]
    UnknownCategory {
        context: String,
        dimension: String,
        category: String,
        valid: String,
    },
    #[error("{context}no persona `{persona}`; the taxonomy has: {valid}")]
    UnknownPersona {
        context: String,
        persona: String,
        valid: String,
    },
    #[error("dimension `{dimension}` is named twice")]
    DuplicateDimension { dimension: String },
    #[error("rq3 crosses at least two dimensions; {found} given (the paper's: lv,qc)")]
    Factors { found: usize },
    #[error("rq2 needs a dimension with more than one level; this taxonomy has none")]
    NoHierarchicalDimension,
    #[error("the design has no items (all counts are 0)")]
    Empty,
    #[error("{source_name}: {message}")]
    Config {
        source_name: String,
        message: String,
    },
    #[error("no document of the corpus can be used: {detail}")]
    NoDocuments { detail: String },
    #[error(
        "multi-document categories ({cells}) need two different documents per item, but only one document can be used"
    )]
    OneDocumentForMultiDoc { cells: String },
}

/// `a, b, c` with each name in backticks.
pub(crate) fn list<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    names
        .into_iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
