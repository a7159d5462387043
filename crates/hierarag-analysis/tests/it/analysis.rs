//! The analysis on fixtures with hand-computed values (docs/design.md, "Analysis"), the paper's Table 4
//! check, and the shapes it must survive.

use hierarag_analysis::{Calibration, Metric, Observation, Scores, Settings, analyze};
use hierarag_records::CategoryRef;
use hierarag_taxonomy::{Granularity, Taxonomy};
use proptest::prelude::*;

fn question(id: &str, set: &str, categories: &[(&str, Granularity, &str)], cs: f64) -> Observation {
    Observation {
        id: id.into(),
        set: set.into(),
        categories: categories
            .iter()
            .map(|&(dimension, level, category)| CategoryRef {
                dimension: dimension.into(),
                level,
                category: category.into(),
            })
            .collect(),
        unanswerable: false,
        scores: Scores {
            cs,
            ap: Some(cs / 2.0),
            ..Scores::default()
        },
        texts: None,
    }
}

/// qc at coarse and medium (an rq2 run of two levels), CS values chosen so that every
/// statistic can be worked out by hand.
fn two_levels() -> Vec<Observation> {
    use Granularity::{Coarse, Medium};
    let mut out = Vec::new();
    let mut add = |set: &str, level: Granularity, category: &str, values: &[f64]| {
        for (i, &cs) in values.iter().enumerate() {
            out.push(question(
                &format!("{set}-{category}-{i}"),
                set,
                &[("qc", level, category)],
                cs,
            ));
        }
    };
    add("qc/coarse", Coarse, "simple", &[0.6, 0.8]);
    add("qc/coarse", Coarse, "complex", &[0.5, 0.7]);
    add("qc/medium", Medium, "single_fact", &[0.7, 0.9]);
    add("qc/medium", Medium, "multi_fact", &[0.6]);
    add("qc/medium", Medium, "cross_section", &[0.5, 0.5]);
    add("qc/medium", Medium, "comparative", &[0.9, 0.7]);
    out
}

fn close(actual: f64, expected: f64) {
    assert!(
        (actual - expected).abs() < 1e-9,
        "expected {expected}, got {actual}"
    );
}

#[test]
fn hand_computed_discpow_range_nmi_delta_and_rho() {
    let taxonomy = Taxonomy::default_taxonomy();
    let analysis = analyze(&two_levels(), &taxonomy, &Settings::default());
    assert_eq!(analysis.levels.len(), 2);
    let coarse = &analysis.levels[0];
    let medium = &analysis.levels[1];
    assert_eq!(
        (coarse.level, medium.level),
        (Granularity::Coarse, Granularity::Medium)
    );

    // Coarse: category means 0.7 and 0.6.
    assert_eq!(coarse.n, 4);
    close(coarse.categories[0].metric.value, 0.7);
    close(coarse.categories[1].metric.value, 0.6);
    close(coarse.discpow.unwrap().value, 0.05);
    close(coarse.range.unwrap().value, 0.1);
    // Five bins over four distinct values: every value its own bin, so the bins determine
    // the label: MI = H(labels) = ln 2, H(bins) = ln 4, NMI = ln 2 / ((ln 2 + ln 4) / 2) = 2/3.
    close(coarse.nmi.unwrap(), 2.0 / 3.0);

    // Medium: means 0.8, 0.6, 0.5, 0.8 (taxonomy order); mean 0.675, population variance
    // (0.125² + 0.075² + 0.175² + 0.125²) / 4 = 0.016875.
    let means: Vec<f64> = medium.categories.iter().map(|c| c.metric.value).collect();
    let names: Vec<&str> = medium
        .categories
        .iter()
        .map(|c| c.category.as_str())
        .collect();
    assert_eq!(
        names,
        ["single_fact", "multi_fact", "cross_section", "comparative"]
    );
    for (actual, expected) in means.iter().zip([0.8, 0.6, 0.5, 0.8]) {
        close(*actual, expected);
    }
    let discpow = 0.016875f64.sqrt();
    close(medium.discpow.unwrap().value, discpow);
    close(medium.range.unwrap().value, 0.3);
    let delta = medium.delta.unwrap();
    assert_eq!(delta.against, Granularity::Coarse);
    close(delta.ratio.value, discpow / 0.05);

    // Splits: simple → {single_fact .8, multi_fact .6}: σ .1, δ |.7 − .7| = 0, ρ .1/.001;
    // complex → {cross_section .5, comparative .8}: σ .15, δ |.6 − .65| = .05, ρ .15/.051.
    assert_eq!(analysis.splits.len(), 2);
    let simple = &analysis.splits[0];
    assert_eq!(simple.parent, "simple");
    close(simple.sigma_sib.value, 0.1);
    close(simple.delta_vert.value, 0.0);
    close(simple.rho.value, 0.1 / 0.001);
    assert_eq!(simple.calibration, Calibration::Well);
    let complex = &analysis.splits[1];
    close(complex.sigma_sib.value, 0.15);
    close(complex.delta_vert.value, 0.05);
    close(complex.rho.value, 0.15 / 0.051);
    let dimension = &analysis.dimensions[0];
    close(dimension.mean_rho.unwrap(), (100.0 + 0.15 / 0.051) / 2.0);

    // ddof 1 scales DiscPow by sqrt(k / (k - 1)).
    let sample = analyze(
        &two_levels(),
        &taxonomy,
        &Settings {
            ddof: 1,
            ..Settings::default()
        },
    );
    close(sample.levels[0].discpow.unwrap().value, 0.05 * 2f64.sqrt());
    close(
        sample.levels[1].discpow.unwrap().value,
        discpow * (4.0f64 / 3.0).sqrt(),
    );

    // Tables 1 and 2 carry the same numbers.
    assert_eq!(analysis.table1.len(), 1);
    close(analysis.table1[0].range.unwrap(), 0.1);
    assert_eq!(analysis.table1[0].rank, Some(1));
    close(analysis.table1[0].metric, 0.65);
    close(analysis.table1[0].map.unwrap(), 0.325);
    assert_eq!(analysis.table2.len(), 2);
    close(analysis.table2[1].delta.unwrap().value, discpow / 0.05);
    // Table 3 ranks the four medium categories (ties broken by name).
    let table3 = &analysis.table3[0];
    let top: Vec<&str> = table3.top.iter().map(|r| r.category.as_str()).collect();
    let bottom: Vec<&str> = table3.bottom.iter().map(|r| r.category.as_str()).collect();
    assert_eq!(top, ["comparative", "single_fact"]);
    assert_eq!(bottom, ["multi_fact", "cross_section"]);
}

