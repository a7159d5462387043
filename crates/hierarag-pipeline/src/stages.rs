//! The generate, answer and evaluate stages over a run directory: append as items finish,
//! resume from what is there, record failures, end in plan order.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use futures_util::StreamExt;

use hierarag_generate::{BenchmarkRecord, Generator, ItemOutcome, SourceDocument};
use hierarag_judge::{AnswerGrade, AnswerInput, Judge};
use hierarag_llm::{BatchLedger, ChatClient, Embedder};
use hierarag_metrics::{ScoredDoc, TextTokenizers, evaluate_query};
use hierarag_plan::PlanItem;
use hierarag_rag::{AnswerRecord, Answerer};
use hierarag_tag::Tagger;
use serde::Serialize;
use xxhash_rust::xxh3::xxh3_64_with_seed;

pub use hierarag_records::{Failure, ScoreRecord};

use crate::error::PipelineError;
use crate::journal::{Journal, read_records, read_values, retain_records, write_values_atomic};
use crate::pool::{items, spawned};
use crate::reporter::Reporter;

/// How a stage reports progress (the binary draws bars; tests pass [`NoProgress`]).
pub trait Progress: Sync {
    /// Items to do in this pass, and how many were already done.
    fn start(&self, total: u64, already_done: u64);
    /// `n` more items finished (written or failed).
    fn advance(&self, n: u64);
}

/// Reports nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&self, _total: u64, _already_done: u64) {}
    fn advance(&self, _n: u64) {}
}

/// What one pass of a stage did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StageOutcome {
    /// Items the stage is responsible for.
    pub items: usize,
    /// Found done from an earlier pass.
    pub resumed: usize,
    /// Done in this pass.
    pub written: usize,
    /// Lost in this pass, with reasons (rerunning the stage tries them again).
    pub failures: Vec<Failure>,
    pub seconds: f64,
    /// Why the pass stopped before every item was tried: an endpoint refused the client
    /// (HTTP 401, 403 or 404), so no later item could succeed. What finished is kept, and the
    /// items not done are neither tried nor listed as failures; rerunning goes on from there.
    pub stopped: Option<String>,
}

impl StageOutcome {
    pub fn ok(&self) -> bool {
        self.failures.is_empty() && self.stopped.is_none()
    }
}

/// The failures of a pass that stopped on `refusal`: those the refusal caused are dropped
/// (their items were not really tried), the others kept.
fn without_refused(failures: &mut Vec<Failure>, refusal: &Option<String>) {
    if let Some(refusal) = refusal {
        failures.retain(|f| !f.reason.contains(refusal.as_str()));
    }
}

fn position_map<'a>(ids: impl Iterator<Item = &'a str>) -> HashMap<String, usize> {
    ids.enumerate().map(|(i, id)| (id.to_string(), i)).collect()
}

/// Errors unless every record already in `journal` belongs to the items of this pass (a file
/// left by another plan or benchmark must not be mixed in).
fn check_foreign(journal: &Journal, order: &HashMap<String, usize>) -> Result<(), PipelineError> {
    let mut foreign: Vec<&String> = journal
        .done()
        .iter()
        .filter(|id| !order.contains_key(*id))
        .collect();
    if foreign.is_empty() {
        return Ok(());
    }
    foreign.sort();
    Err(PipelineError::Invalid(format!(
        "{} holds {} record{} that are not in this stage's input (first: {:?}); it belongs to \
another plan or benchmark: use a fresh run directory or remove the file",
        journal.path().display(),
        foreign.len(),
        if foreign.len() == 1 { "" } else { "s" },
        foreign[0]
    )))
}

/// Rewrites a stage's failures file with this pass's failures (removes it when none failed).
pub fn write_failures(path: &Path, failures: &[Failure]) -> Result<(), PipelineError> {
    if failures.is_empty() {
        return match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(PipelineError::io(path, e)),
            _ => Ok(()),
        };
    }
    let values: Vec<serde_json::Value> = failures
        .iter()
        .map(|f| serde_json::to_value(f).expect("a failure serialises"))
        .collect();
    write_values_atomic(path, &values.iter().collect::<Vec<_>>())
}

