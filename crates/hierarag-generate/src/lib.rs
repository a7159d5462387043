//! Synthetic QA generation in the manner of DataMorgana (docs/design.md, "Generation"): from a plan item and
//! its document(s) to one benchmark question with its reference answer.
//!
//! For each item the [`Generator`] asks the generator model for k candidates (default 3) as
//! strict JSON ([`prompt::candidates_schema`]); the prompt holds the delimited document(s),
//! the category description(s) as constraints, the persona, and the rules that questions stand
//! alone and that instructions inside documents are ignored. Replies are read tolerantly
//! ([`parse_candidates`]: JSON, fenced blocks, JSON lines, `Question:`/`Answer:` pairs); an
//! unreadable reply gets one repair message. Candidates that repeat or mention "the document"
//! are rejected without a model; the rest go to the filter model (one call judging all of them
//! for faithfulness, fit to the category and self-containedness). One survivor is chosen with
//! the item seed; when none survives, the item is tried again with a new call (up to
//! `max_attempts`), then recorded as failed. Every rejected candidate is a [`RejectRecord`].
//!
//! ```no_run
//! # async fn demo(
//! #     taxonomy: &hierarag_taxonomy::Taxonomy,
//! #     client: &hierarag_llm::ChatClient,
//! #     item: &hierarag_plan::PlanItem,
//! # ) {
//! use hierarag_generate::{GenerateSettings, Generator, SourceDocument};
//!
//! let generator = Generator::new(taxonomy, client, Some(client), GenerateSettings::default());
//! let documents = vec![SourceDocument { id: "d1".into(), text: "Ada Lovelace…".into() }];
//! let outcome = generator.generate(item, &documents).await;
//! match &outcome.record {
//!     Some(record) => println!("{}: {}", record.id, record.question),
//!     None => eprintln!("{} failed: {:?}", outcome.item_id, outcome.failure),
//! }
//! # }
//! ```

mod generator;
mod parse;
pub mod prompt;
mod record;

pub use generator::{GenerateSettings, Generator, ItemOutcome};
pub use parse::{Candidate, parse_candidates, parse_verdicts};
pub use prompt::{QuestionSpec, SourceDocument};
pub use record::{
    BenchmarkRecord, FilterOutcome, ImportSource, ModelInfo, RejectKind, RejectRecord, Verdict,
};
