//! Designs, layouts, document sampling and plans, on the built-in taxonomy and on DataMorgana
//! configurations.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use hierarag_plan::{
    Design, DesignConfig, DesignKind, DocumentSample, GenerationSettings, Layout, LengthBounds,
    PerLevel, Plan, PlanError, PlanItem, Reservoir, item_seed,
};
use hierarag_taxonomy::{Granularity, Taxonomy};
use proptest::prelude::*;

fn corpus(n: usize) -> Vec<(String, String)> {
    (0..n)
        .map(|i| {
            let words = 5 + (i * 7919) % 300;
            (format!("doc-{i:05}"), "word ".repeat(words))
        })
        .collect()
}

fn sample(
    layout: &Layout,
    docs: &[(String, String)],
    bounds: LengthBounds,
    seed: u64,
) -> DocumentSample {
    let mut reservoir = Reservoir::new(layout.doc_slots(), bounds, seed);
    for (id, text) in docs {
        reservoir.offer(id, text);
    }
    reservoir.finish()
}

fn make_plan(design: &Design, taxonomy: &Taxonomy, docs: &[(String, String)], seed: u64) -> Plan {
    let layout = Layout::new(design, taxonomy, seed);
    let sample = sample(&layout, docs, LengthBounds::default(), seed);
    layout.assign(sample).expect("plan")
}

fn jsonl(plan: &Plan) -> Vec<u8> {
    let mut bytes = Vec::new();
    plan.write_jsonl(&mut bytes).unwrap();
    bytes
}

/// Items per (set, category names joined).
fn counts(plan: &Plan) -> BTreeMap<(String, String), usize> {
    let mut counts = BTreeMap::new();
    for item in &plan.items {
        let cell: Vec<&str> = item
            .categories
            .iter()
            .map(|c| c.category.as_str())
            .collect();
        *counts
            .entry((item.set.clone(), cell.join("+")))
            .or_insert(0) += 1;
    }
    counts
}

fn assert_balanced(plan: &Plan) {
    let mut per_set: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for ((set, _), n) in counts(plan) {
        per_set.entry(set).or_default().push(n);
    }
    for (set, ns) in per_set {
        let (min, max) = (ns.iter().min().unwrap(), ns.iter().max().unwrap());
        assert!(max - min <= 1, "set {set} unbalanced: {ns:?}");
    }
}

#[test]
fn rq1_has_one_set_per_dimension_at_the_coarse_level() {
    let taxonomy = Taxonomy::default_taxonomy();
    let design = Design::rq1(&taxonomy, 400, &[]).unwrap();
    let plan = make_plan(&design, &taxonomy, &corpus(5000), 7);
    assert_eq!(plan.items.len(), 1600);
    let sets: BTreeSet<&str> = plan.items.iter().map(|i| i.set.as_str()).collect();
    assert_eq!(sets, BTreeSet::from(["at", "lv", "ph", "qc"]));
    for item in &plan.items {
        assert_eq!(item.design, DesignKind::Rq1);
        assert_eq!(item.categories.len(), 1);
        assert_eq!(item.categories[0].level, Granularity::Coarse);
        assert_eq!(item.categories[0].dimension, item.set);
        assert!(
            item.item_id.starts_with(&format!("rq1-{}-", item.set)),
            "{}",
            item.item_id
        );
    }
    for set in ["qc", "at", "lv", "ph"] {
        assert_eq!(plan.items.iter().filter(|i| i.set == set).count(), 400);
    }
    let c = counts(&plan);
    assert_eq!(c[&("qc".into(), "simple".into())], 200);
    assert_eq!(c[&("ph".into(), "short_search_query".into())], 100);
    // Distinct documents when the corpus is large enough.
    let ids: BTreeSet<&str> = plan.items.iter().map(|i| i.doc_ids[0].as_str()).collect();
    assert_eq!(ids.len(), 1600);
    assert!(!plan.reused_documents);
}

