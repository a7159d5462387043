//! The run config (TOML) of `hierarag run`, also read by the stand-alone stages for their
//! model settings.
//!
//! Tables: `[run]` (dir, seed), `[corpus]`, `[index]`, `[taxonomy]`, `[design]`, `[plan]`,
//! `[generate]` (+ `[generate.llm]`), `[filter]` (`[filter.llm]`), `[answer]`
//! (+ `[answer.llm]`), `[evaluate]`, `[tag]` (+ `[tag.llm]`), `[judge]` (+ `[judge.llm]`), `[llm]`, `[embeddings]`, and `[[system]]` (the RAG systems
//! that answer the benchmark). Relative paths are taken from the current directory. Unknown
//! tables and keys are errors naming the file and key.

pub mod estimate;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use hierarag_corpus::{CorpusFormat, CorpusSpec, OnError};
use hierarag_generate::GenerateSettings;
use hierarag_lang::Language;
use hierarag_llm::{CacheSetting, ChatBackendKind, EmbedBackendKind, EmbeddingsConfig, LlmConfig};
use hierarag_rag::{AnswerSettings, DenseSettings, RetrieverKind};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use toml::de::{DeTable, DeValue};

pub use hierarag_judge::ScreenSettings;

/// A run config with every default filled in: a table per role (`[generate]`, `[answer]`,
/// `[tag]`, `[judge]`), each with its settings, its model (default: `[llm]`) and its
/// concurrency.
///
/// It serialises (into `manifest.json`) in the flat form runs have always recorded, so that a
/// run made before the tables were nested continues with the same config.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The file it was read from.
    pub source: PathBuf,
    pub run: RunSection,
    /// Always present for `hierarag run` ([`RunConfig::parse`] requires it); absent in the
    /// model settings of the stand-alone stages, which take their inputs from the command line.
    pub corpus: Option<CorpusSection>,
    pub index: IndexSection,
    pub taxonomy: Option<PathBuf>,
    pub plan: PlanSection,
    pub generate: GenerateTable,
    pub answer: AnswerTable,
    /// How dense (and hybrid) retrieval searches the chunk embeddings (`[dense]`): exact, or
    /// through an HNSW graph from `ann_threshold` chunks on. Left out of the manifest while
    /// it has its defaults, so runs from before it existed record the same config.
    pub dense: DenseSettings,
    pub evaluate: EvaluateSection,
    /// The statistics of `hierarag analyze` ([analysis]; the seed defaults to the run's).
    pub analysis: hierarag_analysis::Settings,
    /// The default model for every role.
    pub llm: LlmConfig,
    pub tag: TagTable,
    pub judge: JudgeTable,
    pub embeddings: EmbeddingsConfig,
    /// The systems that answer the benchmark (`[[system]]`), in the file's order. Empty: one
    /// builtin system, the `[answer]` pipeline, whose files sit at the top of the run
    /// directory (as before systems existed).
    pub systems: Vec<SystemConfig>,
    /// A human-written benchmark answered beside the generated one (`[human]`): imported,
    /// tagged, answered by the same systems and set beside it in `validity.json`.
    pub human: Option<HumanSection>,
    /// A limit on what the run spends (`[budget]`); not recorded in the manifest's config, so
    /// that a run stopped by it continues with a larger one.
    pub budget: Option<BudgetSection>,
}

/// `[budget]`: the most a run directory may spend, over all its runs; a call that would pass
/// it is not sent and the run stops there.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetSection {
    /// In the currency of the roles' `price_*_per_mtok`.
    #[serde(default)]
    pub max_cost: Option<f64>,
    /// Prompt and completion tokens of every chat call together.
    #[serde(default)]
    pub max_tokens: Option<u64>,
}

/// `[human]`: a benchmark of questions people wrote, in a file `hierarag import` reads (JSONL
/// or a JSON list, or CSV), its fields mapped as `import` maps them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HumanSection {
    /// The file, relative to the working directory.
    pub file: PathBuf,
    /// `jsonl` or `csv` [default: by the file's extension].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<HumanFormat>,
    /// The field of the question's id [default: none; ids from the line numbers].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The field of the question [default: `question`].
    #[serde(default = "default_question_field")]
    pub question: String,
    /// The field of the reference answer [default: `answer`]; `""` for a file without
    /// reference answers (the retrieval metrics are then the only ones compared).
    #[serde(default = "default_answer_field")]
    pub answer: String,
    /// The field of the relevant documents' ids, a list or one id [default: none; the
    /// retrieval metrics and the properties that need a relevant document are then absent].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doc_ids: Option<String>,
}

/// The format of a `[human]` file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HumanFormat {
    Jsonl,
    Csv,
}

impl HumanSection {
    /// The format: the one set, else `csv` for a `.csv` file and `jsonl` otherwise.
    pub fn format(&self) -> HumanFormat {
        self.format.unwrap_or_else(|| {
            if self
                .file
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
            {
                HumanFormat::Csv
            } else {
                HumanFormat::Jsonl
            }
        })
    }
}

fn default_question_field() -> String {
    "question".into()
}
fn default_answer_field() -> String {
    "answer".into()
}

/// `[generate]` (its model `[generate.llm]`) and `[filter.llm]`.
#[derive(Debug, Clone)]
pub struct GenerateTable {
    pub settings: GenerateSettings,
    pub llm: Option<LlmConfig>,
    /// The filter's model (default: the generator's).
    pub filter_llm: Option<LlmConfig>,
    /// Items generated at once (default: twice the model's concurrency).
    pub concurrency: usize,
}

/// `[answer]` (its model `[answer.llm]`): the builtin pipeline.
#[derive(Debug, Clone)]
pub struct AnswerTable {
    pub settings: AnswerSettings,
    pub retriever: RetrieverKind,
    pub llm: Option<LlmConfig>,
    pub concurrency: usize,
}

/// `[tag]` (its model `[tag.llm]`; the seed defaults to the run's).
#[derive(Debug, Clone)]
pub struct TagTable {
    pub settings: hierarag_tag::TagSettings,
    pub llm: Option<LlmConfig>,
    pub concurrency: usize,
}

/// `[judge]` (its model `[judge.llm]`; the seed defaults to the run's). `hierarag run` grades
/// every answer with it only when the config has a `[judge]` table (`on`); `hierarag judge`
/// uses these settings either way.
#[derive(Debug, Clone)]
pub struct JudgeTable {
    pub settings: hierarag_judge::JudgeSettings,
    pub llm: Option<LlmConfig>,
    pub concurrency: usize,
    pub on: bool,
    /// `[judge] benchmark = true`: the judge also rates every benchmark QA pair as the
    /// annotators do (`benchmark.judge.jsonl`).
    pub benchmark: bool,
    /// `[judge.screen]`: after generation the judge rates every QA pair and the pairs below
    /// these bounds leave the benchmark for `screened.jsonl` (off without the table).
    pub screen: Option<hierarag_judge::ScreenSettings>,
}

/// A run config as `manifest.json` records it: flat, the roles' models and concurrencies
/// beside the other tables, in the order runs have always recorded them.
#[derive(Serialize)]
struct Recorded<'a> {
    source: &'a Path,
    run: &'a RunSection,
    corpus: Option<&'a CorpusSection>,
    index: &'a IndexSection,
    taxonomy: Option<&'a Path>,
    plan: &'a PlanSection,
    generate: &'a GenerateSettings,
    generate_concurrency: usize,
    answer: &'a AnswerSettings,
    retriever: RetrieverKind,
    #[serde(skip_serializing_if = "is_default_dense")]
    dense: &'a DenseSettings,
    answer_concurrency: usize,
    evaluate: &'a EvaluateSection,
    analysis: &'a hierarag_analysis::Settings,
    llm: &'a LlmConfig,
    generate_llm: Option<&'a LlmConfig>,
    filter_llm: Option<&'a LlmConfig>,
    answer_llm: Option<&'a LlmConfig>,
    tag: &'a hierarag_tag::TagSettings,
    tag_llm: Option<&'a LlmConfig>,
    tag_concurrency: usize,
    judge: &'a hierarag_judge::JudgeSettings,
    judge_llm: Option<&'a LlmConfig>,
    judge_concurrency: usize,
    judge_on: bool,
    judge_benchmark: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    judge_screen: Option<&'a hierarag_judge::ScreenSettings>,
    embeddings: &'a EmbeddingsConfig,
    #[serde(skip_serializing_if = "<[SystemConfig]>::is_empty")]
    systems: &'a [SystemConfig],
    #[serde(skip_serializing_if = "Option::is_none")]
    human: Option<&'a HumanSection>,
}