#[test]
fn intervals_bracket_the_estimates_and_follow_the_seed() {
    let taxonomy = Taxonomy::default_taxonomy();
    let observations = two_levels();
    let settings = Settings {
        seed: 7,
        ..Settings::default()
    };
    let first = analyze(&observations, &taxonomy, &settings);
    let again = analyze(&observations, &taxonomy, &settings);
    assert_eq!(
        serde_json::to_string(&first).unwrap(),
        serde_json::to_string(&again).unwrap(),
        "same seed, same bytes"
    );
    let other = analyze(
        &observations,
        &taxonomy,
        &Settings {
            seed: 8,
            ..Settings::default()
        },
    );
    assert_ne!(
        serde_json::to_string(&first.levels).unwrap(),
        serde_json::to_string(&other.levels).unwrap(),
        "another seed, other resamples"
    );
    for level in &first.levels {
        for category in &level.categories {
            let [lo, hi] = category.metric.ci.unwrap();
            assert!(lo <= category.metric.value + 1e-12 && category.metric.value <= hi + 1e-12);
        }
        let [lo, hi] = level.discpow.unwrap().ci.unwrap();
        assert!(lo <= hi);
    }
    // No resampling: no intervals, no p-values.
    let bare = analyze(
        &observations,
        &taxonomy,
        &Settings {
            bootstrap: 0,
            permutations: 0,
            ..Settings::default()
        },
    );
    assert!(bare.levels.iter().all(|l| l.discpow.unwrap().ci.is_none()));
    assert!(bare.levels.iter().all(|l| l.discpow_p.is_none()));
    assert!(
        bare.dimensions[0]
            .recommendation
            .as_ref()
            .unwrap()
            .reason
            .contains("point estimate")
    );
}

#[test]
fn permutation_p_is_small_for_separated_categories_and_large_for_shuffled_ones() {
    use Granularity::Coarse;
    let taxonomy = Taxonomy::default_taxonomy();
    let mut separated = Vec::new();
    let mut mixed = Vec::new();
    for i in 0..40 {
        let noise = f64::from(i % 5) * 0.01;
        separated.push(question(
            &format!("s{i}"),
            "qc",
            &[("qc", Coarse, "simple")],
            0.8 + noise,
        ));
        separated.push(question(
            &format!("c{i}"),
            "qc",
            &[("qc", Coarse, "complex")],
            0.4 + noise,
        ));
        mixed.push(question(
            &format!("s{i}"),
            "qc",
            &[("qc", Coarse, "simple")],
            0.4 + noise,
        ));
        mixed.push(question(
            &format!("c{i}"),
            "qc",
            &[("qc", Coarse, "complex")],
            0.4 + noise,
        ));
    }
    let settings = Settings::default();
    let p_separated = analyze(&separated, &taxonomy, &settings).levels[0]
        .discpow_p
        .unwrap();
    let p_mixed = analyze(&mixed, &taxonomy, &settings).levels[0]
        .discpow_p
        .unwrap();
    // Nothing of 1,000 permutations reaches a perfect separation: p = 1 / 1001.
    close(p_separated, 1.0 / 1001.0);
    // Identical distributions: the observed DiscPow is 0, every permutation reaches it.
    close(p_mixed, 1.0);
}

