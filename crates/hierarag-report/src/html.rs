//! The HTML report (`report.html`): one self-contained page — inline styles, inline SVG
//! charts, a small inline script for the question table — that loads nothing from anywhere
//! (its Content-Security-Policy forbids it).

use std::fmt::Write as _;

use hierarag_taxonomy::SvgOptions;

use crate::html_escape::escape_html as esc;
use crate::sections::{Block, ChartRef, Table, Text, sections};
use crate::{QuestionRow, ReportInput, charts};

const STYLE: &str = r#"
:root { color-scheme: light; --ink: #1f2933; --muted: #616e7c; --rule: #d9e2ec; --accent: #0072b2; --bad: #b54708; --good: #067647; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: #fff; }
header { padding: 24px 32px 12px; border-bottom: 1px solid var(--rule); background: #f8fafc; }
header h1 { margin: 0 0 8px; font-size: 24px; }
nav a { margin-right: 14px; color: var(--accent); text-decoration: none; font-size: 14px; }
nav a:hover { text-decoration: underline; }
main { padding: 8px 32px 48px; max-width: 1280px; }
section { margin-top: 28px; }
h2 { font-size: 20px; border-bottom: 1px solid var(--rule); padding-bottom: 4px; }
h3 { font-size: 16px; margin: 22px 0 6px; }
p { max-width: 880px; color: var(--muted); }
table { border-collapse: collapse; margin: 10px 0 14px; font-size: 14px; }
th, td { padding: 4px 10px; border-bottom: 1px solid var(--rule); text-align: left; vertical-align: top; }
th { background: #f1f5f9; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
code { font: 13px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: #f1f5f9; padding: 0 3px; border-radius: 3px; }
figure { margin: 14px 0; overflow-x: auto; }
figure svg { max-width: 100%; height: auto; }
.controls { display: flex; gap: 12px; align-items: center; flex-wrap: wrap; margin: 8px 0; }
.controls input[type=search] { width: 320px; padding: 4px 8px; }
#questions table { width: 100%; }
#questions td.text { max-width: 360px; }
#questions th[data-sort] { cursor: pointer; }
#questions th[data-sort]::after { content: " ↕"; color: var(--muted); font-weight: 400; }
.refused { color: var(--bad); font-weight: 600; }
.source { color: var(--good); font-weight: 600; }
details summary { cursor: pointer; color: var(--accent); }
.count { color: var(--muted); }
"#;

/// The question table's filter and sort: plain DOM, no library.
const SCRIPT: &str = r#"
(function () {
  var table = document.getElementById('question-table');
  if (!table) { return; }
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var search = document.getElementById('question-search');
  var set = document.getElementById('question-set');
  var refused = document.getElementById('question-refused');
  var count = document.getElementById('question-count');
  function apply() {
    var needle = search.value.trim().toLowerCase();
    var shown = 0;
    rows.forEach(function (row) {
      var ok = (!needle || row.textContent.toLowerCase().indexOf(needle) >= 0)
        && (!set.value || row.getAttribute('data-set') === set.value)
        && (!refused.checked || row.getAttribute('data-refused') === '1');
      row.hidden = !ok;
      if (ok) { shown += 1; }
    });
    count.textContent = shown + ' of ' + rows.length + ' questions';
  }
  [search, set, refused].forEach(function (el) { el.addEventListener('input', apply); });
  refused.addEventListener('change', apply);
  Array.prototype.forEach.call(table.querySelectorAll('th[data-sort]'), function (th) {
    var descending = true;
    th.addEventListener('click', function () {
      var column = th.cellIndex;
      rows.sort(function (a, b) {
        var x = parseFloat(a.cells[column].getAttribute('data-v'));
        var y = parseFloat(b.cells[column].getAttribute('data-v'));
        if (isNaN(x)) { x = -Infinity; }
        if (isNaN(y)) { y = -Infinity; }
        return descending ? y - x : x - y;
      });
      descending = !descending;
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
  apply();
})();
"#;

/// Renders the report as one self-contained HTML page.
pub fn html(input: &ReportInput<'_>) -> String {
    let sections = sections(input);
    let mut out = String::new();
    let title = esc(&input.title);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src \
'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n\
<title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<header>\n<h1>{title}</h1>\n<nav>"
    );
    for section in &sections {
        let _ = write!(
            out,
            "<a href=\"#{}\">{}</a>",
            esc(&section.id),
            esc(&section.title)
        );
    }
    out.push_str("<a href=\"#questions\">Questions</a></nav>\n</header>\n<main>\n");
    for section in &sections {
        let _ = writeln!(
            out,
            "<section id=\"{}\">\n<h2>{}</h2>",
            esc(&section.id),
            esc(&section.title)
        );
        for block in &section.blocks {
            match block {
                Block::Paragraph(text) => {
                    let _ = writeln!(out, "<p>{}</p>", esc(text));
                }
                Block::Heading(text) => {
                    let _ = writeln!(out, "<h3>{}</h3>", esc(text));
                }
                Block::List(items) => {
                    out.push_str("<ul>\n");
                    for item in items {
                        let _ = writeln!(out, "<li>{}</li>", text(item));
                    }
                    out.push_str("</ul>\n");
                }
                Block::Table(table) => render_table(&mut out, table),
                Block::Chart(chart) => {
                    if let Some(svg) = chart_svg(input, chart) {
                        let _ = writeln!(out, "<figure class=\"figure\">{svg}</figure>");
                    }
                }
            }
        }
        out.push_str("</section>\n");
    }
    questions(&mut out, &input.questions);
    let _ = write!(
        out,
        "</main>\n<script>{SCRIPT}</script>\n</body>\n</html>\n"
    );
    out
}

fn chart_svg(input: &ReportInput<'_>, chart: &ChartRef) -> Option<String> {
    let analysis = input.analysis;
    match chart {
        ChartRef::Discpow => charts::discpow(analysis),
        ChartRef::Rho => charts::rho(analysis),
        ChartRef::Categories(dimension) => charts::categories(analysis, dimension),
        ChartRef::Interaction(set) => charts::interaction(analysis, set),
        ChartRef::Taxonomy => input
            .taxonomy
            .and_then(|t| t.to_svg(&SvgOptions::default()).ok())
            // The figure is an SVG document; inline it without its XML declaration.
            .map(|svg| match svg.find("<svg") {
                Some(start) => svg[start..].to_owned(),
                None => svg,
            }),
    }
}

fn render_table(out: &mut String, table: &Table) {
    out.push_str("<table>\n");
    if table.headers.iter().any(|h| !h.is_empty()) {
        out.push_str("<thead><tr>");
        for (header, &numeric) in table.headers.iter().zip(&table.numeric) {
            let class = if numeric { " class=\"num\"" } else { "" };
            let _ = write!(out, "<th{class}>{}</th>", esc(header));
        }
        out.push_str("</tr></thead>\n");
    }
    out.push_str("<tbody>\n");
    for row in &table.rows {
        out.push_str("<tr>");
        for (cell, &numeric) in row.iter().zip(&table.numeric) {
            let class = if numeric { " class=\"num\"" } else { "" };
            let _ = write!(out, "<td{class}>{}</td>", text(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
}

fn text(value: &Text) -> String {
    match value {
        Text::Plain(s) => esc(s),
        Text::Code(s) => format!("<code>{}</code>", esc(s)),
        Text::Strong(s) => format!("<strong>{}</strong>", esc(s)),
        Text::Join(parts) => parts.iter().map(text).collect(),
    }
}

/// The browsable table: one row per question, filtered by text, set and refusal, sorted by
/// any score column.
fn questions(out: &mut String, questions: &[QuestionRow]) {
    out.push_str("<section id=\"questions\">\n<h2>Questions</h2>\n");
    let mut sets: Vec<&str> = questions.iter().map(|q| q.set.as_str()).collect();
    sets.sort_unstable();
    sets.dedup();
    out.push_str(
        "<div class=\"controls\"><input type=\"search\" id=\"question-search\" \
placeholder=\"filter by any text\" aria-label=\"filter questions\">\
<select id=\"question-set\" aria-label=\"set\"><option value=\"\">all sets</option>",
    );
    for set in &sets {
        let _ = write!(out, "<option value=\"{0}\">{0}</option>", esc(set));
    }
    out.push_str(
        "</select><label><input type=\"checkbox\" id=\"question-refused\"> refused only</label>\
<span class=\"count\" id=\"question-count\"></span></div>\n",
    );
    out.push_str(
        "<table id=\"question-table\">\n<thead><tr><th>id</th><th>categories</th>\
<th>question</th><th>answer</th><th>reference</th>",
    );
    for score in ["AP", "nDCG@10", "R@10", "CS", "ROUGE-1", "BLEU"] {
        let _ = write!(out, "<th class=\"num\" data-sort=\"1\">{score}</th>");
    }
    out.push_str("<th>retrieved documents</th></tr></thead>\n<tbody>\n");
    for q in questions {
        let _ = write!(
            out,
            "<tr data-set=\"{}\" data-refused=\"{}\"><td><code>{}</code></td><td>{}</td>\
<td class=\"text\">{}</td><td class=\"text\">{}</td><td class=\"text\">{}</td>",
            esc(&q.set),
            u8::from(q.refused),
            esc(&q.id),
            q.categories
                .iter()
                .map(|c| format!("<code>{}</code>", esc(c)))
                .collect::<Vec<_>>()
                .join("<br>"),
            esc(&q.question),
            match &q.answer {
                Some(answer) if q.refused => {
                    format!("<span class=\"refused\">refused</span> {}", esc(answer))
                }
                Some(answer) => esc(answer),
                None => "<em>not answered</em>".into(),
            },
            esc(&q.reference)
        );
        let values = q
            .scores
            .map(|s| [s.ap, s.ndcg_10, s.recall_10, s.cs, s.rouge1, s.bleu]);
        for i in 0..6 {
            match values {
                Some(v) => {
                    let digits = if i == 5 { 1 } else { 3 };
                    let _ = write!(
                        out,
                        "<td class=\"num\" data-v=\"{}\">{:.digits$}</td>",
                        v[i], v[i]
                    );
                }
                None => out.push_str("<td class=\"num\" data-v=\"\">–</td>"),
            }
        }
        out.push_str("<td>");
        if !q.retrieved_docs.is_empty() {
            let _ = write!(
                out,
                "<details><summary>{} documents</summary><ol>",
                q.retrieved_docs.len()
            );
            for doc in &q.retrieved_docs {
                if q.source_docs.contains(doc) {
                    let _ = write!(
                        out,
                        "<li><span class=\"source\" title=\"a source document of the question\">{}</span></li>",
                        esc(doc)
                    );
                } else {
                    let _ = write!(out, "<li>{}</li>", esc(doc));
                }
            }
            out.push_str("</ol></details>");
        }
        out.push_str("</td></tr>\n");
    }
    out.push_str("</tbody>\n</table>\n</section>\n");
}
