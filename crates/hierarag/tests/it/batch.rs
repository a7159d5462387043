//! Batch inference: `batch = true` through the batch mock (OpenAI's files and batches, written
//! from the API reference and driven by the official SDKs in `batch_mock_is_the_api_the_sdks_read`),
//! a run killed while it waits that re-attaches instead of submitting again, and the export and
//! import of `hierarag batch` through the `openai` SDK's types and client.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use hierarag_test_support::batches::{BatchMock, Ending};
use hierarag_test_support::mock::Reply;
use hierarag_test_support::pipeline::{chat, embeddings};
use serde_json::{Value, json};

use crate::run::{
    assert_ran, dry_run, hierarag, lines, records, run_to_end, same_outputs, start_mock,
    write_config, write_corpus,
};

/// A batch mock answering as the run tests' chat mock does.
fn batch_mock(ending: Ending) -> BatchMock {
    BatchMock::serve_with(ending, |path, body| match path {
        "/v1/chat/completions" => chat(body),
        "/v1/embeddings" => embeddings(body),
        _ => Reply::json(404, json!({"error": {"message": "no route"}})),
    })
}

/// A run config with the judge on, whose `[llm]` roles (generator, filter, answerer, judge) go
/// through `batch_url`'s batch API, the embeddings through `plain_url`.
fn batch_config(
    dir: &Path,
    corpus: &Path,
    batch_url: &str,
    plain_url: &str,
    run: &Path,
) -> PathBuf {
    let config = judged_config(dir, corpus, plain_url, run);
    let text = std::fs::read_to_string(&config).unwrap();
    let (head, embeddings) = text.split_once("[embeddings]").unwrap();
    let head = head.replacen(plain_url, batch_url, 1).replacen(
        "concurrency = 4\n",
        "concurrency = 4\nbatch = true\nbatch_poll_s = 0.02\nprice_prompt_per_mtok = 3.0\n\
price_batch_prompt_per_mtok = 1.5\n",
        1,
    );
    std::fs::write(&config, format!("{head}[embeddings]{embeddings}")).unwrap();
    config
}

/// `write_config` with the judge on.
fn judged_config(dir: &Path, corpus: &Path, url: &str, run: &Path) -> PathBuf {
    let config = write_config(dir, corpus, url, run);
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{text}\n[judge]\n")).unwrap();
    config
}

