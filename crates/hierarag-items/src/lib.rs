//! Which questions carry the signal (issue 46, item analysis). DiscPow says which *categories*
//! separate systems; this says which *questions* do. Over the questions every system has a
//! score for, per question:
//!
//! - its **mean** over the systems (high: easy) and its **pass rate** (the share of systems
//!   scoring at least the threshold);
//! - its **discrimination**: the corrected item-total correlation, Pearson's r across systems
//!   between the question's score and the system's mean over the *other* questions (scipy's
//!   `pearsonr`), with three or more systems;
//! - its **flags**: `saturated` (every system passes: it cannot separate them), `failed` (no
//!   system passes: often a bad reference; check it first), `negative` (neither of those, and it
//!   orders the systems against the rest of the benchmark, r < 0).
//!
//! Per category, the share of informative questions (neither saturated nor failed, r above
//! [`Settings::min_discrimination`]) and their mean discrimination. Pure: no I/O.
//!
//! [`twopl_mml`] fits the two-parameter logistic IRT model to the pass/fail matrix (questions
//! x systems): per question a discrimination and a difficulty on the systems' ability scale,
//! equal to girth 0.8.0's `twopl_mml` (module [`irt`]).

mod core;

use std::collections::HashMap;

pub mod irt;

pub use irt::{IrtError, IrtItem, IrtOptions, TwoPl, twopl_mml};

use hierarag_records::CategoryRef;
use serde::{Deserialize, Serialize};

pub use crate::core::{CoreSet, CoreSettings, HeldOut, HeldOutCheck, core_set};

/// How the analysis runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// A system passes a question at or above this score.
    pub threshold: f64,
    /// A question is informative above this discrimination.
    pub min_discrimination: f64,
}

/// A question with its categories.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    pub id: String,
    pub categories: Vec<CategoryRef>,
}

/// One system's scores on the analysed metric, by question id.
#[derive(Debug, Clone, PartialEq)]
pub struct SystemScores {
    pub name: String,
    pub scores: HashMap<String, f64>,
}

/// What a question is flagged for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Flag {
    /// Every system passes it.
    Saturated,
    /// No system passes it.
    Failed,
    /// Neither saturated nor failed, it orders the systems against the rest of the benchmark
    /// (discrimination below 0).
    Negative,
}

/// One question's statistics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    pub id: String,
    pub mean: f64,
    pub pass_rate: f64,
    /// Absent with fewer than three systems, or when the question's or the rest's scores are
    /// the same for every system.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discrimination: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<Flag>,
    /// The 2PL IRT estimates on the pass/fail matrix, with [`IRT_MIN_SYSTEMS`] or more systems;
    /// absent for a saturated or failed question, or when the fit could not be made (a note
    /// says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irt: Option<IrtItem>,
}

/// One category's questions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CategoryItems {
    #[serde(flatten)]
    pub category: CategoryRef,
    pub n: usize,
    /// Neither saturated nor failed, discrimination above the minimum.
    pub informative: usize,
    pub informative_share: f64,
    /// The mean discrimination of its questions that have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_discrimination: Option<f64>,
}

/// The item analysis of a run's systems.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Items {
    pub settings: Settings,
    pub systems: Vec<String>,
    pub items: Vec<Item>,
    pub categories: Vec<CategoryItems>,
    /// What could not be computed, and why.
    pub notes: Vec<String>,
}

/// `items.json`: the item analysis of a run's systems on one metric, and its core set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemsReport {
    /// The analysed metric's name (`cs`, `judge_correctness`, …).
    pub metric: String,
    #[serde(flatten)]
    pub items: Items,
    pub core: CoreSet,
}

/// The 2PL fit is made with this many systems or more: with fewer, a question's two parameters
/// rest on fewer pass/fail answers than a fit can use.
pub const IRT_MIN_SYSTEMS: usize = 5;

