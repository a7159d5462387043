//! Benchmark: embedded SmolLM2 prefill and decode tokens/s (driven by `bench/llm.py`, which
//! runs llama.cpp's server on the same GGUF as the peer in the same run).
//!
//! `cargo run --release -p hierarag-smollm2 --example bench_smollm2 -- GGUF PROMPT_FILE [REPS] [N_PREDICT] [q4_1|requantize]` (default q4_1)
//!
//! PROMPT_FILE holds the user message. Threads: `CANDLE_NUM_THREADS`. Prints one JSON line.
use std::path::Path;

use hierarag_llm::Message;
use hierarag_smollm2::{GenerateParams, LoadOptions, SmolLm2};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: bench_smollm2 GGUF PROMPT_FILE [REPS] [N_PREDICT] [q4_1|requantize]");
        std::process::exit(2);
    }
    let reps: usize = args.get(3).map(|s| s.parse()).transpose()?.unwrap_or(5);
    let n_predict: usize = args.get(4).map(|s| s.parse()).transpose()?.unwrap_or(128);
    let requantize = args.get(5).is_some_and(|s| s == "requantize");
    let user = std::fs::read_to_string(&args[2])?;
    let model = SmolLm2::load(
        Path::new(&args[1]),
        LoadOptions {
            requantize,
            ..LoadOptions::default()
        },
    )?;
    let prompt = model.chat_prompt(&[Message::user(user.trim_end())])?;
    // The end-of-turn token would stop generation early; llama.cpp gets ignore_eos. Generate
    // with a budget and count only what was decoded, so tokens/s stay comparable.
    let params = GenerateParams {
        temperature: 0.0,
        max_tokens: n_predict,
        ..GenerateParams::default()
    };
    let _ = model.generate(
        &prompt,
        &GenerateParams {
            max_tokens: 8,
            ..params.clone()
        },
    )?; // warm-up
    let (mut pre, mut dec, mut decoded) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..reps {
        let g = model.generate(&prompt, &params)?;
        pre.push(g.timings.prefill_tokens_per_second());
        dec.push(g.timings.decode_tokens_per_second());
        decoded.push(g.timings.decoded_tokens as f64);
    }
    println!(
        "{}",
        serde_json::json!({
            "prompt_tokens": prompt.len(),
            "prompt_ids": prompt,
            "decoded_tokens_median": median(decoded),
            "reps": reps,
            "requantize": requantize,
            "prefill_tok_s": median(pre.clone()),
            "decode_tok_s": median(dec.clone()),
            "prefill_all": pre,
            "decode_all": dec,
        })
    );
    Ok(())
}
