//! Validation and parse errors, each naming the file, dimension and category at fault.

use std::fmt;

use crate::model::Granularity;

/// One problem found while reading or validating a taxonomy.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TaxonomyError {
    /// The TOML text could not be parsed or does not have the expected shape.
    #[error("{file}:{line}:{column}: invalid taxonomy TOML: {message}")]
    Toml {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    /// The DataMorgana JSON text could not be parsed or does not have the expected shape.
    #[error("{file}:{line}:{column}: invalid DataMorgana JSON: {message}")]
    Json {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    /// Two dimensions share a key.
    #[error("{file}: dimension `{dimension}` is defined more than once")]
    DuplicateDimension { file: String, dimension: String },
    /// A dimension has no categories at all.
    #[error("{file}: dimension `{dimension}` has no categories")]
    EmptyDimension { file: String, dimension: String },
    /// A category name occurs twice in one dimension (on the same or on different levels).
    #[error(
        "{file}: dimension `{dimension}`: category `{category}` is defined more than once (on the {first} and {second} levels)"
    )]
    DuplicateCategory {
        file: String,
        dimension: String,
        category: String,
        first: Granularity,
        second: Granularity,
    },
    /// A category name is not snake_case.
    #[error(
        "{file}: dimension `{dimension}`: category `{category}`: name must be snake_case (lowercase letters, digits and single underscores)"
    )]
    NotSnakeCase {
        file: String,
        dimension: String,
        category: String,
    },
    /// A category's description is empty or only whitespace.
    #[error("{file}: dimension `{dimension}`: category `{category}` has an empty description")]
    EmptyDescription {
        file: String,
        dimension: String,
        category: String,
    },
    /// A coarse category names a parent.
    #[error(
        "{file}: dimension `{dimension}`: coarse category `{category}` has parent `{parent}`; coarse categories have no parent"
    )]
    CoarseWithParent {
        file: String,
        dimension: String,
        category: String,
        parent: String,
    },
    /// A medium or fine category has no parent.
    #[error(
        "{file}: dimension `{dimension}`: {level} category `{category}` has no parent; it needs a parent on the {expected} level"
    )]
    Orphan {
        file: String,
        dimension: String,
        category: String,
        level: Granularity,
        expected: Granularity,
    },
    /// A category names a parent that does not exist in its dimension.
    #[error(
        "{file}: dimension `{dimension}`: {level} category `{category}` has unknown parent `{parent}`"
    )]
    UnknownParent {
        file: String,
        dimension: String,
        category: String,
        level: Granularity,
        parent: String,
    },
    /// A category's parent exists but is not on the level directly above.
    #[error(
        "{file}: dimension `{dimension}`: {level} category `{category}` has parent `{parent}` on the {parent_level} level; it must be on the {expected} level"
    )]
    WrongLevelParent {
        file: String,
        dimension: String,
        category: String,
        level: Granularity,
        parent: String,
        parent_level: Granularity,
        expected: Granularity,
    },
    /// A level exists but the level above it does not (e.g. fine without medium).
    #[error("{file}: dimension `{dimension}` has a {level} level but no {missing} level above it")]
    MissingLevel {
        file: String,
        dimension: String,
        level: Granularity,
        missing: Granularity,
    },
    /// A category on the level above has no child on a level below it.
    #[error(
        "{file}: dimension `{dimension}`: the {level} level does not subdivide {parent_level} category `{category}`: it has no children"
    )]
    NotSubdivided {
        file: String,
        dimension: String,
        category: String,
        level: Granularity,
        parent_level: Granularity,
    },
    /// Two user categorizations share a name, or two personas share a name within one.
    #[error("{file}: user categorization `{categorization}`: `{name}` is defined more than once")]
    DuplicatePersona {
        file: String,
        categorization: String,
        name: String,
    },
    /// A persona's description is empty or only whitespace.
    #[error(
        "{file}: user categorization `{categorization}`: persona `{persona}` has an empty description"
    )]
    EmptyPersonaDescription {
        file: String,
        categorization: String,
        persona: String,
    },
    /// A persona's probability is negative or not a number.
    #[error(
        "{file}: user categorization `{categorization}`: persona `{persona}` has invalid probability {probability}"
    )]
    InvalidProbability {
        file: String,
        categorization: String,
        persona: String,
        probability: f64,
    },
    /// The persona probabilities of one user categorization do not sum to 1.
    #[error(
        "{file}: user categorization `{categorization}`: persona probabilities sum to {sum}, not 1"
    )]
    ProbabilitySum {
        file: String,
        categorization: String,
        sum: f64,
    },
}

/// All problems found in one taxonomy; displayed one per line.
#[derive(Debug, Clone, PartialEq)]
pub struct TaxonomyErrors(pub Vec<TaxonomyError>);

impl fmt::Display for TaxonomyErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (idx, error) in self.0.iter().enumerate() {
            if idx > 0 {
                writeln!(f)?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for TaxonomyErrors {}

impl From<TaxonomyError> for TaxonomyErrors {
    fn from(error: TaxonomyError) -> Self {
        TaxonomyErrors(vec![error])
    }
}

/// A dimension key asked for (e.g. to draw) that the taxonomy does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no dimension `{key}`; {}", available_keys(.available))]
pub struct UnknownDimension {
    /// The key asked for.
    pub key: String,
    /// The keys the taxonomy has, in taxonomy order.
    pub available: Vec<String>,
}

fn available_keys(available: &[String]) -> String {
    if available.is_empty() {
        return "the taxonomy has no dimensions".to_string();
    }
    let keys: Vec<String> = available.iter().map(|key| format!("`{key}`")).collect();
    format!("the taxonomy has: {}", keys.join(", "))
}
