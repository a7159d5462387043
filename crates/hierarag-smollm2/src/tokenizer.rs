//! The byte-level BPE tokenizer, built from GGUF metadata on the `tokenizers` crate.
//!
//! `tokenizer.ggml.model = "gpt2"` is GPT-2's byte-level BPE: the vocabulary and merges of the
//! GGUF make a `tokenizers` BPE model; llama.cpp's pre-tokenizer regexes for the GGUF's
//! `tokenizer.ggml.pre` are `tokenizers` pre-tokenizers (for `smollm`: `Digits` with each digit
//! alone, then `ByteLevel` with GPT-2's pattern); control and user-defined tokens are added
//! tokens, cut out of the text before pre-tokenization. On 7,068 texts (the tests' cases, 2,000
//! Wikipedia articles, 5,000 random strings of the pre-tokenizer's edge cases: runs of Unicode
//! whitespace, contractions, digits of other scripts, combining marks, unassigned code points,
//! special tokens and pieces of them; 50 chat prompts) the ids equal llama.cpp's server's.
//!
//! llama.cpp cuts special tokens out longest token first over the whole text, `tokenizers`
//! leftmost-longest; the two differ only when one special token's text overlaps another's,
//! which no token of SmolLM2 does.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use candle_core::quantized::gguf_file;
use tokenizers::models::bpe::{BPE, Vocab};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::{AddedToken, PreTokenizerWrapper};

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
    /// Control and unknown tokens: matched in text (llama.cpp's `parse_special`), rendered empty.
    Control,
    /// User-defined tokens: matched in text, rendered as their text.
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

/// A byte-level BPE tokenizer read from GGUF metadata.
#[derive(Debug, Clone)]
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    kinds: Vec<TokenKind>,
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
        let pre_tokenizer = pre_tokenizer(&pre_name)?;

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
        // llama.cpp splits each merge at the first space after the first byte.
        let merges: Vec<(String, String)> = get("tokenizer.ggml.merges")?
            .to_vec()
            .map_err(|e| bad("tokenizer.ggml.merges", e))?
            .iter()
            .map(|v| {
                let merge = v.to_string().map_err(|e| bad("tokenizer.ggml.merges", e))?;
                let split = merge
                    .bytes()
                    .skip(1)
                    .position(|b| b == b' ')
                    .map(|i| i + 1)
                    .ok_or_else(|| TokenizerError(format!("merge {merge:?} has no space")))?;
                Ok((merge[..split].to_owned(), merge[split + 1..].to_owned()))
            })
            .collect::<Result<_, TokenizerError>>()?;

        let mut vocab = Vocab::with_capacity(n_tokens);
        for (id, text) in tokens.iter().enumerate() {
            if vocab.insert(text.clone(), id as TokenId).is_some() {
                return Err(TokenizerError(format!(
                    "duplicate token {text:?} in tokenizer.ggml.tokens"
                )));
            }
        }
        let id_of_text = |text: &str| vocab.get(text).copied();
        let mut kinds: Vec<TokenKind> = types[..n_tokens]
            .iter()
            .map(|&t| match t {
                TOKEN_TYPE_NORMAL => TokenKind::Normal,
                TOKEN_TYPE_CONTROL | TOKEN_TYPE_UNKNOWN => TokenKind::Control,
                TOKEN_TYPE_USER_DEFINED => TokenKind::UserDefined,
                _ => TokenKind::Other,
            })
            .collect();

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
            if let Some(id) = id_of_text(text) {
                eog.insert(id);
                kinds[id as usize] = TokenKind::Control;
            }
        }
        eog.extend(eos);

        let pieces = tokens
            .iter()
            .zip(&kinds)
            .map(|(text, kind)| match kind {
                TokenKind::Normal => decode_byte_level(text),
                TokenKind::Control => Vec::new(),
                TokenKind::UserDefined | TokenKind::Other => text.as_bytes().to_vec(),
            })
            .collect();
        let added = |kind: TokenKind| -> Vec<AddedToken> {
            tokens
                .iter()
                .zip(&kinds)
                .filter(|&(_, &k)| k == kind)
                .map(|(text, _)| AddedToken::from(text.clone(), kind == TokenKind::Control))
                .collect()
        };
        let (control, user_defined) = (added(TokenKind::Control), added(TokenKind::UserDefined));

        let bpe = BPE::builder()
            .vocab_and_merges(vocab, merges)
            .build()
            .map_err(|e| TokenizerError(format!("tokenizer.ggml.merges: {e}")))?;
        let mut inner = tokenizers::Tokenizer::new(bpe);
        inner.with_pre_tokenizer(Some(pre_tokenizer));
        inner
            .add_special_tokens(control)
            .map_err(|e| TokenizerError(format!("control tokens: {e}")))?;
        inner
            .add_tokens(user_defined)
            .map_err(|e| TokenizerError(format!("user-defined tokens: {e}")))?;

        Ok(Tokenizer {
            inner,
            kinds,
            add_bos,
            bos,
            eos,
            eog,
            pieces,
        })
    }

    /// The number of tokens in the vocabulary.
    pub fn vocab_size(&self) -> usize {
        self.kinds.len()
    }

    /// The token's text as stored in the GGUF (byte-level encoded, `Ġ` for a space).
    pub fn token_text(&self, id: TokenId) -> Option<String> {
        self.inner.id_to_token(id)
    }

    /// The end-of-sequence token, if the GGUF names one.
    pub fn eos(&self) -> Option<TokenId> {
        self.eos
    }

    /// Whether generation ends at this token (end of sequence, end of turn, …).
    pub fn is_end_of_generation(&self, id: TokenId) -> bool {
        self.eog.contains(&id)
    }

    /// The tokens that end generation, in id order.
    pub fn end_of_generation(&self) -> Vec<TokenId> {
        let mut ids: Vec<TokenId> = self.eog.iter().copied().collect();
        ids.sort_unstable();
        ids
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

    /// Tokenizes `text` as llama.cpp's server tokenizes a rendered chat prompt
    /// (`llama_tokenize(text, add_special = true, parse_special = true)`): special tokens
    /// written in the text (`<|im_start|>`) become those tokens, and BOS is prepended when the
    /// GGUF asks for it (`tokenizer.ggml.add_bos_token`; false for SmolLM2).
    pub fn encode(&self, text: &str) -> Result<Vec<TokenId>, TokenizerError> {
        let encoding = self
            .inner
            .encode_fast(text, false)
            .map_err(|e| TokenizerError(format!("cannot tokenize the text: {e}")))?;
        let bos = self.bos.filter(|_| self.add_bos);
        Ok(bos
            .into_iter()
            .chain(encoding.get_ids().iter().copied())
            .collect())
    }
}

