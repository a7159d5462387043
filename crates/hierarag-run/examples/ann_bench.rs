//! The Rust side of `bench/ann.sh` (docs/benchmarks.md, "Dense retrieval at scale"): embeds an
//! index's chunks with the embedded MiniLM exactly as dense retrieval does, embeds question
//! texts, and builds and searches the HNSW graph of `hierarag-rag` over a raw embeddings file.
//!
//! ```text
//! ann_bench embed-chunks INDEX_DIR CACHE_DIR
//!     every chunk of the index embedded into CACHE_DIR/embeddings.f32 (timed; JSON on stdout)
//! ann_bench embed-texts TEXTS_FILE OUT_F32
//!     one text a line, each embedded and L2-normalised, rows written to OUT_F32
//! ann_bench build VECTORS_F32 DIM GRAPH_DIR CONNECTIVITY EF_CONSTRUCTION
//!     the graph of the rows of VECTORS_F32 built into GRAPH_DIR (timed; JSON on stdout)
//! ann_bench search VECTORS_F32 DIM GRAPH_DIR CONNECTIVITY EF_CONSTRUCTION EF_SEARCH QUERIES_F32 K OUT_IDS
//!     the stored graph mapped, each query's K best rows (graph candidates rescored exactly,
//!     score descending, row ascending) written to OUT_IDS as u32 little-endian, one query
//!     at a time on one thread, twice: the first pass (cold: it maps the pages it touches) and
//!     the second (warm) timed apart (JSON on stdout)
//! ```
//!
//! The rows of VECTORS_F32 must already be L2-normalised (the inner product is the cosine).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, bail};
use hierarag_index::Bm25Index;
use hierarag_llm::{CacheSetting, EmbedBackendKind, EmbeddingsConfig};
use hierarag_rag::{
    AnnMode, DenseProgress, DenseRetriever, DenseSettings, EmbeddingRows, HnswIndex, HnswProgress,
    HnswSettings,
};
use hierarag_run::Silent;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| -> anyhow::Result<&str> {
        args.get(i)
            .map(String::as_str)
            .with_context(|| format!("argument {i} missing (see the file's doc comment)"))
    };
    let number = |i: usize| -> anyhow::Result<usize> {
        arg(i)?
            .parse()
            .with_context(|| format!("argument {i} is not a number"))
    };
    let output = match arg(0)? {
        "embed-chunks" => embed_chunks(Path::new(arg(1)?), Path::new(arg(2)?))?,
        "embed-texts" => embed_texts(Path::new(arg(1)?), Path::new(arg(2)?))?,
        "build" => {
            let rows = rows(Path::new(arg(1)?), number(2)?)?;
            let settings = HnswSettings {
                connectivity: number(4)?,
                ef_construction: number(5)?,
                ..HnswSettings::default()
            };
            let started = Instant::now();
            let graph = open_or_build(&rows, &settings, Path::new(arg(3)?))?;
            serde_json::json!({
                "rows": graph.n_rows(),
                "build_s": started.elapsed().as_secs_f64(),
                "file_bytes": std::fs::metadata(graph.path())?.len(),
            })
        }
        "search" => {
            let rows = rows(Path::new(arg(1)?), number(2)?)?;
            let settings = HnswSettings {
                connectivity: number(4)?,
                ef_construction: number(5)?,
                ef_search: number(6)?,
            };
            let graph = open_or_build(&rows, &settings, Path::new(arg(3)?))?;
            let queries = std::fs::read(arg(7)?).with_context(|| arg(7).unwrap().to_string())?;
            let queries: Vec<f32> = queries
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            search(&rows, &graph, &queries, number(8)?, Path::new(arg(9)?))?
        }
        other => bail!("unknown command {other:?} (see the file's doc comment)"),
    };
    println!("{output}");
    Ok(())
}

fn rows(path: &Path, dim: usize) -> anyhow::Result<EmbeddingRows> {
    let bytes = std::fs::metadata(path)
        .with_context(|| path.display().to_string())?
        .len() as usize;
    Ok(EmbeddingRows::open(path, bytes / 4 / dim, dim)?)
}

/// The graph is described by what it was built from: here, the vector file's name and size.
fn open_or_build(
    rows: &EmbeddingRows,
    settings: &HnswSettings,
    dir: &Path,
) -> anyhow::Result<HnswIndex> {
    std::fs::create_dir_all(dir)?;
    let identity = serde_json::json!({
        "vectors": rows.path().display().to_string(),
        "rows": rows.n_rows(),
        "dim": rows.dim(),
    });
    let mut last_report = Instant::now();
    Ok(HnswIndex::open_or_build(
        rows,
        &identity,
        settings,
        dir,
        &mut |progress| match progress {
            HnswProgress::Building { reason, .. } => eprintln!("building the graph ({reason})"),
            HnswProgress::Inserted { done, total } if last_report.elapsed().as_secs() >= 30 => {
                eprintln!("{done} of {total} rows inserted");
                last_report = Instant::now();
            }
            _ => {}
        },
    )?)
}

