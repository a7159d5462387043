//! `hierarag retrieve`: batch retrieval into a TREC run file.

use std::process::ExitCode;

use anyhow::Context;
use hierarag_index::Bm25Index;
use hierarag_run::retrieval::{RetrieveSettings, read_queries, retrieve};

use crate::cli::RetrieveArgs;
use crate::printer::Printer;
use crate::settings::level;

pub fn run(args: &RetrieveArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let mut index = Bm25Index::open(&args.index)
        .with_context(|| format!("opening index {}", args.index.display()))?;
    if let Some(postings) = args.prune_above {
        index = index.with_pruning_threshold(postings);
    }
    let queries = read_queries(&args.queries, &args.id_field, &args.query_field)?;
    let settings = RetrieveSettings {
        k: args.k,
        level: level(args.level),
        threads: args.threads,
        tag: args.tag.clone(),
    };
    retrieve(&index, &queries, &settings, &args.out, &printer)?;
    Ok(ExitCode::SUCCESS)
}