/// Per-question CS values whose cell means are exactly `mean`: symmetric deviations around it.
fn cell(n: usize, mean: f64, lv: &str, qc: &str, out: &mut Vec<Observation>) {
    use Granularity::Coarse;
    for i in 0..n {
        let deviation = if n % 2 == 1 && i == n - 1 {
            0.0
        } else if i % 2 == 0 {
            0.05 + f64::from(u32::try_from(i % 7).unwrap()) * 0.01
        } else {
            -(0.05 + f64::from(u32::try_from((i - 1) % 7).unwrap()) * 0.01)
        };
        out.push(question(
            &format!("{lv}-{qc}-{i}"),
            "lv×qc",
            &[("lv", Coarse, lv), ("qc", Coarse, qc)],
            mean + deviation,
        ));
    }
}

#[test]
fn paper_table_4_pooled_means_and_unweighted_main_effects() {
    let mut observations = Vec::new();
    cell(252, 0.637, "similar", "simple", &mut observations);
    cell(265, 0.672, "similar", "complex", &mut observations);
    cell(265, 0.578, "distant", "simple", &mut observations);
    cell(218, 0.578, "distant", "complex", &mut observations);
    let analysis = analyze(
        &observations,
        &Taxonomy::default_taxonomy(),
        &Settings::default(),
    );
    assert_eq!(analysis.factorials.len(), 1);
    let table = &analysis.factorials[0];
    assert_eq!(table.set, "lv×qc");
    let ns: Vec<usize> = table.cells.iter().map(|c| c.n).collect();
    assert_eq!(ns, [252, 265, 265, 218]);
    for (cell, mean) in table.cells.iter().zip([0.637, 0.672, 0.578, 0.578]) {
        close(cell.metric.value, mean);
    }
    // Gaps (simple → complex within each LV level): +.035 and .000.
    close(table.gaps[0].value, 0.035);
    close(table.gaps[1].value, 0.0);
    // Pooled: similar (252·.637 + 265·.672) / 517 = .655, distant .578.
    let similar = &table.marginals[0];
    let distant = &table.marginals[1];
    assert_eq!((similar.category.as_str(), similar.n), ("similar", 517));
    assert_eq!((distant.category.as_str(), distant.n), ("distant", 483));
    assert_eq!(format!("{:.3}", similar.pooled.cs), "0.655");
    assert_eq!(format!("{:.3}", distant.pooled.cs), "0.578");
    // Unweighted main effects: LV (.578 + .578)/2 − (.637 + .672)/2 = −.0765 (the paper's
    // ≈ .076), QC (.672 + .578)/2 − (.637 + .578)/2 = .0175 (≈ .018).
    close(table.main_effects[0].value.value, -0.0765);
    assert_eq!(table.main_effects[0].contrast, "lv: distant − similar");
    close(table.main_effects[1].value.value, 0.0175);
    close(table.interaction.as_ref().unwrap().value.value, -0.035);
    let anova = table.anova.unwrap();
    assert_eq!(anova.residual_df, 996.0);
    assert!(anova.interaction.p > 0.0 && anova.interaction.p < 1.0);
    // The interaction contrast's sum of squares in closed form: L² / Σ c²/n.
    let contrast_ss = 0.035f64.powi(2) / (1.0 / 252.0 + 1.0 / 265.0 + 1.0 / 265.0 + 1.0 / 218.0);
    assert!((anova.interaction.sum_sq - contrast_ss).abs() < 1e-9);
}

