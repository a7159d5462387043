//! Dense retrieval: chunk embeddings stored beside the index, exact or HNSW-approximate cosine search.
//!
//! The embeddings of an index's chunks live in a cache directory (by default
//! `<index>/dense/<backend>-<model>/`) as two files:
//!
//! - `embeddings.f32`: `n_chunks × dim` little-endian `f32`, row-major, L2-normalised, one row
//!   per chunk in [`Bm25Index::chunk_positions`] order (document, then chunk number), so a row
//!   names the same chunk in every build of the same corpus with the same chunking;
//! - `meta.json`: the format version, embedding backend and model, `dim`, `n_chunks`, and what
//!   the rows were computed from (the index's corpus hash, id and text fields, chunking and
//!   counts).
//!
//! `meta.json` is removed before a rebuild starts and written (tmp + rename) only after
//! `embeddings.f32` has been written, synced and renamed into place, so an interrupted build
//! never leaves a pair that is later taken as complete. A stored pair is reused only when
//! `meta.json` matches the index and the embedder and `embeddings.f32` has exactly the size it
//! announces; anything else is rebuilt, and the callback is told why.
//!
//! Embedding a corpus is the slow part of dense retrieval (minutes for ten thousand chunks
//! on a laptop, hours at corpus scale), and every run directory has an index of its own. So
//! [`DenseRetriever::build_shared`] also keeps the pair in a store shared by run directories
//! (`<store>/<backend>-<model>/<hash of the index identity>/`, the asset store's `embeddings/`
//! in a run): a run that finds no pair of its own takes the store's when it matches (linked
//! where the filesystem allows, otherwise copied, checked as its own would be), and a run that
//! embedded puts its pair there for the next one. A run directory always holds its own pair,
//! so it stays whole when the store is deleted.
//!
//! The rows are memory-mapped, never read into the heap. Search is exact (every row scored)
//! unless [`DenseSettings`] choose the HNSW graph of [`crate::ann`] (`hnsw.usearch`, stored in
//! the same directory): then the graph proposes `max(k, ef_search)` candidate rows, and these
//! are scored exactly from `embeddings.f32` and ranked in the same total order as an exact
//! search.

use std::cmp::Ordering;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use hierarag_index::{Bm25Index, ChunkPosition, Hit};
use hierarag_llm::{BoxFuture, Embedder};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::ann::{HnswIndex, HnswProgress, HnswSettings};
use crate::error::RagError;
use crate::retrieve::{RetrievedChunk, Retriever, RetrieverKind, retrieved_chunk};
use crate::rows::EmbeddingRows;

/// The embeddings file of a cache directory.
pub const EMBEDDINGS_FILE: &str = "embeddings.f32";
/// The description of a cache directory's embeddings file.
pub const META_FILE: &str = "meta.json";

const FORMAT_VERSION: u32 = 1;
const LAYOUT: &str = "f32 little-endian, row-major, one L2-normalised row per chunk, rows in \
(document corpus order, chunk number) order";
/// Chunks whose texts are read and embedded together (one progress report each); the embedder
/// splits them further into its own batches and runs those concurrently, each distinct text
/// once.
pub const CHUNKS_PER_STEP: usize = 512;
/// Rows scored by one parallel task in a search.
const ROWS_PER_TASK: usize = 1024;

/// Which search a [`DenseRetriever`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnnMode {
    /// HNSW from `ann_threshold` chunks on, exact below.
    #[default]
    Auto,
    /// Every chunk scored, whatever the size.
    Exact,
    /// The HNSW graph, whatever the size.
    Hnsw,
}

/// How dense retrieval searches (the `[dense]` table of a run config).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DenseSettings {
    /// `auto`, `exact` or `hnsw`.
    pub ann: AnnMode,
    /// With `ann = "auto"`, the number of chunks from which the HNSW graph is used.
    pub ann_threshold: u64,
    /// HNSW links per node and layer (M).
    pub connectivity: usize,
    /// HNSW candidates kept while building (efConstruction).
    pub ef_construction: usize,
    /// HNSW candidates kept while searching (efSearch), all rescored exactly.
    pub ef_search: usize,
}

