//! Approximate nearest neighbours: an HNSW graph (usearch) over stored embeddings, searched memory-mapped.
//!
//! The graph lives beside `embeddings.f32` as two files:
//!
//! - `hnsw.usearch`: usearch's single-file index (graph and `bf16` copies of the rows, the row
//!   number as each vector's key), opened with `view`, so searching maps it instead of reading
//!   it into memory;
//! - `hnsw.json`: the parameters it was built with (`connectivity` M, `ef_construction`), what
//!   it was built from (the embeddings' `meta.json`, rows, dimensions), the usearch version and
//!   the index file's size.
//!
//! A build removes `hnsw.json` first, saves the graph to `hnsw.usearch.tmp`, syncs it, renames
//! it into place and only then writes `hnsw.json` (tmp + rename), so a crash never leaves a
//! graph that is later taken as complete; a stored graph is reused only when `hnsw.json`
//! matches and the file has the size it records.
//!
//! Determinism: rows are inserted one at a time in row order from one thread, so usearch draws
//! each node's level from the generator of its first thread slot (a splitmix64 with a fixed seed;
//! usearch takes no seed of its own). Distances come from NumKong's SIMD kernels, chosen at run
//! time for the CPU (AVX-512 with bf16 on Zen 4, AVX2 elsewhere): on one machine the same
//! embeddings and parameters give the same file, byte for byte; a CPU with other kernels may
//! round a few distances differently and so link a few nodes differently. The search returns
//! candidates only; their scores and order are the caller's exact cosines from `embeddings.f32`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::RagError;
use crate::rows::EmbeddingRows;

/// The graph file of a cache directory.
pub const HNSW_FILE: &str = "hnsw.usearch";
/// The description of a cache directory's graph file.
pub const HNSW_META_FILE: &str = "hnsw.json";

const HNSW_FORMAT_VERSION: u32 = 1;
/// Rows inserted between two progress reports.
const ROWS_PER_REPORT: usize = 10_000;

/// The parameters of an HNSW graph and its search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HnswSettings {
    /// Links per node and layer (HNSW's M; the bottom layer keeps twice as many).
    pub connectivity: usize,
    /// Candidates kept while linking a new node (efConstruction).
    pub ef_construction: usize,
    /// Candidates kept while searching (efSearch); all of them, at least `k`, are rescored
    /// exactly. A search setting: changing it does not rebuild the graph.
    pub ef_search: usize,
}

impl Default for HnswSettings {
    fn default() -> Self {
        HnswSettings {
            connectivity: 16,
            ef_construction: 128,
            // recall@10 0.95 at 1 M MiniLM-shaped rows (docs/benchmarks.md); 1.6 ms a question.
            ef_search: 512,
        }
    }
}

impl HnswSettings {
    /// Checks the ranges usearch accepts.
    pub fn check(&self) -> Result<(), String> {
        if self.connectivity < 2 {
            return Err(format!(
                "connectivity must be at least 2, not {}",
                self.connectivity
            ));
        }
        if self.ef_construction == 0 || self.ef_search == 0 {
            return Err("ef_construction and ef_search must be at least 1".into());
        }
        Ok(())
    }
}

/// `hnsw.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct HnswMeta {
    format_version: u32,
    usearch_version: String,
    metric: String,
    quantization: String,
    connectivity: usize,
    ef_construction: usize,
    n_rows: u64,
    dim: usize,
    /// The `meta.json` of the embeddings the graph was built from.
    embeddings: serde_json::Value,
    /// The size of `hnsw.usearch` when it was written.
    file_bytes: u64,
}

/// What [`HnswIndex::open_or_build`] reports.
#[derive(Debug, Clone, PartialEq)]
pub enum HnswProgress {
    /// The stored graph matches: nothing to build.
    Reused { path: PathBuf },
    /// The graph is built into `path`, because of `reason`.
    Building {
        path: PathBuf,
        reason: String,
        n_rows: u64,
    },
    /// `done` of `total` rows inserted.
    Inserted { done: u64, total: u64 },
}

/// An HNSW graph over the rows of an embeddings file, memory-mapped.
pub struct HnswIndex {
    index: usearch::Index,
    path: PathBuf,
    ef_search: usize,
}

