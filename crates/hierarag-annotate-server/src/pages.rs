//! The HTML pages: an item with its rating form, the overview of all items, and messages.
//!
//! Built with maud, which escapes every text it splices (documents, questions, answers,
//! category names, annotator names and notes); only this file's style and script go in as
//! they are. The intended category, its parent, the set and the item id are never written into
//! a page.

use std::fmt::Write;

use hierarag_annotate::{Item, Rating};
use maud::{DOCTYPE, Markup, PreEscaped, html};

/// Percent-encodes `text` as one URL path segment (everything but RFC 3986's unreserved
/// characters), so a token can go into a link or a `Location` header as it is.
pub(crate) fn path_segment(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            encoded.push(char::from(byte));
        } else {
            let _ = write!(encoded, "%{byte:02X}");
        }
    }
    encoded
}

/// The annotator's base URL, `/a/<token>`.
pub(crate) fn annotator_url(token: &str) -> String {
    format!("/a/{}", path_segment(token))
}

/// The URL of the item at `position`.
pub(crate) fn item_url(token: &str, position: u32) -> String {
    format!("{}/item/{position}", annotator_url(token))
}

/// One rating scale: its form field, heading, question and the meaning of each value, with
/// the keys that pick each value.
struct Scale {
    field: &'static str,
    title: &'static str,
    prompt: &'static str,
    levels: &'static [(&'static str, &'static str)],
}

const SCALES: [Scale; 3] = [
    Scale {
        field: "correctness",
        title: "Answer correctness",
        prompt: "Is the reference answer a correct answer to the question, given the document?",
        levels: &[
            ("1", "wrong: incorrect, or does not answer the question"),
            ("2", "partly correct: major errors or omissions"),
            ("3", "mostly correct: minor errors or omissions"),
            ("4", "fully correct"),
        ],
    },
    Scale {
        field: "hallucination",
        title: "Hallucination",
        prompt: "Does the reference answer claim anything the document does not support?",
        levels: &[
            ("q", "none: everything is supported by the document"),
            ("w", "minor: an unsupported detail"),
            (
                "e",
                "severe: a central claim is unsupported or contradicted",
            ),
        ],
    },
    Scale {
        field: "answerability",
        title: "Answerability",
        prompt: "Can the question be answered from the document alone?",
        levels: &[
            ("a", "not answerable from the document"),
            ("s", "barely: mostly needs outside knowledge"),
            ("d", "mostly: a small gap"),
            ("f", "fully answerable from the document"),
        ],
    },
];

/// The scales of an answer-task item: the system's answer, not the reference, is rated.
const ANSWER_SCALES: [Scale; 2] = [
    Scale {
        field: "correctness",
        title: "Answer correctness",
        prompt: "Is the answer to rate a correct answer to the question, compared with the \
reference answer?",
        levels: SCALES[0].levels,
    },
    Scale {
        field: "hallucination",
        title: "Hallucination",
        prompt: "Does the answer to rate claim anything the documents do not support?",
        levels: SCALES[1].levels,
    },
];

/// The scales an item is rated on.
fn scales_of(item: &Item) -> &'static [Scale] {
    if item.answer.is_some() {
        &ANSWER_SCALES
    } else {
        &SCALES
    }
}

/// How far an annotator has got with one item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Unrated,
    Partial,
    Rated,
}

impl Status {
    /// Rated means every scale has a value, and the category is picked where it is asked for.
    pub(crate) fn of(item: &Item, rating: Option<&Rating>) -> Status {
        let Some(rating) = rating else {
            return Status::Unrated;
        };
        let complete = rating.correctness.is_some()
            && rating.hallucination.is_some()
            && (rating.answerability.is_some() || item.answer.is_some())
            && (!item.category_task || rating.category_pick.is_some());
        if complete {
            Status::Rated
        } else {
            Status::Partial
        }
    }

    fn label(self) -> &'static str {
        match self {
            Status::Unrated => "not rated",
            Status::Partial => "partly rated",
            Status::Rated => "rated",
        }
    }
}

/// Where an annotator stands: their name, token and how many items they have rated.
pub(crate) struct Progress<'a> {
    pub annotator: &'a str,
    pub token: &'a str,
    pub n_rated: usize,
    pub n_items: usize,
}

