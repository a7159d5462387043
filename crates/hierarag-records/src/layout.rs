//! Where every file of a run lives: the one place that names them.

use std::path::{Path, PathBuf};

/// The annotation store of a run (`hierarag annotate`).
pub const ANNOTATIONS_FILE: &str = "annotations.sqlite";

/// The agreement of the annotators with each other and with the judge.
pub const AGREEMENT_FILE: &str = "agreement.json";

/// A run directory and the names of its files.
///
/// ```text
/// RUN/
///   manifest.json                 config, seeds, per-stage timings, inputs and outputs, usage
///   index/                        the BM25 index of the corpus (tantivy, its own manifest)
///   taxonomy.toml  plan.jsonl     the categories and the items to generate
///   benchmark.jsonl rejects.jsonl generate.failures.jsonl
///   answers.jsonl  scores.jsonl   the system's answers and their scores
///   answer.failures.jsonl evaluate.failures.jsonl
///   tags.jsonl tag.failures.jsonl every question's labels on every dimension
///   judgements.jsonl              the LLM judge's grade of each answer (`judge.failures.jsonl`)
///   benchmark.judge.jsonl         the judge's rating of each QA pair
///   systems/<name>/…              answers, scores and failures of a named system
///   analysis.json  power.json  report.md  report.html
///   annotations.sqlite  agreement.json
///   human/…                       the human-written benchmark of `[human]`, a run directory
///                                 of its own (benchmark, tags, systems) over this index
///   validity.json                 the generated benchmark beside the human-written one
///   spend.jsonl                   with [budget]: every reservation and what it cost
///   run.lock                      held by the one process that writes the directory
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunDir {
    root: PathBuf,
}

