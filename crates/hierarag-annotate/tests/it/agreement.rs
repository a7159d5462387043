//! Agreement statistics on a fixture small enough to check by hand: two annotators, six items
//! of a fine level with eight categories in pairs (parents A–D).

use std::collections::BTreeMap;

use crate::support::{FINE, item, rating};
use hierarag_analysis::{Analysis, Calibration, Counts, Estimate, Settings, SplitStats};
use hierarag_annotate::{CategoryParents, Item, Rating, TAGGER, agreement, tagger_as_annotator};
use hierarag_stats::{binomial_greater, cohen_kappa, fleiss_kappa, point_biserial};
use hierarag_taxonomy::Granularity;

fn parents() -> CategoryParents {
    let mut qc = BTreeMap::new();
    for (name, parent) in FINE {
        qc.insert(name.to_string(), parent.to_string());
    }
    CategoryParents(BTreeMap::from([("qc".to_string(), qc)]))
}

/// Intended categories a1, a2, b1, b2, c1, d1.
fn items() -> Vec<Item> {
    ["a1", "a2", "b1", "b2", "c1", "d1"]
        .iter()
        .enumerate()
        .map(|(i, category)| item(&format!("q{i}"), i as u32, category, true))
        .collect()
}

/// Per item: (correctness, hallucination, answerability, pick) of alice and of bob; bob rates
/// answerability on the first three items only.
#[allow(clippy::type_complexity)] // A table of the fixture reads best inline.
const TABLE: [((u8, u8, u8, &str), (u8, u8, Option<u8>, &str)); 6] = [
    ((3, 0, 3, "a1"), (3, 0, Some(3), "a1")),
    ((2, 0, 2, "a1"), (3, 1, Some(2), "a2")),
    ((0, 2, 1, "b1"), (0, 2, Some(0), "b2")),
    ((3, 0, 3, "a1"), (2, 0, None, "b2")),
    ((1, 1, 0, "c1"), (1, 1, None, "d1")),
    ((3, 0, 3, "d2"), (3, 0, None, "d1")),
];

fn ratings() -> Vec<Rating> {
    let mut out = Vec::new();
    for (i, (alice, bob)) in TABLE.iter().enumerate() {
        let id = format!("q{i}");
        let mut a = rating(&id, "alice");
        a.correctness = Some(alice.0);
        a.hallucination = Some(alice.1);
        a.answerability = Some(alice.2);
        a.category_pick = Some(alice.3.into());
        let mut b = rating(&id, "bob");
        b.correctness = Some(bob.0);
        b.hallucination = Some(bob.1);
        b.answerability = bob.2;
        b.category_pick = Some(bob.3.into());
        out.push(a);
        out.push(b);
    }
    out
}

fn split(parent: &str, children: [&str; 2], rho: f64) -> SplitStats {
    let estimate = |value| Estimate { value, ci: None };
    SplitStats {
        dimension: "qc".into(),
        parent_level: Granularity::Medium,
        parent: parent.into(),
        parent_mean: 0.5,
        children: children.iter().map(|c| c.to_string()).collect(),
        children_means: vec![0.5, 0.5],
        sigma_sib: estimate(0.1),
        delta_vert: estimate(0.1),
        rho: estimate(rho),
        calibration: Calibration::Moderate,
        sigma_sib_noise_floor: None,
        delta_vert_noise_floor: None,
        sigma_sib_p: None,
        rho_p: None,
        calibration_against_chance: None,
    }
}

/// Splits A (ρ 3), B (ρ 1), C (ρ 0.5); D has none, so item q5 (d1) is left out.
fn analysis() -> Analysis {
    Analysis {
        settings: Settings::default(),
        counts: Counts {
            questions: 0,
            analysed: 0,
            unscored: 0,
            left_out: Vec::new(),
        },
        levels: Vec::new(),
        splits: vec![
            split("A", ["a1", "a2"], 3.0),
            split("B", ["b1", "b2"], 1.0),
            split("C", ["c1", "c2"], 0.5),
        ],
        dimensions: Vec::new(),
        table1: Vec::new(),
        table2: Vec::new(),
        table3: Vec::new(),
        factorials: Vec::new(),
        notes: Vec::new(),
        refusals: None,
        human_validation: None,
        tags: None,
    }
}

fn close(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-12, "{a} ≠ {b}");
}

#[test]
fn fleiss_kappa_per_scale_by_hand() {
    let result = agreement(&items(), &ratings(), &parents(), None);
    assert_eq!(result.annotators, ["alice", "bob"]);
    assert_eq!(result.n_ratings, 12);
    let kappa: Vec<(&str, usize, Option<f64>)> = result
        .scales
        .iter()
        .map(|s| (s.scale.as_str(), s.n_items, s.kappa))
        .collect();
    // Correctness, 4 categories: category shares 2,2,2,6 of 12 → P_e = 3/36 + 1/4 = 1/3;
    // pairs agree on 4 of 6 items → P̄ = 2/3; κ = (2/3 − 1/3) / (1 − 1/3) = 1/2.
    assert_eq!(kappa[0].0, "correctness");
    assert_eq!(kappa[0].1, 6);
    close(kappa[0].2.unwrap(), 0.5);
    // Hallucination, 3 categories: shares 7,3,2 of 12 → P_e = 62/144; P̄ = 5/6 = 120/144;
    // κ = 58/82.
    assert_eq!(kappa[1].1, 6);
    close(kappa[1].2.unwrap(), 58.0 / 82.0);
    // Answerability: bob rated q0–q2 only, so κ is over those 3 items: rows [0,0,0,2],
    // [0,0,2,0], [1,1,0,0] → shares 1,1,2,2 of 6, P_e = 10/36; P̄ = 2/3; κ = 14/26.
    assert_eq!(kappa[2].1, 3);
    close(kappa[2].2.unwrap(), 14.0 / 26.0);
}