impl std::fmt::Debug for HnswIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HnswIndex")
            .field("path", &self.path)
            .field("rows", &self.index.size())
            .field("ef_search", &self.ef_search)
            .finish()
    }
}

impl HnswIndex {
    /// Opens the graph stored in `dir` when it was built from `rows` (described by the
    /// embeddings' `meta.json`, `embeddings_meta`) with `settings`; otherwise builds it
    /// there first.
    pub fn open_or_build(
        rows: &EmbeddingRows,
        embeddings_meta: &serde_json::Value,
        settings: &HnswSettings,
        dir: &Path,
        progress: &mut dyn FnMut(HnswProgress),
    ) -> Result<HnswIndex, RagError> {
        settings.check().map_err(RagError::InvalidSettings)?;
        let path = dir.join(HNSW_FILE);
        let meta_path = dir.join(HNSW_META_FILE);
        let mut wanted = HnswMeta {
            format_version: HNSW_FORMAT_VERSION,
            usearch_version: usearch::version().to_string(),
            metric: "ip".into(),
            quantization: "bf16".into(),
            connectivity: settings.connectivity,
            ef_construction: settings.ef_construction,
            n_rows: rows.n_rows() as u64,
            dim: rows.dim(),
            embeddings: embeddings_meta.clone(),
            file_bytes: 0,
        };
        match stored_matches(&path, &meta_path, &wanted) {
            Ok(()) => progress(HnswProgress::Reused { path: path.clone() }),
            Err(reason) => {
                progress(HnswProgress::Building {
                    path: path.clone(),
                    reason,
                    n_rows: wanted.n_rows,
                });
                wanted.file_bytes = build(rows, settings, &path, &meta_path, progress)?;
                let mut text = serde_json::to_string_pretty(&wanted).expect("meta serialises");
                text.push('\n');
                hierarag_fs::write_atomic(&meta_path, text.as_bytes())
                    .map_err(io_error(&meta_path))?;
            }
        }
        HnswIndex::view(&path, rows.dim(), settings.ef_search)
    }

    /// Maps a stored graph of vectors of `dim` dimensions.
    fn view(path: &Path, dim: usize, ef_search: usize) -> Result<HnswIndex, RagError> {
        let index = usearch::Index::new(&index_options(dim, &HnswSettings::default()))
            .map_err(usearch_error(path))?;
        index.view(&path_str(path)?).map_err(usearch_error(path))?;
        index.change_expansion_search(ef_search);
        if index.dimensions() != dim {
            return Err(RagError::Ann {
                path: path.to_path_buf(),
                message: format!(
                    "holds vectors of {} dimensions, the embeddings have {dim}",
                    index.dimensions()
                ),
            });
        }
        Ok(HnswIndex {
            index,
            path: path.to_path_buf(),
            ef_search,
        })
    }

    /// Rows of vectors near `query` (normalised): the `max(count, ef_search)` best the graph
    /// search found, in no particular order.
    pub fn candidates(&self, query: &[f32], count: usize) -> Result<Vec<usize>, RagError> {
        let wanted = count.max(self.ef_search);
        let matches = self
            .index
            .search(query, wanted)
            .map_err(usearch_error(&self.path))?;
        Ok(matches.keys.into_iter().map(|key| key as usize).collect())
    }

    /// Where the graph is stored.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Rows in the graph.
    pub fn n_rows(&self) -> usize {
        self.index.size()
    }
}

/// Why the stored graph cannot be used, if it cannot.
fn stored_matches(path: &Path, meta_path: &Path, wanted: &HnswMeta) -> Result<(), String> {
    let text = match std::fs::read_to_string(meta_path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err("no stored HNSW graph".into());
        }
        Err(e) => return Err(format!("{}: {e}", meta_path.display())),
    };
    let stored: HnswMeta = serde_json::from_str(&text)
        .map_err(|e| format!("{}: unreadable: {e}", meta_path.display()))?;
    let found_bytes = std::fs::metadata(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .len();
    if found_bytes != stored.file_bytes {
        return Err(format!(
            "{} has {found_bytes} bytes, {} expected",
            path.display(),
            stored.file_bytes
        ));
    }
    let stored = HnswMeta {
        file_bytes: 0,
        ..stored
    };
    if &stored != wanted {
        return Err(format!(
            "the stored graph was built with other parameters or embeddings ({}: {})",
            meta_path.display(),
            differences(&stored, wanted)
        ));
    }
    Ok(())
}