/// A run with `batch = true` ends with the same files as one that calls, its generation, its
/// filter and its answers each one batch (a round each), recorded in batches.jsonl; a run SIGKILLed while it
/// waits for a batch re-attaches to it on the rerun and submits no request twice.
#[test]
fn a_batch_run_ends_as_a_calling_run_and_a_killed_one_reattaches() {
    let plain = start_mock(0);
    let mock = batch_mock(Ending::default());
    let dir = tempfile::tempdir().unwrap();
    let corpus = write_corpus(dir.path(), false);

    let calling = dir.path().join("calling");
    assert_ran(&run_to_end(&judged_config(
        dir.path(),
        &corpus,
        &plain,
        &calling,
    )));

    let batched = dir.path().join("batched");
    let config = batch_config(dir.path(), &corpus, &mock.v1(), &plain, &batched);
    let estimate = dry_run(&config);
    assert!(
        estimate.contains("generator, filter, answerer, judge through the batch API"),
        "{estimate}"
    );
    let stderr = assert_ran(&run_to_end(&config));
    same_outputs(&calling, &batched, "after a batch run");
    let ledger = records(&batched.join("batches.jsonl"));
    let submitted: Vec<&Value> = ledger
        .iter()
        .filter(|l| l["event"] == "submitted")
        .collect();
    let ended: Vec<&Value> = ledger.iter().filter(|l| l["event"] == "ended").collect();
    assert_eq!(submitted.len(), mock.submitted(), "{ledger:?}");
    assert!(
        submitted.len() >= 2,
        "a generation and a filter round: {ledger:?}"
    );
    assert_eq!(ended.len(), submitted.len(), "{ledger:?}");
    assert!(
        ended
            .iter()
            .all(|l| l["state"] == "completed" && l["failed"] == 0)
    );
    // The 24 questions' generation requests went in the first batch.
    assert_eq!(submitted[0]["requests"], 24, "{ledger:?}");
    assert!(stderr.contains("requests submitted"), "{stderr}");
    let ids = mock.custom_ids();
    let unique: std::collections::HashSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "a request was submitted twice");
    // The batch calls of every role of the [llm] table cost the batch price; the answer stage
    // went through the batch API too (its own round).
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(batched.join("manifest.json")).unwrap()).unwrap();
    let usage = |stage: &str, role: &str| -> Value {
        manifest["stages"][stage]["usage"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["role"] == role)
            .unwrap_or_else(|| panic!("{stage} {role}: {manifest}"))
            .clone()
    };
    let generator = usage("generate", "generator");
    let prompt = generator["prompt_tokens"].as_f64().unwrap();
    assert!(prompt > 0.0);
    assert!((generator["cost"].as_f64().unwrap() - prompt * 1.5 / 1e6).abs() < 1e-12);
    let answerer = usage("answer", "answerer");
    let prompt = answerer["prompt_tokens"].as_f64().unwrap();
    assert!((answerer["cost"].as_f64().unwrap() - prompt * 1.5 / 1e6).abs() < 1e-12);
    assert!(
        submitted.len() >= 4,
        "generation, filter, answer and judge rounds: {ledger:?}"
    );
    assert!(usage("judge", "judge")["cost"].as_f64().unwrap() > 0.0);

    // Killed while it waits for its first batch, which does not end until the test says so.
    let slow = batch_mock(Ending {
        polls: usize::MAX,
        ..Ending::default()
    });
    let killed = dir.path().join("killed");
    let config = batch_config(dir.path(), &corpus, &slow.v1(), &plain, &killed);
    let mut child = hierarag()
        .arg("run")
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while lines(&killed.join("batches.jsonl")) == 0 || slow.polls() < 2 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended by itself"
        );
        assert!(
            Instant::now() < deadline,
            "no batch submitted within 2 minutes"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert_eq!(slow.submitted(), 1);
    slow.set_ending(Ending::default());
    let stderr = assert_ran(&run_to_end(&config));
    assert!(stderr.contains("submitted by an earlier run"), "{stderr}");
    same_outputs(&calling, &killed, "after the kill and the rerun");
    let ids = slow.custom_ids();
    let unique: std::collections::HashSet<&String> = ids.iter().collect();
    assert_eq!(
        unique.len(),
        ids.len(),
        "a request was submitted twice after the kill"
    );
    assert_eq!(slow.submitted(), mock.submitted());
}

/// `hierarag batch export` writes lines the `openai` SDK's request types accept; the SDK's
/// client runs them against the chat mock and writes the output file in the documented format;
/// `hierarag batch import` reads it; rounds repeat until nothing is pending, and the run then
/// ends with the files of a run that called the model itself.
#[test]
fn export_and_import_round_trip_through_the_openai_sdk() {
    let plain = start_mock(0);
    let dir = tempfile::tempdir().unwrap();
    let corpus = write_corpus(dir.path(), false);
    let calling = dir.path().join("calling");
    assert_ran(&run_to_end(&write_config(
        dir.path(),
        &corpus,
        &plain,
        &calling,
    )));

    let exported = dir.path().join("exported");
    let config = write_config(dir.path(), &corpus, &plain, &exported);
    let script = r#"
import json, sys, typing
import openai, pydantic
from openai.types.chat import ChatCompletionMessageParam
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
params = pydantic.TypeAdapter(CompletionCreateParamsNonStreaming)
messages = pydantic.TypeAdapter(typing.List[ChatCompletionMessageParam])
known = set(typing.get_type_hints(CompletionCreateParamsNonStreaming))
client = openai.OpenAI(base_url=sys.argv[3], api_key="unused")
out = open(sys.argv[2], "w")
for n, line in enumerate(open(sys.argv[1])):
    request = json.loads(line)
    assert set(request) == {"custom_id", "method", "url", "body"}, request.keys()
    assert request["method"] == "POST" and request["url"] == "/v1/chat/completions"
    params.validate_python(request["body"])
    messages.validate_python(request["body"]["messages"])
    assert set(request["body"]) <= known, set(request["body"]) - known
    completion = client.chat.completions.create(**request["body"])
    out.write(json.dumps({"id": f"batch_req_{n}", "custom_id": request["custom_id"],
                          "response": {"status_code": 200, "request_id": f"req_{n}",
                                       "body": completion.model_dump(mode="json")},
                          "error": None}) + "\n")
"#;
    let mut rounds = 0;
    loop {
        let input = dir.path().join(format!("round{rounds}.jsonl"));
        let out = hierarag()
            .args(["batch", "export"])
            .arg(&exported)
            .arg("--config")
            .arg(&config)
            .arg("--out")
            .arg(&input)
            .output()
            .unwrap();
        assert_ran(&out);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if stdout.starts_with("nothing pending") {
            break;
        }
        assert!(stdout.starts_with("wrote "), "{stdout}");
        rounds += 1;
        assert!(rounds <= 4, "still pending after 4 rounds: {stdout}");
        let output = dir.path().join(format!("round{rounds}.out.jsonl"));
        let sdk = std::process::Command::new(crate::support::peers_python())
            .args(["-c", script])
            .arg(&input)
            .arg(&output)
            .arg(&plain)
            .output()
            .unwrap();
        assert!(
            sdk.status.success(),
            "{}",
            String::from_utf8_lossy(&sdk.stderr)
        );
        assert_eq!(lines(&output), lines(&input));
        let out = hierarag()
            .args(["batch", "import"])
            .arg(&exported)
            .arg(&output)
            .arg("--config")
            .arg(&config)
            .output()
            .unwrap();
        assert_ran(&out);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains(&format!("{} replies stored", lines(&input))),
            "{stdout}"
        );
    }
    // Generation, then the filter.
    assert!(rounds >= 2, "{rounds} rounds");
    assert_ran(&run_to_end(&config));
    same_outputs(&calling, &exported, "after the export and import rounds");
}