/// The default `ann_threshold`: a million chunks (1.5 GB of 384-dimension rows), where an exact
/// search starts to take tens of milliseconds a question.
pub const ANN_THRESHOLD: u64 = 1_000_000;

impl Default for DenseSettings {
    fn default() -> Self {
        let hnsw = HnswSettings::default();
        DenseSettings {
            ann: AnnMode::Auto,
            ann_threshold: ANN_THRESHOLD,
            connectivity: hnsw.connectivity,
            ef_construction: hnsw.ef_construction,
            ef_search: hnsw.ef_search,
        }
    }
}

impl DenseSettings {
    /// Whether an index of `n_chunks` chunks is searched through the HNSW graph.
    pub fn uses_hnsw(&self, n_chunks: u64) -> bool {
        match self.ann {
            AnnMode::Auto => n_chunks >= self.ann_threshold,
            AnnMode::Exact => false,
            AnnMode::Hnsw => true,
        }
    }

    /// The graph's parameters.
    pub fn hnsw(&self) -> HnswSettings {
        HnswSettings {
            connectivity: self.connectivity,
            ef_construction: self.ef_construction,
            ef_search: self.ef_search,
        }
    }

    /// Checks the graph's parameters.
    pub fn check(&self) -> Result<(), String> {
        self.hnsw().check()
    }
}

/// What [`DenseRetriever::build`] reports.
#[derive(Debug, Clone, PartialEq)]
pub enum DenseProgress {
    /// The stored embeddings in `dir` match the index and the model: nothing to embed.
    Reused { dir: PathBuf, n_chunks: u64 },
    /// No stored embeddings in `dir`, but the shared store's matching ones in `from` were
    /// placed there (`copied`: as a copy, the filesystem not allowing a link).
    Shared {
        dir: PathBuf,
        from: PathBuf,
        copied: bool,
        n_chunks: u64,
    },
    /// The embeddings just computed were placed in the shared store at `dir` for the next run
    /// directory, or (`error`) could not be, which costs that run the embedding only.
    Published { dir: PathBuf, error: Option<String> },
    /// Every chunk is embedded into `dir`, because of `reason` (no stored embeddings, another
    /// model, another index, a truncated file, …).
    Building {
        dir: PathBuf,
        reason: String,
        n_chunks: u64,
    },
    /// `done` of `total` chunks embedded.
    Embedded { done: u64, total: u64 },
    /// The HNSW graph over the embeddings is reused or built.
    Hnsw(HnswProgress),
}

/// `meta.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct DenseMeta {
    format_version: u32,
    backend: String,
    model: String,
    dim: usize,
    n_chunks: u64,
    /// What the rows were computed from ([`index_identity`]).
    index: serde_json::Value,
    layout: String,
}

/// Cosine search over embeddings of every chunk of an index: exact, or through an HNSW graph.
pub struct DenseRetriever {
    /// Fetches the texts of the top chunks only; shared with a [`crate::Bm25Retriever`].
    index: Arc<Bm25Index>,
    embedder: Arc<Embedder>,
    /// Row `r` is the chunk at `positions[r]`.
    positions: Vec<ChunkPosition>,
    /// `positions.len() × dim`, row-major, L2-normalised rows.
    rows: EmbeddingRows,
    /// The graph proposing candidates, when the settings chose it.
    hnsw: Option<HnswIndex>,
    dir: PathBuf,
}

impl std::fmt::Debug for DenseRetriever {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DenseRetriever")
            .field("index", &self.index.dir())
            .field("model", &self.embedder.model())
            .field("chunks", &self.positions.len())
            .field("dim", &self.rows.dim())
            .field("hnsw", &self.hnsw)
            .field("dir", &self.dir)
            .finish()
    }
}