/// llama.cpp's pre-tokenizer regexes for a `tokenizer.ggml.pre` name, as `tokenizers`
/// pre-tokenizers. GPT-2's pattern,
/// `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`, is ByteLevel's
/// regex.
fn pre_tokenizer(name: &str) -> Result<PreTokenizerWrapper, TokenizerError> {
    let gpt2 = PreTokenizerWrapper::ByteLevel(ByteLevel::new(false, false, true));
    match name {
        // llama.cpp's `\p{N}` pass first: every number character on its own.
        "smollm" | "starcoder" | "refact" | "command-r" | "codeshell" | "exaone" | "minerva-7b" => {
            Ok(PreTokenizerWrapper::Sequence(Sequence::new(vec![
                PreTokenizerWrapper::Digits(Digits::new(true)),
                gpt2,
            ])))
        }
        "gpt-2" | "gpt2" | "mpt" | "olmo" | "jais" | "trillion" => Ok(gpt2),
        other => Err(TokenizerError(format!(
            "tokenizer.ggml.pre is {other:?}; supported: smollm, starcoder, refact, command-r, \
             codeshell, exaone, minerva-7b, gpt-2, mpt, olmo, jais, trillion"
        ))),
    }
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

    /// The words `name`'s pre-tokenizer cuts `text` into, byte-level encoded back to text.
    fn words(name: &str, text: &str) -> Vec<String> {
        use tokenizers::{OffsetReferential, OffsetType, PreTokenizedString, PreTokenizer};
        let mut pretokenized = PreTokenizedString::from(text);
        pre_tokenizer(name)
            .unwrap()
            .pre_tokenize(&mut pretokenized)
            .unwrap();
        pretokenized
            .get_splits(OffsetReferential::Original, OffsetType::Byte)
            .into_iter()
            .map(|(word, _, _)| String::from_utf8(decode_byte_level(word)).unwrap())
            .collect()
    }

    #[test]
    fn smollm_pre_tokenizer_splits_digits_contractions_and_spaces_like_llama_cpp() {
        assert_eq!(
            words("smollm", "Hello world! 123"),
            ["Hello", " world", "!", " ", "1", "2", "3"]
        );
        assert_eq!(words("smollm", "it's  x"), ["it", "'s", " ", " x"]);
        assert_eq!(words("smollm", "a   b\n\n"), ["a", "  ", " b", "\n\n"]);
        assert_eq!(words("smollm", "déjà vu."), ["déjà", " vu", "."]);
        assert_eq!(words("smollm", "x ٣½"), ["x", " ", "٣", "½"]);
        assert_eq!(words("gpt2", "in 2024 "), ["in", " 2024", " "]);
        assert!(pre_tokenizer("llama3").is_err());
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