#[test]
fn rq2_has_nine_separate_sets_one_per_dimension_and_level() {
    let taxonomy = Taxonomy::default_taxonomy();
    let design = Design::rq2(&taxonomy, PerLevel::PAPER, &[]).unwrap();
    let plan = make_plan(&design, &taxonomy, &corpus(4000), 1);
    let mut sets: Vec<&str> = Vec::new();
    for item in &plan.items {
        if sets.last() != Some(&item.set.as_str()) {
            sets.push(&item.set);
        }
    }
    assert_eq!(
        sets,
        [
            "qc/coarse",
            "qc/medium",
            "qc/fine",
            "at/coarse",
            "at/medium",
            "at/fine",
            "lv/coarse",
            "lv/medium",
            "lv/fine"
        ]
    );
    assert_eq!(plan.items.len(), 3 * (333 + 333 + 446));
    for item in &plan.items {
        let (dimension, level) = item.set.split_once('/').unwrap();
        assert_eq!(item.categories.len(), 1);
        assert_eq!(item.categories[0].dimension, dimension);
        assert_eq!(item.categories[0].level.as_str(), level);
    }
    let fine: BTreeMap<String, usize> = counts(&plan)
        .into_iter()
        .filter(|((set, _), _)| set == "qc/fine")
        .map(|((_, c), n)| (c, n))
        .collect();
    assert_eq!(fine.len(), 8);
    assert_eq!(fine.values().sum::<usize>(), 446);
    assert_balanced(&plan);
}

#[test]
fn rq3_crosses_lv_and_qc_in_four_cells() {
    let taxonomy = Taxonomy::default_taxonomy();
    let factors = ["lv".to_string(), "qc".to_string()];
    let design = Design::rq3(&taxonomy, 250, &factors).unwrap();
    let plan = make_plan(&design, &taxonomy, &corpus(2000), 3);
    assert_eq!(plan.items.len(), 1000);
    let c = counts(&plan);
    assert_eq!(c.len(), 4);
    for cell in [
        "similar+simple",
        "similar+complex",
        "distant+simple",
        "distant+complex",
    ] {
        assert_eq!(c[&("lv×qc".to_string(), cell.to_string())], 250, "{cell}");
    }
    for item in &plan.items {
        let dims: Vec<&str> = item
            .categories
            .iter()
            .map(|c| c.dimension.as_str())
            .collect();
        assert_eq!(dims, ["lv", "qc"]);
        assert!(item.item_id.starts_with("rq3-"));
    }
}

#[test]
fn rq3_needs_two_known_factors() {
    let taxonomy = Taxonomy::default_taxonomy();
    let one = Design::rq3(&taxonomy, 10, &["qc".into()]).unwrap_err();
    assert!(one.to_string().contains("at least two dimensions"), "{one}");
    let unknown = Design::rq3(&taxonomy, 10, &["lv".into(), "xx".into()]).unwrap_err();
    assert_eq!(
        unknown.to_string(),
        "no dimension `xx`; the taxonomy has: `qc`, `at`, `lv`, `ph`"
    );
    let twice = Design::rq3(&taxonomy, 10, &["lv".into(), "lv".into()]).unwrap_err();
    assert!(twice.to_string().contains("named twice"), "{twice}");
}

#[test]
fn dimensions_can_be_chosen_and_ordered() {
    let taxonomy = Taxonomy::default_taxonomy();
    let design = Design::rq1(&taxonomy, 4, &["lv".into(), "qc".into()]).unwrap();
    let names: Vec<&str> = design.sets.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["lv", "qc"]);
    let rq2 = Design::rq2(&taxonomy, PerLevel::PAPER, &["at".into()]).unwrap();
    assert_eq!(rq2.sets.len(), 3);
    assert!(matches!(
        Design::rq1(&taxonomy, 0, &[]),
        Err(PlanError::Empty)
    ));
}

#[test]
fn same_inputs_and_seed_give_the_same_bytes_and_another_seed_does_not() {
    let taxonomy = Taxonomy::default_taxonomy();
    let design = Design::rq2(&taxonomy, PerLevel::PAPER, &[]).unwrap();
    let docs = corpus(10_000);
    let a = jsonl(&make_plan(&design, &taxonomy, &docs, 42));
    let b = jsonl(&make_plan(&design, &taxonomy, &docs, 42));
    assert_eq!(a, b);
    let c = jsonl(&make_plan(&design, &taxonomy, &docs, 43));
    assert_ne!(a, c);
}

