//! The section of the judge's means corrected by the people's ratings (`ppi.json` of `hierarag
//! annotate agreement`): per scale, each system's PPI++ mean beside the judge-only and
//! people-only means, the paired differences, and per category.

use hierarag_validity::ppi::{JudgePpi, MeanInterval, PpiRow};

use crate::sections::{Block, Section, Table, Text};

fn mean_interval(m: Option<&MeanInterval>) -> String {
    m.map_or_else(
        || "–".to_owned(),
        |m| format!("{:.3} [{:.3}, {:.3}]", m.mean, m.ci[0], m.ci[1]),
    )
}

/// The cells of one row after its label: PPI, judge only, people only, rated/judged,
/// effective n.
fn cells(row: &PpiRow) -> Vec<Text> {
    let ppi = row.ppi.as_ref();
    vec![
        ppi.map_or_else(
            || row.note.clone().unwrap_or_else(|| "–".to_owned()),
            |p| format!("{:.3} [{:.3}, {:.3}]", p.estimate, p.ci[0], p.ci[1]),
        )
        .into(),
        mean_interval(row.judge_only.as_ref()).into(),
        mean_interval(row.people_only.as_ref()).into(),
        format!("{} / {}", row.n_rated, row.n_judged).into(),
        ppi.and_then(|p| p.effective_n_rated)
            .map_or_else(|| "–".to_owned(), |n| format!("{n:.0}"))
            .into(),
    ]
}

const HEADERS: [(&str, bool); 6] = [
    ("", false),
    ("PPI [CI]", true),
    ("judge only [CI]", true),
    ("people only [CI]", true),
    ("rated / judged", true),
    ("effective n", true),
];

/// The section, when people rated some system's answers.
pub(crate) fn section(ppi: &JudgePpi) -> Section {
    let level = 100.0 * (1.0 - ppi.alpha);
    let mut blocks = vec![Block::Paragraph(format!(
        "The judge's grades of every answer combined with the people's ratings of a random \
sample (prediction-powered inference, PPI++), on a 0–1 scale with {level:.0}% intervals. The \
judge-only mean is biased wherever the judge disagrees with people; the people-only mean is \
unbiased but wide; the PPI mean is unbiased and narrower, by as many ratings as \"effective n\" \
says. Use the PPI mean to report a system's correctness, the judge-only mean only where \
`annotate agreement` shows the judge follows people closely."
    ))];
    for scale in &ppi.scales {
        let mut systems = Table::new(&HEADERS);
        systems.headers[0] = "system".into();
        for system in &scale.systems {
            let mut row = vec![Text::Code(system.system.clone())];
            row.extend(cells(&system.overall));
            systems.rows.push(row);
        }
        blocks.push(Block::Heading(format!("{} per system", scale.scale)));
        blocks.push(Block::Table(systems));
        if !scale.differences.is_empty() {
            let mut pairs = Table::new(&HEADERS);
            pairs.headers[0] = "a − b".into();
            for d in &scale.differences {
                let mut row = vec![Text::Code(format!("{} − {}", d.system_a, d.system_b))];
                row.extend(cells(&d.overall));
                pairs.rows.push(row);
            }
            blocks.push(Block::Heading(format!(
                "{}: paired differences",
                scale.scale
            )));
            blocks.push(Block::Table(pairs));
        }
        let mut categories = Table::new(&HEADERS);
        categories.headers[0] = "system, category".into();
        for system in &scale.systems {
            for c in &system.categories {
                let mut row = vec![Text::Code(format!(
                    "{} · {} {} {}",
                    system.system, c.category.dimension, c.category.level, c.category.category
                ))];
                row.extend(cells(&c.row));
                categories.rows.push(row);
            }
        }
        if !categories.rows.is_empty() {
            blocks.push(Block::Heading(format!("{} per category", scale.scale)));
            blocks.push(Block::Table(categories));
        }
    }
    if !ppi.notes.is_empty() {
        blocks.push(Block::List(
            ppi.notes.iter().map(|n| Text::Plain(n.clone())).collect(),
        ));
    }
    Section {
        id: "ppi".into(),
        title: "The judge corrected by people".into(),
        blocks,
    }
}
