//! Run directories and what runs in them, below the command line.
//!
//! - [`layout`]: [`RunDir`] and [`SystemDir`] name every file of a run (the one place that
//!   does); [`manifest`]: `manifest.json`, what ran with what and what it cost;
//! - [`config`]: the run config (TOML), read into typed settings in one spanned pass so that
//!   every error names its line and column;
//! - [`models`]: chat and embedding clients for a config (servers, or the embedded models from
//!   the asset store), and the check of every endpoint before a run;
//! - [`corpus`], [`index`], [`plan`], [`taxonomy`]: the corpus (`wiki-sample` resolved), its
//!   index, the design and the sampled plan, the taxonomy files;
//! - [`stages`]: generate, answer and evaluate over a run directory, recorded in the manifest;
//!   [`tag`]: every question labelled on every dimension by an LLM (`tags.jsonl`);
//!   [`judge`]: every answer graded, and every QA pair rated, by an LLM judge;
//!   [`systems`]: where each `[[system]]` keeps its files, and answers read from a file;
//! - [`chain`]: the main job, `hierarag run`, from the checks to the report;
//! - [`analyze`], [`report`]: benchmark, answers and scores joined for the analysis and the
//!   report; [`compare`]: several systems' scores compared on one benchmark; [`power`]: the questions a granularity finding needs, with the run as the pilot; [`annotate`]: the items to rate and the agreement of the ratings; [`export`]: BEIR, Ragas, DeepEval and TREC files; [`import`]: DataMorgana, Ragas, DeepEval and mapped JSONL/CSV benchmarks into a run; [`retrieval`]: queries into
//!   TREC runs, their evaluation, and the retrieval smoke test; [`text`]: ROUGE-1, BLEU and CS of
//!   any prediction/reference pairs; [`validity`]: the human-written benchmark of `[human]`
//!   beside the generated one.
//!
//! Nothing here prints: notes and progress go through a [`Reporter`] (the binary draws them on
//! stderr; [`Silent`] drops them).
//!
//! ```no_run
//! use hierarag_run::{RunDir, Silent, chain, config::RunConfig};
//!
//! let config = RunConfig::load("examples/quickstart.toml".as_ref())?;
//! let options = chain::RunOptions {
//!     config_path: "examples/quickstart.toml".into(),
//!     reconfigure: false,
//!     check_endpoints: true,
//!     export_batch: None,
//! };
//! let outcome = chain::run(&config, &options, &Silent)?;
//! println!("report: {:?}", outcome.report_html);
//! assert_eq!(outcome.run, RunDir::new(&config.run.dir));
//! # Ok::<(), anyhow::Error>(())
//! ```

pub mod analyze;
pub mod annotate;
pub mod batch;
pub mod chain;
pub mod compare;
pub mod corpus;
pub mod index;
pub mod items;
pub mod json;
pub mod judge;
pub mod language;
pub mod manifest;
pub mod models;
pub mod plan;
pub mod power;
pub mod report;
pub mod retrieval;
pub mod stages;
pub mod systems;
pub mod tag;
pub mod text;
pub mod validity;

pub use hierarag_config as config;
pub use hierarag_interchange::{export, import, taxonomy};
pub use hierarag_pipeline::{Counter, Reporter, Silent};
pub use hierarag_records::layout;
pub use layout::{RunDir, SystemDir};
pub use manifest::Manifest;
