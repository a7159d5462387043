//! The core set on simulated systems of known structure: six systems of rising skill whose
//! scores depend on the question's difficulty, its category and noise. The set chosen on five
//! systems reproduces the sixth's category means within the tolerance and keeps its place in
//! the ranking, for each system held out in turn; the set is a fraction of the benchmark.

use std::collections::HashMap;

use hierarag_items::{CoreSettings, Question, SystemScores, core_set};
use hierarag_taxonomy::Granularity;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::category;

const SKILL: [f64; 6] = [0.30, 0.38, 0.46, 0.54, 0.62, 0.70];

/// 800 questions in two dimensions, each with 2 coarse and 4 medium categories; a question's
/// score for a system is its skill, the category's and the question's difficulty, and noise.
fn simulated(systems: usize) -> (Vec<Question>, Vec<SystemScores>) {
    let mut rng = ChaCha8Rng::seed_from_u64(4646);
    let mut questions = Vec::new();
    let mut rows: Vec<HashMap<String, f64>> = vec![HashMap::new(); systems];
    for i in 0..800 {
        let id = format!("q{i}");
        let (a, b) = (rng.random_range(0..4usize), rng.random_range(0..4usize));
        let difficulty = rng.random_range(-0.15..0.15) + [0.0, -0.05, 0.05, -0.1][a];
        for (s, row) in rows.iter_mut().enumerate() {
            let noise: f64 = rng.random_range(-0.2..0.2);
            row.insert(
                id.clone(),
                (SKILL[s] + difficulty + 0.03 * (b as f64 - 1.5) + noise).clamp(0.0, 1.0),
            );
        }
        questions.push(Question {
            id,
            categories: vec![
                category("qc", Granularity::Coarse, &format!("qc{}", a / 2)),
                category("qc", Granularity::Medium, &format!("qc{a}")),
                category("uc", Granularity::Coarse, &format!("uc{}", b / 2)),
                category("uc", Granularity::Medium, &format!("uc{b}")),
            ],
        });
    }
    (questions, crate::systems(rows))
}

fn settings() -> CoreSettings {
    CoreSettings {
        tolerance: 0.03,
        min_per_category: 5,
        draws: 50,
        seed: 46,
    }
}

#[test]
fn the_core_set_chosen_without_a_system_fits_it() {
    let (questions, systems) = simulated(6);
    let core = core_set(&questions, &systems, &settings());
    assert!(core.notes.is_empty(), "{:?}", core.notes);
    assert_eq!(core.of, 800);
    assert!(
        core.ids.len() < 560,
        "the core set keeps {} of 800",
        core.ids.len()
    );
    assert!(core.max_error <= 0.03, "{}", core.max_error);
    let held_out = core.held_out.as_ref().expect("six systems are checked");
    assert_eq!(held_out.systems.len(), 6);
    for check in &held_out.systems {
        assert!(check.order_kept, "{check:?}");
    }
    assert_eq!(held_out.within, 6, "{held_out:?}");
    assert!(held_out.max_error <= 0.03, "{held_out:?}");
    // The ids are the benchmark's, in its order, and the choice is seeded.
    let position = |id: &str| id[1..].parse::<usize>().unwrap();
    assert!(
        core.ids
            .windows(2)
            .all(|w| position(&w[0]) < position(&w[1]))
    );
    assert_eq!(core_set(&questions, &systems, &settings()), core);
    println!(
        "core set: {} of {} questions, in-sample max error {:.4}, held out: {} of 6 within, max \
error {:.4}",
        core.ids.len(),
        core.of,
        core.max_error,
        held_out.within,
        held_out.max_error
    );
}

#[test]
fn with_two_systems_the_core_set_says_it_cannot_be_checked() {
    let (questions, systems) = simulated(2);
    let core = core_set(&questions, &systems, &settings());
    assert!(core.held_out.is_none());
    assert!(
        core.notes[0].contains("cannot be checked on a system it was not chosen with"),
        "{:?}",
        core.notes
    );
}

#[test]
fn a_tolerance_no_subset_meets_keeps_every_question() {
    let (questions, systems) = simulated(3);
    let strict = CoreSettings {
        tolerance: 0.0,
        draws: 3,
        ..settings()
    };
    let core = core_set(&questions, &systems, &strict);
    assert_eq!(core.ids.len(), 800);
    assert_eq!(core.max_error, 0.0);
    assert!(
        core.notes
            .iter()
            .any(|n| n.contains("every question is kept"))
    );
}
