//! The comparison of several systems on fixtures with hand-computed values, the edge cases it
//! must survive (one question in a category, identical systems, unanswered questions, a metric a
//! system lacks), seed reproducibility, and its paired bootstrap against an independent one
//! (numpy's, in `hierarag-stats/tests/data/compare_cases.json`).

use hierarag_analysis::{
    Comparison, LevelMetric, Metric, Observation, Scores, Settings, SystemScores, compare,
};
use hierarag_records::CategoryRef;
use hierarag_taxonomy::{Granularity, Taxonomy};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn observation(id: &str, level: Granularity, category: &str, cs: f64) -> Observation {
    Observation {
        id: id.into(),
        set: format!("qc/{level}"),
        categories: vec![CategoryRef {
            dimension: "qc".into(),
            level,
            category: category.into(),
        }],
        unanswerable: false,
        scores: Scores {
            cs,
            ap: Some(cs / 2.0),
            ..Scores::default()
        },
        texts: None,
    }
}

/// A system whose questions `(id, level, category, cs)` are given.
fn system(name: &str, questions: &[(String, Granularity, &str, f64)]) -> SystemScores {
    SystemScores {
        name: name.into(),
        observations: questions
            .iter()
            .map(|(id, level, category, cs)| observation(id, *level, category, *cs))
            .collect(),
    }
}

fn settings() -> Settings {
    Settings {
        bootstrap: 200,
        permutations: 50,
        ..Settings::default()
    }
}

fn close(actual: f64, expected: f64, what: &str) {
    assert!(
        (actual - expected).abs() < 1e-12,
        "{what}: expected {expected}, got {actual}"
    );
}

fn cs_of(comparison: &Comparison, level: Granularity) -> &LevelMetric {
    comparison
        .levels
        .iter()
        .find(|l| l.level == level)
        .and_then(|l| l.metrics.iter().find(|m| m.metric == Metric::Cs))
        .expect("the level's CS comparison")
}

/// Coarse qc, two categories of three questions; b is a plus 0.1 on `simple` and the same on
/// `complex` except one question it loses by 0.05.
fn two_systems() -> (Vec<SystemScores>, Vec<f64>) {
    use Granularity::Coarse;
    let a_values = [0.5, 0.6, 0.7, 0.4, 0.5, 0.6];
    let deltas = [0.1, 0.1, 0.1, 0.0, 0.0, -0.05];
    let rows = |values: &[f64]| -> Vec<(String, Granularity, &str, f64)> {
        values
            .iter()
            .enumerate()
            .map(|(i, &cs)| {
                let category = if i < 3 { "simple" } else { "complex" };
                (format!("q{i}"), Coarse, category, cs)
            })
            .collect()
    };
    let b_values: Vec<f64> = a_values.iter().zip(deltas).map(|(a, d)| a + d).collect();
    (
        vec![system("a", &rows(&a_values)), system("b", &rows(&b_values))],
        b_values,
    )
}

#[test]
fn hand_computed_differences_wins_and_spread() {
    let (systems, b_values) = two_systems();
    let comparison = compare(&systems, &Taxonomy::default_taxonomy(), &settings(), 0.5);
    assert_eq!(comparison.common, 6);
    let m = cs_of(&comparison, Granularity::Coarse);
    assert_eq!(m.systems, ["a", "b"]);
    let pair = &m.pairs[0];
    assert_eq!((pair.a.as_str(), pair.b.as_str()), ("a", "b"));
    let simple = pair.categories[0].expect("simple has questions");
    let complex = pair.categories[1].expect("complex has questions");
    // b − a: +0.1 on every simple question; 0, 0, −0.05 on complex.
    close(simple.diff.mean.value, 0.1, "simple difference");
    close(complex.diff.mean.value, -0.05 / 3.0, "complex difference");
    assert_eq!(
        (simple.diff.wins, simple.diff.ties, simple.diff.losses),
        (3, 0, 0)
    );
    assert_eq!(
        (complex.diff.wins, complex.diff.ties, complex.diff.losses),
        (0, 2, 1)
    );
    // A constant non-zero difference: t is infinite (None), p 0, as scipy gives.
    assert_eq!(simple.diff.t, None);
    assert_eq!(simple.diff.t_p, Some(0.0));
    // The level's difference is over all six questions.
    close(
        pair.overall.mean.value,
        (0.3 - 0.05) / 6.0,
        "overall difference",
    );
    // Spread: population sd of the two category differences = half their distance.
    close(
        pair.spread.unwrap().value,
        (0.1 + 0.05 / 3.0) / 2.0,
        "spread",
    );
    // Category means as the systems scored them.
    let b_simple = b_values[..3].iter().sum::<f64>() / 3.0;
    close(m.means[1][0].unwrap(), b_simple, "b's simple mean");
    // Holm over the level's two categories: the larger p stays, the smaller doubles (capped).
    let (p_simple, p_complex) = (simple.diff.w_p.unwrap(), complex.diff.w_p.unwrap());
    let (small, large) = if p_simple < p_complex {
        (simple, complex)
    } else {
        (complex, simple)
    };
    close(
        small.w_p_holm.unwrap(),
        (2.0 * small.diff.w_p.unwrap()).min(1.0),
        "Holm smallest",
    );
    close(
        large.w_p_holm.unwrap(),
        large.diff.w_p.unwrap().max(small.w_p_holm.unwrap()),
        "Holm largest",
    );
    // Over all questions, every metric both systems have.
    let overall: Vec<Metric> = comparison.overall.iter().map(|m| m.metric).collect();
    assert!(overall.contains(&Metric::Ap) && overall.contains(&Metric::Cs));
    // Each system's own analysis side by side.
    let level = &comparison.levels[0];
    assert_eq!(level.side_by_side.len(), 2);
    close(
        level.side_by_side[1].means[0].unwrap().value,
        b_simple,
        "side by side",
    );
}

