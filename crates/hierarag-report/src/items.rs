//! The items section: which questions carry the signal (`items.json` of `hierarag items`),
//! the flagged questions, the share of informative questions per category beside the level's
//! DiscPow, and the core set with its held-out check.

use hierarag_analysis::Analysis;
use hierarag_items::{Flag, ItemsReport};

use crate::format::{num, with_interval};
use crate::sections::{Block, Section, Table, Text};

/// Flagged questions listed at most (items.json has them all).
const MAX_FLAGGED: usize = 40;

fn flag(flag: Flag) -> &'static str {
    match flag {
        Flag::Saturated => "saturated",
        Flag::Failed => "failed by every system",
        Flag::Negative => "negative",
    }
}

/// The items section, when the run has an item analysis.
pub(crate) fn section(report: &ItemsReport, analysis: &Analysis) -> Section {
    let items = &report.items;
    let count = |f: Flag| items.items.iter().filter(|i| i.flags.contains(&f)).count();
    let mut blocks = vec![Block::Paragraph(format!(
        "Which questions separate the systems ({}) on {}: per question its mean over the \
systems, the share that pass it (at {}), and its discrimination (with three or more systems, \
Pearson's r across the systems between the question and the rest of the benchmark). {} of {} \
questions are saturated (every system passes: they cannot separate systems), {} failed by every \
system (often a bad reference: check them first; `hierarag annotate sample --from-items` puts \
them first) and {} negative (they order the systems against the rest). With five or more \
systems, a two-parameter logistic IRT model is fitted to the pass/fail matrix (girth's \
twopl_mml): a is a question's discrimination (0.2, the lower bound, for one unrelated to the \
systems' ability or reversed), b its difficulty on the systems' ability scale.",
        items.systems.join(", "),
        report.metric,
        items.settings.threshold,
        count(Flag::Saturated),
        items.items.len(),
        count(Flag::Failed),
        count(Flag::Negative),
    ))];

    let mut categories = Table::new(&[
        ("dimension", false),
        ("category", false),
        ("questions", true),
        ("informative", true),
        ("mean r", true),
        ("level DiscPow [CI]", true),
    ]);
    for c in &items.categories {
        let level = &c.category;
        let discpow = analysis
            .table2
            .iter()
            .find(|row| row.dimension == level.dimension && row.level == level.level)
            .and_then(|row| row.discpow.as_ref());
        categories.rows.push(vec![
            Text::Code(format!("{} {}", level.dimension, level.level)),
            Text::Code(level.category.clone()),
            c.n.to_string().into(),
            format!("{:.0}%", 100.0 * c.informative_share).into(),
            num(c.mean_discrimination, 2).into(),
            with_interval(discpow, 3).into(),
        ]);
    }
    blocks.push(Block::Heading("Informative questions per category".into()));
    blocks.push(Block::Paragraph(format!(
        "Informative: neither saturated nor failed, discrimination above {}. The DiscPow is \
the first system's, of the category's level.",
        items.settings.min_discrimination
    )));
    blocks.push(Block::Table(categories));

    let flagged: Vec<_> = items.items.iter().filter(|i| !i.flags.is_empty()).collect();
    if !flagged.is_empty() {
        let mut table = Table::new(&[
            ("question", false),
            ("flag", false),
            ("mean", true),
            ("pass rate", true),
            ("r", true),
            ("2PL a", true),
            ("2PL b", true),
        ]);
        for item in flagged.iter().take(MAX_FLAGGED) {
            table.rows.push(vec![
                Text::Code(item.id.clone()),
                item.flags
                    .iter()
                    .map(|f| flag(*f))
                    .collect::<Vec<_>>()
                    .join(", ")
                    .into(),
                num(Some(item.mean), 3).into(),
                format!("{:.0}%", 100.0 * item.pass_rate).into(),
                num(item.discrimination, 2).into(),
                num(item.irt.map(|e| e.discrimination), 2).into(),
                num(item.irt.map(|e| e.difficulty), 2).into(),
            ]);
        }
        blocks.push(Block::Heading("Flagged questions".into()));
        if flagged.len() > MAX_FLAGGED {
            blocks.push(Block::Paragraph(format!(
                "The first {MAX_FLAGGED} of {}; items.json lists them all.",
                flagged.len()
            )));
        }
        blocks.push(Block::Table(table));
    }

    let core = &report.core;
    blocks.push(Block::Heading("The core set".into()));
    blocks.push(Block::Paragraph(format!(
        "{} of {} questions ({:.0}% fewer answers to pay for), drawn at random within strata, \
keep every system's category means within {} and the order of the systems whose means differ by \
more (largest error on these systems: {:.4}). core.jsonl holds them, as lines of the benchmark: set [run] benchmark to it and `hierarag run` answers only those.",
        core.ids.len(),
        core.of,
        100.0 * core.saved_share(),
        core.settings.tolerance,
        core.max_error,
    )));
    if let Some(held) = &core.held_out {
        {
            let mut table = Table::new(&[
                ("held-out system", false),
                ("set chosen without it", true),
                ("largest error", true),
                ("order kept", false),
            ]);
            for check in &held.systems {
                table.rows.push(vec![
                    Text::Code(check.system.clone()),
                    check.n.to_string().into(),
                    num(Some(check.max_error), 4).into(),
                    if check.order_kept { "yes" } else { "no" }.into(),
                ]);
            }
            blocks.push(Block::Paragraph(format!(
                "The honest error: each system held out in turn, the set chosen on the others and \
checked on it. {} of {} held-out systems are within the tolerance with their order kept.",
                held.within,
                held.systems.len()
            )));
            blocks.push(Block::Table(table));
        }
    }
    if !items.notes.is_empty() || !core.notes.is_empty() {
        blocks.push(Block::List(
            items
                .notes
                .iter()
                .chain(&core.notes)
                .map(|n| Text::Plain(n.clone()))
                .collect(),
        ));
    }
    Section {
        id: "items".into(),
        title: "Which questions carry the signal".into(),
        blocks,
    }
}
