//! TREC qrels and run files, for trec_eval, pytrec_eval, ranx and `hierarag eval retrieval`.

use std::path::Path;

use anyhow::bail;
use hierarag_metrics::{ScoredDoc, format_run_line, trec_ranking};

use super::files::ExportFile;
use super::note;
use super::{RunInputs, unique_doc_ids, wrote};
use hierarag_pipeline::Reporter;

pub(super) fn write(inputs: &RunInputs, out: &Path, reporter: &dyn Reporter) -> anyhow::Result<()> {
    let mut qrels = ExportFile::create(&out.join("qrels.txt"))?;
    let mut n_judgments = 0;
    for record in &inputs.benchmark {
        check_token("question id", &record.id)?;
        for doc_id in unique_doc_ids(record) {
            check_token("document id", doc_id)?;
            qrels.line(&format!("{} 0 {doc_id} 1", record.id))?;
            n_judgments += 1;
        }
    }
    let path = qrels.path().to_path_buf();
    qrels.finish()?;
    wrote(
        reporter,
        &path,
        format!(
            "{n_judgments} judgments for {} questions",
            inputs.benchmark.len()
        ),
    );

    if inputs.answers.is_empty() {
        note(
            reporter,
            "no answers.jsonl in the run, so no run.txt (make it with `hierarag answer`)",
        );
        return Ok(());
    }
    let mut run = ExportFile::create(&out.join("run.txt"))?;
    let mut n_lines = 0;
    let mut retrievers: Vec<&str> = Vec::new();
    for answer in &inputs.answers {
        if answer.doc_ids.len() != answer.doc_scores.len() {
            bail!(
                "answers.jsonl: question {:?} has {} ranked documents but {} document scores",
                answer.id,
                answer.doc_ids.len(),
                answer.doc_scores.len()
            );
        }
        check_token("retriever name", &answer.retriever)?;
        if !retrievers.contains(&answer.retriever.as_str()) {
            retrievers.push(&answer.retriever);
        }
        let ranking: Vec<ScoredDoc> = answer
            .doc_ids
            .iter()
            .zip(&answer.doc_scores)
            .map(|(doc_id, score)| ScoredDoc::new(doc_id.clone(), *score))
            .collect();
        // trec_eval's order (score descending, then document id descending) is the order the
        // run's scores were computed in; writing ranks in that order keeps every reader agreed.
        for (rank_idx, doc) in trec_ranking(&ranking).into_iter().enumerate() {
            check_token("document id", &doc.doc_id)?;
            let line = format_run_line(
                &answer.id,
                &doc.doc_id,
                rank_idx + 1,
                doc.score,
                &answer.retriever,
            );
            run.line(&line)?;
            n_lines += 1;
        }
    }
    let path = run.path().to_path_buf();
    run.finish()?;
    wrote(
        reporter,
        &path,
        format!(
            "{n_lines} ranked documents for {} of {} questions (run tag {})",
            inputs.answers.len(),
            inputs.benchmark.len(),
            retrievers.join(", ")
        ),
    );
    Ok(())
}

/// TREC files are whitespace-separated columns: an id must be one non-empty token.
fn check_token(what: &str, text: &str) -> anyhow::Result<()> {
    if text.is_empty() || text.contains(char::is_whitespace) {
        bail!(
            "{what} {text:?} cannot be written to a TREC file, whose columns are separated by \
             whitespace (--format beir quotes such ids)"
        );
    }
    Ok(())
}
