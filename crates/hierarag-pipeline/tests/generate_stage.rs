//! The generate stage's bookkeeping: rejects of failed items, retries on the next pass, order.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use hierarag_generate::{GenerateSettings, Generator};
use hierarag_llm::{
    BoxFuture, CallError, ChatBackend, ChatClient, ChatRequest, ClientSettings, Completion, Usage,
};
use hierarag_pipeline::{GenerateStage, NoProgress, read_values};
use hierarag_plan::{CategoryRef, DesignKind, PlanItem};
use hierarag_taxonomy::{Granularity, Taxonomy};

/// Candidates from the document's first word; the filter rejects everything about "doc2"
/// while `strict` is set.
#[derive(Debug)]
struct Backend {
    strict: AtomicBool,
}

impl ChatBackend for Backend {
    fn backend(&self) -> &str {
        "test"
    }
    fn model(&self) -> &str {
        "test-1"
    }
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<Completion, CallError>> {
        let user = request.messages[1].content.clone();
        let strict = self.strict.load(Ordering::SeqCst);
        Box::pin(async move {
            let word = user
                .split("<document number=\"1\">\n")
                .nth(1)
                .and_then(|t| t.split_whitespace().next())
                .unwrap_or("?")
                .to_string();
            let text = if request.messages[0].content.contains("reviewer") {
                let pass = !(strict && word == "doc2");
                format!(
                    r#"{{"verdicts":[{{"candidate":1,"faithful":{pass},"fits_category":true,"standalone":true,"reason":"r"}},{{"candidate":2,"faithful":{pass},"fits_category":true,"standalone":true,"reason":"r"}}]}}"#
                )
            } else {
                format!(
                    r#"{{"candidates":[{{"question":"Who is {word}?","answer":"{word}"}},{{"question":"Why {word}?","answer":"because"}}]}}"#
                )
            };
            Ok(Completion {
                text,
                finish_reason: Some("stop".into()),
                usage: Usage::default(),
            })
        })
    }
}

fn plan() -> Vec<PlanItem> {
    (1..=4)
        .map(|n| PlanItem {
            item_id: format!("rq1-qc-{n:04}"),
            design: DesignKind::Rq1,
            set: "qc".into(),
            doc_ids: vec![format!("doc{n}")],
            categories: vec![CategoryRef {
                dimension: "qc".into(),
                level: Granularity::Coarse,
                category: "simple".into(),
            }],
            persona: BTreeMap::new(),
            seed: n,
        })
        .collect()
}

#[test]
fn a_failed_item_keeps_its_rejects_and_is_redone_by_the_next_pass_without_duplicates() {
    let taxonomy = Taxonomy::default_taxonomy();
    let backend = Arc::new(Backend {
        strict: AtomicBool::new(true),
    });
    let client = ChatClient::new(
        vec![backend.clone() as Arc<dyn ChatBackend>],
        &ClientSettings::default(),
    )
    .unwrap();
    let settings = GenerateSettings {
        candidates: 2,
        max_attempts: 2,
        ..GenerateSettings::default()
    };
    let generator = Generator::new(&taxonomy, &client, Some(&client), settings);
    let plan = plan();
    let documents: HashMap<String, String> = (1..=4)
        .map(|n| (format!("doc{n}"), format!("doc{n} is a document.")))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let stage = GenerateStage {
        plan: &plan,
        documents: &documents,
        generator: &generator,
        benchmark: &dir.path().join("benchmark.jsonl"),
        rejects: &dir.path().join("rejects.jsonl"),
        failures: &dir.path().join("generate.failures.jsonl"),
        screened: &dir.path().join("screened.jsonl"),
        concurrency: 3,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();

    let first = runtime.block_on(stage.run(&NoProgress)).unwrap();
    assert_eq!(first.written, 3);
    assert_eq!(first.failures.len(), 1);
    assert_eq!(first.failures[0].item_id, "rq1-qc-0002");
    // Two attempts × two candidates rejected by the filter, recorded although the item failed.
    let rejects = read_values(&dir.path().join("rejects.jsonl")).unwrap();
    assert_eq!(rejects.len(), 4);
    assert!(rejects.iter().all(|r| r["item_id"] == "rq1-qc-0002"));
    assert!(dir.path().join("generate.failures.jsonl").exists());

    // The next pass retries only the failed item; its old rejects go, and it succeeds now.
    backend.strict.store(false, Ordering::SeqCst);
    let second = runtime.block_on(stage.run(&NoProgress)).unwrap();
    assert_eq!((second.resumed, second.written), (3, 1));
    assert!(second.failures.is_empty());
    assert!(
        read_values(&dir.path().join("rejects.jsonl"))
            .unwrap()
            .is_empty()
    );
    assert!(!dir.path().join("generate.failures.jsonl").exists());
    let ids: Vec<String> = read_values(&dir.path().join("benchmark.jsonl"))
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        ids,
        ["rq1-qc-0001", "rq1-qc-0002", "rq1-qc-0003", "rq1-qc-0004"]
    );
}