/// The fields of `hnsw.json` that differ, as `name: stored → wanted`.
fn differences(stored: &HnswMeta, wanted: &HnswMeta) -> String {
    let (stored, wanted) = (
        serde_json::to_value(stored).expect("meta serialises"),
        serde_json::to_value(wanted).expect("meta serialises"),
    );
    let (Some(stored), Some(wanted)) = (stored.as_object(), wanted.as_object()) else {
        return String::new();
    };
    wanted
        .iter()
        .filter(|(key, value)| stored.get(*key) != Some(value))
        .map(|(key, value)| {
            let was = stored.get(key).cloned().unwrap_or_default();
            match value {
                serde_json::Value::Object(_) => format!("{key} differ"),
                _ => format!("{key} {was} → {value}"),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Inserts every row in order, saves the graph to `<path>.tmp`, syncs and renames it; returns
/// the file's size.
fn build(
    rows: &EmbeddingRows,
    settings: &HnswSettings,
    path: &Path,
    meta_path: &Path,
    progress: &mut dyn FnMut(HnswProgress),
) -> Result<u64, RagError> {
    // First of all: no hnsw.json, so nothing below counts as complete until the end.
    match std::fs::remove_file(meta_path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(io_error(meta_path)(e));
        }
        _ => {}
    }
    let index =
        usearch::Index::new(&index_options(rows.dim(), settings)).map_err(usearch_error(path))?;
    // One thread slot: every node's level comes from the same generator, in row order.
    index
        .reserve_capacity_and_threads(rows.n_rows(), 1)
        .map_err(usearch_error(path))?;
    let total = rows.n_rows() as u64;
    for row in 0..rows.n_rows() {
        index
            .add(row as u64, rows.row(row))
            .map_err(usearch_error(path))?;
        if (row + 1) % ROWS_PER_REPORT == 0 || row + 1 == rows.n_rows() {
            progress(HnswProgress::Inserted {
                done: row as u64 + 1,
                total,
            });
        }
    }
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(".tmp");
    let tmp = path.with_file_name(tmp_name);
    index.save(&path_str(&tmp)?).map_err(usearch_error(&tmp))?;
    drop(index);
    let file = std::fs::File::open(&tmp).map_err(io_error(&tmp))?;
    file.sync_all().map_err(io_error(&tmp))?;
    let file_bytes = file.metadata().map_err(io_error(&tmp))?.len();
    std::fs::rename(&tmp, path).map_err(io_error(path))?;
    Ok(file_bytes)
}

fn index_options(dim: usize, settings: &HnswSettings) -> usearch::IndexOptions {
    usearch::IndexOptions {
        dimensions: dim,
        // Rows and queries are L2-normalised: the inner product is the cosine.
        metric: usearch::MetricKind::IP,
        // Half the bytes of f32 for the graph's own copy of the rows; the ranking is rescored
        // from the f32 rows.
        quantization: usearch::ScalarKind::BF16,
        connectivity: settings.connectivity,
        expansion_add: settings.ef_construction,
        expansion_search: settings.ef_search,
        multi: false,
    }
}

fn path_str(path: &Path) -> Result<String, RagError> {
    path.to_str()
        .map(str::to_owned)
        .ok_or_else(|| RagError::Ann {
            path: path.to_path_buf(),
            message: "usearch needs a UTF-8 path".into(),
        })
}

/// usearch's errors (C++ exceptions) as [`RagError::Ann`] naming the file.
fn usearch_error<E: std::fmt::Display>(path: &Path) -> impl Fn(E) -> RagError + '_ {
    move |e| RagError::Ann {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

fn io_error(path: &Path) -> impl Fn(std::io::Error) -> RagError + '_ {
    move |source| RagError::Io {
        path: path.to_path_buf(),
        source,
    }
}