#[test]
fn plan_lines_have_the_documented_fields() {
    let taxonomy = Taxonomy::default_taxonomy();
    let design = Design::rq3(&taxonomy, 2, &["lv".into(), "qc".into()]).unwrap();
    let plan = make_plan(&design, &taxonomy, &corpus(50), 9);
    let text = String::from_utf8(jsonl(&plan)).unwrap();
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let keys: Vec<&str> = first
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "item_id",
            "design",
            "set",
            "doc_ids",
            "categories",
            "persona",
            "seed"
        ]
    );
    assert_eq!(first["item_id"], "rq3-0001");
    assert_eq!(first["design"], "rq3");
    assert_eq!(first["categories"][0]["dimension"], "lv");
    assert_eq!(first["categories"][0]["level"], "coarse");
    assert!(first["persona"]["expertise"].is_string());
    assert_eq!(first["seed"].as_u64().unwrap(), item_seed(9, "rq3-0001"));
    // Lines read back into the same items.
    let back: Vec<PlanItem> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(back, plan.items);
}

#[test]
fn item_seeds_depend_on_the_plan_seed_and_item_id_only() {
    let taxonomy = Taxonomy::default_taxonomy();
    let small = make_plan(
        &Design::rq1(&taxonomy, 10, &[]).unwrap(),
        &taxonomy,
        &corpus(100),
        5,
    );
    let large = make_plan(
        &Design::rq1(&taxonomy, 20, &[]).unwrap(),
        &taxonomy,
        &corpus(100),
        5,
    );
    let seeds: HashMap<&str, u64> = large
        .items
        .iter()
        .map(|i| (i.item_id.as_str(), i.seed))
        .collect();
    for item in &small.items {
        assert_eq!(seeds[item.item_id.as_str()], item.seed, "{}", item.item_id);
    }
    let all: BTreeSet<u64> = large.items.iter().map(|i| i.seed).collect();
    assert_eq!(all.len(), large.items.len(), "item seeds collide");
}

#[test]
fn every_prefix_of_a_set_is_balanced() {
    let taxonomy = Taxonomy::default_taxonomy();
    let design = Design::rq2(&taxonomy, "40".parse().unwrap(), &["qc".into()]).unwrap();
    let plan = make_plan(&design, &taxonomy, &corpus(200), 11);
    let fine: Vec<&PlanItem> = plan.items.iter().filter(|i| i.set == "qc/fine").collect();
    for prefix in 1..=fine.len() {
        let mut n: BTreeMap<&str, usize> = BTreeMap::new();
        for item in &fine[..prefix] {
            *n.entry(&item.categories[0].category).or_insert(0) += 1;
        }
        let max = n.values().max().unwrap();
        let min = if n.len() < 8 {
            0
        } else {
            *n.values().min().unwrap()
        };
        assert!(max - min <= 1, "prefix {prefix}: {n:?}");
    }
}

#[test]
fn per_level_parses_one_number_or_three_levels() {
    let all: PerLevel = "25".parse().unwrap();
    assert_eq!((all.coarse, all.medium, all.fine), (25, 25, 25));
    let each: PerLevel = "coarse=333,medium=333,fine=446".parse().unwrap();
    assert_eq!(each, PerLevel::PAPER);
    assert_eq!(each.to_string(), "coarse=333,medium=333,fine=446");
    let e = "coarse=1,medium=2".parse::<PerLevel>().unwrap_err();
    assert!(e.contains("all three levels"), "{e}");
    let e = "coarse=1,huge=2,fine=3".parse::<PerLevel>().unwrap_err();
    assert!(e.contains("unknown level `huge`"), "{e}");
    let e = "coarse=1,coarse=2,fine=3".parse::<PerLevel>().unwrap_err();
    assert!(e.contains("given twice"), "{e}");
}

