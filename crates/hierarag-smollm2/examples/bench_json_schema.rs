//! Benchmark: the cost of JSON-schema constrained decoding (llguidance's token masks) on the
//! generator's and the filter's calls, as the pipeline makes them.
//!
//! `cargo run --release -p hierarag-smollm2 --example bench_json_schema -- GGUF CORPUS_JSONL [N_DOCS]`
//!
//! For each of the first N_DOCS (default 4) documents of CORPUS_JSONL (`id`, `text`): the
//! generator's prompt (3 candidates, 1,500 words of the document) with `candidates_schema(3)` at
//! temperature 0.7, then the filter's prompt over the candidates it wrote with
//! `verdicts_schema(3)` at temperature 0. Prints one JSON line a call (tokens, decode tokens/s,
//! mask µs a token, whether the reply parses as JSON) and a last line with the means per task.
//! Threads: `CANDLE_NUM_THREADS`.
use std::io::BufRead;
use std::path::Path;

use hierarag_generate::prompt::{
    candidates_schema, filter_messages, generation_messages, verdicts_schema,
};
use hierarag_generate::{QuestionSpec, SourceDocument, parse_candidates};
use hierarag_smollm2::{GenerateParams, LoadOptions, SmolLm2};
use serde_json::{Value, json};

const CANDIDATES: usize = 3;
const MAX_DOCUMENT_WORDS: usize = 1500;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: bench_json_schema GGUF CORPUS_JSONL [N_DOCS]");
        std::process::exit(2);
    }
    let n_docs: usize = args.get(3).map(|s| s.parse()).transpose()?.unwrap_or(4);
    let model = SmolLm2::load(Path::new(&args[1]), LoadOptions::default())?;
    let mut documents = Vec::new();
    for line in std::io::BufReader::new(std::fs::File::open(&args[2])?)
        .lines()
        .take(n_docs)
    {
        let record: Value = serde_json::from_str(&line?)?;
        documents.push(SourceDocument {
            id: record["id"].as_str().unwrap_or_default().to_owned(),
            text: record["text"].as_str().unwrap_or_default().to_owned(),
        });
    }
    let spec = QuestionSpec {
        constraints: vec![(
            "Question Complexity".into(),
            "simple".into(),
            "A question answered by one fact.".into(),
        )],
        personas: vec![(
            "Expertise".into(),
            "novice".into(),
            "Someone new to the topic.".into(),
        )],
        multi_doc: false,
        unanswerable: false,
        language: Default::default(),
    };
    // Mask µs a token, per task.
    let (mut generate_us, mut filter_us) = (Vec::new(), Vec::new());
    for (n, document) in documents.iter().enumerate() {
        let documents = std::slice::from_ref(document);
        let messages = generation_messages(&spec, documents, CANDIDATES, MAX_DOCUMENT_WORDS);
        let params = GenerateParams {
            temperature: 0.7,
            max_tokens: 1024,
            seed: n as u64,
            json_schema: Some(candidates_schema(CANDIDATES).schema),
            ..GenerateParams::default()
        };
        let generation = model.generate(&model.chat_prompt(&messages)?, &params)?;
        generate_us.push(report(n, "generate", &generation));
        let candidates = parse_candidates(&generation.text).unwrap_or_default();
        if candidates.is_empty() {
            continue;
        }
        let messages = filter_messages(&spec, documents, &candidates, MAX_DOCUMENT_WORDS);
        let params = GenerateParams {
            temperature: 0.0,
            max_tokens: 512,
            json_schema: Some(verdicts_schema(candidates.len()).schema),
            ..GenerateParams::default()
        };
        let generation = model.generate(&model.chat_prompt(&messages)?, &params)?;
        filter_us.push(report(n, "filter", &generation));
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    println!(
        "{}",
        json!({
            "generate_mask_us_per_token": mean(&generate_us),
            "filter_mask_us_per_token": mean(&filter_us),
        })
    );
    Ok(())
}

/// Prints one call's line; returns its mask µs a token.
fn report(document: usize, task: &str, generation: &hierarag_smollm2::Generation) -> f64 {
    let timings = &generation.timings;
    let mask_us = timings.mask.as_secs_f64() * 1e6 / generation.tokens.len().max(1) as f64;
    println!(
        "{}",
        json!({
            "document": document,
            "task": task,
            "prompt_tokens": timings.prompt_tokens,
            "tokens": generation.tokens.len(),
            "finish": generation.finish_reason.as_str(),
            "parses": serde_json::from_str::<Value>(&generation.text).is_ok(),
            "decode_tok_s": timings.decode_tokens_per_second(),
            "mask_us_per_token": mask_us,
        })
    );
    mask_us
}
