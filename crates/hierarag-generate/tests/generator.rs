//! The generator against a scripted chat backend: prompts, repairs, checks, filter, retries.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use hierarag_generate::{GenerateSettings, Generator, RejectKind, SourceDocument};
use hierarag_llm::{
    BoxFuture, CallError, ChatBackend, ChatClient, ChatRequest, ClientSettings, Completion, Usage,
};
use hierarag_plan::{CategoryRef, DesignKind, PlanItem};
use hierarag_taxonomy::{Granularity, Taxonomy};

/// Replies from a queue, generator and filter kept apart (told by the system message), and
/// records every request.
#[derive(Debug, Default)]
struct Scripted {
    generator: Mutex<VecDeque<Result<String, CallError>>>,
    filter: Mutex<VecDeque<Result<String, CallError>>>,
    requests: Mutex<Vec<ChatRequest>>,
}

impl Scripted {
    fn new(generator: &[&str], filter: &[&str]) -> Arc<Scripted> {
        Arc::new(Scripted {
            generator: Mutex::new(generator.iter().map(|s| Ok(s.to_string())).collect()),
            filter: Mutex::new(filter.iter().map(|s| Ok(s.to_string())).collect()),
            requests: Mutex::default(),
        })
    }
}

impl ChatBackend for Scripted {
    fn backend(&self) -> &str {
        "scripted"
    }
    fn model(&self) -> &str {
        "script-1"
    }
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<Completion, CallError>> {
        self.requests.lock().unwrap().push(request.clone());
        let is_filter = request.messages[0].content.contains("reviewer");
        let queue = if is_filter {
            &self.filter
        } else {
            &self.generator
        };
        let next = queue
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(Err(CallError::Fatal {
                reason: "script exhausted".into(),
            }));
        Box::pin(async move {
            next.map(|text| Completion {
                text,
                finish_reason: Some("stop".into()),
                usage: Usage {
                    prompt_tokens: 10,
                    completion_tokens: 5,
                    cached_prompt_tokens: 0,
                    cache_write_prompt_tokens: 0,
                    latency_ms: 1.0,
                },
            })
        })
    }
}

fn client(backend: &Arc<Scripted>) -> ChatClient {
    let settings = ClientSettings {
        retry: hierarag_llm::RetryPolicy {
            max_attempts: 1,
            ..Default::default()
        },
        ..ClientSettings::default()
    };
    ChatClient::new(vec![backend.clone() as Arc<dyn ChatBackend>], &settings).unwrap()
}

fn item() -> PlanItem {
    PlanItem {
        item_id: "rq1-qc-0001".into(),
        design: DesignKind::Rq1,
        set: "qc".into(),
        doc_ids: vec!["Ada_Lovelace".into()],
        categories: vec![CategoryRef {
            dimension: "qc".into(),
            level: Granularity::Coarse,
            category: "simple".into(),
        }],
        persona: BTreeMap::from([("expertise".to_string(), "novice".to_string())]),
        seed: 7,
    }
}

fn documents() -> Vec<SourceDocument> {
    vec![SourceDocument {
        id: "Ada_Lovelace".into(),
        text: "Ada Lovelace was an English mathematician who wrote the first published \
algorithm for Charles Babbage's Analytical Engine in 1843."
            .into(),
    }]
}

const THREE: &str = r#"{"candidates":[
 {"question":"Who wrote the first published algorithm for the Analytical Engine?","answer":"Ada Lovelace"},
 {"question":"In which year did Ada Lovelace publish her algorithm?","answer":"1843"},
 {"question":"What does the text say about Babbage?","answer":"He designed the engine"}]}"#;

fn verdicts(passes: [bool; 2]) -> String {
    format!(
        r#"{{"verdicts":[{{"candidate":1,"faithful":{},"fits_category":true,"standalone":true,"reason":"ok"}},{{"candidate":2,"faithful":{},"fits_category":true,"standalone":true,"reason":"unsupported"}}]}}"#,
        passes[0], passes[1]
    )
}

fn run(generator: &Generator<'_>) -> hierarag_generate::ItemOutcome {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(generator.generate(&item(), &documents()))
}

