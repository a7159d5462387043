//! Simulation: how often the recommended granularity moves past the level that carries an
//! effect, and how often it finds a real fine-level effect, on generated scores of known
//! structure analysed as `hierarag analyze` does.
//!
//! ```sh
//! cargo run --release -p hierarag-analysis --example simulate_granularity -- [SEEDS] [BOOTSTRAP]
//! ```
//!
//! The `qc` dimension of the built-in taxonomy at the paper's sizes (333 / 333 / 446 questions
//! at coarse / medium / fine, split evenly over 2 / 4 / 8 categories), CS ~ N(0.7 + effect,
//! 0.15). Scenarios (a child inherits its parent's effect and adds its own offset):
//!
//! - `none`: no effect anywhere;
//! - `coarse`: the coarse categories at ±0.015 (0.03 apart), nothing below;
//! - `coarse+medium`: also ±0.02 between the children of each coarse category;
//! - `fine`: also ±0.03 between the children of each medium category (a fine spread of about
//!   0.04, near the paper's QC DiscPow of 0.053 at fine).
//!
//! For each rule it prints the share of seeds recommending each level, the false moves (a
//! recommendation finer than the finest level carrying an effect) and, for `fine`, the power.
//! Rules: the first release's (Δ's interval above 1 at each step, computed here from the
//! analysis) and the analysis' own recommendation (also Δ corrected's interval above 1, or the
//! corrected DiscPow above 0 where the coarser level's is 0).
//! Seeds are 0..SEEDS (default 200), bootstrap 1,000 resamples (the analysis' default).

use hierarag_analysis::{Analysis, Observation, Scores, Settings, analyze};
use hierarag_plan::CategoryRef;
use hierarag_taxonomy::{Granularity, Taxonomy};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const SIZES: [(Granularity, usize); 3] = [
    (Granularity::Coarse, 333),
    (Granularity::Medium, 333),
    (Granularity::Fine, 446),
];

fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Offsets of each level's own effect: the k-th child of a parent gets +x or −x by parity.
struct Scenario {
    name: &'static str,
    offsets: [f64; 3],
    /// The finest level that carries an effect (None: no effect at all).
    effect_level: Option<Granularity>,
}

const SCENARIOS: [Scenario; 4] = [
    Scenario {
        name: "none",
        offsets: [0.0, 0.0, 0.0],
        effect_level: None,
    },
    Scenario {
        name: "coarse",
        offsets: [0.015, 0.0, 0.0],
        effect_level: Some(Granularity::Coarse),
    },
    Scenario {
        name: "coarse+medium",
        offsets: [0.015, 0.02, 0.0],
        effect_level: Some(Granularity::Medium),
    },
    Scenario {
        name: "fine",
        offsets: [0.015, 0.02, 0.03],
        effect_level: Some(Granularity::Fine),
    },
];

/// The effect of every category of `qc`, by name.
fn effects(taxonomy: &Taxonomy, offsets: [f64; 3]) -> std::collections::HashMap<String, f64> {
    let dimension = taxonomy.dimension("qc").expect("qc");
    let mut effect = std::collections::HashMap::new();
    for (l, granularity) in Granularity::ALL.iter().enumerate() {
        let level = dimension.level(*granularity).expect("level");
        let mut seen: std::collections::HashMap<Option<String>, usize> = Default::default();
        for category in &level.categories {
            let index = seen.entry(category.parent.clone()).or_default();
            let sign = if index.is_multiple_of(2) { 1.0 } else { -1.0 };
            *index += 1;
            let inherited = category
                .parent
                .as_ref()
                .map_or(0.0, |parent| effect[parent]);
            effect.insert(category.name.clone(), inherited + sign * offsets[l]);
        }
    }
    effect
}

fn observations(taxonomy: &Taxonomy, scenario: &Scenario, seed: u64) -> Vec<Observation> {
    let effect = effects(taxonomy, scenario.offsets);
    let dimension = taxonomy.dimension("qc").expect("qc");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::new();
    for (granularity, total) in SIZES {
        let categories = &dimension.level(granularity).expect("level").categories;
        for i in 0..total {
            let category = &categories[i % categories.len()];
            out.push(Observation {
                id: format!("{granularity}-{i}"),
                set: format!("qc/{granularity}"),
                categories: vec![CategoryRef {
                    dimension: "qc".into(),
                    level: granularity,
                    category: category.name.clone(),
                }],
                scores: Scores {
                    cs: 0.7 + effect[&category.name] + 0.15 * normal(&mut rng),
                    ..Scores::default()
                },
                texts: None,
            });
        }
    }
    out
}

/// The first release's rule: the level reached by steps whose Δ has an interval above 1.
fn interval_rule(analysis: &Analysis) -> Granularity {
    let mut chosen = Granularity::Coarse;
    for granularity in [Granularity::Medium, Granularity::Fine] {
        let step = analysis
            .levels
            .iter()
            .find(|l| l.dimension == "qc" && l.level == granularity)
            .and_then(|l| l.delta)
            .and_then(|d| d.ratio.ci)
            .is_some_and(|[lo, _]| lo > 1.0);
        if !step {
            break;
        }
        chosen = granularity;
    }
    chosen
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let seeds: u64 = args.get(1).map_or(200, |s| s.parse().expect("SEEDS"));
    let bootstrap: usize = args.get(2).map_or(1000, |s| s.parse().expect("BOOTSTRAP"));
    let taxonomy = Taxonomy::default_taxonomy();
    let settings = Settings {
        bootstrap,
        permutations: 0,
        ..Settings::default()
    };
    println!("| scenario | rule | coarse | medium | fine | false moves | power (fine found) |");
    println!("|---|---|---|---|---|---|---|");
    for scenario in &SCENARIOS {
        let mut counts = [[0u64; 3]; 2];
        for seed in 0..seeds {
            let data = observations(&taxonomy, scenario, seed);
            let analysis = analyze(
                &data,
                &taxonomy,
                &Settings {
                    seed,
                    ..settings.clone()
                },
            );
            let now = analysis.dimensions[0]
                .recommendation
                .as_ref()
                .expect("a recommendation")
                .level;
            for (rule, level) in [interval_rule(&analysis), now].into_iter().enumerate() {
                counts[rule][level as usize] += 1;
            }
        }
        for (rule, name) in ["Δ interval (first release)", "Δ and Δ corrected (now)"]
            .into_iter()
            .enumerate()
        {
            let share = |k: usize| 100.0 * counts[rule][k] as f64 / seeds as f64;
            let limit = scenario.effect_level.map_or(0, |l| l as usize);
            let false_moves: f64 = (limit + 1..3).map(share).sum();
            let power = match scenario.effect_level {
                Some(Granularity::Fine) => format!("{:.1} %", share(2)),
                _ => "–".into(),
            };
            println!(
                "| {} | {name} | {:.1} % | {:.1} % | {:.1} % | {} | {power} |",
                scenario.name,
                share(0),
                share(1),
                share(2),
                if limit == 2 {
                    "–".to_owned()
                } else {
                    format!("{false_moves:.1} %")
                },
            );
        }
    }
    println!("{seeds} seeds a scenario, {bootstrap} bootstrap resamples");
}
