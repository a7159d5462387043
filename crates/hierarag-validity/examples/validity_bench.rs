//! The validity stage at the size of issue 45's target: `validity()` on generated synthetic and
//! human benchmarks, timed, with its inputs written for `bench/validity.py` (numpy + scipy
//! computing the same statistics). Run by `bench/validity.sh`; see docs/benchmarks.md
//! ("Validity").
//!
//! ```sh
//! cargo run --release -p hierarag-validity --example validity_bench -- --out DIR \
//!     [--synthetic 10000] [--human 10000] [--systems 4] [--bootstrap 1000] [--reps 3] [--seed 1]
//! ```
//!
//! Two dimensions (`qc`, `qt`), each with two coarse and four medium categories; every question
//! is placed at both levels of both (a human question untagged now and then, placed without
//! confidence more often). The human questions follow another category mix, are shorter,
//! expect a refusal more often and lack a relevant document now and then. A system's CS is its
//! question's `qc` difficulty plus a `qt` effect (shifted on the human side) plus the system's
//! skill on that side plus N(0, 0.12) noise, clipped to [0, 1]; the systems' human order
//! differs from their synthetic one in one pair.
//!
//! Each system's `Analysis` (which `SystemResult` carries; the validity check only reads its
//! granularity findings) is computed before the clock starts. Only `validity()` is timed, best
//! of `--reps`. DIR receives `inputs.json` (per side: question ids, the category at each
//! dimension and level, the properties; per system and side: CS per question, in question
//! order), `validity.json` and `timing.json`.

use std::collections::HashMap;
use std::error::Error;
use std::path::PathBuf;
use std::time::Instant;

use hierarag_analysis::{Metric, Observation, Scores};
use hierarag_records::CategoryRef;
use hierarag_taxonomy::{Granularity, Taxonomy};
use hierarag_validity::{Benchmark, Question, Settings, SystemResult, validity};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;

const TAXONOMY: &str = r#"
[[dimension]]
key = "qc"
name = "Question Complexity"
[[dimension.coarse]]
name = "simple"
description = "one fact"
[[dimension.coarse]]
name = "complex"
description = "several facts"
[[dimension.medium]]
name = "single_fact"
parent = "simple"
description = "a"
[[dimension.medium]]
name = "multi_fact"
parent = "simple"
description = "b"
[[dimension.medium]]
name = "cross_section"
parent = "complex"
description = "c"
[[dimension.medium]]
name = "comparative"
parent = "complex"
description = "d"

[[dimension]]
key = "qt"
name = "Question Type"
[[dimension.coarse]]
name = "factoid"
description = "a short fact"
[[dimension.coarse]]
name = "reasoning"
description = "an explanation"
[[dimension.medium]]
name = "entity"
parent = "factoid"
description = "e"
[[dimension.medium]]
name = "numeric"
parent = "factoid"
description = "f"
[[dimension.medium]]
name = "causal"
parent = "reasoning"
description = "g"
[[dimension.medium]]
name = "procedural"
parent = "reasoning"
description = "h"
"#;

/// Per dimension: its key and its medium categories with their coarse parents.
const DIMENSIONS: [(&str, [(&str, &str); 4]); 2] = [
    (
        "qc",
        [
            ("simple", "single_fact"),
            ("simple", "multi_fact"),
            ("complex", "cross_section"),
            ("complex", "comparative"),
        ],
    ),
    (
        "qt",
        [
            ("factoid", "entity"),
            ("factoid", "numeric"),
            ("reasoning", "causal"),
            ("reasoning", "procedural"),
        ],
    ),
];

/// Each side's mix of the medium categories of `qc` and `qt`.
const SYNTHETIC_MIX: [[f64; 4]; 2] = [[1.0; 4], [1.0; 4]];
const HUMAN_MIX: [[f64; 4]; 2] = [[2.0, 2.0, 0.5, 0.5], [1.0, 1.5, 1.0, 0.5]];

