//! Tests of the taxonomy model, TOML format, validation messages and the default taxonomy.

use hierarag_taxonomy::{
    Category, DEFAULT_TAXONOMY_TOML, Dimension, Granularity, Level, Taxonomy, TaxonomyError,
};

const FILE: &str = "bad.toml";

/// A small valid taxonomy; tests break it one way at a time.
const VALID: &str = r#"
[[dimension]]
key = "qc"
name = "Question Complexity"

[[dimension.coarse]]
name = "simple"
description = "One stated fact."

[[dimension.coarse]]
name = "complex"
description = "Several facts combined."

[[dimension.medium]]
name = "single_fact"
parent = "simple"
description = "Exactly one fact."

[[dimension.medium]]
name = "comparative"
parent = "complex"
description = "Compares two things."

[[user_categorization]]
name = "expertise"

[[user_categorization.persona]]
name = "novice"
probability = 0.5
description = "New to the topic."

[[user_categorization.persona]]
name = "expert"
probability = 0.5
description = "A specialist."
"#;

/// The error messages for `text`, one per line; panics when it is valid.
fn errors(text: &str) -> Vec<String> {
    Taxonomy::from_toml_str(text, FILE)
        .expect_err("taxonomy should be rejected")
        .0
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn assert_single_error(text: &str, expected: &str) {
    assert_eq!(errors(text), vec![expected.to_string()]);
}

#[test]
fn valid_fixture_parses() {
    let taxonomy = Taxonomy::from_toml_str(VALID, FILE).unwrap();
    assert_eq!(taxonomy.n_categories(), 4);
    assert_eq!(taxonomy.personas().count(), 2);
}

#[test]
fn default_taxonomy_validates_with_paper_shape() {
    let taxonomy = Taxonomy::default_taxonomy();
    assert_eq!(taxonomy.n_categories(), 3 * (2 + 4 + 8) + 4);
    for key in ["qc", "at", "lv"] {
        let dimension = taxonomy.dimension(key).unwrap();
        let sizes: Vec<usize> = dimension
            .levels
            .iter()
            .map(|level| level.categories.len())
            .collect();
        assert_eq!(sizes, [2, 4, 8], "{key}");
        let splits = taxonomy.splits(key);
        assert_eq!(splits.len(), 6, "{key}");
        assert!(splits.iter().all(|split| split.children.len() == 2));
    }
    let phrasing = taxonomy.dimension("ph").unwrap();
    assert_eq!(phrasing.levels.len(), 1);
    assert_eq!(
        phrasing.levels[0]
            .categories
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>(),
        [
            "concise_natural",
            "verbose_natural",
            "short_search_query",
            "long_search_query"
        ]
    );
    assert!(taxonomy.splits("ph").is_empty());
    let personas: Vec<(&str, f64)> = taxonomy
        .personas()
        .map(|p| (p.name.as_str(), p.probability))
        .collect();
    assert_eq!(personas, [("novice", 0.5), ("expert", 0.5)]);
}

#[test]
fn default_taxonomy_has_paper_names() {
    let taxonomy = Taxonomy::default_taxonomy();
    let expected = [
        ("qc", "simple", &["single_fact", "multi_fact"][..]),
        ("qc", "complex", &["cross_section", "comparative"]),
        (
            "qc",
            "single_fact",
            &["extractive_span", "entity_extraction"],
        ),
        (
            "qc",
            "multi_fact",
            &["fact_aggregation", "single_hop_inference"],
        ),
        (
            "qc",
            "cross_section",
            &["multi_hop_reasoning", "causal_reasoning"],
        ),
        (
            "qc",
            "comparative",
            &[
                "comparative_synthesis_entities",
                "comparative_synthesis_concepts",
            ],
        ),
        ("at", "extractive", &["short_answer", "list_or_sequence"]),
        (
            "at",
            "abstractive",
            &["summary_or_explanation", "reasoned_response"],
        ),
        (
            "at",
            "short_answer",
            &["phrase_extraction", "numeric_or_date"],
        ),
        (
            "at",
            "list_or_sequence",
            &["unordered_list", "ordered_sequence"],
        ),
        (
            "at",
            "summary_or_explanation",
            &["condensed_summary", "sentence_extraction"],
        ),
        (
            "at",
            "reasoned_response",
            &["explanatory_synthesis", "yes_no_with_justification"],
        ),
        ("lv", "similar", &["verbatim_terms", "light_paraphrase"]),
        (
            "lv",
            "distant",
            &["lexical_paraphrase", "conceptual_rephrase"],
        ),
        (
            "lv",
            "verbatim_terms",
            &["exact_phrase_match", "keyword_subset"],
        ),
        (
            "lv",
            "light_paraphrase",
            &["morphological_variant", "word_order_change"],
        ),
        (
            "lv",
            "lexical_paraphrase",
            &["synonym_based_rephrase", "low_lexical_overlap"],
        ),
        (
            "lv",
            "conceptual_rephrase",
            &["domain_shift_terminology", "abstraction_level_shift"],
        ),
    ];
    for (dimension, parent, children) in expected {
        let names: Vec<&str> = taxonomy
            .children(dimension, parent)
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(names, children, "{dimension}/{parent}");
    }
}

#[test]
fn default_descriptions_are_distinct_from_parents_and_siblings() {
    let taxonomy = Taxonomy::default_taxonomy();
    let mut seen = std::collections::HashSet::new();
    for dimension in &taxonomy.dimensions {
        for level in &dimension.levels {
            for category in &level.categories {
                assert!(
                    seen.insert(category.description.clone()),
                    "{} repeats a description",
                    category.name
                );
            }
        }
    }
}

#[test]
fn default_toml_text_is_the_default_taxonomy() {
    let parsed = Taxonomy::from_toml_str(DEFAULT_TAXONOMY_TOML, "default.toml").unwrap();
    assert_eq!(parsed, Taxonomy::default_taxonomy());
}

#[test]
fn lookups_find_levels_parents_and_children() {
    let taxonomy = Taxonomy::default_taxonomy();
    let (level, category) = taxonomy.category("qc", "causal_reasoning").unwrap();
    assert_eq!(level, Granularity::Fine);
    assert_eq!(category.parent.as_deref(), Some("cross_section"));
    let (parent_level, parent) = taxonomy.parent_of("qc", "causal_reasoning").unwrap();
    assert_eq!(
        (parent_level, parent.name.as_str()),
        (Granularity::Medium, "cross_section")
    );
    assert!(taxonomy.parent_of("qc", "simple").is_none());
    assert!(taxonomy.category("qc", "nonexistent").is_none());
    assert!(taxonomy.category("zz", "simple").is_none());
    assert!(taxonomy.children("qc", "extractive_span").is_empty());
    assert!(taxonomy.children("qc", "nonexistent").is_empty());
    let first = &taxonomy.splits("qc")[0];
    assert_eq!(first.parent_level, Granularity::Coarse);
    assert_eq!(first.parent.name, "simple");
}

#[test]
fn toml_round_trip_default() {
    let taxonomy = Taxonomy::default_taxonomy();
    let text = taxonomy.to_toml_string();
    let again = Taxonomy::from_toml_str(&text, "written.toml").unwrap();
    assert_eq!(again, taxonomy);
}

#[test]
fn toml_round_trip_keeps_multi_doc_and_probability() {
    let mut taxonomy = Taxonomy::from_toml_str(VALID, FILE).unwrap();
    let category = &mut taxonomy.dimensions[0].levels[0].categories[1];
    category.is_multi_doc = true;
    category.probability = Some(0.25);
    let again = Taxonomy::from_toml_str(&taxonomy.to_toml_string(), FILE).unwrap();
    assert_eq!(again, taxonomy);
}

#[test]
fn programmatic_taxonomy_validates() {
    let taxonomy = Taxonomy {
        dimensions: vec![Dimension {
            key: "ph".into(),
            name: "Phrasing".into(),
            levels: vec![Level {
                granularity: Granularity::Coarse,
                categories: vec![Category::new("concise_natural", "Short.")],
            }],
        }],
        user_categorizations: vec![],
    };
    taxonomy.validate("memory").unwrap();
    let broken = Taxonomy {
        dimensions: vec![Dimension {
            key: "ph".into(),
            name: "Phrasing".into(),
            levels: vec![Level {
                granularity: Granularity::Coarse,
                categories: vec![Category::new("concise", "Short.").with_parent("x")],
            }],
        }],
        user_categorizations: vec![],
    };
    assert!(broken.validate("memory").is_err());
}

#[test]
fn unknown_parent_is_rejected() {
    let text = VALID.replace("parent = \"complex\"", "parent = \"compelx\"");
    // The coarse `complex` then has no child either.
    assert_eq!(
        errors(&text),
        [
            "bad.toml: dimension `qc`: medium category `comparative` has unknown parent `compelx`",
            "bad.toml: dimension `qc`: the medium level does not subdivide coarse category `complex`: it has no children",
        ]
    );
}

#[test]
fn parent_on_wrong_level_is_rejected() {
    let text = format!(
        "{VALID}\n[[dimension.fine]]\nname = \"one_span\"\nparent = \"simple\"\ndescription = \"A span.\"\n\
         [[dimension.fine]]\nname = \"two_entities\"\nparent = \"comparative\"\ndescription = \"Two.\"\n"
    );
    // Fine tables after [[user_categorization]] would attach elsewhere; put them before it.
    let text = reorder_fine_before_users(&text);
    assert_eq!(
        errors(&text),
        [
            "bad.toml: dimension `qc`: fine category `one_span` has parent `simple` on the coarse level; it must be on the medium level",
            "bad.toml: dimension `qc`: the fine level does not subdivide medium category `single_fact`: it has no children",
        ]
    );
}

/// Moves everything from the first `[[dimension.fine]]` to the end up before the users.
fn reorder_fine_before_users(text: &str) -> String {
    let fine_start = text.find("[[dimension.fine]]").unwrap();
    let users_start = text.find("[[user_categorization]]").unwrap();
    format!(
        "{}{}\n{}",
        &text[..users_start],
        &text[fine_start..],
        &text[users_start..fine_start]
    )
}

#[test]
fn duplicate_category_across_levels_is_rejected() {
    let text = VALID.replace("name = \"comparative\"", "name = \"complex\"");
    let messages = errors(&text);
    assert!(
        messages.contains(
            &"bad.toml: dimension `qc`: category `complex` is defined more than once (on the coarse and medium levels)"
                .to_string()
        ),
        "{messages:?}"
    );
}

#[test]
fn duplicate_category_on_one_level_is_rejected() {
    let text = VALID.replace("name = \"complex\"", "name = \"simple\"");
    let messages = errors(&text);
    assert!(
        messages.contains(
            &"bad.toml: dimension `qc`: category `simple` is defined more than once (on the coarse and coarse levels)"
                .to_string()
        ),
        "{messages:?}"
    );
}

#[test]
fn orphan_below_coarse_is_rejected() {
    let text = VALID.replace("parent = \"simple\"\n", "");
    assert_eq!(
        errors(&text),
        [
            "bad.toml: dimension `qc`: medium category `single_fact` has no parent; it needs a parent on the coarse level",
            "bad.toml: dimension `qc`: the medium level does not subdivide coarse category `simple`: it has no children",
        ]
    );
}

#[test]
fn coarse_with_parent_is_rejected() {
    let text = VALID.replace(
        "name = \"complex\"\n",
        "name = \"complex\"\nparent = \"simple\"\n",
    );
    assert_single_error(
        &text,
        "bad.toml: dimension `qc`: coarse category `complex` has parent `simple`; coarse categories have no parent",
    );
}

#[test]
fn empty_description_is_rejected() {
    let text = VALID.replace("\"Exactly one fact.\"", "\"   \"");
    assert_single_error(
        &text,
        "bad.toml: dimension `qc`: category `single_fact` has an empty description",
    );
}

#[test]
fn non_snake_case_name_is_rejected() {
    let text = VALID.replace("\"single_fact\"", "\"Single-Fact\"");
    assert_single_error(
        &text,
        "bad.toml: dimension `qc`: category `Single-Fact`: name must be snake_case (lowercase letters, digits and single underscores)",
    );
}

#[test]
fn persona_probabilities_must_sum_to_one() {
    let text = VALID.replacen("probability = 0.5", "probability = 0.6", 1);
    assert_single_error(
        &text,
        "bad.toml: user categorization `expertise`: persona probabilities sum to 1.1, not 1",
    );
}

#[test]
fn persona_probabilities_within_tolerance_are_accepted() {
    let text = VALID.replacen("probability = 0.5", "probability = 0.5000000001", 1);
    Taxonomy::from_toml_str(&text, FILE).unwrap();
}

#[test]
fn level_that_does_not_subdivide_its_parent_is_rejected() {
    let text = VALID.replace("parent = \"complex\"", "parent = \"simple\"");
    assert_single_error(
        &text,
        "bad.toml: dimension `qc`: the medium level does not subdivide coarse category `complex`: it has no children",
    );
}

#[test]
fn fine_level_without_medium_is_rejected() {
    let text = r#"
[[dimension]]
key = "qc"
name = "Question Complexity"
[[dimension.coarse]]
name = "simple"
description = "One fact."
[[dimension.fine]]
name = "extractive_span"
parent = "simple"
description = "A span."
"#;
    assert_eq!(
        errors(text),
        [
            "bad.toml: dimension `qc` has a fine level but no medium level above it",
            "bad.toml: dimension `qc`: fine category `extractive_span` has parent `simple` on the coarse level; it must be on the medium level",
        ]
    );
}

#[test]
fn duplicate_dimension_key_is_rejected() {
    let dimension = &VALID[..VALID.find("[[user_categorization]]").unwrap()];
    let text = format!("{dimension}{VALID}");
    assert_single_error(&text, "bad.toml: dimension `qc` is defined more than once");
}

#[test]
fn empty_dimension_is_rejected() {
    let text = "[[dimension]]\nkey = \"qc\"\nname = \"Question Complexity\"\n";
    assert_single_error(text, "bad.toml: dimension `qc` has no categories");
}

#[test]
fn toml_syntax_error_names_line_and_column() {
    let text = "[[dimension]]\nkey = \"qc\"\nname = \n";
    let messages = errors(text);
    assert_eq!(messages.len(), 1);
    assert!(
        messages[0].starts_with("bad.toml:3:8: invalid taxonomy TOML:"),
        "{}",
        messages[0]
    );
}

#[test]
fn unknown_field_is_rejected_with_location() {
    let text = VALID.replace("description = \"One stated fact.\"", "descripton = \"x\"");
    let messages = errors(&text);
    assert_eq!(messages.len(), 1);
    assert!(messages[0].starts_with("bad.toml:"), "{}", messages[0]);
    assert!(messages[0].contains("descripton"), "{}", messages[0]);
}

#[test]
fn all_problems_are_reported_together() {
    let text = VALID
        .replace("\"Exactly one fact.\"", "\"\"")
        .replace("\"Compares two things.\"", "\"\"")
        .replacen("probability = 0.5", "probability = 0.1", 1);
    let all = Taxonomy::from_toml_str(&text, FILE).unwrap_err();
    assert_eq!(all.0.len(), 3);
    assert!(matches!(all.0[2], TaxonomyError::ProbabilitySum { .. }));
    assert_eq!(all.to_string().lines().count(), 3);
}

#[test]
fn duplicate_persona_is_rejected() {
    let text = VALID.replace("name = \"expert\"", "name = \"novice\"");
    assert_single_error(
        &text,
        "bad.toml: user categorization `expertise`: `novice` is defined more than once",
    );
}

#[test]
fn empty_persona_description_is_rejected() {
    let text = VALID.replace("\"A specialist.\"", "\"\"");
    assert_single_error(
        &text,
        "bad.toml: user categorization `expertise`: persona `expert` has an empty description",
    );
}

#[test]
fn negative_persona_probability_is_rejected() {
    let text = VALID
        .replacen("probability = 0.5", "probability = -0.5", 1)
        .replacen("probability = 0.5", "probability = 1.5", 1);
    assert_single_error(
        &text,
        "bad.toml: user categorization `expertise`: persona `novice` has invalid probability -0.5",
    );
}
