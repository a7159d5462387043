//! Designs: which sets of questions to generate, split into cells of categories, with counts.

use std::fmt;
use std::str::FromStr;

use hierarag_taxonomy::{Dimension, Granularity, Taxonomy};
use serde::{Deserialize, Serialize};

pub use hierarag_records::CategoryRef;

use crate::error::{PlanError, list};

/// The built-in designs of the paper, plus `custom` (cells listed in a run config).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum DesignKind {
    /// Coarse level of every dimension, N questions per dimension (paper: 4 × 400).
    Rq1,
    /// Every level of every hierarchical dimension, each a separate set of N questions.
    Rq2,
    /// Full factorial of the coarse categories of two dimensions (paper: lv × qc, ≈250 a cell).
    Rq3,
    /// Cells and counts from the `[design]` table of a run config.
    Custom,
}

impl DesignKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DesignKind::Rq1 => "rq1",
            DesignKind::Rq2 => "rq2",
            DesignKind::Rq3 => "rq3",
            DesignKind::Custom => "custom",
        }
    }
}

impl fmt::Display for DesignKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A combination of categories (one per dimension) that items are generated for.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// Usually one category; one per factor in a factorial cell.
    pub categories: Vec<CategoryRef>,
    /// Personas fixed by the design, as (user categorization, persona); the others are drawn.
    pub personas: Vec<(String, String)>,
    /// Whether items of this cell are generated from two documents.
    pub multi_doc: bool,
}

impl Cell {
    /// A short label: `qc=simple`, or `lv=similar qc=simple persona=novice`.
    pub fn label(&self) -> String {
        let mut parts: Vec<String> = self
            .categories
            .iter()
            .map(|c| format!("{}={}", c.dimension, c.category))
            .collect();
        parts.extend(self.personas.iter().map(|(_, p)| format!("persona={p}")));
        parts.join(" ")
    }
}

/// How many items each cell of a set gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allocation {
    /// This many items in all, spread over the cells as evenly as possible (within one).
    Balanced(usize),
    /// Exactly these counts, one per cell.
    PerCell(Vec<usize>),
}

/// An independent set of questions: the unit whose categories are compared in the analysis.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemSet {
    /// `qc` (rq1), `qc/medium` (rq2), `lv×qc` (rq3), `custom`.
    pub name: String,
    pub cells: Vec<Cell>,
    pub allocation: Allocation,
}

impl ItemSet {
    /// The slug used in item ids: `qc`, `qc-medium`; empty for a design with one set.
    pub(crate) fn id_slug(&self, design: DesignKind) -> String {
        match design {
            DesignKind::Rq1 | DesignKind::Rq2 => self.name.replace('/', "-"),
            DesignKind::Rq3 | DesignKind::Custom => String::new(),
        }
    }
}

/// A design resolved against a taxonomy: sets of cells with counts.
#[derive(Debug, Clone, PartialEq)]
pub struct Design {
    pub kind: DesignKind,
    pub sets: Vec<ItemSet>,
}

/// Items per level for rq2: one number for all levels, or `coarse=333,medium=333,fine=446`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PerLevel {
    pub coarse: usize,
    pub medium: usize,
    pub fine: usize,
}

impl PerLevel {
    /// The paper's rq2 sizes: 333 for coarse and medium, 446 for fine.
    pub const PAPER: PerLevel = PerLevel {
        coarse: 333,
        medium: 333,
        fine: 446,
    };

    pub fn get(&self, granularity: Granularity) -> usize {
        match granularity {
            Granularity::Coarse => self.coarse,
            Granularity::Medium => self.medium,
            Granularity::Fine => self.fine,
        }
    }
}

impl fmt::Display for PerLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "coarse={},medium={},fine={}",
            self.coarse, self.medium, self.fine
        )
    }
}

impl FromStr for PerLevel {
    type Err = String;

    fn from_str(text: &str) -> Result<PerLevel, String> {
        if let Ok(n) = text.trim().parse::<usize>() {
            return Ok(PerLevel {
                coarse: n,
                medium: n,
                fine: n,
            });
        }
        let mut levels = [None; 3];
        for part in text.split(',') {
            let (level, count) = part.split_once('=').ok_or_else(|| {
                format!("`{part}`: expected a number, or level=N pairs like coarse=333,medium=333,fine=446")
            })?;
            let index = match level.trim() {
                "coarse" => 0,
                "medium" => 1,
                "fine" => 2,
                other => {
                    return Err(format!(
                        "unknown level `{other}`; levels are coarse, medium, fine"
                    ));
                }
            };
            let count = count
                .trim()
                .parse::<usize>()
                .map_err(|e| format!("`{part}`: {e}"))?;
            if levels[index].replace(count).is_some() {
                return Err(format!("level `{}` given twice", level.trim()));
            }
        }
        match levels {
            [Some(coarse), Some(medium), Some(fine)] => Ok(PerLevel {
                coarse,
                medium,
                fine,
            }),
            _ => Err("give all three levels: coarse=N,medium=N,fine=N (or one number)".into()),
        }
    }
}