impl Serialize for RunConfig {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Recorded {
            source: &self.source,
            run: &self.run,
            corpus: self.corpus.as_ref(),
            index: &self.index,
            taxonomy: self.taxonomy.as_deref(),
            plan: &self.plan,
            generate: &self.generate.settings,
            generate_concurrency: self.generate.concurrency,
            answer: &self.answer.settings,
            retriever: self.answer.retriever,
            dense: &self.dense,
            answer_concurrency: self.answer.concurrency,
            evaluate: &self.evaluate,
            analysis: &self.analysis,
            llm: &self.llm,
            generate_llm: self.generate.llm.as_ref(),
            filter_llm: self.generate.filter_llm.as_ref(),
            answer_llm: self.answer.llm.as_ref(),
            tag: &self.tag.settings,
            tag_llm: self.tag.llm.as_ref(),
            tag_concurrency: self.tag.concurrency,
            judge: &self.judge.settings,
            judge_llm: self.judge.llm.as_ref(),
            judge_concurrency: self.judge.concurrency,
            judge_on: self.judge.on,
            judge_benchmark: self.judge.benchmark,
            judge_screen: self.judge.screen.as_ref(),
            embeddings: &self.embeddings,
            systems: &self.systems,
            human: self.human.as_ref(),
        }
        .serialize(serializer)
    }
}

/// The name of the implicit system of a config without `[[system]]` (its files sit at the top
/// of the run directory).
pub const MAIN_SYSTEM: &str = "main";

/// One RAG system a run answers its benchmark with (`[[system]]`); its answers, scores and
/// failures go to `systems/<name>/` of the run directory.
#[derive(Debug, Clone, Serialize)]
pub struct SystemConfig {
    pub name: String,
    #[serde(flatten)]
    pub kind: SystemKind,
    /// Where the table is, `FILE: [system NAME] (line L, column C)`, for the errors of
    /// [`RunConfig::check_systems`]; empty for the implicit system.
    #[serde(skip)]
    pub place: String,
}

/// What a system is.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SystemKind {
    /// The pipeline this tool builds: a retriever over the run's index and an LLM.
    Builtin(BuiltinSystem),
    /// Answers made elsewhere, read from a file.
    File(FileSystem),
    /// A program speaking JSON lines on its stdin and stdout.
    Command(CommandSystemConfig),
    /// A service answering JSON POSTs.
    Http(HttpSystemConfig),
}

/// `kind = "http"`: a service POSTed a JSON body per question, its reply read by JSON Pointers.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpSystemConfig {
    /// Where the questions are POSTed, e.g. `http://127.0.0.1:8080/ask`.
    pub url: String,
    /// Headers sent with every request; `${VAR}` in a value is the environment variable `VAR`,
    /// read when the system starts (so a secret stays out of the config, the manifest, the
    /// cache and the logs, which keep the `${VAR}` form).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The JSON body; `{question}` and `{id}` in its strings are the question and its id.
    #[serde(default = "default_http_body")]
    pub body: serde_json::Value,
    /// JSON Pointer to the answer text in the reply.
    #[serde(default = "default_answer_pointer")]
    pub answer: String,
    /// JSON Pointer to the list of contexts (strings, or objects); none: no contexts.
    #[serde(default)]
    pub contexts: Option<String>,
    /// Inside a context object, the pointer to its text.
    #[serde(default = "default_context_text")]
    pub context_text: String,
    /// Inside a context object, the pointer to its document id.
    #[serde(default = "default_context_doc_id")]
    pub context_doc_id: String,
    /// Requests in flight at once.
    #[serde(default = "default_command_concurrency")]
    pub concurrency: usize,
    /// Seconds one attempt may take.
    #[serde(default = "default_command_timeout_s")]
    pub timeout_s: f64,
    /// Attempts per question, the first included.
    #[serde(default = "default_http_max_attempts")]
    pub max_attempts: u32,
    /// Backoff ceiling after the first failure, in seconds; it doubles after each further one.
    #[serde(default = "default_http_backoff_s")]
    pub backoff_s: f64,
    #[serde(default = "default_http_max_backoff_s")]
    pub max_backoff_s: f64,
    /// The response cache, relative to the run directory, or `"off"` (default:
    /// `systems/<name>/http-cache.sqlite`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheSetting>,
    /// The longest reply read, in bytes: a longer one fails its question (not retried, not
    /// cached). Written to the manifest only when set otherwise, so that a run started before
    /// the key existed continues.
    #[serde(
        default = "default_max_reply_bytes",
        skip_serializing_if = "is_default_max_reply_bytes"
    )]
    pub max_reply_bytes: usize,
}

fn default_max_reply_bytes() -> usize {
    hierarag_systems::DEFAULT_MAX_REPLY_BYTES
}
fn is_default_max_reply_bytes(bytes: &usize) -> bool {
    *bytes == hierarag_systems::DEFAULT_MAX_REPLY_BYTES
}
fn default_max_log_bytes() -> u64 {
    hierarag_systems::DEFAULT_MAX_LOG_BYTES
}
fn is_default_max_log_bytes(bytes: &u64) -> bool {
    *bytes == hierarag_systems::DEFAULT_MAX_LOG_BYTES
}

fn default_http_body() -> serde_json::Value {
    serde_json::json!({"id": "{id}", "question": "{question}"})
}
fn default_answer_pointer() -> String {
    "/answer".into()
}
fn default_context_text() -> String {
    "/text".into()
}
fn default_context_doc_id() -> String {
    "/doc_id".into()
}
fn default_http_max_attempts() -> u32 {
    5
}
fn default_http_backoff_s() -> f64 {
    1.0
}
fn default_http_max_backoff_s() -> f64 {
    60.0
}

impl HttpSystemConfig {
    /// The headers with `${VAR}` read from the environment; an error names the header.
    pub fn headers_from_env(&self) -> Result<Vec<(String, String)>, String> {
        self.headers
            .iter()
            .map(|(key, value)| {
                // What the environment fills in is a secret of the process (a token), and so
                // is the header's whole value that holds it.
                let lookup = |name: &str| {
                    let found = std::env::var(name).ok();
                    found.inspect(|found| hierarag_fs::secrets::register(found))
                };
                hierarag_systems::expand_env(value, lookup)
                    .inspect(|expanded| {
                        if expanded != value {
                            hierarag_fs::secrets::register(expanded);
                        }
                    })
                    .map(|value| (key.clone(), value))
                    .map_err(|message| format!("headers.{key}: {message}"))
            })
            .collect()
    }

    /// The response cache file of system `name` in `run_dir`, unless it is off.
    pub fn cache_path(&self, run_dir: &Path, name: &str) -> Option<PathBuf> {
        match &self.cache {
            Some(setting) => setting.resolve(run_dir),
            None => Some(run_dir.join("systems").join(name).join("http-cache.sqlite")),
        }
    }

    /// What the LLM layer's client needs: the limit, timeout, retries and cache.
    pub fn client_settings(&self, run_dir: &Path, name: &str) -> hierarag_llm::ClientSettings {
        hierarag_llm::ClientSettings::from_limits(
            self.concurrency,
            self.timeout_s,
            self.max_attempts,
            self.backoff_s,
            self.max_backoff_s,
            self.cache_path(run_dir, name),
        )
    }

    /// Where the answer and contexts are in a reply.
    pub fn mapping(&self) -> hierarag_systems::ReplyMapping {
        hierarag_systems::ReplyMapping {
            answer: self.answer.clone(),
            contexts: self.contexts.clone(),
            context_text: Some(self.context_text.clone()),
            context_doc_id: Some(self.context_doc_id.clone()),
        }
    }

