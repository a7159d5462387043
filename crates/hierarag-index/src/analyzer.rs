//! The text analyzers shared by indexing and querying, one per corpus language.

use hierarag_lang::{Language, Segmentation, for_each_token};
use tantivy::tokenizer::{
    Language as Stemming, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter,
    TextAnalyzer, Token, TokenStream, Tokenizer,
};

use crate::manifest::AnalyzerInfo;

/// Name under which the English analyzer is registered with tantivy.
pub const ANALYZER_NAME: &str = "hierarag_en";

/// The name the analyzer of `language` is registered under (`hierarag_en`, `hierarag_ko`).
pub fn analyzer_name(language: Language) -> String {
    format!("hierarag_{}", language.code())
}

/// Lowercase, English stop words, English (Snowball) stemming over tantivy's simple tokenizer,
/// which splits on every non-alphanumeric character, so `PCI/acpi-info` gives `pci acpi info`.
/// Tokens longer than 40 bytes (URLs, hashes) are dropped, as in tantivy's `en_stem`.
pub fn english_analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(StopWordFilter::new(Stemming::English).expect("tantivy ships English stop words"))
        .filter(Stemmer::new(Stemming::English))
        .build()
}

/// The analyzer of a corpus in `language` (docs/design.md, "Languages"):
/// - English: [`english_analyzer`], the paper's;
/// - Chinese, Japanese and Korean: overlapping bigrams of Han, kana and Hangul characters and
///   whole words for the rest ([`hierarag_lang::for_each_token`]), lowercased, tokens over 40
///   bytes dropped, English stop words removed from the non-CJK words: Lucene's CJKAnalyzer;
/// - every other language: words of letters, marks and digits of any script, lowercased, long
///   tokens dropped, then the language's stop words where tantivy has a list and its Snowball
///   stemmer.
pub fn analyzer_for(language: Language) -> TextAnalyzer {
    if language.is_english() {
        return english_analyzer();
    }
    let tokenizer = ScriptTokenizer::new(language.segmentation());
    let builder = TextAnalyzer::builder(tokenizer)
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser);
    match language.segmentation() {
        Segmentation::CjkBigrams => builder
            .filter(
                StopWordFilter::new(Stemming::English).expect("tantivy ships English stop words"),
            )
            .build(),
        Segmentation::Words => {
            let stemming = stemming(language).expect("every word-segmented language has a stemmer");
            let builder = builder.dynamic();
            let builder = match StopWordFilter::new(stemming) {
                Some(stop_words) => builder.filter_dynamic(stop_words),
                None => builder,
            };
            builder.filter_dynamic(Stemmer::new(stemming)).build()
        }
    }
}

/// tantivy's Snowball stemmer for a language, where it has one.
fn stemming(language: Language) -> Option<Stemming> {
    Some(match language.code() {
        "ar" => Stemming::Arabic,
        "da" => Stemming::Danish,
        "de" => Stemming::German,
        "el" => Stemming::Greek,
        "en" => Stemming::English,
        "es" => Stemming::Spanish,
        "fi" => Stemming::Finnish,
        "fr" => Stemming::French,
        "hu" => Stemming::Hungarian,
        "it" => Stemming::Italian,
        "nl" => Stemming::Dutch,
        "no" => Stemming::Norwegian,
        "pt" => Stemming::Portuguese,
        "ro" => Stemming::Romanian,
        "ru" => Stemming::Russian,
        "sv" => Stemming::Swedish,
        "ta" => Stemming::Tamil,
        "tr" => Stemming::Turkish,
        _ => return None,
    })
}

/// What the manifest says of the analyzer of `language`.
pub(crate) fn analyzer_info(language: Language) -> AnalyzerInfo {
    if language.is_english() {
        return AnalyzerInfo::default();
    }
    let (tokenizer, stopwords, stemmer) = match language.segmentation() {
        Segmentation::CjkBigrams => (
            "CJK bigrams (Han, kana, Hangul), Unicode words for the rest".to_string(),
            "english (tantivy), on the non-CJK words, as Lucene's CJKAnalyzer".to_string(),
            "none".to_string(),
        ),
        Segmentation::Words => {
            let stemming = stemming(language).expect("every word-segmented language has a stemmer");
            let name = language.name().to_lowercase();
            (
                "Unicode words (letters, marks and digits of any script)".to_string(),
                if StopWordFilter::new(stemming).is_some() {
                    format!("{name} (tantivy)")
                } else {
                    "none".to_string()
                },
                format!("{name} (snowball)"),
            )
        }
    };
    AnalyzerInfo {
        name: analyzer_name(language),
        tokenizer,
        lowercase: true,
        stopwords,
        stemmer,
    }
}

