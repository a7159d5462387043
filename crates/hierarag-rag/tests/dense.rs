//! Dense and hybrid retrieval over a small index, with a deterministic bag-of-words embedder
//! in place of MiniLM (no model download).

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hierarag_corpus::{ChunkParams, CorpusSpec};
use hierarag_index::{Bm25Index, BuildOptions, Hit, build_index};
use hierarag_llm::{BoxFuture, CallError, ClientSettings, EmbedBackend, Embedder};
use hierarag_rag::{
    ANN_THRESHOLD, AnnMode, Bm25Retriever, CHUNKS_PER_STEP, DenseProgress, DenseRetriever,
    DenseSettings, EMBEDDINGS_FILE, FusionSettings, HNSW_FILE, HNSW_META_FILE, HnswProgress,
    HybridRetriever, META_FILE, RagError, Retriever, reciprocal_rank_fusion,
};

const DIM: usize = 16;

/// Words hashed (FNV-1a, lowercase) into 16 counts, L2-normalised.
fn bag_of_words(text: &str) -> Vec<f32> {
    let mut vector = vec![0f32; DIM];
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let mut hash = 0xcbf2_9ce4_8422_2325u64;
        for byte in word.to_lowercase().bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        vector[(hash % DIM as u64) as usize] += 1.0;
    }
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        vector.iter_mut().for_each(|x| *x /= norm);
    }
    vector
}

#[derive(Debug)]
struct BagOfWords {
    model: String,
    /// Texts embedded so far.
    texts: Arc<AtomicUsize>,
    /// Fail every call once this many texts have been embedded.
    fail_after: Option<usize>,
}

impl EmbedBackend for BagOfWords {
    fn backend(&self) -> &str {
        "fake"
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, CallError>> {
        Box::pin(async move {
            if self
                .fail_after
                .is_some_and(|n| self.texts.load(Ordering::SeqCst) >= n)
            {
                return Err(CallError::Fatal {
                    reason: "the fake embedder gave up".into(),
                });
            }
            self.texts.fetch_add(texts.len(), Ordering::SeqCst);
            Ok(texts.iter().map(|t| bag_of_words(t)).collect())
        })
    }
}

struct Fake {
    embedder: Arc<Embedder>,
    texts: Arc<AtomicUsize>,
}

fn fake(model: &str, fail_after: Option<usize>) -> Fake {
    let texts = Arc::new(AtomicUsize::new(0));
    let backend = BagOfWords {
        model: model.into(),
        texts: texts.clone(),
        fail_after,
    };
    let embedder = Embedder::new(vec![Arc::new(backend)], &ClientSettings::default(), 3).unwrap();
    Fake {
        embedder: Arc::new(embedder),
        texts,
    }
}

impl Fake {
    fn embedded(&self) -> usize {
        self.texts.load(Ordering::SeqCst)
    }
}

/// The texts a build of `index` sends to the embedder: each step's distinct chunk texts (the
/// corpus has twins, and the generated documents repeat), fewer than its chunks.
fn texts_to_embed(index: &Bm25Index) -> u64 {
    let positions = index.chunk_positions();
    let total = positions
        .chunks(CHUNKS_PER_STEP)
        .map(|step| {
            step.iter()
                .map(|p| index.chunk_text(&p.hit(0.0)).unwrap())
                .collect::<std::collections::HashSet<String>>()
                .len() as u64
        })
        .sum();
    assert!(total < index.n_chunks(), "the corpus repeats some texts");
    total
}

const DOCS: &[(&str, &str)] = &[
    ("apollo", "apollo moon astronauts landed rocket launch"),
    ("jazz", "jazz blues ragtime orleans music band"),
    ("rice", "rice staple food population grain harvest"),
    ("twin-a", "same words here twice"),
    ("twin-b", "same words here twice"),
    ("repeat", "echo echo echo echo echo echo echo echo"),
    ("volcano", "lava eruption magma crater ash plume"),
];

const WORDS: &[&str] = &[
    "moon", "river", "war", "jazz", "prime", "light", "wall", "energy", "gradient", "printing",
    "treaty", "glucose", "tectonic", "hamlet", "rice", "kubrick",
];

/// `DOCS`, then `n_generated` documents of words drawn by a fixed recurrence.
fn write_corpus(path: &Path, n_generated: usize) {
    let mut file = std::fs::File::create(path).unwrap();
    for (id, text) in DOCS {
        writeln!(file, "{}", serde_json::json!({"id": id, "text": text})).unwrap();
    }
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for d in 0..n_generated {
        let n_words = 3 + (d * 7) % 13;
        let words: Vec<&str> = (0..n_words)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                WORDS[(state % WORDS.len() as u64) as usize]
            })
            .collect();
        let line = serde_json::json!({"id": format!("gen{d:03}"), "text": words.join(" ")});
        writeln!(file, "{line}").unwrap();
    }
}

