//! Reading and writing DataMorgana configuration JSON (`question_categorizations` / `user_categorizations`).

use serde::{Deserialize, Serialize};

use crate::error::{TaxonomyError, TaxonomyErrors};
use crate::model::{
    Category, Dimension, Granularity, Level, Persona, Taxonomy, UserCategorization,
};

#[derive(Debug, Serialize, Deserialize)]
struct DataMorganaConfig {
    #[serde(default)]
    question_categorizations: Vec<DataMorganaCategorization>,
    #[serde(default)]
    user_categorizations: Vec<DataMorganaCategorization>,
}

#[derive(Debug, Serialize, Deserialize)]
struct DataMorganaCategorization {
    categorization_name: String,
    categories: Vec<DataMorganaCategory>,
}

#[derive(Debug, Serialize, Deserialize)]
struct DataMorganaCategory {
    name: String,
    description: String,
    probability: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    is_multi_doc: Option<bool>,
    /// This project's extension (DataMorgana has no such key): the category's questions are
    /// not answered by their documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    is_unanswerable: Option<bool>,
}

impl Taxonomy {
    /// Reads a DataMorgana configuration: each question categorization becomes a coarse-only
    /// dimension whose key and name are the `categorization_name`, keeping each category's
    /// probability; each user categorization becomes a list of personas. Category names are kept
    /// verbatim (DataMorgana uses names like `open-ended`), so they are not required to be snake_case.
    pub fn from_datamorgana_json(
        text: &str,
        source_name: &str,
    ) -> Result<Taxonomy, TaxonomyErrors> {
        let config: DataMorganaConfig =
            serde_json::from_str(text).map_err(|error| TaxonomyError::Json {
                file: source_name.to_string(),
                line: error.line(),
                column: error.column(),
                message: error.to_string(),
            })?;
        let dimensions = config
            .question_categorizations
            .into_iter()
            .map(|categorization| Dimension {
                key: categorization.categorization_name.clone(),
                name: categorization.categorization_name,
                levels: vec![Level {
                    granularity: Granularity::Coarse,
                    categories: categorization
                        .categories
                        .into_iter()
                        .map(|category| Category {
                            name: category.name,
                            description: category.description,
                            parent: None,
                            is_multi_doc: category.is_multi_doc.unwrap_or(false),
                            is_unanswerable: category.is_unanswerable.unwrap_or(false),
                            probability: Some(category.probability),
                        })
                        .collect(),
                }],
            })
            .collect();
        let user_categorizations = config
            .user_categorizations
            .into_iter()
            .map(|categorization| UserCategorization {
                name: categorization.categorization_name,
                personas: categorization
                    .categories
                    .into_iter()
                    .map(|category| Persona {
                        name: category.name,
                        description: category.description,
                        probability: category.probability,
                    })
                    .collect(),
            })
            .collect();
        let taxonomy = Taxonomy {
            dimensions,
            user_categorizations,
        };
        taxonomy.validate_with(source_name, false)?;
        Ok(taxonomy)
    }

    /// Writes a DataMorgana configuration (pretty JSON). DataMorgana has no hierarchy, so one
    /// level is exported per dimension: the `granularity` level, or the coarse level for a
    /// dimension that lacks it (so coarse-only dimensions such as phrasing are always included).
    /// A category without a probability gets an equal share of its level; `is_multi_doc` is
    /// written only when true.
    pub fn to_datamorgana_json(&self, granularity: Granularity) -> String {
        let question_categorizations = self
            .dimensions
            .iter()
            .filter_map(|dimension| {
                let level = dimension
                    .level(granularity)
                    .or_else(|| dimension.level(Granularity::Coarse))?;
                let share = 1.0 / level.categories.len() as f64;
                Some(DataMorganaCategorization {
                    categorization_name: dimension.key.clone(),
                    categories: level
                        .categories
                        .iter()
                        .map(|category| DataMorganaCategory {
                            name: category.name.clone(),
                            description: category.description.clone(),
                            probability: category.probability.unwrap_or(share),
                            is_multi_doc: category.is_multi_doc.then_some(true),
                            is_unanswerable: category.is_unanswerable.then_some(true),
                        })
                        .collect(),
                })
            })
            .collect();
        let user_categorizations = self
            .user_categorizations
            .iter()
            .map(|categorization| DataMorganaCategorization {
                categorization_name: categorization.name.clone(),
                categories: categorization
                    .personas
                    .iter()
                    .map(|persona| DataMorganaCategory {
                        name: persona.name.clone(),
                        description: persona.description.clone(),
                        probability: persona.probability,
                        is_multi_doc: None,
                        is_unanswerable: None,
                    })
                    .collect(),
            })
            .collect();
        let config = DataMorganaConfig {
            question_categorizations,
            user_categorizations,
        };
        serde_json::to_string_pretty(&config).expect("a configuration has only strings and numbers")
    }
}