/// What the item page shows.
pub(crate) struct ItemPage<'a> {
    pub progress: Progress<'a>,
    pub item: &'a Item,
    /// 0-based index of the item in annotation order.
    pub index: usize,
    pub rating: Option<&'a Rating>,
    pub prev: Option<u32>,
    pub next: Option<u32>,
    pub csrf: &'a str,
    pub nonce: &'a str,
    pub saved: bool,
}

const STYLE: &str = "
* { box-sizing: border-box; }
body { font-family: system-ui, sans-serif; margin: 0; color: #1d1d1f; background: #f6f6f4;
       line-height: 1.45; }
header.bar { position: sticky; top: 0; z-index: 1; display: flex; flex-wrap: wrap; gap: 8px 20px;
             align-items: center; padding: 8px 16px; background: #fff; border-bottom: 1px solid #ddd; }
header.bar progress { width: 160px; }
header.bar nav { margin-left: auto; }
a { color: #0b57d0; }
a.disabled { color: #999; pointer-events: none; text-decoration: none; }
main { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 16px; padding: 16px; }
@media (max-width: 900px) { main { grid-template-columns: minmax(0, 1fr); } }
section { background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: 12px 16px; }
h1 { font-size: 1.3rem; } h2 { font-size: 1.05rem; margin: 12px 0 6px; }
h3 { font-size: 0.95rem; margin: 8px 0 4px; color: #555; }
.doc-text { white-space: pre-wrap; overflow-wrap: anywhere; max-height: 70vh; overflow: auto;
            border: 1px solid #e4e4e4; background: #fbfbfa; padding: 8px; font-size: 0.95rem; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0; }
fieldset { border: 1px solid #ddd; border-radius: 6px; margin: 12px 0; padding: 6px 12px; }
legend { font-weight: 600; }
fieldset p.prompt { margin: 0 0 4px; color: #444; font-size: 0.92rem; }
label.choice { display: block; padding: 2px 0; cursor: pointer; }
kbd { display: inline-block; min-width: 1.4em; text-align: center; font-size: 0.8rem;
      border: 1px solid #bbb; border-radius: 3px; padding: 0 3px; background: #f3f3f3; }
textarea { width: 100%; font: inherit; }
.buttons { display: flex; gap: 8px; align-items: center; margin-top: 8px; }
button { font: inherit; padding: 4px 14px; }
.flash { margin: 0; padding: 4px 10px; background: #e6f4ea; border: 1px solid #b7dfc2; border-radius: 4px; }
.help { color: #555; font-size: 0.85rem; }
#dirty { color: #a15c00; }
table { border-collapse: collapse; width: 100%; }
td, th { text-align: left; padding: 4px 8px; border-bottom: 1px solid #eee; vertical-align: top; }
.status-rated { color: #137333; } .status-partial { color: #a15c00; } .status-unrated { color: #777; }
";

/// The keyboard shortcuts; runs under the page's CSP nonce. Letters work with Caps Lock, and
/// nothing happens while typing in the note or with a modifier held.
const SCRIPT: &str = r#"
(function () {
  var keys = {"1": "correctness-0", "2": "correctness-1", "3": "correctness-2", "4": "correctness-3",
              "q": "hallucination-0", "w": "hallucination-1", "e": "hallucination-2",
              "a": "answerability-0", "s": "answerability-1", "d": "answerability-2",
              "f": "answerability-3"};
  var form = document.getElementById("rating");
  var dirty = document.getElementById("dirty");
  function changed() { if (dirty) { dirty.hidden = false; } }
  if (form) {
    form.addEventListener("change", changed);
    form.addEventListener("input", changed);
  }
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) { return; }
    var target = event.target;
    var tag = target && target.tagName;
    if (tag === "TEXTAREA" || tag === "SELECT" || (target && target.isContentEditable) ||
        (tag === "INPUT" && target.type !== "radio" && target.type !== "checkbox")) { return; }
    var key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
    if (Object.prototype.hasOwnProperty.call(keys, key)) {
      var radio = document.getElementById(keys[key]);
      if (radio) {
        event.preventDefault();
        radio.checked = true;
        radio.dispatchEvent(new Event("change", {bubbles: true}));
      }
      return;
    }
    if (key === "Enter") {
      if (tag === "A" || tag === "BUTTON") { return; }
      var button = document.getElementById("save-next");
      if (button) { event.preventDefault(); button.click(); }
      return;
    }
    if (key === "j" || key === "k") {
      var link = document.getElementById(key === "j" ? "next" : "prev");
      if (link && link.getAttribute("href")) { event.preventDefault(); window.location.assign(link.href); }
    }
  });
})();
"#;

/// A whole page: the head with its title and style, then `body`.
fn document(title: &str, body: Markup) -> String {
    html! {
        (DOCTYPE) "\n"
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="referrer" content="same-origin";
                title { (title) }
                style { (PreEscaped(STYLE)) }
            }
            "\n"
            body { "\n" (body) }
        }
        "\n"
    }
    .into_string()
}

fn progress_bar(progress: &Progress<'_>, middle: Markup) -> Markup {
    html! {
        header class="bar" {
            span class="who" { "Annotator: " strong id="annotator" { (progress.annotator) } }
            span id="progress" { (progress.n_rated) " / " (progress.n_items) " rated" }
            progress max=(progress.n_items) value=(progress.n_rated) {}
            a href={ (annotator_url(progress.token)) "/items" } { "all items" }
            (middle)
        }
        "\n"
    }
}

fn link_or_disabled(id: &str, rel: &str, text: Markup, href: Option<String>) -> Markup {
    html! {
        @if let Some(href) = href {
            a id=(id) rel=(rel) href=(href) { (text) }
        } @else {
            a id=(id) class="disabled" aria-disabled="true" { (text) }
        }
    }
}

/// The page of one item with its rating form, pre-filled with the annotator's saved rating.
pub(crate) fn item_page(page: &ItemPage<'_>) -> String {
    let item = page.item;
    let token = page.progress.token;
    let nav = html! {
        nav {
            (link_or_disabled(
                "prev",
                "prev",
                html! { "← previous " kbd { "k" } },
                page.prev.map(|p| item_url(token, p)),
            ))
            " · "
            span id="position" { "item " (page.index + 1) " of " (page.progress.n_items) }
            " · "
            (link_or_disabled(
                "next",
                "next",
                html! { "next " kbd { "j" } " →" },
                page.next.map(|p| item_url(token, p)),
            ))
        }
    };
    let values = page
        .rating
        .map(|r| [r.correctness, r.hallucination, r.answerability]);
    let pick = page.rating.and_then(|r| r.category_pick.as_deref());
    let note = page.rating.and_then(|r| r.note.as_deref()).unwrap_or("");
    let body = html! {
        (progress_bar(&page.progress, nav))
        main {
            "\n"
            section class="documents" {
                "\n"
                h2 { @if item.documents.len() == 1 { "Document" } @else { "Documents" } }
                "\n"
                @for (doc_idx, (doc_id, text)) in item.documents.iter().enumerate() {
                    article class="doc" {
                        h3 { (doc_idx + 1) ". " (doc_id) }
                        div class="doc-text" id={ "doc-" (doc_idx) } tabindex="0" { (text) }
                    }
                    "\n"
                }
                @if item.documents.is_empty() { p { "(no document)" } "\n" }
            }
            "\n"
            section class="rating" {
                "\n"
                @if page.saved {
                    p class="flash" role="status" id="saved" { "Saved." }
                    "\n"
                }
                h2 { "Question" } p class="text" id="question" { (item.question) }
                "\n"
                h2 { "Reference answer" } p class="text" id="reference" { (item.reference) }
                "\n"
                @if let Some(answer) = &item.answer {
                    // Which system answered is not shown.
                    h2 { "Answer to rate" } p class="text" id="answer" { (answer.text) }
                    "\n"
                }
                form method="post" id="rating" action=(item_url(token, item.position)) {
                    "\n"
                    input type="hidden" name="csrf" value=(page.csrf);
                    "\n"
                    @for (scale, saved) in scales_of(item).iter().zip(values.unwrap_or_default()) {
                        (scale_fieldset(scale, saved))
                    }
                    @if item.category_task {
                        fieldset id="category" {
                            legend { "Category" }
                            p class="prompt" {
                                "Which category of the dimension " strong { (item.dimension) }
                                " fits the question best?"
                            }
                            "\n"
                            @for (choice_idx, choice) in item.choices.iter().enumerate() {
                                label class="choice" {
                                    input type="radio" name="category" id={ "category-" (choice_idx) }
                                        value=(choice) checked[pick == Some(choice.as_str())];
                                    " " (choice)
                                }
                                "\n"
                            }
                        }
                        "\n"
                    }
                    label for="note" { strong { "Note" } " (optional)" }
                    "\n"
                    textarea id="note" name="note" rows="3" {
                        // A leading newline in a textarea is dropped by the parser: write one
                        // more so a note that starts with a newline keeps it.
                        @if note.starts_with('\n') { "\n" }
                        (note)
                    }
                    "\n"
                    div class="buttons" {
                        button type="submit" id="save-next" name="action" value="next" {
                            "Save & next " kbd { "Enter" }
                        }
                        button type="submit" id="save" name="action" value="save" { "Save" }
                        span id="dirty" hidden { "unsaved changes" }
                    }
                    "\n"
                }
                "\n"
                p class="help" {
                    "Keys: " kbd { "1" } "–" kbd { "4" } " correctness 0–3 · "
                    kbd { "q" } " " kbd { "w" } " " kbd { "e" } " hallucination 0–2 · "
                    kbd { "a" } " " kbd { "s" } " " kbd { "d" } " " kbd { "f" }
                    " answerability 0–3 · " kbd { "Enter" } " save & next · "
                    kbd { "j" } " / " kbd { "k" } " next / previous item (without saving). \
                    Keys do nothing while you type in the note."
                }
                "\n"
            }
            "\n"
        }
        "\n"
        script nonce=(page.nonce) { (PreEscaped(SCRIPT)) }
        "\n"
    };
    document(
        &format!(
            "Item {} of {} · HieraRAG annotation",
            page.index + 1,
            page.progress.n_items
        ),
        body,
    )
}

/// One scale's fieldset: a radio button per value, `saved` checked.
fn scale_fieldset(scale: &Scale, saved: Option<u8>) -> Markup {
    html! {
        fieldset id=(scale.field) {
            legend { (scale.title) }
            p class="prompt" { (scale.prompt) }
            "\n"
            @for (value, (key, meaning)) in scale.levels.iter().enumerate() {
                label class="choice" {
                    input type="radio" name=(scale.field) id={ (scale.field) "-" (value) }
                        value=(value) checked[saved == u8::try_from(value).ok()];
                    " " kbd { (key) } " " strong { (value) } " " (meaning)
                }
                "\n"
            }
        }
        "\n"
    }
}

/// One row of the overview: an item, its 0-based index and the annotator's status.
pub(crate) struct OverviewRow<'a> {
    pub item: &'a Item,
    pub index: usize,
    pub status: Status,
}

/// Every item with its status; with `done`, led by a note that everything is rated.
pub(crate) fn overview_page(
    progress: &Progress<'_>,
    rows: &[OverviewRow<'_>],
    done: bool,
) -> String {
    let body = html! {
        (progress_bar(progress, html! {}))
        main style="display:block" {
            section {
                "\n"
                @if done {
                    h1 id="done" {
                        "All done: " (progress.n_rated) " of " (progress.n_items)
                        " items rated. Thank you!"
                    }
                    "\n" p { "You can still change any rating below." }
                } @else {
                    h1 { "Items" }
                    "\n"
                    p {
                        a id="continue" href=(annotator_url(progress.token)) {
                            "Continue with the first item not fully rated"
                        }
                    }
                }
                "\n"
                @if rows.is_empty() {
                    p { "This annotation store has no items." }
                    "\n"
                } @else {
                    table {
                        thead { tr { th { "#" } th { "Question" } th { "Status" } } }
                        tbody {
                            "\n"
                            @for row in rows { (overview_row(progress.token, row)) "\n" }
                        }
                    }
                    "\n"
                }
            }
        }
        "\n"
    };
    document("Items · HieraRAG annotation", body)
}

fn overview_row(token: &str, row: &OverviewRow<'_>) -> Markup {
    let question: String = row.item.question.chars().take(120).collect();
    let ellipsis = if question.len() < row.item.question.len() {
        "…"
    } else {
        ""
    };
    let class = match row.status {
        Status::Rated => "status-rated",
        Status::Partial => "status-partial",
        Status::Unrated => "status-unrated",
    };
    html! {
        tr {
            td { a href=(item_url(token, row.item.position)) { (row.index + 1) } }
            td { (question) (ellipsis) }
            td class=(class) { (row.status.label()) }
        }
    }
}

/// A page with a heading and a message (errors, the start page).
pub(crate) fn message_page(title: &str, message: &str, back: Option<&str>) -> String {
    let body = html! {
        main style="display:block" {
            section {
                h1 { (title) }
                p id="message" { (message) }
                @if let Some(back) = back {
                    p { a id="back" href=(back) { "Back" } }
                }
            }
        }
        "\n"
    };
    document(&format!("{title} · HieraRAG annotation"), body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hierarag_annotate::Item;

    fn item(category: &str, parent: Option<&str>) -> Item {
        Item {
            item_id: format!("rq1-{category}-007"),
            position: 6,
            set: format!("set-{category}"),
            dimension: "qt".into(),
            level: hierarag_taxonomy::Granularity::Fine,
            category: category.into(),
            parent: parent.map(Into::into),
            category_task: true,
            question: "What does <b>bold</b> mean?".into(),
            reference: "It \"emphasises\" & more.".into(),
            documents: vec![("doc-1".into(), "A <script>x()</script> document.".into())],
            choices: vec!["comparison".into(), "definition".into(), "procedure".into()],
            answer: None,
        }
    }

    fn render(item: &Item, rating: Option<&Rating>) -> String {
        item_page(&ItemPage {
            progress: Progress {
                annotator: "ann <1>",
                token: "tok",
                n_rated: 2,
                n_items: 9,
            },
            item,
            index: 6,
            rating,
            prev: Some(5),
            next: None,
            csrf: "c5rf",
            nonce: "n0nce",
            saved: true,
        })
    }

    #[test]
    fn the_item_page_does_not_depend_on_the_intended_category() {
        let a = render(&item("definition", Some("factoid")), None);
        let b = render(&item("procedure", Some("reasoning")), None);
        assert_eq!(a, b);
        for hidden in ["factoid", "rq1-definition-007", "set-definition"] {
            assert!(!a.contains(hidden), "{hidden} leaked");
        }
    }

    #[test]
    fn corpus_text_is_escaped_and_saved_values_are_checked() {
        let item = item("definition", None);
        let rating = Rating {
            item_id: item.item_id.clone(),
            annotator: "ann".into(),
            correctness: Some(2),
            hallucination: Some(0),
            answerability: None,
            category_pick: Some("procedure".into()),
            note: Some("\nstarts with </textarea>".into()),
            updated_unix_s: 0,
        };
        let html = render(&item, Some(&rating));
        assert!(html.contains("A &lt;script&gt;x()&lt;/script&gt; document."));
        assert!(html.contains("What does &lt;b&gt;bold&lt;/b&gt; mean?"));
        assert!(html.contains("ann &lt;1&gt;"));
        assert!(!html.contains("<script>x()"));
        assert!(html.contains("id=\"correctness-2\" value=\"2\" checked>"));
        assert!(html.contains("id=\"hallucination-0\" value=\"0\" checked>"));
        assert!(!html.contains("answerability-0\" value=\"0\" checked"));
        assert!(html.contains("value=\"procedure\" checked>"));
        assert!(html.contains("rows=\"3\">\n\nstarts with &lt;/textarea&gt;</textarea>"));
        assert!(html.contains("<script nonce=\"n0nce\">"));
        assert!(html.contains("2 / 9 rated"));
        assert!(html.contains("href=\"/a/tok/item/5\""));
        assert_eq!(html.matches("<script").count(), 1);
    }

    #[test]
    fn an_answer_item_shows_the_answer_not_its_system_and_asks_two_scales() {
        let mut item = item("definition", None);
        item.category_task = false;
        item.choices.clear();
        item.answer = Some(hierarag_annotate::SystemAnswer {
            question_id: "rq1-definition-007".into(),
            system: "secret-system".into(),
            text: "Bold <i>means</i> heavy.".into(),
        });
        let html = render(&item, None);
        assert!(html.contains("Answer to rate"));
        assert!(html.contains("Bold &lt;i&gt;means&lt;/i&gt; heavy."));
        assert!(!html.contains("secret-system"));
        assert!(html.contains("id=\"correctness-3\""));
        assert!(html.contains("id=\"hallucination-2\""));
        assert!(!html.contains("id=\"answerability-0\""));
        let rating = Rating {
            item_id: item.item_id.clone(),
            annotator: "ann".into(),
            correctness: Some(1),
            hallucination: Some(0),
            answerability: None,
            category_pick: None,
            note: None,
            updated_unix_s: 0,
        };
        assert_eq!(Status::of(&item, Some(&rating)), Status::Rated);
    }

    #[test]
    fn path_segments_are_percent_encoded() {
        assert_eq!(path_segment("abc-1_2.3~"), "abc-1_2.3~");
        assert_eq!(path_segment("a/b c\"é"), "a%2Fb%20c%22%C3%A9");
    }
}
