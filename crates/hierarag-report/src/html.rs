//! The HTML report (`report.html`): one self-contained page — inline styles, inline SVG
//! charts, a small inline script for the question table — that loads nothing from anywhere
//! (its Content-Security-Policy forbids it). Built with maud, which escapes every text it
//! splices; only the page's own style, script and the SVG charts go in as they are.

use hierarag_taxonomy::SvgOptions;
use maud::{DOCTYPE, Markup, PreEscaped, Render, html};

use crate::sections::{Block, ChartRef, Section, Table, Text, sections};
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
    // The line breaks keep the page readable as text, one block a line.
    let page = html! {
        (DOCTYPE) "\n"
        html lang="en" {
            "\n"
            head {
                "\n" meta charset="utf-8";
                "\n" meta name="viewport" content="width=device-width, initial-scale=1";
                "\n" meta http-equiv="Content-Security-Policy" content="default-src 'none'; \
                    style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:";
                "\n" title { (input.title) }
                "\n" style { (PreEscaped(STYLE)) }
                "\n"
            }
            "\n"
            body {
                "\n"
                header {
                    "\n" h1 { (input.title) }
                    "\n"
                    nav {
                        @for section in &sections {
                            a href={ "#" (section.id) } { (section.title) }
                        }
                        a href="#questions" { "Questions" }
                    }
                    "\n"
                }
                "\n"
                main {
                    "\n"
                    @for section in &sections { (render_section(input, section)) }
                    (questions(&input.questions))
                }
                "\n" script { (PreEscaped(SCRIPT)) }
                "\n"
            }
            "\n"
        }
        "\n"
    };
    page.into_string()
}

fn render_section(input: &ReportInput<'_>, section: &Section) -> Markup {
    html! {
        section id=(section.id) {
            "\n" h2 { (section.title) }
            "\n"
            @for block in &section.blocks {
                @match block {
                    Block::Paragraph(text) => { p { (text) } "\n" }
                    Block::Heading(text) => { h3 { (text) } "\n" }
                    Block::List(items) => {
                        ul { "\n" @for item in items { li { (item) } "\n" } }
                        "\n"
                    }
                    Block::Table(table) => (render_table(table)),
                    Block::Chart(chart) => {
                        @if let Some(svg) = chart_svg(input, chart) {
                            // The charts escape their own text (`SvgText`).
                            figure class="figure" { (PreEscaped(svg)) }
                            "\n"
                        }
                    }
                }
            }
        }
        "\n"
    }
}

fn chart_svg(input: &ReportInput<'_>, chart: &ChartRef) -> Option<String> {
    let analysis = input.analysis;
    match chart {
        ChartRef::Discpow => charts::discpow(analysis),
        ChartRef::Rho => charts::rho(analysis),
        ChartRef::Categories(dimension) => charts::categories(analysis, dimension),
        ChartRef::Interaction(set) => charts::interaction(analysis, set),
        ChartRef::ComparisonForest(index) => input
            .comparison
            .and_then(|c| crate::comparison::forest(c, *index)),
        ChartRef::ComparisonInteraction(index) => input
            .comparison
            .and_then(|c| crate::comparison::interaction(c, *index)),
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

/// The class of a cell in a right-aligned (numeric) column.
fn num_class(numeric: bool) -> Option<&'static str> {
    numeric.then_some("num")
}

fn render_table(table: &Table) -> Markup {
    html! {
        table {
            "\n"
            @if table.headers.iter().any(|h| !h.is_empty()) {
                thead {
                    tr {
                        @for (header, &numeric) in table.headers.iter().zip(&table.numeric) {
                            th class=[num_class(numeric)] { (header) }
                        }
                    }
                }
                "\n"
            }
            tbody {
                "\n"
                @for row in &table.rows {
                    tr {
                        @for (cell, &numeric) in row.iter().zip(&table.numeric) {
                            td class=[num_class(numeric)] { (cell) }
                        }
                    }
                    "\n"
                }
            }
            "\n"
        }
        "\n"
    }
}

impl Render for Text {
    fn render(&self) -> Markup {
        html! {
            @match self {
                Text::Plain(s) => (s),
                Text::Code(s) => code { (s) },
                Text::Strong(s) => strong { (s) },
                Text::Join(parts) => { @for part in parts { (part) } },
            }
        }
    }
}

/// The browsable table: one row per question, filtered by text, set and refusal, sorted by
/// any score column.
fn questions(questions: &[QuestionRow]) -> Markup {
    let mut sets: Vec<&str> = questions.iter().map(|q| q.set.as_str()).collect();
    sets.sort_unstable();
    sets.dedup();
    html! {
        section id="questions" {
            "\n" h2 { "Questions" }
            "\n"
            div class="controls" {
                input type="search" id="question-search" placeholder="filter by any text"
                    aria-label="filter questions";
                select id="question-set" aria-label="set" {
                    option value="" { "all sets" }
                    @for set in &sets { option value=(set) { (set) } }
                }
                label { input type="checkbox" id="question-refused"; " refused only" }
                span class="count" id="question-count" {}
            }
            "\n"
            table id="question-table" {
                "\n"
                thead {
                    tr {
                        th { "id" } th { "categories" } th { "question" } th { "answer" }
                        th { "reference" }
                        @for score in ["AP", "nDCG@10", "R@10", "CS", "ROUGE-1", "BLEU"] {
                            th class="num" data-sort="1" { (score) }
                        }
                        th { "retrieved documents" }
                    }
                }
                "\n"
                tbody {
                    "\n"
                    @for q in questions { (question_row(q)) "\n" }
                }
                "\n"
            }
            "\n"
        }
        "\n"
    }
}

fn question_row(q: &QuestionRow) -> Markup {
    let values = q.scores.map(|s| {
        [
            s.ap,
            s.ndcg_10,
            s.recall_10,
            Some(s.cs),
            Some(s.rouge1),
            Some(s.bleu),
        ]
    });
    html! {
        tr data-set=(q.set) data-refused=(u8::from(q.refused)) {
            td { code { (q.id) } }
            td {
                @for (i, category) in q.categories.iter().enumerate() {
                    @if i > 0 { br; }
                    code { (category) }
                }
            }
            td class="text" { (q.question) }
            td class="text" {
                @match &q.answer {
                    Some(answer) if q.refused => {
                        span class="refused" { "refused" } " " (answer)
                    }
                    Some(answer) => (answer),
                    None => em { "not answered" },
                }
            }
            td class="text" { (q.reference) }
            @for i in 0..6 {
                @if let Some(v) = values.and_then(|v| v[i]) {
                    td class="num" data-v=(v) { (format!("{:.*}", if i == 5 { 1 } else { 3 }, v)) }
                } @else {
                    td class="num" data-v="" { "–" }
                }
            }
            td {
                @if !q.retrieved_docs.is_empty() {
                    details {
                        summary { (q.retrieved_docs.len()) " documents" }
                        ol {
                            @for doc in &q.retrieved_docs {
                                li {
                                    @if q.source_docs.contains(doc) {
                                        span class="source" title="a source document of the question" { (doc) }
                                    } @else {
                                        (doc)
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