/// Builds (or rebuilds, `overwrite`) the index of a corpus of `n_generated` extra documents,
/// chunks of 4 words.
fn build(dir: &Path, n_generated: usize, overwrite: bool) -> Arc<Bm25Index> {
    let corpus = dir.join("corpus.jsonl");
    write_corpus(&corpus, n_generated);
    let spec = CorpusSpec::new([corpus.to_string_lossy().into_owned()]);
    let out = dir.join("index");
    let options = BuildOptions {
        chunking: ChunkParams {
            size: 4,
            overlap: 0,
        },
        threads: 1,
        writer_heap_bytes: 30_000_000,
        overwrite,
        ..BuildOptions::default()
    };
    build_index(&spec, &out, &options, &mut |_| {}).unwrap();
    Arc::new(Bm25Index::open(&out).unwrap())
}

async fn dense(
    index: &Arc<Bm25Index>,
    fake: &Fake,
    cache_dir: &Path,
    settings: &DenseSettings,
) -> (DenseRetriever, Vec<DenseProgress>) {
    dense_with(index, &fake.embedder, cache_dir, settings).await
}

fn building_reason(reports: &[DenseProgress]) -> Option<&str> {
    reports.iter().find_map(|p| match p {
        DenseProgress::Building { reason, .. } => Some(reason.as_str()),
        _ => None,
    })
}

fn ids(index: &Bm25Index, hits: &[Hit]) -> Vec<String> {
    hits.iter().map(|h| index.chunk_id(h)).collect()
}

#[tokio::test]
async fn the_chunk_with_the_same_words_is_nearest() {
    let dir = tempfile::tempdir().unwrap();
    let index = build(dir.path(), 40, false);
    let fake = fake("bow-16", None);
    let cache = DenseRetriever::default_cache_dir(&index, &fake.embedder);
    assert_eq!(cache, index.dir().join("dense").join("fake-bow-16"));
    let (retriever, _) = dense(&index, &fake, &cache, &DenseSettings::default()).await;
    assert_eq!(retriever.name(), "dense");
    assert_eq!(retriever.n_chunks() as u64, index.n_chunks());
    assert_eq!(retriever.dim(), DIM);

    let top = retriever
        .retrieve("lava eruption magma crater", 3)
        .await
        .unwrap();
    assert_eq!(top.len(), 3);
    assert_eq!(top[0].chunk_id, "volcano#0");
    assert_eq!(top[0].doc_id, "volcano");
    assert_eq!(top[0].text, "lava eruption magma crater");
    assert!((top[0].score - 1.0).abs() < 1e-6, "{}", top[0].score);
    assert!(top[1].score <= top[0].score);
    assert!(retriever.retrieve("anything", 0).await.unwrap().is_empty());
}

#[tokio::test]
async fn ties_go_to_the_greater_document_id_then_the_earlier_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let index = build(dir.path(), 0, false);
    let fake = fake("bow-16", None);
    let (retriever, _) = dense(
        &index,
        &fake,
        &dir.path().join("dense"),
        &DenseSettings::default(),
    )
    .await;

    let twins = retriever.search("same words here twice", 2).await.unwrap();
    let twin_ids: Vec<&str> = twins.iter().map(|c| c.chunk_id.as_str()).collect();
    assert_eq!(twin_ids, ["twin-b#0", "twin-a#0"]);
    assert_eq!(twins[0].score, twins[1].score);

    let echoes = retriever.search("echo", 2).await.unwrap();
    let echo_ids: Vec<&str> = echoes.iter().map(|c| c.chunk_id.as_str()).collect();
    assert_eq!(echo_ids, ["repeat#0", "repeat#1"]);
    assert_eq!(echoes[0].score, echoes[1].score);
}