impl DenseRetriever {
    /// `<index>/dense/<backend>-<model>`, with every character other than ASCII letters,
    /// digits, `.`, `_` and `-` replaced by `-`.
    pub fn default_cache_dir(index: &Bm25Index, embedder: &Embedder) -> PathBuf {
        index
            .dir()
            .join("dense")
            .join(slug(embedder.backend(), embedder.model()))
    }

    /// Loads the embeddings of `index`'s chunks from `cache_dir`, or (when they are missing or
    /// do not match) embeds every chunk with `embedder` and stores them there; then, when
    /// `settings` choose the HNSW graph for this many chunks, opens or builds it there too.
    pub async fn build(
        index: Arc<Bm25Index>,
        embedder: Arc<Embedder>,
        cache_dir: &Path,
        settings: &DenseSettings,
        progress: &mut (dyn FnMut(DenseProgress) + Send),
    ) -> Result<DenseRetriever, RagError> {
        Self::build_shared(index, embedder, cache_dir, None, settings, progress).await
    }

    /// As [`DenseRetriever::build`], and with `shared`, a store of embeddings shared by run
    /// directories: when `cache_dir` has no matching embeddings, the store's are placed there
    /// if they match, and embeddings computed here are placed in the store (see the module
    /// documentation).
    pub async fn build_shared(
        index: Arc<Bm25Index>,
        embedder: Arc<Embedder>,
        cache_dir: &Path,
        shared: Option<&Path>,
        settings: &DenseSettings,
        progress: &mut (dyn FnMut(DenseProgress) + Send),
    ) -> Result<DenseRetriever, RagError> {
        settings.check().map_err(RagError::InvalidSettings)?;
        let positions = index.chunk_positions();
        let mut meta = DenseMeta {
            format_version: FORMAT_VERSION,
            backend: embedder.backend().to_string(),
            model: embedder.model().to_string(),
            dim: 0,
            n_chunks: positions.len() as u64,
            index: index_identity(&index),
            layout: LAYOUT.to_string(),
        };
        match load_stored(cache_dir, &meta) {
            Ok(dim) => {
                meta.dim = dim;
                progress(DenseProgress::Reused {
                    dir: cache_dir.to_path_buf(),
                    n_chunks: meta.n_chunks,
                });
            }
            Err(reason) => {
                let shared = shared.map(|store| shared_dir(store, &meta));
                match shared
                    .as_deref()
                    .map(|from| take_shared(from, cache_dir, &meta))
                {
                    Some(Ok((dim, copied))) => {
                        meta.dim = dim;
                        progress(DenseProgress::Shared {
                            dir: cache_dir.to_path_buf(),
                            from: shared.clone().expect("matched"),
                            copied,
                            n_chunks: meta.n_chunks,
                        });
                    }
                    _ => {
                        progress(DenseProgress::Building {
                            dir: cache_dir.to_path_buf(),
                            reason,
                            n_chunks: meta.n_chunks,
                        });
                        meta.dim = embed_and_store(
                            &index, &embedder, &positions, cache_dir, &meta, progress,
                        )
                        .await?;
                        if let Some(dir) = shared {
                            let error = place_pair(cache_dir, &dir).err().map(|e| e.to_string());
                            progress(DenseProgress::Published { dir, error });
                        }
                    }
                }
            }
        }
        let rows =
            EmbeddingRows::open(&cache_dir.join(EMBEDDINGS_FILE), positions.len(), meta.dim)?;
        let hnsw = if settings.uses_hnsw(meta.n_chunks) && !positions.is_empty() {
            let identity = serde_json::to_value(&meta).expect("meta serialises");
            Some(HnswIndex::open_or_build(
                &rows,
                &identity,
                &settings.hnsw(),
                cache_dir,
                &mut |p| progress(DenseProgress::Hnsw(p)),
            )?)
        } else {
            None
        };
        Ok(DenseRetriever {
            index,
            embedder,
            positions,
            rows,
            hnsw,
            dir: cache_dir.to_path_buf(),
        })
    }

