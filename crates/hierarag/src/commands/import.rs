//! `hierarag import`: a benchmark made elsewhere as a run's benchmark.jsonl and taxonomy.toml.

use std::process::ExitCode;

use hierarag_corpus::OnError;
use hierarag_run::import::{ImportFields, ImportFormat, ImportRequest};
use hierarag_run::{Reporter, RunDir};

use crate::cli::{ImportBenchmarkArgs, ImportFormatArg};
use crate::printer::Printer;

pub fn run(args: &ImportBenchmarkArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let format = match args.format {
        ImportFormatArg::Datamorgana => ImportFormat::Datamorgana,
        ImportFormatArg::Ragas => ImportFormat::Ragas,
        ImportFormatArg::Deepeval => ImportFormat::Deepeval,
        ImportFormatArg::Jsonl => ImportFormat::Jsonl,
        ImportFormatArg::Csv => ImportFormat::Csv,
    };
    let dimensions = args
        .dimensions
        .iter()
        .map(|spec| match spec.split_once('=') {
            Some((field, key)) => (field.to_owned(), key.to_owned()),
            None => (spec.clone(), spec.clone()),
        })
        .collect();
    let request = ImportRequest {
        input: args.input.clone(),
        format,
        fields: ImportFields {
            id: args.id_field.clone(),
            question: args.question_field.clone(),
            answer: args.answer_field.clone(),
            doc_ids: args.doc_ids_field.clone(),
            contexts: args.contexts_field.clone(),
            dimensions,
        },
        taxonomy: args.taxonomy.clone(),
        index: args.index.clone(),
        skip_bad_rows: args.on_error == OnError::Skip,
        overwrite: args.overwrite,
    };
    let run = RunDir::new(&args.run);
    let _lock = run.lock()?;
    let imported = hierarag_run::import::import(&run, &request)?;
    // A closed stdout cuts the summary short; it is no failure.
    crate::printer::printed(print_summary(&imported, &args.input, format))?;
    if imported.contexts_found + imported.contexts_missed > 0 {
        printer.note(&format!(
            "reference contexts found in the index: {} of {}",
            imported.contexts_found,
            imported.contexts_found + imported.contexts_missed
        ));
    }
    if imported.without_documents > 0 {
        printer.note(&format!(
            "{} question{} name no document: their retrieval metrics will be absent{}",
            imported.without_documents,
            if imported.without_documents == 1 {
                ""
            } else {
                "s"
            },
            if args.index.is_none() {
                " (pass --index to find them from the reference contexts)"
            } else {
                ""
            }
        ));
    }
    if !imported.skipped.is_empty() {
        printer.note(&format!(
            "skipped {} row{} (listed in {}): first, {}",
            imported.skipped.len(),
            if imported.skipped.len() == 1 { "" } else { "s" },
            args.run.join(hierarag_run::import::SKIPPED_FILE).display(),
            imported.skipped[0].1
        ));
    }
    printer.note(&format!(
        "wrote {} and {}",
        imported.benchmark.display(),
        imported.taxonomy.display()
    ));
    Ok(ExitCode::SUCCESS)
}

/// The imported count and each dimension's categories, on stdout.
fn print_summary(
    imported: &hierarag_run::import::Imported,
    input: &std::path::Path,
    format: ImportFormat,
) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = crate::printer::stdout();
    writeln!(
        out,
        "{} questions imported from {} ({})",
        imported.written,
        input.display(),
        format.as_str()
    )?;
    for (dimension, categories) in &imported.dimensions {
        let list: Vec<String> = categories
            .iter()
            .map(|(name, n)| format!("{name} {n}"))
            .collect();
        writeln!(out, "  {dimension}: {}", list.join(", "))?;
    }
    if imported.dimensions.is_empty() {
        writeln!(
            out,
            "  no categories: the analysis needs a dimension (--dimension FIELD, or `hierarag \
tag`)"
        )?;
    }
    Ok(())
}