/// The batch mock is the API the official SDKs read: the `openai` SDK uploads a file, creates a
/// batch, polls it and downloads its output; the `anthropic` SDK creates a message batch, polls
/// it and iterates its results. Then the client in batch mode sends the same requests through
/// each API and stores the same texts the SDKs got.
#[test]
fn batch_mock_is_the_api_the_sdks_read() {
    use hierarag_llm::{
        BatchLedger, ChatBackendKind, ChatClient, ChatRequest, LlmConfig, LlmError, Message,
    };

    let mock = BatchMock::serve(Ending {
        polls: 2,
        ..Ending::default()
    });
    let questions = ["Capital of France?", "Capital of Peru?", "Capital of Chad?"];
    let script = r#"
import io, json, sys, time
import anthropic, openai
root, questions = sys.argv[1], json.loads(sys.argv[2])
o = openai.OpenAI(base_url=root + "/v1", api_key="unused")
lines = "".join(json.dumps({"custom_id": f"q{n}", "method": "POST", "url": "/v1/chat/completions",
                            "body": {"model": "gpt-test", "max_tokens": 16,
                                     "messages": [{"role": "user", "content": q}]}}) + "\n"
                for n, q in enumerate(questions))
f = o.files.create(file=("in.jsonl", io.BytesIO(lines.encode())), purpose="batch")
b = o.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h")
while b.status not in ("completed", "failed", "expired", "cancelled"):
    time.sleep(0.01)
    b = o.batches.retrieve(b.id)
assert b.status == "completed", b.status
openai_texts = {}
for line in o.files.content(b.output_file_id).text.splitlines():
    r = json.loads(line)
    completion = openai.types.chat.ChatCompletion.model_validate(r["response"]["body"])
    openai_texts[r["custom_id"]] = completion.choices[0].message.content
a = anthropic.Anthropic(base_url=root, api_key="unused")
mb = a.messages.batches.create(requests=[
    {"custom_id": f"q{n}", "params": {"model": "claude-test", "max_tokens": 16,
                                      "messages": [{"role": "user", "content": q}]}}
    for n, q in enumerate(questions)])
while mb.processing_status != "ended":
    time.sleep(0.01)
    mb = a.messages.batches.retrieve(mb.id)
anthropic_texts = {}
for result in a.messages.batches.results(mb.id):
    assert result.result.type == "succeeded", result
    anthropic_texts[result.custom_id] = "".join(c.text for c in result.result.message.content)
print(json.dumps({"openai": openai_texts, "anthropic": anthropic_texts}))
"#;
    let sdk = crate::support::json_of(
        std::process::Command::new(crate::support::peers_python()).args([
            "-c",
            script,
            &mock.root,
            &json!(questions).to_string(),
        ]),
        None,
    );
    assert_eq!(mock.submitted(), 2);

    let dir = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    for (backend, base_url, model, api) in [
        (ChatBackendKind::OpenAi, mock.v1(), "gpt-test", "openai"),
        (
            ChatBackendKind::Anthropic,
            mock.root.clone(),
            "claude-test",
            "anthropic",
        ),
    ] {
        let mut config = LlmConfig::new(backend, model);
        config.base_urls = vec![base_url];
        config.cache = hierarag_llm::CacheSetting::Path(format!("{api}.sqlite").into());
        let client = ChatClient::from_config(&config, dir.path()).unwrap();
        client.set_batch_mode(Duration::from_millis(10)).unwrap();
        let requests: Vec<ChatRequest> = questions
            .iter()
            .map(|q| {
                let mut request = ChatRequest::new(vec![Message::user(*q)]);
                request.max_tokens = 16;
                request
            })
            .collect();
        for request in &requests {
            let deferred = runtime.block_on(client.complete(request));
            assert!(matches!(deferred, Err(LlmError::Deferred)), "{deferred:?}");
        }
        assert_eq!(client.deferred(), 3);
        let ledger = BatchLedger::new(&dir.path().join(format!("{api}-batches.jsonl")));
        let round = runtime
            .block_on(client.run_batches(&ledger, &|_| {}))
            .unwrap();
        assert_eq!(
            (round.submitted, round.requests, round.succeeded),
            (1, 3, 3)
        );
        for (n, request) in requests.iter().enumerate() {
            let reply = runtime.block_on(client.complete(request)).unwrap();
            assert!(reply.cached);
            assert_eq!(
                reply.completion.text,
                sdk[api][format!("q{n}")],
                "{api} q{n}"
            );
        }
        // Submitting, submitted, ended.
        assert_eq!(ledger.lines().unwrap().len(), 3);
    }
}