    /// The first problem of the config, as (key, message): a URL that is not http(s), a template
    /// with an unknown placeholder, a pointer that is not one, a malformed `${VAR}`, a limit
    /// that cannot work. The environment is not read here.
    fn problem(&self) -> Option<(&'static str, String)> {
        if let Err(message) = hierarag_llm::check_service_url(&self.url) {
            return Some(("url", message));
        }
        let placeholders = match hierarag_systems::template_placeholders(
            &self.body,
            &hierarag_systems::PLACEHOLDERS,
        ) {
            Ok(placeholders) => placeholders,
            Err(message) => return Some(("body", message)),
        };
        if !placeholders.iter().any(|p| p == "question") {
            return Some((
                "body",
                "the body never sends the question: put \"{question}\" in one of its strings"
                    .into(),
            ));
        }
        let pointers = [
            ("answer", Some(&self.answer)),
            ("contexts", self.contexts.as_ref()),
            ("context_text", Some(&self.context_text)),
            ("context_doc_id", Some(&self.context_doc_id)),
        ];
        for (key, pointer) in pointers {
            if let Some(pointer) = pointer
                && let Err(message) = hierarag_systems::check_pointer(pointer)
            {
                return Some((key, message));
            }
        }
        for (key, value) in &self.headers {
            if let Err(message) = hierarag_systems::expand_env(value, |_| Some(String::new())) {
                return Some(("headers", format!("{key}: {message}")));
            }
        }
        if self.concurrency == 0 {
            return Some(("concurrency", "must be at least 1".into()));
        }
        if self.max_attempts == 0 {
            return Some(("max_attempts", "must be at least 1".into()));
        }
        if self.max_reply_bytes == 0 {
            return Some((
                "max_reply_bytes",
                "must be at least 1 (a number of bytes)".into(),
            ));
        }
        for (key, seconds) in [
            ("timeout_s", self.timeout_s),
            ("backoff_s", self.backoff_s),
            ("max_backoff_s", self.max_backoff_s),
        ] {
            if !(seconds.is_finite() && seconds >= 0.0) || (key == "timeout_s" && seconds == 0.0) {
                return Some((key, "must be a positive number of seconds".into()));
            }
        }
        None
    }
}

/// `kind = "command"`: a program started once, asked `{"id", "question"}` lines on its stdin,
/// answering `{"id", "answer", "contexts"}` lines on its stdout.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandSystemConfig {
    /// The program and its arguments, e.g. `["python3", "my_rag.py"]`.
    pub command: Vec<String>,
    /// Questions outstanding at once.
    #[serde(default = "default_command_concurrency")]
    pub concurrency: usize,
    /// Seconds one question may wait for its answer.
    #[serde(default = "default_command_timeout_s")]
    pub timeout_s: f64,
    /// Times the program is started again after it exits, over the stage.
    #[serde(default = "default_max_restarts")]
    pub max_restarts: u32,
    /// The longest answer line read from its stdout, in bytes: a longer one fails its
    /// question. Written to the manifest only when set otherwise (as the next key).
    #[serde(
        default = "default_max_reply_bytes",
        skip_serializing_if = "is_default_max_reply_bytes"
    )]
    pub max_reply_bytes: usize,
    /// The size of `command.log` past which it is renamed `command.log.1` and a new one begun.
    #[serde(
        default = "default_max_log_bytes",
        skip_serializing_if = "is_default_max_log_bytes"
    )]
    pub max_log_bytes: u64,
}

fn default_command_concurrency() -> usize {
    8
}
fn default_command_timeout_s() -> f64 {
    120.0
}
fn default_max_restarts() -> u32 {
    3
}

/// `kind = "builtin"`: the `[answer]` pipeline with some settings of its own.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuiltinSystem {
    /// The retriever (default: `[answer] retriever`).
    #[serde(default)]
    pub retriever: Option<RetrieverKind>,
    /// Chunks given to the model (default: `[answer] top_k`).
    #[serde(default)]
    pub top_k: Option<usize>,
    /// The answering model (`[system.llm]`; default: the `[answer]` one).
    #[serde(skip_deserializing, default)]
    pub llm: Option<LlmConfig>,
}

/// `kind = "file"`: answers from a file in one of the formats people have.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSystem {
    pub path: PathBuf,
    pub format: AnswerFileFormat,
    /// For `jsonl` and `csv`: which fields hold what.
    #[serde(default)]
    pub fields: FieldMap,
}

/// The formats of an answers file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnswerFileFormat {
    /// A Ragas `EvaluationDataset`, JSONL or CSV: `user_input`, `response`,
    /// `retrieved_contexts`, `retrieved_context_ids`.
    Ragas,
    /// DeepEval test cases, JSON (a list) or JSONL: `input`, `actual_output`,
    /// `retrieval_context`.
    Deepeval,
    /// RAGChecker's input JSON: `results[]` of `query_id`, `query`, `response`,
    /// `retrieved_context[{doc_id, text}]`.
    Ragchecker,
    /// This tool's own `answers.jsonl`.
    Hierarag,
    /// Any JSONL, with `[system.fields]`.
    Jsonl,
    /// Any CSV with a header row, with `[system.fields]`.
    Csv,
}

impl AnswerFileFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            AnswerFileFormat::Ragas => "ragas",
            AnswerFileFormat::Deepeval => "deepeval",
            AnswerFileFormat::Ragchecker => "ragchecker",
            AnswerFileFormat::Hierarag => "hierarag",
            AnswerFileFormat::Jsonl => "jsonl",
            AnswerFileFormat::Csv => "csv",
        }
    }
}

/// The fields of a `jsonl` or `csv` answers file: `answer` and one of `id` or `question` are
/// needed; `contexts` (a list of strings, or of objects with `text` and `doc_id`) and
/// `context_ids` (a list of document ids) are optional. In CSV a list is a JSON array in the
/// cell.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldMap {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub question: Option<String>,
    #[serde(default)]
    pub answer: Option<String>,
    #[serde(default)]
    pub contexts: Option<String>,
    #[serde(default)]
    pub context_ids: Option<String>,
}

/// `kind` of a `[[system]]`, as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum SystemKindName {
    Builtin,
    Http,
    Command,
    File,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunSection {
    /// The run directory.
    pub dir: PathBuf,
    /// Seed of every random choice (plan, generation, answers).
    pub seed: u64,
    /// A benchmark file to answer instead of generating one (a `benchmark.jsonl` of another
    /// run, or the core set `core.jsonl` of `hierarag items`): the plan and generate stages are
    /// skipped and the file is copied into the run directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub benchmark: Option<PathBuf>,
}

