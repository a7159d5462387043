//! Text from a corpus or a user's system placed inside a prompt as data that cannot end its
//! own block.
//!
//! Prompts put documents between `<document number="N">` and `</document>` and tell the model
//! that everything between those tags is data. A web page that contains `</document>` would
//! close its block early, and whatever follows it ("Ignore all previous instructions", a fake
//! `<document number="2">`) would stand outside the region declared as data. [`neutralise_tag`]
//! rewrites every tag of that name in the text, so that the only tags of that name in a prompt
//! are the prompt's own; [`one_line`] keeps a text on one line, so that line-based structure
//! (numbered passages, `Question:`) cannot be forged either.
//!
//! Both are deterministic, so a prompt, and with it the response cache's key, stays the same
//! from run to run; text without the tag or line breaks is returned unchanged.

use std::borrow::Cow;

/// The sentence the answering prompt asks for when its passages do not hold the answer, and
/// so the reference answer of a question marked unanswerable: one sentence for both, so that
/// a right refusal matches its reference exactly.
pub const REFUSAL: &str = "I cannot answer this question from the given context.";

/// `text` with every opening or closing tag named `tag` made inert: the `<` that starts it
/// becomes `&lt;`. A tag is recognised as a model reading loosely would: in any case, with
/// spaces after `<`, a `/` or `\/` before the name, and any name that starts with `tag`
/// (`</documents>`, `<document-2>`), so `</document>`, `</DOCUMENT >`, `< /document>`,
/// `<\/document>` and `<document number="2">` are all neutralised. `tag` is ASCII.
pub fn neutralise_tag<'a>(text: &'a str, tag: &str) -> Cow<'a, str> {
    let bytes = text.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    for (at, _) in text.match_indices('<') {
        if starts_tag(&bytes[at + 1..], tag.as_bytes()) {
            let out = out.get_or_insert_with(|| String::with_capacity(text.len() + 16));
            out.push_str(&text[copied..at]);
            out.push_str("&lt;");
            copied = at + 1;
        }
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut out) => {
            out.push_str(&text[copied..]);
            Cow::Owned(out)
        }
    }
}

/// Whether `rest` (what follows a `<`) begins the tag `name`: optional spaces, an optional
/// `/` or `\/`, optional spaces, then the name in any case.
fn starts_tag(rest: &[u8], name: &[u8]) -> bool {
    let mut i = 0;
    let skip_spaces = |i: &mut usize| {
        while rest.get(*i).is_some_and(u8::is_ascii_whitespace) {
            *i += 1;
        }
    };
    skip_spaces(&mut i);
    if rest.get(i) == Some(&b'\\') && rest.get(i + 1) == Some(&b'/') {
        i += 2;
    } else if rest.get(i) == Some(&b'/') {
        i += 1;
    }
    skip_spaces(&mut i);
    rest.len() >= i + name.len() && rest[i..i + name.len()].eq_ignore_ascii_case(name)
}

/// `text` on one line: every run of line breaks (`\n`, `\r`, and the Unicode line and
/// paragraph separators) with the spaces around it becomes one space.
pub fn one_line(text: &str) -> Cow<'_, str> {
    let is_break = |c: char| {
        matches!(
            c,
            '\n' | '\r' | '\u{0b}' | '\u{0c}' | '\u{85}' | '\u{2028}' | '\u{2029}'
        )
    };
    if !text.contains(is_break) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut pending_break = false;
    for c in text.chars() {
        if is_break(c) {
            pending_break = true;
            while out.ends_with([' ', '\t']) {
                out.pop();
            }
        } else if pending_break && (c == ' ' || c == '\t') {
            continue;
        } else {
            if pending_break {
                if !out.is_empty() {
                    out.push(' ');
                }
                pending_break = false;
            }
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn every_spelling_of_the_tag_is_neutralised() {
        for (text, want) in [
            ("a </document> b", "a &lt;/document> b"),
            ("</DOCUMENT >", "&lt;/DOCUMENT >"),
            ("< /document>", "&lt; /document>"),
            ("<\\/document>", "&lt;\\/document>"),
            ("<document number=\"2\">", "&lt;document number=\"2\">"),
            ("</documents>", "&lt;/documents>"),
            ("x<document", "x&lt;document"),
        ] {
            assert_eq!(neutralise_tag(text, "document"), want, "{text}");
        }
    }

    #[test]
    fn other_tags_and_plain_text_are_left_alone() {
        for text in [
            "a < b and c > d",
            "<doc>",
            "</p>",
            "<",
            "no tags",
            "< / doc",
        ] {
            assert!(
                matches!(neutralise_tag(text, "document"), Cow::Borrowed(t) if t == text),
                "{text}"
            );
        }
    }

    #[test]
    fn one_line_joins_lines_with_one_space() {
        assert_eq!(one_line("a\n\n[2] b \r\n  c"), "a [2] b c");
        assert_eq!(one_line("\nlead"), "lead");
        assert_eq!(one_line("a\u{2028}b"), "a b");
        assert!(matches!(one_line("one line"), Cow::Borrowed("one line")));
    }

    proptest! {
        #[test]
        fn no_tag_survives_and_nothing_else_changes(text in "(<|/|\\\\| |[dD]ocument|[a-z]|\n|é){0,40}") {
            let out = neutralise_tag(&text, "document");
            // No position of the output starts a tag.
            for (at, _) in out.match_indices('<') {
                prop_assert!(!starts_tag(&out.as_bytes()[at + 1..], b"document"), "{out:?}");
            }
            // Undoing the rewrite gives the text back.
            prop_assert_eq!(out.replace("&lt;", "<"), text.replace("&lt;", "<"));
        }

        #[test]
        fn one_line_has_no_line_break(text in "(a|b| |\n|\r|\u{2029}){0,30}") {
            let out = one_line(&text);
            let breaks = ['\n', '\r', '\u{2029}'];
            prop_assert!(!out.contains(breaks), "{:?}", out);
            prop_assert_eq!(
                out.split_whitespace().collect::<Vec<_>>(),
                text.split_whitespace().collect::<Vec<_>>()
            );
        }
    }
}
