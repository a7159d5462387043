//! The `[design]` table of a run config (TOML): the design's kind and counts, and the cells of a
//! custom design.
//!
//! ```toml
//! [design]
//! kind = "custom"
//!
//! [[design.cell]]
//! categories = { lv = "distant", qc = "multi_hop_reasoning" }
//! persona = "novice"   # optional; drawn by probability otherwise
//! count = 120
//! ```
//!
//! Other tables of the run config are ignored here; unknown keys inside `[design]` are errors.

use hierarag_taxonomy::Taxonomy;
use serde::Deserialize;

use crate::design::{Allocation, CategoryRef, Cell, Design, DesignKind, ItemSet, PerLevel};
use crate::error::{PlanError, list};

/// The `[design]` table of a run config.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DesignConfig {
    pub kind: Option<DesignKind>,
    /// rq1: items per dimension.
    pub per_dimension: Option<usize>,
    /// rq2: items per (dimension, level): a number, or `{ coarse = 333, medium = 333, fine = 446 }`.
    pub per_level: Option<PerLevelConfig>,
    /// rq3: items per cell.
    pub per_cell: Option<usize>,
    /// rq1/rq2: the dimensions to use (all by default).
    pub dimensions: Option<Vec<String>>,
    /// rq3: the dimensions to cross (default `["lv", "qc"]`).
    pub factors: Option<Vec<String>>,
    /// custom: the cells.
    #[serde(default, rename = "cell")]
    pub cells: Vec<CellConfig>,
    /// The 1-based line of each key of the table in its file (filled by
    /// [`DesignConfig::from_toml_str`]), for errors found against the taxonomy.
    #[serde(skip)]
    pub key_lines: std::collections::BTreeMap<String, usize>,
}

/// rq2 sizes in a config: one number or one per level.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum PerLevelConfig {
    All(usize),
    Each {
        coarse: usize,
        medium: usize,
        fine: usize,
    },
}

impl From<PerLevelConfig> for PerLevel {
    fn from(config: PerLevelConfig) -> PerLevel {
        match config {
            PerLevelConfig::All(n) => PerLevel {
                coarse: n,
                medium: n,
                fine: n,
            },
            PerLevelConfig::Each {
                coarse,
                medium,
                fine,
            } => PerLevel {
                coarse,
                medium,
                fine,
            },
        }
    }
}

/// One cell of a custom design.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellConfig {
    /// Dimension key → category name (on any level), e.g. `{ qc = "simple", lv = "distant" }`.
    pub categories: toml::Table,
    /// A persona name from the taxonomy's user categorizations; drawn by probability if absent.
    pub persona: Option<String>,
    /// Items to generate for this cell.
    pub count: usize,
    /// The 1-based line where the cell starts in its file (filled by
    /// [`DesignConfig::from_toml_str`]).
    #[serde(skip)]
    pub line: Option<usize>,
}

#[derive(Deserialize)]
struct ConfigFile {
    design: Option<DesignConfig>,
}

impl DesignConfig {
    /// Reads the `[design]` table of a run config; `None` when the file has none.
    pub fn from_toml_str(text: &str, source_name: &str) -> Result<Option<DesignConfig>, PlanError> {
        let file: ConfigFile = toml::from_str(text).map_err(|e| PlanError::Config {
            source_name: source_name.to_string(),
            message: e.to_string().trim_end().to_string(),
        })?;
        let Some(mut design) = file.design else {
            return Ok(None);
        };
        // The same text parsed again with places, for the lines of keys and cells.
        let line_of = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
        if let Ok(root) = toml::de::DeTable::parse(text)
            && let Some(table) = root
                .get_ref()
                .get("design")
                .and_then(|d| d.get_ref().as_table())
        {
            for (key, value) in table {
                design
                    .key_lines
                    .insert(key.get_ref().to_string(), line_of(key.span().start));
                if key.get_ref() == "cell"
                    && let Some(cells) = value.get_ref().as_array()
                {
                    for (cell, spanned) in design.cells.iter_mut().zip(cells.iter()) {
                        cell.line = Some(line_of(spanned.span().start));
                    }
                }
            }
        }
        Ok(Some(design))
    }
}

