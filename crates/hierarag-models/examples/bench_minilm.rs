//! Benchmark: all-MiniLM-L6-v2 sentences/s (driven by `bench/llm.py`, which runs
//! sentence-transformers on the same sentences in the same run as the peer).
//!
//! `cargo run --release -p hierarag-models --example bench_minilm -- MODEL_DIR SENTENCES_FILE [REPS] [BATCH] [THREADS]`
//!
//! MODEL_DIR holds config.json, model.safetensors and tokenizer.json; SENTENCES_FILE one
//! sentence per line. Prints one JSON line (median sentences/s over REPS full passes).
use std::path::Path;
use std::time::Instant;

use hierarag_models::minilm::MiniLm;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: bench_minilm MODEL_DIR SENTENCES_FILE [REPS] [BATCH] [THREADS]");
        std::process::exit(2);
    }
    let dir = Path::new(&args[1]);
    let reps: usize = args.get(3).map(|s| s.parse()).transpose()?.unwrap_or(3);
    let batch: usize = args.get(4).map(|s| s.parse()).transpose()?.unwrap_or(32);
    let threads: usize = args.get(5).map(|s| s.parse()).transpose()?.unwrap_or(2);
    let text = std::fs::read_to_string(&args[2])?;
    let sentences: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    let model = MiniLm::load(
        &dir.join("config.json"),
        &dir.join("model.safetensors"),
        &dir.join("tokenizer.json"),
    )?
    .with_batch_size(batch)
    .with_threads(threads)?;
    let _ = model.embed(&sentences[..sentences.len().min(64)])?; // warm-up
    let mut rates = Vec::new();
    for _ in 0..reps {
        let t = Instant::now();
        let v = model.embed(&sentences)?;
        let s = t.elapsed().as_secs_f64();
        assert_eq!(v.len(), sentences.len());
        rates.push(sentences.len() as f64 / s);
    }
    let mut sorted = rates.clone();
    sorted.sort_by(|a, b| a.total_cmp(b));
    println!(
        "{}",
        serde_json::json!({
            "sentences": sentences.len(),
            "batch_size": model.batch_size(),
            "threads": model.threads(),
            "reps": reps,
            "sentences_per_s": sorted[sorted.len() / 2],
            "all": rates,
        })
    );
    Ok(())
}
