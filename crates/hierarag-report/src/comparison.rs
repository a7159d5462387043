//! The comparison section: the systems side by side per category, their paired differences
//! with intervals, the forest and interaction plots, and which granularity separates them.

use hierarag_analysis::{Comparison, LevelComparison, LevelMetric, Metric};

use crate::format::{num, p_value, signed};
use crate::sections::{Block, ChartRef, Section, Table, Text};
use crate::svg::{self, ChartOptions, Group, Point, Series, Threshold};

/// At most this many questions no system answers are listed (the rest are in comparison.json).
const MAX_UNANSWERED: usize = 50;

/// The comparison section, when there is a comparison.
pub(crate) fn section(comparison: &Comparison) -> Section {
    let metric = comparison.settings.metric;
    let label = metric.mean_label();
    let confidence = comparison.settings.confidence * 100.0;
    let names: Vec<&str> = comparison.systems.iter().map(|s| s.name.as_str()).collect();
    let mut blocks = vec![Block::Paragraph(format!(
        "{} systems compared on the {} questions every one of them has a score for: {}. A \
difference is the later system minus the earlier one (positive: the later scores higher), \
question by question; its interval is the {confidence:.0}% paired bootstrap interval (questions \
resampled within the category), p the paired t-test (scipy's ttest_rel) Holm-adjusted over the \
level's categories, W/T/L the questions the later system wins, ties and loses. The system × \
category interaction of a mixed ANOVA (category between questions, system within) says whether \
the difference depends on the category.",
        names.len(),
        comparison.common,
        names.join(", ")
    ))];

    // Which granularity separates the systems: the answer first.
    let answers: Vec<Text> = comparison
        .dimensions
        .iter()
        .filter_map(|d| {
            let separating = d.separating.as_ref()?;
            let agree = if d.same_for_all {
                format!(
                    " Every system's own analysis recommends {}.",
                    d.recommended[0]
                        .recommendation
                        .as_ref()
                        .map_or_else(String::new, |r| r.level.to_string())
                )
            } else {
                format!(
                    " The systems' own analyses do not recommend the same granularity: {}.",
                    d.recommended_levels()
                )
            };
            Some(Text::Plain(format!("{}.{agree}", separating.reason)))
        })
        .collect();
    if !answers.is_empty() {
        blocks.push(Block::Heading(format!(
            "Which granularity separates your systems ({label})"
        )));
        blocks.push(Block::List(answers));
    }

    // Over all questions, every metric.
    let mut overall = Table::new(&[
        ("metric", false),
        ("means", false),
        ("difference", false),
        ("mean", true),
        (&format!("{confidence:.0}% interval"), true),
        ("t p", true),
        ("Wilcoxon p", true),
        ("W/T/L", true),
    ]);
    for m in &comparison.overall {
        let means: Vec<String> = m
            .systems
            .iter()
            .zip(&m.means)
            .map(|(s, v)| format!("{s} {}", num(Some(*v), digits(m.metric))))
            .collect();
        for (i, pair) in m.pairs.iter().enumerate() {
            let d = &pair.diff;
            overall.rows.push(vec![
                if i == 0 {
                    Text::Plain(m.metric.mean_label().into())
                } else {
                    Text::Plain(String::new())
                },
                if i == 0 {
                    Text::Plain(means.join(", "))
                } else {
                    Text::Plain(String::new())
                },
                Text::Code(format!("{} − {}", pair.b, pair.a)),
                signed(d.mean.value, digits(m.metric)).into(),
                ci(d.mean.ci, digits(m.metric)).into(),
                p_value(d.t_p).into(),
                p_value(d.w_p).into(),
                format!("{}/{}/{}", d.wins, d.ties, d.losses).into(),
            ]);
        }
    }
    blocks.push(Block::Heading("Over all questions".into()));
    blocks.push(Block::Table(overall));

    // Per level, the analysed metric.
    for (index, level) in comparison.levels.iter().enumerate() {
        let Some(m) = level.metrics.iter().find(|m| m.metric == metric) else {
            continue;
        };
        blocks.push(Block::Heading(format!(
            "{} {} (set {}): {label} per category",
            level.dimension, level.level, level.set
        )));
        blocks.push(Block::Table(level_table(level, m, comparison)));
        blocks.push(Block::Paragraph(level_sentence(m)));
        blocks.push(Block::Chart(ChartRef::ComparisonForest(index)));
        blocks.push(Block::Chart(ChartRef::ComparisonInteraction(index)));
    }

    if !comparison.unanswered.is_empty() {
        blocks.push(Block::Heading("Questions no system answers".into()));
        blocks.push(Block::Paragraph(format!(
            "{} question{} every system refused or scored below {} on {label}: often questions \
that are wrong, ambiguous or not answerable from the corpus, worth checking before any \
conclusion (`hierarag annotate sample RUN --from-compare` puts them first in the rating \
app){}.",
            comparison.unanswered.len(),
            if comparison.unanswered.len() == 1 {
                ""
            } else {
                "s"
            },
            comparison.threshold,
            if comparison.unanswered.len() > MAX_UNANSWERED {
                format!("; the first {MAX_UNANSWERED} are listed, all are in comparison.json")
            } else {
                String::new()
            }
        )));
        let mut headers: Vec<(String, bool)> = vec![
            ("question".into(), false),
            ("id".into(), false),
            ("categories".into(), false),
        ];
        headers.extend(names.iter().map(|n| ((*n).to_owned(), true)));
        let refs: Vec<(&str, bool)> = headers.iter().map(|(h, n)| (h.as_str(), *n)).collect();
        let mut table = Table::new(&refs);
        for item in comparison.unanswered.iter().take(MAX_UNANSWERED) {
            let mut row = vec![
                Text::Plain(item.question.clone().unwrap_or_default()),
                Text::Code(item.id.clone()),
                Text::Plain(
                    item.categories
                        .iter()
                        .map(|c| format!("{}/{}: {}", c.dimension, c.level, c.category))
                        .collect::<Vec<_>>()
                        .join(", "),
                ),
            ];
            row.extend(item.scores.iter().zip(&item.refused).map(|(s, r)| {
                Text::Plain(if *r {
                    "refused".into()
                } else {
                    num(*s, digits(metric))
                })
            }));
            table.rows.push(row);
        }
        blocks.push(Block::Table(table));
    }
    if !comparison.notes.is_empty() {
        blocks.push(Block::Heading("Notes".into()));
        blocks.push(Block::List(
            comparison
                .notes
                .iter()
                .map(|n| Text::Plain(n.clone()))
                .collect(),
        ));
    }
    Section {
        id: "comparison".into(),
        title: "Comparison of systems".into(),
        blocks,
    }
}