#[test]
fn personas_follow_their_probabilities_within_each_cell() {
    let taxonomy = Taxonomy::default_taxonomy();
    let design = Design::rq1(&taxonomy, 401, &["qc".into()]).unwrap();
    let plan = make_plan(&design, &taxonomy, &corpus(1000), 2);
    for category in ["simple", "complex"] {
        let items: Vec<&PlanItem> = plan
            .items
            .iter()
            .filter(|i| i.categories[0].category == category)
            .collect();
        let novices = items
            .iter()
            .filter(|i| i.persona["expertise"] == "novice")
            .count();
        let experts = items.len() - novices;
        assert!(
            novices.abs_diff(experts) <= 1,
            "{category}: {novices} vs {experts}"
        );
    }
}

#[test]
fn unequal_persona_probabilities_are_honoured() {
    let text = Taxonomy::default_taxonomy()
        .to_toml_string()
        .replacen("probability = 0.5", "probability = 0.8", 1)
        .replacen("probability = 0.5", "probability = 0.2", 1);
    let taxonomy = Taxonomy::from_toml_str(&text, "t.toml").unwrap();
    let design = Design::rq1(&taxonomy, 100, &["qc".into()]).unwrap();
    let plan = make_plan(&design, &taxonomy, &corpus(500), 4);
    let counts = plan.persona_counts();
    assert_eq!(counts[&("expertise".to_string(), "novice".to_string())], 80);
    assert_eq!(counts[&("expertise".to_string(), "expert".to_string())], 20);
}

#[test]
fn reservoir_samples_each_document_with_equal_probability() {
    // 20 documents, 5 drawn, 4000 seeds: each document should be drawn ~1000 times.
    let docs = corpus(20);
    let mut hits: HashMap<String, u32> = HashMap::new();
    for seed in 0..4000 {
        let mut reservoir = Reservoir::new(5, LengthBounds::default(), seed);
        for (id, text) in &docs {
            reservoir.offer(id, text);
        }
        let sample = reservoir.finish();
        assert_eq!(sample.docs.len(), 5);
        let distinct: BTreeSet<&str> = sample.docs.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(distinct.len(), 5);
        for doc in sample.docs {
            *hits.entry(doc.id).or_insert(0) += 1;
        }
    }
    // Binomial(4000, 0.25): sd ≈ 27; allow 5 sd.
    for (id, n) in &hits {
        assert!((865..=1135).contains(n), "{id} drawn {n} times");
    }
    assert_eq!(hits.len(), 20);
    // The order of the sample is random too: the first position is not always the first doc.
    let firsts: BTreeSet<String> = (0..50)
        .map(|seed| {
            let mut r = Reservoir::new(20, LengthBounds::default(), seed);
            for (id, text) in &docs {
                r.offer(id, text);
            }
            r.finish().docs[0].id.clone()
        })
        .collect();
    assert!(firsts.len() > 5, "{firsts:?}");
}

#[test]
fn length_bounds_exclude_documents_and_are_counted() {
    let docs = vec![
        ("short".to_string(), "one two".to_string()),
        ("fits".to_string(), "a b c d e".to_string()),
        ("long".to_string(), "x ".repeat(50)),
        ("fits-too".to_string(), "p\tq\nr  s".to_string()),
    ];
    let bounds = LengthBounds {
        min_words: Some(3),
        max_words: Some(10),
    };
    let mut reservoir = Reservoir::new(10, bounds, 1);
    for (id, text) in &docs {
        reservoir.offer(id, text);
    }
    let sample = reservoir.finish();
    let ids: BTreeSet<&str> = sample.docs.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, BTreeSet::from(["fits", "fits-too"]));
    assert_eq!(
        (
            sample.read,
            sample.eligible,
            sample.too_short,
            sample.too_long
        ),
        (4, 2, 1, 1)
    );
    let words: BTreeMap<&str, usize> = sample
        .docs
        .iter()
        .map(|d| (d.id.as_str(), d.words))
        .collect();
    assert_eq!(words["fits"], 5);
    assert_eq!(words["fits-too"], 4);
}

