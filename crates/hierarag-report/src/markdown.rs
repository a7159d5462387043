//! The Markdown report (`report.md`): the sections as GitHub-flavoured Markdown, without
//! charts.

use std::fmt::Write as _;

use crate::ReportInput;
use crate::sections::{Block, Table, Text, sections};

/// Renders the report as Markdown.
pub fn markdown(input: &ReportInput<'_>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {}\n", inline(&input.title));
    for section in sections(input) {
        let _ = writeln!(out, "## {}\n", inline(&section.title));
        for block in &section.blocks {
            match block {
                Block::Paragraph(text) => {
                    let _ = writeln!(out, "{}\n", inline(text));
                }
                Block::Heading(text) => {
                    let _ = writeln!(out, "### {}\n", inline(text));
                }
                Block::List(items) => {
                    for item in items {
                        let _ = writeln!(out, "- {}", text(item));
                    }
                    out.push('\n');
                }
                Block::Table(table) => render_table(&mut out, table),
                Block::Chart(_) => {}
            }
        }
    }
    let _ = writeln!(
        out,
        "---\n\n{} questions; report.html has the charts and a browsable table of questions, \
answers and retrieved documents.",
        input.questions.len()
    );
    out
}

fn render_table(out: &mut String, table: &Table) {
    let headers: Vec<String> = table.headers.iter().map(|h| inline(h)).collect();
    let _ = writeln!(out, "| {} |", headers.join(" | "));
    let rule: Vec<&str> = table
        .numeric
        .iter()
        .map(|&n| if n { "---:" } else { "---" })
        .collect();
    let _ = writeln!(out, "|{}|", rule.join("|"));
    for row in &table.rows {
        let cells: Vec<String> = row.iter().map(text).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out.push('\n');
}

fn text(value: &Text) -> String {
    match value {
        Text::Plain(s) => inline(s),
        Text::Code(s) => format!("`{}`", s.replace('`', "'").replace('|', "\\|")),
        Text::Strong(s) => format!("**{}**", inline(s)),
        Text::Join(parts) => parts.iter().map(text).collect(),
    }
}

/// Text made safe for one line of Markdown (and a table cell): no pipe, no line break, no raw
/// HTML, no emphasis from underscores or asterisks in names.
fn inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '|' => out.push_str("\\|"),
            '\n' | '\r' => out.push(' '),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '_' | '*' | '`' | '[' | ']' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}
