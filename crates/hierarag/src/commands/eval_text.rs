//! `hierarag eval text`: ROUGE-1 and BLEU of any prediction/reference pairs.

use std::io::Write;
use std::process::ExitCode;

use hierarag_run::text::{TextEvaluation, evaluate, read_pairs};

use crate::cli::EvalTextArgs;

pub fn run(args: &EvalTextArgs) -> anyhow::Result<ExitCode> {
    let pairs = read_pairs(&args.pairs)?;
    let evaluation = evaluate(&pairs);
    let mut out = std::io::stdout().lock();
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
    writeln!(out, "{:<width$}  {:>9}  {:>7}", "id", "ROUGE-1 F", "BLEU")?;
    for pair in &evaluation.pairs {
        writeln!(
            out,
            "{:<width$}  {:>9.4}  {:>7.2}",
            pair.id, pair.rouge1.fmeasure, pair.bleu
        )?;
    }
    writeln!(
        out,
        "{:<width$}  {:>9.4}  {:>7.2}",
        "mean", evaluation.mean.rouge1.fmeasure, evaluation.mean.bleu
    )?;
    writeln!(
        out,
        "{:<width$}  {:>9}  {:>7.2}",
        "corpus BLEU", "", evaluation.corpus_bleu
    )?;
    writeln!(
        out,
        "{} pairs; ROUGE-1 as rouge-score 0.1.2 (no stemming); BLEU 0-100 as sacrebleu 2.6.0",
        evaluation.pairs.len()
    )?;
    Ok(())
}
