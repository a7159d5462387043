//! Question taxonomies for HieraRAG: dimensions (e.g. Question Complexity), each with up to three
//! levels (`coarse`, `medium`, `fine`) of categories linked to their parents, plus user
//! categorizations (personas) drawn by probability.
//!
//! Main types: [`Taxonomy`], [`Dimension`], [`Level`], [`Category`], [`Granularity`],
//! [`UserCategorization`], [`Persona`], and [`TaxonomyErrors`] (every problem found, one per
//! line, each naming the file, dimension and category). Taxonomies are read from and written to
//! TOML ([`Taxonomy::from_toml_str`], [`Taxonomy::to_toml_string`]) and DataMorgana configuration
//! JSON ([`Taxonomy::from_datamorgana_json`], [`Taxonomy::to_datamorgana_json`]). The paper's
//! taxonomy is built in ([`Taxonomy::default_taxonomy`], [`DEFAULT_TAXONOMY_TOML`]).
//! [`Taxonomy::to_svg`] draws the hierarchy of chosen dimensions as an SVG figure
//! ([`SvgOptions`]; an unknown key is an [`UnknownDimension`]), escaping its text with
//! [`SvgText`], which the report's charts use too.
//!
//! This crate is pure: it does no I/O; callers read files and pass their text and name.
//!
//! ```
//! use hierarag_taxonomy::{Granularity, Taxonomy};
//!
//! let text = r#"
//! [[dimension]]
//! key = "qc"
//! name = "Question Complexity"
//! [[dimension.coarse]]
//! name = "simple"
//! description = "Answered by one stated fact."
//! [[dimension.medium]]
//! name = "single_fact"
//! parent = "simple"
//! description = "Answered by exactly one fact in one sentence."
//! "#;
//! let taxonomy = Taxonomy::from_toml_str(text, "my.toml").unwrap();
//! let (level, _) = taxonomy.category("qc", "single_fact").unwrap();
//! assert_eq!(level, Granularity::Medium);
//! assert_eq!(taxonomy.parent_of("qc", "single_fact").unwrap().1.name, "simple");
//!
//! let broken = text.replace("parent = \"simple\"", "parent = \"simpel\"");
//! let errors = Taxonomy::from_toml_str(&broken, "my.toml").unwrap_err();
//! assert!(errors.to_string().contains("my.toml: dimension `qc`: medium category `single_fact` has unknown parent `simpel`"));
//! ```

mod datamorgana;
mod default;
mod error;
mod figure;
mod model;
mod svg_text;
mod toml_format;
mod validate;

pub use default::DEFAULT_TAXONOMY_TOML;
pub use error::{TaxonomyError, TaxonomyErrors, UnknownDimension};
pub use figure::SvgOptions;
pub use model::{
    Category, Dimension, Granularity, Level, Persona, Split, Taxonomy, UserCategorization,
};
pub use svg_text::SvgText;
pub use validate::is_snake_case;