#[test]
fn identical_systems_differ_by_nothing_and_nothing_fails() {
    let (systems, _) = two_systems();
    let same = vec![
        systems[0].clone(),
        SystemScores {
            name: "copy".into(),
            ..systems[0].clone()
        },
    ];
    let comparison = compare(&same, &Taxonomy::default_taxonomy(), &settings(), 0.5);
    let m = cs_of(&comparison, Granularity::Coarse);
    let pair = &m.pairs[0];
    assert_eq!(pair.overall.mean.value, 0.0);
    assert_eq!(pair.overall.mean.ci, Some([0.0, 0.0]));
    assert_eq!((pair.overall.ties, pair.overall.t), (6, None));
    assert_eq!(pair.overall.t_p, None, "scipy's 0/0");
    // Six zero differences: scipy's exhaustive sign flips give p 1.
    assert_eq!(pair.overall.w_p, Some(1.0));
    let anova = m.anova.expect("two categories");
    assert_eq!(anova.interaction.f, None, "nothing varies within questions");
    assert!(anova.category.f.is_some());
    let dimension = &comparison.dimensions[0];
    assert!(dimension.separating.is_none(), "{dimension:?}");
    // The JSON reads back (no NaN written as null where a number belongs).
    let json = serde_json::to_string(&comparison).unwrap();
    let back: Comparison = serde_json::from_str(&json).unwrap();
    assert_eq!(back.levels.len(), comparison.levels.len());
    assert_eq!(back.overall.len(), comparison.overall.len());
}

#[test]
fn a_category_of_one_question_and_unanswered_questions() {
    use Granularity::Coarse;
    let rows_a = vec![
        ("q0".to_owned(), Coarse, "simple", 0.9),
        ("q1".to_owned(), Coarse, "simple", 0.8),
        ("q2".to_owned(), Coarse, "complex", 0.2),
    ];
    let mut rows_b = rows_a.clone();
    rows_b[0].3 = 0.95;
    rows_b[2].3 = 0.3;
    let mut b = system("b", &rows_b);
    // b refuses q1: with a's 0.8 it is still answered by someone.
    b.observations[1].scores.refused = true;
    let systems = [system("a", &rows_a), b];
    let comparison = compare(&systems, &Taxonomy::default_taxonomy(), &settings(), 0.5);
    let pair = &cs_of(&comparison, Coarse).pairs[0];
    let complex = pair.categories[1].expect("one question");
    assert_eq!(complex.diff.n, 1);
    close(complex.diff.mean.value, 0.1, "one question's difference");
    assert_eq!(complex.diff.t, None, "no variance from one pair");
    assert_eq!(complex.diff.w_p, Some(1.0), "scipy: exact p of one rank");
    // q2: both below 0.5; q1: b refused but a answered.
    let ids: Vec<&str> = comparison
        .unanswered
        .iter()
        .map(|u| u.id.as_str())
        .collect();
    assert_eq!(ids, ["q2"]);
    assert_eq!(comparison.unanswered[0].scores, [Some(0.2), Some(0.3)]);
}

