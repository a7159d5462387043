//! The item analysis on simulated systems of known structure: six systems of rising skill, and
//! among ordinary questions some every system passes, some none does, and some that the weaker
//! systems get right and the stronger ones wrong. Each planted kind is found, and the
//! discrimination is the correlation of the question against the rest (checked here against
//! its definition; the correlation itself equals scipy's `pearsonr` in hierarag-stats' oracle
//! test).

use std::collections::HashMap;

use hierarag_items::{Flag, Question, Settings, SystemScores, items};
use hierarag_records::CategoryRef;
use hierarag_taxonomy::Granularity;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const SKILL: [f64; 6] = [0.2, 0.3, 0.4, 0.5, 0.6, 0.7];

fn category(name: &str) -> CategoryRef {
    crate::category("qc", Granularity::Coarse, name)
}

/// 60 ordinary questions (`simple` and `complex` alternating), then 5 saturated, 5 failed and
/// 5 reversed ones, all `complex`.
fn simulated() -> (Vec<Question>, Vec<SystemScores>) {
    let mut rng = ChaCha8Rng::seed_from_u64(46);
    let mut questions = Vec::new();
    let mut rows: Vec<HashMap<String, f64>> = vec![HashMap::new(); SKILL.len()];
    for i in 0..75 {
        let id = format!("q{i}");
        let kind = match i {
            0..60 => "ordinary",
            60..65 => "saturated",
            65..70 => "failed",
            _ => "reversed",
        };
        let difficulty = rng.random_range(-0.2..0.2);
        for (s, skill) in SKILL.iter().enumerate() {
            let score: f64 = match kind {
                "ordinary" => skill + difficulty + rng.random_range(-0.05..0.05),
                "saturated" => 0.9 + rng.random_range(0.0..0.1),
                "failed" => rng.random_range(0.0..0.1),
                _ => 0.9 - skill + rng.random_range(-0.05..0.05),
            };
            rows[s].insert(id.clone(), score.clamp(0.0, 1.0));
        }
        questions.push(Question {
            id,
            categories: vec![category(if i < 60 && i % 2 == 0 {
                "simple"
            } else {
                "complex"
            })],
        });
    }
    (questions, crate::systems(rows))
}

fn settings() -> Settings {
    Settings {
        threshold: 0.5,
        min_discrimination: 0.2,
    }
}

#[test]
fn planted_saturated_failed_and_reversed_questions_are_found() {
    let (questions, systems) = simulated();
    let result = items(&questions, &systems, &settings());
    assert!(result.notes.is_empty(), "{:?}", result.notes);
    let flagged = |flag: Flag| -> Vec<&str> {
        result
            .items
            .iter()
            .filter(|i| i.flags.contains(&flag))
            .map(|i| i.id.as_str())
            .collect()
    };
    assert_eq!(
        flagged(Flag::Saturated),
        ["q60", "q61", "q62", "q63", "q64"]
    );
    assert_eq!(flagged(Flag::Failed), ["q65", "q66", "q67", "q68", "q69"]);
    assert_eq!(flagged(Flag::Negative), ["q70", "q71", "q72", "q73", "q74"]);
    // The 2PL fit (six systems): no estimate for the saturated and failed questions, the
    // reversed ones at the discrimination's lower bound, the ordinary ones above them.
    for item in &result.items[60..70] {
        assert!(item.irt.is_none(), "{item:?}");
    }
    for item in &result.items[70..] {
        assert!(item.irt.unwrap().discrimination < 0.2 + 1e-4, "{item:?}");
    }
    let ordinary: Vec<f64> = result.items[..60]
        .iter()
        .filter_map(|i| i.irt.map(|e| e.discrimination))
        .collect();
    let mean = ordinary.iter().sum::<f64>() / ordinary.len() as f64;
    assert!(
        mean > 1.0,
        "ordinary questions' mean 2PL discrimination {mean}"
    );
    // Ordinary questions follow the systems' skill.
    for item in &result.items[..60] {
        assert!(item.discrimination.unwrap() > 0.5, "{item:?}");
    }
    // The corrected item-total correlation by its definition, for one question.
    let q = 7;
    let x: Vec<f64> = systems.iter().map(|s| s.scores["q7"]).collect();
    let rest: Vec<f64> = systems
        .iter()
        .map(|s| {
            let others: f64 = (0..75)
                .filter(|&i| i != q)
                .map(|i| s.scores[&format!("q{i}")])
                .sum();
            others / 74.0
        })
        .collect();
    let (mx, my) = (x.iter().sum::<f64>() / 6.0, rest.iter().sum::<f64>() / 6.0);
    let sxy: f64 = x.iter().zip(&rest).map(|(a, b)| (a - mx) * (b - my)).sum();
    let sxx: f64 = x.iter().map(|a| (a - mx).powi(2)).sum();
    let syy: f64 = rest.iter().map(|b| (b - my).powi(2)).sum();
    let r = sxy / (sxx * syy).sqrt();
    assert!((result.items[q].discrimination.unwrap() - r).abs() < 1e-12);
    // Per category: every simple question informs, a third of the complex ones do not.
    let share = |name: &str| {
        result
            .categories
            .iter()
            .find(|c| c.category.category == name)
            .unwrap()
            .informative_share
    };
    assert_eq!(share("simple"), 1.0);
    assert!((share("complex") - 30.0 / 45.0).abs() < 1e-12);
}

#[test]
fn with_two_systems_there_is_no_discrimination_and_it_is_said() {
    let (questions, systems) = simulated();
    let result = items(&questions, &systems[..2], &settings());
    assert!(result.items.iter().all(|i| i.discrimination.is_none()));
    assert!(
        result.notes[0].starts_with("the discrimination of a question needs three or more"),
        "{:?}",
        result.notes
    );
    // Flags that need no correlation are still given.
    assert!(result.items[60].flags.contains(&Flag::Saturated));
}
