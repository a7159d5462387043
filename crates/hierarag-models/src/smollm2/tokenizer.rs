//! A byte-level BPE tokenizer built from GGUF metadata, tokenizing exactly as llama.cpp does.
//!
//! The steps follow llama.cpp's `llama-vocab.cpp` and `unicode.cpp` for `tokenizer.ggml.model =
//! "gpt2"`: special tokens (control, user-defined, unknown) are cut out of the text first,
//! longest first; each remaining fragment is pre-tokenized with the regexes of its
//! `tokenizer.ggml.pre` type (for `smollm`: every `\p{N}` on its own, then GPT-2's pattern, run
//! by a port of llama.cpp's hand-written matcher, lookahead quirks included); each word is
//! byte-encoded with GPT-2's byte-to-unicode table and merged by rank, lowest rank first and
//! leftmost on ties.

use std::collections::{BinaryHeap, HashMap, HashSet};
use std::sync::OnceLock;

use candle_core::quantized::gguf_file;

/// A token id, as in the GGUF vocabulary.
pub type TokenId = u32;

/// llama.cpp's token types (`tokenizer.ggml.token_type`).
const TOKEN_TYPE_NORMAL: i32 = 1;
const TOKEN_TYPE_UNKNOWN: i32 = 2;
const TOKEN_TYPE_CONTROL: i32 = 3;
const TOKEN_TYPE_USER_DEFINED: i32 = 4;

/// Token texts llama.cpp treats as end of generation, whatever their type
/// (`special_eog_ids` in `llama-vocab.cpp`).
const EOG_TEXTS: &[&str] = &[
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "<|end_of_text|>",
    "<end_of_utterance>",
];

/// Fill-in-the-middle pad, repository and file-separator token texts, which llama.cpp also
/// counts as end of generation (SmolLM2's `<reponame>` is one).
const FIM_EOG_TEXTS: &[&str] = &[
    "<|fim_pad|>",
    "<fim-pad>",
    "<fim_pad>",
    "<PAD>",
    "<|fim_repo|>",
    "<|repo_name|>",
    "<fim-repo>",
    "<REPO>",
    "<reponame>",
    "<|file_sep|>",
];

/// What llama.cpp does with a token when it pre-splits text and when it renders a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TokenKind {
    Normal,
    /// Control and unknown tokens: matched in text only with `parse_special`, rendered empty.
    Control,
    /// User-defined tokens: always matched in text, rendered as their text.
    UserDefined,
    /// Unused, byte and undefined types: never produced by the BPE, rendered as their text.
    Other,
}

/// Why the GGUF's tokenizer metadata cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenizerError(pub String);

impl std::fmt::Display for TokenizerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The pre-tokenizer regex set, by llama.cpp's `tokenizer.ggml.pre` name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PreTokenizer {
    /// `smollm`, `starcoder`, `refact`, `command-r`, …: each `\p{N}` alone, then GPT-2.
    DigitsThenGpt2,
    /// `gpt2`, `mpt`, `olmo`, …: GPT-2's pattern only.
    Gpt2,
}

/// A byte-level BPE tokenizer read from GGUF metadata.
#[derive(Debug, Clone)]
pub struct Tokenizer {
    tokens: Vec<String>,
    kinds: Vec<TokenKind>,
    token_ids: HashMap<String, TokenId>,
    /// Merge rank by `left + " " + right`.
    merge_ranks: HashMap<String, u32>,
    /// Control, user-defined and unknown tokens, longest text first.
    special_tokens: Vec<TokenId>,
    pre: PreTokenizer,
    add_bos: bool,
    bos: Option<TokenId>,
    eos: Option<TokenId>,
    eog: HashSet<TokenId>,
    /// The bytes each token renders to (empty for control tokens), indexed by id.
    pieces: Vec<Vec<u8>>,
}

