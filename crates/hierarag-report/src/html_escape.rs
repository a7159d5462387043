//! Escaping text for HTML and XML (SVG) element content and attribute values.
//!
//! Both functions escape the five markup characters (`& < > " '`), so their output is safe in
//! element content and in single- or double-quoted attribute values alike. The apostrophe
//! becomes `&#39;` rather than `&apos;`, which every HTML and XML parser understands.
//! [`escape_xml`] additionally replaces the characters XML 1.0 forbids even as references, so
//! a stray control character in a category name cannot make an SVG chart unparseable.

/// Escapes `text` for HTML element content or a quoted attribute value.
///
/// ```
/// use hierarag_report::html_escape::escape_html;
/// assert_eq!(escape_html(r#"<a href="x">Tom & 'Jerry'</a>"#),
///            "&lt;a href=&quot;x&quot;&gt;Tom &amp; &#39;Jerry&#39;&lt;/a&gt;");
/// ```
pub fn escape_html(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        push_markup_escaped(&mut escaped, c);
    }
    escaped
}

/// Escapes `text` for XML (and SVG) element content or a quoted attribute value.
///
/// Like [`escape_html`], and also: control characters other than tab, newline and carriage
/// return, U+FFFE and U+FFFF (which XML 1.0 forbids even as references) become U+FFFD, and a
/// carriage return is written as `&#13;` so that XML parsers do not fold it into a newline.
///
/// ```
/// use hierarag_report::html_escape::escape_xml;
/// assert_eq!(escape_xml("a\u{1}<b>"), "a\u{fffd}&lt;b&gt;");
/// ```
pub fn escape_xml(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\r' => escaped.push_str("&#13;"),
            '\t' | '\n' => escaped.push(c),
            '\u{0}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}' => escaped.push('\u{fffd}'),
            _ => push_markup_escaped(&mut escaped, c),
        }
    }
    escaped
}

fn push_markup_escaped(out: &mut String, c: char) {
    match c {
        '&' => out.push_str("&amp;"),
        '<' => out.push_str("&lt;"),
        '>' => out.push_str("&gt;"),
        '"' => out.push_str("&quot;"),
        '\'' => out.push_str("&#39;"),
        _ => out.push(c),
    }
}

#[cfg(test)]
mod tests {
    use super::{escape_html, escape_xml};

    #[test]
    fn script_tags_become_inert_text() {
        let escaped = escape_html("<script>alert(1)</script>");
        assert_eq!(escaped, "&lt;script&gt;alert(1)&lt;/script&gt;");
        assert!(!escaped.contains('<') && !escaped.contains('>'));
        assert_eq!(escape_xml("<script>alert(1)</script>"), escaped);
    }

    #[test]
    fn quotes_are_escaped_for_both_attribute_styles() {
        assert_eq!(
            escape_html(r#"say "hi" & 'bye'"#),
            "say &quot;hi&quot; &amp; &#39;bye&#39;"
        );
        assert_eq!(escape_xml(r#""'"#), "&quot;&#39;");
    }

    #[test]
    fn entities_are_escaped_again_not_passed_through() {
        assert_eq!(escape_html("&amp;"), "&amp;amp;");
        assert_eq!(escape_html("&#39;"), "&amp;#39;");
    }

    #[test]
    fn non_ascii_is_kept_as_is() {
        let text = "ρ ≥ 2 · Größe · 日本語 · 🙂";
        assert_eq!(escape_html(text), text);
        assert_eq!(escape_xml(text), text);
    }

    #[test]
    fn xml_replaces_forbidden_characters_and_html_keeps_them() {
        assert_eq!(
            escape_xml("x\u{0}y\u{1b}z\u{ffff}"),
            "x\u{fffd}y\u{fffd}z\u{fffd}"
        );
        assert_eq!(escape_xml("a\tb\nc\rd"), "a\tb\nc&#13;d");
        assert_eq!(escape_html("a\u{1b}b\rc"), "a\u{1b}b\rc");
    }

    #[test]
    fn empty_text_stays_empty() {
        assert_eq!(escape_html(""), "");
        assert_eq!(escape_xml(""), "");
    }
}
