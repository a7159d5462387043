//! Text metrics of any prediction/reference pairs (`hierarag eval text`): the pairs file and its
//! ROUGE-1 and BLEU are `hierarag-interchange`'s ([`hierarag_interchange::text`], re-exported
//! here); the MiniLM cosine (CS, as `hierarag evaluate` scores it) needs a model, so it is here.

use std::path::Path;

use anyhow::Context;
use hierarag_llm::{CacheSetting, EmbeddingsConfig};

pub use hierarag_interchange::text::{
    MeanScores, PairScores, TextEvaluation, TextPair, evaluate, read_pairs,
};

/// The CS of every pair as `hierarag evaluate` scores an answer: the cosine of the
/// prediction's and the reference's embeddings by `embeddings` (a run config's [embeddings];
/// the embedded MiniLM by default, fetched on first use), without a response cache; with
/// several references, the highest of their cosines.
pub fn cosine_similarities(
    pairs: &[TextPair],
    embeddings: &EmbeddingsConfig,
    reporter: &dyn crate::Reporter,
) -> anyhow::Result<Vec<f64>> {
    let mut config = embeddings.clone();
    config.cache = CacheSetting::Off;
    let embedder = crate::models::embedder(&config, Path::new("."), reporter)?;
    // Each pair's prediction, then its references, one after the other.
    let texts: Vec<String> = pairs
        .iter()
        .flat_map(|pair| std::iter::once(&pair.prediction).chain(&pair.references))
        .cloned()
        .collect();
    let vectors = crate::stages::runtime()?
        .block_on(embedder.embed(&texts))
        .context("embedding the pairs")?;
    let mut vectors = vectors.iter();
    Ok(pairs
        .iter()
        .map(|pair| {
            let prediction = vectors.next().expect("one vector per text");
            let best = pair
                .references
                .iter()
                .map(|_| {
                    let reference = vectors.next().expect("one vector per text");
                    hierarag_pipeline::cosine(prediction, reference)
                })
                .reduce(f64::max)
                .expect("read_pairs gives every pair a reference");
            best + 0.0
        })
        .collect())
}
