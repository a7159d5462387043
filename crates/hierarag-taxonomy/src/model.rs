//! The taxonomy data model: dimensions, levels, categories, personas, and lookups over them.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How fine a level of a dimension is; each level subdivides the one above it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Granularity {
    Coarse,
    Medium,
    Fine,
}

impl Granularity {
    /// All granularities, coarsest first.
    pub const ALL: [Granularity; 3] = [Granularity::Coarse, Granularity::Medium, Granularity::Fine];

    /// The level directly above this one (where parents live), if any.
    pub fn above(self) -> Option<Granularity> {
        match self {
            Granularity::Coarse => None,
            Granularity::Medium => Some(Granularity::Coarse),
            Granularity::Fine => Some(Granularity::Medium),
        }
    }

    /// The level directly below this one (where children live), if any.
    pub fn below(self) -> Option<Granularity> {
        match self {
            Granularity::Coarse => Some(Granularity::Medium),
            Granularity::Medium => Some(Granularity::Fine),
            Granularity::Fine => None,
        }
    }

    /// The lowercase name used in files and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Granularity::Coarse => "coarse",
            Granularity::Medium => "medium",
            Granularity::Fine => "fine",
        }
    }
}

impl fmt::Display for Granularity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A whole taxonomy: question dimensions plus user categorizations (personas).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Taxonomy {
    pub dimensions: Vec<Dimension>,
    pub user_categorizations: Vec<UserCategorization>,
}

/// One question dimension (e.g. Question Complexity), with one to three levels.
#[derive(Debug, Clone, PartialEq)]
pub struct Dimension {
    /// Short identifier used in plans and reports, e.g. `qc`.
    pub key: String,
    /// Human-readable name, e.g. `Question Complexity`.
    pub name: String,
    /// Levels present, coarsest first; a dimension may have only a coarse level.
    pub levels: Vec<Level>,
}

/// The categories of one dimension at one granularity.
#[derive(Debug, Clone, PartialEq)]
pub struct Level {
    pub granularity: Granularity,
    pub categories: Vec<Category>,
}

/// One category; its description is the text that goes into the generation prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct Category {
    /// snake_case name, unique within its dimension.
    pub name: String,
    pub description: String,
    /// The category on the level directly above; `None` on the coarse level.
    pub parent: Option<String>,
    /// Whether questions of this category are generated from two documents.
    pub is_multi_doc: bool,
    /// Whether questions of this category are on their documents' topic but not answered by
    /// them: their reference answer is the refusal, and a system should refuse them.
    pub is_unanswerable: bool,
    /// Sampling probability, as in DataMorgana configurations; `None` means balanced.
    pub probability: Option<f64>,
}

impl Category {
    /// A single-document category with no parent and no probability.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Category {
        Category {
            name: name.into(),
            description: description.into(),
            parent: None,
            is_multi_doc: false,
            is_unanswerable: false,
            probability: None,
        }
    }

    /// The same category with the given parent.
    pub fn with_parent(mut self, parent: impl Into<String>) -> Category {
        self.parent = Some(parent.into());
        self
    }
}

/// A way of categorizing the user who asks (e.g. expertise), with personas drawn by probability.
#[derive(Debug, Clone, PartialEq)]
pub struct UserCategorization {
    pub name: String,
    pub personas: Vec<Persona>,
}

/// One kind of user; probabilities within a user categorization sum to 1.
#[derive(Debug, Clone, PartialEq)]
pub struct Persona {
    pub name: String,
    pub description: String,
    pub probability: f64,
}

/// A parent category together with its children one level down: one unit of the analysis.
#[derive(Debug, Clone, PartialEq)]
pub struct Split<'a> {
    pub parent_level: Granularity,
    pub parent: &'a Category,
    pub children: Vec<&'a Category>,
}

impl Taxonomy {
    /// The dimension with this key.
    pub fn dimension(&self, key: &str) -> Option<&Dimension> {
        self.dimensions
            .iter()
            .find(|dimension| dimension.key == key)
    }

    /// A category of a dimension, found on any level, with the level it is on.
    pub fn category(&self, dimension: &str, name: &str) -> Option<(Granularity, &Category)> {
        self.dimension(dimension)?.category(name)
    }

    /// The children (one level down) of a category; empty when it has none or does not exist.
    pub fn children(&self, dimension: &str, parent: &str) -> Vec<&Category> {
        self.dimension(dimension)
            .map(|dim| dim.children(parent))
            .unwrap_or_default()
    }

    /// The parent of a category, if it has one.
    pub fn parent_of(&self, dimension: &str, name: &str) -> Option<(Granularity, &Category)> {
        self.dimension(dimension)?.parent_of(name)
    }

    /// Every parent with its children one level down; a 2/4/8 dimension has 6 splits.
    pub fn splits(&self, dimension: &str) -> Vec<Split<'_>> {
        self.dimension(dimension)
            .map(Dimension::splits)
            .unwrap_or_default()
    }

    /// All personas of all user categorizations.
    pub fn personas(&self) -> impl Iterator<Item = &Persona> {
        self.user_categorizations
            .iter()
            .flat_map(|categorization| categorization.personas.iter())
    }

    /// Total number of categories over all dimensions and levels.
    pub fn n_categories(&self) -> usize {
        self.dimensions
            .iter()
            .flat_map(|dimension| dimension.levels.iter())
            .map(|level| level.categories.len())
            .sum()
    }
}

impl Dimension {
    /// The level of this granularity, if the dimension has it.
    pub fn level(&self, granularity: Granularity) -> Option<&Level> {
        self.levels
            .iter()
            .find(|level| level.granularity == granularity)
    }

    /// A category on any level, with the level it is on.
    pub fn category(&self, name: &str) -> Option<(Granularity, &Category)> {
        self.levels.iter().find_map(|level| {
            level
                .categories
                .iter()
                .find(|category| category.name == name)
                .map(|category| (level.granularity, category))
        })
    }

    /// The children of a category on the level directly below it.
    pub fn children(&self, parent: &str) -> Vec<&Category> {
        let Some((granularity, _)) = self.category(parent) else {
            return Vec::new();
        };
        let Some(below) = granularity.below().and_then(|g| self.level(g)) else {
            return Vec::new();
        };
        below
            .categories
            .iter()
            .filter(|category| category.parent.as_deref() == Some(parent))
            .collect()
    }

    /// The parent of a category, with the level it is on.
    pub fn parent_of(&self, name: &str) -> Option<(Granularity, &Category)> {
        let (_, category) = self.category(name)?;
        self.category(category.parent.as_deref()?)
    }

    /// Every category that has children, with its children, coarsest first.
    pub fn splits(&self) -> Vec<Split<'_>> {
        let mut splits = Vec::new();
        for level in &self.levels {
            let Some(below) = level.granularity.below().and_then(|g| self.level(g)) else {
                continue;
            };
            for parent in &level.categories {
                let children: Vec<&Category> = below
                    .categories
                    .iter()
                    .filter(|category| category.parent.as_deref() == Some(parent.name.as_str()))
                    .collect();
                if !children.is_empty() {
                    splits.push(Split {
                        parent_level: level.granularity,
                        parent,
                        children,
                    });
                }
            }
        }
        splits
    }
}