/// Inputs of the generate stage.
#[derive(Debug)]
pub struct GenerateStage<'a> {
    pub plan: &'a [PlanItem],
    /// The text of every document the plan uses, by id.
    pub documents: &'a HashMap<String, String>,
    pub generator: &'a Generator<'a>,
    /// The benchmark, its rejected candidates, and the items that failed in this pass.
    pub benchmark: &'a Path,
    pub rejects: &'a Path,
    pub failures: &'a Path,
    /// The pairs a quality screen took out of the benchmark (`screened.jsonl`, keyed by
    /// `id`; absent when none): done, not made again.
    pub screened: &'a Path,
    /// Items in progress at once.
    pub concurrency: usize,
}

impl GenerateStage<'_> {
    /// Generates every plan item not yet in `benchmark.jsonl` (nor screened out of it).
    pub async fn run(&self, progress: &dyn Progress) -> Result<StageOutcome, PipelineError> {
        let started = Instant::now();
        let order = position_map(self.plan.iter().map(|i| i.item_id.as_str()));
        let mut benchmark = Journal::open(self.benchmark, "id")?;
        check_foreign(&benchmark, &order)?;
        let mut done = benchmark.done().clone();
        done.extend(read_values(self.screened)?.iter().filter_map(|v| {
            v.get("id")
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        }));
        // Rejects of items that did not finish are produced again when they are redone.
        retain_records(self.rejects, "item_id", &done)?;
        let mut rejects = Journal::open_side(self.rejects, "item_id")?;

        let todo: Vec<&PlanItem> = self
            .plan
            .iter()
            .filter(|item| !done.contains(&item.item_id))
            .collect();
        let resumed = self.plan.len() - todo.len();
        progress.start(self.plan.len() as u64, resumed as u64);
        let mut failures = Vec::new();
        let mut written = 0;
        let mut stopped = None;
        let stop = AtomicBool::new(false);
        let outcomes = items(todo, self.concurrency, &stop, |item| async move {
            match self.documents_of(item) {
                Ok(documents) => {
                    spawned(self.generator.generate_owned(item.clone(), documents)).await
                }
                Err(reason) => ItemOutcome {
                    item_id: item.item_id.clone(),
                    record: None,
                    rejects: Vec::new(),
                    failure: Some(reason),
                },
            }
        });
        let mut outcomes = std::pin::pin!(outcomes);
        // The replies behind an outcome are in the response cache already.
        while let Some(outcome) = outcomes.next().await {
            // Rejects first: a record on disk means its item is complete. A failed item's
            // rejects are kept too; the next pass drops them with the item and redoes both.
            rejects.append_side_all(&outcome.rejects)?;
            match &outcome.record {
                Some(record) => {
                    benchmark.append(record)?;
                    written += 1;
                }
                None => failures.push(Failure {
                    stage: "generate".into(),
                    item_id: outcome.item_id,
                    reason: outcome.failure.unwrap_or_else(|| "no record".into()),
                }),
            }
            progress.advance(1);
            if stopped.is_none()
                && let Some(refusal) = self.generator.refusal()
            {
                // No item starts after a refusal; those in progress finish (their next call
                // fails at once) and what they completed is kept.
                stopped = Some(refusal.to_string());
                stop.store(true, Ordering::SeqCst);
            }
        }
        benchmark.finish(&order)?;
        rejects.finish(&order)?;
        without_refused(&mut failures, &stopped);
        failures.sort_by_key(|f| order.get(&f.item_id).copied());
        write_failures(self.failures, &failures)?;
        Ok(StageOutcome {
            items: self.plan.len(),
            resumed,
            written,
            failures,
            seconds: started.elapsed().as_secs_f64(),
            stopped,
        })
    }

    fn documents_of(&self, item: &PlanItem) -> Result<Vec<SourceDocument>, String> {
        item.doc_ids
            .iter()
            .map(|id| {
                self.documents
                    .get(id)
                    .map(|text| SourceDocument {
                        id: id.clone(),
                        text: text.clone(),
                    })
                    .ok_or_else(|| format!("document {id:?} is not in the corpus"))
            })
            .collect()
    }
}

