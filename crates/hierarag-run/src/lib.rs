//! What runs in a run directory, below the command line: the orchestration of the stages.
//!
//! - [`models`]: chat and embedding clients for a config (servers, or the embedded models from
//!   the asset store), and the check of every endpoint before a run;
//! - [`index`], [`plan`]: the corpus's index, the design and the sampled plan;
//! - [`stages`]: generate, answer and evaluate over a run directory, recorded in the manifest;
//!   [`tag`]: every question labelled on every dimension by an LLM (`tags.jsonl`);
//!   [`judge`]: every answer graded, and every QA pair rated, by an LLM judge; [`batch`]: a
//!   stage's requests exported for a provider's batch API, and its results imported;
//! - [`chain`]: the main job, `hierarag run`, from the checks to the report;
//! - [`retrieval`]: queries into TREC runs, their evaluation, and the retrieval smoke test;
//!   [`text`]: ROUGE-1, BLEU and CS of any prediction/reference pairs.
//!
//! Re-exported so that callers find one API here: [`layout`] ([`RunDir`] and [`SystemDir`] name
//! every file of a run), [`config`] (the run config, read in one spanned pass so that every
//! error names its line and column), [`export`], [`import`] and [`taxonomy`] (the interchange
//! formats), and the modules of hierarag-results that read a run back: [`manifest`],
//! [`systems`], [`corpus`], [`language`], [`json`], [`analyze`], [`report`], [`compare`],
//! [`power`], [`items`], [`validity`] and [`annotate`].
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

pub mod batch;
pub mod chain;
pub mod index;
pub mod judge;
pub mod models;
pub mod plan;
pub mod retrieval;
pub mod stages;
pub mod tag;
pub mod text;

pub use hierarag_config as config;
pub use hierarag_interchange::{export, import, taxonomy};
pub use hierarag_pipeline::{Counter, Reporter, Silent};
pub use hierarag_records::layout;
pub use hierarag_results::{
    analyze, annotate, compare, corpus, items, json, language, manifest, power, report, systems,
    validity,
};
pub use layout::{RunDir, SystemDir};
pub use manifest::Manifest;
