//! The supported languages and what each one fixes: its scripts, how its text is cut into
//! tokens, and the sentence an answering model says when the context does not hold the answer.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::script::Script;

/// How the text of a language is cut into index terms and ROUGE tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Segmentation {
    /// Words separated by spaces and punctuation (every language but Chinese, Japanese and
    /// Korean).
    Words,
    /// Overlapping bigrams of Han, kana and Hangul characters (Lucene's CJKAnalyzer), words for
    /// the rest: Chinese and Japanese write no spaces, and a Korean word carries its particles
    /// (서울의, 서울은), so whole words rarely match.
    CjkBigrams,
}

/// A corpus language: an ISO 639-1 code from [`Language::all`]. English is the default and
/// keeps every English behaviour exactly as it was before languages existed.
///
/// It serialises as its code (`"ko"`), and reading an unknown code fails with the list of the
/// supported ones.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Language(&'static Spec);

struct Spec {
    code: &'static str,
    name: &'static str,
    native: &'static str,
    scripts: &'static [Script],
    segmentation: Segmentation,
    refusal: &'static str,
}

impl PartialEq for Spec {
    fn eq(&self, other: &Spec) -> bool {
        self.code == other.code
    }
}
impl Eq for Spec {}
impl std::hash::Hash for Spec {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.code.hash(state);
    }
}

use Script::{Arabic, Cyrillic, Greek, Han, Hangul, Kana, Latin, Tamil};
use Segmentation::{CjkBigrams, Words};

/// English, Chinese, Japanese, Korean, and every language tantivy has a Snowball stemmer for.
/// The refusal sentences say what the English one says ("I cannot answer this question from
/// the given context."); the answering prompt asks for exactly this sentence, so that refusal
/// detection can look for it.
static LANGUAGES: [Spec; 21] = [
    Spec {
        code: "en",
        name: "English",
        native: "English",
        scripts: &[Latin],
        segmentation: Words,
        refusal: "I cannot answer this question from the given context.",
    },
    Spec {
        code: "ko",
        name: "Korean",
        native: "한국어",
        scripts: &[Hangul, Han],
        segmentation: CjkBigrams,
        refusal: "주어진 문맥으로는 이 질문에 답할 수 없습니다.",
    },
    Spec {
        code: "ja",
        name: "Japanese",
        native: "日本語",
        scripts: &[Kana, Han],
        segmentation: CjkBigrams,
        refusal: "与えられた文脈からはこの質問に答えられません。",
    },
    Spec {
        code: "zh",
        name: "Chinese",
        native: "中文",
        scripts: &[Han],
        segmentation: CjkBigrams,
        refusal: "根据给定的上下文，我无法回答这个问题。",
    },
    Spec {
        code: "ar",
        name: "Arabic",
        native: "العربية",
        scripts: &[Arabic],
        segmentation: Words,
        refusal: "لا أستطيع الإجابة عن هذا السؤال من السياق المعطى.",
    },
    Spec {
        code: "da",
        name: "Danish",
        native: "dansk",
        scripts: &[Latin],
        segmentation: Words,
        refusal: "Jeg kan ikke besvare dette spørgsmål ud fra den givne kontekst.",
    },
    Spec {
        code: "de",
        name: "German",
        native: "Deutsch",
        scripts: &[Latin],
        segmentation: Words,
        refusal: "Ich kann diese Frage anhand des gegebenen Kontexts nicht beantworten.",
    },
    Spec {
        code: "el",
        name: "Greek",
        native: "Ελληνικά",
        scripts: &[Greek],
        segmentation: Words,
        refusal: "Δεν μπορώ να απαντήσω σε αυτή την ερώτηση με βάση το δεδομένο πλαίσιο.",
    },
    Spec {
        code: "es",
        name: "Spanish",
        native: "español",
        scripts: &[Latin],
        segmentation: Words,
        refusal: "No puedo responder a esta pregunta con el contexto proporcionado.",
    },
    Spec {
        code: "fi",
        name: "Finnish",
        native: "suomi",
        scripts: &[Latin],
        segmentation: Words,
        refusal: "En voi vastata tähän kysymykseen annetun kontekstin perusteella.",
    },
    Spec {
        code: "fr",
        name: "French",
        native: "français",
        scripts: &[Latin],
        segmentation: Words,
        refusal: "Je ne peux pas répondre à cette question à partir du contexte donné.",
    },
    Spec {
        code: "hu",
        name: "Hungarian",
        native: "magyar",
        scripts: &[Latin],
        segmentation: Words,
        refusal: "Erre a kérdésre nem tudok válaszolni a megadott kontextus alapján.",
    },
    Spec {
        code: "it",
        name: "Italian",
        native: "italiano",
        scripts: &[Latin],
        segmentation: Words,
        refusal: "Non posso rispondere a questa domanda in base al contesto fornito.",
    },
    Spec {
        code: "nl",
        name: "Dutch",
        native: "Nederlands",
        scripts: &[Latin],
        segmentation: Words,
        refusal: "Ik kan deze vraag niet beantwoorden op basis van de gegeven context.",
    },
    Spec {
        code: "no",
        name: "Norwegian",
        native: "norsk",
        scripts: &[Latin],
        segmentation: Words,
        refusal: "Jeg kan ikke svare på dette spørsmålet ut fra den gitte konteksten.",
    },
    Spec {
        code: "pt",
        name: "Portuguese",
        native: "português",
        scripts: &[Latin],
        segmentation: Words,
        refusal: "Não posso responder a esta pergunta com base no contexto fornecido.",
    },
    Spec {
        code: "ro",
        name: "Romanian",
        native: "română",
        scripts: &[Latin],
        segmentation: Words,
        refusal: "Nu pot răspunde la această întrebare pe baza contextului dat.",
    },
    Spec {
        code: "ru",
        name: "Russian",
        native: "русский",
        scripts: &[Cyrillic],
        segmentation: Words,
        refusal: "Я не могу ответить на этот вопрос на основе данного контекста.",
    },
    Spec {
        code: "sv",
        name: "Swedish",
        native: "svenska",
        scripts: &[Latin],
        segmentation: Words,
        refusal: "Jag kan inte besvara den här frågan utifrån det givna sammanhanget.",
    },
    Spec {
        code: "ta",
        name: "Tamil",
        native: "தமிழ்",
        scripts: &[Tamil],
        segmentation: Words,
        refusal: "கொடுக்கப்பட்ட சூழலிலிருந்து இந்தக் கேள்விக்கு என்னால் பதிலளிக்க முடியாது.",
    },
    Spec {
        code: "tr",
        name: "Turkish",
        native: "Türkçe",
        scripts: &[Latin],
        segmentation: Words,
        refusal: "Verilen bağlamdan bu soruyu yanıtlayamam.",
    },
];

