//! The report's charts, from the analysis.

use hierarag_analysis::{Analysis, Estimate};
use hierarag_taxonomy::Granularity;

use crate::svg::{self, Band, ChartOptions, Group, Point, Series, Threshold};

fn point(label: &str, estimate: Option<&Estimate>) -> Point {
    let mut point = Point::new(label, estimate.map(|e| e.value));
    if let Some([lo, hi]) = estimate.and_then(|e| e.ci) {
        point = point.with_ci(lo, hi);
    }
    point
}

/// DiscPow against granularity, one line per dimension with more than one level.
pub(crate) fn discpow(analysis: &Analysis) -> Option<String> {
    let series: Vec<Series> = analysis
        .dimensions
        .iter()
        .filter(|d| d.levels.len() > 1)
        .map(|d| Series {
            name: d.dimension.clone(),
            points: analysis
                .levels
                .iter()
                .filter(|l| l.dimension == d.dimension && d.levels.contains(&l.level))
                .map(|l| point(l.level.as_str(), l.discpow.as_ref()))
                .collect(),
        })
        .collect();
    if series.is_empty() {
        return None;
    }
    let x: Vec<String> = Granularity::ALL
        .iter()
        .map(|g| g.as_str().to_owned())
        .collect();
    // Under each line, the noise floor: the DiscPow chance alone gives at that level.
    let bands: Vec<Band> = series
        .iter()
        .map(|s| Band {
            series: s.name.clone(),
            points: analysis
                .levels
                .iter()
                .filter(|l| l.dimension == s.name)
                .filter(|l| s.points.iter().any(|p| p.label == l.level.as_str()))
                .map(|l| Point::new(l.level.as_str(), l.discpow_noise_floor))
                .collect(),
        })
        .collect();
    let mut options = ChartOptions::new(
        format!(
            "DiscPow of {} against granularity (shaded: the noise floor)",
            analysis.settings.metric.mean_label()
        ),
        "DiscPow (std of category means)",
    );
    options.y_min = Some(0.0);
    Some(svg::line_chart_with_bands(&x, &series, &bands, &options))
}

/// Category means of the analysed metric with intervals for one dimension, a group per level.
pub(crate) fn categories(analysis: &Analysis, dimension: &str) -> Option<String> {
    let label = analysis.settings.metric.mean_label();
    Some(dimension)
        .filter(|d| analysis.levels.iter().any(|l| l.dimension == *d))
        .map(|dimension| {
            let groups: Vec<Group> = analysis
                .levels
                .iter()
                .filter(|l| l.dimension == dimension)
                .map(|l| Group {
                    label: format!("{} (n {})", l.level, l.n),
                    points: l
                        .categories
                        .iter()
                        .map(|c| point(&c.category, Some(&c.metric)))
                        .collect(),
                })
                .collect();
            let width = 160 + 56 * groups.iter().map(|g| g.points.len() as u32).sum::<u32>();
            let mut options = ChartOptions::new(
                format!("{dimension}: category mean {label} per level"),
                format!("mean {label}"),
            );
            options.width = width.clamp(480, 1100);
            svg::dot_chart(&groups, &[], &options)
        })
}

/// ρ per split with the thresholds 1 and 2, a group per dimension.
pub(crate) fn rho(analysis: &Analysis) -> Option<String> {
    if analysis.splits.is_empty() {
        return None;
    }
    let mut groups: Vec<Group> = Vec::new();
    for split in &analysis.splits {
        let p = point(&split.parent, Some(&split.rho));
        match groups.last_mut() {
            Some(group) if group.label == split.dimension => group.points.push(p),
            _ => groups.push(Group {
                label: split.dimension.clone(),
                points: vec![p],
            }),
        }
    }
    let thresholds = [
        Threshold {
            value: 1.0,
            label: "ρ = 1".into(),
        },
        Threshold {
            value: 2.0,
            label: "ρ = 2".into(),
        },
    ];
    let mut options = ChartOptions::new("Coherence Ratio ρ per split", "ρ");
    options.y_min = Some(0.0);
    // A split whose children sit exactly on their parent has a huge ρ; keep the thresholds
    // readable by capping the axis (points above it are drawn at the top edge by the chart).
    let largest = analysis
        .splits
        .iter()
        .map(|s| s.rho.value)
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    options.y_max = Some(largest.clamp(3.0, 10.0));
    let n: u32 = analysis.splits.len() as u32;
    options.width = (160 + 64 * n).clamp(480, 1100);
    Some(svg::dot_chart(&groups, &thresholds, &options))
}

/// The interaction plot of a two-factor set.
pub(crate) fn interaction(analysis: &Analysis, set: &str) -> Option<String> {
    analysis
        .factorials
        .iter()
        .find(|f| f.set == set && f.factors.len() == 2)
        .map(|f| {
            let (a, b) = (&f.factors[0], &f.factors[1]);
            let lines: Vec<Series> = a
                .categories
                .iter()
                .map(|ca| Series {
                    name: format!("{} = {ca}", a.dimension),
                    points: f
                        .cells
                        .iter()
                        .filter(|c| c.categories[0] == *ca && c.n > 0)
                        .map(|c| point(&c.categories[1], Some(&c.metric)))
                        .collect(),
                })
                .collect();
            let label = analysis.settings.metric.mean_label();
            let options = ChartOptions::new(
                format!(
                    "{}: mean {label} by {} and {}",
                    f.set, a.dimension, b.dimension
                ),
                format!("mean {label}"),
            );
            svg::interaction_plot(&b.categories, &lines, &options)
        })
}
