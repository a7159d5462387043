//! The one scrubber between the secrets a process is configured with and every byte it lets
//! out. A secret is registered where it is read from the environment (an `api_key_env` value,
//! a `${VAR}` of an http system's headers, a header's whole value); from then on every text
//! that leaves the process — the files of a run directory and of the asset store, the
//! response caches, logs, stdout and stderr — passes through [`scrub`] (or a [`ScrubWriter`]),
//! and so does every text that comes in from a provider or a user's system (replies and error
//! messages) before anything stores it. A provider that quotes the key back in a 500, or a
//! gateway that echoes a header in a reply, leaves `[redacted]` where the secret was.
//!
//! What is registered: each value of [`MIN_VALUE`] characters or more, and each of its words
//! of [`MIN_WORD`] or more (the token of `Bearer <token>`); each as it is, as JSON escapes it
//! and as HTML escapes it. Shorter texts are not secrets worth the damage of replacing them
//! in every text. Matches are replaced leftmost-longest, all at once ([`aho_corasick`]).
//!
//! The registry is the process's, as its environment is: the command line and the Python
//! package register what their runs read, and a secret once registered stays registered.

use std::borrow::Cow;
use std::io::{self, Write};
use std::sync::{Arc, RwLock};

use aho_corasick::{AhoCorasick, MatchKind};

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted]";
/// The shortest value registered whole.
pub const MIN_VALUE: usize = 4;
/// The shortest word of a value registered on its own.
pub const MIN_WORD: usize = 8;

/// A set of secrets (every form of each) and their automaton: the process's registry, or a
/// client's own (the literal header values of an http system, kept out of its errors).
#[derive(Default, Clone)]
pub struct Secrets {
    patterns: Vec<String>,
    matcher: Option<Arc<AhoCorasick>>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets({} hidden)", self.patterns.len())
    }
}

impl Secrets {
    /// The secrets of `values`, as [`register`] takes each.
    pub fn of<'a>(values: impl IntoIterator<Item = &'a str>) -> Secrets {
        let mut secrets = Secrets::default();
        for value in values {
            secrets.add(value);
        }
        secrets
    }

    /// Adds `value`, and each long word of it; returns whether anything was new.
    fn add(&mut self, value: &str) -> bool {
        let value = value.trim();
        let whole = (value.chars().count() >= MIN_VALUE).then_some(value);
        let words = value
            .split_whitespace()
            .filter(|word| word.chars().count() >= MIN_WORD);
        let before = self.patterns.len();
        for secret in whole.into_iter().chain(words) {
            for form in [
                secret.to_string(),
                serde_json_escape(secret),
                html_escape(secret),
            ] {
                if !self.patterns.contains(&form) {
                    self.patterns.push(form);
                }
            }
        }
        if self.patterns.len() == before {
            return false;
        }
        let matcher = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&self.patterns)
            .expect("a few short literal patterns build");
        self.matcher = Some(Arc::new(matcher));
        true
    }

    /// `text` with every one of these secrets replaced by [`REDACTED`]; borrowed when it
    /// holds none.
    pub fn scrub<'t>(&self, text: &'t str) -> Cow<'t, str> {
        match &self.matcher {
            Some(matcher) if matcher.is_match(text) => {
                Cow::Owned(matcher.replace_all(text, &vec![REDACTED; matcher.patterns_len()]))
            }
            _ => Cow::Borrowed(text),
        }
    }

    /// [`Secrets::scrub`] over bytes, which need not be UTF-8.
    pub fn scrub_bytes<'t>(&self, bytes: &'t [u8]) -> Cow<'t, [u8]> {
        match &self.matcher {
            Some(matcher) if matcher.is_match(bytes) => Cow::Owned(
                matcher
                    .replace_all_bytes(bytes, &vec![REDACTED.as_bytes(); matcher.patterns_len()]),
            ),
            _ => Cow::Borrowed(bytes),
        }
    }

    /// [`Secrets::scrub`] for an excerpt of someone else's text cut at a length (a reply's
    /// beginning in an error message, ending with `…`): a secret cut by the excerpt leaves
    /// its start before the `…`, and that start goes too.
    pub fn scrub_excerpt(&self, text: &str) -> String {
        let text = self.scrub(text).into_owned();
        let Some(head) = text.strip_suffix('…') else {
            return text;
        };
        let cut = self
            .patterns
            .iter()
            .filter_map(|secret| {
                secret
                    .char_indices()
                    .rev()
                    .map(|(end, _)| &secret[..end])
                    .find(|start| !start.is_empty() && head.ends_with(start))
                    .map(str::len)
            })
            .max();
        match cut {
            Some(cut) => format!("{}{REDACTED}…", &head[..head.len() - cut]),
            None => text,
        }
    }

    fn is_empty(&self) -> bool {
        self.matcher.is_none()
    }

    fn longest(&self) -> Option<usize> {
        self.patterns.iter().map(String::len).max()
    }
}

