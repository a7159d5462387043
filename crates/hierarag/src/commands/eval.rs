//! `hierarag eval retrieval`.

use std::io::Write;
use std::process::ExitCode;

use hierarag_metrics::{EvalOptions, Evaluation, QueryMetrics, RELEVANCE_LEVEL};
use hierarag_run::Reporter as _;
use hierarag_run::retrieval::evaluate_files;

use crate::cli::EvalRetrievalArgs;
use crate::printer::Printer;

pub fn run(args: &EvalRetrievalArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let options = EvalOptions {
        relevance_level: args.relevance_level,
    };
    let files = evaluate_files(&args.qrels, &args.run, &options)?;
    if let Some(truncated) = &files.truncated_grades {
        printer.warn(&truncated.to_string());
    }
    let evaluation = files.evaluation;
    let mut out = crate::printer::stdout();
    if args.json {
        if args.mean_only {
            let summary = serde_json::json!({
                "mean": evaluation.mean,
                "n_queries": evaluation.n_queries,
                "queries_without_results": evaluation.queries_without_results.len(),
                "unjudged_run_queries": evaluation.n_unjudged_run_queries,
            });
            serde_json::to_writer_pretty(&mut out, &summary)?;
        } else {
            serde_json::to_writer_pretty(&mut out, &evaluation)?;
        }
        writeln!(out)?;
    } else {
        print_table(&mut out, &evaluation, !args.mean_only)?;
        if args.relevance_level != RELEVANCE_LEVEL {
            writeln!(
                out,
                "relevance level {0}: a judged grade of {0} or more is relevant (nDCG@10 weighs \
                 every grade)",
                args.relevance_level
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn print_table(
    out: &mut impl Write,
    evaluation: &Evaluation,
    per_query: bool,
) -> std::io::Result<()> {
    let width = evaluation
        .per_query
        .keys()
        .map(|q| q.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(5, 40);
    writeln!(
        out,
        "{:<width$}  {:>8}  {:>8}  {:>8}  {:>8}",
        "query", "AP", "nDCG@10", "R@10", "RR"
    )?;
    let row = |out: &mut dyn Write, name: &str, m: &QueryMetrics| {
        writeln!(
            out,
            "{name:<width$}  {:>8.4}  {:>8.4}  {:>8.4}  {:>8.4}",
            m.ap, m.ndcg_cut_10, m.recall_10, m.recip_rank
        )
    };
    if per_query {
        for (query, metrics) in &evaluation.per_query {
            row(out, query, metrics)?;
        }
    }
    row(out, "mean", &evaluation.mean)?;
    writeln!(
        out,
        "{} judged queries ({} without any result, counted as 0); {} run queries without judgments ignored",
        evaluation.n_queries,
        evaluation.queries_without_results.len(),
        evaluation.n_unjudged_run_queries
    )?;
    Ok(())
}