    pub fn index(&self) -> &Bm25Index {
        &self.index
    }

    pub fn shared_index(&self) -> &Arc<Bm25Index> {
        &self.index
    }

    pub fn embedder(&self) -> &Embedder {
        &self.embedder
    }

    /// Where the embeddings are stored.
    pub fn cache_dir(&self) -> &Path {
        &self.dir
    }

    pub fn n_chunks(&self) -> usize {
        self.positions.len()
    }

    /// Dimensions of the embeddings (0 for an index without chunks).
    pub fn dim(&self) -> usize {
        self.rows.dim()
    }

    /// The HNSW graph searches go through, if the settings chose one.
    pub fn hnsw(&self) -> Option<&HnswIndex> {
        self.hnsw.as_ref()
    }

    /// The question's embedding with the chunks' embedder, L2-normalised.
    pub async fn embed_query(&self, query: &str) -> Result<Vec<f32>, RagError> {
        let mut vectors = self
            .embedder
            .embed(&[query.to_string()])
            .await
            .map_err(|e| RagError::Embed(e.to_string()))?;
        let mut vector = vectors
            .pop()
            .filter(|_| vectors.is_empty())
            .ok_or_else(|| RagError::Embed("the embedder did not return one vector".into()))?;
        normalize(&mut vector);
        Ok(vector)
    }

    /// The `k` chunks nearest to a normalised query vector, as hits scored by cosine, best
    /// first: score descending, then document id descending, then chunk number ascending (the
    /// order of [`Bm25Index::search`]). Exact, or among the HNSW graph's candidates.
    pub fn nearest(&self, query: &[f32], k: usize) -> Result<Vec<Hit>, RagError> {
        match &self.hnsw {
            None => self.nearest_exact(query, k),
            Some(hnsw) => {
                self.check_query(query)?;
                if k == 0 || self.positions.is_empty() {
                    return Ok(Vec::new());
                }
                let mut rows = hnsw.candidates(query, k)?;
                if let Some(row) = rows.iter().find(|&&row| row >= self.positions.len()) {
                    return Err(RagError::Ann {
                        path: hnsw.path().to_path_buf(),
                        message: format!(
                            "proposed row {row} of {} rows (rebuild it by deleting it)",
                            self.positions.len()
                        ),
                    });
                }
                rows.sort_unstable();
                rows.dedup();
                let scored = rows
                    .into_iter()
                    .map(|row| (dot(query, self.rows.row(row)), row))
                    .collect();
                Ok(self.ranked(scored, k))
            }
        }
    }

    /// The `k` chunks nearest to a normalised query vector among all chunks, in the order of
    /// [`DenseRetriever::nearest`].
    pub fn nearest_exact(&self, query: &[f32], k: usize) -> Result<Vec<Hit>, RagError> {
        self.check_query(query)?;
        if k == 0 || self.positions.is_empty() {
            return Ok(Vec::new());
        }
        let by_rank = |a: &(f32, usize), b: &(f32, usize)| self.compare(*a, *b);
        let dim = self.rows.dim();
        // Each task keeps its own best k, so memory is k per task, not one score per chunk.
        let best: Vec<(f32, usize)> = self
            .rows
            .values()
            .par_chunks(ROWS_PER_TASK * dim)
            .enumerate()
            .flat_map_iter(|(task, block)| {
                let first_row = task * ROWS_PER_TASK;
                let mut scored: Vec<(f32, usize)> = block
                    .chunks_exact(dim)
                    .enumerate()
                    .map(|(i, row)| (dot(query, row), first_row + i))
                    .collect();
                keep_best(&mut scored, k, &by_rank);
                scored
            })
            .collect();
        Ok(self.ranked(best, k))
    }