/// A code that is not one of [`Language::all`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown language {code:?}: supported are {}", supported_codes())]
pub struct LanguageError {
    pub code: String,
}

fn supported_codes() -> String {
    LANGUAGES
        .iter()
        .map(|spec| format!("{} ({})", spec.code, spec.name))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Language {
    /// English, the default: the paper's analyzer, tokenizers and prompts.
    pub const ENGLISH: Language = Language(&LANGUAGES[0]);

    /// The language of an ISO 639-1 code (case and surrounding spaces ignored).
    pub fn from_code(code: &str) -> Result<Language, LanguageError> {
        let wanted = code.trim().to_ascii_lowercase();
        LANGUAGES
            .iter()
            .find(|spec| spec.code == wanted)
            .map(Language)
            .ok_or_else(|| LanguageError {
                code: code.to_string(),
            })
    }

    /// Every supported language, English first.
    pub fn all() -> impl Iterator<Item = Language> {
        LANGUAGES.iter().map(Language)
    }

    /// The ISO 639-1 code (`ko`).
    pub fn code(self) -> &'static str {
        self.0.code
    }

    /// The English name (`Korean`).
    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// The name in the language itself (`한국어`).
    pub fn native_name(self) -> &'static str {
        self.0.native
    }

    /// How prompts name it: `Korean (한국어)`, or `German (Deutsch)`.
    pub fn prompt_name(self) -> String {
        if self.0.name == self.0.native {
            self.0.name.to_string()
        } else {
            format!("{} ({})", self.0.name, self.0.native)
        }
    }

    /// Whether this is English, the default (by reference, as serde's `skip_serializing_if`
    /// calls it).
    pub fn is_english(&self) -> bool {
        *self == Language::ENGLISH
    }

    /// The scripts its text is written in (the script check counts the letters of these).
    pub fn scripts(self) -> &'static [Script] {
        self.0.scripts
    }

    pub fn segmentation(self) -> Segmentation {
        self.0.segmentation
    }

    /// The sentence the answering prompt asks for when the passages do not hold the answer,
    /// and the reference answer of a question that should be refused.
    pub fn refusal(self) -> &'static str {
        self.0.refusal
    }
}

impl Default for Language {
    fn default() -> Language {
        Language::ENGLISH
    }
}

impl fmt::Debug for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Language({})", self.0.code)
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.code)
    }
}

impl std::str::FromStr for Language {
    type Err = LanguageError;
    fn from_str(code: &str) -> Result<Language, LanguageError> {
        Language::from_code(code)
    }
}

impl Serialize for Language {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0.code)
    }
}

impl<'de> Deserialize<'de> for Language {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Language, D::Error> {
        let code = String::deserialize(deserializer)?;
        Language::from_code(&code).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_lowercase_and_english_is_first() {
        let codes: Vec<&str> = Language::all().map(Language::code).collect();
        let mut sorted = codes.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), codes.len());
        assert!(
            codes
                .iter()
                .all(|c| c.len() == 2 && c.chars().all(|ch| ch.is_ascii_lowercase()))
        );
        assert_eq!(codes[0], "en");
        assert_eq!(Language::default(), Language::ENGLISH);
    }

    #[test]
    fn codes_parse_case_insensitively_and_unknown_ones_list_the_supported() {
        assert_eq!(Language::from_code(" KO ").unwrap().name(), "Korean");
        let error = Language::from_code("xx").unwrap_err();
        let message = error.to_string();
        assert!(
            message.starts_with("unknown language \"xx\": supported are en (English), ko (Korean)")
        );
        let parsed: Result<Language, _> = serde_json::from_str("\"kr\"");
        assert!(
            parsed
                .unwrap_err()
                .to_string()
                .contains("unknown language \"kr\"")
        );
        assert_eq!(
            serde_json::to_string(&Language::from_code("ja").unwrap()).unwrap(),
            "\"ja\""
        );
    }

    #[test]
    fn prompt_names_add_the_native_name_when_it_differs() {
        assert_eq!(Language::ENGLISH.prompt_name(), "English");
        assert_eq!(
            Language::from_code("ko").unwrap().prompt_name(),
            "Korean (한국어)"
        );
    }

    #[test]
    fn the_english_refusal_is_the_papers_sentence() {
        assert_eq!(
            Language::ENGLISH.refusal(),
            "I cannot answer this question from the given context."
        );
        for language in Language::all() {
            assert!(!language.refusal().is_empty(), "{language}");
        }
    }
}
