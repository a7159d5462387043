//! The HTML pages: an item with its rating form, the overview of all items, and messages.
//!
//! Every text that does not come from this file (documents, questions, answers, category
//! names, annotator names and notes) goes through [`escape_html`]; the intended category,
//! its parent, the set and the item id are never written into a page.

use std::fmt::Write;

use hierarag_annotate::{Item, Rating};

/// Escaping is the report's: the same five characters, one implementation.
pub use hierarag_report::html_escape::escape_html;

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
            && rating.answerability.is_some()
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

fn document_start(out: &mut String, title: &str) {
    let _ = writeln!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"referrer\" content=\"same-origin\">\
         <title>{}</title><style>{STYLE}</style></head>\n<body>",
        escape_html(title)
    );
}

fn progress_bar(out: &mut String, progress: &Progress<'_>, middle: &str) {
    let _ = writeln!(
        out,
        "<header class=\"bar\"><span class=\"who\">Annotator: <strong id=\"annotator\">{name}</strong></span>\
         <span id=\"progress\">{rated} / {total} rated</span>\
         <progress max=\"{total}\" value=\"{rated}\"></progress>\
         <a href=\"{overview}/items\">all items</a>{middle}</header>",
        name = escape_html(progress.annotator),
        rated = progress.n_rated,
        total = progress.n_items,
        overview = escape_html(&annotator_url(progress.token)),
    );
}

fn link_or_disabled(id: &str, rel: &str, text: &str, href: Option<String>) -> String {
    match href {
        Some(href) => format!(
            "<a id=\"{id}\" rel=\"{rel}\" href=\"{}\">{text}</a>",
            escape_html(&href)
        ),
        None => format!("<a id=\"{id}\" class=\"disabled\" aria-disabled=\"true\">{text}</a>"),
    }
}