#[tokio::test]
async fn the_top_k_is_the_exact_cosine_ranking() {
    let dir = tempfile::tempdir().unwrap();
    let index = build(dir.path(), 1000, false);
    let fake = fake("bow-16", None);
    let (retriever, _) = dense(
        &index,
        &fake,
        &dir.path().join("dense"),
        &DenseSettings::default(),
    )
    .await;
    let chunks: Vec<_> = index.chunks().map(Result::unwrap).collect();
    assert!(
        chunks.len() > 2048,
        "the search needs several parallel tasks"
    );
    for query in [
        "moon river war",
        "jazz light",
        "treaty of glucose",
        "kubrick",
        "zebra",
    ] {
        let q = bag_of_words(query);
        let reference: HashMap<String, f32> = chunks
            .iter()
            .map(|c| {
                let v = bag_of_words(&c.text);
                (
                    c.chunk_id.clone(),
                    q.iter().zip(&v).map(|(a, b)| a * b).sum(),
                )
            })
            .collect();
        let full = retriever.nearest(&q, chunks.len()).unwrap();
        assert_eq!(full.len(), chunks.len());
        for k in [1, 5, 17] {
            let hits = retriever.nearest(&q, k).unwrap();
            assert_eq!(
                hits,
                full[..k],
                "{query}: top {k} is a prefix of the full ranking"
            );
            let listed = ids(&index, &hits);
            for (hit, id) in hits.iter().zip(&listed) {
                assert!((hit.score - reference[id]).abs() < 1e-5, "{query}: {id}");
            }
            for pair in hits.windows(2) {
                let (a, b) = (&pair[0], &pair[1]);
                assert!(
                    a.score > b.score
                        || (a.score == b.score
                            && (index.doc_id(a) > index.doc_id(b)
                                || (a.doc_ord == b.doc_ord && a.chunk_n < b.chunk_n))),
                    "{query}: {} before {}",
                    index.chunk_id(a),
                    index.chunk_id(b)
                );
            }
            let last = hits.last().unwrap().score;
            for (id, score) in &reference {
                assert!(
                    listed.contains(id) || *score <= last + 1e-5,
                    "{query}: {id} ({score}) missing from the top {k}"
                );
            }
        }
    }
}

#[tokio::test]
async fn stored_embeddings_are_reused_and_rebuilt_when_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let index = build(dir.path(), 30, false);
    let cache = dir.path().join("dense");
    let fake = fake("bow-16", None);
    let (first, reports) = dense(&index, &fake, &cache, &DenseSettings::default()).await;
    assert_eq!(building_reason(&reports), Some("no stored embeddings"));
    assert_eq!(fake.embedded() as u64, texts_to_embed(&index));
    assert!(matches!(
        reports.last(),
        Some(DenseProgress::Embedded { done, total }) if done == total
    ));
    let file_bytes = index.n_chunks() * DIM as u64 * 4;
    assert_eq!(
        std::fs::metadata(cache.join(EMBEDDINGS_FILE))
            .unwrap()
            .len(),
        file_bytes
    );

    let (second, reports) = dense(&index, &fake, &cache, &DenseSettings::default()).await;
    assert!(
        matches!(reports[..], [DenseProgress::Reused { .. }]),
        "{reports:?}"
    );
    assert_eq!(
        fake.embedded() as u64,
        texts_to_embed(&index),
        "nothing embedded again"
    );
    let q = bag_of_words("moon river");
    assert_eq!(
        first.nearest(&q, 10).unwrap(),
        second.nearest(&q, 10).unwrap()
    );

    // A file cut short (a copy interrupted, a full disk) is noticed and rebuilt.
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(cache.join(EMBEDDINGS_FILE))
        .unwrap();
    file.set_len(file_bytes - 4).unwrap();
    drop(file);
    let (third, reports) = dense(&index, &fake, &cache, &DenseSettings::default()).await;
    let reason = building_reason(&reports).expect("rebuilt");
    assert!(reason.contains("bytes"), "{reason}");
    assert_eq!(fake.embedded() as u64, 2 * texts_to_embed(&index));
    assert_eq!(
        std::fs::metadata(cache.join(EMBEDDINGS_FILE))
            .unwrap()
            .len(),
        file_bytes
    );
    assert_eq!(
        third.nearest(&q, 10).unwrap(),
        first.nearest(&q, 10).unwrap()
    );
}

#[tokio::test]
async fn stored_embeddings_of_another_index_or_model_are_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    // The cache lives outside the index, so it survives the index's rebuild.
    let cache = dir.path().join("dense");
    let index = build(dir.path(), 20, false);
    let fake = fake("bow-16", None);
    dense(&index, &fake, &cache, &DenseSettings::default()).await;
    let n_before = texts_to_embed(&index);

    let index = build(dir.path(), 25, true);
    let (retriever, reports) = dense(&index, &fake, &cache, &DenseSettings::default()).await;
    let reason = building_reason(&reports).expect("rebuilt");
    assert!(reason.contains("another index"), "{reason}");
    assert_eq!(fake.embedded() as u64, n_before + texts_to_embed(&index));
    assert_eq!(retriever.n_chunks() as u64, index.n_chunks());

    let other = self::fake("bow-16-other", None);
    let (_, reports) = dense(&index, &other, &cache, &DenseSettings::default()).await;
    let reason = building_reason(&reports).expect("rebuilt");
    assert!(reason.contains("model bow-16,"), "{reason}");
    assert_eq!(other.embedded() as u64, texts_to_embed(&index));
}

