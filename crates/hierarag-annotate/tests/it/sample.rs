//! Stratified sampling: proportions, at least one per stratum, the category subset, and
//! determinism (same seed → same store content).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use hierarag_annotate::{Question, SampleError, SampleOptions, Store, sample};
use hierarag_records::CategoryRef;
use hierarag_taxonomy::{Granularity, Taxonomy};

const FINE: [&str; 8] = [
    "extractive_span",
    "entity_extraction",
    "fact_aggregation",
    "single_hop_inference",
    "multi_hop_reasoning",
    "causal_reasoning",
    "comparative_synthesis_entities",
    "comparative_synthesis_concepts",
];

fn category(dimension: &str, level: Granularity, name: &str) -> CategoryRef {
    CategoryRef {
        dimension: dimension.into(),
        level,
        category: name.into(),
    }
}

fn question(id: String, categories: Vec<CategoryRef>) -> Question {
    Question {
        set: format!("{}/{}", categories[0].dimension, categories[0].level),
        doc_ids: vec![format!("doc-{id}")],
        question: format!("Question {id}?"),
        reference: format!("Answer {id}."),
        id,
        categories,
    }
}

/// 60 qc/coarse, 30 qc/medium, 9 qc/fine and 1 at/coarse questions.
fn benchmark() -> Vec<Question> {
    let mut questions = Vec::new();
    for i in 0..60 {
        let name = ["simple", "complex"][i % 2];
        questions.push(question(
            format!("c{i:02}"),
            vec![category("qc", Granularity::Coarse, name)],
        ));
    }
    let medium = ["single_fact", "multi_fact", "cross_section", "comparative"];
    for i in 0..30 {
        questions.push(question(
            format!("m{i:02}"),
            vec![category("qc", Granularity::Medium, medium[i % 4])],
        ));
    }
    for i in 0..9 {
        questions.push(question(
            format!("f{i:02}"),
            vec![category("qc", Granularity::Fine, FINE[i % 8])],
        ));
    }
    questions.push(question(
        "a00".into(),
        vec![category("at", Granularity::Coarse, "extractive")],
    ));
    questions
}

fn strata_of(items: &[hierarag_annotate::Item]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for item in items {
        *counts
            .entry(format!("{}/{}", item.dimension, item.level))
            .or_default() += 1;
    }
    counts
}

#[test]
fn allocation_is_proportional_with_one_per_stratum() {
    let taxonomy = Taxonomy::default_taxonomy();
    let options = SampleOptions {
        n: 20,
        category_subset: 10,
        seed: 1,
    };
    let drawn = sample(&benchmark(), &taxonomy, &options).unwrap();
    assert_eq!(drawn.items.len(), 20);
    // Quotas 12, 6, 1.8, 0.2 of 100 → largest remainder 12, 6, 2, 0; at/coarse then takes one
    // from qc/fine, the stratum furthest above its quota.
    let counts: Vec<(String, usize, usize)> = drawn
        .strata
        .iter()
        .map(|s| (s.label(), s.benchmark, s.sampled))
        .collect();
    assert_eq!(
        counts,
        [
            ("at/coarse".to_string(), 1, 1),
            ("qc/coarse".to_string(), 60, 12),
            ("qc/medium".to_string(), 30, 6),
            ("qc/fine".to_string(), 9, 1),
        ]
    );
    let by_items = strata_of(&drawn.items);
    for stratum in &drawn.strata {
        assert_eq!(by_items[&stratum.label()], stratum.sampled);
    }
    // Positions are 0..n, each once.
    let positions: BTreeSet<u32> = drawn.items.iter().map(|i| i.position).collect();
    assert_eq!(positions, (0..20).collect());
    // No item twice.
    let ids: BTreeSet<&str> = drawn.items.iter().map(|i| i.item_id.as_str()).collect();
    assert_eq!(ids.len(), 20);
    assert!(drawn.notes.is_empty(), "{:?}", drawn.notes);
}

#[test]
fn the_category_subset_has_its_size_and_full_shuffled_choices() {
    let taxonomy = Taxonomy::default_taxonomy();
    let options = SampleOptions {
        n: 40,
        category_subset: 15,
        seed: 5,
    };
    let drawn = sample(&benchmark(), &taxonomy, &options).unwrap();
    assert_eq!(drawn.n_category_task(), 15);
    let per_stratum: usize = drawn.strata.iter().map(|s| s.category_task).sum();
    assert_eq!(per_stratum, 15);
    let mut orders = BTreeSet::new();
    for item in &drawn.items {
        if !item.category_task {
            assert!(item.choices.is_empty());
            continue;
        }
        let level = taxonomy
            .dimension(&item.dimension)
            .unwrap()
            .level(item.level)
            .unwrap();
        let expected: BTreeSet<&str> = level.categories.iter().map(|c| c.name.as_str()).collect();
        let got: BTreeSet<&str> = item.choices.iter().map(String::as_str).collect();
        assert_eq!(got, expected, "{}", item.item_id);
        assert!(got.contains(item.category.as_str()));
        if item.level == Granularity::Fine {
            orders.insert(item.choices.clone());
        }
    }
    // Fine items get their own shuffles of the eight categories.
    assert!(orders.len() > 1 || drawn.strata[3].category_task <= 1);
    // Parents come from the taxonomy.
    let medium = drawn
        .items
        .iter()
        .find(|i| i.level == Granularity::Medium)
        .unwrap();
    let expected_parent = taxonomy
        .parent_of("qc", &medium.category)
        .map(|(_, p)| p.name.clone());
    assert_eq!(medium.parent, expected_parent);
    assert!(
        drawn
            .items
            .iter()
            .filter(|i| i.level == Granularity::Coarse)
            .all(|i| i.parent.is_none())
    );
}

