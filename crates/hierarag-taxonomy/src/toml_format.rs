//! The TOML taxonomy file format: `[[dimension]]` tables with `coarse`/`medium`/`fine` arrays.

use serde::{Deserialize, Serialize};

use crate::error::{TaxonomyError, TaxonomyErrors};
use crate::model::{
    Category, Dimension, Granularity, Level, Persona, Taxonomy, UserCategorization,
};

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TaxonomyFile {
    #[serde(default, rename = "dimension", skip_serializing_if = "Vec::is_empty")]
    dimensions: Vec<DimensionFile>,
    #[serde(
        default,
        rename = "user_categorization",
        skip_serializing_if = "Vec::is_empty"
    )]
    user_categorizations: Vec<UserCategorizationFile>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct DimensionFile {
    key: String,
    name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    coarse: Vec<CategoryFile>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    medium: Vec<CategoryFile>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    fine: Vec<CategoryFile>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CategoryFile {
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    parent: Option<String>,
    description: String,
    #[serde(default, skip_serializing_if = "is_false")]
    is_multi_doc: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    is_unanswerable: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    probability: Option<f64>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct UserCategorizationFile {
    name: String,
    #[serde(default, rename = "persona")]
    personas: Vec<PersonaFile>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PersonaFile {
    name: String,
    probability: f64,
    description: String,
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// 1-based line and column of a byte offset in `text`.
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .map_or(0, |rest| rest.chars().count())
        + 1;
    (line, column)
}

impl Taxonomy {
    /// Parses and validates a TOML taxonomy; `source_name` (usually the file path) is used in
    /// every error message. Returns every problem found, not just the first.
    pub fn from_toml_str(text: &str, source_name: &str) -> Result<Taxonomy, TaxonomyErrors> {
        let file: TaxonomyFile = toml::from_str(text).map_err(|error| {
            let (line, column) = error
                .span()
                .map_or((1, 1), |span| line_column(text, span.start));
            TaxonomyError::Toml {
                file: source_name.to_string(),
                line,
                column,
                message: error.message().trim().to_string(),
            }
        })?;
        let taxonomy = Taxonomy::from(file);
        taxonomy.validate(source_name)?;
        Ok(taxonomy)
    }

    /// Writes the taxonomy in the TOML format read by [`Taxonomy::from_toml_str`].
    pub fn to_toml_string(&self) -> String {
        let file = TaxonomyFile::from(self);
        toml::to_string(&file).expect("a taxonomy has only strings, numbers and booleans")
    }
}

impl From<TaxonomyFile> for Taxonomy {
    fn from(file: TaxonomyFile) -> Taxonomy {
        let dimensions = file
            .dimensions
            .into_iter()
            .map(|dimension| {
                let levels = [
                    (Granularity::Coarse, dimension.coarse),
                    (Granularity::Medium, dimension.medium),
                    (Granularity::Fine, dimension.fine),
                ]
                .into_iter()
                .filter(|(_, categories)| !categories.is_empty())
                .map(|(granularity, categories)| Level {
                    granularity,
                    categories: categories.into_iter().map(Category::from).collect(),
                })
                .collect();
                Dimension {
                    key: dimension.key,
                    name: dimension.name,
                    levels,
                }
            })
            .collect();
        let user_categorizations = file
            .user_categorizations
            .into_iter()
            .map(|categorization| UserCategorization {
                name: categorization.name,
                personas: categorization
                    .personas
                    .into_iter()
                    .map(|persona| Persona {
                        name: persona.name,
                        description: persona.description,
                        probability: persona.probability,
                    })
                    .collect(),
            })
            .collect();
        Taxonomy {
            dimensions,
            user_categorizations,
        }
    }
}

impl From<CategoryFile> for Category {
    fn from(category: CategoryFile) -> Category {
        Category {
            name: category.name,
            description: category.description,
            parent: category.parent,
            is_multi_doc: category.is_multi_doc,
            is_unanswerable: category.is_unanswerable,
            probability: category.probability,
        }
    }
}

impl From<&Category> for CategoryFile {
    fn from(category: &Category) -> CategoryFile {
        CategoryFile {
            name: category.name.clone(),
            parent: category.parent.clone(),
            description: category.description.clone(),
            is_multi_doc: category.is_multi_doc,
            is_unanswerable: category.is_unanswerable,
            probability: category.probability,
        }
    }
}

impl From<&Taxonomy> for TaxonomyFile {
    fn from(taxonomy: &Taxonomy) -> TaxonomyFile {
        let dimensions = taxonomy
            .dimensions
            .iter()
            .map(|dimension| {
                let categories_at = |granularity| {
                    dimension
                        .levels
                        .iter()
                        .filter(|level| level.granularity == granularity)
                        .flat_map(|level| level.categories.iter().map(CategoryFile::from))
                        .collect::<Vec<_>>()
                };
                DimensionFile {
                    key: dimension.key.clone(),
                    name: dimension.name.clone(),
                    coarse: categories_at(Granularity::Coarse),
                    medium: categories_at(Granularity::Medium),
                    fine: categories_at(Granularity::Fine),
                }
            })
            .collect();
        let user_categorizations = taxonomy
            .user_categorizations
            .iter()
            .map(|categorization| UserCategorizationFile {
                name: categorization.name.clone(),
                personas: categorization
                    .personas
                    .iter()
                    .map(|persona| PersonaFile {
                        name: persona.name.clone(),
                        probability: persona.probability,
                        description: persona.description.clone(),
                    })
                    .collect(),
            })
            .collect();
        TaxonomyFile {
            dimensions,
            user_categorizations,
        }
    }
}
