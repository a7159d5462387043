//! Experiment designs and question-generation plans: which question to generate from which
//! document (docs/design.md, "Designs and plans").
//!
//! A [`Design`] resolves the paper's research designs (`rq1`, `rq2`, `rq3`) or a `custom` one
//! from a run config ([`DesignConfig`]) against a [`hierarag_taxonomy::Taxonomy`] into sets of
//! cells with counts. A [`Layout`] assigns categories (balanced within one per set), personas
//! (by their probabilities within each cell), item ids and per-item seeds; a [`Reservoir`] draws
//! the documents uniformly at random in one streaming pass over the corpus; [`Layout::assign`]
//! joins them into a [`Plan`], written as `plan.jsonl` ([`PlanItem`], one per line).
//!
//! Every random choice has its own stream derived from the plan seed ([`derive_seed`]), so the
//! same taxonomy, design, corpus and seed give the same plan byte for byte.
//!
//! This crate does no I/O of its own: the caller streams the corpus into the reservoir.
//!
//! ```
//! use hierarag_plan::{Design, DocumentSample, LengthBounds, Layout, Reservoir};
//! use hierarag_taxonomy::Taxonomy;
//!
//! let taxonomy = Taxonomy::default_taxonomy();
//! let design = Design::rq1(&taxonomy, 10, &[]).unwrap();
//! let layout = Layout::new(&design, &taxonomy, 42);
//! let mut reservoir = Reservoir::new(layout.doc_slots(), LengthBounds::default(), 42);
//! for n in 0..1000 {
//!     reservoir.offer(&format!("doc{n}"), "some text of the document");
//! }
//! let plan = layout.assign(reservoir.finish()).unwrap();
//! assert_eq!(plan.items.len(), 40); // 4 dimensions × 10
//! assert_eq!(plan.items[0].item_id, "rq1-qc-0001");
//! ```

mod config;
mod design;
mod error;
mod estimate;
mod plan;
mod sample;
mod seeds;

pub use config::{CellConfig, DesignConfig, PerLevelConfig};
pub use design::{Allocation, CategoryRef, Cell, Design, DesignKind, ItemSet, PerLevel};
pub use error::PlanError;
pub use estimate::{GenerationSettings, LlmEstimate, TOKENS_PER_WORD, estimate_items};
pub use plan::{Layout, Plan, PlanItem};
pub use sample::{DocumentSample, LengthBounds, Reservoir, SampledDoc, count_words};
pub use seeds::{derive_seed, item_seed};
