//! A cheap script detector: which writing systems the letters of a text belong to, so that a
//! corpus that is mostly not in its configured language is noticed instead of scored as zeros.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::language::Language;

/// The writing systems the detector tells apart (by Unicode block).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Script {
    Latin,
    Cyrillic,
    Greek,
    Arabic,
    Tamil,
    /// Korean: Hangul syllables and jamo.
    Hangul,
    /// Chinese characters, also used in Japanese (kanji) and sometimes in Korean (hanja).
    Han,
    /// Japanese hiragana and katakana.
    Kana,
    /// Any other letter.
    Other,
}

const SCRIPTS: [Script; 9] = [
    Script::Latin,
    Script::Cyrillic,
    Script::Greek,
    Script::Arabic,
    Script::Tamil,
    Script::Hangul,
    Script::Han,
    Script::Kana,
    Script::Other,
];

impl Script {
    fn index(self) -> usize {
        self as usize
    }

    pub fn name(self) -> &'static str {
        match self {
            Script::Latin => "Latin",
            Script::Cyrillic => "Cyrillic",
            Script::Greek => "Greek",
            Script::Arabic => "Arabic",
            Script::Tamil => "Tamil",
            Script::Hangul => "Hangul",
            Script::Han => "Han",
            Script::Kana => "kana",
            Script::Other => "other",
        }
    }

    /// The language a text mostly in this script is most likely in, for the warning's hint.
    fn likely_language(self) -> Option<&'static str> {
        match self {
            Script::Latin => Some("en"),
            Script::Cyrillic => Some("ru"),
            Script::Greek => Some("el"),
            Script::Arabic => Some("ar"),
            Script::Tamil => Some("ta"),
            Script::Hangul => Some("ko"),
            Script::Han => Some("zh"),
            Script::Kana => Some("ja"),
            Script::Other => None,
        }
    }
}

/// Han ideographs, kana and Hangul: the characters the CJK segmentation cuts into bigrams.
pub fn is_cjk(c: char) -> bool {
    matches!(
        block_script(c),
        Some(Script::Han | Script::Kana | Script::Hangul)
    )
}

/// The script of a letter by its Unicode block; `None` for what is not a letter (digits,
/// punctuation, spaces, symbols).
pub fn script_of(c: char) -> Option<Script> {
    if !c.is_alphabetic() {
        return None;
    }
    Some(block_script(c).unwrap_or(Script::Other))
}

fn block_script(c: char) -> Option<Script> {
    let script = match u32::from(c) {
        0x41..=0x5A | 0x61..=0x7A | 0xC0..=0x24F | 0x250..=0x2AF | 0x1E00..=0x1EFF => Script::Latin,
        0x2C60..=0x2C7F | 0xA720..=0xA7FF | 0xFF21..=0xFF3A | 0xFF41..=0xFF5A => Script::Latin,
        0x370..=0x3FF | 0x1F00..=0x1FFF => Script::Greek,
        0x400..=0x52F | 0x1C80..=0x1C8F | 0x2DE0..=0x2DFF | 0xA640..=0xA69F => Script::Cyrillic,
        0x600..=0x6FF | 0x750..=0x77F | 0x8A0..=0x8FF | 0xFB50..=0xFDFF | 0xFE70..=0xFEFF => {
            Script::Arabic
        }
        0xB80..=0xBFF => Script::Tamil,
        0x1100..=0x11FF | 0x3130..=0x318F | 0xA960..=0xA97F | 0xAC00..=0xD7FF | 0xFFA0..=0xFFDC => {
            Script::Hangul
        }
        0x3040..=0x309F | 0x30A0..=0x30FF | 0x31F0..=0x31FF | 0xFF66..=0xFF9F => Script::Kana,
        0x1B000..=0x1B16F => Script::Kana,
        0x2E80..=0x2FDF | 0x3005 | 0x3007 | 0x3021..=0x3029 | 0x3038..=0x303B => Script::Han,
        0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x3FFFF => Script::Han,
        _ => return None,
    };
    Some(script)
}

/// How many letters of each script a text (or a whole corpus) has.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScriptCounts {
    letters: [u64; SCRIPTS.len()],
}

impl ScriptCounts {
    /// Counts the letters of `text`.
    pub fn add(&mut self, text: &str) {
        for c in text.chars() {
            if c.is_ascii() {
                if c.is_ascii_alphabetic() {
                    self.letters[Script::Latin.index()] += 1;
                }
            } else if let Some(script) = script_of(c) {
                self.letters[script.index()] += 1;
            }
        }
    }

    /// Adds another count (of another part of the corpus).
    pub fn merge(&mut self, other: &ScriptCounts) {
        for (mine, theirs) in self.letters.iter_mut().zip(other.letters) {
            *mine += theirs;
        }
    }

    /// Letters counted in all.
    pub fn total(&self) -> u64 {
        self.letters.iter().sum()
    }

    /// Letters of `script`.
    pub fn of(&self, script: Script) -> u64 {
        self.letters[script.index()]
    }

    /// The share of the letters that are in one of `scripts` (0 without letters).
    pub fn share(&self, scripts: &[Script]) -> f64 {
        let total = self.total();
        if total == 0 {
            return 0.0;
        }
        scripts.iter().map(|&s| self.of(s)).sum::<u64>() as f64 / total as f64
    }

    /// The script with the most letters and its share; `None` without letters.
    pub fn dominant(&self) -> Option<(Script, f64)> {
        let total = self.total();
        if total == 0 {
            return None;
        }
        let (index, &count) = self
            .letters
            .iter()
            .enumerate()
            .max_by_key(|&(i, &count)| (count, std::cmp::Reverse(i)))?;
        Some((SCRIPTS[index], count as f64 / total as f64))
    }