/// Analyses the questions every one of `systems` has a score for.
pub fn items(questions: &[Question], systems: &[SystemScores], settings: &Settings) -> Items {
    let mut notes = Vec::new();
    let common = common_questions(questions, systems);
    if common.len() < questions.len() {
        notes.push(format!(
            "{} of {} questions lack a score of some system and are left out",
            questions.len() - common.len(),
            questions.len()
        ));
    }
    if systems.len() < 3 {
        notes.push(format!(
            "the discrimination of a question needs three or more systems (there {} {}): only \
means, pass rates and the saturated and failed flags are given",
            if systems.len() == 1 { "is" } else { "are" },
            systems.len()
        ));
    }
    // scores[s][q]: system s on the q-th common question; totals[s]: their sum.
    let scores: Vec<Vec<f64>> = systems
        .iter()
        .map(|s| common.iter().map(|q| s.scores[&q.id]).collect())
        .collect();
    let totals: Vec<f64> = scores.iter().map(|row| row.iter().sum()).collect();
    let n = common.len();
    let mut items: Vec<Item> = common
        .iter()
        .enumerate()
        .map(|(q, question)| {
            let x: Vec<f64> = scores.iter().map(|row| row[q]).collect();
            let passed = x.iter().filter(|&&v| v >= settings.threshold).count();
            let pass_rate = passed as f64 / x.len().max(1) as f64;
            let discrimination = (systems.len() >= 3 && n >= 2)
                .then(|| {
                    let rest: Vec<f64> = totals
                        .iter()
                        .zip(&x)
                        .map(|(total, v)| (total - v) / (n - 1) as f64)
                        .collect();
                    hierarag_stats::pearson(&x, &rest).map(|c| c.r)
                })
                .flatten();
            let mut flags = Vec::new();
            if !systems.is_empty() && passed == systems.len() {
                flags.push(Flag::Saturated);
            }
            if passed == 0 && !systems.is_empty() {
                flags.push(Flag::Failed);
            }
            // A saturated or failed question's spread is below the threshold's resolution:
            // its sign says nothing.
            if flags.is_empty() && discrimination.is_some_and(|r| r < 0.0) {
                flags.push(Flag::Negative);
            }
            Item {
                id: question.id.clone(),
                mean: x.iter().sum::<f64>() / x.len().max(1) as f64,
                pass_rate,
                discrimination,
                flags,
                irt: None,
            }
        })
        .collect();
    if systems.len() >= IRT_MIN_SYSTEMS {
        let responses: Vec<Vec<u8>> = (0..n)
            .map(|q| {
                scores
                    .iter()
                    .map(|row| u8::from(row[q] >= settings.threshold))
                    .collect()
            })
            .collect();
        match twopl_mml(&responses, &IrtOptions::default()) {
            Ok(fit) => {
                for (item, estimate) in items.iter_mut().zip(fit.items) {
                    item.irt = estimate;
                }
                if !fit.converged {
                    notes.push(format!(
                        "the 2PL fit stopped after {} passes without converging",
                        fit.iterations
                    ));
                }
            }
            Err(error) => notes.push(format!("no 2PL IRT fit: {error}")),
        }
    } else if systems.len() >= 3 {
        notes.push(format!(
            "the 2PL IRT fit needs {IRT_MIN_SYSTEMS} or more systems (there are {})",
            systems.len()
        ));
    }
    let categories = by_category(&common)
        .into_iter()
        .map(|(category, members)| {
            let informative = members
                .iter()
                .filter(|&&q| {
                    let item = &items[q];
                    item.flags.is_empty()
                        && item
                            .discrimination
                            .is_some_and(|r| r > settings.min_discrimination)
                })
                .count();
            let with: Vec<f64> = members
                .iter()
                .filter_map(|&q| items[q].discrimination)
                .collect();
            CategoryItems {
                category,
                n: members.len(),
                informative,
                informative_share: informative as f64 / members.len() as f64,
                mean_discrimination: hierarag_stats::mean(&with),
            }
        })
        .collect();
    Items {
        settings: settings.clone(),
        systems: systems.iter().map(|s| s.name.clone()).collect(),
        items,
        categories,
        notes,
    }
}

/// The questions every one of `systems` has a score for, in order.
fn common_questions<'a>(questions: &'a [Question], systems: &[SystemScores]) -> Vec<&'a Question> {
    questions
        .iter()
        .filter(|q| systems.iter().all(|s| s.scores.contains_key(&q.id)))
        .collect()
}

/// The categories of `questions` in order of first appearance, each with its members' indices.
fn by_category(questions: &[&Question]) -> Vec<(CategoryRef, Vec<usize>)> {
    let mut groups: Vec<(CategoryRef, Vec<usize>)> = Vec::new();
    for (q, question) in questions.iter().enumerate() {
        for category in &question.categories {
            match groups.iter_mut().find(|(c, _)| c == category) {
                Some((_, members)) => members.push(q),
                None => groups.push((category.clone(), vec![q])),
            }
        }
    }
    groups
}