#[test]
fn shapes_it_cannot_compute_are_noted_not_fatal() {
    use Granularity::{Coarse, Fine};
    let taxonomy = Taxonomy::default_taxonomy();
    let observations = vec![
        // A level with one category.
        question("a", "qc", &[("qc", Coarse, "simple")], 0.5),
        // A fine level with one category of a split only.
        question("b", "qc/fine", &[("qc", Fine, "extractive_span")], 0.5),
        // No category.
        question("c", "x", &[], 0.5),
        // A factorial set with an empty cell.
        question(
            "d",
            "lv×qc",
            &[("lv", Coarse, "similar"), ("qc", Coarse, "simple")],
            0.5,
        ),
        question(
            "e",
            "lv×qc",
            &[("lv", Coarse, "distant"), ("qc", Coarse, "complex")],
            0.4,
        ),
        // A category the taxonomy does not know.
        question("f", "zz", &[("zz", Coarse, "mystery")], 0.1),
    ];
    let analysis = analyze(&observations, &taxonomy, &Settings::default());
    assert_eq!(analysis.counts.questions, 6);
    assert_eq!(analysis.counts.left_out.len(), 1);
    assert_eq!(analysis.counts.left_out[0].id, "c");
    assert!(analysis.levels.iter().all(|l| l.discpow.is_none()));
    assert!(
        analysis
            .notes
            .iter()
            .any(|n| n.contains("qc coarse (set qc): only 1 category"))
    );
    let factorial = &analysis.factorials[0];
    assert!(factorial.anova.is_none());
    assert!(
        factorial
            .notes
            .iter()
            .any(|n| n.contains("no scored questions"))
    );
    assert!(factorial.main_effects.is_empty());
    let text = serde_json::to_string(&analysis).unwrap();
    assert!(!text.contains("NaN"));
}

#[test]
fn another_metric_can_be_analysed() {
    let analysis = analyze(
        &two_levels(),
        &Taxonomy::default_taxonomy(),
        &Settings {
            metric: Metric::Ap,
            ..Settings::default()
        },
    );
    // AP is CS / 2 in the fixture: DiscPow halves.
    close(analysis.levels[0].discpow.unwrap().value, 0.025);
}

#[test]
fn questions_without_retrieval_metrics_are_left_out_of_a_retrieval_comparison_and_said() {
    // The medium questions' system named no document.
    let mut observations = two_levels();
    for o in observations.iter_mut().filter(|o| o.set == "qc/medium") {
        o.scores.ap = None;
        o.scores.ndcg_10 = None;
        o.scores.recall_10 = None;
        o.scores.rr = None;
    }
    let taxonomy = Taxonomy::default_taxonomy();
    let by_cs = analyze(&observations, &taxonomy, &Settings::default());
    assert_eq!(by_cs.counts.analysed, 11, "CS compares every question");
    let medium = &by_cs.levels[1];
    assert_eq!(medium.means.map, None, "no MAP, not a MAP of 0");
    close(by_cs.levels[0].means.map.unwrap(), 0.325);
    assert!(
        by_cs
            .notes
            .iter()
            .any(|n| n.starts_with("7 of 11 questions have no retrieval metrics")),
        "{:?}",
        by_cs.notes
    );
    assert!(by_cs.table2.iter().any(|row| row.map.is_none()));

    let by_ap = analyze(
        &observations,
        &taxonomy,
        &Settings {
            metric: Metric::Ap,
            ..Settings::default()
        },
    );
    assert_eq!(by_ap.counts.analysed, 4);
    assert_eq!(by_ap.counts.left_out.len(), 7);
    assert_eq!(
        by_ap.counts.left_out[0].reason,
        "no ap: its system named no document"
    );
    assert_eq!(by_ap.levels.len(), 1, "only the coarse level has AP");
    close(by_ap.levels[0].discpow.unwrap().value, 0.025);
    assert!(
        by_ap
            .notes
            .iter()
            .any(|n| n.contains("the comparison of ap leaves them out"))
    );
}

#[test]
fn recommendation_walks_down_while_the_gain_is_supported() {
    use Granularity::{Coarse, Fine, Medium};
    let taxonomy = Taxonomy::default_taxonomy();
    let mut observations = Vec::new();
    // Coarse categories barely differ; medium ones differ a lot; fine ones no more than medium.
    let level_values: [(Granularity, &[(&str, f64)]); 3] = [
        (Coarse, &[("simple", 0.60), ("complex", 0.61)]),
        (
            Medium,
            &[
                ("single_fact", 0.40),
                ("multi_fact", 0.80),
                ("cross_section", 0.45),
                ("comparative", 0.75),
            ],
        ),
        (
            Fine,
            &[
                ("extractive_span", 0.40),
                ("entity_extraction", 0.40),
                ("fact_aggregation", 0.80),
                ("single_hop_inference", 0.80),
                ("multi_hop_reasoning", 0.45),
                ("causal_reasoning", 0.45),
                ("comparative_synthesis_entities", 0.75),
                ("comparative_synthesis_concepts", 0.75),
            ],
        ),
    ];
    for (level, categories) in level_values {
        for &(category, mean) in categories {
            for i in 0..30 {
                let noise = (f64::from(i % 6) - 2.5) * 0.02;
                observations.push(question(
                    &format!("{level}-{category}-{i}"),
                    &format!("qc/{level}"),
                    &[("qc", level, category)],
                    mean + noise,
                ));
            }
        }
    }
    let analysis = analyze(&observations, &taxonomy, &Settings::default());
    let recommendation = analysis.dimensions[0].recommendation.as_ref().unwrap();
    assert_eq!(recommendation.level, Medium, "{}", recommendation.reason);
    assert!(recommendation.reason.contains("the gain is supported"));
    assert!(recommendation.reason.contains("fine: DiscPow"));
    // Fine children equal their medium parents exactly: δ_vert 0 and no spread.
    let fine_splits: Vec<_> = analysis
        .splits
        .iter()
        .filter(|s| s.parent_level == Medium)
        .collect();
    assert_eq!(fine_splits.len(), 4);
    assert!(fine_splits.iter().all(|s| s.sigma_sib.value.abs() < 1e-12));
}

