//! Refusal precision and recall (docs/design.md, "Unanswerable questions"): with questions
//! marked unanswerable in the benchmark, how often a system refuses the questions it should,
//! and only those, overall and per category.

use std::collections::BTreeMap;

use hierarag_records::CategoryRef;
use hierarag_taxonomy::Granularity;
use serde::{Deserialize, Serialize};

use crate::Observation;

/// Refusals against the questions that should be refused (`analysis.json` `refusals`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Refusals {
    pub overall: RefusalCounts,
    /// One row per (set, dimension, level, category) a question belongs to, in that order; a
    /// factorial question counts under each of its categories.
    pub categories: Vec<CategoryRefusals>,
}

/// The refusals of one group of questions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RefusalCounts {
    pub n: usize,
    /// Questions marked unanswerable (their reference is the refusal).
    pub unanswerable: usize,
    /// Questions the system refused.
    pub refused: usize,
    /// Unanswerable questions the system refused.
    pub refused_unanswerable: usize,
    /// refused_unanswerable / refused: how many refusals were right (None without refusals).
    pub precision: Option<f64>,
    /// refused_unanswerable / unanswerable: how many of the questions that should be refused
    /// were (None without unanswerable questions).
    pub recall: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CategoryRefusals {
    pub set: String,
    pub dimension: String,
    pub level: Granularity,
    pub category: String,
    #[serde(flatten)]
    pub counts: RefusalCounts,
}

impl RefusalCounts {
    fn of<'a>(observations: impl IntoIterator<Item = &'a Observation>) -> RefusalCounts {
        let (mut n, mut unanswerable, mut refused, mut both) = (0, 0, 0, 0);
        for o in observations {
            n += 1;
            unanswerable += usize::from(o.unanswerable);
            refused += usize::from(o.scores.refused);
            both += usize::from(o.unanswerable && o.scores.refused);
        }
        let share = |part: usize, whole: usize| (whole > 0).then(|| part as f64 / whole as f64);
        RefusalCounts {
            n,
            unanswerable,
            refused,
            refused_unanswerable: both,
            precision: share(both, refused),
            recall: share(both, unanswerable),
        }
    }
}

/// The refusals of `observations`; `None` when no question is marked unanswerable (then every
/// refusal is simply wrong, and the refusal rate says it).
pub fn refusals(observations: &[Observation]) -> Option<Refusals> {
    if !observations.iter().any(|o| o.unanswerable) {
        return None;
    }
    let mut groups: BTreeMap<(&str, &CategoryRef), Vec<&Observation>> = BTreeMap::new();
    for o in observations {
        for category in &o.categories {
            groups
                .entry((o.set.as_str(), category))
                .or_default()
                .push(o);
        }
    }
    let categories = groups
        .into_iter()
        .map(|((set, category), members)| CategoryRefusals {
            set: set.to_string(),
            dimension: category.dimension.clone(),
            level: category.level,
            category: category.category.clone(),
            counts: RefusalCounts::of(members),
        })
        .collect();
    // A question analysed under several sets (an import per dimension, its tags) is
    // `<id>@…` in each: counted once overall.
    let mut seen = std::collections::HashSet::new();
    let distinct = observations
        .iter()
        .filter(|o| seen.insert(o.id.split('@').next().unwrap_or(&o.id)));
    Some(Refusals {
        overall: RefusalCounts::of(distinct),
        categories,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Scores;

    fn question(id: &str, category: &str, unanswerable: bool, refused: bool) -> Observation {
        Observation {
            id: id.into(),
            set: "an".into(),
            categories: vec![CategoryRef {
                dimension: "an".into(),
                level: Granularity::Coarse,
                category: category.into(),
            }],
            unanswerable,
            scores: Scores {
                refused,
                ..Scores::default()
            },
            texts: None,
        }
    }

    #[test]
    fn precision_is_over_the_refusals_and_recall_over_the_questions_to_refuse() {
        let observations = [
            question("a", "answerable", false, false),
            question("b", "answerable", false, true),
            question("c", "answerable", false, false),
            question("d", "unanswerable", true, true),
            question("e", "unanswerable", true, true),
            question("f", "unanswerable", true, false),
        ];
        let found = refusals(&observations).unwrap();
        assert_eq!(
            found.overall,
            RefusalCounts {
                n: 6,
                unanswerable: 3,
                refused: 3,
                refused_unanswerable: 2,
                precision: Some(2.0 / 3.0),
                recall: Some(2.0 / 3.0),
            }
        );
        let [answerable, unanswerable] = &found.categories[..] else {
            panic!("{:?}", found.categories)
        };
        assert_eq!(answerable.category, "answerable");
        assert_eq!(
            (answerable.counts.precision, answerable.counts.recall),
            (Some(0.0), None)
        );
        assert_eq!(
            (unanswerable.counts.precision, unanswerable.counts.recall),
            (Some(1.0), Some(2.0 / 3.0))
        );
        // Without unanswerable questions there is nothing to measure.
        assert_eq!(refusals(&observations[..3]), None);
    }
}