/// Runs a stage's passes until none defers a request to a batch: without a client in batch
/// mode, one pass. In batch mode, first the batches an earlier run left waiting (the run
/// ledger's) are awaited and read; then each pass answers what the cache holds and defers the
/// rest, the deferred requests go out as batches (one per client, within the provider's
/// limits), and their results come back into the cache for the next pass. The last pass, which
/// deferred nothing, is the stage's outcome: its failures are the items whose requests failed.
pub async fn in_batches<F, Fut>(
    clients: &[&ChatClient],
    ledger: &BatchLedger,
    reporter: &dyn Reporter,
    mut pass: F,
) -> Result<StageOutcome, PipelineError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<StageOutcome, PipelineError>>,
{
    let batching: Vec<&ChatClient> = clients.iter().copied().filter(|c| c.batch_mode()).collect();
    let note = |message: &str| reporter.note(message);
    for client in &batching {
        client.run_batches(ledger, &note).await?;
    }
    loop {
        let outcome = pass().await?;
        let deferred: usize = batching.iter().map(|c| c.deferred()).sum();
        if deferred == 0 {
            return Ok(outcome);
        }
        reporter.note(&format!(
            "{deferred} request{} deferred to a batch",
            if deferred == 1 { "" } else { "s" }
        ));
        for client in &batching {
            client.run_batches(ledger, &note).await?;
        }
    }
}

/// The seed of a question's answer: from the run seed and the question id.
pub fn answer_seed(run_seed: u64, id: &str) -> u64 {
    xxh3_64_with_seed(format!("answer/{id}").as_bytes(), run_seed) & 0x7fff_ffff
}

/// A RAG system that answers one question at a time (the builtin pipeline, a program, a
/// service): the question's record in, its answer record or why there is none out.
pub trait AnswerSystem: Sync {
    fn answer(
        &self,
        record: &BenchmarkRecord,
    ) -> impl std::future::Future<Output = Result<AnswerRecord, String>>;

    /// Why no later question can succeed (an endpoint refused the client), once that is so:
    /// the stage then starts no new question.
    fn refusal(&self) -> Option<String> {
        None
    }
}

/// The answer stage of a system asked one question at a time: as [`AnswerStage`], resumable,
/// with failures recorded, `concurrency` questions outstanding.
#[derive(Debug)]
pub struct SystemAnswerStage<'a, S> {
    pub benchmark: &'a [BenchmarkRecord],
    pub system: &'a S,
    pub answers: &'a Path,
    pub failures: &'a Path,
    pub concurrency: usize,
}

impl<S: AnswerSystem> SystemAnswerStage<'_, S> {
    /// Answers every benchmark question not yet in `answers`.
    pub async fn run(&self, progress: &dyn Progress) -> Result<StageOutcome, PipelineError> {
        per_question(
            PerQuestion {
                stage: "answer",
                benchmark: self.benchmark,
                records: self.answers,
                failures: self.failures,
                concurrency: self.concurrency,
            },
            |record| self.system.answer(record),
            || self.system.refusal(),
            progress,
        )
        .await
    }
}

/// Where a stage that makes one record per benchmark question keeps its records.
struct PerQuestion<'a> {
    stage: &'static str,
    benchmark: &'a [BenchmarkRecord],
    records: &'a Path,
    failures: &'a Path,
    concurrency: usize,
}

