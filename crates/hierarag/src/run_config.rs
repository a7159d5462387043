//! The run config (TOML) of `hierarag run`, also read by `generate`, `answer` and `evaluate`
//! for their model settings.
//!
//! Tables: `[run]` (dir, seed), `[corpus]`, `[index]`, `[taxonomy]`, `[design]`, `[plan]`,
//! `[generate]` (+ `[generate.llm]`), `[filter]` (`[filter.llm]`), `[answer]`
//! (+ `[answer.llm]`), `[evaluate]`, `[llm]`, `[embeddings]`. Relative paths are taken from
//! the current directory. Unknown tables and keys are errors naming the file and key.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use hierarag_generate::GenerateSettings;
use hierarag_llm::{ChatBackendKind, EmbedBackendKind, EmbeddingsConfig, LlmConfig};
use hierarag_rag::{AnswerSettings, RetrieverKind};
use serde::{Deserialize, Serialize};

/// A run config with every default filled in.
#[derive(Debug, Clone, Serialize)]
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
    pub generate: GenerateSettings,
    pub generate_concurrency: usize,
    pub answer: AnswerSettings,
    pub retriever: RetrieverKind,
    pub answer_concurrency: usize,
    pub evaluate: EvaluateSection,
    /// The statistics of `hierarag analyze` ([analysis]; the seed defaults to the run's).
    pub analysis: hierarag_analysis::Settings,
    /// The default model for every role.
    pub llm: LlmConfig,
    pub generate_llm: Option<LlmConfig>,
    pub filter_llm: Option<LlmConfig>,
    pub answer_llm: Option<LlmConfig>,
    pub embeddings: EmbeddingsConfig,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunSection {
    /// The run directory.
    pub dir: PathBuf,
    /// Seed of every random choice (plan, generation, answers).
    pub seed: u64,
}