impl Tokenizer {
    /// Builds the tokenizer from `tokenizer.ggml.*` metadata.
    pub fn from_gguf(
        metadata: &HashMap<String, gguf_file::Value>,
    ) -> Result<Tokenizer, TokenizerError> {
        let get = |key: &str| {
            metadata
                .get(key)
                .ok_or_else(|| TokenizerError(format!("metadata key {key} is missing")))
        };
        let bad = |key: &str, e: candle_core::Error| TokenizerError(format!("{key}: {e}"));

        let model = get("tokenizer.ggml.model")?
            .to_string()
            .map_err(|e| bad("tokenizer.ggml.model", e))?;
        if model != "gpt2" {
            return Err(TokenizerError(format!(
                "tokenizer.ggml.model is {model:?}; only \"gpt2\" (byte-level BPE) is supported"
            )));
        }
        let pre_name = match metadata.get("tokenizer.ggml.pre") {
            Some(value) => value
                .to_string()
                .map_err(|e| bad("tokenizer.ggml.pre", e))?
                .clone(),
            None => "default".to_owned(),
        };
        let pre = match pre_name.as_str() {
            "smollm" | "starcoder" | "refact" | "command-r" | "codeshell" | "exaone"
            | "minerva-7b" => PreTokenizer::DigitsThenGpt2,
            "gpt-2" | "gpt2" | "mpt" | "olmo" | "jais" | "trillion" => PreTokenizer::Gpt2,
            other => {
                return Err(TokenizerError(format!(
                    "tokenizer.ggml.pre is {other:?}; supported: smollm, starcoder, refact, \
                     command-r, codeshell, exaone, minerva-7b, gpt-2, mpt, olmo, jais, trillion"
                )));
            }
        };

        let tokens: Vec<String> = get("tokenizer.ggml.tokens")?
            .to_vec()
            .map_err(|e| bad("tokenizer.ggml.tokens", e))?
            .iter()
            .map(|v| v.to_string().cloned())
            .collect::<Result<_, _>>()
            .map_err(|e| bad("tokenizer.ggml.tokens", e))?;
        let n_tokens = tokens.len();
        let types: Vec<i32> = match metadata.get("tokenizer.ggml.token_type") {
            Some(value) => value
                .to_vec()
                .map_err(|e| bad("tokenizer.ggml.token_type", e))?
                .iter()
                .map(|v| v.to_i32())
                .collect::<Result<_, _>>()
                .map_err(|e| bad("tokenizer.ggml.token_type", e))?,
            None => vec![TOKEN_TYPE_NORMAL; n_tokens],
        };
        if types.len() < n_tokens {
            return Err(TokenizerError(format!(
                "tokenizer.ggml.token_type has {} entries for {n_tokens} tokens",
                types.len()
            )));
        }
        let merges: Vec<String> = get("tokenizer.ggml.merges")?
            .to_vec()
            .map_err(|e| bad("tokenizer.ggml.merges", e))?
            .iter()
            .map(|v| v.to_string().cloned())
            .collect::<Result<_, _>>()
            .map_err(|e| bad("tokenizer.ggml.merges", e))?;

        let mut token_ids = HashMap::with_capacity(n_tokens);
        for (id, text) in tokens.iter().enumerate() {
            if token_ids.insert(text.clone(), id as TokenId).is_some() {
                return Err(TokenizerError(format!(
                    "duplicate token {text:?} in tokenizer.ggml.tokens"
                )));
            }
        }
        let mut kinds: Vec<TokenKind> = types[..n_tokens]
            .iter()
            .map(|&t| match t {
                TOKEN_TYPE_NORMAL => TokenKind::Normal,
                TOKEN_TYPE_CONTROL | TOKEN_TYPE_UNKNOWN => TokenKind::Control,
                TOKEN_TYPE_USER_DEFINED => TokenKind::UserDefined,
                _ => TokenKind::Other,
            })
            .collect();

        // llama.cpp splits each merge at the first space after the first byte.
        let mut merge_ranks = HashMap::with_capacity(merges.len());
        for (rank, merge) in merges.iter().enumerate() {
            let split = merge
                .bytes()
                .skip(1)
                .position(|b| b == b' ')
                .map(|i| i + 1)
                .ok_or_else(|| TokenizerError(format!("merge {merge:?} has no space")))?;
            let key = format!("{} {}", &merge[..split], &merge[split + 1..]);
            merge_ranks.entry(key).or_insert(rank as u32);
        }

        let id_of = |key: &str| -> Result<Option<TokenId>, TokenizerError> {
            match metadata.get(key) {
                None => Ok(None),
                Some(value) => {
                    let id = value.to_u32().map_err(|e| bad(key, e))?;
                    Ok(((id as usize) < n_tokens).then_some(id))
                }
            }
        };
        let bos = id_of("tokenizer.ggml.bos_token_id")?;
        let eos = id_of("tokenizer.ggml.eos_token_id")?;
        let add_bos = match metadata.get("tokenizer.ggml.add_bos_token") {
            Some(value) => value
                .to_bool()
                .map_err(|e| bad("tokenizer.ggml.add_bos_token", e))?,
            None => false,
        };

        // End-of-generation tokens are found by text, as llama.cpp does, and made control tokens.
        let mut eog: HashSet<TokenId> = HashSet::new();
        for text in EOG_TEXTS.iter().chain(FIM_EOG_TEXTS) {
            if let Some(&id) = token_ids.get(*text) {
                eog.insert(id);
                if kinds[id as usize] != TokenKind::Control {
                    kinds[id as usize] = TokenKind::Control;
                }
            }
        }
        eog.extend(eos);

        let mut special_tokens: Vec<TokenId> = (0..n_tokens as TokenId)
            .filter(|&id| {
                matches!(
                    kinds[id as usize],
                    TokenKind::Control | TokenKind::UserDefined
                )
            })
            .collect();
        special_tokens.sort_by_key(|&id| std::cmp::Reverse(tokens[id as usize].len()));

        let pieces = tokens
            .iter()
            .zip(&kinds)
            .map(|(text, kind)| match kind {
                TokenKind::Normal => decode_byte_level(text),
                TokenKind::Control => Vec::new(),
                TokenKind::UserDefined | TokenKind::Other => text.as_bytes().to_vec(),
            })
            .collect();

        Ok(Tokenizer {
            tokens,
            kinds,
            token_ids,
            merge_ranks,
            special_tokens,
            pre,
            add_bos,
            bos,
            eos,
            eog,
            pieces,
        })
    }