#[tokio::test]
async fn an_interrupted_build_is_never_taken_as_complete() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("dense");
    let index = build(dir.path(), 2000, false);
    assert!(index.n_chunks() > 1200, "the build needs several steps");
    let fake_ok = fake("bow-16", None);
    dense(&index, &fake_ok, &cache, &DenseSettings::default()).await;
    assert!(cache.join(META_FILE).exists());

    // The same model fails half way through a rebuild (after the index changed)…
    let index = build(dir.path(), 2001, true);
    let failing = fake("bow-16", Some(600));
    let error = DenseRetriever::build(
        index.clone(),
        failing.embedder.clone(),
        &cache,
        &DenseSettings::default(),
        &mut |_| {},
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&error, RagError::EmbedChunks { first, .. } if first.contains('#')),
        "{error}"
    );
    assert!(!cache.join(META_FILE).exists());

    // …so the next build starts again rather than trusting what is on disk.
    let fresh = fake("bow-16", None);
    let (retriever, reports) = dense(&index, &fresh, &cache, &DenseSettings::default()).await;
    assert_eq!(building_reason(&reports), Some("no stored embeddings"));
    assert_eq!(fresh.embedded() as u64, texts_to_embed(&index));
    assert_eq!(retriever.n_chunks() as u64, index.n_chunks());
}

async fn shared(
    index: &Arc<Bm25Index>,
    fake: &Fake,
    cache_dir: &Path,
    store: &Path,
) -> (DenseRetriever, Vec<DenseProgress>) {
    let mut reports = Vec::new();
    let retriever = DenseRetriever::build_shared(
        index.clone(),
        fake.embedder.clone(),
        cache_dir,
        Some(store),
        &DenseSettings::default(),
        &mut |p| reports.push(p),
    )
    .await
    .unwrap();
    (retriever, reports)
}

