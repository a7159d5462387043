//! The validity section: the generated benchmark beside the human-written one
//! (`validity.json`), the verdict first.

use hierarag_validity::{Decision, Mix, Transfer, Validity};

use crate::format::{num, p_value, signed, with_interval};
use crate::sections::{Block, Section, Table, Text};

fn decision(d: Decision) -> &'static str {
    match d {
        Decision::Better => "better",
        Decision::Worse => "worse",
        Decision::NoDifference => "no difference",
    }
}

fn transfer(t: Transfer) -> &'static str {
    match t {
        Transfer::Holds => "holds",
        Transfer::Vanishes => "vanishes",
        Transfer::Flips => "flips",
        Transfer::Appears => "appears",
    }
}

/// The validity section, when the run has a human-written benchmark.
pub(crate) fn section(validity: &Validity) -> Section {
    let confidence = validity.settings.confidence * 100.0;
    let mut blocks = vec![Block::Paragraph(format!(
        "The generated benchmark ({} questions) beside {} questions people wrote, answered by \
the same systems ({}). The people's questions are placed in the taxonomy by the tagger; \
intervals are {confidence:.0}% bootstrap (or normal) intervals; docs/guide/validity.md says how \
to read this and what it cannot tell.",
        validity.synthetic_questions,
        validity.human_questions,
        validity.systems.join(", ")
    ))];
    blocks.push(Block::List(
        validity
            .verdict
            .iter()
            .map(|line| Text::Plain(line.clone()))
            .collect(),
    ));

    if let Some(d) = &validity.decisions {
        let label = d.metric.mean_label();
        let mut table = Table::new(&[
            ("pair", false),
            ("benchmark: b − a", true),
            ("p", true),
            ("decides", false),
            ("people: b − a", true),
            ("p", true),
            ("decide", false),
            ("the decision", false),
        ]);
        for pair in &d.pairs {
            table.rows.push(vec![
                Text::Code(format!("{} − {}", pair.b, pair.a)),
                signed(pair.synthetic_difference, 3).into(),
                p_value(pair.synthetic_p).into(),
                decision(pair.synthetic).into(),
                signed(pair.human_difference, 3).into(),
                p_value(pair.human_p).into(),
                decision(pair.human).into(),
                Text::Strong(transfer(pair.transfer).into()),
            ]);
        }
        blocks.push(Block::Heading(format!("Which decisions hold ({label})")));
        blocks.push(Block::Paragraph(format!(
            "Kendall's τ between the two system orders: {}.",
            with_interval(d.tau.as_ref(), 2)
        )));
        blocks.push(Block::Table(table));
    }

    let mut mix = Table::new(&[
        ("dimension", false),
        ("category", false),
        ("benchmark", true),
        ("people", true),
        ("", false),
        ("χ² p", true),
    ]);
    for level in &validity.coverage {
        for (i, c) in level.categories.iter().enumerate() {
            mix.rows.push(vec![
                if i == 0 {
                    Text::Code(format!("{} {}", level.dimension, level.level))
                } else {
                    Text::Plain(String::new())
                },
                Text::Code(c.category.clone()),
                format!("{} ({:.0}%)", c.synthetic, 100.0 * c.synthetic_share).into(),
                format!("{} ({:.0}%)", c.human, 100.0 * c.human_share).into(),
                match c.flag {
                    Some(Mix::Over) => "people ask more",
                    Some(Mix::Under) => "benchmark has more",
                    None => "",
                }
                .into(),
                if i == 0 {
                    p_value(level.p).into()
                } else {
                    Text::Plain(String::new())
                },
            ]);
        }
    }
    blocks.push(Block::Heading("The category mix".into()));
    blocks.push(Block::Table(mix));

    let mut properties = Table::new(&[
        ("property", false),
        ("benchmark median", true),
        ("people median", true),
        ("effect", true),
        ("p", true),
    ]);
    for row in validity.properties.iter().filter(|r| r.category.is_none()) {
        properties.rows.push(vec![
            row.property.describe().into(),
            num(Some(row.synthetic_median), 2).into(),
            num(Some(row.human_median), 2).into(),
            signed(row.effect, 2).into(),
            p_value(Some(row.p)).into(),
        ]);
    }
    blocks.push(Block::Heading("The questions themselves".into()));
    blocks.push(Block::Paragraph(
        "Effect: the rank-biserial correlation of Mann–Whitney's U, positive when the \
benchmark's questions score higher."
            .into(),
    ));
    blocks.push(Block::Table(properties));

    if !validity.granularity.is_empty() {
        let mut table = Table::new(&[
            ("system", false),
            ("dimension", false),
            ("benchmark recommends", false),
            ("people's questions recommend", false),
            ("why", false),
        ]);
        for g in &validity.granularity {
            let level = |l: Option<hierarag_taxonomy::Granularity>| {
                l.map_or_else(|| "–".to_owned(), |l| l.to_string())
            };
            table.rows.push(vec![
                Text::Code(g.system.clone()),
                Text::Code(g.dimension.clone()),
                level(g.synthetic_recommended).into(),
                level(g.human_recommended).into(),
                g.reason.clone().into(),
            ]);
        }
        blocks.push(Block::Heading("Granularity".into()));
        blocks.push(Block::Table(table));
    }

    if !validity.predicted.is_empty() {
        let mut table = Table::new(&[
            ("system", false),
            ("level", false),
            ("predicted", true),
            ("observed", true),
            ("agree", false),
        ]);
        for p in &validity.predicted {
            table.rows.push(vec![
                Text::Code(p.system.clone()),
                Text::Code(format!("{} {}", p.dimension, p.level)),
                with_interval(Some(&p.predicted), 3).into(),
                with_interval(Some(&p.observed), 3).into(),
                (if p.within { "yes" } else { "no" }).into(),
            ]);
        }
        blocks.push(Block::Heading(
            "The people's mean, predicted from the benchmark's categories".into(),
        ));
        blocks.push(Block::Table(table));
    }
    if !validity.notes.is_empty() {
        blocks.push(Block::Heading("Notes".into()));
        blocks.push(Block::List(
            validity
                .notes
                .iter()
                .map(|n| Text::Plain(n.clone()))
                .collect(),
        ));
    }
    Section {
        id: "validity".into(),
        title: "Does the benchmark hold on people's questions?".into(),
        blocks,
    }
}