/// A tantivy tokenizer over [`hierarag_lang::for_each_token`]: words of every script, or CJK
/// bigrams.
#[derive(Clone)]
struct ScriptTokenizer {
    segmentation: Segmentation,
    spans: Vec<(usize, usize)>,
    token: Token,
}

impl ScriptTokenizer {
    fn new(segmentation: Segmentation) -> ScriptTokenizer {
        ScriptTokenizer {
            segmentation,
            spans: Vec::new(),
            token: Token::default(),
        }
    }
}

struct ScriptTokenStream<'a> {
    text: &'a str,
    spans: std::slice::Iter<'a, (usize, usize)>,
    token: &'a mut Token,
}

impl Tokenizer for ScriptTokenizer {
    type TokenStream<'a> = ScriptTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> ScriptTokenStream<'a> {
        self.token.reset();
        self.spans.clear();
        let spans = &mut self.spans;
        for_each_token(text, self.segmentation, |_, start, end| {
            spans.push((start, end))
        });
        ScriptTokenStream {
            text,
            spans: self.spans.iter(),
            token: &mut self.token,
        }
    }
}

impl TokenStream for ScriptTokenStream<'_> {
    fn advance(&mut self) -> bool {
        let Some(&(start, end)) = self.spans.next() else {
            return false;
        };
        self.token.text.clear();
        self.token.text.push_str(&self.text[start..end]);
        self.token.offset_from = start;
        self.token.offset_to = end;
        self.token.position = self.token.position.wrapping_add(1);
        true
    }

    fn token(&self) -> &Token {
        self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        self.token
    }
}

/// The index terms of `text`, in order, duplicates kept.
pub fn analyze(analyzer: &mut TextAnalyzer, text: &str) -> Vec<String> {
    let mut terms = Vec::new();
    let mut stream = analyzer.token_stream(text);
    while let Some(token) = stream.next() {
        terms.push(token.text.clone());
    }
    terms
}

#[cfg(test)]
mod tests {
    use super::*;

    fn language(code: &str) -> Language {
        Language::from_code(code).unwrap()
    }

    #[test]
    fn punctuation_splits_and_stopwords_and_stems_apply() {
        let mut a = english_analyzer();
        assert_eq!(analyze(&mut a, "PCI/acpi-info"), ["pci", "acpi", "info"]);
        assert_eq!(analyze(&mut a, "The Running of the Bulls"), ["run", "bull"]);
        assert!(analyze(&mut a, "the of and").is_empty());
        assert_eq!(analyzer_info(Language::ENGLISH), AnalyzerInfo::default());
        assert_eq!(analyzer_name(Language::ENGLISH), ANALYZER_NAME);
    }

    #[test]
    fn korean_is_cut_into_bigrams_with_english_words_kept_and_stop_words_dropped() {
        let mut a = analyzer_for(language("ko"));
        assert_eq!(
            analyze(&mut a, "한국의 전통 발효 음식, the KIMCHI of Korea"),
            ["한국", "국의", "전통", "발효", "음식", "kimchi", "korea"]
        );
        // A query word without its particle still shares a bigram with the document's word.
        let document = analyze(&mut a, "김치는 한국의 전통 발효 음식이다");
        for term in analyze(&mut a, "한국 전통 발효 음식") {
            assert!(document.contains(&term), "{term}");
        }
        let mut english = english_analyzer();
        assert_eq!(analyze(&mut english, "한국의 전통"), ["한국의", "전통"]);
    }

    #[test]
    fn other_languages_use_their_stop_words_and_snowball_stemmer() {
        let mut german = analyzer_for(language("de"));
        assert_eq!(
            analyze(&mut german, "Die Häuser und die Bäume"),
            ["haus", "baum"]
        );
        let mut russian = analyzer_for(language("ru"));
        assert_eq!(analyze(&mut russian, "Книги и книга"), ["книг", "книг"]);
        let info = analyzer_info(language("ro"));
        assert_eq!(
            (info.stopwords.as_str(), info.stemmer.as_str()),
            ("none", "romanian (snowball)")
        );
        for language in Language::all() {
            // Every supported language has an analyzer.
            let _ = analyzer_for(language);
            let _ = analyzer_info(language);
        }
    }
}
