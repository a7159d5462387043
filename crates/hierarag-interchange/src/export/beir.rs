//! BEIR's layout (what `beir.datasets.data_loader.GenericDataLoader` reads): the whole corpus,
//! the questions as queries, and each question's source documents as its relevant documents.

use std::collections::HashSet;
use std::path::Path;

use anyhow::Context;
use hierarag_index::Bm25Index;
use serde_json::{Value, json};

use super::files::{DelimitedFile, ExportFile};
use super::note;
use super::{
    RunInputs, category_labels, check_documents_found, corpus_context, corpus_on_error,
    persona_object, unique_doc_ids, wrote,
};
use hierarag_pipeline::Reporter;

pub(super) fn write(
    inputs: &RunInputs,
    index: &Bm25Index,
    out: &Path,
    reporter: &dyn Reporter,
) -> anyhow::Result<()> {
    write_corpus(inputs, index, &out.join("corpus.jsonl"), reporter)?;

    let mut queries = ExportFile::create(&out.join("queries.jsonl"))?;
    for record in &inputs.benchmark {
        let mut metadata = category_labels(record);
        metadata.insert("persona".into(), Value::Object(persona_object(record)));
        metadata.insert("set".into(), json!(record.set));
        metadata.insert("design".into(), json!(record.design));
        queries.json_line(&json!({
            "_id": record.id,
            "text": record.question,
            "metadata": metadata,
        }))?;
    }
    let path = queries.path().to_path_buf();
    queries.finish()?;
    wrote(
        reporter,
        &path,
        format!("{} queries", inputs.benchmark.len()),
    );

    let qrels_dir = out.join("qrels");
    std::fs::create_dir_all(&qrels_dir)
        .with_context(|| format!("{}: cannot create", qrels_dir.display()))?;
    let mut qrels = DelimitedFile::tsv(&qrels_dir.join("test.tsv"))?;
    qrels.record(["query-id", "corpus-id", "score"])?;
    let mut n_judgments = 0;
    for record in &inputs.benchmark {
        for doc_id in unique_doc_ids(record) {
            qrels.record([record.id.as_str(), doc_id, "1"])?;
            n_judgments += 1;
        }
    }
    let path = qrels.path().to_path_buf();
    qrels.finish()?;
    wrote(
        reporter,
        &path,
        format!(
            "{n_judgments} judgments for {} queries",
            inputs.benchmark.len()
        ),
    );
    Ok(())
}

/// Streams every document of the index's corpus into `corpus.jsonl`, holding one at a time.
fn write_corpus(
    inputs: &RunInputs,
    index: &Bm25Index,
    path: &Path,
    reporter: &dyn Reporter,
) -> anyhow::Result<()> {
    let sources = inputs.source_documents();
    let wanted: HashSet<&str> = sources.iter().copied().collect();
    let mut found: HashSet<String> = HashSet::with_capacity(wanted.len());
    let expected = index.manifest().counts.documents;
    let bar = reporter.counter("corpus", "documents", Some(expected));
    let mut file = ExportFile::create(path)?;
    let mut n_documents: u64 = 0;
    let spec = &index.manifest().corpus.spec;
    let documents = spec
        .documents(corpus_on_error(index))
        .with_context(|| corpus_context(index))?;
    for document in documents {
        let document = document.with_context(|| corpus_context(index))?;
        file.json_line(&json!({"_id": document.id, "title": "", "text": document.text}))?;
        if wanted.contains(document.id.as_str()) {
            found.insert(document.id);
        }
        n_documents += 1;
        if n_documents.is_multiple_of(1024) {
            bar.set_position(n_documents);
        }
    }
    drop(bar);
    check_documents_found(index, &sources, |id| found.contains(id))?;
    file.finish()?;
    wrote(reporter, path, format!("{n_documents} documents"));
    if n_documents != expected {
        note(
            reporter,
            format!(
                "warning: the corpus now has {n_documents} documents, but the index {} was built \
                 from {expected}: the corpus changed since it was indexed",
                index.dir().display()
            ),
        );
    }
    Ok(())
}