#[test]
fn asking_for_more_than_there_is_takes_everything_with_a_note() {
    let taxonomy = Taxonomy::default_taxonomy();
    let options = SampleOptions {
        n: 500,
        category_subset: 500,
        seed: 5,
    };
    let drawn = sample(&benchmark(), &taxonomy, &options).unwrap();
    assert_eq!(drawn.items.len(), 100);
    assert_eq!(drawn.n_category_task(), 100);
    assert_eq!(drawn.notes.len(), 2, "{:?}", drawn.notes);
}

#[test]
fn factorial_questions_count_under_their_first_category() {
    let taxonomy = Taxonomy::default_taxonomy();
    let questions = vec![
        question(
            "x1".into(),
            vec![
                category("lv", Granularity::Coarse, "distant"),
                category("qc", Granularity::Coarse, "simple"),
            ],
        ),
        question(
            "x2".into(),
            vec![
                category("lv", Granularity::Coarse, "similar"),
                category("qc", Granularity::Coarse, "complex"),
            ],
        ),
    ];
    let options = SampleOptions {
        n: 2,
        category_subset: 2,
        seed: 0,
    };
    let drawn = sample(&questions, &taxonomy, &options).unwrap();
    assert_eq!(drawn.strata.len(), 1);
    assert_eq!(drawn.strata[0].label(), "lv/coarse");
    assert!(drawn.items.iter().all(|i| i.dimension == "lv"));
}

#[test]
fn categories_unknown_to_the_taxonomy_get_no_category_task() {
    let taxonomy = Taxonomy::default_taxonomy();
    let questions = vec![
        question(
            "u1".into(),
            vec![category("qc", Granularity::Coarse, "mystery")],
        ),
        question(
            "u2".into(),
            vec![category("qc", Granularity::Coarse, "simple")],
        ),
    ];
    let options = SampleOptions {
        n: 2,
        category_subset: 2,
        seed: 0,
    };
    let drawn = sample(&questions, &taxonomy, &options).unwrap();
    assert_eq!(drawn.n_category_task(), 1);
    assert!(drawn.notes.iter().any(|n| n.contains("qc/coarse/mystery")));
}

#[test]
fn bad_benchmarks_are_errors() {
    let taxonomy = Taxonomy::default_taxonomy();
    let options = SampleOptions {
        n: 2,
        category_subset: 0,
        seed: 0,
    };
    assert_eq!(sample(&[], &taxonomy, &options), Err(SampleError::Empty));
    let q = question(
        "d".into(),
        vec![category("qc", Granularity::Coarse, "simple")],
    );
    assert_eq!(
        sample(&[q.clone(), q.clone()], &taxonomy, &options),
        Err(SampleError::DuplicateId { id: "d".into() })
    );
    let mut none = q.clone();
    none.categories.clear();
    assert_eq!(
        sample(&[none], &taxonomy, &options),
        Err(SampleError::NoCategory { id: "d".into() })
    );
    let zero = SampleOptions { n: 0, ..options };
    assert_eq!(
        sample(&[q], &taxonomy, &zero),
        Err(SampleError::NothingToSample)
    );
}

#[test]
fn same_seed_same_store_content_and_file_order_does_not_matter() {
    let taxonomy = Taxonomy::default_taxonomy();
    let options = SampleOptions {
        n: 25,
        category_subset: 10,
        seed: 99,
    };
    let texts: HashMap<String, String> = benchmark()
        .iter()
        .map(|q| (format!("doc-{}", q.id), format!("text of {}", q.id)))
        .collect();
    let mut reversed = benchmark();
    reversed.reverse();
    let dir = tempfile::tempdir().unwrap();
    let mut contents = Vec::new();
    for (n, questions) in [benchmark(), reversed].iter().enumerate() {
        let mut drawn = sample(questions, &taxonomy, &options).unwrap();
        assert!(drawn.fill_documents(&texts).is_empty());
        let path = dir.path().join(format!("s{n}.sqlite"));
        let store = Store::create(&path, &drawn.items, &drawn.meta()).unwrap();
        contents.push((store.items().unwrap(), store.meta().unwrap()));
    }
    assert_eq!(contents[0], contents[1]);
    assert!(
        contents[0]
            .0
            .iter()
            .all(|i| i.documents[0].1 == format!("text of {}", i.item_id))
    );
    // Another seed draws another sample.
    let other = sample(
        &benchmark(),
        &taxonomy,
        &SampleOptions {
            seed: 100,
            ..options
        },
    )
    .unwrap();
    assert_ne!(other.items, contents[0].0);
}

#[test]
fn missing_documents_are_reported() {
    let taxonomy = Taxonomy::default_taxonomy();
    let options = SampleOptions {
        n: 3,
        category_subset: 0,
        seed: 1,
    };
    let mut drawn = sample(&benchmark(), &taxonomy, &options).unwrap();
    let missing = drawn.fill_documents(&HashMap::new());
    assert_eq!(missing.len(), 3);
    assert_eq!(drawn.doc_ids().len(), 3);
}