impl Design {
    /// rq1: the coarse level of each dimension (all of them when `dimensions` is empty), one
    /// set of `per_dimension` items per dimension.
    pub fn rq1(
        taxonomy: &Taxonomy,
        per_dimension: usize,
        dimensions: &[String],
    ) -> Result<Design, PlanError> {
        let sets = select_dimensions(taxonomy, dimensions, |_| true)?
            .into_iter()
            .map(|dimension| ItemSet {
                name: dimension.key.clone(),
                cells: level_cells(dimension, Granularity::Coarse),
                allocation: Allocation::Balanced(per_dimension),
            })
            .collect();
        Design::checked(DesignKind::Rq1, sets)
    }

    /// rq2: every level of every dimension that has more than one level (or of the dimensions
    /// named), each level a separate set.
    pub fn rq2(
        taxonomy: &Taxonomy,
        per_level: PerLevel,
        dimensions: &[String],
    ) -> Result<Design, PlanError> {
        let mut sets = Vec::new();
        for dimension in select_dimensions(taxonomy, dimensions, |d| d.levels.len() > 1)? {
            for level in &dimension.levels {
                sets.push(ItemSet {
                    name: format!("{}/{}", dimension.key, level.granularity),
                    cells: level_cells(dimension, level.granularity),
                    allocation: Allocation::Balanced(per_level.get(level.granularity)),
                });
            }
        }
        if sets.is_empty() {
            return Err(PlanError::NoHierarchicalDimension);
        }
        Design::checked(DesignKind::Rq2, sets)
    }

    /// rq3: the full factorial of the coarse categories of `factors` (paper: `lv`, `qc`),
    /// `per_cell` items in every cell.
    pub fn rq3(
        taxonomy: &Taxonomy,
        per_cell: usize,
        factors: &[String],
    ) -> Result<Design, PlanError> {
        if factors.len() < 2 {
            return Err(PlanError::Factors {
                found: factors.len(),
            });
        }
        let dimensions = select_dimensions(taxonomy, factors, |_| true)?;
        let mut cells = vec![Cell {
            categories: Vec::new(),
            personas: Vec::new(),
            multi_doc: false,
        }];
        for dimension in &dimensions {
            let factor = level_cells(dimension, Granularity::Coarse);
            cells = cells
                .iter()
                .flat_map(|cell| {
                    factor.iter().map(move |level_cell| {
                        let mut categories = cell.categories.clone();
                        categories.extend(level_cell.categories.iter().cloned());
                        Cell {
                            categories,
                            personas: Vec::new(),
                            multi_doc: cell.multi_doc || level_cell.multi_doc,
                        }
                    })
                })
                .collect();
        }
        let name = dimensions
            .iter()
            .map(|d| d.key.as_str())
            .collect::<Vec<_>>()
            .join("×");
        let counts = vec![per_cell; cells.len()];
        Design::checked(
            DesignKind::Rq3,
            vec![ItemSet {
                name,
                cells,
                allocation: Allocation::PerCell(counts),
            }],
        )
    }

    pub(crate) fn checked(kind: DesignKind, sets: Vec<ItemSet>) -> Result<Design, PlanError> {
        let design = Design { kind, sets };
        if design.n_items() == 0 {
            return Err(PlanError::Empty);
        }
        Ok(design)
    }

    /// Total number of items over all sets.
    pub fn n_items(&self) -> usize {
        self.sets
            .iter()
            .map(|set| match &set.allocation {
                Allocation::Balanced(n) => *n,
                Allocation::PerCell(counts) => counts.iter().sum(),
            })
            .sum()
    }
}

/// One single-category cell per category of a level.
fn level_cells(dimension: &Dimension, granularity: Granularity) -> Vec<Cell> {
    dimension
        .level(granularity)
        .map(|level| {
            level
                .categories
                .iter()
                .map(|category| Cell {
                    categories: vec![CategoryRef {
                        dimension: dimension.key.clone(),
                        level: granularity,
                        category: category.name.clone(),
                    }],
                    personas: Vec::new(),
                    multi_doc: category.is_multi_doc,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The dimensions named (in the order named), or all that pass `default_filter`.
fn select_dimensions<'t>(
    taxonomy: &'t Taxonomy,
    keys: &[String],
    default_filter: impl Fn(&Dimension) -> bool,
) -> Result<Vec<&'t Dimension>, PlanError> {
    if keys.is_empty() {
        return Ok(taxonomy
            .dimensions
            .iter()
            .filter(|d| default_filter(d))
            .collect());
    }
    let mut chosen: Vec<&Dimension> = Vec::new();
    for key in keys {
        let dimension = taxonomy
            .dimension(key)
            .ok_or_else(|| PlanError::UnknownDimension {
                context: String::new(),
                dimension: key.clone(),
                valid: list(taxonomy.dimensions.iter().map(|d| d.key.as_str())),
            })?;
        if chosen.iter().any(|d| d.key == dimension.key) {
            return Err(PlanError::DuplicateDimension {
                dimension: key.clone(),
            });
        }
        chosen.push(dimension);
    }
    Ok(chosen)
}