#[test]
fn a_survivor_is_chosen_and_document_references_are_rejected_without_the_filter() {
    let taxonomy = Taxonomy::default_taxonomy();
    let backend = Scripted::new(&[THREE], &[&verdicts([true, false])]);
    let client = client(&backend);
    let generator = Generator::new(
        &taxonomy,
        &client,
        Some(&client),
        GenerateSettings::default(),
    );
    let outcome = run(&generator);
    let record = outcome.record.expect("a record");
    // Candidate 2 failed the filter and 3 mentions "the text": only 1 survives.
    assert_eq!(
        record.question,
        "Who wrote the first published algorithm for the Analytical Engine?"
    );
    assert_eq!(record.answer, "Ada Lovelace");
    assert_eq!(record.doc_ids, vec!["Ada_Lovelace"]);
    assert_eq!(record.candidates_considered, 3);
    let filter = record.filter.as_ref().unwrap();
    assert_eq!((filter.passed, filter.judged), (1, 2));
    let kinds: Vec<_> = outcome.rejects.iter().map(|r| r.kind).collect();
    assert_eq!(
        kinds,
        vec![RejectKind::ReferencesDocument, RejectKind::Filter]
    );
    assert_eq!(outcome.rejects[1].candidate, Some(2));
    assert!(outcome.rejects[1].reason.contains("not faithful"));

    // The filter saw only the two candidates that passed the checks; the generation prompt
    // carried the category and persona descriptions.
    let requests = backend.requests.lock().unwrap();
    let generation = &requests[0].messages[1].content;
    let taxonomy = Taxonomy::default_taxonomy();
    let simple = taxonomy.category("qc", "simple").unwrap().1;
    assert!(generation.contains(&simple.description));
    assert!(generation.contains("Ada Lovelace was an English mathematician"));
    assert!(requests[0].json_schema.is_some());
    let filter = &requests[1].messages[1].content;
    assert!(filter.contains("Candidate 2:"));
    assert!(!filter.contains("Candidate 3:"));
}

#[test]
fn an_unreadable_reply_gets_a_repair_message() {
    let taxonomy = Taxonomy::default_taxonomy();
    let backend = Scripted::new(
        &[
            "Sorry, here you go: questions coming",
            "Question: Who wrote the algorithm?\nAnswer: Ada Lovelace",
        ],
        &[],
    );
    let client = client(&backend);
    let settings = GenerateSettings {
        filter: false,
        ..GenerateSettings::default()
    };
    let generator = Generator::new(&taxonomy, &client, None, settings);
    let outcome = run(&generator);
    assert_eq!(outcome.record.unwrap().answer, "Ada Lovelace");
    let requests = backend.requests.lock().unwrap();
    assert_eq!(requests.len(), 2);
    let repair = requests[1].messages.last().unwrap();
    assert!(repair.content.contains("could not be read"), "{repair:?}");
    assert_eq!(requests[1].messages.len(), 4);
}

#[test]
fn an_item_whose_candidates_all_fail_is_retried_then_recorded_as_failed() {
    let taxonomy = Taxonomy::default_taxonomy();
    let all_bad = verdicts([false, false]);
    let backend = Scripted::new(&[THREE, THREE], &[&all_bad, &all_bad]);
    let client = client(&backend);
    let settings = GenerateSettings {
        max_attempts: 2,
        ..GenerateSettings::default()
    };
    let generator = Generator::new(&taxonomy, &client, Some(&client), settings);
    let outcome = run(&generator);
    assert!(outcome.record.is_none());
    let failure = outcome.failure.unwrap();
    assert!(failure.contains("no candidate survived 2"), "{failure}");
    // 3 rejects per attempt, with the attempt number.
    assert_eq!(outcome.rejects.len(), 6);
    assert_eq!(outcome.rejects[5].attempt, 2);
    // Each attempt is a new call with its own seed.
    let requests = backend.requests.lock().unwrap();
    let seeds: Vec<_> = requests
        .iter()
        .filter(|r| !r.messages[0].content.contains("reviewer"))
        .map(|r| r.seed)
        .collect();
    assert_eq!(seeds.len(), 2);
    assert_ne!(seeds[0], seeds[1]);
}

#[test]
fn a_call_that_fails_for_good_fails_the_item_with_the_reason() {
    let taxonomy = Taxonomy::default_taxonomy();
    let backend = Scripted::new(&[], &[]);
    let client = client(&backend);
    let generator = Generator::new(&taxonomy, &client, None, GenerateSettings::default());
    let outcome = run(&generator);
    let failure = outcome.failure.unwrap();
    assert!(failure.contains("generation call failed"), "{failure}");
    assert!(failure.contains("script exhausted"), "{failure}");
}

#[test]
fn the_same_item_gives_the_same_record() {
    let taxonomy = Taxonomy::default_taxonomy();
    let mut records = Vec::new();
    for _ in 0..2 {
        let backend = Scripted::new(&[THREE], &[&verdicts([true, true])]);
        let client = client(&backend);
        let generator = Generator::new(
            &taxonomy,
            &client,
            Some(&client),
            GenerateSettings::default(),
        );
        records.push(run(&generator).record.unwrap());
    }
    assert_eq!(records[0], records[1]);
}
