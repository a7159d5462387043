//! Text placed in an SVG document: maud's HTML escaping with XML 1.0's character rules on top.

use std::fmt::{self, Write as _};

/// Text as it may stand in SVG (XML) element content or a double-quoted attribute value; the
/// one escaping of text in SVG, used by [`Taxonomy::to_svg`](crate::Taxonomy::to_svg) and the
/// report's charts, whose HTML pages escape through maud the same way.
///
/// `& < > "` are escaped by [`maud::Escaper`]. On top, what XML 1.0 needs that HTML does not:
/// control characters other than tab, newline and carriage return, U+FFFE and U+FFFF (which
/// XML forbids even as references) become U+FFFD, so a stray control character in a category
/// name cannot make a figure unparseable; a carriage return is written as `&#13;` so that XML
/// parsers do not fold it into a newline.
///
/// ```
/// use hierarag_taxonomy::SvgText;
///
/// let label = format!("<text>{}</text>", SvgText("a\u{1}<b> & \"c\"\r"));
/// assert_eq!(label, "<text>a\u{fffd}&lt;b&gt; &amp; &quot;c&quot;&#13;</text>");
/// ```
#[derive(Debug, Clone, Copy)]
pub struct SvgText<'a>(pub &'a str);

impl fmt::Display for SvgText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut escaped = String::with_capacity(self.0.len());
        let mut rest = self.0;
        while let Some((at, c)) = rest.char_indices().find(|&(_, c)| is_xml_special(c)) {
            maud::Escaper::new(&mut escaped).write_str(&rest[..at])?;
            escaped.push_str(if c == '\r' { "&#13;" } else { "\u{fffd}" });
            rest = &rest[at + c.len_utf8()..];
        }
        maud::Escaper::new(&mut escaped).write_str(rest)?;
        f.write_str(&escaped)
    }
}

/// A character that XML 1.0 cannot carry as it is (tab and newline can).
fn is_xml_special(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}')
}

#[cfg(test)]
mod tests {
    use super::SvgText;

    fn text(s: &str) -> String {
        SvgText(s).to_string()
    }

    #[test]
    fn markup_is_escaped_and_entities_are_escaped_again() {
        assert_eq!(
            text("<script>alert(1)</script>"),
            "&lt;script&gt;alert(1)&lt;/script&gt;"
        );
        assert_eq!(
            text(r#"say "hi" & 'bye'"#),
            "say &quot;hi&quot; &amp; 'bye'"
        );
        assert_eq!(text("&amp;"), "&amp;amp;");
    }

    #[test]
    fn forbidden_characters_are_replaced_and_a_carriage_return_kept() {
        assert_eq!(
            text("x\u{0}y\u{1b}z\u{ffff}"),
            "x\u{fffd}y\u{fffd}z\u{fffd}"
        );
        assert_eq!(text("a\tb\nc\rd"), "a\tb\nc&#13;d");
    }

    #[test]
    fn other_text_is_kept_as_is() {
        let text_as_is = "ρ ≥ 2 · Größe · 日本語 · 🙂";
        assert_eq!(text(text_as_is), text_as_is);
        assert_eq!(text(""), "");
    }
}