    /// The number of tokens in the vocabulary.
    pub fn vocab_size(&self) -> usize {
        self.tokens.len()
    }

    /// The token's text as stored in the GGUF (byte-level encoded, `Ġ` for a space).
    pub fn token_text(&self, id: TokenId) -> Option<&str> {
        self.tokens.get(id as usize).map(String::as_str)
    }

    /// The id of a token given its stored text, e.g. `<|im_end|>`.
    pub fn token_id(&self, text: &str) -> Option<TokenId> {
        self.token_ids.get(text).copied()
    }

    /// The beginning-of-sequence token, if the GGUF names one.
    pub fn bos(&self) -> Option<TokenId> {
        self.bos
    }

    /// The end-of-sequence token, if the GGUF names one.
    pub fn eos(&self) -> Option<TokenId> {
        self.eos
    }

    /// Whether generation ends at this token (end of sequence, end of turn, …).
    pub fn is_end_of_generation(&self, id: TokenId) -> bool {
        self.eog.contains(&id)
    }

    /// Whether the token is a control token (rendered as nothing).
    pub fn is_control(&self, id: TokenId) -> bool {
        self.kinds.get(id as usize) == Some(&TokenKind::Control)
    }

    /// The bytes a token renders to in generated text: nothing for control tokens, the decoded
    /// bytes for normal ones (which may be part of a UTF-8 character).
    pub fn piece(&self, id: TokenId) -> &[u8] {
        self.pieces.get(id as usize).map_or(&[], Vec::as_slice)
    }

