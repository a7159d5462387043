//! A run directory read back: the joins of its records that the analysis, the comparison, the
//! power analysis, the item analysis, the validity check, the annotation app and the report
//! need, below the orchestration that writes them (hierarag-run).
//!
//! - [`manifest`]: `manifest.json`, what ran with what and what it cost; [`systems`]: where each
//!   system of a run keeps its files; [`json`]: the JSON files of a run written whole and read
//!   with errors that name them; [`corpus`]: the corpus of a config (`wiki-sample` resolved);
//!   [`language`]: a run's language and the checks of texts against it; [`tags`]: its tags;
//! - [`analyze`], [`report`]: benchmark, answers and scores joined for the analysis and the
//!   report; [`compare`]: several systems' scores compared on one benchmark; [`power`]: the
//!   questions a granularity finding needs, with the run as the pilot; [`items`]: which
//!   questions carry the signal; [`validity`]: the human-written benchmark of `[human]` beside
//!   the generated one; [`annotate`]: the items to rate and the agreement of the ratings.
//!
//! Nothing here prints: notes and progress go through a [`hierarag_pipeline::Reporter`].

pub mod analyze;
pub mod annotate;
pub mod compare;
pub mod corpus;
pub mod items;
pub mod json;
pub mod language;
pub mod manifest;
pub mod power;
pub mod report;
pub mod systems;
pub mod tags;
pub mod validity;

use hierarag_config as config;
use hierarag_interchange::{import, taxonomy};
use hierarag_records::layout;