/// The process's secrets.
static REGISTRY: RwLock<Secrets> = RwLock::new(Secrets {
    patterns: Vec::new(),
    matcher: None,
});

fn registry() -> std::sync::RwLockReadGuard<'static, Secrets> {
    REGISTRY.read().unwrap_or_else(|e| e.into_inner())
}

/// Registers `value` (a key, a header's value read from the environment) as a secret of the
/// process: it, and each long word of it, is scrubbed from every text from now on. Values
/// shorter than [`MIN_VALUE`] are not.
pub fn register(value: &str) {
    REGISTRY
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .add(value);
}

/// Whether any secret is registered (nothing to scrub otherwise).
pub fn any() -> bool {
    !registry().is_empty()
}

/// The length in bytes of the longest form of a registered secret, when any is.
fn longest() -> Option<usize> {
    registry().longest()
}

/// `text` with every registered secret replaced by [`REDACTED`]; borrowed when it holds none.
pub fn scrub(text: &str) -> Cow<'_, str> {
    match registry().scrub(text) {
        Cow::Borrowed(_) => Cow::Borrowed(text),
        Cow::Owned(owned) => Cow::Owned(owned),
    }
}

/// [`scrub`] over bytes (a file's content, a log's line), which need not be UTF-8.
pub fn scrub_bytes(bytes: &[u8]) -> Cow<'_, [u8]> {
    match registry().scrub_bytes(bytes) {
        Cow::Borrowed(_) => Cow::Borrowed(bytes),
        Cow::Owned(owned) => Cow::Owned(owned),
    }
}

/// [`Secrets::scrub_excerpt`] with the registered secrets.
pub fn scrub_excerpt(text: &str) -> String {
    registry().scrub_excerpt(text)
}

fn serde_json_escape(secret: &str) -> String {
    let escaped = serde_json::to_string(secret).expect("a string serialises");
    escaped[1..escaped.len() - 1].to_string()
}

/// As maud (the report's and the annotation pages' templates) escapes text.
fn html_escape(secret: &str) -> String {
    let mut out = String::with_capacity(secret.len());
    for c in secret.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

/// A [`Write`] that scrubs what passes through it, so that a secret split across two writes is
/// still found: text goes out a line at a time (no secret holds a line break), and of a long
/// run without one (a binary file) all but the last bytes that could begin a secret; the rest
/// is held until more comes, a flush, [`ScrubWriter::into_inner`] or the drop. Memory is
/// bounded by [`ScrubWriter::HOLD`] and the write's own size.
#[derive(Debug)]
pub struct ScrubWriter<W: Write> {
    /// `None` only once [`ScrubWriter::into_inner`] took it.
    inner: Option<W>,
    pending: Vec<u8>,
}

impl<W: Write> ScrubWriter<W> {
    pub fn new(inner: W) -> ScrubWriter<W> {
        ScrubWriter {
            inner: Some(inner),
            pending: Vec::new(),
        }
    }

    /// Writes what is held and returns the inner writer.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.write_pending()?;
        Ok(self.inner.take().expect("taken only here"))
    }

    /// The most bytes held of a line without a line break.
    const HOLD: usize = 64 * 1024;

    fn inner(&mut self) -> &mut W {
        self.inner.as_mut().expect("taken only by into_inner")
    }

    fn write_pending(&mut self) -> io::Result<()> {
        if !self.pending.is_empty() {
            let pending = std::mem::take(&mut self.pending);
            self.inner().write_all(&scrub_bytes(&pending))?;
        }
        Ok(())
    }
}

