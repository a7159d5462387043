//! Structural checks on a taxonomy; every problem is collected, not just the first.

use std::collections::{HashMap, HashSet};

use crate::error::{TaxonomyError, TaxonomyErrors};
use crate::model::{Dimension, Granularity, Taxonomy};

/// How far persona probabilities may stray from summing to 1 (floating-point slack).
const PROBABILITY_TOLERANCE: f64 = 1e-6;

/// Whether `name` is lowercase snake_case: `[a-z][a-z0-9]*(_[a-z0-9]+)*`.
pub fn is_snake_case(name: &str) -> bool {
    let mut chars = name.chars();
    let starts_with_letter = chars.next().is_some_and(|c| c.is_ascii_lowercase());
    starts_with_letter
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !name.ends_with('_')
        && !name.contains("__")
}

impl Taxonomy {
    /// Checks the taxonomy's structure; `source_name` names the file in each message.
    pub fn validate(&self, source_name: &str) -> Result<(), TaxonomyErrors> {
        self.validate_with(source_name, true)
    }

    /// As [`Taxonomy::validate`]; `snake_case_names` is off for DataMorgana configurations,
    /// whose category names (e.g. `open-ended`) are kept verbatim so they can be written back.
    pub(crate) fn validate_with(
        &self,
        source_name: &str,
        snake_case_names: bool,
    ) -> Result<(), TaxonomyErrors> {
        let mut errors = Vec::new();
        let mut keys = HashSet::new();
        for dimension in &self.dimensions {
            if !keys.insert(dimension.key.as_str()) {
                errors.push(TaxonomyError::DuplicateDimension {
                    file: source_name.to_string(),
                    dimension: dimension.key.clone(),
                });
            }
            validate_dimension(dimension, source_name, snake_case_names, &mut errors);
        }
        self.validate_personas(source_name, &mut errors);
        if errors.is_empty() {
            Ok(())
        } else {
            Err(TaxonomyErrors(errors))
        }
    }

    fn validate_personas(&self, file: &str, errors: &mut Vec<TaxonomyError>) {
        let mut names = HashSet::new();
        for categorization in &self.user_categorizations {
            if !names.insert(categorization.name.as_str()) {
                errors.push(TaxonomyError::DuplicatePersona {
                    file: file.to_string(),
                    categorization: categorization.name.clone(),
                    name: categorization.name.clone(),
                });
            }
            let mut persona_names = HashSet::new();
            for persona in &categorization.personas {
                if !persona_names.insert(persona.name.as_str()) {
                    errors.push(TaxonomyError::DuplicatePersona {
                        file: file.to_string(),
                        categorization: categorization.name.clone(),
                        name: persona.name.clone(),
                    });
                }
                if persona.description.trim().is_empty() {
                    errors.push(TaxonomyError::EmptyPersonaDescription {
                        file: file.to_string(),
                        categorization: categorization.name.clone(),
                        persona: persona.name.clone(),
                    });
                }
                if !(persona.probability >= 0.0 && persona.probability.is_finite()) {
                    errors.push(TaxonomyError::InvalidProbability {
                        file: file.to_string(),
                        categorization: categorization.name.clone(),
                        persona: persona.name.clone(),
                        probability: persona.probability,
                    });
                }
            }
            let sum: f64 = categorization.personas.iter().map(|p| p.probability).sum();
            if (sum - 1.0).abs() > PROBABILITY_TOLERANCE {
                errors.push(TaxonomyError::ProbabilitySum {
                    file: file.to_string(),
                    categorization: categorization.name.clone(),
                    sum,
                });
            }
        }
    }
}

fn validate_dimension(
    dimension: &Dimension,
    file: &str,
    snake_case_names: bool,
    errors: &mut Vec<TaxonomyError>,
) {
    let dim = || dimension.key.clone();
    if dimension
        .levels
        .iter()
        .all(|level| level.categories.is_empty())
    {
        errors.push(TaxonomyError::EmptyDimension {
            file: file.to_string(),
            dimension: dim(),
        });
        return;
    }

    // Where each name is first defined; later definitions are duplicates.
    let mut defined: HashMap<&str, Granularity> = HashMap::new();
    for level in &dimension.levels {
        for category in &level.categories {
            match defined.get(category.name.as_str()) {
                Some(&first) => errors.push(TaxonomyError::DuplicateCategory {
                    file: file.to_string(),
                    dimension: dim(),
                    category: category.name.clone(),
                    first,
                    second: level.granularity,
                }),
                None => {
                    defined.insert(&category.name, level.granularity);
                }
            }
        }
    }

    for level in &dimension.levels {
        if let Some(above) = level.granularity.above()
            && dimension.level(above).is_none()
        {
            errors.push(TaxonomyError::MissingLevel {
                file: file.to_string(),
                dimension: dim(),
                level: level.granularity,
                missing: above,
            });
        }
        for category in &level.categories {
            let name = || category.name.clone();
            if snake_case_names && !is_snake_case(&category.name) {
                errors.push(TaxonomyError::NotSnakeCase {
                    file: file.to_string(),
                    dimension: dim(),
                    category: name(),
                });
            }
            if category.description.trim().is_empty() {
                errors.push(TaxonomyError::EmptyDescription {
                    file: file.to_string(),
                    dimension: dim(),
                    category: name(),
                });
            }
            match (level.granularity.above(), &category.parent) {
                (None, None) => {}
                (None, Some(parent)) => errors.push(TaxonomyError::CoarseWithParent {
                    file: file.to_string(),
                    dimension: dim(),
                    category: name(),
                    parent: parent.clone(),
                }),
                (Some(expected), None) => errors.push(TaxonomyError::Orphan {
                    file: file.to_string(),
                    dimension: dim(),
                    category: name(),
                    level: level.granularity,
                    expected,
                }),
                (Some(expected), Some(parent)) => match defined.get(parent.as_str()) {
                    None => errors.push(TaxonomyError::UnknownParent {
                        file: file.to_string(),
                        dimension: dim(),
                        category: name(),
                        level: level.granularity,
                        parent: parent.clone(),
                    }),
                    Some(&parent_level) if parent_level != expected => {
                        errors.push(TaxonomyError::WrongLevelParent {
                            file: file.to_string(),
                            dimension: dim(),
                            category: name(),
                            level: level.granularity,
                            parent: parent.clone(),
                            parent_level,
                            expected,
                        })
                    }
                    Some(_) => {}
                },
            }
        }
    }

    // Each level present must subdivide every category of the level above it.
    for level in &dimension.levels {
        let Some(below) = level.granularity.below().and_then(|g| dimension.level(g)) else {
            continue;
        };
        for parent in &level.categories {
            let has_child = below
                .categories
                .iter()
                .any(|child| child.parent.as_deref() == Some(parent.name.as_str()));
            if !has_child {
                errors.push(TaxonomyError::NotSubdivided {
                    file: file.to_string(),
                    dimension: dim(),
                    category: parent.name.clone(),
                    level: below.granularity,
                    parent_level: level.granularity,
                });
            }
        }
    }
}
