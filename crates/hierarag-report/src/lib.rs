//! The run report (docs/design.md, "Pipeline and run directory"): Markdown and a self-contained HTML page with SVG charts.
//!
//! [`ReportInput`] gathers what a run produced — a [`RunSummary`] (corpus, models, counts,
//! failures, usage), the [`Analysis`], the taxonomy and one [`QuestionRow`] per question — and
//! [`markdown`] and [`html`] render it: the summary, the paper's Tables 1–4 for the user's run,
//! the splits with their Coherence Ratio, the recommendation per dimension, the taxonomy
//! figure, charts (DiscPow against granularity with intervals, category means per level, ρ per
//! split against the thresholds 1 and 2, the factorial interaction plot), the comparison of
//! several systems (paired differences per category, forest and interaction plots, which
//! granularity separates them) and a browsable table of questions. The HTML page needs nothing from the network: styles, charts and its small
//! script are inline, and every text from the corpus or an LLM is escaped (the page by maud,
//! the charts by [`hierarag_taxonomy::SvgText`], the same escaper).
//!
//! ```
//! use hierarag_analysis::{Settings, analyze};
//! use hierarag_report::{ReportInput, RunSummary, html, markdown};
//! use hierarag_taxonomy::Taxonomy;
//!
//! let taxonomy = Taxonomy::default_taxonomy();
//! let analysis = analyze(&[], &taxonomy, &Settings::default());
//! let input = ReportInput {
//!     title: "empty run".into(),
//!     summary: RunSummary::default(),
//!     analysis: &analysis,
//!     taxonomy: Some(&taxonomy),
//!     questions: Vec::new(),
//!     systems: Vec::new(),
//!     comparison: None,
//!     validity: None,
//!     items: None,
//!     ppi: None,
//! };
//! assert!(markdown(&input).starts_with("# empty run"));
//! assert!(html(&input).contains("<svg"));
//! ```

mod charts;
mod comparison;
mod format;
mod html;
mod items;
mod markdown;
mod ppi;
mod sections;
pub mod svg;
mod validity;

use hierarag_analysis::Analysis;
use hierarag_taxonomy::Taxonomy;
use serde::{Deserialize, Serialize};

pub use html::html;
pub use markdown::markdown;

/// Everything a report shows.
#[derive(Debug, Clone)]
pub struct ReportInput<'a> {
    pub title: String,
    pub summary: RunSummary,
    pub analysis: &'a Analysis,
    /// Drawn as the taxonomy figure when given.
    pub taxonomy: Option<&'a Taxonomy>,
    /// The browsable table of questions (HTML only; the Markdown report counts them).
    pub questions: Vec<QuestionRow>,
    /// The run's named systems, in its config's order; the analysis sections (and `analysis`
    /// and `questions`) are the first's. Empty for a run of one unnamed system.
    pub systems: Vec<SystemReport<'a>>,
    /// The comparison of the run's systems (`comparison.json`), when there is one: its own
    /// section after the systems'.
    pub comparison: Option<&'a hierarag_analysis::Comparison>,
    /// The generated benchmark beside a human-written one (`validity.json`), when the run has
    /// one: its own section after the comparison.
    pub validity: Option<&'a hierarag_validity::Validity>,
    /// Which questions carry the signal, and the core set (`items.json`), when there is one:
    /// its own section after the validity's.
    pub items: Option<&'a hierarag_items::ItemsReport>,
    /// The judge's means corrected by people's ratings (`ppi.json`), when people rated answers.
    pub ppi: Option<&'a hierarag_validity::ppi::JudgePpi>,
}

/// One system of a run: its overall means, and its own analysis when there is one.
#[derive(Debug, Clone)]
pub struct SystemReport<'a> {
    pub name: String,
    /// What it is: `builtin (bm25)`, `http`, `command`, `file (ragas)`.
    pub kind: String,
    pub answered: usize,
    pub scored: usize,
    pub means: SystemMeans,
    pub analysis: Option<&'a Analysis>,
}

/// A system's means over its scored questions; a retrieval mean is over the questions that
/// have it (`None` when none has: the system names no document).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct SystemMeans {
    pub map: Option<f64>,
    pub ndcg_10: Option<f64>,
    pub recall_10: Option<f64>,
    pub cs: Option<f64>,
    pub rouge1: Option<f64>,
    pub bleu: Option<f64>,
    pub refusal_rate: Option<f64>,
    /// The LLM judge's mean correctness over 0–1, over the answers it graded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<f64>,
    /// The questions whose ranking was empty (the system found nothing): 0 on every retrieval
    /// measure, in the means.
    #[serde(default)]
    pub empty_rankings: usize,
}

/// What the run was: facts, stages, LLM usage and failures (from `manifest.json`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// (label, value) pairs: run directory, corpus, design, models, retriever, seed, version.
    pub facts: Vec<(String, String)>,
    pub stages: Vec<StageRow>,
    pub usage: Vec<UsageRow>,
    pub failures: Vec<FailureRow>,
}

/// One stage's last pass.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StageRow {
    pub stage: String,
    pub items: usize,
    pub written: usize,
    pub failed: usize,
    pub seconds: f64,
}

/// One LLM or embedding client's use in one stage.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageRow {
    pub stage: String,
    pub role: String,
    pub model: String,
    pub requests: u64,
    pub cache_hits: u64,
    pub failures: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub seconds: f64,
    pub cost: Option<f64>,
}

/// An item a stage could not do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FailureRow {
    pub stage: String,
    pub item: String,
    pub reason: String,
}

/// One question of the benchmark with its answer and scores.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QuestionRow {
    pub id: String,
    pub set: String,
    /// `qc/fine: extractive_span`, one per category.
    pub categories: Vec<String>,
    pub question: String,
    pub reference: String,
    /// None when the question was not answered (or not scored).
    pub answer: Option<String>,
    pub refused: bool,
    pub source_docs: Vec<String>,
    /// The ranked documents, best first.
    pub retrieved_docs: Vec<String>,
    pub scores: Option<QuestionScores>,
}

/// The per-question scores shown in the table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct QuestionScores {
    /// `None` when the question's system named no document.
    pub ap: Option<f64>,
    pub ndcg_10: Option<f64>,
    pub recall_10: Option<f64>,
    pub cs: f64,
    pub rouge1: f64,
    pub bleu: f64,
}