#[test]
fn no_usable_document_is_an_error_with_the_counts() {
    let taxonomy = Taxonomy::default_taxonomy();
    let design = Design::rq1(&taxonomy, 2, &["qc".into()]).unwrap();
    let layout = Layout::new(&design, &taxonomy, 1);
    let bounds = LengthBounds {
        min_words: Some(1000),
        max_words: None,
    };
    let sample = sample(&layout, &corpus(30), bounds, 1);
    let error = layout.assign(sample).unwrap_err();
    assert_eq!(
        error.to_string(),
        "no document of the corpus can be used: 30 read, 30 shorter than 1000 words"
    );
}

#[test]
fn a_small_corpus_is_reused_evenly() {
    let taxonomy = Taxonomy::default_taxonomy();
    let design = Design::rq1(&taxonomy, 25, &[]).unwrap(); // 100 items
    let plan = make_plan(&design, &taxonomy, &corpus(30), 8);
    assert!(plan.reused_documents);
    assert_eq!(plan.distinct_documents, 30);
    let mut uses: HashMap<&str, usize> = HashMap::new();
    for item in &plan.items {
        *uses.entry(&item.doc_ids[0]).or_insert(0) += 1;
    }
    assert_eq!(uses.len(), 30);
    assert!(uses.values().all(|&n| n == 3 || n == 4), "{uses:?}");
}

const DATAMORGANA: &str = r#"{
  "question_categorizations": [
    {"categorization_name": "factoid",
     "categories": [
        {"name": "factoid", "description": "A question asking for one fact.", "probability": 0.5},
        {"name": "comparison", "description": "A question comparing two documents.", "probability": 0.5, "is_multi_doc": true}
     ]}
  ],
  "user_categorizations": [
    {"categorization_name": "expertise",
     "categories": [
        {"name": "expert", "description": "An expert.", "probability": 0.5},
        {"name": "novice", "description": "A novice.", "probability": 0.5}
     ]}
  ]
}"#;

#[test]
fn multi_document_categories_get_two_different_documents() {
    let taxonomy = Taxonomy::from_datamorgana_json(DATAMORGANA, "dm.json").unwrap();
    let design = Design::rq1(&taxonomy, 40, &[]).unwrap();
    let layout = Layout::new(&design, &taxonomy, 3);
    assert_eq!(layout.doc_slots(), 60); // 20 single + 20 × 2
    for n in [200, 7, 2] {
        let docs = corpus(n);
        let plan = layout
            .clone()
            .assign(sample(&layout, &docs, LengthBounds::default(), 3))
            .unwrap();
        for item in &plan.items {
            let multi = item.categories[0].category == "comparison";
            assert_eq!(item.doc_ids.len(), if multi { 2 } else { 1 }, "{item:?}");
            if multi {
                assert_ne!(item.doc_ids[0], item.doc_ids[1], "corpus of {n}: {item:?}");
            }
        }
        if n == 200 {
            let all: BTreeSet<&String> = plan.items.iter().flat_map(|i| &i.doc_ids).collect();
            assert_eq!(all.len(), 60);
        }
    }
    let error = layout
        .clone()
        .assign(sample(&layout, &corpus(1), LengthBounds::default(), 3))
        .unwrap_err();
    assert!(error.to_string().contains("comparison"), "{error}");
}

const CUSTOM: &str = r#"
[corpus]
inputs = ["ignored.jsonl"]

[design]
kind = "custom"

[[design.cell]]
categories = { qc = "multi_hop_reasoning", lv = "distant" }
count = 3

[[design.cell]]
categories = { at = "extractive" }
persona = "novice"
count = 2
"#;