/// CS of a `qc` medium category; the `qt` medium effects on each side.
const QC_BASE: [f64; 4] = [0.7, 0.6, 0.45, 0.35];
const QT_EFFECT: [[f64; 4]; 2] = [[0.05, -0.02, 0.0, -0.04], [0.05, -0.04, 0.01, -0.02]];

/// The systems (at most six): name, skill on the synthetic questions, skill on the human ones.
/// `hybrid` and `rerank` do not differ on the synthetic side; on the human side `rerank` is
/// worse.
const SYSTEMS: [(&str, f64, f64); 6] = [
    ("bm25", 0.0, 0.0),
    ("dense", 0.05, 0.06),
    ("hybrid", 0.08, 0.09),
    ("rerank", 0.081, 0.07),
    ("colbert", 0.03, 0.02),
    ("splade", 0.06, 0.065),
];

struct Options {
    synthetic: usize,
    human: usize,
    systems: usize,
    bootstrap: usize,
    reps: usize,
    seed: u64,
    out: PathBuf,
}

fn options() -> Result<Options, String> {
    let mut options = Options {
        synthetic: 10_000,
        human: 10_000,
        systems: 4,
        bootstrap: 1_000,
        reps: 3,
        seed: 1,
        out: PathBuf::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .ok_or_else(|| format!("{flag} needs a value (see the file's doc comment)"))?;
        let number = || {
            value
                .parse::<usize>()
                .map_err(|e| format!("{flag} {value}: {e}"))
        };
        match flag.as_str() {
            "--synthetic" => options.synthetic = number()?,
            "--human" => options.human = number()?,
            "--systems" => options.systems = number()?,
            "--bootstrap" => options.bootstrap = number()?,
            "--reps" => options.reps = number()?.max(1),
            "--seed" => options.seed = number()? as u64,
            "--out" => options.out = PathBuf::from(value),
            _ => {
                return Err(format!(
                    "unknown option {flag} (see the file's doc comment)"
                ));
            }
        }
    }
    if options.out.as_os_str().is_empty() {
        return Err("--out DIR is required".into());
    }
    if !(2..=SYSTEMS.len()).contains(&options.systems) {
        return Err(format!("--systems must be 2 to {}", SYSTEMS.len()));
    }
    Ok(options)
}

fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// An index into `weights`, drawn in proportion to them.
fn draw(rng: &mut ChaCha8Rng, weights: &[f64; 4]) -> usize {
    let mut x = rng.random::<f64>() * weights.iter().sum::<f64>();
    let mut i = 0;
    while i < 3 && x >= weights[i] {
        x -= weights[i];
        i += 1;
    }
    i
}

/// One generated question with the medium category index of each dimension (`None`: not
/// tagged).
struct Generated {
    question: Question,
    medium: Option<[usize; 2]>,
}

fn questions(human: bool, n: usize, rng: &mut ChaCha8Rng) -> Vec<Generated> {
    let side = if human { "human" } else { "synthetic" };
    let mix = if human { &HUMAN_MIX } else { &SYNTHETIC_MIX };
    (0..n)
        .map(|i| {
            let medium = [draw(rng, &mix[0]), draw(rng, &mix[1])];
            let untagged = human && i % 100 == 99;
            let categories = if untagged {
                Vec::new()
            } else {
                DIMENSIONS
                    .iter()
                    .zip(medium)
                    .flat_map(|((key, categories), c)| {
                        let (coarse, medium) = categories[c];
                        [(Granularity::Coarse, coarse), (Granularity::Medium, medium)].map(
                            |(level, name)| CategoryRef {
                                dimension: (*key).into(),
                                level,
                                category: name.into(),
                            },
                        )
                    })
                    .collect()
            };
            let unplaced = if untagged {
                vec!["(not tagged)".to_owned()]
            } else if human && i % 25 == 0 {
                vec!["qc".to_owned()]
            } else {
                Vec::new()
            };
            let words: f64 = if human { 9.0 } else { 14.0 };
            let has_document = !human || rng.random::<f64>() >= 0.1;
            let refusal_expected = rng.random::<f64>() < if human { 0.08 } else { 0.05 };
            let overlap = rng.random::<f64>();
            let gold_rank = f64::from(rng.random_range(1..20));
            let answer_words = f64::from(rng.random_range(1..30));
            Generated {
                question: Question {
                    id: format!("{side}-{i}"),
                    categories,
                    unplaced,
                    words: (words + rng.random_range(-4.0..4.0)).round(),
                    overlap: has_document.then_some(overlap),
                    gold_rank: has_document.then_some(gold_rank),
                    answer_words: (!refusal_expected).then_some(answer_words),
                    refusal_expected,
                    has_reference: true,
                },
                medium: (!untagged).then_some(medium),
            }
        })
        .collect()
}

