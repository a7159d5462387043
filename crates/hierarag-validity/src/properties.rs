//! The questions themselves, side by side on what can be measured without a model.

use hierarag_stats::{mann_whitney_u, percentile};

use crate::coverage::Level;
use crate::{Benchmark, Property, PropertyComparison, Question};

pub(crate) fn compare(
    levels: &[Level],
    synthetic: &Benchmark,
    human: &Benchmark,
    notes: &mut Vec<String>,
) -> Vec<PropertyComparison> {
    let mut out = Vec::new();
    for property in Property::ALL {
        let all = |b: &Benchmark| -> Vec<f64> {
            b.questions
                .iter()
                .filter_map(|q| q.property(property))
                .collect()
        };
        let (s, h) = (all(synthetic), all(human));
        match side_by_side(property, &s, &h) {
            Some(row) => out.push(row),
            None => notes.push(format!(
                "{}: not compared ({} synthetic and {} human questions have it{})",
                property.describe(),
                s.len(),
                h.len(),
                match property {
                    Property::Overlap | Property::GoldRank => ": it needs relevant documents",
                    Property::AnswerWords => ": it needs reference answers",
                    _ => "",
                }
            )),
        }
        for (dimension, level) in levels {
            let in_category = |b: &Benchmark, category: &str| -> Vec<f64> {
                b.questions
                    .iter()
                    .filter(|q| q.category(dimension, *level) == Some(category))
                    .filter_map(|q: &Question| q.property(property))
                    .collect()
            };
            let mut categories: Vec<&str> = synthetic
                .questions
                .iter()
                .filter_map(|q| q.category(dimension, *level))
                .collect();
            categories.sort_unstable();
            categories.dedup();
            for category in categories {
                let (s, h) = (
                    in_category(synthetic, category),
                    in_category(human, category),
                );
                if let Some(mut row) = side_by_side(property, &s, &h) {
                    row.dimension = Some(dimension.clone());
                    row.level = Some(*level);
                    row.category = Some(category.to_owned());
                    out.push(row);
                }
            }
        }
    }
    out
}

fn side_by_side(property: Property, s: &[f64], h: &[f64]) -> Option<PropertyComparison> {
    let test = mann_whitney_u(s, h)?;
    Some(PropertyComparison {
        property,
        dimension: None,
        level: None,
        category: None,
        synthetic_n: s.len(),
        human_n: h.len(),
        synthetic_median: percentile(s, 50.0)?,
        human_median: percentile(h, 50.0)?,
        synthetic_mean: hierarag_stats::mean(s)?,
        human_mean: hierarag_stats::mean(h)?,
        u: test.u,
        p: test.p,
        effect: test.rank_biserial,
    })
}