#[test]
fn custom_cells_come_from_the_design_table_of_a_run_config() {
    let taxonomy = Taxonomy::default_taxonomy();
    let config = DesignConfig::from_toml_str(CUSTOM, "run.toml")
        .unwrap()
        .unwrap();
    assert_eq!(config.kind, Some(DesignKind::Custom));
    let design = Design::custom(&taxonomy, &config.cells, "run.toml").unwrap();
    let plan = make_plan(&design, &taxonomy, &corpus(100), 1);
    assert_eq!(plan.items.len(), 5);
    let first = &plan.items[0];
    assert_eq!(first.item_id, "custom-0001");
    // Categories in taxonomy order (qc before lv), whatever the order in the file.
    let cats: Vec<(&str, Granularity, &str)> = first
        .categories
        .iter()
        .map(|c| (c.dimension.as_str(), c.level, c.category.as_str()))
        .collect();
    assert_eq!(
        cats,
        [
            ("qc", Granularity::Fine, "multi_hop_reasoning"),
            ("lv", Granularity::Coarse, "distant")
        ]
    );
    let extractive: Vec<&PlanItem> = plan
        .items
        .iter()
        .filter(|i| i.categories[0].dimension == "at")
        .collect();
    assert_eq!(extractive.len(), 2);
    assert!(
        extractive
            .iter()
            .all(|i| i.persona["expertise"] == "novice")
    );
}

fn custom_error(cells: &str) -> String {
    let text = format!("[design]\nkind = \"custom\"\n{cells}");
    let taxonomy = Taxonomy::default_taxonomy();
    match DesignConfig::from_toml_str(&text, "run.toml") {
        Err(e) => e.to_string(),
        Ok(config) => Design::custom(&taxonomy, &config.unwrap().cells, "run.toml")
            .unwrap_err()
            .to_string(),
    }
}

#[test]
fn unknown_category_lists_the_valid_ones_by_level() {
    let message = custom_error("[[design.cell]]\ncategories = { qc = \"simpel\" }\ncount = 1\n");
    assert_eq!(
        message,
        "run.toml: [[design.cell]] #1 (line 3): dimension `qc` has no category `simpel`; valid: coarse: `simple`, `complex`; \
medium: `single_fact`, `multi_fact`, `cross_section`, `comparative`; fine: `extractive_span`, `entity_extraction`, \
`fact_aggregation`, `single_hop_inference`, `multi_hop_reasoning`, `causal_reasoning`, \
`comparative_synthesis_entities`, `comparative_synthesis_concepts`"
    );
}

#[test]
fn unknown_dimension_persona_and_bad_cells_are_rejected() {
    let cell2 = "[[design.cell]]\ncategories = { qc = \"simple\" }\ncount = 1\n[[design.cell]]\n";
    assert_eq!(
        custom_error(&format!(
            "{cell2}categories = {{ xx = \"simple\" }}\ncount = 1\n"
        )),
        "run.toml: [[design.cell]] #2 (line 6): no dimension `xx`; the taxonomy has: `qc`, `at`, `lv`, `ph`"
    );
    assert_eq!(
        custom_error(&format!(
            "{cell2}categories = {{ qc = \"complex\" }}\npersona = \"guru\"\ncount = 1\n"
        )),
        "run.toml: [[design.cell]] #2 (line 6): no persona `guru`; the taxonomy has: `novice`, `expert`"
    );
    assert_eq!(
        custom_error(&format!(
            "{cell2}categories = {{ qc = \"simple\" }}\ncount = 4\n"
        )),
        "run.toml: [[design.cell]] #2 repeats cell #1 (qc=simple); merge their counts"
    );
    assert_eq!(
        custom_error(&format!("{cell2}categories = {{}}\ncount = 4\n")),
        "run.toml: [[design.cell]] #2 (line 6): `categories` is empty; give at least one, e.g. { qc = \"simple\" }"
    );
    assert_eq!(
        custom_error(&format!("{cell2}categories = {{ qc = 3 }}\ncount = 4\n")),
        "run.toml: [[design.cell]] #2 (line 6): categories.qc must be a category name in quotes, found 3"
    );
    assert_eq!(
        custom_error(""),
        "run.toml: a custom design needs at least one [[design.cell]] with `categories` and `count`"
    );
    // Serde's own errors carry the line.
    let typo = custom_error("[[design.cell]]\ncategories = { qc = \"simple\" }\ncuont = 1\n");
    assert!(
        typo.starts_with("run.toml: TOML parse error at line 5"),
        "{typo}"
    );
    assert!(typo.contains("unknown field `cuont`"), "{typo}");
}

