//! The text analyzer shared by indexing and querying.

use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer,
};

/// Name under which the analyzer is registered with tantivy.
pub const ANALYZER_NAME: &str = "hierarag_en";

/// Lowercase, English stop words, English (Snowball) stemming over tantivy's simple tokenizer,
/// which splits on every non-alphanumeric character, so `PCI/acpi-info` gives `pci acpi info`.
/// Tokens longer than 40 bytes (URLs, hashes) are dropped, as in tantivy's `en_stem`.
pub fn english_analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(StopWordFilter::new(Language::English).expect("tantivy ships English stop words"))
        .filter(Stemmer::new(Language::English))
        .build()
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

    #[test]
    fn punctuation_splits_and_stopwords_and_stems_apply() {
        let mut a = english_analyzer();
        assert_eq!(analyze(&mut a, "PCI/acpi-info"), ["pci", "acpi", "info"]);
        assert_eq!(analyze(&mut a, "The Running of the Bulls"), ["run", "bull"]);
        assert!(analyze(&mut a, "the of and").is_empty());
    }
}