fn analysis_settings(seed: u64) -> hierarag_analysis::Settings {
    hierarag_analysis::Settings {
        metric: Metric::Cs,
        ddof: 0,
        nmi_bins: 5,
        epsilon: 1e-6,
        bootstrap: 200,
        permutations: 0,
        confidence: 0.95,
        seed,
    }
}

/// One side's benchmark, and each system's CS in question order.
fn benchmark(
    taxonomy: &Taxonomy,
    human: bool,
    n: usize,
    n_systems: usize,
    seed: u64,
) -> (Benchmark, Vec<Vec<f64>>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let generated = questions(human, n, &mut rng);
    let mut systems = Vec::new();
    let mut columns = Vec::new();
    for &(name, synthetic_skill, human_skill) in &SYSTEMS[..n_systems] {
        let skill = if human { human_skill } else { synthetic_skill };
        // An untagged human question is as hard as the average one.
        let cs: Vec<f64> = generated
            .iter()
            .map(|g| {
                let difficulty = g.medium.map_or(0.5, |[qc, qt]| {
                    QC_BASE[qc] + QT_EFFECT[usize::from(human)][qt]
                });
                (difficulty + skill + 0.12 * normal(&mut rng)).clamp(0.0, 1.0)
            })
            .collect();
        let scores: HashMap<String, Scores> = generated
            .iter()
            .zip(&cs)
            .map(|(g, &cs)| {
                let scores = Scores {
                    cs,
                    ..Scores::default()
                };
                (g.question.id.clone(), scores)
            })
            .collect();
        let observations: Vec<Observation> = generated
            .iter()
            .flat_map(|g| {
                let q = &g.question;
                q.categories.iter().map(|c| Observation {
                    id: format!("{}@{}/{}", q.id, c.dimension, c.level),
                    set: format!("{}/{}", c.dimension, c.level),
                    categories: vec![c.clone()],
                    unanswerable: q.refusal_expected,
                    scores: scores[&q.id],
                    texts: None,
                })
            })
            .collect();
        let analysis =
            hierarag_analysis::analyze(&observations, taxonomy, &analysis_settings(seed));
        systems.push(SystemResult {
            name: name.into(),
            scores,
            analysis,
        });
        columns.push(cs);
    }
    let benchmark = Benchmark {
        questions: generated.into_iter().map(|g| g.question).collect(),
        systems,
    };
    (benchmark, columns)
}