    /// The first `k` of scored rows in the ranking order, as hits.
    fn ranked(&self, mut scored: Vec<(f32, usize)>, k: usize) -> Vec<Hit> {
        let by_rank = |a: &(f32, usize), b: &(f32, usize)| self.compare(*a, *b);
        keep_best(&mut scored, k, &by_rank);
        scored.sort_unstable_by(by_rank);
        scored
            .into_iter()
            .map(|(score, row)| self.positions[row].hit(score))
            .collect()
    }

    /// A query vector must have the rows' dimensions (any vector will do without rows).
    fn check_query(&self, query: &[f32]) -> Result<(), RagError> {
        if !self.positions.is_empty() && query.len() != self.rows.dim() {
            return Err(RagError::Embed(format!(
                "the question's vector has {} dimensions, the chunks' have {}",
                query.len(),
                self.rows.dim()
            )));
        }
        Ok(())
    }

    /// The top `k` chunks for `query`, with their texts.
    pub async fn search(&self, query: &str, k: usize) -> Result<Vec<RetrievedChunk>, RagError> {
        if k == 0 {
            return Ok(Vec::new());
        }
        let vector = self.embed_query(query).await?;
        self.nearest(&vector, k)?
            .iter()
            .map(|hit| retrieved_chunk(&self.index, hit, f64::from(hit.score)))
            .collect()
    }

    /// The ranking order of rows: a total order, so selection and sorting are deterministic.
    fn compare(&self, (a_score, a_row): (f32, usize), (b_score, b_row): (f32, usize)) -> Ordering {
        let (a, b) = (&self.positions[a_row], &self.positions[b_row]);
        b_score
            .total_cmp(&a_score)
            .then_with(|| {
                if a.doc_ord == b.doc_ord {
                    Ordering::Equal
                } else {
                    self.index
                        .doc_id_at(b.doc_ord)
                        .cmp(self.index.doc_id_at(a.doc_ord))
                }
            })
            .then_with(|| a.chunk_n.cmp(&b.chunk_n))
    }
}

impl Retriever for DenseRetriever {
    fn name(&self) -> &str {
        RetrieverKind::Dense.as_str()
    }

    fn retrieve<'a>(
        &'a self,
        query: &'a str,
        k: usize,
    ) -> BoxFuture<'a, Result<Vec<RetrievedChunk>, RagError>> {
        Box::pin(self.search(query, k))
    }
}

/// Keeps the `k` first of `items` under `order` (a total order), in no particular order.
fn keep_best<T>(items: &mut Vec<T>, k: usize, order: &impl Fn(&T, &T) -> Ordering) {
    if items.len() > k {
        items.select_nth_unstable_by(k - 1, order);
        items.truncate(k);
    }
}