fn search(
    rows: &EmbeddingRows,
    graph: &HnswIndex,
    queries: &[f32],
    k: usize,
    out: &Path,
) -> anyhow::Result<serde_json::Value> {
    let n_queries = queries.len() / rows.dim();
    // The first pass maps the pages it touches (cold); the second is a warm server's.
    let started = Instant::now();
    search_all(rows, graph, queries, k)?;
    let cold_s = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let ids = search_all(rows, graph, queries, k)?;
    let warm_s = started.elapsed().as_secs_f64();
    std::fs::write(out, ids).with_context(|| out.display().to_string())?;
    Ok(serde_json::json!({
        "queries": n_queries,
        "search_s": warm_s,
        "queries_per_s": n_queries as f64 / warm_s,
        "cold_queries_per_s": n_queries as f64 / cold_s,
    }))
}

/// Every query's `k` best rows as u32 little-endian: the graph's candidates rescored exactly,
/// score descending, then row ascending.
fn search_all(
    rows: &EmbeddingRows,
    graph: &HnswIndex,
    queries: &[f32],
    k: usize,
) -> anyhow::Result<Vec<u8>> {
    let mut ids = Vec::with_capacity(queries.len() / rows.dim() * k * 4);
    for query in queries.chunks_exact(rows.dim()) {
        let mut scored: Vec<(f32, usize)> = graph
            .candidates(query, k)?
            .into_iter()
            .map(|row| {
                let score = rows.row(row).iter().zip(query).map(|(a, b)| a * b).sum();
                (score, row)
            })
            .collect();
        scored.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        for &(_, row) in scored.iter().take(k) {
            ids.extend_from_slice(&(row as u32).to_le_bytes());
        }
    }
    Ok(ids)
}

/// Every chunk of the index embedded with the embedded MiniLM into `cache_dir`, as the answer
/// stage does (no response cache: the embeddings file is the cache).
fn embed_chunks(index_dir: &Path, cache_dir: &Path) -> anyhow::Result<serde_json::Value> {
    let index = Arc::new(Bm25Index::open(index_dir)?);
    let embedder = Arc::new(minilm(index_dir)?);
    let runtime = hierarag_run::stages::runtime()?;
    let started = Instant::now();
    let settings = DenseSettings {
        ann: AnnMode::Exact,
        ..DenseSettings::default()
    };
    let mut last_report = Instant::now();
    let dense = runtime.block_on(DenseRetriever::build(
        index,
        embedder,
        cache_dir,
        &settings,
        &mut |progress| {
            if let DenseProgress::Embedded { done, total } = progress
                && last_report.elapsed().as_secs() >= 30
            {
                eprintln!("{done} of {total} chunks embedded");
                last_report = Instant::now();
            }
        },
    ))?;
    let seconds = started.elapsed().as_secs_f64();
    Ok(serde_json::json!({
        "chunks": dense.n_chunks(),
        "dim": dense.dim(),
        "embed_s": seconds,
        "chunks_per_s": dense.n_chunks() as f64 / seconds,
        "embeddings": cache_dir.join(hierarag_rag::EMBEDDINGS_FILE),
    }))
}

fn embed_texts(texts_path: &Path, out: &Path) -> anyhow::Result<serde_json::Value> {
    let texts: Vec<String> = std::fs::read_to_string(texts_path)
        .with_context(|| texts_path.display().to_string())?
        .lines()
        .map(str::to_owned)
        .collect();
    let embedder = minilm(&PathBuf::from("."))?;
    let runtime = hierarag_run::stages::runtime()?;
    let vectors = runtime.block_on(embedder.embed(&texts))?;
    let mut file = std::io::BufWriter::new(std::fs::File::create(out)?);
    for mut vector in vectors.iter().cloned() {
        let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        vector
            .iter_mut()
            .for_each(|x| *x /= norm.max(f32::MIN_POSITIVE));
        for x in vector {
            file.write_all(&x.to_le_bytes())?;
        }
    }
    file.flush()?;
    Ok(serde_json::json!({ "texts": texts.len(), "dim": vectors.first().map_or(0, Vec::len) }))
}

fn minilm(dir: &Path) -> anyhow::Result<hierarag_llm::Embedder> {
    let mut config = EmbeddingsConfig::new(EmbedBackendKind::Embedded, "");
    config.cache = CacheSetting::Off;
    hierarag_run::models::embedder(&config, dir, &Silent)
}