#[test]
fn questions_one_system_lacks_are_dropped_and_said() {
    let (mut systems, _) = two_systems();
    systems[1].observations.truncate(4);
    let comparison = compare(&systems, &Taxonomy::default_taxonomy(), &settings(), 0.5);
    assert_eq!(comparison.common, 4);
    assert_eq!(
        (comparison.systems[0].scored, comparison.systems[0].dropped),
        (6, 2)
    );
    assert_eq!(comparison.systems[1].dropped, 0);
    assert!(
        comparison.notes.iter().any(|n| n.contains("a: 2 of its 6")),
        "{:?}",
        comparison.notes
    );
    let m = cs_of(&comparison, Granularity::Coarse);
    assert_eq!(m.n, 4);
}

#[test]
fn a_metric_a_system_lacks_is_compared_among_the_others() {
    let (systems, _) = two_systems();
    let mut no_documents = systems[1].clone();
    no_documents.name = "service".into();
    for o in &mut no_documents.observations {
        o.scores.ap = None;
    }
    let three = [systems[0].clone(), systems[1].clone(), no_documents];
    let comparison = compare(&three, &Taxonomy::default_taxonomy(), &settings(), 0.5);
    let ap = comparison
        .overall
        .iter()
        .find(|m| m.metric == Metric::Ap)
        .unwrap();
    assert_eq!(ap.systems, ["a", "b"]);
    assert_eq!(ap.pairs.len(), 1);
    let cs = comparison
        .overall
        .iter()
        .find(|m| m.metric == Metric::Cs)
        .unwrap();
    assert_eq!(cs.pairs.len(), 3);
    assert!(
        comparison
            .notes
            .iter()
            .any(|n| n.starts_with("ap: service named no document")),
        "{:?}",
        comparison.notes
    );
    // With two systems, one without AP: no AP comparison at all.
    let two = [three[0].clone(), three[2].clone()];
    let comparison = compare(&two, &Taxonomy::default_taxonomy(), &settings(), 0.5);
    assert!(comparison.overall.iter().all(|m| m.metric != Metric::Ap));
    assert!(cs_of(&comparison, Granularity::Coarse).n > 0);
}

/// qc at coarse and fine, `n` questions a category, three systems: `b` gains 0.08 on the
/// fine categories whose index is even (an interaction at fine only, none at coarse), `c` is
/// `a` plus noise.
fn three_systems(n: usize, seed: u64) -> Vec<SystemScores> {
    let taxonomy = Taxonomy::default_taxonomy();
    let qc = taxonomy.dimension("qc").unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut rows: [Vec<(String, Granularity, &str, f64)>; 3] = Default::default();
    for level in [Granularity::Coarse, Granularity::Fine] {
        let categories = &qc.level(level).unwrap().categories;
        for (k, category) in categories.iter().enumerate() {
            for i in 0..n {
                let base = 0.55 + 0.02 * k as f64 + rng.random_range(-0.1..0.1);
                let gain = if level == Granularity::Fine && k.is_multiple_of(2) {
                    0.08
                } else {
                    0.0
                };
                let id = format!("{level}-{}-{i}", category.name);
                let noise = |rng: &mut ChaCha8Rng| rng.random_range(-0.02..0.02);
                let values = [base, base + gain + noise(&mut rng), base + noise(&mut rng)];
                for (s, value) in values.into_iter().enumerate() {
                    rows[s].push((id.clone(), level, category.name.as_str(), value));
                }
            }
        }
    }
    // The category names borrow from the taxonomy: copy them out.
    ["a", "b", "c"]
        .iter()
        .zip(rows.iter())
        .map(|(name, rows)| system(name, rows))
        .collect()
}