/// A batch that expires part-way, one that is cancelled, and results that are errors: the
/// requests with results are stored, the others fail their items (as a failed call does), and
/// the ledger says how each batch ended.
#[test]
fn expired_cancelled_and_failed_requests_fail_only_their_items() {
    use hierarag_llm::{BatchLedger, ChatBackendKind, LlmError};

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "expired",
            Ending {
                run: Some(4),
                ..Ending::default()
            },
            "completed",
        ),
        (
            "cancelled",
            Ending {
                run: Some(2),
                cancel: true,
                ..Ending::default()
            },
            "cancelled",
        ),
        (
            "errors",
            Ending {
                error_every: Some(3),
                ..Ending::default()
            },
            "completed",
        ),
    ];
    for (backend, api) in [
        (ChatBackendKind::OpenAi, "openai"),
        (ChatBackendKind::Anthropic, "anthropic"),
    ] {
        for (case, ending, _) in &cases {
            let mock = BatchMock::serve(ending.clone());
            let (client, requests) = deferred_client(
                &runtime,
                &mock,
                backend,
                dir.path(),
                &format!("{api}-{case}"),
                6,
            );
            let ledger = BatchLedger::new(&dir.path().join(format!("{api}-{case}.jsonl")));
            let round = runtime
                .block_on(client.run_batches(&ledger, &|_| {}))
                .unwrap();
            let answered: Vec<bool> = requests
                .iter()
                .map(|r| match runtime.block_on(client.complete(r)) {
                    Ok(reply) => {
                        assert!(reply.cached);
                        true
                    }
                    Err(LlmError::Call { reason, .. }) => {
                        assert!(reason.starts_with("in a batch: "), "{reason}");
                        false
                    }
                    Err(other) => panic!("{api} {case}: {other}"),
                })
                .collect();
            let ok = answered.iter().filter(|a| **a).count();
            let expected_ok = match *case {
                "expired" => 4,
                "cancelled" => 2,
                _ => 4,
            };
            assert_eq!(ok, expected_ok, "{api} {case}: {round:?}");
            assert_eq!(round.succeeded, expected_ok, "{api} {case}");
            assert_eq!(
                round.failed + round.not_run,
                6 - expected_ok,
                "{api} {case}: {round:?}"
            );
            // Nothing is deferred again: the failed requests fail, the stored ones are answered.
            assert_eq!(client.deferred(), 0);
            let lines = ledger.lines().unwrap();
            assert_eq!(lines.len(), 3, "{api} {case}: submitting, submitted, ended");
            let ended = serde_json::to_value(&lines[2]).unwrap();
            let expected_state = match (api, *case) {
                ("anthropic", _) => "ended",
                (_, "expired") => "expired",
                (_, "cancelled") => "cancelled",
                _ => "completed",
            };
            assert_eq!(ended["state"], expected_state, "{api} {case}");
        }
    }
}