#[test]
fn estimate_counts_one_generation_and_one_filter_call_per_item() {
    let taxonomy = Taxonomy::default_taxonomy();
    let design = Design::rq1(&taxonomy, 10, &[]).unwrap();
    let plan = make_plan(&design, &taxonomy, &corpus(100), 1);
    let with = plan
        .estimate(&taxonomy, GenerationSettings::default())
        .unwrap();
    assert_eq!(
        (with.generation_calls, with.filter_calls, with.calls()),
        (40, 40, 80)
    );
    let without = plan
        .estimate(
            &taxonomy,
            GenerationSettings {
                candidates: 3,
                filter: false,
            },
        )
        .unwrap();
    assert_eq!(without.filter_calls, 0);
    assert!(without.input_tokens < with.input_tokens);
    // Longer documents cost more input tokens.
    let long: Vec<(String, String)> = corpus(100)
        .into_iter()
        .map(|(id, t)| (id, t.repeat(3)))
        .collect();
    let long_plan = make_plan(&design, &taxonomy, &long, 1);
    assert!(
        long_plan
            .estimate(&taxonomy, GenerationSettings::default())
            .unwrap()
            .input_tokens
            > with.input_tokens
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn balanced_within_one_for_any_count_and_seed(n in 1usize..300, seed in any::<u64>(), docs in 1usize..400) {
        let taxonomy = Taxonomy::default_taxonomy();
        let design = Design::rq2(&taxonomy, PerLevel { coarse: n, medium: n, fine: n }, &[]).unwrap();
        let plan = make_plan(&design, &taxonomy, &corpus(docs), seed);
        prop_assert_eq!(plan.items.len(), 9 * n);
        assert_balanced(&plan);
        let ids: BTreeSet<&str> = plan.items.iter().map(|i| i.item_id.as_str()).collect();
        prop_assert_eq!(ids.len(), plan.items.len());
        // No document is reused unless the corpus is smaller than the plan.
        let distinct: BTreeSet<&str> = plan.items.iter().map(|i| i.doc_ids[0].as_str()).collect();
        prop_assert_eq!(distinct.len(), docs.min(9 * n));
    }
}

/// A Parquet corpus is offered by id (and length when it was read) with where each row is; the
/// sample must be the one the texts give, carry the tags, and say whether lengths are known.
#[test]
fn documents_offered_by_id_and_length_are_sampled_as_documents_offered_with_text() {
    let docs = corpus(500);
    for bounds in [
        LengthBounds::default(),
        LengthBounds {
            min_words: Some(50),
            max_words: Some(200),
        },
    ] {
        let mut by_text = Reservoir::new(40, bounds, 9);
        let mut by_id = Reservoir::new(40, bounds, 9);
        for (row, (id, text)) in docs.iter().enumerate() {
            by_text.offer(id, text);
            let words = (!bounds.is_unbounded()).then(|| text.split_whitespace().count());
            by_id.offer_counted(id, words, 1000 + row as u64);
        }
        let (by_text, by_id) = (by_text.finish(), by_id.finish());
        assert!(by_text.lengths_known);
        assert_eq!(by_id.lengths_known, !bounds.is_unbounded());
        assert_eq!(
            (
                by_text.read,
                by_text.eligible,
                by_text.too_short,
                by_text.too_long
            ),
            (by_id.read, by_id.eligible, by_id.too_short, by_id.too_long)
        );
        for (text_doc, id_doc) in by_text.docs.iter().zip(&by_id.docs) {
            assert_eq!(text_doc.id, id_doc.id);
            let row: usize = text_doc.id["doc-".len()..].parse().unwrap();
            assert_eq!(id_doc.tag, 1000 + row as u64);
            let words = docs[row].1.split_whitespace().count();
            assert_eq!(text_doc.words, words);
            assert_eq!(id_doc.words, if bounds.is_unbounded() { 0 } else { words });
        }
    }
}

#[test]
#[should_panic(expected = "without its length to a reservoir with length bounds")]
fn a_bounded_reservoir_refuses_a_document_without_its_length() {
    let bounds = LengthBounds {
        min_words: Some(1),
        max_words: None,
    };
    Reservoir::new(3, bounds, 1).offer_counted("d", None, 0);
}