/// Runs `work` on every benchmark question that has no record yet, `concurrency` at a time,
/// appending each record as it finishes; after `refusal` says no later question can succeed,
/// no new question starts and those in progress finish.
async fn per_question<'a, T, F, W>(
    stage: PerQuestion<'a>,
    mut work: W,
    refusal: impl Fn() -> Option<String>,
    progress: &dyn Progress,
) -> Result<StageOutcome, PipelineError>
where
    T: Serialize,
    F: std::future::Future<Output = Result<T, String>> + 'a,
    W: FnMut(&'a BenchmarkRecord) -> F + 'a,
{
    let started = Instant::now();
    let order = position_map(stage.benchmark.iter().map(|r| r.id.as_str()));
    let mut records = Journal::open(stage.records, "id")?;
    check_foreign(&records, &order)?;
    let todo: Vec<&BenchmarkRecord> = stage
        .benchmark
        .iter()
        .filter(|r| !records.contains(&r.id))
        .collect();
    let resumed = stage.benchmark.len() - todo.len();
    progress.start(stage.benchmark.len() as u64, resumed as u64);
    let mut failures = Vec::new();
    let mut written = 0;
    let mut stopped = None;
    let stop = AtomicBool::new(false);
    let outcomes = items(todo, stage.concurrency, &stop, |record| {
        let done = work(record);
        async move { (record, done.await) }
    });
    let mut outcomes = std::pin::pin!(outcomes);
    while let Some((record, outcome)) = outcomes.next().await {
        match outcome {
            Ok(made) => {
                records.append(&made)?;
                written += 1;
            }
            Err(reason) => failures.push(Failure {
                stage: stage.stage.into(),
                item_id: record.id.clone(),
                reason,
            }),
        }
        progress.advance(1);
        if stopped.is_none()
            && let Some(refused) = refusal()
        {
            // No question starts after a refusal; those in progress finish.
            stopped = Some(refused);
            stop.store(true, Ordering::SeqCst);
        }
    }
    records.finish(&order)?;
    without_refused(&mut failures, &stopped);
    failures.sort_by_key(|f| order.get(&f.item_id).copied());
    write_failures(stage.failures, &failures)?;
    Ok(StageOutcome {
        items: stage.benchmark.len(),
        resumed,
        written,
        failures,
        seconds: started.elapsed().as_secs_f64(),
        stopped,
    })
}

/// Inputs of the tag stage.
#[derive(Debug)]
pub struct TagStage<'a> {
    pub benchmark: &'a [BenchmarkRecord],
    pub tagger: &'a Tagger,
    /// The tags, and the questions that failed in this pass.
    pub tags: &'a Path,
    pub failures: &'a Path,
    pub concurrency: usize,
}

impl TagStage<'_> {
    /// Tags every benchmark question not yet in `tags`, each question's calls as a task of
    /// its own. The replies behind a record are in the response cache already.
    pub async fn run(&self, progress: &dyn Progress) -> Result<StageOutcome, PipelineError> {
        per_question(
            PerQuestion {
                stage: "tag",
                benchmark: self.benchmark,
                records: self.tags,
                failures: self.failures,
                concurrency: self.concurrency,
            },
            |record| {
                spawned(
                    self.tagger
                        .tag_owned(record.id.clone(), record.question.clone()),
                )
            },
            || self.tagger.refusal().map(|refusal| refusal.to_string()),
            progress,
        )
        .await
    }
}

/// Inputs of the judge stage: the LLM judge grades every answered question.
#[derive(Debug)]
pub struct JudgeStage<'a> {
    pub benchmark: &'a [BenchmarkRecord],
    pub answers: &'a [AnswerRecord],
    /// The text of each retrieved chunk the judge is shown, by chunk id (a chunk not in it is
    /// left out of the passages), for answers that carry no context texts of their own.
    pub passages: &'a HashMap<String, String>,
    pub judge: &'a Judge,
    /// The grades, and the answers that could not be graded in this pass.
    pub judgements: &'a Path,
    pub failures: &'a Path,
    pub concurrency: usize,
}

impl JudgeStage<'_> {
    /// Grades every answered question not yet in `judgements`, in benchmark order; each
    /// question's calls run as a task of their own.
    pub async fn run(&self, progress: &dyn Progress) -> Result<StageOutcome, PipelineError> {
        let answers = answers_by_id(self.benchmark, self.answers)?;
        let answered: Vec<BenchmarkRecord> = self
            .benchmark
            .iter()
            .filter(|r| answers.contains_key(r.id.as_str()))
            .cloned()
            .collect();
        per_question(
            PerQuestion {
                stage: "judge",
                benchmark: &answered,
                records: self.judgements,
                failures: self.failures,
                concurrency: self.concurrency,
            },
            |record| {
                let answer = answers[record.id.as_str()];
                let input = AnswerInput {
                    question: record.question.clone(),
                    reference: record.answer.clone(),
                    answer: answer.answer.clone(),
                    // A system's own context texts, else the retrieved chunks' from the index.
                    contexts: if answer.contexts.is_empty() {
                        answer
                            .retrieved
                            .iter()
                            .filter_map(|chunk| self.passages.get(&chunk.chunk_id).cloned())
                            .collect()
                    } else {
                        answer.contexts.clone()
                    },
                    refused: answer.refused,
                    unanswerable: record.unanswerable,
                };
                let (judge, id) = (self.judge.clone(), record.id.clone());
                spawned(async move { judge.grade_answer(&id, &input).await })
            },
            || self.judge.refusal().map(|refusal| refusal.to_string()),
            progress,
        )
        .await
    }
}

