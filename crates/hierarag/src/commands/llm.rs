//! `hierarag llm ping`.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, bail};
use hierarag_llm::{CacheSetting, ChatBackendKind, ChatRequest, JsonSchema, LlmConfig, Message};

use crate::cli::{LlmCommand, LlmPingArgs};
use crate::printer::Printer;

pub fn run(command: &LlmCommand, printer: Printer) -> anyhow::Result<ExitCode> {
    match command {
        LlmCommand::Ping(args) => ping(args, printer),
    }
}

/// The `[llm]` table of a run config, or the embedded model when there is no config.
fn llm_config(path: Option<&Path>) -> anyhow::Result<LlmConfig> {
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

fn ping(args: &LlmPingArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let mut config = llm_config(args.config.as_deref())?;
    // A ping must reach the endpoint, so it never answers from the cache.
    config.cache = CacheSetting::Off;
    let run_dir = Path::new(".");
    let client = hierarag_run::models::chat_client(&config, run_dir, &printer)?;
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
    let runtime = hierarag_run::stages::runtime()?;
    let reply = runtime.block_on(client.complete(&request))?;
    let completion = &reply.completion;
    let mut out = crate::printer::stdout();
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