#[tokio::test]
async fn a_second_run_directory_takes_the_shared_embeddings_instead_of_embedding_again() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    // Two run directories, each with its own index of the same corpus.
    let first_run = dir.path().join("first");
    let second_run = dir.path().join("second");
    std::fs::create_dir_all(&first_run).unwrap();
    std::fs::create_dir_all(&second_run).unwrap();
    let first_index = build(&first_run, 60, false);
    let second_index = build(&second_run, 60, false);
    let fake = fake("bow-16", None);

    let first_cache = first_run.join("dense");
    let (first, reports) = shared(&first_index, &fake, &first_cache, &store).await;
    assert_eq!(building_reason(&reports), Some("no stored embeddings"));
    let published = reports
        .iter()
        .find_map(|p| match p {
            DenseProgress::Published { dir, error } => Some((dir.clone(), error.clone())),
            _ => None,
        })
        .expect("published");
    assert_eq!(published.1, None);
    let published = published.0;
    assert!(
        published.starts_with(store.join("fake-bow-16")),
        "{published:?}"
    );
    let embedded = fake.embedded();
    assert_eq!(embedded as u64, texts_to_embed(&first_index));

    let second_cache = second_run.join("dense");
    let (second, reports) = shared(&second_index, &fake, &second_cache, &store).await;
    match &reports[..] {
        [
            DenseProgress::Shared {
                from,
                copied,
                n_chunks,
                ..
            },
        ] => {
            assert_eq!(from, &published);
            assert!(!copied, "one filesystem: linked");
            assert_eq!(*n_chunks, second_index.n_chunks());
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(fake.embedded(), embedded, "nothing embedded again");
    let bytes = |cache: &Path| std::fs::read(cache.join(EMBEDDINGS_FILE)).unwrap();
    assert_eq!(bytes(&first_cache), bytes(&second_cache));
    let inode = |path: PathBuf| std::fs::metadata(path).unwrap().ino();
    assert_eq!(
        inode(second_cache.join(EMBEDDINGS_FILE)),
        inode(published.join(EMBEDDINGS_FILE))
    );
    let q = bag_of_words("moon river");
    assert_eq!(
        ids(&first_index, &first.nearest(&q, 10).unwrap()),
        ids(&second_index, &second.nearest(&q, 10).unwrap())
    );

    // The run directory holds its own pair: the store can go.
    std::fs::remove_dir_all(&store).unwrap();
    let (_, reports) = shared(&second_index, &fake, &second_cache, &store).await;
    assert!(
        matches!(reports[..], [DenseProgress::Reused { .. }]),
        "{reports:?}"
    );

    // Another corpus finds no pair of its own in the store (its identity differs), and
    // another model none either: both embed, and keep theirs beside the first.
    let third_run = dir.path().join("third");
    std::fs::create_dir_all(&third_run).unwrap();
    let third_index = build(&third_run, 61, false);
    let (_, reports) = shared(&third_index, &fake, &third_run.join("dense"), &store).await;
    assert_eq!(building_reason(&reports), Some("no stored embeddings"));
    let other = self::fake("bow-16-other", None);
    let (_, reports) = shared(&second_index, &other, &second_run.join("other"), &store).await;
    assert_eq!(building_reason(&reports), Some("no stored embeddings"));
    assert_eq!(other.embedded() as u64, texts_to_embed(&second_index));
    let (_, reports) = shared(&first_index, &other, &first_run.join("other"), &store).await;
    assert!(
        matches!(reports[..], [DenseProgress::Shared { .. }]),
        "{reports:?}"
    );
}

#[test]
fn reciprocal_rank_fusion_matches_hand_computed_scores() {
    type Lists = Vec<Vec<(&'static str, u32)>>;
    type Fused = Vec<(&'static str, u32, f64)>;
    let cases: Vec<(&str, Lists, usize, f64, Fused)> = vec![
        (
            "both lists, swapped: tie broken by document id descending",
            vec![vec![("a", 0), ("b", 0), ("c", 0)], vec![("b", 0), ("a", 0)]],
            10,
            60.0,
            vec![
                ("b", 0, 1.0 / 62.0 + 1.0 / 61.0),
                ("a", 0, 1.0 / 61.0 + 1.0 / 62.0),
                ("c", 0, 1.0 / 63.0),
            ],
        ),
        (
            "k cuts the fused list",
            vec![vec![("a", 0), ("b", 0), ("c", 0)], vec![("b", 0), ("a", 0)]],
            1,
            60.0,
            vec![("b", 0, 1.0 / 62.0 + 1.0 / 61.0)],
        ),
        (
            "one document's chunks tied: earlier chunk first",
            vec![vec![("d", 2)], vec![("d", 1)]],
            10,
            60.0,
            vec![("d", 1, 1.0 / 61.0), ("d", 2, 1.0 / 61.0)],
        ),
        (
            "a chunk in one list only can beat one in both",
            vec![vec![("x", 0), ("y", 0)], vec![("z", 0), ("w", 0), ("y", 0)]],
            10,
            0.0,
            vec![
                ("z", 0, 1.0),
                ("x", 0, 1.0),
                ("y", 0, 0.5 + 1.0 / 3.0),
                ("w", 0, 0.5),
            ],
        ),
        (
            "a chunk listed twice counts at its first place",
            vec![vec![("a", 0), ("b", 0), ("a", 0)]],
            10,
            60.0,
            vec![("a", 0, 1.0 / 61.0), ("b", 0, 1.0 / 62.0)],
        ),
        (
            "three lists",
            vec![
                vec![("p", 0), ("q", 0)],
                vec![("q", 0), ("p", 0)],
                vec![("q", 0)],
            ],
            10,
            1.0,
            vec![
                ("q", 0, 1.0 / 3.0 + 1.0 / 2.0 + 1.0 / 2.0),
                ("p", 0, 0.5 + 1.0 / 3.0),
            ],
        ),
        ("no lists", vec![], 10, 60.0, vec![]),
        ("empty lists", vec![vec![], vec![]], 10, 60.0, vec![]),
    ];
    for (name, lists, k, constant, expected) in cases {
        let fused = reciprocal_rank_fusion(&lists, k, constant);
        assert_eq!(fused.len(), expected.len(), "{name}: {fused:?}");
        for (got, want) in fused.iter().zip(&expected) {
            assert_eq!((got.0, got.1), (want.0, want.1), "{name}: {fused:?}");
            assert!((got.2 - want.2).abs() < 1e-15, "{name}: {fused:?}");
        }
    }
}

fn as_refs(list: &[(String, u32)]) -> Vec<(&str, u32)> {
    list.iter().map(|(d, n)| (d.as_str(), *n)).collect()
}

#[tokio::test]
async fn hybrid_fuses_the_bm25_and_dense_rankings() {
    let dir = tempfile::tempdir().unwrap();
    let index = build(dir.path(), 80, false);
    let fake = fake("bow-16", None);
    let (dense_retriever, _) = dense(
        &index,
        &fake,
        &dir.path().join("dense"),
        &DenseSettings::default(),
    )
    .await;
    let bm25 = Bm25Retriever::new(index.clone());
    let settings = FusionSettings {
        depth: 12,
        rrf_constant: 60.0,
    };
    // What the hybrid retriever must equal, from the two retrievers on their own.
    let mut expected = HashMap::new();
    for query in [
        "moon river war",
        "lava eruption",
        "jazz blues light",
        "same words",
    ] {
        for k in [1, 5, 20] {
            let depth = k.max(settings.depth);
            let lexical = bm25.hits(query, depth);
            let q = dense_retriever.embed_query(query).await.unwrap();
            let semantic = dense_retriever.nearest(&q, depth).unwrap();
            let keys = |hits: &[Hit]| -> Vec<(String, u32)> {
                hits.iter()
                    .map(|h| (index.doc_id(h).to_string(), h.chunk_n))
                    .collect()
            };
            let (lexical, semantic) = (keys(&lexical), keys(&semantic));
            let fused: Vec<(String, f64)> = reciprocal_rank_fusion(
                &[as_refs(&lexical), as_refs(&semantic)],
                k,
                settings.rrf_constant,
            )
            .into_iter()
            .map(|(d, n, s)| (format!("{d}#{n}"), s))
            .collect();
            expected.insert((query, k), fused);
        }
    }
    let hybrid = HybridRetriever::new(bm25, dense_retriever, settings).unwrap();
    assert_eq!(hybrid.name(), "hybrid");
    let texts: HashMap<String, String> = index
        .chunks()
        .map(|c| c.map(|c| (c.chunk_id, c.text)).unwrap())
        .collect();
    for ((query, k), fused) in &expected {
        let got = hybrid.retrieve(query, *k).await.unwrap();
        let got_pairs: Vec<(String, f64)> =
            got.iter().map(|c| (c.chunk_id.clone(), c.score)).collect();
        assert_eq!(&got_pairs, fused, "{query} top {k}");
        for chunk in &got {
            assert_eq!(chunk.text, texts[&chunk.chunk_id]);
            assert!(chunk.chunk_id.starts_with(&format!("{}#", chunk.doc_id)));
        }
    }
    // Both retrievers agree on the volcano chunk, so it is first with 2 / 61.
    let top = hybrid
        .retrieve("lava eruption magma crater", 1)
        .await
        .unwrap();
    assert_eq!(top[0].chunk_id, "volcano#0");
    assert!((top[0].score - 2.0 / 61.0).abs() < 1e-15);
    assert!(hybrid.retrieve("lava", 0).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_negative_rrf_constant_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let index = build(dir.path(), 0, false);
    let fake = fake("bow-16", None);
    let (dense_retriever, _) = dense(
        &index,
        &fake,
        &dir.path().join("dense"),
        &DenseSettings::default(),
    )
    .await;
    let settings = FusionSettings {
        rrf_constant: -1.0,
        ..FusionSettings::default()
    };
    let error =
        HybridRetriever::new(Bm25Retriever::new(index), dense_retriever, settings).unwrap_err();
    assert!(error.to_string().contains("rrf_constant"), "{error}");
}

// ---- The HNSW graph (usearch) ----

/// Words (a vocabulary of `n` made-up words) hashed into `dim` counts, L2-normalised: richer
/// than `bag_of_words`, so that rankings have few ties and the graph has something to find.
#[derive(Debug)]
struct HashedWords {
    dim: usize,
}

impl EmbedBackend for HashedWords {
    fn backend(&self) -> &str {
        "fake"
    }

    fn model(&self) -> &str {
        "hashed-words"
    }

    fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, CallError>> {
        Box::pin(async move { Ok(texts.iter().map(|t| hashed_words(t, self.dim)).collect()) })
    }
}

fn hashed_words(text: &str, dim: usize) -> Vec<f32> {
    let mut vector = vec![0f32; dim];
    for word in text.split_whitespace() {
        let mut hash = 0xcbf2_9ce4_8422_2325u64;
        for byte in word.bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        // Two buckets a word, one of them negative, so vectors spread over the sphere.
        vector[(hash % dim as u64) as usize] += 1.0;
        vector[((hash >> 32) % dim as u64) as usize] -= 0.5;
    }
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        vector.iter_mut().for_each(|x| *x /= norm);
    }
    vector
}

const HNSW_DIM: usize = 48;

/// An index of `n_docs` documents of 8 to 23 words from a vocabulary of 400, chunks of 8 words.
fn build_varied(dir: &Path, n_docs: usize) -> Arc<Bm25Index> {
    let corpus = dir.join("varied.jsonl");
    let mut file = std::fs::File::create(&corpus).unwrap();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for d in 0..n_docs {
        let n_words = 8 + (next() % 16) as usize;
        let words: Vec<String> = (0..n_words).map(|_| format!("w{}", next() % 400)).collect();
        let line = serde_json::json!({"id": format!("doc{d:05}"), "text": words.join(" ")});
        writeln!(file, "{line}").unwrap();
    }
    drop(file);
    let out = dir.join("varied-index");
    let options = BuildOptions {
        chunking: ChunkParams {
            size: 8,
            overlap: 0,
        },
        threads: 1,
        writer_heap_bytes: 30_000_000,
        overwrite: true,
        ..BuildOptions::default()
    };
    let spec = CorpusSpec::new([corpus.to_string_lossy().into_owned()]);
    build_index(&spec, &out, &options, &mut |_| {}).unwrap();
    Arc::new(Bm25Index::open(&out).unwrap())
}

fn hashed_embedder() -> Arc<Embedder> {
    let backend = HashedWords { dim: HNSW_DIM };
    Arc::new(Embedder::new(vec![Arc::new(backend)], &ClientSettings::default(), 3).unwrap())
}

async fn dense_with(
    index: &Arc<Bm25Index>,
    embedder: &Arc<Embedder>,
    cache_dir: &Path,
    settings: &DenseSettings,
) -> (DenseRetriever, Vec<DenseProgress>) {
    let mut reports = Vec::new();
    let retriever = DenseRetriever::build(
        index.clone(),
        embedder.clone(),
        cache_dir,
        settings,
        &mut |p| reports.push(p),
    )
    .await
    .unwrap();
    (retriever, reports)
}

fn hnsw_building_reason(reports: &[DenseProgress]) -> Option<&str> {
    reports.iter().find_map(|p| match p {
        DenseProgress::Hnsw(HnswProgress::Building { reason, .. }) => Some(reason.as_str()),
        _ => None,
    })
}

fn hnsw_reused(reports: &[DenseProgress]) -> bool {
    reports
        .iter()
        .any(|p| matches!(p, DenseProgress::Hnsw(HnswProgress::Reused { .. })))
}

const ALWAYS_HNSW: DenseSettings = DenseSettings {
    ann: AnnMode::Hnsw,
    ann_threshold: ANN_THRESHOLD,
    connectivity: 16,
    ef_construction: 128,
    ef_search: 64,
};

#[tokio::test]
async fn the_hnsw_top_10_recalls_the_exact_top_10() {
    let dir = tempfile::tempdir().unwrap();
    let index = build_varied(dir.path(), 3000);
    assert!(index.n_chunks() > 4000, "{}", index.n_chunks());
    let embedder = hashed_embedder();
    let (retriever, _) =
        dense_with(&index, &embedder, &dir.path().join("dense"), &ALWAYS_HNSW).await;
    assert_eq!(retriever.hnsw().unwrap().n_rows() as u64, index.n_chunks());

    // Queries are new texts of 3 to 9 words of the same vocabulary.
    let mut state = 7u64;
    let (mut found, mut wanted, mut identical) = (0usize, 0usize, 0usize);
    let n_queries = 200;
    for q in 0..n_queries {
        let words: Vec<String> = (0..3 + q % 7)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                format!("w{}", (state >> 33) % 400)
            })
            .collect();
        let query = hashed_words(&words.join(" "), HNSW_DIM);
        let exact = retriever.nearest_exact(&query, 10).unwrap();
        let approximate = retriever.nearest(&query, 10).unwrap();
        assert_eq!(approximate.len(), 10);
        // A chunk tied with the exact 10th counts as found: ties may be broken among chunks
        // the graph did not propose.
        let bar = exact[9].score;
        let exact_ids = ids(&index, &exact);
        found += approximate
            .iter()
            .zip(ids(&index, &approximate))
            .filter(|(hit, id)| exact_ids.contains(id) || hit.score >= bar)
            .count();
        wanted += 10;
        identical += usize::from(approximate == exact);
        // The scores are the exact cosines, in the exact ranking's order.
        for hit in &approximate {
            let row = index
                .chunk_positions()
                .iter()
                .position(|p| p.doc_ord == hit.doc_ord && p.chunk_n == hit.chunk_n)
                .unwrap();
            let text = index
                .chunk_text(&index.chunk_positions()[row].hit(0.0))
                .unwrap();
            let reference: f32 = hashed_words(&text, HNSW_DIM)
                .iter()
                .zip(&query)
                .map(|(a, b)| a * b)
                .sum();
            assert!((hit.score - reference).abs() < 1e-5);
        }
    }
    let recall = found as f64 / wanted as f64;
    assert!(recall >= 0.95, "recall@10 {recall}");
    assert!(
        identical * 10 >= n_queries * 8,
        "{identical} of {n_queries} identical"
    );
}

#[tokio::test]
async fn the_threshold_switches_between_exact_and_hnsw() {
    let dir = tempfile::tempdir().unwrap();
    let index = build(dir.path(), 300, false);
    let n_chunks = index.n_chunks();
    let fake = fake("bow-16", None);
    let cache = dir.path().join("dense");
    let cases = [
        (AnnMode::Auto, n_chunks + 1, false),
        (AnnMode::Auto, n_chunks, true),
        (AnnMode::Exact, 1, false),
        (AnnMode::Hnsw, u64::MAX, true),
    ];
    for (ann, ann_threshold, uses_hnsw) in cases {
        let settings = DenseSettings {
            ann,
            ann_threshold,
            ..DenseSettings::default()
        };
        let (retriever, reports) = dense(&index, &fake, &cache, &settings).await;
        assert_eq!(
            retriever.hnsw().is_some(),
            uses_hnsw,
            "{ann:?} from {ann_threshold} with {n_chunks} chunks"
        );
        assert_eq!(
            reports.iter().any(|p| matches!(p, DenseProgress::Hnsw(_))),
            uses_hnsw
        );
    }
    // By default a small index is searched exactly, with no graph file written.
    let other = dir.path().join("dense-default");
    let (retriever, _) = dense(&index, &fake, &other, &DenseSettings::default()).await;
    assert!(retriever.hnsw().is_none());
    assert!(!other.join(HNSW_FILE).exists());
    assert!(n_chunks < ANN_THRESHOLD);
}

#[tokio::test]
async fn the_stored_graph_is_reused_rebuilt_on_new_parameters_and_when_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let index = build_varied(dir.path(), 800);
    let embedder = hashed_embedder();
    let cache = dir.path().join("dense");
    let (first, reports) = dense_with(&index, &embedder, &cache, &ALWAYS_HNSW).await;
    assert_eq!(hnsw_building_reason(&reports), Some("no stored HNSW graph"));
    assert!(matches!(
        reports.last(),
        Some(DenseProgress::Hnsw(HnswProgress::Inserted { done, total })) if done == total
    ));
    let graph = std::fs::read(cache.join(HNSW_FILE)).unwrap();
    assert!(cache.join(HNSW_META_FILE).exists());
    assert!(!cache.join(format!("{HNSW_FILE}.tmp")).exists());
    let query = hashed_words("w1 w2 w3 w4", HNSW_DIM);
    let expected = first.nearest(&query, 10).unwrap();

    // Same parameters: reused; another ef_search is a search setting, also reused.
    let wider = DenseSettings {
        ef_search: 200,
        ..ALWAYS_HNSW
    };
    for settings in [ALWAYS_HNSW, wider] {
        let (again, reports) = dense_with(&index, &embedder, &cache, &settings).await;
        assert!(hnsw_reused(&reports), "{reports:?}");
        assert_eq!(hnsw_building_reason(&reports), None);
        assert_eq!(again.nearest(&query, 10).unwrap().len(), 10);
    }

    // Another connectivity: rebuilt, and the reason names it.
    let sparser = DenseSettings {
        connectivity: 8,
        ..ALWAYS_HNSW
    };
    let (_, reports) = dense_with(&index, &embedder, &cache, &sparser).await;
    let reason = hnsw_building_reason(&reports).expect("rebuilt");
    assert!(reason.contains("connectivity 16 → 8"), "{reason}");

    // Back to the first parameters: rebuilt, byte for byte the first file (deterministic).
    let (_, reports) = dense_with(&index, &embedder, &cache, &ALWAYS_HNSW).await;
    assert!(hnsw_building_reason(&reports).is_some());
    assert_eq!(std::fs::read(cache.join(HNSW_FILE)).unwrap(), graph);

    // A file cut short is noticed and rebuilt, and searches as before.
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(cache.join(HNSW_FILE))
        .unwrap();
    file.set_len(graph.len() as u64 / 2).unwrap();
    drop(file);
    let (rebuilt, reports) = dense_with(&index, &embedder, &cache, &ALWAYS_HNSW).await;
    let reason = hnsw_building_reason(&reports).expect("rebuilt");
    assert!(reason.contains("bytes"), "{reason}");
    assert_eq!(std::fs::read(cache.join(HNSW_FILE)).unwrap(), graph);
    assert_eq!(rebuilt.nearest(&query, 10).unwrap(), expected);

    // A graph without its hnsw.json (a build killed before the end) is rebuilt.
    std::fs::remove_file(cache.join(HNSW_META_FILE)).unwrap();
    let (_, reports) = dense_with(&index, &embedder, &cache, &ALWAYS_HNSW).await;
    assert_eq!(hnsw_building_reason(&reports), Some("no stored HNSW graph"));

    // New embeddings (another index): the graph is rebuilt too.
    let index = build_varied(dir.path(), 801);
    let (_, reports) = dense_with(&index, &embedder, &cache, &ALWAYS_HNSW).await;
    let reason = hnsw_building_reason(&reports).expect("rebuilt");
    assert!(reason.contains("embeddings differ"), "{reason}");
}

#[tokio::test]
async fn hnsw_settings_out_of_range_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let index = build(dir.path(), 5, false);
    let fake = fake("bow-16", None);
    let settings = DenseSettings {
        connectivity: 1,
        ..ALWAYS_HNSW
    };
    let error = DenseRetriever::build(
        index.clone(),
        fake.embedder.clone(),
        &dir.path().join("dense"),
        &settings,
        &mut |_| {},
    )
    .await
    .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("connectivity must be at least 2"),
        "{error}"
    );
}
