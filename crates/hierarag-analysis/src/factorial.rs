//! Factorial sets (questions with one category per factor): cells, gaps, pooled and unweighted
//! marginal means, main effects, the interaction contrast and a two-way ANOVA (Table 4).

use std::collections::BTreeMap;

use hierarag_stats as stats;
use hierarag_taxonomy::Taxonomy;

use crate::input::{Observation, Settings};
use crate::levels::{interval, mean_metric, resample_means};
use crate::means::{estimate, means};
use crate::model::{
    Anova, AnovaTerm, Effect, Estimate, Factor, Factorial, FactorialCell, Gap, Marginal,
};

/// Analyses one factorial set; `observations` all carry the same dimensions in the same order
/// (checked by the caller).
pub(crate) fn factorial(
    set: &str,
    observations: &[&Observation],
    taxonomy: &Taxonomy,
    settings: &Settings,
) -> Factorial {
    let mut notes = Vec::new();
    let factors: Vec<Factor> = observations[0]
        .categories
        .iter()
        .enumerate()
        .map(|(f, first)| {
            let present: BTreeMap<&str, ()> = observations
                .iter()
                .map(|o| (o.categories[f].category.as_str(), ()))
                .collect();
            let mut categories: Vec<String> = taxonomy
                .dimension(&first.dimension)
                .and_then(|d| d.level(first.level))
                .map(|level| {
                    level
                        .categories
                        .iter()
                        .filter(|c| present.contains_key(c.name.as_str()))
                        .map(|c| c.name.clone())
                        .collect()
                })
                .unwrap_or_default();
            for name in present.keys() {
                if !categories.iter().any(|c| c == name) {
                    categories.push((*name).to_owned());
                }
            }
            Factor {
                dimension: first.dimension.clone(),
                level: first.level,
                categories,
            }
        })
        .collect();

    // Cells in factor order, the first factor outermost.
    let mut keys: Vec<Vec<usize>> = vec![Vec::new()];
    for factor in &factors {
        keys = keys
            .iter()
            .flat_map(|key| {
                (0..factor.categories.len()).map(move |c| {
                    let mut key = key.clone();
                    key.push(c);
                    key
                })
            })
            .collect();
    }
    let key_of = |o: &Observation| -> Vec<usize> {
        o.categories
            .iter()
            .zip(&factors)
            .map(|(c, factor)| {
                factor
                    .categories
                    .iter()
                    .position(|name| *name == c.category)
                    .expect("every category present is a factor category")
            })
            .collect()
    };
    let mut members: BTreeMap<Vec<usize>, Vec<&Observation>> =
        keys.iter().map(|k| (k.clone(), Vec::new())).collect();
    for o in observations {
        members.entry(key_of(o)).or_default().push(o);
    }
    let cell_questions: Vec<&Vec<&Observation>> = keys.iter().map(|k| &members[k]).collect();
    let samples: Vec<Vec<f64>> = cell_questions
        .iter()
        .map(|qs| qs.iter().map(|o| settings.metric.of(&o.scores)).collect())
        .collect();
    let replicates = resample_means(&samples, settings, &format!("bootstrap/factorial/{set}"));
    let cell_means: Vec<f64> = cell_questions
        .iter()
        .map(|qs| mean_metric(qs, settings))
        .collect();
    let cells: Vec<FactorialCell> = keys
        .iter()
        .enumerate()
        .map(|(i, key)| FactorialCell {
            categories: key
                .iter()
                .zip(&factors)
                .map(|(&c, f)| f.categories[c].clone())
                .collect(),
            n: cell_questions[i].len(),
            means: means(cell_questions[i]),
            metric: estimate(
                cell_means[i],
                interval(replicates.iter().map(|r| r[i]), settings),
            ),
        })
        .collect();
    for cell in &cells {
        if cell.n == 0 {
            notes.push(format!(
                "cell {} has no scored questions",
                cell.categories.join(" × ")
            ));
        }
    }

    let mut factorial = Factorial {
        set: set.to_owned(),
        factors: factors.clone(),
        cells,
        gaps: Vec::new(),
        marginals: Vec::new(),
        main_effects: Vec::new(),
        interaction: None,
        anova: None,
        notes,
    };
    if factors.len() != 2 {
        factorial.notes.push(format!(
            "{} factors: gaps, marginal means, effects and the ANOVA are computed for two \
factors only",
            factors.len()
        ));
        return factorial;
    }
    let (a, b) = (&factors[0], &factors[1]);
    let index = |i: usize, j: usize| i * b.categories.len() + j;
    let complete = factorial.cells.iter().all(|c| c.n > 0);

    for (i, within) in a.categories.iter().enumerate() {
        for j in 1..b.categories.len() {
            let (from, to) = (cell_means[index(i, 0)], cell_means[index(i, j)]);
            if from.is_finite() && to.is_finite() {
                factorial.gaps.push(Gap {
                    within: within.clone(),
                    from: b.categories[0].clone(),
                    to: b.categories[j].clone(),
                    value: to - from,
                });
            }
        }
    }

    // Marginals: pooled over the questions, unweighted over the cell means.
    let unweighted = |means: &[f64], f: usize, c: usize| -> f64 {
        let cells: Vec<f64> = if f == 0 {
            (0..b.categories.len())
                .map(|j| means[index(c, j)])
                .collect()
        } else {
            (0..a.categories.len())
                .map(|i| means[index(i, c)])
                .collect()
        };
        stats::mean(&cells).unwrap_or(f64::NAN)
    };
    for (f, factor) in factors.iter().enumerate() {
        for (c, category) in factor.categories.iter().enumerate() {
            let questions: Vec<&Observation> = observations
                .iter()
                .filter(|o| o.categories[f].category == *category)
                .copied()
                .collect();
            factorial.marginals.push(Marginal {
                dimension: factor.dimension.clone(),
                category: category.clone(),
                n: questions.len(),
                pooled: means(&questions),
                unweighted: unweighted(&cell_means, f, c),
            });
        }
    }
    if !complete {
        factorial
            .notes
            .push("an empty cell leaves the main effects, interaction and ANOVA undefined".into());
        return factorial;
    }

    // Main effects from the unweighted marginals: the difference for two categories, the
    // range for more.
    for (f, factor) in factors.iter().enumerate() {
        let effect = |means: &[f64]| -> f64 {
            let marginals: Vec<f64> = (0..factor.categories.len())
                .map(|c| unweighted(means, f, c))
                .collect();
            if marginals.len() == 2 {
                marginals[1] - marginals[0]
            } else {
                stats::range(&marginals).unwrap_or(f64::NAN)
            }
        };
        let contrast = if factor.categories.len() == 2 {
            format!(
                "{}: {} − {}",
                factor.dimension, factor.categories[1], factor.categories[0]
            )
        } else {
            format!(
                "{}: range of the unweighted marginal means",
                factor.dimension
            )
        };
        factorial.main_effects.push(Effect {
            contrast,
            value: Estimate {
                value: effect(&cell_means),
                ci: interval(replicates.iter().map(|r| effect(r)), settings),
            },
        });
    }
    if a.categories.len() == 2 && b.categories.len() == 2 {
        let contrast =
            |m: &[f64]| (m[index(1, 1)] - m[index(1, 0)]) - (m[index(0, 1)] - m[index(0, 0)]);
        factorial.interaction = Some(Effect {
            contrast: format!(
                "({a1}: {b1} − {b0}) − ({a0}: {b1} − {b0})",
                a0 = a.categories[0],
                a1 = a.categories[1],
                b0 = b.categories[0],
                b1 = b.categories[1]
            ),
            value: Estimate {
                value: contrast(&cell_means),
                ci: interval(replicates.iter().map(|r| contrast(r)), settings),
            },
        });
    }
    if a.categories.len() < 2 || b.categories.len() < 2 {
        factorial
            .notes
            .push("a factor with one category: no ANOVA".into());
        return factorial;
    }
    let mut y = Vec::with_capacity(observations.len());
    let mut a_idx = Vec::with_capacity(observations.len());
    let mut b_idx = Vec::with_capacity(observations.len());
    for o in observations {
        let key = key_of(o);
        y.push(settings.metric.of(&o.scores));
        a_idx.push(key[0]);
        b_idx.push(key[1]);
    }
    match stats::two_way_anova(&y, &a_idx, &b_idx) {
        Ok(table) => {
            let term = |t: &stats::AnovaTerm| AnovaTerm {
                sum_sq: t.sum_sq,
                df: t.df,
                f: t.f,
                p: t.p,
            };
            factorial.anova = Some(Anova {
                first: term(&table.a),
                second: term(&table.b),
                interaction: term(&table.interaction),
                residual_sum_sq: table.residual_sum_sq,
                residual_df: table.residual_df,
            });
        }
        Err(error) => factorial.notes.push(format!("no ANOVA: {error}")),
    }
    factorial
}