/// The first answer of each question, by id; an answer to a question not in the benchmark is
/// an error.
fn answers_by_id<'a>(
    benchmark: &[BenchmarkRecord],
    answers: &'a [AnswerRecord],
) -> Result<HashMap<&'a str, &'a AnswerRecord>, PipelineError> {
    let questions: HashSet<&str> = benchmark.iter().map(|r| r.id.as_str()).collect();
    let mut by_id = HashMap::new();
    for answer in answers {
        if !questions.contains(answer.id.as_str()) {
            return Err(PipelineError::Invalid(format!(
                "answers.jsonl has question {:?}, which is not in benchmark.jsonl",
                answer.id
            )));
        }
        by_id.entry(answer.id.as_str()).or_insert(answer);
    }
    Ok(by_id)
}

/// Writes the grades of `judgements` into `scores` (each score's `judge_*` fields, cleared
/// where its answer has no grade), replacing the file atomically; the number of scores with a
/// grade. No scores file: nothing to do.
pub fn merge_grades(scores: &Path, judgements: &Path) -> Result<usize, PipelineError> {
    if !scores.exists() {
        return Ok(0);
    }
    let grades: Vec<AnswerGrade> = read_records(judgements)?;
    let by_id: HashMap<&str, &AnswerGrade> = grades.iter().map(|g| (g.id.as_str(), g)).collect();
    let records: Vec<ScoreRecord> = read_records(scores)?;
    let mut graded = 0;
    let values: Vec<serde_json::Value> = records
        .into_iter()
        .map(|record| {
            let grade = by_id.get(record.id.as_str()).copied();
            graded += usize::from(grade.is_some());
            let id = record.id.clone();
            serde_json::to_value(record.with_grade(grade))
                .unwrap_or_else(|e| panic!("the score of {id:?} serialises: {e}"))
        })
        .collect();
    write_values_atomic(scores, &values.iter().collect::<Vec<_>>())?;
    Ok(graded)
}

/// Inputs of the pair-rating stage: the LLM judge rates every benchmark QA pair as the human
/// annotators do.
#[derive(Debug)]
pub struct RatePairsStage<'a> {
    pub benchmark: &'a [BenchmarkRecord],
    /// The text of each source document, by document id (a document not in it is left out).
    pub documents: &'a HashMap<String, String>,
    pub judge: &'a Judge,
    /// The ratings, and the pairs that could not be rated in this pass.
    pub ratings: &'a Path,
    pub failures: &'a Path,
    pub concurrency: usize,
}

impl RatePairsStage<'_> {
    /// Rates every benchmark pair not yet in `ratings`.
    pub async fn run(&self, progress: &dyn Progress) -> Result<StageOutcome, PipelineError> {
        per_question(
            PerQuestion {
                stage: "judge-benchmark",
                benchmark: self.benchmark,
                records: self.ratings,
                failures: self.failures,
                concurrency: self.concurrency,
            },
            |record| {
                let documents: Vec<String> = record
                    .doc_ids
                    .iter()
                    .filter_map(|id| self.documents.get(id).cloned())
                    .collect();
                let (judge, id) = (self.judge.clone(), record.id.clone());
                let (question, reference) = (record.question.clone(), record.answer.clone());
                spawned(async move {
                    judge
                        .rate_pair(&id, &question, &reference, &documents)
                        .await
                })
            },
            || self.judge.refusal().map(|refusal| refusal.to_string()),
            progress,
        )
        .await
    }
}