/// A batch-mode client of `mock`'s `backend` API, caching in `dir/<name>.sqlite`, with `n`
/// requests ("question 0", …) deferred to its next batch.
fn deferred_client(
    runtime: &tokio::runtime::Runtime,
    mock: &BatchMock,
    backend: hierarag_llm::ChatBackendKind,
    dir: &Path,
    name: &str,
    n: usize,
) -> (hierarag_llm::ChatClient, Vec<hierarag_llm::ChatRequest>) {
    use hierarag_llm::{ChatBackendKind, ChatClient, ChatRequest, LlmConfig, LlmError, Message};
    let mut config = LlmConfig::new(backend, "m");
    config.base_urls = vec![if backend == ChatBackendKind::OpenAi {
        mock.v1()
    } else {
        mock.root.clone()
    }];
    config.cache = hierarag_llm::CacheSetting::Path(format!("{name}.sqlite").into());
    let client = ChatClient::from_config(&config, dir).unwrap();
    client.set_batch_mode(Duration::from_millis(5)).unwrap();
    let requests: Vec<ChatRequest> = (0..n)
        .map(|n| ChatRequest::new(vec![Message::user(format!("question {n}"))]))
        .collect();
    for request in &requests {
        assert!(matches!(
            runtime.block_on(client.complete(request)),
            Err(LlmError::Deferred)
        ));
    }
    (client, requests)
}

/// Issue 56, point 2: a cut line with a byte that is not UTF-8 in a provider's batch results
/// fails only its own request, named; the other results are stored (they are paid for), the
/// ledger records the batch's end, and nothing is deferred again.
#[test]
fn one_unreadable_line_of_batch_output_fails_only_its_request() {
    use hierarag_llm::{BatchLedger, ChatBackendKind, LlmError};

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (backend, api) in [
        (ChatBackendKind::OpenAi, "openai"),
        (ChatBackendKind::Anthropic, "anthropic"),
    ] {
        let mock = BatchMock::serve(Ending {
            spoil_line: Some(3),
            ..Ending::default()
        });
        let name = format!("{api}-spoiled");
        let (client, requests) = deferred_client(&runtime, &mock, backend, dir.path(), &name, 9);
        let ledger = BatchLedger::new(&dir.path().join(format!("{api}-spoiled.jsonl")));
        let round = runtime
            .block_on(client.run_batches(&ledger, &|_| {}))
            .unwrap();
        let mut failed = Vec::new();
        for request in &requests {
            match runtime.block_on(client.complete(request)) {
                Ok(reply) => assert!(reply.cached),
                Err(LlmError::Call { reason, .. }) => failed.push(reason),
                Err(other) => panic!("{api}: {other}"),
            }
        }
        assert_eq!(failed.len(), 1, "{api}: {failed:?}");
        assert!(
            failed[0].contains("line 3 of the provider's batch results does not read"),
            "{api}: {failed:?}"
        );
        assert_eq!(round.succeeded, 8, "{api}: {round:?}");
        assert_eq!(client.deferred(), 0);
        let lines = ledger.lines().unwrap();
        assert_eq!(lines.len(), 3, "{api}: submitting, submitted and ended");
    }
}

/// A run of `client`'s batches that is cut off after `after`, as a crash would cut it.
fn cut_off(
    runtime: &tokio::runtime::Runtime,
    client: &hierarag_llm::ChatClient,
    ledger: &hierarag_llm::BatchLedger,
    after: Duration,
) {
    let run = runtime
        .block_on(async { tokio::time::timeout(after, client.run_batches(ledger, &|_| {})).await });
    assert!(run.is_err(), "the round ended before the cut");
}

/// A client that deferred 4 requests to `mock` (OpenAI) and was killed while it waited for
/// their batch, and the client of its rerun (nothing deferred yet), with the ledger they
/// share; the mock's batches end at the next poll from then on.
fn killed_while_waiting(
    runtime: &tokio::runtime::Runtime,
    mock: &BatchMock,
    dir: &Path,
    name: &str,
) -> (
    hierarag_llm::ChatClient,
    Vec<hierarag_llm::ChatRequest>,
    hierarag_llm::BatchLedger,
) {
    use hierarag_llm::ChatBackendKind::OpenAi;
    let (killed, requests) = deferred_client(runtime, mock, OpenAi, dir, name, 4);
    let ledger = hierarag_llm::BatchLedger::new(&dir.join(format!("{name}.jsonl")));
    cut_off(runtime, &killed, &ledger, Duration::from_millis(200));
    drop(killed);
    mock.set_ending(Ending::default());
    let (rerun, _) = deferred_client(runtime, mock, OpenAi, dir, name, 0);
    (rerun, requests, ledger)
}

