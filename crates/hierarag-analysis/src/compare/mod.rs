//! The comparison of several RAG systems on one benchmark (docs/design.md, "Comparison"):
//! where they differ, whether the difference is real, and which granularity shows it.
//!
//! Input is each system's scored questions ([`SystemScores`]); every statistic is over the
//! questions all of them have a score for, paired by question. Output is a [`Comparison`]
//! (`comparison.json`):
//!
//! - each system's own analysis side by side (category means with intervals, DiscPow, the
//!   recommended granularity per dimension, and whether the systems agree on it);
//! - per metric, over all questions and per (set, dimension, level) and category, every pair's
//!   mean difference `b − a` with a paired bootstrap interval, scipy's paired t-test and
//!   Wilcoxon signed-rank test (Holm-adjusted over a level's categories), wins, ties and
//!   losses, and the spread of the difference over the level's categories;
//! - per level and metric, the mixed ANOVA of pingouin (category between questions, system
//!   within) whose interaction says whether the difference depends on the category, and with
//!   three or more systems Kendall's τ of each category's ranking against the overall one;
//! - per dimension, the level whose interaction is largest, in words;
//! - the questions no system answers.

mod model;

use std::collections::HashMap;

use hierarag_stats as stats;
use hierarag_stats::derive_seed;
use hierarag_taxonomy::Taxonomy;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::input::{Metric, Observation, Settings};
use crate::levels::{self, LevelGroup, interval};
use crate::model::{Analysis, Estimate};

pub use model::{
    AnovaRow, CategoryCount, CategoryDifference, CategoryRank, Comparison, Difference,
    DimensionComparison, LevelComparison, LevelMetric, MetricOverall, MixedAnova, PairLevel,
    PairOverall, RankChanges, Separating, SystemCount, SystemLevel, SystemRecommendation,
    Unanswered,
};

/// One system's scored questions.
#[derive(Debug, Clone, PartialEq)]
pub struct SystemScores {
    pub name: String,
    pub observations: Vec<Observation>,
}

/// The threshold below which a score counts as not answering, by default: CS 0.5, ROUGE-1
/// 0.2, BLEU 10, the retrieval metrics 0.1, the judge 0.5 (its correctness 1.5: grades 0
/// and 1); for the refusal rate and the judge's hallucination grade (where higher is worse)
/// none.
pub fn default_threshold(metric: Metric) -> f64 {
    match metric {
        Metric::Cs => 0.5,
        Metric::Rouge1 => 0.2,
        Metric::Bleu => 10.0,
        Metric::Ap | Metric::Ndcg10 | Metric::Recall10 | Metric::Rr => 0.1,
        Metric::Refused | Metric::JudgeHallucination => f64::NEG_INFINITY,
        Metric::Judge => 0.5,
        Metric::JudgeCorrectness => 1.5,
    }
}

