//! The language of a corpus, and what depends on it without any heavy dependency.
//!
//! A run names its corpus language with an ISO 639-1 code (`[corpus] language`, default `en`);
//! [`Language`] is one of the supported codes and fixes:
//! - the [`Segmentation`] of its text: words for most languages, CJK bigrams for Chinese,
//!   Japanese and Korean ([`for_each_token`], [`lowercase_tokens`]), which the BM25 analyzer
//!   (hierarag-index) and ROUGE-1 (hierarag-metrics) both use;
//! - the scripts its letters are in, so that [`ScriptCounts::check`] can warn when most of a
//!   corpus is not in the configured language;
//! - the refusal sentence the answering prompt asks for ([`Language::refusal`]), so that refusal
//!   detection looks for exactly that sentence, and the name prompts use for it.
//!
//! English is the default and keeps every English behaviour byte for byte. Pure logic: no I/O.
//!
//! ```
//! use hierarag_lang::{Language, ScriptCounts, lowercase_tokens};
//!
//! let korean = Language::from_code("ko")?;
//! assert_eq!(lowercase_tokens("서울의 인구", korean.segmentation()), ["서울", "울의", "인구"]);
//! let mut letters = ScriptCounts::default();
//! letters.add(&"김치는 한국의 전통 발효 음식이다. ".repeat(20));
//! assert!(letters.check(Language::ENGLISH).is_some());
//! assert!(letters.check(korean).is_none());
//! # Ok::<(), hierarag_lang::LanguageError>(())
//! ```

mod language;
mod script;
mod tokens;

pub use language::{Language, LanguageError, Segmentation};
pub use script::{LanguageMismatch, MIN_LETTERS, Script, ScriptCounts, is_cjk, script_of};
pub use tokens::{for_each_token, lowercase_tokens};