/// Whether every request of `requests` is answered from `client`'s cache.
fn all_cached(
    runtime: &tokio::runtime::Runtime,
    client: &hierarag_llm::ChatClient,
    requests: &[hierarag_llm::ChatRequest],
) -> bool {
    requests.iter().all(|r| {
        runtime
            .block_on(client.complete(r))
            .is_ok_and(|reply| reply.cached)
    })
}

/// Issue 56, point 3: a create that made the batch and then answered 500 is followed by a
/// look-up of the batch (`GET /v1/batches`, by the submission id in its metadata), not by a
/// second batch; a crash while the create is in flight is followed, on the rerun, by the same
/// look-up and a wait for the batch found.
#[test]
fn a_batch_is_never_paid_twice_when_its_create_fails_or_is_cut_off() {
    use hierarag_llm::{BatchLedger, ChatBackendKind};
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();

    let mock = BatchMock::serve(Ending {
        fail_creates: 1,
        ..Ending::default()
    });
    let (client, requests) = deferred_client(
        &runtime,
        &mock,
        ChatBackendKind::OpenAi,
        dir.path(),
        "5xx",
        5,
    );
    let ledger = BatchLedger::new(&dir.path().join("5xx.jsonl"));
    let round = runtime
        .block_on(client.run_batches(&ledger, &|_| {}))
        .unwrap();
    assert_eq!(mock.submitted(), 1, "a second batch was made: {round:?}");
    assert_eq!(round.succeeded, 5, "{round:?}");
    assert!(all_cached(&runtime, &client, &requests));

    let mock = BatchMock::serve(Ending {
        create_delay: Duration::from_millis(400),
        ..Ending::default()
    });
    let (killed, requests) = deferred_client(
        &runtime,
        &mock,
        ChatBackendKind::OpenAi,
        dir.path(),
        "cut",
        5,
    );
    let ledger = BatchLedger::new(&dir.path().join("cut.jsonl"));
    cut_off(&runtime, &killed, &ledger, Duration::from_millis(150));
    assert_eq!(mock.submitted(), 1, "the create reached the provider");
    drop(killed);
    // The rerun: its stage's first round re-attaches before any pass defers a request.
    let (rerun, _) = deferred_client(
        &runtime,
        &mock,
        ChatBackendKind::OpenAi,
        dir.path(),
        "cut",
        0,
    );
    let round = runtime
        .block_on(rerun.run_batches(&ledger, &|_| {}))
        .unwrap();
    assert_eq!((round.reattached, round.succeeded), (1, 5), "{round:?}");
    assert_eq!(mock.submitted(), 1, "a second batch was made");
    assert!(all_cached(&runtime, &rerun, &requests));
}