/// Inputs of the answer stage.
#[derive(Debug)]
pub struct AnswerStage<'a> {
    pub benchmark: &'a [BenchmarkRecord],
    pub answerer: &'a Answerer<'a>,
    /// The answers, and the questions that failed in this pass.
    pub answers: &'a Path,
    pub failures: &'a Path,
    pub concurrency: usize,
    pub seed: u64,
}

impl AnswerStage<'_> {
    /// Answers every benchmark question not yet in `answers.jsonl`.
    pub async fn run(&self, progress: &dyn Progress) -> Result<StageOutcome, PipelineError> {
        SystemAnswerStage {
            benchmark: self.benchmark,
            system: self,
            answers: self.answers,
            failures: self.failures,
            concurrency: self.concurrency,
        }
        .run(progress)
        .await
    }
}

/// The builtin pipeline as a system: retrieval on the stage's task (it borrows the
/// retriever), the prompt, the call and the record as a task of their own. The reply behind an
/// answer is in the response cache already.
impl AnswerSystem for AnswerStage<'_> {
    async fn answer(&self, record: &BenchmarkRecord) -> Result<AnswerRecord, String> {
        let seed = answer_seed(self.seed, &record.id);
        let chunks = self
            .answerer
            .retrieve(&record.question)
            .await
            .map_err(|error| with_sources(&error))?;
        spawned(self.answerer.answer_from_chunks(
            record.id.clone(),
            record.question.clone(),
            seed,
            chunks,
        ))
        .await
        .map_err(|error| with_sources(&error))
    }

    fn refusal(&self) -> Option<String> {
        self.answerer.refusal().map(|refusal| refusal.to_string())
    }
}

/// Inputs of the evaluate stage.
#[derive(Debug)]
pub struct EvaluateStage<'a> {
    pub benchmark: &'a [BenchmarkRecord],
    pub answers: &'a [AnswerRecord],
    pub embedder: &'a Embedder,
    /// The scores, and the answers that could not be scored in this pass.
    pub scores: &'a Path,
    pub failures: &'a Path,
    /// Questions scored per step: their answer and reference texts go to the embedder in one
    /// call.
    pub batch: usize,
    /// The tokenizers of ROUGE-1 and BLEU, chosen by the corpus language (the English
    /// defaults: rouge-score's and 13a).
    pub tokenizers: TextTokenizers,
}

impl EvaluateStage<'_> {
    /// Scores every answered question not yet in `scores.jsonl`, in benchmark order.
    pub async fn run(&self, progress: &dyn Progress) -> Result<StageOutcome, PipelineError> {
        let started = Instant::now();
        let references: HashMap<&str, &BenchmarkRecord> =
            self.benchmark.iter().map(|r| (r.id.as_str(), r)).collect();
        let mut answered: Vec<&AnswerRecord> = Vec::new();
        let mut seen = HashSet::new();
        for answer in self.answers {
            if !references.contains_key(answer.id.as_str()) {
                return Err(PipelineError::Invalid(format!(
                    "answers.jsonl has question {:?}, which is not in benchmark.jsonl",
                    answer.id
                )));
            }
            if seen.insert(answer.id.as_str()) {
                answered.push(answer);
            }
        }
        let order = position_map(self.benchmark.iter().map(|r| r.id.as_str()));
        answered.sort_by_key(|a| order[&a.id]);
        let mut scores = Journal::open(self.scores, "id")?;
        check_foreign(&scores, &order)?;
        let todo: Vec<&AnswerRecord> = answered
            .iter()
            .copied()
            .filter(|a| !scores.contains(&a.id))
            .collect();
        let resumed = answered.len() - todo.len();
        // A system that named documents for any question gives rankings: an empty one is a
        // ranking that found nothing (`score_with`).
        let ranked = self.answers.iter().any(|a| !a.no_documents);
        progress.start(answered.len() as u64, resumed as u64);
        let mut failures = Vec::new();
        let mut written = 0;
        let mut stopped = None;
        for batch in todo.chunks(self.batch.max(1)) {
            let mut texts = Vec::with_capacity(batch.len() * 2);
            for answer in batch {
                texts.push(answer.answer.clone());
                texts.push(references[answer.id.as_str()].answer.clone());
            }
            let vectors = match self.embedder.embed(&texts).await {
                Ok(vectors) => vectors,
                Err(error) => {
                    if let Some(refusal) = self.embedder.refusal() {
                        stopped = Some(refusal.to_string());
                        break;
                    }
                    failures.extend(batch.iter().map(|a| Failure {
                        stage: "evaluate".into(),
                        item_id: a.id.clone(),
                        reason: format!("embedding failed: {}", with_sources(&error)),
                    }));
                    progress.advance(batch.len() as u64);
                    continue;
                }
            };
            for (n, answer) in batch.iter().enumerate() {
                let reference = references[answer.id.as_str()];
                let score = score_with(
                    answer,
                    reference,
                    &vectors[2 * n],
                    &vectors[2 * n + 1],
                    &self.tokenizers,
                    ranked,
                );
                scores.append(&score)?;
                written += 1;
            }
            progress.advance(batch.len() as u64);
        }
        scores.finish(&order)?;
        write_failures(self.failures, &failures)?;
        Ok(StageOutcome {
            items: answered.len(),
            resumed,
            written,
            failures,
            seconds: started.elapsed().as_secs_f64(),
            stopped,
        })
    }
}