    /// Renders tokens to text as llama.cpp's server does (control tokens vanish); invalid UTF-8
    /// (a character cut between tokens) becomes U+FFFD.
    pub fn decode(&self, ids: &[TokenId]) -> String {
        let bytes: Vec<u8> = ids.iter().flat_map(|&id| self.piece(id)).copied().collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Tokenizes `text` like llama.cpp's `llama_tokenize(text, add_special, parse_special)`:
    /// with `parse_special`, control tokens written in the text (`<|im_start|>`) become those
    /// tokens; user-defined tokens always do. With `add_special`, BOS is prepended when the GGUF
    /// asks for it (`tokenizer.ggml.add_bos_token`; false for SmolLM2).
    pub fn encode(&self, text: &str, add_special: bool, parse_special: bool) -> Vec<TokenId> {
        let mut output = Vec::new();
        if add_special && self.add_bos {
            output.extend(self.bos);
        }
        for fragment in self.split_special(text, parse_special) {
            match fragment {
                Fragment::Token(id) => output.push(id),
                Fragment::Text(fragment) => self.encode_fragment(fragment, &mut output),
            }
        }
        output
    }

    /// Cuts special tokens out of `text`, longest token first, as llama.cpp's
    /// `tokenizer_st_partition` does.
    fn split_special<'t>(&self, text: &'t str, parse_special: bool) -> Vec<Fragment<'t>> {
        let mut fragments = vec![Fragment::Text(text)];
        if text.is_empty() {
            return Vec::new();
        }
        for &id in &self.special_tokens {
            if !parse_special && self.kinds[id as usize] == TokenKind::Control {
                continue;
            }
            let special = self.tokens[id as usize].as_str();
            if !fragments
                .iter()
                .any(|f| matches!(f, Fragment::Text(t) if t.contains(special)))
            {
                continue;
            }
            let mut next = Vec::with_capacity(fragments.len() + 2);
            for fragment in fragments {
                let Fragment::Text(mut rest) = fragment else {
                    next.push(fragment);
                    continue;
                };
                while let Some(at) = rest.find(special) {
                    if at > 0 {
                        next.push(Fragment::Text(&rest[..at]));
                    }
                    next.push(Fragment::Token(id));
                    rest = &rest[at + special.len()..];
                }
                if !rest.is_empty() {
                    next.push(Fragment::Text(rest));
                }
            }
            fragments = next;
        }
        fragments
    }

    /// Pre-tokenizes, byte-encodes and merges one fragment of plain text.
    fn encode_fragment(&self, text: &str, output: &mut Vec<TokenId>) {
        let chars: Vec<char> = text.chars().collect();
        let segments = match self.pre {
            PreTokenizer::DigitsThenGpt2 => split_each_number(&chars),
            PreTokenizer::Gpt2 => vec![(0, chars.len())],
        };
        let mut word = String::new();
        for (start, end) in segments {
            for (word_start, word_end) in split_gpt2(&chars, start, end) {
                word.clear();
                let mut utf8 = [0u8; 4];
                for &c in &chars[word_start..word_end] {
                    for &byte in c.encode_utf8(&mut utf8).as_bytes() {
                        word.push(byte_to_char(byte));
                    }
                }
                self.merge_word(&word, output);
            }
        }
    }

    /// Byte-pair merges of one byte-encoded word, lowest rank first, leftmost on ties; a
    /// symbol left without a token is emitted byte by byte (llama.cpp's fallback).
    fn merge_word(&self, word: &str, output: &mut Vec<TokenId>) {
        let mut symbols: Vec<Symbol> = Vec::with_capacity(word.len());
        for (i, (start, c)) in word.char_indices().enumerate() {
            let len = c.len_utf8();
            symbols.push(Symbol {
                start,
                len,
                prev: i as isize - 1,
                next: if start + len == word.len() {
                    -1
                } else {
                    i as isize + 1
                },
            });
        }
        let mut queue: BinaryHeap<Bigram> = BinaryHeap::new();
        for i in 1..symbols.len() {
            self.push_bigram(word, &symbols, i - 1, i, &mut queue);
        }
        while let Some(bigram) = queue.pop() {
            let (left, right) = (symbols[bigram.left], symbols[bigram.right]);
            if left.len == 0 || right.len == 0 {
                continue;
            }
            // Skip a stale pair: one of its symbols has grown since it was queued.
            if left.next != bigram.right as isize || left.len + right.len != bigram.len {
                continue;
            }
            symbols[bigram.left].len += right.len;
            symbols[bigram.right].len = 0;
            symbols[bigram.left].next = right.next;
            if right.next >= 0 {
                symbols[right.next as usize].prev = bigram.left as isize;
            }
            if left.prev >= 0 {
                self.push_bigram(word, &symbols, left.prev as usize, bigram.left, &mut queue);
            }
            if right.next >= 0 {
                self.push_bigram(word, &symbols, bigram.left, right.next as usize, &mut queue);
            }
        }
        for symbol in symbols.iter().filter(|s| s.len > 0) {
            let text = &word[symbol.start..symbol.start + symbol.len];
            if let Some(&id) = self.token_ids.get(text) {
                output.push(id);
            } else {
                // llama.cpp looks each byte of the symbol's text up as a one-byte token.
                for &byte in text.as_bytes() {
                    if let Some(&id) = std::str::from_utf8(&[byte])
                        .ok()
                        .and_then(|s| self.token_ids.get(s))
                    {
                        output.push(id);
                    }
                }
            }
        }
    }

    fn push_bigram(
        &self,
        word: &str,
        symbols: &[Symbol],
        left: usize,
        right: usize,
        queue: &mut BinaryHeap<Bigram>,
    ) {
        let (l, r) = (symbols[left], symbols[right]);
        let mut key = String::with_capacity(l.len + r.len + 1);
        key.push_str(&word[l.start..l.start + l.len]);
        key.push(' ');
        key.push_str(&word[r.start..r.start + r.len]);
        if let Some(&rank) = self.merge_ranks.get(&key) {
            queue.push(Bigram {
                rank,
                left,
                right,
                len: l.len + r.len,
            });
        }
    }
}