/// Issue 56, points 4 and 7: the results of a batch re-attached after a crash are charged to
/// the rerun's budget (the killed process's reservations died with it); a batch the provider
/// no longer knows (404) is ended in the ledger and its requests go in the next batch.
#[test]
fn reattached_results_are_charged_and_a_batch_the_provider_forgot_is_resubmitted() {
    use hierarag_llm::{LedgerLine, LlmError};
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let waiting = Ending {
        polls: 1_000,
        ..Ending::default()
    };
    let prices = hierarag_llm::Prices {
        prompt_per_mtok: 1.0,
        completion_per_mtok: 2.0,
    };

    // Charged: killed while it waits, the rerun re-attaches with a budget of its own.
    let mock = BatchMock::serve(waiting.clone());
    let (rerun, requests, ledger) = killed_while_waiting(&runtime, &mock, dir.path(), "charged");
    let budget = std::sync::Arc::new(hierarag_llm::Budget::new(None, Some(1_000_000), 0.0, 0));
    rerun.set_budget(std::sync::Arc::clone(&budget), prices);
    let round = runtime
        .block_on(rerun.run_batches(&ledger, &|_| {}))
        .unwrap();
    assert_eq!((round.reattached, round.succeeded), (1, 4), "{round:?}");
    let usage = rerun.usage();
    let used = usage.prompt_tokens + usage.completion_tokens;
    assert!(used > 0, "{usage:?}");
    assert_eq!(
        budget.spent().1,
        used,
        "the re-attached results are charged"
    );
    assert!(all_cached(&runtime, &rerun, &requests));

    // Forgotten: the provider answers 404 for the ledger's batch.
    let mock = BatchMock::serve(waiting);
    let (rerun, requests, ledger) = killed_while_waiting(&runtime, &mock, dir.path(), "forgot");
    mock.forget_batches();
    let mut notes = std::sync::Mutex::new(Vec::new());
    let note = |line: &str| notes.lock().unwrap().push(line.to_string());
    let round = runtime.block_on(rerun.run_batches(&ledger, &note)).unwrap();
    assert_eq!((round.reattached, round.succeeded), (1, 0), "{round:?}");
    let notes = notes.get_mut().unwrap().join("\n");
    assert!(notes.contains("the provider does not know it"), "{notes}");
    let ended = ledger.lines().unwrap();
    assert!(
        ended.iter().any(|line| matches!(line,
            LedgerLine::Ended { state, .. } if state == "unknown to the provider")),
        "{ended:?}"
    );
    // The next pass defers the requests again, and the next round answers them.
    for request in &requests {
        assert!(matches!(
            runtime.block_on(rerun.complete(request)),
            Err(LlmError::Deferred)
        ));
    }
    let round = runtime
        .block_on(rerun.run_batches(&ledger, &|_| {}))
        .unwrap();
    assert_eq!((round.submitted, round.succeeded), (1, 4), "{round:?}");
    assert!(all_cached(&runtime, &rerun, &requests));
}

/// Issue 56, point 8: `batch import` of a file with a repeated line, a conflicting duplicate, an
/// id never exported, a cut line with a byte that is not UTF-8 and a line that names no request:
/// every good result is stored and counted once, and each bad line fails under its custom_id
/// (or its line).
#[test]
fn batch_import_names_bad_lines_and_conflicting_duplicates() {
    use hierarag_llm::{ChatBackendKind, ChatClient, LlmConfig};
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut config = LlmConfig::new(ChatBackendKind::OpenAi, "m");
    config.base_urls = vec!["http://127.0.0.1:9/v1".into()];
    config.cache = hierarag_llm::CacheSetting::Path("import.sqlite".into());
    let client = ChatClient::from_config(&config, dir.path()).unwrap();
    let line = |id: &str, text: &str| {
        json!({"id": "batch_req", "custom_id": id, "error": null,
               "response": {"status_code": 200, "request_id": "req",
                            "body": {"id": "c", "object": "chat.completion", "created": 0,
                                     "model": "m", "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": text}}],
                                     "usage": {"prompt_tokens": 5, "completion_tokens": 2,
                                               "total_tokens": 7}}}})
        .to_string()
    };
    let cut = line("k4", "four");
    let mut file = [
        line("k1", "one"),
        line("k2", "two"),
        line("k1", "one"),
        line("k2", "another two"),
        line("k3", "three"),
        line("k9", "never requested"),
        "{\"no\": \"id\", \"cut".into(),
    ]
    .join("\n")
    .into_bytes();
    file.push(b'\n');
    file.extend_from_slice(&cut.as_bytes()[..cut.len() / 2]);
    file.extend_from_slice(b"\xff\n");
    // The requests `batch export` wrote out.
    let requested: std::collections::HashSet<String> =
        ["k1", "k2", "k3", "k4"].map(String::from).into();
    let (stored, failed) = runtime
        .block_on(client.import_batch_output(&file, Some(&requested)))
        .unwrap();
    assert_eq!(stored, 3, "{failed:?}");
    let reason = |id: &str| -> String {
        failed
            .iter()
            .find(|(named, _)| named == id)
            .unwrap_or_else(|| panic!("{id}: {failed:?}"))
            .1
            .clone()
    };
    assert_eq!(failed.len(), 4, "{failed:?}");
    assert!(reason("line 7").contains("line 7 of the provider's batch results does not read"));
    assert!(reason("k4").contains("line 8"), "{failed:?}");
    assert!(reason("k2").contains("another result; the first is kept"));
    assert!(reason("k9").contains("no request of `batch export` has this custom_id"));
    // Counted once each: three results stored, two lines that failed.
    assert_eq!(client.usage().calls, 5, "{:?}", client.usage());
}
