//! `hierarag._native`, the compiled half of the `hierarag` Python package (python/hierarag):
//! the command line run in this process, a run's JSONL files read and checked by the same
//! crates as the command line, and the text and retrieval metrics on Python values. Values
//! cross as JSON text, which the Python side turns into lists, dicts and DataFrames; nothing
//! here starts a subprocess.

use std::path::Path;

use hierarag_metrics::{Qrels, Run};
use hierarag_run::text::{TextPair, evaluate};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

/// Runs the command line `argv` (the program name first) and returns its exit code; the GIL
/// is released meanwhile. Without `tables`, the summary tables are not printed.
#[pyfunction]
#[pyo3(signature = (argv, tables = true))]
fn cli(py: Python<'_>, argv: Vec<String>, tables: bool) -> u8 {
    py.detach(|| {
        if tables {
            hierarag::main_with_args(argv)
        } else {
            hierarag::main_with_args_without_tables(argv)
        }
    })
}

/// The records of a run file as a JSON array, read as `kind` (`benchmark`, `answers`,
/// `scores`, or `any` for JSON objects of any shape): a line that is not such a record is an
/// error naming the file and line.
#[pyfunction]
fn read_records(path: &str, kind: &str) -> PyResult<String> {
    let path = Path::new(path);
    match kind {
        "benchmark" => json_of(read_typed::<hierarag_generate::BenchmarkRecord>(path)?),
        "answers" => json_of(read_typed::<hierarag_rag::AnswerRecord>(path)?),
        "scores" => json_of(read_typed::<hierarag_pipeline::ScoreRecord>(path)?),
        "any" => json_of(read_typed::<serde_json::Value>(path)?),
        other => Err(PyValueError::new_err(format!(
            "unknown record kind {other:?} (benchmark, answers, scores, any)"
        ))),
    }
}

fn read_typed<T: serde::de::DeserializeOwned>(path: &Path) -> PyResult<Vec<T>> {
    hierarag_pipeline::read_records(path).map_err(|error| PyValueError::new_err(error.to_string()))
}

fn json_of<T: serde::Serialize>(value: T) -> PyResult<String> {
    serde_json::to_string(&value).map_err(|error| PyRuntimeError::new_err(error.to_string()))
}

/// ROUGE-1 (rouge-score's defaults) and sentence BLEU (sacrebleu's) of each prediction against
/// its reference, their means and corpus BLEU, as `hierarag eval text --no-cs --json`; for
/// another `language` than English, with its tokenizers.
#[pyfunction]
#[pyo3(signature = (references, predictions, language = "en"))]
fn eval_text(
    references: Vec<String>,
    predictions: Vec<String>,
    language: &str,
) -> PyResult<String> {
    let language = hierarag_lang::Language::from_code(language)
        .map_err(|error| PyValueError::new_err(error.to_string()))?;
    if references.len() != predictions.len() {
        return Err(PyValueError::new_err(format!(
            "{} references but {} predictions: give one prediction per reference",
            references.len(),
            predictions.len()
        )));
    }
    let pairs: Vec<TextPair> = references
        .into_iter()
        .zip(predictions)
        .enumerate()
        .map(|(i, (reference, prediction))| TextPair {
            id: i.to_string(),
            references: vec![reference],
            prediction,
        })
        .collect();
    json_of(evaluate(&pairs, None, language))
}

/// trec_eval's measures of `run` against `qrels`, as `hierarag eval retrieval --json`: the
/// dicts of pytrec_eval, `{query: {doc: relevance}}` and `{query: {doc: score}}`.
#[pyfunction]
fn eval_retrieval(
    qrels: std::collections::BTreeMap<String, std::collections::BTreeMap<String, i32>>,
    run: std::collections::BTreeMap<String, std::collections::BTreeMap<String, f64>>,
) -> PyResult<String> {
    let mut judged = Qrels::new();
    for (query, docs) in qrels {
        for (doc, rel) in docs {
            judged.insert(query.clone(), doc, rel);
        }
    }
    let mut ranked = Run::new();
    for (query, docs) in run {
        for (doc, score) in docs {
            ranked.push(query.clone(), doc, score);
        }
    }
    json_of(hierarag_metrics::evaluate(&judged, &ranked))
}

/// The run directory of a run config (`[run] dir`, with its default), read as `hierarag run`
/// reads it; a bad config is an error naming its line.
#[pyfunction]
fn run_dir_of(config: &str) -> PyResult<String> {
    let config = hierarag_run::config::RunConfig::load(Path::new(config))
        .map_err(|error| PyValueError::new_err(format!("{error:#}")))?;
    Ok(config.run.dir.to_string_lossy().into_owned())
}

/// The systems of a run, in its config's order, as a JSON array of `[name, folder]`: the
/// `[[system]]` tables recorded in its manifest, or the one implicit system (`main`, whose
/// files are at the top of the run directory).
#[pyfunction]
fn systems(run_dir: &str) -> PyResult<String> {
    let run = hierarag_run::RunDir::new(run_dir);
    let systems = hierarag_run::systems::systems_of_run(&run)
        .map_err(|error| PyValueError::new_err(format!("{error:#}")))?;
    let listed: Vec<(String, String)> = systems
        .into_iter()
        .map(|(name, dir)| (name, dir.root().to_string_lossy().into_owned()))
        .collect();
    json_of(listed)
}