impl Default for RunSection {
    fn default() -> RunSection {
        RunSection {
            dir: PathBuf::from("runs/run"),
            seed: 42,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CorpusSection {
    /// Files, globs, directories, or `wiki-sample`.
    pub inputs: Vec<String>,
    #[serde(default)]
    pub format: Option<String>,
    #[serde(default = "default_id_field")]
    pub id_field: String,
    #[serde(default = "default_text_field")]
    pub text_field: String,
    /// `fail` or `skip`.
    #[serde(default = "default_on_error")]
    pub on_error: String,
}

fn default_id_field() -> String {
    "id".into()
}
fn default_text_field() -> String {
    "text".into()
}
fn default_on_error() -> String {
    "fail".into()
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
    /// Questions embedded per request.
    pub batch: usize,
}

impl Default for EvaluateSection {
    fn default() -> EvaluateSection {
        EvaluateSection { batch: 32 }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    run: RunSection,
    corpus: Option<CorpusSection>,
    #[serde(default)]
    index: IndexSection,
    taxonomy: Option<TaxonomySection>,
    /// Read by `hierarag_plan::DesignConfig`.
    design: Option<toml::Table>,
    #[serde(default)]
    plan: PlanSection,
    generate: Option<toml::Table>,
    filter: Option<toml::Table>,
    answer: Option<toml::Table>,
    #[serde(default)]
    evaluate: EvaluateSection,
    analysis: Option<toml::Table>,
    /// Read by `hierarag_llm`.
    llm: Option<toml::Table>,
    embeddings: Option<toml::Table>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TaxonomySection {
    path: PathBuf,
}

/// Takes `key` out of a table.
fn take<T: serde::de::DeserializeOwned>(
    table: &mut toml::Table,
    key: &str,
    source: &str,
    context: &str,
) -> anyhow::Result<Option<T>> {
    match table.remove(key) {
        None => Ok(None),
        Some(value) => Ok(Some(value.try_into().map_err(|e: toml::de::Error| {
            anyhow::anyhow!("{source}: [{context}] {key}: {}", e.message())
        })?)),
    }
}

fn llm_of(
    table: &mut toml::Table,
    source: &str,
    context: &str,
) -> anyhow::Result<Option<LlmConfig>> {
    let Some(config) = take::<LlmConfig>(table, "llm", source, context)? else {
        return Ok(None);
    };
    config.validate(source)?;
    Ok(Some(config))
}

impl RunConfig {
    pub fn load(path: &Path) -> anyhow::Result<RunConfig> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("{}: cannot read the run config", path.display()))?;
        RunConfig::parse(&text, path)
    }

    /// A config for `hierarag run`: `[corpus]` is required.
    pub fn parse(text: &str, path: &Path) -> anyhow::Result<RunConfig> {
        RunConfig::parse_inner(text, path, true)
    }

    fn parse_inner(text: &str, path: &Path, require_corpus: bool) -> anyhow::Result<RunConfig> {
        let source = path.display().to_string();
        let raw: RawConfig = toml::from_str(text).map_err(|e| {
            let place = e.span().map(|span| {
                let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
                format!(" (line {line})")
            });
            anyhow::anyhow!(
                "{source}{}: {}",
                place.unwrap_or_default(),
                e.message().trim_end()
            )
        })?;
        if require_corpus && raw.corpus.is_none() {
            bail!("{source}: no [corpus] table; add one, e.g. [corpus] inputs = [\"wiki-sample\"]");
        }
        if let Some(corpus) = &raw.corpus {
            if corpus.inputs.is_empty() {
                bail!("{source}: [corpus] inputs is empty");
            }
            if !matches!(corpus.on_error.as_str(), "fail" | "skip") {
                bail!(
                    "{source}: [corpus] on_error must be \"fail\" or \"skip\", not {:?}",
                    corpus.on_error
                );
            }
            if let Some(format) = &corpus.format
                && !matches!(format.as_str(), "jsonl" | "parquet" | "textdir")
            {
                bail!(
                    "{source}: [corpus] format must be \"jsonl\", \"parquet\" or \"textdir\", not {format:?}"
                );
            }
        }
        if let Some(design) = &raw.design {
            // Checked now so that a typo fails before any work.
            let text = toml::to_string(&toml::Table::from_iter([(
                "design".to_string(),
                toml::Value::Table(design.clone()),
            )]))?;
            hierarag_plan::DesignConfig::from_toml_str(&text, &source)?;
        }

        let llm = match &raw.llm {
            Some(_) => LlmConfig::from_toml_str(text, &source)?.expect("an [llm] table"),
            None => LlmConfig::new(ChatBackendKind::Embedded, ""),
        };
        let embeddings = match &raw.embeddings {
            Some(_) => {
                EmbeddingsConfig::from_toml_str(text, &source)?.expect("an [embeddings] table")
            }
            None => EmbeddingsConfig::new(EmbedBackendKind::Embedded, ""),
        };

        let mut generate_table = raw.generate.unwrap_or_default();
        let generate_llm = llm_of(&mut generate_table, &source, "generate")?;
        let generate_concurrency =
            take::<usize>(&mut generate_table, "concurrency", &source, "generate")?;
        let generate: GenerateSettings =
            toml::Value::Table(generate_table)
                .try_into()
                .map_err(|e: toml::de::Error| {
                    anyhow::anyhow!("{source}: [generate]: {}", e.message())
                })?;
        if generate.candidates == 0 || generate.max_attempts == 0 {
            bail!("{source}: [generate] candidates and max_attempts must be at least 1");
        }

        let mut filter_table = raw.filter.unwrap_or_default();
        let filter_llm = llm_of(&mut filter_table, &source, "filter")?;
        if let Some(key) = filter_table.keys().next() {
            bail!(
                "{source}: [filter] takes only an llm table, not {key:?} (the filter is switched by [generate] filter)"
            );
        }

        let mut answer_table = raw.answer.unwrap_or_default();
        let answer_llm = llm_of(&mut answer_table, &source, "answer")?;
        let answer_concurrency =
            take::<usize>(&mut answer_table, "concurrency", &source, "answer")?;
        let retriever = take::<RetrieverKind>(&mut answer_table, "retriever", &source, "answer")?
            .unwrap_or_default();
        let answer: AnswerSettings = toml::Value::Table(answer_table)
            .try_into()
            .map_err(|e: toml::de::Error| anyhow::anyhow!("{source}: [answer]: {}", e.message()))?;
        if answer.top_k == 0 {
            bail!("{source}: [answer] top_k must be at least 1");
        }

        let analysis = match raw.analysis {
            None => hierarag_analysis::Settings {
                seed: raw.run.seed,
                ..hierarag_analysis::Settings::default()
            },
            Some(table) => {
                let has_seed = table.contains_key("seed");
                let mut settings: hierarag_analysis::Settings = toml::Value::Table(table)
                    .try_into()
                    .map_err(|e: toml::de::Error| {
                        anyhow::anyhow!("{source}: [analysis]: {}", e.message())
                    })?;
                if !has_seed {
                    settings.seed = raw.run.seed;
                }
                crate::commands::analyze::check(&settings)
                    .with_context(|| format!("{source}: [analysis]"))?;
                settings
            }
        };

        let role_concurrency = |role: &Option<LlmConfig>| role.as_ref().unwrap_or(&llm).concurrency;
        Ok(RunConfig {
            source: path.to_path_buf(),
            generate_concurrency: generate_concurrency
                .unwrap_or_else(|| 2 * role_concurrency(&generate_llm)),
            answer_concurrency: answer_concurrency
                .unwrap_or_else(|| 2 * role_concurrency(&answer_llm)),
            run: raw.run,
            corpus: raw.corpus,
            index: raw.index,
            taxonomy: raw.taxonomy.map(|t| t.path),
            plan: raw.plan,
            generate,
            answer,
            retriever,
            evaluate: raw.evaluate,
            analysis,
            llm,
            generate_llm,
            filter_llm,
            answer_llm,
            embeddings,
        })
    }

    /// The generator's model config.
    pub fn generator_llm(&self) -> &LlmConfig {
        self.generate_llm.as_ref().unwrap_or(&self.llm)
    }

    /// The filter's model config: its own, else the generator's.
    pub fn filter_llm(&self) -> &LlmConfig {
        self.filter_llm
            .as_ref()
            .unwrap_or_else(|| self.generator_llm())
    }

    /// The answering model config.
    pub fn answerer_llm(&self) -> &LlmConfig {
        self.answer_llm.as_ref().unwrap_or(&self.llm)
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
            let text = std::fs::read_to_string(path)
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
        assert_eq!(config.generate.candidates, 2);
        assert_eq!(config.generator_llm().model, "m");
        assert_eq!(config.filter_llm().model, "m");
        assert_eq!(config.answerer_llm().backend, ChatBackendKind::Embedded);
        assert_eq!(config.retriever, RetrieverKind::Hybrid);
        assert_eq!(config.answer.top_k, 5);
        assert_eq!(config.answer.temperature, 0.6);
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
}
