//! Simulation: how often the recommended granularity moves past the level that carries an
//! effect, and how often it finds a real fine-level effect, on generated scores of known
//! structure analysed as `hierarag analyze` does.
//!
//! ```sh
//! cargo run --release -p hierarag-analysis --example simulate_granularity -- [SEEDS] [BOOTSTRAP]
//! ```
//!
//! The three dimensions of the built-in taxonomy with three levels, as the rq2 design generates them, each at the
//! paper's sizes (333 / 333 / 446 questions at coarse / medium / fine, split evenly over
//! 2 / 4 / 8 categories), CS ~ N(0.7 + effect, 0.15). The scenario's effect is in `qc`; the
//! other two dimensions carry none, so the recommendation's family is all six steps, as in
//! a real rq2 run. Scenarios for `qc` (a child inherits its parent's effect and adds its own
//! offset):
//!
//! - `none`: no effect anywhere;
//! - `coarse`: the coarse categories at ±0.015 (0.03 apart), nothing below;
//! - `coarse+medium`: also ±0.02 between the children of each coarse category;
//! - `fine`: also ±0.03 between the children of each medium category (a fine spread of about
//!   0.04, near the paper's QC DiscPow of 0.053 at fine).
//!
//! For each rule it prints the share of seeds recommending each level for `qc`, its false moves
//! (a recommendation finer than the finest level carrying an effect), the family-wise false
//! moves (seeds where any of the three dimensions moves past its effect) and, for `fine`, the
//! power. Rules: the first release's (Δ's interval above 1 at each step), issue 17's first
//! (also Δ corrected's interval above 1, or the corrected DiscPow's above 0 where the coarser
//! level's is 0; both computed here from the analysis), and the analysis' own recommendation
//! (the step's bootstrap p-value, Holm-adjusted over the six steps, below 5 %).
//! Seeds are 0..SEEDS (default 200; 0 prints only the power plans), bootstrap 1,000 resamples
//! (the analysis' default). Then `hierarag power`'s plans for five pilots of the `fine` scenario.

use hierarag_analysis::{
    Analysis, LevelStats, Observation, PowerSettings, Scores, Settings, analyze, power,
};
use hierarag_records::CategoryRef;
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

const DIMENSIONS: [&str; 3] = ["qc", "at", "lv"];

fn observations(taxonomy: &Taxonomy, scenario: &Scenario, seed: u64) -> Vec<Observation> {
    let effect = effects(taxonomy, scenario.offsets);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::new();
    for key in DIMENSIONS {
        observations_of(taxonomy, key, &effect, &mut rng, &mut out);
    }
    out
}

/// One dimension's questions; categories outside `effect` (the other dimensions) have none.
fn observations_of(
    taxonomy: &Taxonomy,
    key: &str,
    effect: &std::collections::HashMap<String, f64>,
    rng: &mut ChaCha8Rng,
    out: &mut Vec<Observation>,
) {
    let dimension = taxonomy.dimension(key).expect("dimension");
    for (granularity, total) in SIZES {
        let categories = &dimension.level(granularity).expect("level").categories;
        for i in 0..total {
            let category = &categories[i % categories.len()];
            let shift = if key == "qc" {
                effect[&category.name]
            } else {
                0.0
            };
            out.push(Observation {
                id: format!("{key}-{granularity}-{i}"),
                set: format!("{key}/{granularity}"),
                categories: vec![CategoryRef {
                    dimension: key.into(),
                    level: granularity,
                    category: category.name.clone(),
                }],
                unanswerable: false,
                scores: Scores {
                    cs: 0.7 + shift + 0.15 * normal(rng),
                    ..Scores::default()
                },
                texts: None,
            });
        }
    }
}

/// The level a dimension reaches by steps that each pass `step`.
fn walk(analysis: &Analysis, key: &str, step: impl Fn(&LevelStats) -> bool) -> Granularity {
    let mut chosen = Granularity::Coarse;
    for granularity in [Granularity::Medium, Granularity::Fine] {
        let taken = analysis
            .levels
            .iter()
            .find(|l| l.dimension == key && l.level == granularity)
            .is_some_and(&step);
        if !taken {
            break;
        }
        chosen = granularity;
    }
    chosen
}

/// The first release's rule: Δ's interval above 1.
fn interval_rule(analysis: &Analysis, key: &str) -> Granularity {
    walk(analysis, key, |level| {
        level
            .delta
            .and_then(|d| d.ratio.ci)
            .is_some_and(|[lo, _]| lo > 1.0)
    })
}

