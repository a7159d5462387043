//! `hierarag search`.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use hierarag_index::{Bm25Index, SearchResult};

use crate::cli::SearchArgs;
use crate::printer::snippet;
use crate::settings::level;

pub fn run(args: &SearchArgs) -> anyhow::Result<ExitCode> {
    let index = Bm25Index::open(&args.index)
        .with_context(|| format!("opening index {}", args.index.display()))?;
    let results = index.search_results(&args.query, args.k, level(args.level))?;
    let mut out = crate::printer::stdout();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &results)?;
        writeln!(out)?;
    } else {
        print_table(&mut out, &results)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn print_table(out: &mut impl Write, results: &[SearchResult]) -> std::io::Result<()> {
    if results.is_empty() {
        writeln!(out, "no results (no query term occurs in the index)")?;
        return Ok(());
    }
    let id_width = results
        .iter()
        .map(|r| r.chunk_id.chars().count())
        .max()
        .unwrap_or(5)
        .clamp(5, 48);
    writeln!(
        out,
        "{:>4}  {:>8}  {:<id_width$}  text",
        "rank", "score", "chunk"
    )?;
    for r in results {
        writeln!(
            out,
            "{:>4}  {:>8.3}  {:<id_width$}  {}",
            r.rank,
            r.score,
            snippet(&r.chunk_id, id_width),
            snippet(&r.text, 70)
        )?;
    }
    Ok(())
}