#[test]
fn quality_shares_by_hand() {
    let result = agreement(&items(), &ratings(), &parents(), None);
    let q = &result.quality;
    // Mean correctness 3, 2.5, 0, 2.5, 1, 3 → 4 of 6 acceptable.
    assert_eq!(q.acceptable.unwrap().count, 4);
    assert_eq!(q.acceptable.unwrap().n, 6);
    // Hallucination 0 from both on q0, q3, q5.
    assert_eq!(q.hallucination_free.unwrap().count, 3);
    // Answerability item means 3, 2, 0.5, 3, 0, 3 → mean 11.5 / 6, four ≥ 2.
    close(q.answerability_mean.unwrap(), 11.5 / 6.0);
    assert_eq!(q.answerable.unwrap().count, 4);
}

#[test]
fn category_agreement_against_chance_by_hand() {
    let result = agreement(&items(), &ratings(), &parents(), None);
    let category = result.category.expect("picks were made");
    assert_eq!(category.n_items, 6);
    let alice = &category.per_annotator[0];
    let bob = &category.per_annotator[1];
    assert_eq!(alice.annotator.as_deref(), Some("alice"));
    // alice: exact on q0, q2, q4; siblings on q1 (a1 for a2) and q5 (d2 for d1); q3 wrong.
    assert_eq!((alice.exact.hits, alice.exact.n), (3, 6));
    assert_eq!(alice.parent.hits, 5);
    // bob: exact on q0, q1, q3, q5; sibling on q2; q4 wrong.
    assert_eq!((bob.exact.hits, bob.parent.hits), (4, 5));
    // Eight choices in pairs: chance 1/8 exact, 2/8 parent-match.
    close(alice.exact.baseline, 0.125);
    close(alice.parent.baseline, 0.25);
    // P(X ≥ 3), X ~ Bin(6, 1/8) = 1 − Σ_{k<3} C(6,k) (1/8)^k (7/8)^(6−k).
    let q: f64 = 7.0 / 8.0;
    let below = q.powi(6) + 6.0 * 0.125 * q.powi(5) + 15.0 * 0.125f64.powi(2) * q.powi(4);
    assert!((alice.exact.p.unwrap() - (1.0 - below)).abs() < 1e-12);
    assert_eq!(alice.exact.p, binomial_greater(3, 6, 0.125));
    assert_eq!(bob.parent.p, binomial_greater(5, 6, 0.25));
    // Pooled: 7 exact and 10 parent-matches of 12 picks.
    assert_eq!(category.pooled.annotator, None);
    assert_eq!(
        (
            category.pooled.exact.hits,
            category.pooled.parent.hits,
            category.pooled.n
        ),
        (7, 10, 12)
    );
    assert_eq!(category.pooled.exact.p, binomial_greater(7, 12, 0.125));

    // Cohen's κ: alice a1,a1,b1,a1,c1,d2 vs bob a1,a2,b2,b2,d1,d1: p_o = 1/6; the only shared
    // label is a1 (alice 3/6, bob 1/6), so p_e = 1/12; κ = (1/6 − 1/12) / (11/12) = 1/11.
    assert_eq!(category.pairs.len(), 1);
    let pair = &category.pairs[0];
    assert_eq!(
        (pair.a.as_str(), pair.b.as_str(), pair.n, pair.same),
        ("alice", "bob", 6, 1)
    );
    close(pair.kappa.unwrap(), 1.0 / 11.0);
    assert_eq!(category.coherence, None);
    assert!(result.notes.iter().any(|n| n.contains("no analysis")));
}

#[test]
fn agreement_is_correlated_with_the_coherence_ratio_of_the_split() {
    let analysis = analysis();
    let result = agreement(&items(), &ratings(), &parents(), Some(&analysis));
    let link = result.category.unwrap().coherence.unwrap();
    // Every pick a parent-match on q0, q1, q2 (ρ 3, 3, 1), not on q3, q4 (ρ 1, 0.5); q5 has no
    // split. x = 1,1,1,0,0, y = 3,3,1,1,0.5: Sxy = 1.9, Sxx = 1.2, Syy = 5.8,
    // r = 1.9 / √6.96.
    assert_eq!((link.n, link.agreed, link.without_split), (5, 3, 1));
    close(link.r.unwrap(), 1.9 / 6.96f64.sqrt());
    let expected = point_biserial(
        &[true, true, true, false, false],
        &[3.0, 3.0, 1.0, 1.0, 0.5],
    )
    .unwrap();
    assert_eq!(link.p, Some(expected.p));
    assert!(
        result
            .notes
            .iter()
            .any(|n| n.contains("1 item(s) with picks left out"))
    );
}