/// Issue 17's first rule: Δ's and Δ corrected's intervals above 1 (the corrected DiscPow's
/// above 0 when the coarser level's is 0).
fn corrected_rule(analysis: &Analysis, key: &str) -> Granularity {
    walk(analysis, key, |level| {
        let Some(delta) = level.delta else {
            return false;
        };
        let raw = delta.ratio.ci.is_some_and(|[lo, _]| lo > 1.0);
        let corrected = match delta.corrected {
            Some(ratio) => ratio.ci.is_some_and(|[lo, _]| lo > 1.0),
            None => level
                .discpow_corrected
                .and_then(|c| c.ci)
                .is_some_and(|[lo, _]| lo > 0.0),
        };
        raw && corrected
    })
}

/// The analysis' own recommendation.
fn holm_rule(analysis: &Analysis, key: &str) -> Granularity {
    analysis
        .dimensions
        .iter()
        .find(|d| d.dimension == key)
        .and_then(|d| d.recommendation.as_ref())
        .expect("a recommendation")
        .level
}

/// A rule: the level it recommends for a dimension of an analysis.
type Rule = fn(&Analysis, &str) -> Granularity;

const RULES: [(&str, Rule); 3] = [
    ("Δ interval (first release)", interval_rule),
    ("Δ and Δ corrected intervals", corrected_rule),
    ("step p, Holm over 6 steps (now)", holm_rule),
];

/// `hierarag power` on five pilots of the `fine` scenario at the paper's sizes: the questions
/// per category each qc step needs for 80 % power, and the pilot's own power.
fn plans(taxonomy: &Taxonomy, settings: &Settings) {
    println!("\nPower plans (scenario fine, pilots at the paper's sizes, 80 % power, 6 steps):\n");
    println!(
        "| pilot | test | corrected DiscPow vs coarser | pilot's power | n per category for 80 % |"
    );
    println!("|---|---|---|---|---|");
    for pilot in 0..5u64 {
        let data = observations(taxonomy, &SCENARIOS[3], 10_000 + pilot);
        let plan = power(
            &data,
            taxonomy,
            &Settings {
                seed: pilot,
                ..settings.clone()
            },
            &PowerSettings::default(),
            &|_, _| {},
        );
        for step in plan.steps.iter().filter(|s| s.dimension == "qc") {
            let test = match step.against {
                Some(against) => format!("{} vs {against}", step.level),
                None => step.level.to_string(),
            };
            println!(
                "| {pilot} | {test} | {:.4} vs {:.4} | {:.0} % | {} |",
                step.spread,
                step.spread_against,
                step.power_at_pilot * 100.0,
                step.per_category
                    .map_or_else(|| "–".to_owned(), |n| n.to_string())
            );
        }
    }
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
    println!(
        "| scenario | rule | coarse | medium | fine | false moves (qc) | false moves (any of 3) | power |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    // SEEDS 0: the power plans only.
    for scenario in SCENARIOS.iter().filter(|_| seeds > 0) {
        // [rule][level] for qc, and [rule] seeds with any dimension past its effect.
        let mut counts = [[0u64; 3]; 3];
        let mut family = [0u64; 3];
        let limit = scenario.effect_level.map_or(0, |l| l as usize);
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
            for (r, (_, rule)) in RULES.iter().enumerate() {
                let qc = rule(&analysis, "qc") as usize;
                counts[r][qc] += 1;
                let others_moved = DIMENSIONS[1..]
                    .iter()
                    .any(|key| rule(&analysis, key) != Granularity::Coarse);
                if qc > limit || others_moved {
                    family[r] += 1;
                }
            }
        }
        for (r, (name, _)) in RULES.iter().enumerate() {
            let share = |k: usize| 100.0 * counts[r][k] as f64 / seeds as f64;
            let false_moves: f64 = (limit + 1..3).map(share).sum();
            let power = match scenario.effect_level {
                Some(Granularity::Fine) => format!("{:.1} %", share(2)),
                _ => "–".into(),
            };
            println!(
                "| {} | {name} | {:.1} % | {:.1} % | {:.1} % | {} | {:.1} % | {power} |",
                scenario.name,
                share(0),
                share(1),
                share(2),
                if limit == 2 {
                    "–".to_owned()
                } else {
                    format!("{false_moves:.1} %")
                },
                100.0 * family[r] as f64 / seeds as f64,
            );
        }
    }
    plans(&taxonomy, &settings);
    println!("{seeds} seeds a scenario, {bootstrap} bootstrap resamples");
}
