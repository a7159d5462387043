//! `hierarag smoke` (also `quickstart`): the retrieval smoke test on the Wikipedia sample.

use std::io::Write;
use std::process::ExitCode;

use hierarag_index::Level;
use hierarag_run::Reporter;

use crate::cli::SmokeArgs;
use crate::printer::Printer;

const EXAMPLE_QUERY: &str = "Who directed 2001: A Space Odyssey?";

pub fn run(args: &SmokeArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let outcome = hierarag_run::retrieval::smoke(&args.out, args.k, &printer)?;
    let (index, evaluation) = (&outcome.index, &outcome.evaluation);
    let mut out = crate::printer::stdout();
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
    printer.note(&format!(
        "next: hierarag search --index {} \"your question\"",
        args.out.join("index").display()
    ));
    Ok(ExitCode::SUCCESS)
}