impl<W: Write> Write for ScrubWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        let Some(longest) = longest() else {
            self.write_pending()?;
            return self.inner().write_all(buf);
        };
        self.pending.extend_from_slice(buf);
        // Everything up to the last line break goes out now (no secret holds one); of a long
        // line without one, all but what could be the start of a secret.
        let ready = match buf.iter().rposition(|&b| b == b'\n') {
            Some(end) => self.pending.len() - buf.len() + end + 1,
            None if self.pending.len() >= ScrubWriter::<W>::HOLD => self.pending.len(),
            None => return Ok(()),
        };
        let rest = self.pending.split_off(ready);
        let scrubbed = scrub_bytes(&self.pending).into_owned();
        self.pending = rest;
        let keep = if self.pending.is_empty() && scrubbed.last() != Some(&b'\n') {
            (longest - 1).min(scrubbed.len())
        } else {
            0
        };
        let (out, tail) = scrubbed.split_at(scrubbed.len() - keep);
        self.inner().write_all(out)?;
        let mut held = tail.to_vec();
        held.append(&mut self.pending);
        self.pending = held;
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.write_pending()?;
        self.inner().flush()
    }
}

impl<W: Write> Drop for ScrubWriter<W> {
    fn drop(&mut self) {
        if self.inner.is_some() {
            let _ = self.write_pending();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The registry is the process's: each test registers secrets no other test's text holds.

    #[test]
    fn secrets_are_scrubbed_whole_by_word_escaped_and_cut() {
        let secrets = Secrets::of(["Bearer t0ken-77aa", "k3y\"q<&", "1"]);
        let cases = [
            ("got Bearer t0ken-77aa", "got [redacted]"),
            ("token t0ken-77aa alone", "token [redacted] alone"),
            (r#"{"key":"k3y\"q<&"}"#, r#"{"key":"[redacted]"}"#),
            ("key k3y\"q<&", "key [redacted]"),
            ("<p>k3y&quot;q&lt;&amp;</p>", "<p>[redacted]</p>"),
            ("HTTP 500 after 1 attempt", "HTTP 500 after 1 attempt"),
        ];
        for (text, expected) in cases {
            assert_eq!(secrets.scrub(text), expected, "{text}");
            assert_eq!(
                secrets.scrub_bytes(text.as_bytes()).as_ref(),
                expected.as_bytes()
            );
        }
        let cut = [
            (
                "the reply begins: {\"t\":\"t0ken-7…",
                "the reply begins: {\"t\":\"[redacted]…",
            ),
            ("ends with a t…", "ends with a [redacted]…"),
            (
                "the longest start counts: Bearer t0k…",
                "the longest start counts: [redacted]…",
            ),
            ("ends with nothing of one…", "ends with nothing of one…"),
        ];
        for (text, expected) in cut {
            assert_eq!(secrets.scrub_excerpt(text), expected, "{text}");
        }
        assert!(!format!("{secrets:?}").contains("t0ken"));
    }

    #[test]
    fn a_registered_secret_is_scrubbed_from_every_text_of_the_process() {
        register("sk-registered-4d2a91");
        register("ab");
        assert_eq!(
            scrub("the key sk-registered-4d2a91 was refused"),
            "the key [redacted] was refused"
        );
        assert_eq!(
            scrub("ab is too short to be one"),
            "ab is too short to be one"
        );
        assert!(any());
    }

    #[test]
    fn a_writer_finds_a_secret_split_across_writes() {
        register("sk-split-0123456789");
        let mut out = ScrubWriter::new(Vec::new());
        out.write_all(b"{\"a\":\"sk-split-01").unwrap();
        out.write_all(b"23456789\"}\nnext sk-spl").unwrap();
        out.write_all(b"it-0123456789").unwrap();
        let bytes = out.into_inner().unwrap();
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            "{\"a\":\"[redacted]\"}\nnext [redacted]"
        );
        // A long run without a line break, written a few bytes at a time, goes out as it
        // comes, less what could begin a secret, and the secret across the cut is found.
        let mut text = vec![b'x'; 200_000];
        text.extend_from_slice(b"sk-split-0123456789");
        text.extend_from_slice(&[b'y'; 100_000]);
        let mut out = ScrubWriter::new(Vec::new());
        for piece in text.chunks(7) {
            out.write_all(piece).unwrap();
            assert!(out.pending.len() < ScrubWriter::<Vec<u8>>::HOLD + 7);
        }
        let bytes = out.into_inner().unwrap();
        let mut expected = vec![b'x'; 200_000];
        expected.extend_from_slice(b"[redacted]");
        expected.extend_from_slice(&[b'y'; 100_000]);
        assert!(bytes == expected);
    }

    #[test]
    fn bytes_that_are_not_utf8_are_scrubbed_too() {
        register("not-utf8-secret");
        let bytes = b"\xff\xfe not-utf8-secret \xff";
        assert_eq!(scrub_bytes(bytes).as_ref(), b"\xff\xfe [redacted] \xff");
    }
}