/// Compares `systems` (two or more, distinct names) on the questions all of them scored.
pub fn compare(
    systems: &[SystemScores],
    taxonomy: &Taxonomy,
    settings: &Settings,
    threshold: f64,
) -> Comparison {
    let mut notes = Vec::new();
    let names: Vec<String> = systems.iter().map(|s| s.name.clone()).collect();

    // The questions every system scored, in the first system's order.
    let by_id: Vec<HashMap<&str, &Observation>> = systems
        .iter()
        .map(|s| s.observations.iter().map(|o| (o.id.as_str(), o)).collect())
        .collect();
    let common_ids: Vec<&str> = systems
        .first()
        .map(|first| {
            first
                .observations
                .iter()
                .map(|o| o.id.as_str())
                .filter(|id| by_id.iter().all(|m| m.contains_key(id)))
                .collect()
        })
        .unwrap_or_default();
    let counts: Vec<SystemCount> = systems
        .iter()
        .map(|s| SystemCount {
            name: s.name.clone(),
            scored: s.observations.len(),
            dropped: s.observations.len() - common_ids.len(),
        })
        .collect();
    for count in counts.iter().filter(|c| c.dropped > 0) {
        notes.push(format!(
            "{}: {} of its {} scored questions are not scored for every system and are left \
out of the comparison",
            count.name, count.dropped, count.scored
        ));
    }
    // common[s][q]: system s's observation of the q-th common question.
    let common: Vec<Vec<Observation>> = by_id
        .iter()
        .map(|m| common_ids.iter().map(|id| (*m[id]).clone()).collect())
        .collect();
    if systems.len() < 2 || common_ids.is_empty() {
        notes.push(if systems.len() < 2 {
            "a comparison needs two or more systems".to_owned()
        } else {
            "no question is scored for every system: nothing to compare".to_owned()
        });
        return Comparison {
            settings: settings.clone(),
            threshold,
            systems: counts,
            common: common_ids.len(),
            overall: Vec::new(),
            levels: Vec::new(),
            dimensions: Vec::new(),
            unanswered: Vec::new(),
            notes,
        };
    }

    // Each system's own analysis of the common questions, on both cores.
    let analyses: Vec<Analysis> = std::thread::scope(|scope| {
        let handles: Vec<_> = common
            .iter()
            .map(|observations| {
                scope.spawn(move || crate::analyze(observations, taxonomy, settings))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("an analysis does not panic"))
            .collect()
    });

    // The metrics each system has (a system that names no document has no retrieval metric).
    let metrics: Vec<(Metric, Vec<usize>)> = Metric::ALL
        .into_iter()
        .filter_map(|metric| {
            let with: Vec<usize> = (0..systems.len())
                .filter(|&s| common[s].iter().any(|o| metric.value(&o.scores).is_some()))
                .collect();
            if with.len() < systems.len() && with.len() >= 2 {
                let without: Vec<&str> = (0..systems.len())
                    .filter(|s| !with.contains(s))
                    .map(|s| names[s].as_str())
                    .collect();
                notes.push(format!(
                    "{metric}: {} {}, so the {metric} comparison is among the others",
                    without.join(", "),
                    if metric.is_judge() {
                        "has no judge grades"
                    } else {
                        "named no document"
                    }
                ));
            }
            (with.len() >= 2).then_some((metric, with))
        })
        .collect();

    let overall = metrics
        .iter()
        .filter_map(|(metric, with)| {
            let overall = metric_overall(*metric, with, &common, &names, settings);
            if overall.n == 0 {
                notes.push(format!(
                    "{metric}: no question has it for every one of {}",
                    with.iter()
                        .map(|&s| names[s].as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            (overall.n > 0).then_some(overall)
        })
        .collect();

    // Levels, grouped on the first system's observations (categories are the benchmark's).
    let position: HashMap<&str, usize> = common_ids
        .iter()
        .enumerate()
        .map(|(q, id)| (*id, q))
        .collect();
    let single: Vec<&Observation> = common[0]
        .iter()
        .filter(|o| o.categories.len() == 1)
        .collect();
    let groups = levels::group(&single, taxonomy);
    let level_comparisons: Vec<LevelComparison> = groups
        .iter()
        .map(|group| {
            level_comparison(
                group, &position, &common, &metrics, &names, &analyses, settings,
            )
        })
        .collect();

    let dimensions = dimensions(&analyses, &level_comparisons, &names, settings);
    let unanswered = unanswered(&common, settings.metric, threshold);
    Comparison {
        settings: settings.clone(),
        threshold,
        systems: counts,
        common: common_ids.len(),
        overall,
        levels: level_comparisons,
        dimensions,
        unanswered,
        notes,
    }
}

/// The values of `metric` of systems `with` for questions `qs`, keeping only the questions all
/// of them have it for: `(kept question positions, values[s][i])`.
fn values_of(
    metric: Metric,
    with: &[usize],
    common: &[Vec<Observation>],
    qs: impl Iterator<Item = usize>,
) -> (Vec<usize>, Vec<Vec<f64>>) {
    let mut kept = Vec::new();
    let mut values = vec![Vec::new(); with.len()];
    for q in qs {
        let row: Option<Vec<f64>> = with
            .iter()
            .map(|&s| metric.value(&common[s][q].scores))
            .collect();
        if let Some(row) = row {
            kept.push(q);
            for (column, value) in values.iter_mut().zip(row) {
                column.push(value);
            }
        }
    }
    (kept, values)
}

/// One metric over every common question.
fn metric_overall(
    metric: Metric,
    with: &[usize],
    common: &[Vec<Observation>],
    names: &[String],
    settings: &Settings,
) -> MetricOverall {
    let (kept, values) = values_of(metric, with, common, 0..common[0].len());
    let label = format!("compare/overall/{metric}");
    let replicates = joint_replicates(std::slice::from_ref(&values), settings, &label);
    let means: Vec<f64> = values.iter().map(|v| mean(v)).collect();
    let pairs = pairs(with.len())
        .map(|(i, j)| PairOverall {
            a: names[with[i]].clone(),
            b: names[with[j]].clone(),
            diff: difference(
                &values[i],
                &values[j],
                interval(replicates.iter().map(|r| r[0][j] - r[0][i]), settings),
            ),
        })
        .collect();
    MetricOverall {
        metric,
        systems: with.iter().map(|&s| names[s].clone()).collect(),
        means,
        n: kept.len(),
        pairs,
    }
}

/// Every pair `(i, j)` with `i < j` of `n` systems.
fn pairs(n: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..n).flat_map(move |i| (i + 1..n).map(move |j| (i, j)))
}

fn mean(values: &[f64]) -> f64 {
    // `+ 0.0` turns a mean of -0.0 into 0.0.
    stats::mean(values).map_or(f64::NAN, |m| m + 0.0)
}

/// The paired difference `b − a` with its interval.
fn difference(a: &[f64], b: &[f64], ci: Option<[f64; 2]>) -> Difference {
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| y - x).collect();
    let t = stats::paired_t(b, a);
    let w = stats::wilcoxon(b, a);
    let finite = |x: f64| x.is_finite().then_some(x);
    Difference {
        n: d.len(),
        mean: Estimate {
            value: mean(&d),
            ci,
        },
        t: t.and_then(|t| finite(t.t)),
        t_p: t.and_then(|t| finite(t.p)),
        // `+ 0.0`: min(R+, R−) of no rank is −0.0.
        w: w.filter(|w| w.p.is_finite()).map(|w| w.statistic + 0.0),
        w_p: w.and_then(|w| finite(w.p)),
        wins: d.iter().filter(|&&x| x > 0.0).count(),
        ties: d.iter().filter(|&&x| x == 0.0).count(),
        losses: d.iter().filter(|&&x| x < 0.0).count(),
    }
}

/// Bootstrap replicates of every system's mean in every stratum, with the questions of a
/// stratum resampled jointly for all systems (so differences are paired): `samples[k][s]` is
/// system s's values in stratum k, all systems with the same questions; the result's
/// `[r][k][s]` is the mean in replicate r.
fn joint_replicates(
    samples: &[Vec<Vec<f64>>],
    settings: &Settings,
    label: &str,
) -> Vec<Vec<Vec<f64>>> {
    let mut rng = ChaCha8Rng::seed_from_u64(derive_seed(settings.seed, label));
    // Row-major per stratum: the systems' values of one question side by side.
    let rows: Vec<(usize, usize, Vec<f64>)> = samples
        .iter()
        .map(|systems| {
            let n = systems.first().map_or(0, Vec::len);
            let width = systems.len();
            let mut row = Vec::with_capacity(n * width);
            for i in 0..n {
                row.extend(systems.iter().map(|values| values[i]));
            }
            (n, width, row)
        })
        .collect();
    (0..settings.bootstrap)
        .map(|_| {
            rows.iter()
                .map(|(n, width, row)| {
                    let mut sums = vec![0.0; *width];
                    if *n == 0 {
                        return vec![f64::NAN; *width];
                    }
                    for _ in 0..*n {
                        let i = rng.random_range(0..*n);
                        for (sum, value) in sums.iter_mut().zip(&row[i * width..(i + 1) * width]) {
                            *sum += value;
                        }
                    }
                    sums.iter().map(|s| s / *n as f64).collect()
                })
                .collect()
        })
        .collect()
}

/// The comparison of one (set, dimension, level).
fn level_comparison(
    group: &LevelGroup<'_>,
    position: &HashMap<&str, usize>,
    common: &[Vec<Observation>],
    metrics: &[(Metric, Vec<usize>)],
    names: &[String],
    analyses: &[Analysis],
    settings: &Settings,
) -> LevelComparison {
    let categories: Vec<CategoryCount> = group
        .categories
        .iter()
        .map(|(name, _, questions)| CategoryCount {
            category: name.clone(),
            n: questions.len(),
        })
        .collect();
    let side_by_side = analyses
        .iter()
        .zip(names)
        .map(|(analysis, name)| {
            let level = analysis.levels.iter().find(|l| {
                l.set == group.set && l.dimension == group.dimension && l.level == group.level
            });
            SystemLevel {
                system: name.clone(),
                means: categories
                    .iter()
                    .map(|c| {
                        level
                            .and_then(|l| l.categories.iter().find(|x| x.category == c.category))
                            .map(|x| x.metric)
                    })
                    .collect(),
                discpow: level.and_then(|l| l.discpow),
                discpow_p: level.and_then(|l| l.discpow_p),
            }
        })
        .collect();
    let question_positions: Vec<Vec<usize>> = group
        .categories
        .iter()
        .map(|(_, _, questions)| questions.iter().map(|o| position[o.id.as_str()]).collect())
        .collect();
    let metrics = metrics
        .iter()
        .map(|(metric, with)| {
            level_metric(
                group,
                &question_positions,
                *metric,
                with,
                common,
                names,
                settings,
            )
        })
        .filter(|m| m.n > 0)
        .collect();
    LevelComparison {
        set: group.set.clone(),
        dimension: group.dimension.clone(),
        level: group.level,
        categories,
        side_by_side,
        metrics,
    }
}

/// One metric of one level: means, pairs, the mixed ANOVA and rank changes.
fn level_metric(
    group: &LevelGroup<'_>,
    question_positions: &[Vec<usize>],
    metric: Metric,
    with: &[usize],
    common: &[Vec<Observation>],
    names: &[String],
    settings: &Settings,
) -> LevelMetric {
    // samples[k][s]: the values of system with[s] on category k.
    let samples: Vec<Vec<Vec<f64>>> = question_positions
        .iter()
        .map(|qs| values_of(metric, with, common, qs.iter().copied()).1)
        .collect();
    let sizes: Vec<usize> = samples
        .iter()
        .map(|s| s.first().map_or(0, Vec::len))
        .collect();
    let n: usize = sizes.iter().sum();
    let label = format!(
        "compare/{}/{}/{}/{metric}",
        group.set, group.dimension, group.level
    );
    let replicates = joint_replicates(&samples, settings, &label);
    let means: Vec<Vec<Option<f64>>> = (0..with.len())
        .map(|s| {
            samples
                .iter()
                .map(|k| (!k[s].is_empty()).then(|| mean(&k[s])))
                .collect()
        })
        .collect();
    let present: Vec<usize> = (0..sizes.len()).filter(|&k| sizes[k] > 0).collect();
    let level_mean = |r: &Vec<Vec<f64>>, s: usize| {
        present
            .iter()
            .map(|&k| r[k][s] * sizes[k] as f64)
            .sum::<f64>()
            / n as f64
    };

    // Each system's values over the whole level, category after category.
    let level_values: Vec<Vec<f64>> = (0..with.len())
        .map(|s| {
            present
                .iter()
                .flat_map(|&k| samples[k][s].iter().copied())
                .collect()
        })
        .collect();
    let level_means: Vec<f64> = level_values.iter().map(|v| mean(v)).collect();

    let pairs = pairs(with.len())
        .map(|(i, j)| {
            let overall = difference(
                &level_values[i],
                &level_values[j],
                interval(
                    replicates
                        .iter()
                        .map(|r| level_mean(r, j) - level_mean(r, i)),
                    settings,
                ),
            );
            let mut categories: Vec<Option<CategoryDifference>> = (0..sizes.len())
                .map(|k| {
                    (sizes[k] > 0).then(|| CategoryDifference {
                        diff: difference(
                            &samples[k][i],
                            &samples[k][j],
                            interval(replicates.iter().map(|r| r[k][j] - r[k][i]), settings),
                        ),
                        t_p_holm: None,
                        w_p_holm: None,
                    })
                })
                .collect();
            holm_over(&mut categories);
            let spread = (present.len() >= 2)
                .then(|| {
                    let diffs = |r: &Vec<Vec<f64>>| -> Vec<f64> {
                        present.iter().map(|&k| r[k][j] - r[k][i]).collect()
                    };
                    let observed: Vec<f64> = present
                        .iter()
                        .map(|&k| mean(&samples[k][j]) - mean(&samples[k][i]))
                        .collect();
                    stats::std_dev(&observed, settings.ddof).map(|value| Estimate {
                        value,
                        ci: interval(
                            replicates.iter().map(|r| {
                                stats::std_dev(&diffs(r), settings.ddof).unwrap_or(f64::NAN)
                            }),
                            settings,
                        ),
                    })
                })
                .flatten();
            PairLevel {
                a: names[with[i]].clone(),
                b: names[with[j]].clone(),
                overall,
                categories,
                spread,
            }
        })
        .collect();

    // Mixed ANOVA: one row per question (the systems' values), grouped by category.
    let mut y = Vec::with_capacity(n);
    let mut groups = Vec::with_capacity(n);
    for &k in &present {
        y.extend((0..sizes[k]).map(|q| {
            (0..with.len())
                .map(|s| samples[k][s][q])
                .collect::<Vec<f64>>()
        }));
        groups.extend(std::iter::repeat_n(k, sizes[k]));
    }
    let anova = stats::mixed_anova(&y, &groups).map(|a| {
        let row = |t: stats::MixedTerm| {
            let finite = |x: f64| x.is_finite().then_some(x);
            AnovaRow {
                ss: t.ss,
                df1: t.df1,
                df2: t.df2,
                f: finite(t.f),
                p: finite(t.p),
                np2: finite(t.np2),
            }
        };
        MixedAnova {
            category: row(a.between),
            system: row(a.within),
            interaction: row(a.interaction),
        }
    });

    let ranks = (with.len() >= 3 && !present.is_empty()).then(|| {
        let overall = &level_means;
        let best = |values: &[f64]| best_of(metric, values).map(|s| names[with[s]].clone());
        RankChanges {
            best: best(overall).unwrap_or_default(),
            categories: group
                .categories
                .iter()
                .enumerate()
                .map(|(k, (name, _, _))| {
                    let values: Vec<f64> = (0..with.len())
                        .map(|s| means[s][k].unwrap_or(f64::NAN))
                        .collect();
                    let known = values.iter().all(|v| v.is_finite());
                    CategoryRank {
                        category: name.clone(),
                        tau: known
                            .then(|| stats::kendall_tau_b(&values, overall))
                            .flatten(),
                        best: known.then(|| best(&values)).flatten(),
                    }
                })
                .collect(),
        }
    });

    LevelMetric {
        metric,
        systems: with.iter().map(|&s| names[s].clone()).collect(),
        n,
        means,
        level_means,
        pairs,
        anova,
        ranks,
    }
}

/// The index of the best value: the highest, or the lowest for the refusal rate; the first of
/// equal ones.
fn best_of(metric: Metric, values: &[f64]) -> Option<usize> {
    let better = |x: f64, y: f64| {
        if metric == Metric::Refused {
            x < y
        } else {
            x > y
        }
    };
    let mut best: Option<usize> = None;
    for (i, &v) in values.iter().enumerate() {
        if v.is_finite() && best.is_none_or(|b| better(v, values[b])) {
            best = Some(i);
        }
    }
    best
}

/// Holm's adjustment of the categories' t and Wilcoxon p-values over the level.
fn holm_over(categories: &mut [Option<CategoryDifference>]) {
    let adjust = |get: fn(&CategoryDifference) -> Option<f64>,
                  categories: &[Option<CategoryDifference>]| {
        let p: Vec<f64> = categories
            .iter()
            .map(|c| c.as_ref().and_then(get).unwrap_or(f64::NAN))
            .collect();
        stats::holm(&p)
    };
    let t = adjust(|c| c.diff.t_p, categories);
    let w = adjust(|c| c.diff.w_p, categories);
    for (k, category) in categories.iter_mut().enumerate() {
        if let Some(c) = category {
            c.t_p_holm = t[k].is_finite().then_some(t[k]);
            c.w_p_holm = w[k].is_finite().then_some(w[k]);
        }
    }
}

/// Per dimension: each system's recommendation, and the level that separates the systems.
fn dimensions(
    analyses: &[Analysis],
    levels: &[LevelComparison],
    names: &[String],
    settings: &Settings,
) -> Vec<DimensionComparison> {
    let mut keys: Vec<&str> = Vec::new();
    for level in levels {
        if !keys.contains(&level.dimension.as_str()) {
            keys.push(&level.dimension);
        }
    }
    let alpha = 1.0 - settings.confidence;
    keys.into_iter()
        .map(|dimension| {
            let recommended: Vec<SystemRecommendation> = analyses
                .iter()
                .zip(names)
                .map(|(analysis, name)| SystemRecommendation {
                    system: name.clone(),
                    recommendation: analysis
                        .dimensions
                        .iter()
                        .find(|d| d.dimension == dimension)
                        .and_then(|d| d.recommendation.clone()),
                })
                .collect();
            let first = recommended[0].recommendation.as_ref().map(|r| r.level);
            let same_for_all = first.is_some()
                && recommended
                    .iter()
                    .all(|r| r.recommendation.as_ref().map(|r| r.level) == first);
            DimensionComparison {
                dimension: dimension.to_owned(),
                recommended,
                same_for_all,
                separating: separating(dimension, levels, settings.metric, alpha),
            }
        })
        .collect()
}

/// The level of `dimension` whose system × category interaction (on `metric`) is largest.
fn separating(
    dimension: &str,
    levels: &[LevelComparison],
    metric: Metric,
    alpha: f64,
) -> Option<Separating> {
    let candidates: Vec<(&LevelComparison, &LevelMetric, AnovaRow)> = levels
        .iter()
        .filter(|l| l.dimension == dimension)
        .filter_map(|l| {
            let m = l.metrics.iter().find(|m| m.metric == metric)?;
            let interaction = m.anova?.interaction;
            interaction.np2.map(|_| (l, m, interaction))
        })
        .collect();
    let (level, level_metric, interaction) = candidates
        .iter()
        .copied()
        .reduce(|best, c| if c.2.np2 > best.2.np2 { c } else { best })?;
    let significant = interaction.p.is_some_and(|p| p < alpha);
    let describe = |row: &AnovaRow| {
        format!(
            "η²p = {:.3}, F({}, {}) = {}, p {}",
            row.np2.unwrap_or(f64::NAN),
            row.df1,
            row.df2,
            row.f.map_or_else(|| "–".into(), |f| format!("{f:.2}")),
            row.p.map_or_else(|| "= –".into(), format_p)
        )
    };
    let others: Vec<String> = candidates
        .iter()
        .filter(|(l, _, _)| !std::ptr::eq(*l, level))
        .map(|(l, _, row)| {
            format!(
                "{} η²p = {:.3} (p {})",
                l.level,
                row.np2.unwrap_or(f64::NAN),
                row.p.map_or_else(|| "= –".into(), format_p)
            )
        })
        .collect();
    let spread = level_metric
        .pairs
        .iter()
        .filter_map(|p| {
            p.spread
                .map(|s| format!("{} − {} {:.3}", p.b, p.a, s.value))
        })
        .collect::<Vec<_>>();
    let n_categories = level.categories.len();
    let mut reason = if significant {
        format!(
            "{dimension} at {} separates the systems most: how much they differ depends on \
the category ({} categories; system × category interaction {})",
            level.level,
            n_categories,
            describe(&interaction)
        )
    } else {
        format!(
            "no level of {dimension} shows the systems' difference depending on the category \
at α = {alpha:.2}; the largest interaction is at {} ({}), so compare the systems overall or \
generate more questions per category",
            level.level,
            describe(&interaction)
        )
    };
    if !spread.is_empty() {
        reason.push_str(&format!(
            "; spread of the difference over its categories: {}",
            spread.join(", ")
        ));
    }
    if !others.is_empty() {
        reason.push_str(&format!("; other levels: {}", others.join(", ")));
    }
    Some(Separating {
        level: level.level,
        set: level.set.clone(),
        significant,
        reason,
    })
}

/// "= 0.0123", or "< 0.0001".
fn format_p(p: f64) -> String {
    if p < 1e-4 {
        "< 0.0001".into()
    } else {
        format!("= {p:.4}")
    }
}

/// The common questions that every system refused or scored below `threshold` on.
fn unanswered(common: &[Vec<Observation>], metric: Metric, threshold: f64) -> Vec<Unanswered> {
    (0..common[0].len())
        .filter(|&q| {
            common.iter().all(|system| {
                let scores = &system[q].scores;
                scores.refused || metric.value(scores).is_some_and(|v| v < threshold)
            })
        })
        .map(|q| {
            let first = &common[0][q];
            Unanswered {
                id: first.id.clone(),
                question: None,
                set: first.set.clone(),
                categories: first.categories.clone(),
                scores: common.iter().map(|s| metric.value(&s[q].scores)).collect(),
                refused: common.iter().map(|s| s[q].scores.refused).collect(),
            }
        })
        .collect()
}