proptest! {
    #[test]
    fn discpow_range_and_intervals_are_consistent(
        values in proptest::collection::vec((0usize..4, 0.0f64..1.0), 8..60),
        seed in 0u64..1000,
    ) {
        use Granularity::Medium;
        let names = ["single_fact", "multi_fact", "cross_section", "comparative"];
        let observations: Vec<Observation> = values
            .iter()
            .enumerate()
            .map(|(i, &(k, cs))| question(&format!("q{i}"), "qc/medium", &[("qc", Medium, names[k])], cs))
            .collect();
        let settings = Settings { seed, bootstrap: 100, permutations: 50, ..Settings::default() };
        let analysis = analyze(&observations, &Taxonomy::default_taxonomy(), &settings);
        let level = &analysis.levels[0];
        prop_assert_eq!(level.n, values.len());
        if let Some(discpow) = level.discpow {
            prop_assert!(discpow.value >= 0.0);
            let range = level.range.unwrap().value;
            // The population std of k values is at most half their range.
            prop_assert!(discpow.value <= range / 2.0 + 1e-12);
            let [lo, hi] = discpow.ci.unwrap();
            prop_assert!(lo <= hi);
            let p = level.discpow_p.unwrap();
            prop_assert!(p > 0.0 && p <= 1.0);
            let nmi = level.nmi.unwrap();
            prop_assert!((0.0..=1.0 + 1e-12).contains(&nmi));
        }
        for category in &level.categories {
            let cs: Vec<f64> = values.iter().filter(|(k, _)| names[*k] == category.category).map(|v| v.1).collect();
            let min = cs.iter().copied().fold(f64::INFINITY, f64::min);
            let max = cs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            prop_assert!(category.metric.value >= min - 1e-12 && category.metric.value <= max + 1e-12);
            let [lo, hi] = category.metric.ci.unwrap();
            prop_assert!(lo >= min - 1e-12 && hi <= max + 1e-12);
        }
    }
}