#[test]
fn the_separating_level_is_where_the_interaction_is() {
    let systems = three_systems(30, 7);
    let comparison = compare(&systems, &Taxonomy::default_taxonomy(), &settings(), 0.5);
    let fine = cs_of(&comparison, Granularity::Fine);
    let coarse = cs_of(&comparison, Granularity::Coarse);
    let interaction = |m: &LevelMetric| m.anova.unwrap().interaction;
    assert!(interaction(fine).p.unwrap() < 1e-6, "{:?}", fine.anova);
    assert!(interaction(coarse).p.unwrap() > 0.01, "{:?}", coarse.anova);
    let separating = comparison.dimensions[0].separating.as_ref().unwrap();
    assert_eq!(separating.level, Granularity::Fine);
    assert!(separating.significant);
    assert!(
        separating.reason.starts_with("qc at fine separates"),
        "{}",
        separating.reason
    );
    // b is best overall at fine; on the odd categories (no gain) it need not be.
    let ranks = fine.ranks.as_ref().expect("three systems");
    assert_eq!(ranks.best, "b");
    for (k, category) in ranks.categories.iter().enumerate() {
        if k.is_multiple_of(2) {
            assert_eq!(category.best.as_deref(), Some("b"), "{category:?}");
        }
        let tau = category.tau.unwrap();
        assert!((-1.0..=1.0).contains(&tau));
    }
    // With no interaction anywhere the sentence says so.
    let flat: Vec<SystemScores> = systems
        .iter()
        .map(|s| SystemScores {
            name: s.name.clone(),
            observations: s
                .observations
                .iter()
                .filter(|o| o.categories[0].level == Granularity::Coarse)
                .cloned()
                .collect(),
        })
        .collect();
    let comparison = compare(&flat, &Taxonomy::default_taxonomy(), &settings(), 0.5);
    let separating = comparison.dimensions[0].separating.as_ref().unwrap();
    assert!(!separating.significant);
    assert!(
        separating.reason.starts_with("no level of qc"),
        "{}",
        separating.reason
    );
}

#[test]
fn the_same_seed_gives_the_same_comparison_and_another_seed_other_intervals() {
    let systems = three_systems(10, 3);
    let taxonomy = Taxonomy::default_taxonomy();
    let first = compare(&systems, &taxonomy, &settings(), 0.5);
    let again = compare(&systems, &taxonomy, &settings(), 0.5);
    assert_eq!(
        serde_json::to_string(&first).unwrap(),
        serde_json::to_string(&again).unwrap()
    );
    let other = compare(
        &systems,
        &taxonomy,
        &Settings {
            seed: 1,
            ..settings()
        },
        0.5,
    );
    let ci = |c: &Comparison| cs_of(c, Granularity::Fine).pairs[0].overall.mean.ci;
    assert_ne!(ci(&first), ci(&other));
    // The point estimates and tests do not depend on the seed.
    let t = |c: &Comparison| cs_of(c, Granularity::Fine).pairs[0].overall.t_p;
    assert_eq!(t(&first), t(&other));
}

#[derive(serde::Deserialize)]
struct BootstrapCase {
    name: String,
    a: Vec<f64>,
    b: Vec<f64>,
    mean: f64,
    sd: f64,
    lo: f64,
    hi: f64,
}

/// Our paired bootstrap of a category's mean difference against numpy's (20,000 resamples
/// each): the interval's ends agree within a tenth of the replicates' standard deviation, the
/// Monte Carlo error of a 2.5% quantile at this many resamples being a few hundredths of it.
#[test]
fn the_paired_bootstrap_matches_an_independent_one() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../hierarag-stats/tests/data/compare_cases.json"
    );
    let cases: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let cases: Vec<BootstrapCase> = serde_json::from_value(cases["bootstrap"].clone()).unwrap();
    assert!(cases.len() >= 3);
    for case in cases {
        let rows = |values: &[f64]| -> Vec<(String, Granularity, &str, f64)> {
            values
                .iter()
                .enumerate()
                .map(|(i, &cs)| (format!("q{i}"), Granularity::Coarse, "simple", cs))
                .collect()
        };
        let systems = [system("a", &rows(&case.a)), system("b", &rows(&case.b))];
        let settings = Settings {
            bootstrap: 20_000,
            permutations: 0,
            ..Settings::default()
        };
        let comparison = compare(&systems, &Taxonomy::default_taxonomy(), &settings, 0.5);
        // The numpy replicates are of a − b; ours are b − a.
        let diff = cs_of(&comparison, Granularity::Coarse).pairs[0].categories[0]
            .unwrap()
            .diff;
        assert!(
            (diff.mean.value + case.mean).abs() < case.sd * 0.02,
            "{}",
            case.name
        );
        let [lo, hi] = diff.mean.ci.unwrap();
        let tolerance = case.sd * 0.1;
        assert!(
            (lo + case.hi).abs() < tolerance && (hi + case.lo).abs() < tolerance,
            "{}: ours [{lo}, {hi}], numpy's (negated) [{}, {}]",
            case.name,
            -case.hi,
            -case.lo
        );
    }
}
