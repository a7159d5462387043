//! The validity check on simulated benchmarks of known structure: a category mix that differs,
//! questions that differ, systems ordered the same way or the other way round on people's
//! questions, and the edge cases (a system on one side only, few human questions).

use std::collections::HashMap;

use hierarag_analysis::{Metric, Observation, Scores};
use hierarag_records::CategoryRef;
use hierarag_taxonomy::{Granularity, Taxonomy};
use hierarag_validity::{
    Benchmark, Decision, Mix, Property, Question, Settings, SystemResult, Transfer, validity,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

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
"#;

const MEDIUM: [(&str, &str); 4] = [
    ("simple", "single_fact"),
    ("simple", "multi_fact"),
    ("complex", "cross_section"),
    ("complex", "comparative"),
];

fn taxonomy() -> Taxonomy {
    Taxonomy::from_toml_str(TAXONOMY, "test").expect("the test taxonomy")
}

fn category(level: Granularity, name: &str) -> CategoryRef {
    CategoryRef {
        dimension: "qc".into(),
        level,
        category: name.into(),
    }
}

fn analysis_settings() -> hierarag_analysis::Settings {
    hierarag_analysis::Settings {
        metric: Metric::Cs,
        ddof: 0,
        nmi_bins: 4,
        epsilon: 1e-6,
        bootstrap: 200,
        permutations: 0,
        confidence: 0.95,
        seed: 7,
    }
}

/// A benchmark of `n` questions: the medium category of question i drawn with `mix`
/// (weights of MEDIUM), `words` words on average; system s scores its category's base
/// difficulty plus `skill[s]`, with noise.
fn benchmark(
    side: &str,
    n: usize,
    mix: [f64; 4],
    words: f64,
    skill: &[(&str, f64)],
    seed: u64,
) -> Benchmark {
    let taxonomy = taxonomy();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let total: f64 = mix.iter().sum();
    let questions: Vec<Question> = (0..n)
        .map(|i| {
            let mut draw = rng.random::<f64>() * total;
            let mut c = 0;
            while c < 3 && draw >= mix[c] {
                draw -= mix[c];
                c += 1;
            }
            let (coarse, medium) = MEDIUM[c];
            Question {
                id: format!("{side}-{i}"),
                categories: vec![
                    category(Granularity::Coarse, coarse),
                    category(Granularity::Medium, medium),
                ],
                unplaced: if side == "human" && i % 25 == 0 {
                    vec!["qc".into()]
                } else {
                    Vec::new()
                },
                words: (words + rng.random_range(-3.0..3.0)).round(),
                overlap: Some(rng.random::<f64>()),
                gold_rank: Some(f64::from(rng.random_range(1..20))),
                answer_words: Some(f64::from(rng.random_range(1..10))),
                refusal_expected: false,
                has_reference: true,
            }
        })
        .collect();
    let systems = skill
        .iter()
        .map(|&(name, skill)| {
            let scores: HashMap<String, Scores> = questions
                .iter()
                .map(|q| {
                    let c = MEDIUM
                        .iter()
                        .position(|(_, m)| q.categories[1].category == *m)
                        .unwrap();
                    let base = [0.7, 0.6, 0.45, 0.35][c];
                    let cs = (base + skill + rng.random_range(-0.1..0.1)).clamp(0.0, 1.0);
                    let scores = Scores {
                        cs,
                        ..Scores::default()
                    };
                    (q.id.clone(), scores)
                })
                .collect();
            let observations: Vec<Observation> = questions
                .iter()
                .flat_map(|q| {
                    q.categories.iter().map(|c| Observation {
                        id: format!("{}@{}", q.id, c.level),
                        set: format!("qc/{}", c.level),
                        categories: vec![c.clone()],
                        unanswerable: false,
                        scores: scores[&q.id],
                        texts: None,
                    })
                })
                .collect();
            let analysis =
                hierarag_analysis::analyze(&observations, &taxonomy, &analysis_settings());
            SystemResult {
                name: name.into(),
                scores,
                analysis,
            }
        })
        .collect();
    Benchmark { questions, systems }
}

fn settings() -> Settings {
    Settings {
        metric: Metric::Cs,
        metrics: vec![Metric::Cs, Metric::Ndcg10],
        bootstrap: 300,
        confidence: 0.95,
        seed: 11,
    }
}

const SAME: [(&str, f64); 3] = [("bm25", 0.0), ("dense", 0.08), ("hybrid", 0.16)];
const REVERSED: [(&str, f64); 3] = [("bm25", 0.16), ("dense", 0.08), ("hybrid", 0.0)];

#[test]
fn systems_ordered_the_same_way_transfer_every_decision() {
    let synthetic = benchmark("synthetic", 400, [1.0; 4], 12.0, &SAME, 1);
    let human = benchmark("human", 300, [1.0; 4], 12.0, &SAME, 2);
    let v = validity(&taxonomy(), &synthetic, &human, &settings());
    let d = v.decisions.as_ref().expect("three systems");
    let tau = d.tau.expect("a tau");
    assert_eq!(tau.value, 1.0);
    let [lo, hi] = tau.ci.expect("an interval");
    assert!(lo <= 1.0 && hi == 1.0, "{lo} {hi}");
    assert_eq!(d.pairs.len(), 3);
    assert!(d.pairs.iter().all(|p| p.transfer == Transfer::Holds
        && p.synthetic == Decision::Better
        && p.human == Decision::Better));
    assert_eq!(d.transfer, Some(1.0));
    assert!(
        v.verdict[0].contains("orders your systems as your real questions do"),
        "{:?}",
        v.verdict
    );
    // Same category difficulties on both sides: the category orders agree.
    let level = v
        .agreement
        .iter()
        .find(|a| a.system == "bm25" && a.level == Granularity::Medium)
        .expect("the medium level");
    assert_eq!(level.categories.len(), 4);
    assert!(level.kendall.unwrap().r > 0.9, "{:?}", level.kendall);
    assert_eq!(level.synthetic_lowest.as_deref(), Some("comparative"));
    assert_eq!(level.human_lowest.as_deref(), Some("comparative"));
    // nDCG@10 is absent on both sides: said, not computed.
    assert!(
        v.notes
            .iter()
            .any(|n| n.starts_with("ndcg_10: no per-category agreement")),
        "{:?}",
        v.notes
    );
    // The same mix and difficulties: the prediction holds.
    for p in v
        .predicted
        .iter()
        .filter(|p| p.level == Granularity::Coarse)
    {
        assert!(p.within, "{p:?}");
        assert_eq!(p.unpredicted_share, 0.0);
    }
}

#[test]
fn a_reversed_order_on_real_questions_flips_every_decision() {
    let synthetic = benchmark("synthetic", 400, [1.0; 4], 12.0, &SAME, 3);
    let human = benchmark("human", 300, [1.0; 4], 12.0, &REVERSED, 4);
    let v = validity(&taxonomy(), &synthetic, &human, &settings());
    let d = v.decisions.as_ref().unwrap();
    assert_eq!(d.tau.unwrap().value, -1.0);
    assert!(
        d.pairs.iter().all(|p| p.transfer == Transfer::Flips),
        "{:?}",
        d.pairs
    );
    assert_eq!(d.transfer, Some(0.0));
    assert!(
        v.verdict[0].contains("does not order your systems"),
        "{:?}",
        v.verdict
    );
    assert!(
        v.verdict[1].starts_with("0 of 3 pairwise decisions"),
        "{:?}",
        v.verdict
    );
    for category in &d.per_category {
        assert_eq!(category.tau.unwrap().value, -1.0, "{category:?}");
    }
}

#[test]
fn a_different_mix_and_longer_questions_are_found() {
    // People ask simple questions four times as often as complex ones; the design is even.
    let synthetic = benchmark("synthetic", 400, [1.0; 4], 14.0, &SAME, 5);
    let human = benchmark("human", 300, [2.0, 2.0, 0.5, 0.5], 7.0, &SAME, 6);
    let v = validity(&taxonomy(), &synthetic, &human, &settings());
    let coarse = v
        .coverage
        .iter()
        .find(|c| c.level == Granularity::Coarse)
        .unwrap();
    let simple = &coarse.categories[0];
    assert_eq!(simple.category, "simple");
    assert!(simple.human_share > 0.7 && simple.synthetic_share < 0.6);
    // The goodness of fit as scipy's chisquare defines it, from the counts.
    let expected: Vec<f64> = coarse
        .categories
        .iter()
        .map(|c| human.questions.len() as f64 * c.synthetic as f64 / 400.0)
        .collect();
    let chi2: f64 = coarse
        .categories
        .iter()
        .zip(&expected)
        .map(|(c, e)| (c.human as f64 - e).powi(2) / e)
        .sum();
    assert!((coarse.chi2.unwrap() - chi2).abs() < 1e-9);
    assert!(coarse.p.unwrap() < 1e-6);
    assert_eq!(coarse.dof, Some(1));
    assert_eq!(coarse.categories[1].flag, Some(Mix::Under));
    let words = v
        .properties
        .iter()
        .find(|p| p.property == Property::Words && p.category.is_none())
        .unwrap();
    assert!(words.p < 1e-6 && words.effect > 0.5, "{words:?}");
    assert!(
        v.verdict
            .iter()
            .any(|s| s.starts_with("Synthetic questions are longer")),
        "{:?}",
        v.verdict
    );
    assert!(
        v.verdict
            .iter()
            .any(|s| s.contains("over-represents complex")),
        "{:?}",
        v.verdict
    );
    // Per category too, where both sides have questions.
    assert!(
        v.properties
            .iter()
            .any(|p| p.property == Property::Words && p.category.as_deref() == Some("comparative"))
    );
    // The mix is reweighted: the prediction follows the human mix, not the synthetic mean.
    let p = v
        .predicted
        .iter()
        .find(|p| p.system == "bm25" && p.level == Granularity::Medium)
        .unwrap();
    assert!(p.within, "{p:?}");
    // Every 25th human question was placed without confidence.
    assert_eq!(v.unplaced.len(), 12);
}

#[test]
fn a_system_on_one_side_and_few_human_questions_are_said() {
    let synthetic = benchmark("synthetic", 200, [1.0; 4], 12.0, &SAME, 7);
    let human = benchmark("human", 20, [1.0; 4], 12.0, &SAME[..1], 8);
    let v = validity(&taxonomy(), &synthetic, &human, &settings());
    assert_eq!(v.systems, ["bm25"]);
    assert!(v.decisions.is_none());
    assert!(
        v.notes
            .iter()
            .any(|n| n.starts_with("dense: answered only the synthetic")),
        "{:?}",
        v.notes
    );
    assert!(
        v.notes
            .iter()
            .any(|n| n.starts_with("system decisions need two")),
        "{:?}",
        v.notes
    );
    assert!(
        v.verdict[0].starts_with("Only 20 human-written questions"),
        "{:?}",
        v.verdict
    );
}

#[test]
fn the_same_inputs_and_seed_give_the_same_bytes() {
    let synthetic = benchmark("synthetic", 200, [1.0; 4], 12.0, &SAME, 9);
    let human = benchmark("human", 100, [1.0, 1.0, 2.0, 0.5], 9.0, &REVERSED, 10);
    let a = serde_json::to_string(&validity(&taxonomy(), &synthetic, &human, &settings())).unwrap();
    let b = serde_json::to_string(&validity(&taxonomy(), &synthetic, &human, &settings())).unwrap();
    assert_eq!(a, b);
    let mut other = settings();
    other.seed = 12;
    let c = serde_json::to_string(&validity(&taxonomy(), &synthetic, &human, &other)).unwrap();
    assert_ne!(a, c, "the intervals follow the seed");
}

#[test]
fn a_category_on_one_side_only_is_flagged_and_left_out_of_the_comparisons() {
    // The benchmark has no `comparative` question; people ask no `single_fact` one.
    let synthetic = benchmark("synthetic", 300, [1.0, 1.0, 1.0, 0.0], 12.0, &SAME, 13);
    let human = benchmark("human", 200, [0.0, 1.0, 1.0, 1.0], 12.0, &SAME, 14);
    let v = validity(&taxonomy(), &synthetic, &human, &settings());
    let medium = v
        .coverage
        .iter()
        .find(|c| c.level == Granularity::Medium)
        .unwrap();
    let flag = |name: &str| {
        medium
            .categories
            .iter()
            .find(|c| c.category == name)
            .unwrap()
            .flag
    };
    assert_eq!(flag("comparative"), Some(Mix::Over));
    assert_eq!(flag("single_fact"), Some(Mix::Under));
    // The fit is over the categories the design has (three: two degrees of freedom).
    assert_eq!(medium.dof, Some(2));
    assert!(
        v.notes.iter().any(|n| n.starts_with("qc at medium: ")
            && n.contains("categories the synthetic benchmark has none of")),
        "{:?}",
        v.notes
    );
    // Per-category means and orders only where both sides have questions.
    let level = v
        .agreement
        .iter()
        .find(|a| a.system == "bm25" && a.level == Granularity::Medium)
        .unwrap();
    let names: Vec<&str> = level
        .categories
        .iter()
        .map(|c| c.category.as_str())
        .collect();
    assert_eq!(names, ["multi_fact", "cross_section"]);
    // The prediction leaves out the people's questions the benchmark cannot speak for.
    let p = v
        .predicted
        .iter()
        .find(|p| p.system == "bm25" && p.level == Granularity::Medium)
        .unwrap();
    assert!(
        p.unpredicted_share > 0.2 && p.unpredicted_share < 0.45,
        "{p:?}"
    );
}

/// Issue 56, point 8: with two systems, τ is the sign of one difference; the verdict does not
/// lead with "does not order your systems" beside the pair's decision that transfers.
#[test]
fn with_two_systems_the_verdict_leads_with_the_one_decision_not_tau() {
    let two = [("bm25", 0.0), ("dense", 0.0)];
    let synthetic = benchmark("synthetic", 400, [1.0; 4], 12.0, &two, 5);
    let human = benchmark("human", 300, [1.0; 4], 12.0, &two, 6);
    let v = validity(&taxonomy(), &synthetic, &human, &settings());
    let tau = v
        .decisions
        .as_ref()
        .and_then(|d| d.tau)
        .expect("a tau of one pair");
    assert_eq!(tau.value.abs(), 1.0, "{tau:?}");
    assert!(
        !v.verdict
            .iter()
            .any(|line| line.contains("your systems as") || line.contains("order your systems")),
        "{:?}",
        v.verdict
    );
    assert!(
        v.verdict
            .iter()
            .any(|line| line.contains("of 1 pairwise decisions transfer")),
        "{:?}",
        v.verdict
    );
}
