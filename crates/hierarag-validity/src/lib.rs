//! Does a synthetic benchmark tell what the questions people actually ask tell
//! (docs/design.md, "Validity")? The paper's open problem: synthetic queries differ from human
//! ones, so its granularity findings should be checked against a human-written benchmark.
//!
//! Input is both benchmarks of one run, each with its questions ([`Question`]: categories from
//! the design or from the tagger, and properties measured without a model) and each system's
//! scores and analysis on it ([`SystemResult`]). Output is a [`Validity`] (`validity.json`):
//!
//! 1. **coverage**: the human category mix beside the design's, per dimension and level, with
//!    scipy's `chisquare` of the human counts against the design's proportions; categories
//!    frequent among people but rare in the benchmark, and the reverse; the human questions the
//!    tagger could not place confidently;
//! 2. **the questions themselves**: length, overlap with the relevant document, the relevant
//!    document's BM25 rank, reference length and refusals expected, over all questions and per
//!    category, each with scipy's `mannwhitneyu` and the rank-biserial effect;
//! 3. **per-category agreement**: per system, metric and level, the category means on both
//!    sides with intervals, and scipy's `spearmanr` and `kendalltau` between them;
//! 4. **granularity**: per system and dimension, DiscPow (raw and noise-corrected) and the noise
//!    floor per level, and the recommended level, on both sides;
//! 5. **system decisions** (two or more systems): Kendall's τ-b between the two system orders,
//!    overall and per category, with a bootstrap interval over questions; and every pair's
//!    decision (paired t-test at the analysis' α) on both sides: holds, vanishes, flips or
//!    appears, and the share that transfers;
//! 6. **prediction**: each system's human mean predicted from the synthetic category means
//!    under the human mix (post-stratification), beside the observed one;
//! 7. **a verdict in words**.
//!
//! [`question`] reads a benchmark record (and a human question's tag) into a [`Question`].
//! Pure: no I/O; every resample is seeded ([`Settings::seed`]).

mod agreement;
mod coverage;
mod decisions;
mod measure;
mod model;
pub mod ppi;
mod properties;
mod verdict;

use std::collections::HashMap;

use hierarag_analysis::{Analysis, Metric, Scores};
use hierarag_records::CategoryRef;
use hierarag_taxonomy::{Granularity, Taxonomy};
use serde::{Deserialize, Serialize};

pub use measure::{PLACED_CONFIDENCE, question};
pub use model::{
    CategoryMeans, CategoryOrder, CategoryShare, Coverage, Decision, Decisions,
    GranularityAgreement, LevelAgreement, LevelDiscrimination, Mix, PairDecision, Prediction,
    Property, PropertyComparison, RankCorrelation, Transfer, Unplaced, Validity,
};

/// One benchmark question as the check reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    pub id: String,
    /// Its categories: a generated question's from the design, a human question's from the
    /// tagger (one per tagged dimension and level).
    pub categories: Vec<CategoryRef>,
    /// The dimensions the tagger placed it on without confidence.
    pub unplaced: Vec<String>,
    /// Its properties that need no model; `None` where one cannot be measured (no relevant
    /// document, no reference answer).
    pub words: f64,
    pub overlap: Option<f64>,
    pub gold_rank: Option<f64>,
    pub answer_words: Option<f64>,
    pub refusal_expected: bool,
    /// It has a reference answer: without one the text metrics and the judge's correctness
    /// mean nothing, and are left out for it.
    pub has_reference: bool,
}

impl Question {
    fn property(&self, property: Property) -> Option<f64> {
        match property {
            Property::Words => Some(self.words),
            Property::Overlap => self.overlap,
            Property::GoldRank => self.gold_rank,
            Property::AnswerWords => self.answer_words,
            Property::RefusalExpected => Some(f64::from(u8::from(self.refusal_expected))),
        }
    }

    fn category(&self, dimension: &str, level: Granularity) -> Option<&str> {
        self.categories
            .iter()
            .find(|c| c.dimension == dimension && c.level == level)
            .map(|c| c.category.as_str())
    }
}

/// One system's results on one benchmark.
#[derive(Debug, Clone, PartialEq)]
pub struct SystemResult {
    pub name: String,
    /// Its scores by question id.
    pub scores: HashMap<String, Scores>,
    /// Its analysis (`hierarag analyze`) of this benchmark.
    pub analysis: Analysis,
}

/// One benchmark with its systems' results.
#[derive(Debug, Clone, PartialEq)]
pub struct Benchmark {
    pub questions: Vec<Question>,
    pub systems: Vec<SystemResult>,
}

/// How the check runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// The metric of the system decisions, the prediction and the verdict.
    pub metric: Metric,
    /// The metrics whose per-category agreement is reported (those both sides have).
    pub metrics: Vec<Metric>,
    /// Resamples of the intervals; 0 turns them off.
    pub bootstrap: usize,
    /// Coverage of the intervals; α = 1 − confidence for every test.
    pub confidence: f64,
    pub seed: u64,
}