fn digits(metric: Metric) -> usize {
    if metric == Metric::Bleu { 1 } else { 3 }
}

fn ci(ci: Option<[f64; 2]>, digits: usize) -> String {
    match ci {
        Some([lo, hi]) if lo.is_finite() && hi.is_finite() => {
            format!("[{}, {}]", signed(lo, digits), signed(hi, digits))
        }
        _ => "–".into(),
    }
}

/// Systems × categories: each system's mean with its interval, each pair's difference with its
/// interval and Holm-adjusted p.
fn level_table(level: &LevelComparison, m: &LevelMetric, comparison: &Comparison) -> Table {
    let digits = digits(m.metric);
    let mut headers: Vec<(String, bool)> = vec![("category".into(), false), ("n".into(), true)];
    headers.extend(m.systems.iter().map(|s| (s.clone(), true)));
    for pair in &m.pairs {
        headers.push((format!("{} − {}", pair.b, pair.a), true));
        headers.push(("p (Holm)".into(), true));
        headers.push(("W/T/L".into(), true));
    }
    let refs: Vec<(&str, bool)> = headers.iter().map(|(h, n)| (h.as_str(), *n)).collect();
    let mut table = Table::new(&refs);
    let side: Vec<_> = m
        .systems
        .iter()
        .map(|s| level.side_by_side.iter().find(|x| x.system == *s))
        .collect();
    for (k, category) in level.categories.iter().enumerate() {
        let mut row = vec![
            Text::Code(category.category.clone()),
            category.n.to_string().into(),
        ];
        for (s, side) in side.iter().enumerate() {
            // The system's own analysis gives the interval on the analysed metric.
            let estimate = side.and_then(|x| x.means.get(k).copied().flatten());
            let value = m.means[s][k];
            row.push(Text::Plain(match estimate {
                Some(e) if m.metric == comparison.settings.metric => {
                    crate::format::with_interval(Some(&e), digits)
                }
                _ => num(value, digits),
            }));
        }
        for pair in &m.pairs {
            match pair.categories.get(k).copied().flatten() {
                Some(c) => {
                    row.push(Text::Plain(format!(
                        "{} {}",
                        signed(c.diff.mean.value, digits),
                        ci(c.diff.mean.ci, digits)
                    )));
                    row.push(p_value(c.t_p_holm).into());
                    row.push(format!("{}/{}/{}", c.diff.wins, c.diff.ties, c.diff.losses).into());
                }
                None => row.extend(["–", "–", "–"].map(Text::from)),
            }
        }
        table.rows.push(row);
    }
    let mut row = vec![Text::Strong("all".into()), m.n.to_string().into()];
    for &value in &m.level_means {
        row.push(num(Some(value), digits).into());
    }
    for pair in &m.pairs {
        let d = &pair.overall;
        row.push(Text::Plain(format!(
            "{} {}",
            signed(d.mean.value, digits),
            ci(d.mean.ci, digits)
        )));
        row.push(p_value(d.t_p).into());
        row.push(format!("{}/{}/{}", d.wins, d.ties, d.losses).into());
    }
    table.rows.push(row);
    table
}

