//! Batch files of a user's engine: the replies of an OpenAI-format batch output file into a
//! run's response cache (the export is the generate stage's, see
//! [`chain::RunOptions::export_batch`](crate::chain::RunOptions::export_batch)).

use std::path::Path;

use anyhow::Context;

use crate::config::RunConfig;
use crate::layout::RunDir;
use crate::models::chat_client;
use hierarag_pipeline::Reporter;

/// What an import stored.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Imported {
    pub stored: usize,
    /// The lines that were errors: their custom_id and reason.
    pub failed: Vec<(String, String)>,
}

/// Reads `file` (OpenAI's batch output format) into the response cache of the generator and,
/// where it is another file, of the filter.
pub fn import(
    config: &RunConfig,
    run: &RunDir,
    file: &Path,
    reporter: &dyn Reporter,
) -> anyhow::Result<Imported> {
    let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    let runtime = crate::stages::runtime()?;
    let requested = hierarag_llm::BatchLedger::new(&run.batches()).exported()?;
    let mut caches = Vec::new();
    let mut imported = Imported::default();
    for llm in [config.generator_llm(), config.filter_llm()] {
        let cache = llm.cache.resolve(run.root());
        if cache.is_none() || caches.contains(&cache) {
            continue;
        }
        caches.push(cache);
        let client = chat_client(llm, run.root(), reporter)?;
        let (stored, failed) = runtime
            .block_on(client.import_batch_output(&bytes, requested.as_ref()))
            .with_context(|| format!("importing {}", file.display()))?;
        imported = Imported { stored, failed };
    }
    if caches.is_empty() {
        anyhow::bail!("the generator's response cache is \"off\": there is nowhere to import to");
    }
    Ok(imported)
}

/// The lines of a JSONL file.
pub fn count_lines(path: &Path) -> anyhow::Result<usize> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(text.lines().filter(|l| !l.trim().is_empty()).count())
}