/// The page of one item with its rating form, pre-filled with the annotator's saved rating.
pub(crate) fn item_page(page: &ItemPage<'_>) -> String {
    let item = page.item;
    let token = page.progress.token;
    let mut out =
        String::with_capacity(8_192 + item.documents.iter().map(|d| d.1.len()).sum::<usize>());
    document_start(
        &mut out,
        &format!(
            "Item {} of {} · HieraRAG annotation",
            page.index + 1,
            page.progress.n_items
        ),
    );
    let nav = format!(
        "<nav>{} · <span id=\"position\">item {} of {}</span> · {}</nav>",
        link_or_disabled(
            "prev",
            "prev",
            "← previous <kbd>k</kbd>",
            page.prev.map(|p| item_url(token, p))
        ),
        page.index + 1,
        page.progress.n_items,
        link_or_disabled(
            "next",
            "next",
            "next <kbd>j</kbd> →",
            page.next.map(|p| item_url(token, p))
        ),
    );
    progress_bar(&mut out, &page.progress, &nav);
    out.push_str("<main>\n<section class=\"documents\">\n");
    let _ = writeln!(
        out,
        "<h2>{}</h2>",
        if item.documents.len() == 1 {
            "Document"
        } else {
            "Documents"
        }
    );
    for (doc_idx, (doc_id, text)) in item.documents.iter().enumerate() {
        let _ = writeln!(
            out,
            "<article class=\"doc\"><h3>{}. {}</h3>\
             <div class=\"doc-text\" id=\"doc-{doc_idx}\" tabindex=\"0\">{}</div></article>",
            doc_idx + 1,
            escape_html(doc_id),
            escape_html(text)
        );
    }
    if item.documents.is_empty() {
        out.push_str("<p>(no document)</p>\n");
    }
    out.push_str("</section>\n<section class=\"rating\">\n");
    if page.saved {
        out.push_str("<p class=\"flash\" role=\"status\" id=\"saved\">Saved.</p>\n");
    }
    let _ = writeln!(
        out,
        "<h2>Question</h2><p class=\"text\" id=\"question\">{}</p>\n\
         <h2>Reference answer</h2><p class=\"text\" id=\"reference\">{}</p>",
        escape_html(&item.question),
        escape_html(&item.reference)
    );
    let _ = writeln!(
        out,
        "<form method=\"post\" id=\"rating\" action=\"{}\">\n\
         <input type=\"hidden\" name=\"csrf\" value=\"{}\">",
        escape_html(&item_url(token, item.position)),
        escape_html(page.csrf)
    );
    let values = page
        .rating
        .map(|r| [r.correctness, r.hallucination, r.answerability]);
    for (scale_idx, scale) in SCALES.iter().enumerate() {
        let saved = values.and_then(|values| values[scale_idx]);
        let _ = writeln!(
            out,
            "<fieldset id=\"{field}\"><legend>{title}</legend><p class=\"prompt\">{prompt}</p>",
            field = scale.field,
            title = scale.title,
            prompt = scale.prompt
        );
        for (value, (key, meaning)) in scale.levels.iter().enumerate() {
            let _ = writeln!(
                out,
                "<label class=\"choice\"><input type=\"radio\" name=\"{field}\" id=\"{field}-{value}\" \
                 value=\"{value}\"{checked}> <kbd>{key}</kbd> <strong>{value}</strong> {meaning}</label>",
                field = scale.field,
                checked = if saved == u8::try_from(value).ok() {
                    " checked"
                } else {
                    ""
                },
            );
        }
        out.push_str("</fieldset>\n");
    }
    if item.category_task {
        let pick = page.rating.and_then(|r| r.category_pick.as_deref());
        let _ = writeln!(
            out,
            "<fieldset id=\"category\"><legend>Category</legend>\
             <p class=\"prompt\">Which category of the dimension <strong>{}</strong> fits the \
             question best?</p>",
            escape_html(&item.dimension)
        );
        for (choice_idx, choice) in item.choices.iter().enumerate() {
            let _ = writeln!(
                out,
                "<label class=\"choice\"><input type=\"radio\" name=\"category\" \
                 id=\"category-{choice_idx}\" value=\"{choice}\"{checked}> {choice}</label>",
                choice = escape_html(choice),
                checked = if pick == Some(choice.as_str()) {
                    " checked"
                } else {
                    ""
                },
            );
        }
        out.push_str("</fieldset>\n");
    }
    let note = page.rating.and_then(|r| r.note.as_deref()).unwrap_or("");
    let _ = writeln!(
        out,
        "<label for=\"note\"><strong>Note</strong> (optional)</label>\n\
         <textarea id=\"note\" name=\"note\" rows=\"3\">{}</textarea>\n\
         <div class=\"buttons\"><button type=\"submit\" id=\"save-next\" name=\"action\" value=\"next\">\
         Save &amp; next <kbd>Enter</kbd></button>\
         <button type=\"submit\" id=\"save\" name=\"action\" value=\"save\">Save</button>\
         <span id=\"dirty\" hidden>unsaved changes</span></div>\n</form>\n\
         <p class=\"help\">Keys: <kbd>1</kbd>–<kbd>4</kbd> correctness 0–3 · <kbd>q</kbd> <kbd>w</kbd> \
         <kbd>e</kbd> hallucination 0–2 · <kbd>a</kbd> <kbd>s</kbd> <kbd>d</kbd> <kbd>f</kbd> \
         answerability 0–3 · <kbd>Enter</kbd> save &amp; next · <kbd>j</kbd> / <kbd>k</kbd> next / \
         previous item (without saving). Keys do nothing while you type in the note.</p>\n\
         </section>\n</main>\n<script nonce=\"{}\">{SCRIPT}</script>\n</body></html>",
        // A leading newline in a textarea is dropped by the parser: write one more so a note
        // that starts with a newline keeps it.
        if note.starts_with('\n') {
            format!("\n{}", escape_html(note))
        } else {
            escape_html(note)
        },
        escape_html(page.nonce)
    );
    out
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
    let mut out = String::with_capacity(4_096 + 200 * rows.len());
    document_start(&mut out, "Items · HieraRAG annotation");
    progress_bar(&mut out, progress, "");
    out.push_str("<main style=\"display:block\"><section>\n");
    if done {
        let _ = writeln!(
            out,
            "<h1 id=\"done\">All done: {} of {} items rated. Thank you!</h1>\n\
             <p>You can still change any rating below.</p>",
            progress.n_rated, progress.n_items
        );
    } else {
        let _ = writeln!(
            out,
            "<h1>Items</h1>\n<p><a id=\"continue\" href=\"{}\">Continue with the first item \
             not fully rated</a></p>",
            escape_html(&annotator_url(progress.token))
        );
    }
    if rows.is_empty() {
        out.push_str("<p>This annotation store has no items.</p>\n");
    } else {
        out.push_str(
            "<table><thead><tr><th>#</th><th>Question</th><th>Status</th></tr></thead><tbody>\n",
        );
        for row in rows {
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
            let _ = writeln!(
                out,
                "<tr><td><a href=\"{}\">{}</a></td><td>{}{ellipsis}</td><td class=\"{class}\">{}</td></tr>",
                escape_html(&item_url(progress.token, row.item.position)),
                row.index + 1,
                escape_html(&question),
                row.status.label()
            );
        }
        out.push_str("</tbody></table>\n");
    }
    out.push_str("</section></main>\n</body></html>\n");
    out
}

/// A page with a heading and a message (errors, the start page).
pub(crate) fn message_page(title: &str, message: &str, back: Option<&str>) -> String {
    let mut out = String::with_capacity(2_048);
    document_start(&mut out, &format!("{title} · HieraRAG annotation"));
    let _ = write!(
        out,
        "<main style=\"display:block\"><section><h1>{}</h1><p id=\"message\">{}</p>",
        escape_html(title),
        escape_html(message)
    );
    if let Some(back) = back {
        let _ = write!(
            out,
            "<p><a id=\"back\" href=\"{}\">Back</a></p>",
            escape_html(back)
        );
    }
    out.push_str("</section></main>\n</body></html>\n");
    out
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
    fn path_segments_are_percent_encoded() {
        assert_eq!(path_segment("abc-1_2.3~"), "abc-1_2.3~");
        assert_eq!(path_segment("a/b c\"é"), "a%2Fb%20c%22%C3%A9");
    }
}
