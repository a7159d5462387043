//! Which language a run's texts are in (docs/design.md, "Languages"), for the stages that are
//! not handed a corpus: the config's `[corpus] language`, else the language the run was
//! started with (its manifest), else its index's, else English.

use hierarag_lang::{Language, LanguageMismatch, ScriptCounts};
use hierarag_metrics::TextTokenizers;

use crate::config::RunConfig;
use crate::layout::RunDir;
use crate::manifest::Manifest;

/// The language of the run's corpus.
pub fn of_run(config: Option<&RunConfig>, run: &RunDir) -> Language {
    if let Some(corpus) = config.and_then(|config| config.corpus.as_ref()) {
        return corpus.language;
    }
    let started_with = Manifest::load(run).ok().and_then(|manifest| {
        let code = manifest
            .config
            .get("corpus")?
            .get("language")?
            .as_str()?
            .to_owned();
        Language::from_code(&code).ok()
    });
    started_with
        .or_else(|| {
            hierarag_index::IndexManifest::read(&run.index())
                .ok()
                .flatten()
                .map(|manifest| manifest.language)
        })
        .unwrap_or_default()
}

/// Says which tokenizers the text metrics use, when they are not the English defaults.
pub fn describe_tokenizers(language: Language) -> Option<String> {
    let tokenizers = TextTokenizers::for_language(language);
    (!tokenizers.is_default()).then(|| {
        format!(
            "text metrics for {} ({}): ROUGE-1 over {} tokens, BLEU with sacrebleu's {} tokenizer",
            language.name(),
            language.code(),
            tokenizers.rouge1.name(),
            tokenizers.bleu.name()
        )
    })
}

/// The mismatch, when most letters of `texts` are not in the scripts of `language`.
pub fn check_texts<'t>(
    language: Language,
    texts: impl IntoIterator<Item = &'t str>,
) -> Option<LanguageMismatch> {
    let mut letters = ScriptCounts::default();
    for text in texts {
        letters.add(text);
    }
    letters.check(language)
}

/// The warning for CS and dense retrieval with the embedded English MiniLM on a corpus in
/// another language; `None` for English or an embeddings endpoint.
pub fn embeddings_warning(
    language: Language,
    embeddings: &hierarag_llm::EmbeddingsConfig,
) -> Option<String> {
    if language.is_english() || embeddings.backend != hierarag_llm::EmbedBackendKind::Embedded {
        return None;
    }
    Some(format!(
        "the embedded MiniLM (all-MiniLM-L6-v2) is an English model: its cosine similarity \
(CS) and dense retrieval say little about {} text. No multilingual sentence-embedding model \
ships as a package to embed here; serve one (for example intfloat/multilingual-e5-small or \
BAAI/bge-m3 with llama.cpp's server --embeddings, text-embeddings-inference or vLLM) and set \
[embeddings] backend = \"openai\" with its base_urls and model",
        language.name()
    ))
}