    /// The mismatch when fewer than half of the letters are in the scripts of `language`
    /// (checked only from [`MIN_LETTERS`] letters on, so a few names or an empty text never
    /// warn).
    pub fn check(&self, language: Language) -> Option<LanguageMismatch> {
        if self.total() < MIN_LETTERS {
            return None;
        }
        let share = self.share(language.scripts());
        if share >= 0.5 {
            return None;
        }
        let (dominant, dominant_share) = self.dominant()?;
        // Japanese mixes kana with Han; a text whose Han letters come with much kana is Japanese.
        let kana = self.of(Script::Kana) as f64 / self.total() as f64;
        let suggestion = if dominant == Script::Han && kana >= 0.1 {
            Language::from_code("ja").ok()
        } else {
            dominant
                .likely_language()
                .and_then(|code| Language::from_code(code).ok())
        }
        .filter(|&suggested| suggested != language);
        Some(LanguageMismatch {
            language,
            share,
            dominant,
            dominant_share,
            suggestion,
        })
    }
}

/// Fewer letters than this are too few to say what language a text is in.
pub const MIN_LETTERS: u64 = 200;

/// Most letters of a text are not in the scripts of its configured language.
#[derive(Clone, Debug, PartialEq)]
pub struct LanguageMismatch {
    pub language: Language,
    /// Share of the letters in the configured language's scripts.
    pub share: f64,
    /// The script with the most letters, and its share.
    pub dominant: Script,
    pub dominant_share: f64,
    /// The language the dominant script suggests, when it is supported and not the configured
    /// one.
    pub suggestion: Option<Language>,
}

impl fmt::Display for LanguageMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scripts: Vec<&str> = self.language.scripts().iter().map(|s| s.name()).collect();
        write!(
            f,
            "the language is {} ({}), but only {:.0} % of the letters are {} and {:.0} % are {}",
            self.language.name(),
            self.language.code(),
            100.0 * self.share,
            scripts.join(" or "),
            100.0 * self.dominant_share,
            self.dominant.name(),
        )?;
        if let Some(suggested) = self.suggestion {
            write!(
                f,
                "; if the text is {}, set `language = \"{}\"` under [corpus] (or --language {})",
                suggested.name(),
                suggested.code(),
                suggested.code()
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(text: &str) -> ScriptCounts {
        let mut counts = ScriptCounts::default();
        counts.add(text);
        counts
    }

    #[test]
    fn letters_are_counted_by_script_and_the_rest_ignored() {
        let c = counts("서울 인구는 약 천만 명 (Seoul, 2024)! 東京 とうきょう Москва");
        assert_eq!(c.of(Script::Hangul), 9);
        assert_eq!(c.of(Script::Latin), 5);
        assert_eq!(c.of(Script::Han), 2);
        assert_eq!(c.of(Script::Kana), 5);
        assert_eq!(c.of(Script::Cyrillic), 6);
        assert_eq!(c.total(), 27);
    }

    #[test]
    fn a_korean_corpus_configured_as_english_warns_and_suggests_korean() {
        let text = "김치는 한국의 전통 발효 음식이다. ".repeat(20);
        let english = counts(&text).check(Language::ENGLISH).expect("a mismatch");
        assert_eq!(english.share, 0.0);
        assert_eq!(english.dominant, Script::Hangul);
        assert_eq!(english.suggestion, Language::from_code("ko").ok());
        let message = english.to_string();
        assert!(
            message.contains("only 0 % of the letters are Latin and 100 % are Hangul"),
            "{message}"
        );
        assert!(message.contains("language = \"ko\""), "{message}");
        assert_eq!(
            counts(&text).check(Language::from_code("ko").unwrap()),
            None
        );
    }

    #[test]
    fn japanese_is_suggested_for_han_with_kana_and_chinese_for_han_alone() {
        let japanese = "東京は日本の首都であり、多くの人が住んでいます。".repeat(20);
        let check = counts(&japanese).check(Language::ENGLISH).unwrap();
        assert_eq!(check.suggestion.map(Language::code), Some("ja"));
        assert_eq!(
            counts(&japanese).check(Language::from_code("ja").unwrap()),
            None
        );
        let chinese = "北京是中华人民共和国的首都".repeat(20);
        let check = counts(&chinese).check(Language::ENGLISH).unwrap();
        assert_eq!(check.suggestion.map(Language::code), Some("zh"));
    }

    #[test]
    fn short_texts_and_mixed_but_mostly_right_texts_do_not_warn() {
        assert_eq!(counts("김치").check(Language::ENGLISH), None);
        let mostly_english = format!("{} 김치", "kimchi is a fermented dish ".repeat(20));
        assert_eq!(counts(&mostly_english).check(Language::ENGLISH), None);
        // English text configured as German: same script, nothing to tell them apart cheaply.
        let english = "the cat sat on the mat ".repeat(20);
        assert_eq!(
            counts(&english).check(Language::from_code("de").unwrap()),
            None
        );
    }

    #[test]
    fn is_cjk_covers_han_kana_and_hangul_only() {
        for c in ['中', '々', 'あ', 'カ', 'ー', '한', 'ㄱ', 'ｶ'] {
            assert!(is_cjk(c), "{c}");
        }
        for c in ['a', '1', 'é', 'Я', '。', '、', ' '] {
            assert!(!is_cjk(c), "{c}");
        }
    }
}