impl Settings {
    fn alpha(&self) -> f64 {
        1.0 - self.confidence
    }
}

/// What the comparisons share: the taxonomy, the levels both sides place questions on, each
/// system's results on both sides, both benchmarks and the settings.
#[derive(Clone, Copy)]
pub(crate) struct Sides<'a> {
    taxonomy: &'a Taxonomy,
    levels: &'a [coverage::Level],
    pairs: &'a [(&'a SystemResult, &'a SystemResult)],
    synthetic: &'a Benchmark,
    human: &'a Benchmark,
    settings: &'a Settings,
}

/// Below this many human questions, the verdict says how little can be concluded.
pub const FEW_HUMAN_QUESTIONS: usize = 30;

/// Sets the synthetic benchmark beside the human-written one (see the crate docs).
pub fn validity(
    taxonomy: &Taxonomy,
    synthetic: &Benchmark,
    human: &Benchmark,
    settings: &Settings,
) -> Validity {
    let mut notes = Vec::new();
    let systems: Vec<String> = synthetic
        .systems
        .iter()
        .filter(|s| human.systems.iter().any(|h| h.name == s.name))
        .map(|s| s.name.clone())
        .collect();
    for (side, own, other) in [
        ("synthetic", synthetic, human),
        ("human-written", human, synthetic),
    ] {
        for system in &own.systems {
            if !other.systems.iter().any(|o| o.name == system.name) {
                notes.push(format!(
                    "{}: answered only the {side} benchmark, so it is left out of every \
comparison",
                    system.name
                ));
            }
        }
    }
    let find = |b: &'_ Benchmark, name: &str| -> usize {
        b.systems
            .iter()
            .position(|s| s.name == name)
            .expect("a system of both sides")
    };
    let pairs: Vec<(&SystemResult, &SystemResult)> = systems
        .iter()
        .map(|name| {
            (
                &synthetic.systems[find(synthetic, name)],
                &human.systems[find(human, name)],
            )
        })
        .collect();
    if !human.questions.is_empty() && human.questions.iter().all(|q| !q.has_reference) {
        notes.push(
            "the human questions have no reference answers: CS, ROUGE-1, BLEU and the judge's \
correctness are not compared on them, and the granularity findings are left out unless the \
analysed metric is a retrieval metric (--metric ndcg_10)"
                .to_owned(),
        );
    }
    let levels = coverage::levels(taxonomy, synthetic, human);
    let coverage = coverage::coverage(taxonomy, &levels, synthetic, human, &mut notes);
    let unplaced = human
        .questions
        .iter()
        .filter(|q| !q.unplaced.is_empty())
        .map(|q| Unplaced {
            id: q.id.clone(),
            dimensions: q.unplaced.clone(),
        })
        .collect();
    let properties = properties::compare(&levels, synthetic, human, &mut notes);
    let sides = Sides {
        taxonomy,
        levels: &levels,
        pairs: &pairs,
        synthetic,
        human,
        settings,
    };
    let agreement = agreement::per_category(&sides, &mut notes);
    let granularity =
        if needs_reference(settings.metric) && human.questions.iter().all(|q| !q.has_reference) {
            Vec::new()
        } else {
            agreement::granularity(taxonomy, &pairs)
        };
    let decisions = decisions::decisions(&sides, &mut notes);
    let predicted = decisions::predictions(&sides);
    let mut validity = Validity {
        settings: settings.clone(),
        synthetic_questions: synthetic.questions.len(),
        human_questions: human.questions.len(),
        systems,
        verdict: Vec::new(),
        coverage,
        unplaced,
        properties,
        agreement,
        granularity,
        decisions,
        predicted,
        notes,
    };
    validity.verdict = verdict::verdict(&validity);
    validity
}

/// The metric's value for `question`: `None` when its system has none, or when the metric
/// compares the answer with a reference the question lacks.
fn value(system: &SystemResult, question: &Question, metric: Metric) -> Option<f64> {
    if !question.has_reference && needs_reference(metric) {
        return None;
    }
    system
        .scores
        .get(&question.id)
        .and_then(|s| metric.value(s))
}

/// The metrics that compare the answer with the reference answer.
fn needs_reference(metric: Metric) -> bool {
    matches!(
        metric,
        Metric::Cs | Metric::Rouge1 | Metric::Bleu | Metric::Judge | Metric::JudgeCorrectness
    )
}

/// The metric's values over the questions that have it.
fn values<'a>(
    system: &SystemResult,
    questions: impl Iterator<Item = &'a Question>,
    metric: Metric,
) -> Vec<f64> {
    questions.filter_map(|q| value(system, q, metric)).collect()
}