enum Fragment<'t> {
    Text(&'t str),
    Token(TokenId),
}

#[derive(Debug, Clone, Copy)]
struct Symbol {
    start: usize,
    len: usize,
    prev: isize,
    next: isize,
}

/// A candidate merge; the heap pops the lowest rank, then the leftmost.
#[derive(Debug, PartialEq, Eq)]
struct Bigram {
    rank: u32,
    left: usize,
    right: usize,
    len: usize,
}

impl Ord for Bigram {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (other.rank, other.left).cmp(&(self.rank, self.left))
    }
}

impl PartialOrd for Bigram {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The character classes llama.cpp's GPT-2 matcher asks about. `none` stands for a position
/// outside the segment (llama.cpp's all-zero flags).
#[derive(Debug, Clone, Copy, Default)]
struct Flags {
    letter: bool,
    number: bool,
    whitespace: bool,
    in_range: bool,
}

fn flags_of(c: char) -> Flags {
    Flags {
        letter: is_letter(c),
        number: c.is_numeric(),
        whitespace: c.is_whitespace(),
        in_range: true,
    }
}

/// `\p{L}`, from regex-syntax's Unicode tables.
fn is_letter(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphabetic();
    }
    static RANGES: OnceLock<Vec<(char, char)>> = OnceLock::new();
    let ranges = RANGES.get_or_init(|| {
        use regex_syntax::hir::{Class, HirKind};
        let hir = regex_syntax::Parser::new()
            .parse(r"\p{L}")
            .expect("\\p{L} is a valid class");
        match hir.kind() {
            HirKind::Class(Class::Unicode(class)) => class
                .ranges()
                .iter()
                .map(|r| (r.start(), r.end()))
                .collect(),
            _ => Vec::new(),
        }
    });
    ranges
        .binary_search_by(|&(start, end)| {
            if end < c {
                std::cmp::Ordering::Less
            } else if start > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// The `\p{N}` regex of the first pass: every number character becomes its own segment and the
/// text between them another (llama.cpp keeps unmatched text as segments).
fn split_each_number(chars: &[char]) -> Vec<(usize, usize)> {
    let mut segments = Vec::new();
    let mut start = 0;
    for (i, c) in chars.iter().enumerate() {
        if c.is_numeric() {
            if i > start {
                segments.push((start, i));
            }
            segments.push((i, i + 1));
            start = i + 1;
        }
    }
    if start < chars.len() {
        segments.push((start, chars.len()));
    }
    segments
}

/// A port of llama.cpp's `unicode_regex_split_custom_gpt2` over `chars[start..end]`:
/// `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`.
fn split_gpt2(chars: &[char], start: usize, end: usize) -> Vec<(usize, usize)> {
    let flags = |pos: usize| {
        if pos >= start && pos < end {
            flags_of(chars[pos])
        } else {
            Flags::default()
        }
    };
    let cpt = |pos: usize| (pos >= start && pos < end).then(|| chars[pos]);
    let mut words = Vec::new();
    let mut prev_end = start;
    let mut add = |to: usize, words: &mut Vec<(usize, usize)>| {
        if to > prev_end {
            words.push((prev_end, to));
        }
        prev_end = to;
    };
    let mut pos = start;
    while pos < end {
        let c = chars[pos];
        let f = flags(pos);
        if c == '\'' && pos + 1 < end {
            let next = chars[pos + 1];
            if matches!(next, 's' | 't' | 'm' | 'd') {
                pos += 2;
                add(pos, &mut words);
                continue;
            }
            if pos + 2 < end {
                let next_next = chars[pos + 2];
                if matches!((next, next_next), ('r', 'e') | ('v', 'e') | ('l', 'l')) {
                    pos += 3;
                    add(pos, &mut words);
                    continue;
                }
            }
        }
        let mut f2 = if c == ' ' { flags(pos + 1) } else { f };
        if f2.letter {
            pos += usize::from(c == ' ');
            while f2.letter {
                pos += 1;
                f2 = flags(pos);
            }
            add(pos, &mut words);
            continue;
        }
        if f2.number {
            pos += usize::from(c == ' ');
            while f2.number {
                pos += 1;
                f2 = flags(pos);
            }
            add(pos, &mut words);
            continue;
        }
        let is_other = |f: Flags| !(f.whitespace || f.letter || f.number) && f.in_range;
        if is_other(f2) {
            pos += usize::from(c == ' ');
            while is_other(f2) {
                pos += 1;
                f2 = flags(pos);
            }
            add(pos, &mut words);
            continue;
        }
        let mut n_whitespace = 0;
        while flags(pos + n_whitespace).whitespace {
            n_whitespace += 1;
        }
        if n_whitespace > 1 && cpt(pos + n_whitespace).is_some() {
            pos += n_whitespace - 1;
            add(pos, &mut words);
            continue;
        }
        if n_whitespace > 0 {
            pos += n_whitespace;
            add(pos, &mut words);
            continue;
        }
        pos += 1;
        add(pos, &mut words);
    }
    words
}

/// GPT-2's byte-to-unicode table: printable bytes map to themselves, the others to U+0100….
fn byte_to_char(byte: u8) -> char {
    static TABLE: OnceLock<[char; 256]> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = ['\0'; 256];
        let mut n = 0u32;
        for b in 0..=255u8 {
            let printable = matches!(b, 0x21..=0x7E | 0xA1..=0xAC | 0xAE..=0xFF);
            table[b as usize] = if printable {
                char::from(b)
            } else {
                n += 1;
                char::from_u32(255 + n).expect("U+0100..U+0143 are chars")
            };
        }
        table
    })[byte as usize]
}

/// The inverse of [`byte_to_char`] over a token's text; characters outside the table are
/// dropped (llama.cpp writes an `[UNK_BYTE…]` marker there, which no SmolLM2 token needs).
fn decode_byte_level(text: &str) -> Vec<u8> {
    static INVERSE: OnceLock<HashMap<char, u8>> = OnceLock::new();
    let inverse = INVERSE.get_or_init(|| (0..=255u8).map(|b| (byte_to_char(b), b)).collect());
    text.chars()
        .filter_map(|c| inverse.get(&c).copied())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        let chars: Vec<char> = text.chars().collect();
        split_each_number(&chars)
            .into_iter()
            .flat_map(|(s, e)| split_gpt2(&chars, s, e))
            .map(|(s, e)| chars[s..e].iter().collect())
            .collect()
    }

    #[test]
    fn pre_tokenizer_splits_digits_contractions_and_spaces_like_llama_cpp() {
        assert_eq!(
            words("Hello world! 123"),
            ["Hello", " world", "!", " ", "1", "2", "3"]
        );
        assert_eq!(words("it's  x"), ["it", "'s", " ", " x"]);
        assert_eq!(words("a   b\n\n"), ["a", "  ", " b", "\n\n"]);
        assert_eq!(words("déjà vu."), ["déjà", " vu", "."]);
    }

    #[test]
    fn byte_table_round_trips() {
        let all: Vec<u8> = (0..=255).collect();
        let text: String = all.iter().map(|&b| byte_to_char(b)).collect();
        assert_eq!(decode_byte_level(&text), all);
        assert_eq!(byte_to_char(b' '), 'Ġ');
        assert_eq!(byte_to_char(b'\n'), 'Ċ');
    }
}