/// Normal draws for simulated scores (Box–Muller from a seeded stream).
fn normal(rng: &mut rand_chacha::ChaCha8Rng, mean: f64, sd: f64) -> f64 {
    use rand::Rng;
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random::<f64>();
    mean + sd * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// qc at coarse (simple, complex) and medium (two children each), `n` questions a category,
/// CS ~ N(0.7 + effect, 0.15) with the category's effect from `effect`.
fn simulated_qc(seed: u64, n: usize, effect: impl Fn(&str) -> f64) -> Vec<Observation> {
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::new();
    let levels: [(Granularity, &[&str]); 2] = [
        (Granularity::Coarse, &["simple", "complex"]),
        (
            Granularity::Medium,
            &["single_fact", "multi_fact", "cross_section", "comparative"],
        ),
    ];
    for (level, categories) in levels {
        for &category in categories {
            for i in 0..n {
                let cs = normal(&mut rng, 0.7 + effect(category), 0.15);
                out.push(question(
                    &format!("{level}-{category}-{i}"),
                    &format!("qc/{level}"),
                    &[("qc", level, category)],
                    cs,
                ));
            }
        }
    }
    out
}

/// The mean DiscPow (ddof 0) of a level's questions with their category labels shuffled.
fn permuted_discpow(values: &[(usize, f64)], k: usize, rounds: usize, seed: u64) -> f64 {
    use rand::SeedableRng;
    use rand::seq::SliceRandom;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut labels: Vec<usize> = values.iter().map(|&(label, _)| label).collect();
    let mut total = 0.0;
    for _ in 0..rounds {
        labels.shuffle(&mut rng);
        let mut sums = vec![0.0; k];
        let mut counts = vec![0.0; k];
        for (&label, &(_, value)) in labels.iter().zip(values) {
            sums[label] += value;
            counts[label] += 1.0;
        }
        let means: Vec<f64> = sums.iter().zip(&counts).map(|(s, c)| s / c).collect();
        let mean = means.iter().sum::<f64>() / k as f64;
        let variance = means.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / k as f64;
        total += variance.sqrt();
    }
    total / rounds as f64
}

#[test]
fn the_noise_floor_is_the_discpow_of_label_permuted_data() {
    let observations = simulated_qc(1, 150, |_| 0.0);
    let settings = Settings {
        bootstrap: 0,
        permutations: 0,
        ..Settings::default()
    };
    let analysis = analyze(&observations, &Taxonomy::default_taxonomy(), &settings);
    for level in &analysis.levels {
        let values: Vec<(usize, f64)> = observations
            .iter()
            .filter(|o| o.categories[0].level == level.level)
            .map(|o| {
                let k = level
                    .categories
                    .iter()
                    .position(|c| c.category == o.categories[0].category)
                    .unwrap();
                (k, o.scores.cs)
            })
            .collect();
        let permuted = permuted_discpow(&values, level.categories.len(), 4000, 5);
        let floor = level.discpow_noise_floor.expect("a floor");
        assert!(
            (floor / permuted - 1.0).abs() < 0.05,
            "{}: floor {floor} vs permuted {permuted}",
            level.level
        );
        // Without an effect the raw DiscPow is noise, of the floor's size; the corrected one is
        // smaller (it can still be above zero: one level's noise is one draw).
        let raw = level.discpow.unwrap().value;
        let corrected = level.discpow_corrected.unwrap().value;
        assert!(raw < 3.0 * floor, "{}: {raw} vs {floor}", level.level);
        assert!(corrected < raw, "{}: {corrected} vs {raw}", level.level);
    }
    // The medium level's floor is higher: more, smaller categories.
    assert!(analysis.levels[1].discpow_noise_floor > analysis.levels[0].discpow_noise_floor);
}

#[test]
fn corrected_discpow_and_delta_take_the_noise_out() {
    // An effect of ±0.05 between the coarse categories, inherited by their children and
    // nothing more: the true spread is 0.05 at both levels, so Δ corrected is about 1, while
    // the paper's Δ also carries the finer level's larger noise.
    let effect = |category: &str| match category {
        "simple" | "single_fact" | "multi_fact" => 0.05,
        _ => -0.05,
    };
    let settings = Settings {
        bootstrap: 0,
        permutations: 0,
        ..Settings::default()
    };
    let seeds = 20;
    let (mut corrected, mut delta, mut delta_corrected) = (0.0, 0.0, 0.0);
    for seed in 0..seeds {
        let observations = simulated_qc(100 + seed, 300, effect);
        let analysis = analyze(&observations, &Taxonomy::default_taxonomy(), &settings);
        let medium = &analysis.levels[1];
        corrected += medium.discpow_corrected.unwrap().value / seeds as f64;
        let d = medium.delta.unwrap();
        delta += d.ratio.value / seeds as f64;
        delta_corrected += d.corrected.unwrap().value / seeds as f64;
        assert_eq!(analysis.table2[1].delta_corrected, d.corrected);
        assert!(medium.discpow_corrected.unwrap().value < medium.discpow.unwrap().value);
    }
    // Standard errors over 20 seeds: about 0.001 for the corrected value, 0.035 for Δ.
    assert!((corrected - 0.05).abs() < 0.004, "corrected {corrected}");
    assert!(
        (delta_corrected - 1.0).abs() < 0.1,
        "Δ corrected {delta_corrected}"
    );
    assert!(delta > delta_corrected, "Δ {delta} vs {delta_corrected}");
}

#[test]
fn rho_against_chance_labels_only_splits_above_noise_and_follows_the_seed() {
    // The children of `simple` differ by 0.2; those of `complex` carry nothing of their own.
    let effect = |category: &str| match category {
        "single_fact" => 0.1,
        "multi_fact" => -0.1,
        _ => 0.0,
    };
    let observations = simulated_qc(7, 60, effect);
    let settings = Settings {
        bootstrap: 0,
        permutations: 999,
        ..Settings::default()
    };
    let taxonomy = Taxonomy::default_taxonomy();
    let analysis = analyze(&observations, &taxonomy, &settings);
    let split = |parent: &str| analysis.splits.iter().find(|s| s.parent == parent).unwrap();
    let (real, noise) = (split("simple"), split("complex"));
    assert!(real.sigma_sib_p.unwrap() < 0.01, "{real:?}");
    assert!(real.rho_p.unwrap() < 0.01, "{real:?}");
    assert_eq!(real.calibration_against_chance, Some(real.calibration));
    assert!(real.sigma_sib.value > 3.0 * real.sigma_sib_noise_floor.unwrap());
    assert_eq!(noise.calibration_against_chance, Some(Calibration::Noise));
    assert!(noise.sigma_sib_p.unwrap() >= 0.05, "{noise:?}");
    // The floors are those of 60 questions a child with sd 0.15: σ_sib of two means is half
    // their distance, E|N(0, 2 · 0.15² / 60)| / 2 ≈ 0.011.
    let floor = noise.sigma_sib_noise_floor.unwrap();
    assert!((floor - 0.011).abs() < 0.002, "{floor}");
    assert!(noise.delta_vert_noise_floor.unwrap() > 0.0);
    // The same seed gives the same p-values; another seed other ones.
    let again = analyze(&observations, &taxonomy, &settings);
    assert_eq!(again.splits, analysis.splits);
    let other = analyze(
        &observations,
        &taxonomy,
        &Settings {
            seed: 1,
            ..settings
        },
    );
    assert_ne!(
        other.splits.iter().map(|s| s.rho_p).collect::<Vec<_>>(),
        analysis.splits.iter().map(|s| s.rho_p).collect::<Vec<_>>()
    );
}

/// Whether the first release's intervals and issue 17's corrected intervals both support the
/// medium step of an analysis (the corrected DiscPow's above 0 when the coarse one is 0).
fn intervals_support_the_step(analysis: &hierarag_analysis::Analysis) -> (bool, f64) {
    let medium = &analysis.levels[1];
    let delta = medium.delta.unwrap();
    let [raw_lo, _] = delta.ratio.ci.unwrap();
    let (corrected_lo, threshold) = match delta.corrected {
        Some(ratio) => (ratio.ci.unwrap()[0], 1.0),
        None => (medium.discpow_corrected.unwrap().ci.unwrap()[0], 0.0),
    };
    let margin = (raw_lo - 1.0).abs().min((corrected_lo - threshold).abs());
    (raw_lo > 1.0 && corrected_lo > threshold, margin)
}

#[test]
fn one_step_under_holm_agrees_with_the_intervals() {
    // One dimension, one step: Holm over one comparison is the step's own p-value, and p < 5 %
    // is the 95 % intervals lying above 1 (up to the interpolation between replicates).
    let settings = Settings {
        permutations: 0,
        ..Settings::default()
    };
    let mut taken = 0;
    for seed in 0..24u64 {
        let medium_effect = 0.01 * (seed % 4) as f64;
        let effect = move |category: &str| match category {
            "simple" => 0.02,
            "complex" => -0.02,
            "single_fact" | "cross_section" => 0.02 + medium_effect,
            _ => -0.02 - medium_effect,
        };
        let observations = simulated_qc(300 + seed, 60, effect);
        let analysis = analyze(
            &observations,
            &Taxonomy::default_taxonomy(),
            &Settings {
                seed,
                ..settings.clone()
            },
        );
        let recommendation = analysis.dimensions[0].recommendation.as_ref().unwrap();
        assert_eq!(recommendation.comparisons, 1);
        let step = recommendation.steps[0];
        assert_eq!(step.p, step.p_adjusted, "{recommendation:?}");
        let (supported, margin) = intervals_support_the_step(&analysis);
        if margin > 0.01 {
            assert_eq!(
                recommendation.level == Granularity::Medium,
                supported,
                "seed {seed}: {}",
                recommendation.reason
            );
        }
        assert_eq!(step.taken, recommendation.level == Granularity::Medium);
        taken += usize::from(step.taken);
    }
    // Both outcomes occur, so the agreement was tested both ways.
    assert!(taken > 0 && taken < 24, "{taken} of 24 steps taken");
}

/// Every rq2 dimension of the default taxonomy at coarse and medium, `n` questions a
/// category, CS ~ N(0.7 + effect(dimension, category), 0.15).
fn simulated_dimensions(
    seed: u64,
    n: usize,
    dimensions: &[&str],
    effect: impl Fn(&str, usize) -> f64,
) -> Vec<Observation> {
    use rand::SeedableRng;
    let taxonomy = Taxonomy::default_taxonomy();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::new();
    for &key in dimensions {
        let dimension = taxonomy.dimension(key).unwrap();
        for level in [Granularity::Coarse, Granularity::Medium] {
            for (k, category) in dimension
                .level(level)
                .unwrap()
                .categories
                .iter()
                .enumerate()
            {
                let shift = if level == Granularity::Medium {
                    effect(key, k)
                } else {
                    0.0
                };
                for i in 0..n {
                    out.push(question(
                        &format!("{key}-{level}-{}-{i}", category.name),
                        &format!("{key}/{level}"),
                        &[(key, level, &category.name)],
                        normal(&mut rng, 0.7 + shift, 0.15),
                    ));
                }
            }
        }
    }
    out
}

#[test]
fn the_recommendation_holds_the_error_rate_over_every_dimension() {
    // Two dimensions, one step each: Holm's family has two members. qc's medium level has a
    // strong effect, at's none.
    let observations = simulated_dimensions(5, 80, &["qc", "at"], |key, k| {
        if key == "qc" {
            [0.12, -0.12, 0.08, -0.08][k]
        } else {
            0.0
        }
    });
    let settings = Settings {
        permutations: 0,
        ..Settings::default()
    };
    let analysis = analyze(&observations, &Taxonomy::default_taxonomy(), &settings);
    let steps: Vec<_> = analysis
        .dimensions
        .iter()
        .map(|d| d.recommendation.as_ref().unwrap())
        .inspect(|r| assert_eq!(r.comparisons, 2, "{}", r.reason))
        .map(|r| r.steps[0])
        .collect();
    let (qc, at) = (steps[0], steps[1]);
    let (small, large) = if qc.p <= at.p { (qc, at) } else { (at, qc) };
    // Holm by hand: the smaller p doubled; the larger kept, but never below the first.
    let doubled = (2.0 * small.p.unwrap()).min(1.0);
    assert!((small.p_adjusted.unwrap() - doubled).abs() < 1e-12);
    let kept = large.p.unwrap().max(doubled).min(1.0);
    assert!((large.p_adjusted.unwrap() - kept).abs() < 1e-12);
    assert_eq!(
        analysis.dimensions[0]
            .recommendation
            .as_ref()
            .unwrap()
            .level,
        Granularity::Medium
    );
    assert_eq!(
        analysis.dimensions[1]
            .recommendation
            .as_ref()
            .unwrap()
            .level,
        Granularity::Coarse
    );
    let reason = &analysis.dimensions[0]
        .recommendation
        .as_ref()
        .unwrap()
        .reason;
    assert!(reason.contains("after Holm over 2 steps"), "{reason}");
    assert!(
        reason.contains("2 steps tested over 2 dimensions"),
        "{reason}"
    );
}

#[test]
fn the_planner_predicts_the_power_of_the_analysis() {
    use hierarag_analysis::{PowerSettings, power};
    // A coarse effect of ±0.02 and ±0.03 more between each coarse category's children. The
    // pilot is large, so the truth the planner takes from it is close to this one.
    let effect = |category: &str| match category {
        "simple" => 0.02,
        "complex" => -0.02,
        "single_fact" | "cross_section" => 0.05,
        _ => -0.05,
    };
    let taxonomy = Taxonomy::default_taxonomy();
    let settings = Settings {
        bootstrap: 400,
        permutations: 0,
        ..Settings::default()
    };
    let planned = 50;
    let pilot = simulated_qc(1, 1500, effect);
    let plan = power(
        &pilot,
        &taxonomy,
        &settings,
        &PowerSettings {
            simulations: 300,
            bootstrap: 400,
            per_category: Some(planned),
            max_per_category: 2000,
            ..PowerSettings::default()
        },
        &|_, _| {},
    );
    assert_eq!((plan.comparisons, plan.level_comparisons), (1, 1));
    assert_eq!(plan.steps.len(), 2, "{plan:?}");
    let step = &plan.steps[1];
    assert_eq!(
        (step.level, step.against),
        (Granularity::Medium, Some(Granularity::Coarse))
    );
    let predicted = step.power_at_planned.unwrap();
    // The analysis itself on studies of the planned size.
    let studies = 150;
    let taken = (0..studies)
        .filter(|&seed| {
            let study = simulated_qc(1000 + seed, planned, effect);
            let analysis = analyze(
                &study,
                &taxonomy,
                &Settings {
                    seed,
                    ..settings.clone()
                },
            );
            analysis.dimensions[0]
                .recommendation
                .as_ref()
                .unwrap()
                .level
                == Granularity::Medium
        })
        .count();
    let observed = taken as f64 / studies as f64;
    let se = (predicted * (1.0 - predicted) * (1.0 / studies as f64 + 1.0 / 300.0)).sqrt();
    assert!(
        (predicted - observed).abs() < 3.0 * se + 0.03,
        "planned power {predicted:.3}, analysis {observed:.3} (se {se:.3})"
    );
    assert!(
        predicted > 0.1 && predicted < 0.95,
        "{predicted}: pick a size in the middle"
    );
    // The size for 80 % power is above the planned size exactly when the planned size has
    // less than 80 %.
    let needed = step.per_category.unwrap();
    assert_eq!(step.questions, Some(needed * 6));
    assert_eq!(needed > planned, predicted < 0.8, "{step:?}");
    // The smallest gain the planned size detects is a gain.
    let detectable = step.detectable.unwrap();
    assert!(detectable.gain.unwrap() > 1.0);
    // Same seed, same plan.
    let again = power(&pilot, &taxonomy, &settings, &plan.settings, &|_, _| {});
    assert_eq!(again, plan);
}