/// A dot product in eight lanes, which the compiler vectorises; the same inputs always give the
/// same bits.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (a_blocks, b_blocks) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = a_blocks
        .remainder()
        .iter()
        .zip(b_blocks.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a_blocks.zip(b_blocks) {
        for lane in 0..8 {
            lanes[lane] += x[lane] * y[lane];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// Scales `vector` to unit length (a zero vector stays zero).
fn normalize(vector: &mut [f32]) {
    let norm = vector
        .iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt();
    if norm > 0.0 {
        for x in vector.iter_mut() {
            *x = (f64::from(*x) / norm) as f32;
        }
    }
}

/// What the rows of an index's embeddings depend on: a rebuilt index with the same identity has
/// the same chunks in the same order.
fn index_identity(index: &Bm25Index) -> serde_json::Value {
    let manifest = index.manifest();
    serde_json::json!({
        "corpus_sha256": manifest.corpus.content_sha256,
        "id_field": manifest.corpus.spec.id_field,
        "text_field": manifest.corpus.spec.text_field,
        "chunking": manifest.chunking,
        "chunk_unit": manifest.chunk_unit,
        "documents": manifest.counts.documents,
        "chunks": manifest.counts.chunks,
    })
}

/// Where the shared store `store` keeps the embeddings `meta` describes:
/// `<backend>-<model>/<first 16 hex digits of the SHA-256 of the index identity>`.
fn shared_dir(store: &Path, meta: &DenseMeta) -> PathBuf {
    let identity = serde_json::to_vec(&meta.index).expect("the identity serialises");
    let hash = hex::encode(&Sha256::digest(&identity)[..8]);
    store.join(slug(&meta.backend, &meta.model)).join(hash)
}

/// `<backend>-<model>` with every character other than ASCII letters, digits, `.`, `_` and
/// `-` replaced by `-`: a directory name.
fn slug(backend: &str, model: &str) -> String {
    format!("{backend}-{model}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Places the shared store's pair in `from` into `dir` when it matches `wanted`, checked there
/// as the run's own would be; the dimensions, and whether the filesystem made it copy.
fn take_shared(from: &Path, dir: &Path, wanted: &DenseMeta) -> Result<(usize, bool), String> {
    load_stored(from, wanted)?;
    let copied = place_pair(from, dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok((load_stored(dir, wanted)?, copied))
}

/// Places the pair in `from` into `to`: `meta.json` removed first and placed last, as a build
/// writes them, so that a pair cut off half-way is never taken as complete. Whether it copied.
fn place_pair(from: &Path, to: &Path) -> std::io::Result<bool> {
    std::fs::create_dir_all(to)?;
    let meta = to.join(META_FILE);
    match std::fs::remove_file(&meta) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let copied = hierarag_fs::link_or_copy(&from.join(EMBEDDINGS_FILE), &to.join(EMBEDDINGS_FILE))?;
    hierarag_fs::link_or_copy(&from.join(META_FILE), &meta)?;
    Ok(copied)
}

/// The dimensions of the stored embeddings when they match `wanted`; otherwise why not.
fn load_stored(dir: &Path, wanted: &DenseMeta) -> Result<usize, String> {
    let meta_path = dir.join(META_FILE);
    let text = match std::fs::read_to_string(&meta_path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err("no stored embeddings".into());
        }
        Err(e) => return Err(format!("{}: {e}", meta_path.display())),
    };
    let stored: DenseMeta = serde_json::from_str(&text)
        .map_err(|e| format!("{}: unreadable: {e}", meta_path.display()))?;
    if stored.format_version != wanted.format_version || stored.layout != wanted.layout {
        return Err(format!(
            "stored in format {}, this version writes format {}",
            stored.format_version, wanted.format_version
        ));
    }
    if (&stored.backend, &stored.model) != (&wanted.backend, &wanted.model) {
        return Err(format!(
            "stored embeddings are from {} model {}, not {} model {}",
            stored.backend, stored.model, wanted.backend, wanted.model
        ));
    }
    if stored.index != wanted.index {
        return Err(format!(
            "stored embeddings are of another index ({}), not this one ({})",
            stored.index, wanted.index
        ));
    }
    if stored.n_chunks != wanted.n_chunks {
        return Err(format!(
            "stored embeddings have {} rows, the index has {} chunks",
            stored.n_chunks, wanted.n_chunks
        ));
    }
    if stored.dim == 0 && stored.n_chunks > 0 {
        return Err(format!("{}: dim is 0", meta_path.display()));
    }
    let vectors_path = dir.join(EMBEDDINGS_FILE);
    let n_values = (stored.n_chunks as usize)
        .checked_mul(stored.dim)
        .ok_or_else(|| format!("{}: n_chunks × dim overflows", meta_path.display()))?;
    let expected_bytes = n_values as u64 * 4;
    let found_bytes = std::fs::metadata(&vectors_path)
        .map_err(|e| format!("{}: {e}", vectors_path.display()))?
        .len();
    if found_bytes != expected_bytes {
        return Err(format!(
            "{} has {found_bytes} bytes, {expected_bytes} expected ({} rows × {} dimensions)",
            vectors_path.display(),
            stored.n_chunks,
            stored.dim
        ));
    }
    Ok(stored.dim)
}

/// Embeds every chunk in `positions` order, writing `embeddings.f32` then `meta.json`;
/// returns the dimensions.
async fn embed_and_store(
    index: &Bm25Index,
    embedder: &Embedder,
    positions: &[ChunkPosition],
    dir: &Path,
    meta: &DenseMeta,
    progress: &mut (dyn FnMut(DenseProgress) + Send),
) -> Result<usize, RagError> {
    let io_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| RagError::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    // First of all: no meta.json, so that nothing written below counts as complete until the
    // end.
    let meta_path = dir.join(META_FILE);
    match std::fs::remove_file(&meta_path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io_err(&meta_path)(e)),
        _ => {}
    }
    let vectors_path = dir.join(EMBEDDINGS_FILE);
    let mut file =
        hierarag_fs::AtomicFile::create_binary(&vectors_path).map_err(io_err(&vectors_path))?;
    let total = positions.len() as u64;
    let mut dim = 0usize;
    let mut done = 0u64;
    for step in positions.chunks(CHUNKS_PER_STEP) {
        let texts = step
            .iter()
            .map(|p| index.chunk_text(&p.hit(0.0)))
            .collect::<Result<Vec<String>, _>>()?;
        let step_error = |message: String| RagError::EmbedChunks {
            first: index.chunk_id(&step[0].hit(0.0)),
            last: index.chunk_id(&step[step.len() - 1].hit(0.0)),
            message,
        };
        let embedded = embedder
            .embed(&texts)
            .await
            .map_err(|e| step_error(e.to_string()))?;
        if embedded.len() != texts.len() {
            return Err(step_error(format!(
                "{} vectors for {} texts",
                embedded.len(),
                texts.len()
            )));
        }
        let mut bytes = Vec::with_capacity(embedded.len() * dim.max(1) * 4);
        for mut vector in embedded {
            if dim == 0 {
                dim = vector.len();
                if dim == 0 {
                    return Err(step_error("the embedder returned empty vectors".into()));
                }
            }
            if vector.len() != dim {
                return Err(step_error(format!(
                    "a vector of {} dimensions among vectors of {dim}",
                    vector.len()
                )));
            }
            normalize(&mut vector);
            for x in &vector {
                bytes.extend_from_slice(&x.to_le_bytes());
            }
        }
        file.write_all(&bytes).map_err(io_err(&vectors_path))?;
        done += step.len() as u64;
        progress(DenseProgress::Embedded { done, total });
    }
    file.finish().map_err(io_err(&vectors_path))?;

    let meta = DenseMeta {
        dim,
        ..meta.clone()
    };
    let mut text = serde_json::to_string_pretty(&meta).expect("meta serialises");
    text.push('\n');
    hierarag_fs::write_atomic(&meta_path, text.as_bytes()).map_err(io_err(&meta_path))?;
    Ok(dim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_equals_the_plain_sum_on_exact_values() {
        let a: Vec<f32> = (0..19).map(|i| i as f32).collect();
        let b: Vec<f32> = (0..19).map(|i| (i % 3) as f32).collect();
        let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert_eq!(dot(&a, &b), plain);
        assert_eq!(dot(&[], &[]), 0.0);
    }

    #[test]
    fn normalize_gives_unit_length_and_leaves_zero_alone() {
        let mut v = vec![3.0, 4.0];
        normalize(&mut v);
        assert_eq!(v, [0.6, 0.8]);
        let mut zero = vec![0.0; 3];
        normalize(&mut zero);
        assert_eq!(zero, [0.0; 3]);
    }

    #[test]
    fn keep_best_keeps_the_first_k_under_the_order() {
        let mut items = vec![5, 1, 4, 2, 3];
        keep_best(&mut items, 2, &|a: &i32, b: &i32| a.cmp(b));
        items.sort();
        assert_eq!(items, [1, 2]);
        let mut few = vec![2, 1];
        keep_best(&mut few, 5, &|a: &i32, b: &i32| a.cmp(b));
        assert_eq!(few.len(), 2);
    }
}