#[test]
fn choices_of_different_sizes_use_the_mean_baseline() {
    let mut items = items();
    // q5 offers only its own pair: chance 1/2 exact, 2/2 parent-match.
    items[5].choices = vec!["d1".into(), "d2".into()];
    let result = agreement(&items, &ratings(), &parents(), None);
    let alice = &result.category.unwrap().per_annotator[0];
    close(alice.exact.baseline, (5.0 * 0.125 + 0.5) / 6.0);
    close(alice.parent.baseline, (5.0 * 0.25 + 1.0) / 6.0);
    assert!(result.notes.iter().any(|n| n.contains("mean chance rate")));
}

#[test]
fn one_annotator_or_none_gives_notes_not_failures() {
    let alice_only: Vec<Rating> = ratings()
        .into_iter()
        .filter(|r| r.annotator == "alice")
        .collect();
    let result = agreement(&items(), &alice_only, &parents(), None);
    assert!(result.scales.iter().all(|s| s.kappa.is_none()));
    assert!(
        result
            .notes
            .iter()
            .any(|n| n.contains("one annotator (alice)"))
    );
    let category = result.category.unwrap();
    assert!(category.pairs.is_empty());
    assert_eq!(category.per_annotator.len(), 1);
    // The JSON has no NaN or infinity.
    let json = serde_json::to_string(&agreement(&items(), &alice_only, &parents(), None)).unwrap();
    assert!(!json.contains("NaN"));

    let empty = agreement(&items(), &[], &parents(), None);
    assert_eq!(empty.n_ratings, 0);
    assert_eq!(empty.quality.acceptable, None);
    assert_eq!(empty.category, None);
    assert!(empty.notes.iter().any(|n| n.contains("no ratings yet")));
}

#[test]
fn identical_ratings_leave_kappa_undefined_with_a_note() {
    let items = items();
    let mut same = Vec::new();
    for item in &items {
        for name in ["alice", "bob"] {
            let mut r = rating(&item.item_id, name);
            r.hallucination = Some(0);
            same.push(r);
        }
    }
    let result = agreement(&items, &same, &parents(), None);
    assert_eq!(result.scales[1].kappa, None);
    assert!(
        result
            .notes
            .iter()
            .any(|n| n.contains("κ of hallucination: undefined"))
    );
}

#[test]
fn the_tagger_is_one_more_annotator_of_the_category_task() {
    // The tagger picks the intended category except on q3 (a1 for b2); it has no tag for q5.
    let picks: std::collections::HashMap<String, String> = [
        ("q0", "a1"),
        ("q1", "a2"),
        ("q2", "b1"),
        ("q3", "a1"),
        ("q4", "c1"),
    ]
    .iter()
    .map(|(id, pick)| (id.to_string(), pick.to_string()))
    .collect();
    let result = tagger_as_annotator(&items(), &ratings(), &picks).unwrap();
    assert_eq!(result.n_items, 5);
    assert_eq!((result.exact.count, result.exact.n), (4, 5));
    // Per person, on q0–q4 (categories as small numbers: a1 0, a2 1, b1 2, b2 3, c1 4, d1 5).
    let tagger = [0, 1, 2, 0, 4];
    let alice = [0, 0, 2, 0, 4];
    let bob = [0, 1, 3, 3, 5];
    assert_eq!(result.pairs.len(), 2);
    for (pair, (name, theirs)) in result.pairs.iter().zip([("alice", alice), ("bob", bob)]) {
        assert_eq!((pair.a.as_str(), pair.b.as_str()), (TAGGER, name));
        assert_eq!(pair.n, 5);
        assert_eq!(
            pair.same,
            tagger.iter().zip(&theirs).filter(|(a, b)| a == b).count()
        );
        close(pair.kappa.unwrap(), cohen_kappa(&tagger, &theirs).unwrap());
    }
    // Fleiss' κ over the five items both people picked for: counts per category, by hand.
    let humans: Vec<Vec<u32>> = vec![
        vec![2, 0, 0, 0, 0, 0],
        vec![1, 1, 0, 0, 0, 0],
        vec![0, 0, 1, 1, 0, 0],
        vec![1, 0, 0, 1, 0, 0],
        vec![0, 0, 0, 0, 1, 1],
    ];
    let with_tagger: Vec<Vec<u32>> = humans
        .iter()
        .zip(tagger)
        .map(|(row, t)| {
            let mut row = row.clone();
            row[t] += 1;
            row
        })
        .collect();
    assert_eq!(result.n_common, 5);
    close(
        result.fleiss_humans.unwrap(),
        fleiss_kappa(&humans).unwrap(),
    );
    close(
        result.fleiss_with_tagger.unwrap(),
        fleiss_kappa(&with_tagger).unwrap(),
    );
    assert!(result.fleiss_with_tagger.unwrap() > result.fleiss_humans.unwrap());
}