impl RunDir {
    pub fn new(root: impl Into<PathBuf>) -> RunDir {
        RunDir { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The lock file of the directory's one writer ([`RunDir::lock`]).
    pub fn lock_file(&self) -> PathBuf {
        self.root.join("run.lock")
    }

    /// Takes the directory for this process (creating it), or fails at once naming the
    /// process that has it: every command that writes a run directory holds this until it
    /// ends, so that two never append to one file. The operating system releases it however
    /// the process ends.
    pub fn lock(&self) -> Result<hierarag_fs::Lock, hierarag_fs::LockError> {
        std::fs::create_dir_all(&self.root).map_err(|source| hierarag_fs::LockError::Io {
            path: self.root.clone(),
            source,
        })?;
        hierarag_fs::Lock::acquire(&self.lock_file(), &self.root)
    }

    /// [`RunDir::lock`] for a command over a run that should exist already: `None` (nothing
    /// created) when the directory is missing, which the command then names in its own words.
    pub fn lock_existing(&self) -> Result<Option<hierarag_fs::Lock>, hierarag_fs::LockError> {
        self.root.is_dir().then(|| self.lock()).transpose()
    }

    pub fn manifest(&self) -> PathBuf {
        self.root.join("manifest.json")
    }

    pub fn index(&self) -> PathBuf {
        self.root.join("index")
    }

    /// The taxonomy the run was planned with, kept beside its plan.
    pub fn taxonomy(&self) -> PathBuf {
        self.root.join("taxonomy.toml")
    }

    pub fn plan(&self) -> PathBuf {
        self.root.join("plan.jsonl")
    }

    pub fn benchmark(&self) -> PathBuf {
        self.root.join("benchmark.jsonl")
    }

    pub fn rejects(&self) -> PathBuf {
        self.root.join("rejects.jsonl")
    }

    /// Every question's labels on every dimension (`hierarag tag`).
    pub fn tags(&self) -> PathBuf {
        self.root.join("tags.jsonl")
    }

    /// The taxonomy the questions were tagged against (written by `hierarag tag`).
    pub fn tags_taxonomy(&self) -> PathBuf {
        self.root.join("tags.taxonomy.toml")
    }

    /// The LLM judge's rating of every benchmark QA pair (`hierarag judge --benchmark`).
    pub fn benchmark_judgements(&self) -> PathBuf {
        self.root.join("benchmark.judge.jsonl")
    }

    /// The QA pairs the judge's screen took out of the benchmark (`[judge.screen]`), each with
    /// its rating and the reason.
    pub fn screened(&self) -> PathBuf {
        self.root.join("screened.jsonl")
    }

    /// The record of the batches the run submitted to providers' batch APIs (`batch = true`):
    /// a line when each is submitted and one when its results were read.
    pub fn batches(&self) -> PathBuf {
        self.root.join("batches.jsonl")
    }

    /// The spending journal of a run with a `[budget]`: every reservation and what it cost,
    /// as it happens (hierarag-cost's `Budget::journaled`).
    pub fn spend(&self) -> PathBuf {
        self.root.join("spend.jsonl")
    }

    /// The items of `stage` that failed in its last pass (absent when none failed).
    pub fn failures(&self, stage: &str) -> PathBuf {
        failures_in(&self.root, stage)
    }

    /// The system whose files sit at the top of the run directory: the run's own pipeline.
    pub fn main_system(&self) -> SystemDir {
        SystemDir {
            root: self.root.clone(),
        }
    }

    /// A named system's folder, `systems/<name>/`.
    pub fn system(&self, name: &str) -> SystemDir {
        SystemDir {
            root: self.root.join("systems").join(name),
        }
    }

    pub fn analysis(&self) -> PathBuf {
        self.root.join("analysis.json")
    }

    /// What `hierarag power` planned with this run as the pilot.
    pub fn power(&self) -> PathBuf {
        self.root.join("power.json")
    }

    pub fn report_md(&self) -> PathBuf {
        self.root.join("report.md")
    }

    pub fn report_html(&self) -> PathBuf {
        self.root.join("report.html")
    }

    /// The human-written benchmark of `[human]`: a run directory of its own inside this one
    /// (its benchmark, tags, and every system's answers and scores), over this one's index.
    pub fn human(&self) -> RunDir {
        RunDir::new(self.root.join("human"))
    }

    /// The generated benchmark beside the human-written one (`hierarag validity`).
    pub fn validity(&self) -> PathBuf {
        self.root.join("validity.json")
    }

    /// Which questions carry the signal, and the core set (`hierarag items`).
    pub fn items(&self) -> PathBuf {
        self.root.join("items.json")
    }

    /// The core set's questions, lines of `benchmark.jsonl` (`hierarag items`).
    pub fn core_benchmark(&self) -> PathBuf {
        self.root.join("core.jsonl")
    }

    /// The judge's means corrected by the people's ratings (`hierarag annotate agreement`).
    pub fn ppi(&self) -> PathBuf {
        self.root.join("ppi.json")
    }

    /// The human ratings (`hierarag annotate`).
    pub fn annotations(&self) -> PathBuf {
        self.root.join(ANNOTATIONS_FILE)
    }

    /// The agreement of the human ratings (`hierarag annotate agreement`).
    pub fn agreement(&self) -> PathBuf {
        self.root.join(AGREEMENT_FILE)
    }
}

/// The files of one RAG system's answers in a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemDir {
    root: PathBuf,
}

impl SystemDir {
    /// A system folder anywhere (the stand-alone stages write beside their input).
    pub fn at(root: impl Into<PathBuf>) -> SystemDir {
        SystemDir { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn answers(&self) -> PathBuf {
        self.root.join("answers.jsonl")
    }

    pub fn scores(&self) -> PathBuf {
        self.root.join("scores.jsonl")
    }

    /// The LLM judge's grade of every answer (`hierarag judge`).
    pub fn judgements(&self) -> PathBuf {
        self.root.join("judgements.jsonl")
    }

    /// The questions of `stage` (`answer`, `evaluate`, `judge`) that failed in its last pass.
    pub fn failures(&self, stage: &str) -> PathBuf {
        failures_in(&self.root, stage)
    }
}

fn failures_in(dir: &Path, stage: &str) -> PathBuf {
    dir.join(format!("{stage}.failures.jsonl"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_main_system_sits_at_the_top_and_named_ones_in_systems() {
        let run = RunDir::new("runs/x");
        assert_eq!(
            run.main_system().answers(),
            Path::new("runs/x/answers.jsonl")
        );
        assert_eq!(
            run.system("prod").scores(),
            Path::new("runs/x/systems/prod/scores.jsonl")
        );
        assert_eq!(
            run.system("prod").failures("answer"),
            Path::new("runs/x/systems/prod/answer.failures.jsonl")
        );
        assert_eq!(
            run.failures("generate"),
            Path::new("runs/x/generate.failures.jsonl")
        );
    }
}