/// One side as `bench/validity.py` reads it.
fn side_json(benchmark: &Benchmark, columns: &[Vec<f64>]) -> serde_json::Value {
    let questions = &benchmark.questions;
    let mut categories = serde_json::Map::new();
    for (key, _) in DIMENSIONS {
        for level in [Granularity::Coarse, Granularity::Medium] {
            let labels: Vec<Option<&str>> = questions
                .iter()
                .map(|q| {
                    q.categories
                        .iter()
                        .find(|c| c.dimension == key && c.level == level)
                        .map(|c| c.category.as_str())
                })
                .collect();
            categories.insert(format!("{key}/{level}"), json!(labels));
        }
    }
    let scores: serde_json::Map<String, serde_json::Value> = benchmark
        .systems
        .iter()
        .zip(columns)
        .map(|(s, cs)| (s.name.clone(), json!(cs)))
        .collect();
    json!({
        "ids": questions.iter().map(|q| q.id.as_str()).collect::<Vec<_>>(),
        "categories": categories,
        "words": questions.iter().map(|q| q.words).collect::<Vec<_>>(),
        "overlap": questions.iter().map(|q| q.overlap).collect::<Vec<_>>(),
        "gold_rank": questions.iter().map(|q| q.gold_rank).collect::<Vec<_>>(),
        "answer_words": questions.iter().map(|q| q.answer_words).collect::<Vec<_>>(),
        "refusal_expected": questions.iter().map(|q| q.refusal_expected).collect::<Vec<_>>(),
        "cs": scores,
    })
}

fn main() -> Result<(), Box<dyn Error>> {
    let options = options()?;
    let taxonomy = Taxonomy::from_toml_str(TAXONOMY, "validity_bench")?;
    let started = Instant::now();
    let (synthetic, synthetic_cs) = benchmark(
        &taxonomy,
        false,
        options.synthetic,
        options.systems,
        options.seed,
    );
    let (human, human_cs) = benchmark(
        &taxonomy,
        true,
        options.human,
        options.systems,
        options.seed.wrapping_add(1),
    );
    let setup_s = started.elapsed().as_secs_f64();
    let settings = Settings {
        metric: Metric::Cs,
        metrics: vec![Metric::Cs],
        bootstrap: options.bootstrap,
        confidence: 0.95,
        seed: options.seed,
    };
    let mut runs = Vec::new();
    let mut result = None;
    for _ in 0..options.reps {
        let started = Instant::now();
        let v = validity(&taxonomy, &synthetic, &human, &settings);
        runs.push(started.elapsed().as_secs_f64());
        if let Some(previous) = &result {
            assert_eq!(previous, &v, "validity() is deterministic");
        }
        result = Some(v);
    }
    let validity = result.expect("at least one repetition");
    let best = runs.iter().copied().fold(f64::INFINITY, f64::min);

    std::fs::create_dir_all(&options.out)?;
    let levels: Vec<serde_json::Value> = taxonomy
        .dimensions
        .iter()
        .map(|d| {
            json!({
                "dimension": d.key,
                "levels": d.levels.iter().map(|l| json!({
                    "level": l.granularity,
                    "categories": l.categories.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let inputs = json!({
        "taxonomy": levels,
        "settings": settings,
        "systems": synthetic.systems.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
        "synthetic": side_json(&synthetic, &synthetic_cs),
        "human": side_json(&human, &human_cs),
    });
    std::fs::write(
        options.out.join("inputs.json"),
        serde_json::to_vec(&inputs)?,
    )?;
    std::fs::write(
        options.out.join("validity.json"),
        serde_json::to_vec_pretty(&validity)?,
    )?;
    let timing = json!({
        "validity_s": best,
        "runs_s": runs,
        "setup_s": setup_s,
        "synthetic_questions": options.synthetic,
        "human_questions": options.human,
        "systems": options.systems,
        "bootstrap": options.bootstrap,
    });
    std::fs::write(
        options.out.join("timing.json"),
        serde_json::to_vec_pretty(&timing)?,
    )?;
    eprintln!(
        "[validity_bench] {} synthetic + {} human questions × {} systems, {} resamples: \
inputs and analyses {setup_s:.2} s (not timed)",
        options.synthetic, options.human, options.systems, options.bootstrap
    );
    println!(
        "validity(): best of {} {best:.3} s (runs {})",
        runs.len(),
        runs.iter()
            .map(|r| format!("{r:.3}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}