impl Default for RunSection {
    fn default() -> RunSection {
        RunSection {
            dir: PathBuf::from("runs/run"),
            seed: 42,
            benchmark: None,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CorpusSection {
    /// Files, globs, directories, or `wiki-sample`. Required by `hierarag run`; a config of the
    /// stand-alone stages may have a `[corpus]` table with only `language`.
    #[serde(default)]
    pub inputs: Vec<String>,
    /// Detected from each path when absent.
    #[serde(default)]
    pub format: Option<CorpusFormat>,
    #[serde(default = "default_id_field")]
    pub id_field: String,
    #[serde(default = "default_text_field")]
    pub text_field: String,
    #[serde(default)]
    pub on_error: OnError,
    /// The corpus language (ISO 639-1; docs/design.md, "Languages"): the index's analyzer, the
    /// text metrics' tokenizers, the language prompts ask for and the refusal sentence. Left
    /// out of the resolved config when English, so that English runs record what they always
    /// did.
    #[serde(default, skip_serializing_if = "Language::is_english")]
    pub language: Language,
}

impl CorpusSection {
    /// The corpus as the reader takes it (`wiki-sample` not yet resolved).
    pub fn spec(&self) -> CorpusSpec {
        CorpusSpec {
            inputs: self.inputs.clone(),
            format: self.format,
            id_field: self.id_field.clone(),
            text_field: self.text_field.clone(),
        }
    }
}

fn default_id_field() -> String {
    "id".into()
}
fn default_text_field() -> String {
    "text".into()
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IndexSection {
    pub chunk_size: usize,
    pub chunk_overlap: usize,
    pub writer_heap_mb: usize,
    pub threads: usize,
}

impl Default for IndexSection {
    fn default() -> IndexSection {
        IndexSection {
            chunk_size: 512,
            chunk_overlap: 0,
            writer_heap_mb: 256,
            threads: 0,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PlanSection {
    pub min_words: Option<usize>,
    pub max_words: Option<usize>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EvaluateSection {
    /// Questions scored per step: their answers and references go to the embeddings in one
    /// call (the embedder cuts it into its own batches), and their scores are appended to
    /// `scores.jsonl` together.
    pub batch: usize,
}

impl Default for EvaluateSection {
    fn default() -> EvaluateSection {
        EvaluateSection { batch: 256 }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TaxonomySection {
    path: PathBuf,
}

/// The tables a run config may have.
const TABLES: &[&str] = &[
    "run",
    "corpus",
    "index",
    "taxonomy",
    "design",
    "plan",
    "generate",
    "filter",
    "answer",
    "dense",
    "evaluate",
    "analysis",
    "tag",
    "judge",
    "llm",
    "embeddings",
    "system",
    "human",
    "budget",
];

fn is_default_dense(settings: &&DenseSettings) -> bool {
    **settings == DenseSettings::default()
}

/// A run config's TOML with every value's place in the file, so that each error names the
/// line and column it is about, however deep in a table the value is read.
struct Document<'t> {
    text: &'t str,
    source: String,
    root: DeTable<'t>,
}

impl<'t> Document<'t> {
    fn parse(text: &'t str, source: &str) -> anyhow::Result<Document<'t>> {
        let root = DeTable::parse(text).map_err(|e| {
            anyhow::anyhow!(
                "{source}{}: {}",
                place(text, e.span()),
                e.message().trim_end()
            )
        })?;
        Ok(Document {
            text,
            source: source.to_string(),
            root: root.into_inner(),
        })
    }

    /// Takes top-level table `table` out of the document.
    fn table(&mut self, table: &str) -> anyhow::Result<Option<Section<'t>>> {
        let Some(value) = self.root.remove(table) else {
            return Ok(None);
        };
        let span = value.span();
        match value.into_inner() {
            DeValue::Table(entries) => Ok(Some(Section {
                name: table.to_string(),
                span,
                entries,
            })),
            other => bail!(
                "{}{}: `{table}` must be a table ([{table}]), not a {}",
                self.source,
                place(self.text, Some(span)),
                other.type_str()
            ),
        }
    }

    /// Takes the array of tables `[[name]]` out of the document, one section per table, each
    /// named `name #i` (1-based) until its caller renames it.
    fn array(&mut self, name: &str) -> anyhow::Result<Vec<Section<'t>>> {
        let Some(value) = self.root.remove(name) else {
            return Ok(Vec::new());
        };
        let span = value.span();
        let DeValue::Array(items) = value.into_inner() else {
            bail!(
                "{}{}: `{name}` must be an array of tables ([[{name}]])",
                self.source,
                place(self.text, Some(span))
            );
        };
        items
            .into_iter()
            .enumerate()
            .map(|(i, item)| {
                let span = item.span();
                match item.into_inner() {
                    DeValue::Table(entries) => Ok(Section {
                        name: format!("{name} #{}", i + 1),
                        span,
                        entries,
                    }),
                    _ => bail!(
                        "{}{}: each `{name}` must be a table ([[{name}]])",
                        self.source,
                        place(self.text, Some(span))
                    ),
                }
            })
            .collect()
    }

    /// Deserializes top-level table `table`, when present.
    fn typed<T: DeserializeOwned>(&mut self, table: &str) -> anyhow::Result<Option<T>> {
        match self.table(table)? {
            None => Ok(None),
            Some(section) => section.into_typed(self).map(Some),
        }
    }

    /// The error of a value read from this document, at its line and column.
    fn error(&self, table: &str, error: &toml::de::Error) -> anyhow::Error {
        anyhow::anyhow!(
            "{}: [{table}]{}: {}",
            self.source,
            place(self.text, error.span()),
            error.message().trim_end()
        )
    }

    /// An error about the value at `span` of table `table`.
    fn error_at(
        &self,
        table: &str,
        span: std::ops::Range<usize>,
        message: impl std::fmt::Display,
    ) -> anyhow::Error {
        anyhow::anyhow!(
            "{}: [{table}]{}: {message}",
            self.source,
            place(self.text, Some(span))
        )
    }

    /// Fails on a table left over after every known one was taken: a typo.
    fn finish(self) -> anyhow::Result<()> {
        if let Some((key, _)) = self.root.iter().next() {
            bail!(
                "{}{}: unknown table `{}`, expected one of {}",
                self.source,
                place(self.text, Some(key.span())),
                key.get_ref(),
                TABLES.join(", ")
            );
        }
        Ok(())
    }
}

/// `[budget]`, its limits checked at their lines: a limit is a number of 0 or more (NaN would
/// turn the budget off without a word).
fn budget_of(document: &mut Document<'_>) -> anyhow::Result<Option<BudgetSection>> {
    let Some(mut section) = document.table("budget")? else {
        return Ok(None);
    };
    let max_cost = section.take::<f64>("max_cost", document)?;
    if let Some((cost, span)) = &max_cost
        && !(cost.is_finite() && *cost >= 0.0)
    {
        return Err(document.error_at(
            "budget.max_cost",
            span.clone(),
            format!("{cost} is not a limit: give a number of 0 or more"),
        ));
    }
    let max_tokens = section.take::<i64>("max_tokens", document)?;
    if let Some((tokens, span)) = &max_tokens
        && *tokens < 0
    {
        return Err(document.error_at(
            "budget.max_tokens",
            span.clone(),
            format!("{tokens} is not a limit: give a number of 0 or more"),
        ));
    }
    // Nothing else is known in the table: a typo is an error at its place.
    section.into_typed::<BudgetRest>(document)?;
    Ok(Some(BudgetSection {
        max_cost: max_cost.map(|(cost, _)| cost),
        max_tokens: max_tokens.map(|(tokens, _)| tokens as u64),
    }))
}

/// What `[budget]` may hold besides its limits: nothing.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BudgetRest {}

/// A table of the document, its entries still carrying their places.
struct Section<'t> {
    name: String,
    span: std::ops::Range<usize>,
    entries: DeTable<'t>,
}

impl<'t> Section<'t> {
    /// Takes `key` out of the table.
    fn take<T: DeserializeOwned>(
        &mut self,
        key: &str,
        document: &Document<'_>,
    ) -> anyhow::Result<Option<(T, std::ops::Range<usize>)>> {
        let Some(value) = self.entries.remove(key) else {
            return Ok(None);
        };
        let span = value.span();
        let typed = T::deserialize(toml::de::ValueDeserializer::from(value))
            .map_err(|e| document.error(&format!("{}.{key}", self.name), &e))?;
        Ok(Some((typed, span)))
    }

    /// The rest of the table as `T`.
    fn into_typed<T: DeserializeOwned>(self, document: &Document<'_>) -> anyhow::Result<T> {
        let value = toml::Spanned::new(self.span, DeValue::Table(self.entries));
        T::deserialize(toml::de::ValueDeserializer::from(value))
            .map_err(|e| document.error(&self.name, &e))
    }
}

/// ` (line L, column C)` of a byte span's start in `text`; empty without a span.
fn place(text: &str, span: Option<std::ops::Range<usize>>) -> String {
    span.map(|span| {
        let before = &text[..span.start.min(text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        format!(" (line {line}, column {column})")
    })
    .unwrap_or_default()
}

/// An `[llm]` table found in `section` under `llm`, validated.
fn llm_of(section: &mut Section<'_>, document: &Document<'_>) -> anyhow::Result<Option<LlmConfig>> {
    let Some((config, _)) = section.take::<LlmConfig>("llm", document)? else {
        return Ok(None);
    };
    config.validate(&document.source)?;
    Ok(Some(config))
}

/// Where `program` would be started from: itself when it names a path, else the first
/// executable file of that name on `PATH`, as the shell looks it up.
fn find_program(program: &str) -> Option<PathBuf> {
    let executable = |path: &Path| {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            path.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        }
        #[cfg(not(unix))]
        {
            path.is_file()
        }
    };
    if program.contains(std::path::MAIN_SEPARATOR) || program.contains('/') {
        let path = PathBuf::from(program);
        return executable(&path).then_some(path);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|path| executable(path))
}

/// A system's name names a folder: 1 to 64 letters, digits, `-`, `_` or `.` (not first).
fn valid_system_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !name.starts_with('.')
}

/// [`valid_system_name`], as an error that says what a name may hold.
pub fn check_system_name(name: &str) -> anyhow::Result<()> {
    if valid_system_name(name) {
        Ok(())
    } else {
        bail!(
            "system name {name:?}: use 1 to 64 letters, digits, `-`, `_` or `.` (not first), as \
it names a folder"
        )
    }
}

/// The `[[system]]` tables: each with a `name` (letters, digits, `-`, `_`, `.`; unique) and a
/// `kind`, then the kind's own keys.
fn systems_of(document: &mut Document<'_>) -> anyhow::Result<Vec<SystemConfig>> {
    let mut systems: Vec<SystemConfig> = Vec::new();
    for mut section in document.array("system")? {
        let Some((name, name_span)) = section.take::<String>("name", document)? else {
            return Err(document.error_at(
                &section.name,
                section.span.clone(),
                "missing `name` (the system's name in reports and its folder systems/<name>/)",
            ));
        };
        if !valid_system_name(&name) {
            return Err(document.error_at(
                &section.name,
                name_span,
                format!(
                    "name {name:?}: use 1 to 64 letters, digits, `-`, `_` or `.` (not first), \
as it names a folder"
                ),
            ));
        }
        if systems.iter().any(|s| s.name == name) {
            return Err(document.error_at(
                &section.name,
                name_span,
                format!("a second system named {name:?}: names must be unique"),
            ));
        }
        section.name = format!("system {name}");
        let table_span = section.span.clone();
        let Some((kind, _)) = section.take::<SystemKindName>("kind", document)? else {
            return Err(document.error_at(
                &section.name,
                section.span.clone(),
                "missing `kind`: builtin, http, command or file",
            ));
        };
        let kind = match kind {
            SystemKindName::Builtin => {
                let llm = llm_of(&mut section, document)?;
                let span = section.span.clone();
                let mut builtin: BuiltinSystem = section.into_typed(document)?;
                if builtin.top_k == Some(0) {
                    return Err(document.error_at(
                        &format!("system {name}"),
                        span,
                        "top_k must be at least 1",
                    ));
                }
                builtin.llm = llm;
                SystemKind::Builtin(builtin)
            }
            SystemKindName::File => {
                let span = section.span.clone();
                let file: FileSystem = section.into_typed(document)?;
                let fields = &file.fields;
                let mapped = matches!(file.format, AnswerFileFormat::Jsonl | AnswerFileFormat::Csv);
                if mapped
                    && (fields.answer.is_none()
                        || (fields.id.is_none() && fields.question.is_none()))
                {
                    return Err(document.error_at(
                        &format!("system {name}"),
                        span,
                        format!(
                            "format {} needs [system.fields] with `answer` and `id` or `question` \
(the names of those fields in the file)",
                            file.format.as_str()
                        ),
                    ));
                }
                if !mapped && *fields != FieldMap::default() {
                    return Err(document.error_at(
                        &format!("system {name}"),
                        span,
                        format!(
                            "format {} has fixed field names; [system.fields] is for jsonl and csv",
                            file.format.as_str()
                        ),
                    ));
                }
                SystemKind::File(file)
            }
            SystemKindName::Command => {
                let span = section.span.clone();
                let command: CommandSystemConfig = section.into_typed(document)?;
                let problem = if command.command.is_empty() || command.command[0].is_empty() {
                    Some(
                        "command is empty: give the program and its arguments, e.g. \
[\"python3\", \"my_rag.py\"]",
                    )
                } else if command.concurrency == 0 {
                    Some("concurrency must be at least 1")
                } else if !(command.timeout_s > 0.0 && command.timeout_s.is_finite()) {
                    Some("timeout_s must be a positive number of seconds")
                } else if command.max_reply_bytes == 0 {
                    Some("max_reply_bytes must be at least 1 (a number of bytes)")
                } else if command.max_log_bytes == 0 {
                    Some("max_log_bytes must be at least 1 (a number of bytes)")
                } else {
                    None
                };
                if let Some(problem) = problem {
                    return Err(document.error_at(&format!("system {name}"), span, problem));
                }
                SystemKind::Command(command)
            }
            SystemKindName::Http => {
                let spans: BTreeMap<String, std::ops::Range<usize>> = section
                    .entries
                    .iter()
                    .map(|(key, value)| (key.get_ref().to_string(), value.span()))
                    .collect();
                let span = section.span.clone();
                let http: HttpSystemConfig = section.into_typed(document)?;
                if let Some((key, problem)) = http.problem() {
                    return Err(document.error_at(
                        &format!("system {name}"),
                        spans.get(key).cloned().unwrap_or(span),
                        format!("{key}: {problem}"),
                    ));
                }
                SystemKind::Http(http)
            }
        };
        let place = format!(
            "{}: [system {name}]{}",
            document.source,
            place(document.text, Some(table_span))
        );
        systems.push(SystemConfig { name, kind, place });
    }
    Ok(systems)
}

impl RunConfig {
    pub fn load(path: &Path) -> anyhow::Result<RunConfig> {
        let text = hierarag_fs::read_text(path)
            .with_context(|| format!("{}: cannot read the run config", path.display()))?;
        RunConfig::parse(&text, path)
    }

    /// A config for `hierarag run`: `[corpus]` is required.
    pub fn parse(text: &str, path: &Path) -> anyhow::Result<RunConfig> {
        RunConfig::parse_inner(text, path, true)
    }

    fn parse_inner(text: &str, path: &Path, require_corpus: bool) -> anyhow::Result<RunConfig> {
        let source = path.display().to_string();
        let mut document = Document::parse(text, &source)?;
        let run: RunSection = document.typed("run")?.unwrap_or_default();
        let corpus_section = document.table("corpus")?;
        let corpus_span = corpus_section.as_ref().map(|c| c.span.clone());
        let corpus: Option<CorpusSection> = corpus_section
            .map(|section| section.into_typed(&document))
            .transpose()?;
        let index: IndexSection = document.typed("index")?.unwrap_or_default();
        let taxonomy: Option<TaxonomySection> = document.typed("taxonomy")?;
        // Checked now so that a typo fails before any work; `hierarag plan` reads it again.
        let _design: Option<hierarag_plan::DesignConfig> = document.typed("design")?;
        let plan_section = document.table("plan")?;
        let plan_span = plan_section.as_ref().map(|p| p.span.clone());
        let plan: PlanSection = plan_section
            .map(|section| section.into_typed(&document))
            .transpose()?
            .unwrap_or_default();
        if let (Some(min), Some(max), Some(span)) = (plan.min_words, plan.max_words, plan_span)
            && min > max
        {
            return Err(document.error_at(
                "plan",
                span,
                format!("min_words {min} is more than max_words {max}"),
            ));
        }
        let evaluate: EvaluateSection = document.typed("evaluate")?.unwrap_or_default();

        if require_corpus && corpus.is_none() {
            bail!("{source}: no [corpus] table; add one, e.g. [corpus] inputs = [\"wiki-sample\"]");
        }
        if let (true, Some(corpus), Some(span)) = (require_corpus, &corpus, corpus_span)
            && corpus.inputs.is_empty()
        {
            return Err(document.error_at("corpus", span, "inputs is empty"));
        }

        let llm = match document.typed::<LlmConfig>("llm")? {
            Some(config) => {
                config.validate(&source)?;
                config
            }
            None => LlmConfig::new(ChatBackendKind::Embedded, ""),
        };
        let embeddings = match document.typed::<EmbeddingsConfig>("embeddings")? {
            Some(config) => {
                config.validate(&source)?;
                config
            }
            None => EmbeddingsConfig::new(EmbedBackendKind::Embedded, ""),
        };

        let (generate, generate_llm, generate_concurrency) = match document.table("generate")? {
            None => (GenerateSettings::default(), None, None),
            Some(mut section) => {
                let llm = llm_of(&mut section, &document)?;
                let concurrency = section.take::<usize>("concurrency", &document)?;
                let span = section.span.clone();
                let settings: GenerateSettings = section.into_typed(&document)?;
                if settings.candidates == 0 || settings.max_attempts == 0 {
                    return Err(document.error_at(
                        "generate",
                        span,
                        "candidates and max_attempts must be at least 1",
                    ));
                }
                (settings, llm, concurrency.map(|(n, _)| n))
            }
        };

        let filter_llm = match document.table("filter")? {
            None => None,
            Some(mut section) => {
                let llm = llm_of(&mut section, &document)?;
                if let Some((key, _)) = section.entries.iter().next() {
                    return Err(document.error_at(
                        "filter",
                        key.span(),
                        format!(
                            "takes only an llm table, not {:?} (the filter is switched by [generate] filter)",
                            key.get_ref()
                        ),
                    ));
                }
                llm
            }
        };

        let (answer, retriever, answer_llm, answer_concurrency) = match document.table("answer")? {
            None => (
                AnswerSettings::default(),
                RetrieverKind::default(),
                None,
                None,
            ),
            Some(mut section) => {
                let llm = llm_of(&mut section, &document)?;
                let concurrency = section.take::<usize>("concurrency", &document)?;
                let retriever = section.take::<RetrieverKind>("retriever", &document)?;
                let span = section.span.clone();
                let settings: AnswerSettings = section.into_typed(&document)?;
                if settings.top_k == 0 {
                    return Err(document.error_at("answer", span, "top_k must be at least 1"));
                }
                (
                    settings,
                    retriever.map(|(r, _)| r).unwrap_or_default(),
                    llm,
                    concurrency.map(|(n, _)| n),
                )
            }
        };

        let dense = match document.table("dense")? {
            None => DenseSettings::default(),
            Some(section) => {
                let span = section.span.clone();
                let settings: DenseSettings = section.into_typed(&document)?;
                settings
                    .check()
                    .map_err(|e| document.error_at("dense", span, e))?;
                settings
            }
        };

        let analysis = match document.table("analysis")? {
            None => hierarag_analysis::Settings {
                seed: run.seed,
                ..hierarag_analysis::Settings::default()
            },
            Some(section) => {
                let has_seed = section.entries.get("seed").is_some();
                let span = section.span.clone();
                let mut settings: hierarag_analysis::Settings = section.into_typed(&document)?;
                if !has_seed {
                    settings.seed = run.seed;
                }
                settings
                    .check()
                    .map_err(|e| document.error_at("analysis", span, e))?;
                settings
            }
        };
        let (tag, tag_llm, tag_concurrency) = match document.table("tag")? {
            None => (
                hierarag_tag::TagSettings {
                    seed: run.seed,
                    ..hierarag_tag::TagSettings::default()
                },
                None,
                None,
            ),
            Some(mut section) => {
                let llm = llm_of(&mut section, &document)?;
                let concurrency = section.take::<usize>("concurrency", &document)?;
                let has_seed = section.entries.get("seed").is_some();
                let span = section.span.clone();
                let mut settings: hierarag_tag::TagSettings = section.into_typed(&document)?;
                if !has_seed {
                    settings.seed = run.seed;
                }
                if settings.votes == 0 {
                    return Err(document.error_at("tag", span, "votes must be at least 1"));
                }
                (settings, llm, concurrency.map(|(n, _)| n))
            }
        };
        let (judge, judge_llm, judge_concurrency, judge_on, judge_benchmark, judge_screen) =
            match document.table("judge")? {
                None => (
                    hierarag_judge::JudgeSettings {
                        seed: run.seed,
                        ..hierarag_judge::JudgeSettings::default()
                    },
                    None,
                    None,
                    false,
                    false,
                    None,
                ),
                Some(mut section) => {
                    let llm = llm_of(&mut section, &document)?;
                    let concurrency = section.take::<usize>("concurrency", &document)?;
                    let benchmark = section.take::<bool>("benchmark", &document)?;
                    let screen =
                        section.take::<hierarag_judge::ScreenSettings>("screen", &document)?;
                    if let Some((screen, span)) = &screen {
                        screen.validate().map_err(|message| {
                            document.error_at("judge.screen", span.clone(), &message)
                        })?;
                    }
                    let has_seed = section.entries.get("seed").is_some();
                    let span = section.span.clone();
                    let mut settings: hierarag_judge::JudgeSettings =
                        section.into_typed(&document)?;
                    if !has_seed {
                        settings.seed = run.seed;
                    }
                    if settings.max_tokens < 16 {
                        return Err(document.error_at(
                            "judge",
                            span,
                            "max_tokens must be at least 16 (the reply is a small JSON object \
with a reason)",
                        ));
                    }
                    (
                        settings,
                        llm,
                        concurrency.map(|(n, _)| n),
                        true,
                        benchmark.is_some_and(|(b, _)| b),
                        screen.map(|(screen, _)| screen),
                    )
                }
            };
        let systems = systems_of(&mut document)?;
        let human: Option<HumanSection> = document.typed("human")?;
        let budget = budget_of(&mut document)?;
        if let Some(budget) = &budget
            && budget.max_cost.is_none()
            && budget.max_tokens.is_none()
        {
            bail!(
                "{}: [budget] needs max_cost or max_tokens (or both)",
                path.display()
            );
        }
        document.finish()?;

        let role_concurrency = |role: &Option<LlmConfig>| role.as_ref().unwrap_or(&llm).concurrency;
        Ok(RunConfig {
            source: path.to_path_buf(),
            generate: GenerateTable {
                concurrency: generate_concurrency
                    .unwrap_or_else(|| 2 * role_concurrency(&generate_llm)),
                settings: generate,
                llm: generate_llm,
                filter_llm,
            },
            answer: AnswerTable {
                concurrency: answer_concurrency
                    .unwrap_or_else(|| 2 * role_concurrency(&answer_llm)),
                settings: answer,
                retriever,
                llm: answer_llm,
            },
            tag: TagTable {
                concurrency: tag_concurrency.unwrap_or_else(|| 2 * role_concurrency(&tag_llm)),
                settings: tag,
                llm: tag_llm,
            },
            judge: JudgeTable {
                concurrency: judge_concurrency.unwrap_or_else(|| 2 * role_concurrency(&judge_llm)),
                settings: judge,
                llm: judge_llm,
                on: judge_on,
                benchmark: judge_benchmark,
                screen: judge_screen,
            },
            run,
            corpus,
            index,
            taxonomy: taxonomy.map(|t| t.path),
            plan,
            dense,
            evaluate,
            analysis,
            llm,
            embeddings,
            systems,
            human,
            budget,
        })
    }

    /// The generator's model config.
    pub fn generator_llm(&self) -> &LlmConfig {
        self.generate.llm.as_ref().unwrap_or(&self.llm)
    }

    /// The filter's model config: its own, else the generator's.
    pub fn filter_llm(&self) -> &LlmConfig {
        self.generate
            .filter_llm
            .as_ref()
            .unwrap_or_else(|| self.generator_llm())
    }

    /// The tagger's model config (`[tag.llm]`, else `[llm]`).
    pub fn tagger_llm(&self) -> &LlmConfig {
        self.tag.llm.as_ref().unwrap_or(&self.llm)
    }

    /// The judge's model config (`[judge.llm]`, else `[llm]`).
    pub fn judge_llm(&self) -> &LlmConfig {
        self.judge.llm.as_ref().unwrap_or(&self.llm)
    }

    /// The answering model config.
    pub fn answerer_llm(&self) -> &LlmConfig {
        self.answer.llm.as_ref().unwrap_or(&self.llm)
    }

    /// The systems to answer with: the `[[system]]` tables, or the one implicit builtin
    /// system named [`MAIN_SYSTEM`].
    pub fn answering_systems(&self) -> Vec<SystemConfig> {
        if !self.systems.is_empty() {
            return self.systems.clone();
        }
        vec![SystemConfig {
            name: MAIN_SYSTEM.into(),
            kind: SystemKind::Builtin(BuiltinSystem {
                retriever: None,
                top_k: None,
                llm: None,
            }),
            place: String::new(),
        }]
    }

    /// What each system needs from this machine, checked before any stage runs so that a
    /// run does not fail at its answer stage after hours of generation: every `${VAR}` of an
    /// http system's headers set, a file system's answers file there, a command system's
    /// program found. Every problem is listed, each with the file and line of its table.
    pub fn check_systems(&self) -> anyhow::Result<()> {
        let mut problems = Vec::new();
        for system in &self.systems {
            let problem = match &system.kind {
                SystemKind::Builtin(_) => None,
                SystemKind::Http(http) => http.headers_from_env().err(),
                SystemKind::File(file) => (!file.path.is_file()).then(|| {
                    format!(
                        "path: {}: no such file (the answers the system made)",
                        file.path.display()
                    )
                }),
                SystemKind::Command(command) => {
                    let program = &command.command[0];
                    find_program(program).is_none().then(|| {
                        format!(
                            "command: program {program:?} not found{}",
                            if program.contains('/') {
                                String::new()
                            } else {
                                " on PATH".to_owned()
                            }
                        )
                    })
                }
            };
            if let Some(problem) = problem {
                problems.push(format!("{}: {problem}", system.place));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            bail!("{}", problems.join("\n"))
        }
    }

    /// This config with a builtin system's own settings in place of `[answer]`'s.
    pub fn for_builtin(&self, system: &BuiltinSystem) -> RunConfig {
        let mut config = self.clone();
        if let Some(retriever) = system.retriever {
            config.answer.retriever = retriever;
        }
        if let Some(k) = system.top_k {
            config.answer.settings.top_k = k;
        }
        if let Some(llm) = &system.llm {
            config.answer.llm = Some(llm.clone());
            config.answer.concurrency = 2 * llm.concurrency;
        }
        config
    }

    /// The resolved config as JSON, for the manifest.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a run config serialises")
    }
}

/// The model settings of a run config for the stand-alone `generate`/`answer`/`evaluate`
/// commands: the file's, or the embedded defaults without a file.
pub fn model_config(path: Option<&Path>) -> anyhow::Result<RunConfig> {
    // The stand-alone commands take their inputs from the command line, so [corpus] is
    // optional here.
    match path {
        Some(path) => {
            let text = hierarag_fs::read_text(path)
                .with_context(|| format!("{}: cannot read the run config", path.display()))?;
            RunConfig::parse_inner(&text, path, false)
        }
        None => RunConfig::parse_inner("", Path::new("(defaults)"), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_corpus_language_is_english_by_default_and_recorded_only_when_it_is_not() {
        let english =
            RunConfig::parse("[corpus]\ninputs = [\"a\"]\n", Path::new("r.toml")).unwrap();
        assert!(english.corpus.as_ref().unwrap().language.is_english());
        assert!(english.to_json()["corpus"].get("language").is_none());
        let korean = RunConfig::parse(
            "[corpus]\ninputs = [\"a\"]\nlanguage = \"ko\"\n",
            Path::new("r.toml"),
        )
        .unwrap();
        assert_eq!(korean.to_json()["corpus"]["language"], "ko");
        let error = RunConfig::parse(
            "[corpus]\ninputs = [\"a\"]\nlanguage = \"kr\"\n",
            Path::new("r.toml"),
        )
        .unwrap_err();
        let message = format!("{error:#}");
        assert!(message.contains("unknown language \"kr\""), "{message}");
        // The stand-alone stages' config may name only the language; `hierarag run` needs inputs.
        let path =
            std::env::temp_dir().join(format!("hierarag-language-{}.toml", std::process::id()));
        std::fs::write(&path, "[corpus]\nlanguage = \"ko\"\n").unwrap();
        let stand_alone = model_config(Some(&path)).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(stand_alone.corpus.unwrap().language.code(), "ko");
        let error =
            RunConfig::parse("[corpus]\nlanguage = \"ko\"\n", Path::new("r.toml")).unwrap_err();
        assert!(
            format!("{error:#}").contains("inputs is empty"),
            "{error:#}"
        );
    }

    #[test]
    fn the_dense_table_sets_the_search_and_is_recorded_only_when_not_default() {
        let base = "[corpus]\ninputs = [\"a\"]\n";
        let plain = RunConfig::parse(base, Path::new("r.toml")).unwrap();
        assert_eq!(plain.dense, DenseSettings::default());
        assert!(!plain.dense.uses_hnsw(999_999) && plain.dense.uses_hnsw(1_000_000));
        assert!(
            plain.to_json().get("dense").is_none(),
            "manifests stay as before"
        );

        let text = format!("{base}[dense]\nann = \"hnsw\"\nef_search = 40\n");
        let config = RunConfig::parse(&text, Path::new("r.toml")).unwrap();
        assert_eq!(config.dense.ann, hierarag_rag::AnnMode::Hnsw);
        assert_eq!(
            (config.dense.ef_search, config.dense.connectivity),
            (40, 16)
        );
        assert!(config.dense.uses_hnsw(1));
        assert_eq!(config.to_json()["dense"]["ann"], "hnsw");

        for (table, named) in [
            ("ann = \"approximate\"\n", "approximate"),
            ("ef_serch = 10\n", "ef_serch"),
            ("connectivity = 1\n", "connectivity must be at least 2"),
        ] {
            let text = format!("{base}[dense]\n{table}");
            let error = RunConfig::parse(&text, Path::new("r.toml")).unwrap_err();
            let message = format!("{error:#}");
            assert!(message.contains("r.toml: [dense]"), "{message}");
            assert!(message.contains(named), "{message}");
        }
    }

    #[test]
    fn systems_are_read_in_order_with_their_own_settings() {
        let text = r#"
[corpus]
inputs = ["wiki-sample"]
[answer]
retriever = "bm25"
top_k = 8

[[system]]
name = "bm25"
kind = "builtin"

[[system]]
name = "hybrid-5"
kind = "builtin"
retriever = "hybrid"
top_k = 5
[system.llm]
backend = "openai"
model = "m"
base_urls = ["http://127.0.0.1:9/v1"]

[[system]]
name = "last-week"
kind = "file"
path = "answers.csv"
format = "csv"
[system.fields]
question = "q"
answer = "a"
"#;
        let config = RunConfig::parse(text, Path::new("run.toml")).unwrap();
        let names: Vec<&str> = config.systems.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["bm25", "hybrid-5", "last-week"]);
        let SystemKind::Builtin(hybrid) = &config.systems[1].kind else {
            panic!("builtin")
        };
        let own = config.for_builtin(hybrid);
        assert_eq!(own.answer.retriever, RetrieverKind::Hybrid);
        assert_eq!(own.answer.settings.top_k, 5);
        assert_eq!(own.answerer_llm().model, "m");
        let SystemKind::Builtin(plain) = &config.systems[0].kind else {
            panic!("builtin")
        };
        let plain = config.for_builtin(plain);
        assert_eq!(
            (plain.answer.retriever, plain.answer.settings.top_k),
            (RetrieverKind::Bm25, 8)
        );
        let SystemKind::File(file) = &config.systems[2].kind else {
            panic!("file")
        };
        assert_eq!(file.format, AnswerFileFormat::Csv);
        assert_eq!(file.fields.question.as_deref(), Some("q"));
        // The manifest records the systems; a config without any records none.
        let json = config.to_json();
        assert_eq!(json["systems"][2]["kind"], "file");
        assert_eq!(json["systems"][1]["retriever"], "hybrid");
        let plain = RunConfig::parse("[corpus]\ninputs = [\"a\"]\n", Path::new("r.toml")).unwrap();
        assert!(plain.to_json().get("systems").is_none());
        let http = RunConfig::parse(
            r#"[corpus]
inputs = ["a"]
[[system]]
name = "prod"
kind = "http"
url = "http://127.0.0.1:8080/ask"
headers = { Authorization = "Bearer ${RAG_TOKEN}" }
body = { query = "{question}", k = 10 }
contexts = "/sources"
context_doc_id = "/metadata/doc_id"
concurrency = 16
"#,
            Path::new("r.toml"),
        )
        .unwrap();
        let SystemKind::Http(service) = &http.systems[0].kind else {
            panic!("http")
        };
        assert_eq!(
            service.body,
            serde_json::json!({"query": "{question}", "k": 10})
        );
        assert_eq!(
            (service.answer.as_str(), service.context_text.as_str()),
            ("/answer", "/text")
        );
        let run = Path::new("runs/x");
        assert_eq!(
            service.cache_path(run, "prod").unwrap(),
            run.join("systems/prod/http-cache.sqlite")
        );
        assert_eq!(service.client_settings(run, "prod").concurrency, 16);
        // The manifest keeps the reference, never the secret.
        let json = http.to_json();
        assert_eq!(
            json["systems"][0]["headers"]["Authorization"],
            "Bearer ${RAG_TOKEN}"
        );
        assert_eq!(json["systems"][0]["kind"], "http");
        assert_eq!(plain.answering_systems()[0].name, MAIN_SYSTEM);
    }

    #[test]
    fn a_bad_system_is_one_message_naming_it_and_the_key() {
        let base = "[corpus]\ninputs = [\"a\"]\n";
        for (system, named) in [
            ("kind = \"builtin\"\n", "missing `name`"),
            ("name = \"a b\"\nkind = \"builtin\"\n", "name \"a b\""),
            ("name = \"x\"\n", "[system x]"),
            ("name = \"x\"\nkind = \"htp\"\n", "htp"),
            (
                "name = \"x\"\nkind = \"http\"\nurl = \"u\"\n",
                "url: \"u\" is not a URL",
            ),
            (
                "name = \"x\"\nkind = \"http\"\nurl = \"http://h/ask\"\nbody = { k = 3 }\n",
                "body: the body never sends the question",
            ),
            (
                "name = \"x\"\nkind = \"http\"\nurl = \"http://h/ask\"\ncontexts = \"src\"\n",
                "contexts: \"src\" is not a JSON Pointer",
            ),
            (
                "name = \"x\"\nkind = \"command\"\ncommand = []\n",
                "command is empty",
            ),
            (
                "name = \"x\"\nkind = \"command\"\ncommand = [\"p\"]\nconcurency = 2\n",
                "concurency",
            ),
            (
                "name = \"x\"\nkind = \"builtin\"\nretriver = \"bm25\"\n",
                "retriver",
            ),
            ("name = \"x\"\nkind = \"builtin\"\ntop_k = 0\n", "top_k"),
            (
                "name = \"x\"\nkind = \"file\"\npath = \"a\"\nformat = \"jsonl\"\n",
                "[system.fields]",
            ),
            (
                "name = \"x\"\nkind = \"file\"\npath = \"a\"\nformat = \"parquet\"\n",
                "parquet",
            ),
        ] {
            let text = format!("{base}[[system]]\n{system}");
            let error = format!(
                "{:#}",
                RunConfig::parse(&text, Path::new("run.toml")).unwrap_err()
            );
            assert!(error.starts_with("run.toml"), "{error}");
            assert!(error.contains(named), "{named}: {error}");
        }
        let twice = format!(
            "{base}[[system]]\nname = \"x\"\nkind = \"builtin\"\n[[system]]\nname = \"x\"\nkind = \"builtin\"\n"
        );
        let error = format!(
            "{:#}",
            RunConfig::parse(&twice, Path::new("run.toml")).unwrap_err()
        );
        assert!(error.contains("second system named \"x\""), "{error}");
        assert!(error.contains("line 7"), "{error}");
    }

    #[test]
    fn defaults_and_role_overrides() {
        let text = r#"
[run]
dir = "runs/x"
[corpus]
inputs = ["wiki-sample"]
[design]
kind = "rq1"
per_dimension = 8
[generate]
candidates = 2
[generate.llm]
backend = "openai"
model = "m"
base_urls = ["http://127.0.0.1:9/v1"]
[answer]
retriever = "hybrid"
top_k = 5
"#;
        let config = RunConfig::parse(text, Path::new("run.toml")).unwrap();
        assert_eq!(config.generate.settings.candidates, 2);
        assert_eq!(config.generator_llm().model, "m");
        assert_eq!(config.filter_llm().model, "m");
        assert_eq!(config.answerer_llm().backend, ChatBackendKind::Embedded);
        assert_eq!(config.answer.retriever, RetrieverKind::Hybrid);
        assert_eq!(config.answer.settings.top_k, 5);
        assert_eq!(config.answer.settings.temperature, 0.6);
        assert_eq!(config.run.seed, 42);
        // No [analysis]: the defaults with the run's seed.
        assert_eq!(config.analysis.seed, 42);
        assert_eq!(config.analysis.bootstrap, 1000);
    }

    #[test]
    fn the_analysis_table_sets_the_statistics() {
        let base = "[run]\nseed = 9\n[corpus]\ninputs = [\"a\"]\n";
        let config = RunConfig::parse(
            &format!("{base}[analysis]\nmetric = \"ap\"\nddof = 1\nbootstrap = 0\n"),
            Path::new("run.toml"),
        )
        .unwrap();
        assert_eq!(config.analysis.metric, hierarag_analysis::Metric::Ap);
        assert_eq!((config.analysis.ddof, config.analysis.bootstrap), (1, 0));
        assert_eq!(config.analysis.seed, 9);
        let config = RunConfig::parse(
            &format!("{base}[analysis]\nseed = 3\n"),
            Path::new("run.toml"),
        )
        .unwrap();
        assert_eq!(config.analysis.seed, 3);
        for (bad, named) in [
            ("bins = 5", "bins"),
            ("metric = \"mape\"", "mape"),
            ("confidence = 2.0", "between 0 and 1"),
        ] {
            let error =
                RunConfig::parse(&format!("{base}[analysis]\n{bad}\n"), Path::new("run.toml"))
                    .unwrap_err();
            let error = format!("{error:#}");
            assert!(error.contains("run.toml: [analysis]"), "{error}");
            assert!(error.contains(named), "{error}");
        }
    }

    #[test]
    fn nan_and_negative_budget_limits_are_refused_with_file_and_line() {
        let base = "[run]\nseed = 9\n[corpus]\ninputs = [\"a\"]\n[budget]\n";
        for (bad, named) in [
            (
                "max_cost = nan",
                "run.toml: [budget.max_cost] (line 6, column 12): NaN",
            ),
            (
                "max_cost = -1.5",
                "(line 6, column 12): -1.5 is not a limit",
            ),
            (
                "max_tokens = -3",
                "[budget.max_tokens] (line 6, column 14): -3 is not",
            ),
            ("max_cost = inf", "inf is not a limit"),
            ("max_cost = 1.0\nmax_tokenz = 3", "max_tokenz"),
        ] {
            let error =
                RunConfig::parse(&format!("{base}{bad}\n"), Path::new("run.toml")).unwrap_err();
            let error = format!("{error:#}");
            assert!(error.contains(named), "{error}");
        }
        let config = RunConfig::parse(
            &format!("{base}max_cost = 2\nmax_tokens = 0\n"),
            Path::new("run.toml"),
        )
        .unwrap();
        let budget = config.budget.unwrap();
        assert_eq!((budget.max_cost, budget.max_tokens), (Some(2.0), Some(0)));
    }

    #[test]
    fn typos_are_errors_naming_the_table_and_key() {
        let error = RunConfig::parse(
            "[corpus]\ninputs = [\"a\"]\n[generate]\ncandidate = 2\n",
            Path::new("run.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("run.toml: [generate]"), "{error}");
        assert!(error.contains("candidate"), "{error}");
        let error = RunConfig::parse(
            "[corpus]\ninputs = [\"a\"]\n[answr]\n",
            Path::new("run.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("answr"), "{error}");
        let error = RunConfig::parse("[run]\nseed = 1\n", Path::new("run.toml"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("no [corpus] table"), "{error}");
    }

    #[test]
    fn the_manifest_records_the_config_flat_in_the_order_runs_have_always_recorded() {
        let text = "[corpus]\ninputs = [\"c.jsonl\"]\n[judge]\nconcurrency = 3\n\
[judge.screen]\nmin_correctness = 2\n[judge.llm]\nbackend = \"openai\"\nmodel = \"j\"\n\
base_urls = [\"http://127.0.0.1:1/v1\"]\n[[system]]\nname = \"bm25\"\nkind = \"builtin\"\n";
        let config = RunConfig::parse(text, Path::new("run.toml")).unwrap();
        assert_eq!(config.judge.concurrency, 3);
        let recorded = config.to_json();
        let keys: Vec<&str> = recorded
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "source",
                "run",
                "corpus",
                "index",
                "taxonomy",
                "plan",
                "generate",
                "generate_concurrency",
                "answer",
                "retriever",
                "answer_concurrency",
                "evaluate",
                "analysis",
                "llm",
                "generate_llm",
                "filter_llm",
                "answer_llm",
                "tag",
                "tag_llm",
                "tag_concurrency",
                "judge",
                "judge_llm",
                "judge_concurrency",
                "judge_on",
                "judge_benchmark",
                "judge_screen",
                "embeddings",
                "systems",
            ]
        );
        assert_eq!(recorded["judge_concurrency"], 3);
        assert_eq!(recorded["judge_llm"]["model"], "j");
        assert_eq!(recorded["judge_screen"]["min_correctness"], 2);
        assert_eq!(recorded["generate_llm"], serde_json::Value::Null);
    }
}