impl Design {
    /// A custom design: one set whose cells and counts are listed in the config. Every
    /// dimension, category and persona is checked against the taxonomy; an unknown one is an
    /// error naming the file and cell and listing the valid names.
    pub fn custom(
        taxonomy: &Taxonomy,
        cells: &[CellConfig],
        source_name: &str,
    ) -> Result<Design, PlanError> {
        if cells.is_empty() {
            return Err(PlanError::Config {
                source_name: source_name.to_string(),
                message: "a custom design needs at least one [[design.cell]] with `categories` and `count`".into(),
            });
        }
        let mut resolved: Vec<Cell> = Vec::with_capacity(cells.len());
        for (index, config) in cells.iter().enumerate() {
            let line = config
                .line
                .map(|line| format!(" (line {line})"))
                .unwrap_or_default();
            let context = format!("{source_name}: [[design.cell]] #{}{line}: ", index + 1);
            let cell = resolve_cell(taxonomy, config, &context)?;
            if let Some(same) = resolved.iter().position(|c| *c == cell) {
                return Err(PlanError::Config {
                    source_name: source_name.to_string(),
                    message: format!(
                        "[[design.cell]] #{} repeats cell #{} ({}); merge their counts",
                        index + 1,
                        same + 1,
                        cell.label()
                    ),
                });
            }
            resolved.push(cell);
        }
        let counts = cells.iter().map(|c| c.count).collect();
        Design::checked(
            DesignKind::Custom,
            vec![ItemSet {
                name: "custom".into(),
                cells: resolved,
                allocation: Allocation::PerCell(counts),
            }],
        )
    }
}

fn resolve_cell(
    taxonomy: &Taxonomy,
    config: &CellConfig,
    context: &str,
) -> Result<Cell, PlanError> {
    if config.categories.is_empty() {
        return Err(PlanError::Config {
            source_name: context.trim_end_matches([':', ' ']).to_string(),
            message: "`categories` is empty; give at least one, e.g. { qc = \"simple\" }".into(),
        });
    }
    for key in config.categories.keys() {
        if taxonomy.dimension(key).is_none() {
            return Err(PlanError::UnknownDimension {
                context: context.to_string(),
                dimension: key.clone(),
                valid: list(taxonomy.dimensions.iter().map(|d| d.key.as_str())),
            });
        }
    }
    let mut categories = Vec::new();
    let mut multi_doc = false;
    // Taxonomy order, so that the same cell written in another key order is the same cell.
    for dimension in &taxonomy.dimensions {
        let Some(value) = config.categories.get(&dimension.key) else {
            continue;
        };
        let Some(name) = value.as_str() else {
            return Err(PlanError::Config {
                source_name: context.trim_end_matches([':', ' ']).to_string(),
                message: format!(
                    "categories.{} must be a category name in quotes, found {value}",
                    dimension.key
                ),
            });
        };
        let Some((level, category)) = dimension.category(name) else {
            let valid = dimension
                .levels
                .iter()
                .map(|level| {
                    format!(
                        "{}: {}",
                        level.granularity,
                        list(level.categories.iter().map(|c| c.name.as_str()))
                    )
                })
                .collect::<Vec<_>>()
                .join("; ");
            return Err(PlanError::UnknownCategory {
                context: context.to_string(),
                dimension: dimension.key.clone(),
                category: name.to_string(),
                valid,
            });
        };
        multi_doc |= category.is_multi_doc;
        categories.push(CategoryRef {
            dimension: dimension.key.clone(),
            level,
            category: category.name.clone(),
        });
    }
    let mut personas = Vec::new();
    if let Some(persona) = &config.persona {
        let owner = taxonomy
            .user_categorizations
            .iter()
            .find(|categorization| categorization.personas.iter().any(|p| p.name == *persona));
        let Some(owner) = owner else {
            return Err(PlanError::UnknownPersona {
                context: context.to_string(),
                persona: persona.clone(),
                valid: list(taxonomy.personas().map(|p| p.name.as_str())),
            });
        };
        personas.push((owner.name.clone(), persona.clone()));
    }
    Ok(Cell {
        categories,
        personas,
        multi_doc,
    })
}
