//! The category mix of the human questions beside the synthetic design's.

use hierarag_stats::chisquare;
use hierarag_taxonomy::{Granularity, Taxonomy};

use crate::{Benchmark, CategoryShare, Coverage, Mix};

/// A level is compared when both sides have a question placed on it.
pub(crate) type Level = (String, Granularity);

/// The dimensions' levels, in taxonomy order, on which both benchmarks place a question.
pub(crate) fn levels(taxonomy: &Taxonomy, synthetic: &Benchmark, human: &Benchmark) -> Vec<Level> {
    let placed = |b: &Benchmark, dimension: &str, level: Granularity| {
        b.questions
            .iter()
            .any(|q| q.category(dimension, level).is_some())
    };
    taxonomy
        .dimensions
        .iter()
        .flat_map(|d| d.levels.iter().map(move |l| (d.key.clone(), l.granularity)))
        .filter(|(d, l)| placed(synthetic, d, *l) && placed(human, d, *l))
        .collect()
}

/// How many of `benchmark`'s questions each of the level's categories holds.
pub(crate) fn counts(
    taxonomy: &Taxonomy,
    benchmark: &Benchmark,
    dimension: &str,
    level: Granularity,
) -> Vec<(String, usize)> {
    categories(taxonomy, dimension, level)
        .into_iter()
        .map(|name| {
            let n = benchmark
                .questions
                .iter()
                .filter(|q| q.category(dimension, level) == Some(name.as_str()))
                .count();
            (name, n)
        })
        .collect()
}

/// The level's category names in taxonomy order.
pub(crate) fn categories(taxonomy: &Taxonomy, dimension: &str, level: Granularity) -> Vec<String> {
    taxonomy
        .dimensions
        .iter()
        .find(|d| d.key == dimension)
        .and_then(|d| d.levels.iter().find(|l| l.granularity == level))
        .map(|l| l.categories.iter().map(|c| c.name.clone()).collect())
        .unwrap_or_default()
}

pub(crate) fn coverage(
    taxonomy: &Taxonomy,
    levels: &[Level],
    synthetic: &Benchmark,
    human: &Benchmark,
    notes: &mut Vec<String>,
) -> Vec<Coverage> {
    let mut out = Vec::new();
    for (dimension, level) in levels {
        let synthetic_counts = counts(taxonomy, synthetic, dimension, *level);
        let human_counts = counts(taxonomy, human, dimension, *level);
        let synthetic_total: usize = synthetic_counts.iter().map(|(_, n)| n).sum();
        let human_total: usize = human_counts.iter().map(|(_, n)| n).sum();
        let categories: Vec<CategoryShare> = synthetic_counts
            .iter()
            .zip(&human_counts)
            .filter(|((_, s), (_, h))| s + h > 0)
            .map(|((category, s), (_, h))| {
                let synthetic_share = *s as f64 / synthetic_total as f64;
                let human_share = *h as f64 / human_total as f64;
                CategoryShare {
                    category: category.clone(),
                    synthetic: *s,
                    human: *h,
                    synthetic_share,
                    human_share,
                    flag: mix(synthetic_share, human_share),
                }
            })
            .collect();
        // The goodness of fit over the categories the design has: a category it lacks has
        // no expected count (scipy's chisquare would divide by zero), and is flagged instead.
        let designed: Vec<&CategoryShare> = categories.iter().filter(|c| c.synthetic > 0).collect();
        let observed: Vec<u64> = designed.iter().map(|c| c.human as u64).collect();
        let placed: u64 = observed.iter().sum();
        let expected: Vec<f64> = designed
            .iter()
            .map(|c| placed as f64 * c.synthetic as f64 / synthetic_total as f64)
            .collect();
        let fit = chisquare(&observed, &expected);
        let absent: usize = categories
            .iter()
            .filter(|c| c.synthetic == 0)
            .map(|c| c.human)
            .sum();
        if absent > 0 {
            notes.push(format!(
                "{dimension} at {level}: {absent} human question(s) are in categories the \
synthetic benchmark has none of; the goodness of fit is over the other categories"
            ));
        }
        out.push(Coverage {
            dimension: dimension.clone(),
            level: *level,
            categories,
            chi2: fit.map(|f| f.statistic),
            p: fit.map(|f| f.p),
            dof: fit.map(|f| f.dof),
        });
    }
    out
}

/// `Over` when people ask a category at least twice as often and 5 points more (or the
/// benchmark lacks it), `Under` the reverse.
fn mix(synthetic: f64, human: f64) -> Option<Mix> {
    if human > 0.0 && synthetic == 0.0 || human >= 2.0 * synthetic && human - synthetic >= 0.05 {
        Some(Mix::Over)
    } else if synthetic > 0.0 && human == 0.0
        || synthetic >= 2.0 * human && synthetic - human >= 0.05
    {
        Some(Mix::Under)
    } else {
        None
    }
}