/// Cosine similarity; 0 when either vector is zero.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut dot, mut na, mut nb) = (0.0f64, 0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

/// Every metric of one answer, with the English tokenizers of the text metrics.
pub fn score(
    answer: &AnswerRecord,
    reference: &BenchmarkRecord,
    answer_vector: &[f32],
    reference_vector: &[f32],
) -> ScoreRecord {
    score_with(
        answer,
        reference,
        answer_vector,
        reference_vector,
        &TextTokenizers::default(),
        false,
    )
}

/// Every metric of one answer, ROUGE-1 and BLEU with `tokenizers`. `ranked`: the answer's
/// system gives rankings (it named documents for some question), so that an answer naming
/// none retrieved nothing and scores 0 on every retrieval measure; otherwise such an answer
/// has them absent.
pub fn score_with(
    answer: &AnswerRecord,
    reference: &BenchmarkRecord,
    answer_vector: &[f32],
    reference_vector: &[f32],
    tokenizers: &TextTokenizers,
    ranked: bool,
) -> ScoreRecord {
    let relevant = reference.doc_ids.iter().map(|id| (id.clone(), 1)).collect();
    let ranking: Vec<ScoredDoc> = answer
        .doc_ids
        .iter()
        .zip(&answer.doc_scores)
        .map(|(id, score)| ScoredDoc::new(id.clone(), *score))
        .collect();
    // Absent when the system names no document at all, or the question names no relevant one
    // (an imported benchmark without document ids): there is nothing to rank against.
    let retrieval = ((ranked || !answer.no_documents) && !reference.doc_ids.is_empty())
        .then(|| evaluate_query(&relevant, &ranking));
    // `+ 0.0` turns -0.0 (a zero gain divided out) into 0.0, as trec_eval prints it.
    let of = |value: fn(&hierarag_metrics::QueryMetrics) -> f64| {
        retrieval.as_ref().map(|r| value(r) + 0.0)
    };
    ScoreRecord {
        id: answer.id.clone(),
        ap: of(|r| r.ap),
        ndcg_10: of(|r| r.ndcg_cut_10),
        recall_10: of(|r| r.recall_10),
        rr: of(|r| r.recip_rank),
        cs: cosine(answer_vector, reference_vector) + 0.0,
        rouge1: tokenizers
            .rouge1(&reference.answer, &answer.answer)
            .fmeasure,
        bleu: tokenizers
            .sentence_bleu(&answer.answer, &[reference.answer.as_str()])
            .score,
        refused: answer.refused,
        empty_ranking: retrieval.is_some() && ranking.is_empty(),
        refusal_correct: Some(answer.refused == reference.unanswerable),
        judge_correctness: None,
        judge_hallucination: None,
        judge: None,
    }
}

/// `error` with its causes, `outer: inner: …`, as a failure record gives it (the errors'
/// own messages name only themselves, so that a printer of the chain repeats nothing).
fn with_sources(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