/// The interaction and rank changes of a level in words.
fn level_sentence(m: &LevelMetric) -> String {
    let mut parts = Vec::new();
    match &m.anova {
        Some(a) => {
            let i = &a.interaction;
            parts.push(format!(
                "System × category interaction: F({}, {}) = {}, p = {}, η²p = {}",
                i.df1,
                i.df2,
                num(i.f, 2),
                p_value(i.p),
                num(i.np2, 3)
            ));
        }
        None => parts.push(
            "No mixed ANOVA here (it needs two categories with questions and more questions \
than categories)"
                .into(),
        ),
    }
    let spreads: Vec<String> = m
        .pairs
        .iter()
        .filter_map(|p| {
            p.spread.map(|s| {
                format!(
                    "{} − {} {}{}",
                    p.b,
                    p.a,
                    num(Some(s.value), 3),
                    s.ci.map_or_else(String::new, |[lo, hi]| format!(
                        " [{}, {}]",
                        num(Some(lo), 3),
                        num(Some(hi), 3)
                    ))
                )
            })
        })
        .collect();
    if !spreads.is_empty() {
        parts.push(format!(
            "spread of the difference over the categories: {}",
            spreads.join(", ")
        ));
    }
    if let Some(ranks) = &m.ranks {
        let changed: Vec<String> = ranks
            .categories
            .iter()
            .filter(|c| c.best.as_ref().is_some_and(|b| *b != ranks.best))
            .map(|c| format!("{} ({})", c.category, c.best.clone().unwrap_or_default()))
            .collect();
        let taus: Vec<String> = ranks
            .categories
            .iter()
            .map(|c| format!("{} {}", c.category, num(c.tau, 2)))
            .collect();
        parts.push(format!(
            "best overall: {}; {}; Kendall's τ of each category's ranking against the overall \
one: {}",
            ranks.best,
            if changed.is_empty() {
                "it is best in every category".to_owned()
            } else {
                format!("another system is best in {}", changed.join(", "))
            },
            taus.join(", ")
        ));
    }
    format!("{}.", parts.join("; "))
}

/// The forest plot of a level: each pair's difference per category with its interval, and
/// the zero line.
pub(crate) fn forest(comparison: &Comparison, index: usize) -> Option<String> {
    let level = comparison.levels.get(index)?;
    let m = level
        .metrics
        .iter()
        .find(|m| m.metric == comparison.settings.metric)?;
    let groups: Vec<Group> = m
        .pairs
        .iter()
        .map(|pair| Group {
            label: format!("{} − {}", pair.b, pair.a),
            points: level
                .categories
                .iter()
                .zip(&pair.categories)
                .filter_map(|(c, d)| {
                    let d = d.as_ref()?;
                    let point = Point::new(c.category.clone(), Some(d.diff.mean.value));
                    Some(match d.diff.mean.ci {
                        Some([lo, hi]) => point.with_ci(lo, hi),
                        None => point,
                    })
                })
                .collect(),
        })
        .collect();
    let label = m.metric.mean_label();
    let mut options = ChartOptions::new(
        format!(
            "{} {}: paired difference in {label} per category",
            level.dimension, level.level
        ),
        format!("difference in {label}"),
    );
    let points: u32 = groups.iter().map(|g| g.points.len() as u32).sum();
    options.width = (160 + 56 * points).clamp(480, 1100);
    let zero = [Threshold {
        value: 0.0,
        label: "no difference".into(),
    }];
    Some(svg::dot_chart(&groups, &zero, &options))
}

/// The interaction plot of a level: categories on the x axis, one line per system.
pub(crate) fn interaction(comparison: &Comparison, index: usize) -> Option<String> {
    let level = comparison.levels.get(index)?;
    let metric = comparison.settings.metric;
    let m = level.metrics.iter().find(|m| m.metric == metric)?;
    let categories: Vec<String> = level
        .categories
        .iter()
        .map(|c| c.category.clone())
        .collect();
    let lines: Vec<Series> = m
        .systems
        .iter()
        .enumerate()
        .map(|(s, system)| {
            let side = level.side_by_side.iter().find(|x| x.system == *system);
            Series {
                name: system.clone(),
                points: categories
                    .iter()
                    .enumerate()
                    .map(|(k, category)| {
                        let point = Point::new(category.clone(), m.means[s][k]);
                        match side
                            .and_then(|x| x.means.get(k).copied().flatten())
                            .and_then(|e| e.ci)
                        {
                            Some([lo, hi]) => point.with_ci(lo, hi),
                            None => point,
                        }
                    })
                    .collect(),
            }
        })
        .collect();
    let label = metric.mean_label();
    let options = ChartOptions::new(
        format!(
            "{} {}: mean {label} per category and system",
            level.dimension, level.level
        ),
        format!("mean {label}"),
    );
    Some(svg::interaction_plot(&categories, &lines, &options))
}