/// Answers every unanswered question of a run's benchmark with `call` (the package's wrapper
/// of the user's function: question text and id in, the reply as JSON text out), as the
/// system `system` of the run; returns the stage's outcome as JSON. The GIL is released
/// while the stage runs and taken for each call; a Ctrl-C (KeyboardInterrupt) stops the stage
/// with every answer written kept.
#[pyfunction]
#[pyo3(signature = (run_dir, system, call, concurrency, quiet=false))]
fn answer_with(
    py: Python<'_>,
    run_dir: &str,
    system: &str,
    call: Py<PyAny>,
    concurrency: usize,
    quiet: bool,
) -> PyResult<String> {
    let run = hierarag_run::RunDir::new(run_dir);
    // One writer per run directory, as for the command line.
    let _lock = run
        .lock()
        .map_err(|error| PyRuntimeError::new_err(error.to_string()))?;
    let function: hierarag_run::stages::AnswerFunction =
        std::sync::Arc::new(move |record: &hierarag_generate::BenchmarkRecord| {
            Python::attach(|py| {
                let reply = call
                    .call1(py, (record.question.as_str(), record.id.as_str()))
                    .and_then(|reply| reply.extract::<String>(py))
                    .map_err(|error| error.to_string())?;
                serde_json::from_str(&reply).map_err(|error| format!("the reply: {error}"))
            })
        });
    let interrupted = std::sync::atomic::AtomicBool::new(false);
    let asked = || {
        let now = Python::attach(|py| py.check_signals().is_err());
        if now {
            interrupted.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        now
    };
    let reporter = hierarag::reporter(quiet);
    let outcome = py.detach(|| {
        hierarag_run::stages::answer_with_function(
            &run,
            system,
            function,
            concurrency,
            &asked,
            &reporter,
        )
    });
    if interrupted.load(std::sync::atomic::Ordering::SeqCst) {
        return Err(pyo3::exceptions::PyKeyboardInterrupt::new_err(
            "answer_with was interrupted; the answers written so far are kept",
        ));
    }
    let outcome = outcome.map_err(|error| PyRuntimeError::new_err(format!("{error:#}")))?;
    json_of(serde_json::json!({
        "items": outcome.items,
        "resumed": outcome.resumed,
        "written": outcome.written,
        "failed": outcome.failures.len(),
    }))
}

/// Scores the answers of the run's system `system` (`systems/<name>/scores.jsonl`) with the
/// settings the run's manifest recorded (its `[embeddings]` and `[evaluate]`), as `hierarag
/// run` scores its own systems; returns whether every answer was scored.
#[pyfunction]
#[pyo3(signature = (run_dir, system, quiet=false))]
fn evaluate_system(py: Python<'_>, run_dir: &str, system: &str, quiet: bool) -> PyResult<bool> {
    let run = hierarag_run::RunDir::new(run_dir);
    let reporter = hierarag::reporter(quiet);
    let scored = py.detach(|| -> anyhow::Result<bool> {
        let _lock = run.lock()?;
        let config = hierarag_run::manifest::scoring_config_of_run(&run)?;
        let (_, folder) = hierarag_run::systems::system_of_run(&run, Some(system))?;
        let outcome = hierarag_run::stages::evaluate(
            &config,
            &run,
            &run.benchmark(),
            &folder.answers(),
            &folder,
            Some(system),
            &reporter,
        )?;
        Ok(outcome.ok())
    });
    scored.map_err(|error| PyRuntimeError::new_err(format!("{error:#}")))
}

/// A BM25 index built by `hierarag index` (a run's `index/`), searched as `hierarag search`.
#[pyclass(frozen, name = "Index")]
struct PyIndex {
    index: hierarag_index::Bm25Index,
}

#[pymethods]
impl PyIndex {
    #[new]
    fn open(dir: &str) -> PyResult<PyIndex> {
        let index = hierarag_index::Bm25Index::open(Path::new(dir))
            .map_err(|error| PyValueError::new_err(format!("opening the index {dir}: {error}")))?;
        Ok(PyIndex { index })
    }

    /// The best `k` chunks (or, with `documents`, the documents by their best chunk) for
    /// `query`, best first, as a JSON array of `{rank, score, doc_id, chunk_id, text}`:
    /// `hierarag search --json`.
    #[pyo3(signature = (query, k=10, documents=false))]
    fn search(&self, py: Python<'_>, query: &str, k: usize, documents: bool) -> PyResult<String> {
        let level = if documents {
            hierarag_index::Level::Doc
        } else {
            hierarag_index::Level::Chunk
        };
        let index = &self.index;
        let results = py.detach(|| index.search_results(query, k, level));
        json_of(results.map_err(|error| PyRuntimeError::new_err(error.to_string()))?)
    }

    /// Documents in the index.
    fn __len__(&self) -> usize {
        self.index.n_documents()
    }
}

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    module.add_function(wrap_pyfunction!(cli, module)?)?;
    module.add_function(wrap_pyfunction!(read_records, module)?)?;
    module.add_function(wrap_pyfunction!(eval_text, module)?)?;
    module.add_function(wrap_pyfunction!(eval_retrieval, module)?)?;
    module.add_function(wrap_pyfunction!(run_dir_of, module)?)?;
    module.add_function(wrap_pyfunction!(systems, module)?)?;
    module.add_function(wrap_pyfunction!(answer_with, module)?)?;
    module.add_function(wrap_pyfunction!(evaluate_system, module)?)?;
    module.add_class::<PyIndex>()?;
    Ok(())
}
