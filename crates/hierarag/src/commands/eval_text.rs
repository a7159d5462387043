//! `hierarag eval text`: ROUGE-1, BLEU and CS of any prediction/reference pairs.

use std::io::Write;
use std::process::ExitCode;

use hierarag_run::Reporter as _;
use hierarag_run::config::model_config;
use hierarag_run::language::{check_texts, embeddings_warning};
use hierarag_run::text::{TextEvaluation, cosine_similarities, evaluate, read_pairs};

use crate::cli::EvalTextArgs;
use crate::printer::Printer;

pub fn run(args: &EvalTextArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let pairs = read_pairs(&args.pairs)?;
    let texts = pairs.iter().flat_map(|pair| {
        pair.references
            .iter()
            .chain([&pair.prediction])
            .map(String::as_str)
    });
    if let Some(mismatch) = check_texts(args.language, texts) {
        printer.warn(&format!("{}: {mismatch}", args.pairs.display()));
    }
    let cs = if args.no_cs {
        None
    } else {
        let config = model_config(args.config.as_deref())?;
        if let Some(warning) = embeddings_warning(args.language, &config.embeddings) {
            printer.warn(&format!("CS: {warning}"));
        }
        Some(cosine_similarities(&pairs, &config.embeddings, &printer)?)
    };
    let evaluation = evaluate(&pairs, cs.as_deref(), args.language);
    let mut out = crate::printer::stdout();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &evaluation)?;
        writeln!(out)?;
    } else {
        print_table(&mut out, &evaluation)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn print_table(out: &mut impl Write, evaluation: &TextEvaluation) -> std::io::Result<()> {
    let width = evaluation
        .pairs
        .iter()
        .map(|pair| pair.id.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(11, 40);
    let cs = |value: Option<f64>| value.map_or_else(String::new, |cs| format!("  {cs:>7.4}"));
    let has_cs = evaluation.mean.cs.is_some();
    writeln!(
        out,
        "{:<width$}  {:>9}  {:>7}{}",
        "id",
        "ROUGE-1 F",
        "BLEU",
        if has_cs { "       CS" } else { "" }
    )?;
    for pair in &evaluation.pairs {
        writeln!(
            out,
            "{:<width$}  {:>9.4}  {:>7.2}{}",
            pair.id,
            pair.rouge1.fmeasure,
            pair.bleu,
            cs(pair.cs)
        )?;
    }
    writeln!(
        out,
        "{:<width$}  {:>9.4}  {:>7.2}{}",
        "mean",
        evaluation.mean.rouge1.fmeasure,
        evaluation.mean.bleu,
        cs(evaluation.mean.cs)
    )?;
    writeln!(
        out,
        "{:<width$}  {:>9}  {:>7.2}",
        "corpus BLEU", "", evaluation.corpus_bleu
    )?;
    let tokenizers = if evaluation.tokenizers.is_default() {
        "ROUGE-1 as rouge-score 0.1.2 (no stemming); BLEU 0-100 as sacrebleu 2.6.0".to_string()
    } else {
        format!(
            "{}: ROUGE-1 as rouge-score 0.1.2 over {} tokens; BLEU 0-100 as sacrebleu 2.6.0 with \
tokenize='{}'",
            evaluation.language.name(),
            evaluation.tokenizers.rouge1.name(),
            evaluation.tokenizers.bleu.name()
        )
    };
    writeln!(
        out,
        "{} pairs; {tokenizers}{}",
        evaluation.pairs.len(),
        if has_cs {
            "; CS the cosine of MiniLM embeddings, as `hierarag evaluate`"
        } else {
            ""
        }
    )?;
    Ok(())
}
