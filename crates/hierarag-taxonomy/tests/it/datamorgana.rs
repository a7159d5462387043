//! Tests of DataMorgana configuration import and export.

use hierarag_taxonomy::{Granularity, Taxonomy};

/// A configuration in the shape of DataMorgana's public example.
const EXAMPLE: &str = r#"{
  "question_categorizations": [
    {
      "categorization_name": "factoid_vs_open_ended",
      "categories": [
        {
          "name": "factoid",
          "description": "a question seeking a specific, concise piece of information or a short fact about a particular subject, such as a name, date, or number.",
          "probability": 0.5
        },
        {
          "name": "open-ended",
          "description": "a question inviting detailed or exploratory responses, encouraging discussion or elaboration.",
          "probability": 0.5
        }
      ]
    },
    {
      "categorization_name": "premise",
      "categories": [
        {
          "name": "without-premise",
          "description": "a question that does not contain any premise or any information about the user.",
          "probability": 0.7
        },
        {
          "name": "with-premise",
          "description": "a question starting with a very short premise, where the users reveal their needs or some information about themselves.",
          "probability": 0.3
        }
      ]
    },
    {
      "categorization_name": "phrasing",
      "categories": [
        {
          "name": "concise-and-natural",
          "description": "a concise direct natural question consisting of a few words.",
          "probability": 0.25
        },
        {
          "name": "verbose-and-natural",
          "description": "a relatively long question consisting of more than 9 words.",
          "probability": 0.25
        },
        {
          "name": "short-search-query",
          "description": "phrased as a typed web query for search engines only keywords, without punctuation and without a natural-sounding structure. It consists of less than 7 words.",
          "probability": 0.25
        },
        {
          "name": "long-search-query",
          "description": "phrased as a typed web query for search engines only keywords, without punctuation and without a natural-sounding structure. It consists of more than 6 words.",
          "probability": 0.25
        }
      ]
    },
    {
      "categorization_name": "multi_doc",
      "categories": [
        {
          "name": "comparison",
          "description": "a comparison question that requires comparing two related concepts or entities, where the information for each comes from a different document.",
          "probability": 1.0,
          "is_multi_doc": true
        }
      ]
    }
  ],
  "user_categorizations": [
    {
      "categorization_name": "expertise",
      "categories": [
        {
          "name": "expert",
          "description": "an expert of the subject discussed in the document, therefore, he asks complex questions.",
          "probability": 0.8
        },
        {
          "name": "novice",
          "description": "a person with very basic knowledge on the topic discussed in the topic. Therefore, he asks very simple questions.",
          "probability": 0.2
        }
      ]
    }
  ]
}"#;

#[test]
fn example_is_read_as_flat_dimensions_and_personas() {
    let taxonomy = Taxonomy::from_datamorgana_json(EXAMPLE, "dm.json").unwrap();
    assert_eq!(taxonomy.dimensions.len(), 4);
    let premise = taxonomy.dimension("premise").unwrap();
    assert_eq!(premise.levels.len(), 1);
    assert_eq!(premise.levels[0].granularity, Granularity::Coarse);
    let (_, with_premise) = taxonomy.category("premise", "with-premise").unwrap();
    assert_eq!(with_premise.probability, Some(0.3));
    let (_, comparison) = taxonomy.category("multi_doc", "comparison").unwrap();
    assert!(comparison.is_multi_doc);
    let personas: Vec<(&str, f64)> = taxonomy
        .personas()
        .map(|p| (p.name.as_str(), p.probability))
        .collect();
    assert_eq!(personas, [("expert", 0.8), ("novice", 0.2)]);
}

#[test]
fn example_round_trips() {
    let taxonomy = Taxonomy::from_datamorgana_json(EXAMPLE, "dm.json").unwrap();
    let written = taxonomy.to_datamorgana_json(Granularity::Coarse);
    let original: serde_json::Value = serde_json::from_str(EXAMPLE).unwrap();
    let rewritten: serde_json::Value = serde_json::from_str(&written).unwrap();
    assert_eq!(rewritten, original);
    let again = Taxonomy::from_datamorgana_json(&written, "written.json").unwrap();
    assert_eq!(again, taxonomy);
}

#[test]
fn datamorgana_taxonomy_writes_probabilities_and_multi_doc_to_toml() {
    let taxonomy = Taxonomy::from_datamorgana_json(EXAMPLE, "dm.json").unwrap();
    // Hyphenated names are DataMorgana's; TOML validation requires snake_case, so only the
    // text round trip (not from_toml_str) is checked for them.
    let text = taxonomy.to_toml_string();
    assert!(text.contains("probability = 0.3"));
    assert!(text.contains("is_multi_doc = true"));
}

#[test]
fn default_taxonomy_exports_one_level_per_dimension() {
    let taxonomy = Taxonomy::default_taxonomy();
    for (granularity, n_hierarchical) in [
        (Granularity::Coarse, 2),
        (Granularity::Medium, 4),
        (Granularity::Fine, 8),
    ] {
        let written = taxonomy.to_datamorgana_json(granularity);
        let exported = Taxonomy::from_datamorgana_json(&written, "export.json").unwrap();
        let sizes: Vec<(String, usize)> = exported
            .dimensions
            .iter()
            .map(|d| (d.key.clone(), d.levels[0].categories.len()))
            .collect();
        assert_eq!(
            sizes,
            [
                ("qc".to_string(), n_hierarchical),
                ("at".to_string(), n_hierarchical),
                ("lv".to_string(), n_hierarchical),
                ("ph".to_string(), 4),
            ]
        );
        for dimension in &exported.dimensions {
            let sum: f64 = dimension.levels[0]
                .categories
                .iter()
                .map(|c| c.probability.unwrap())
                .sum();
            assert!((sum - 1.0).abs() < 1e-9);
        }
        assert_eq!(exported.user_categorizations, taxonomy.user_categorizations);
    }
}

#[test]
fn json_syntax_error_names_file_line_and_column() {
    let error =
        Taxonomy::from_datamorgana_json("{\n  \"question_categorizations\": [,]\n}", "dm.json")
            .unwrap_err();
    let message = error.to_string();
    assert!(message.starts_with("dm.json:2:"), "{message}");
    assert!(message.contains("invalid DataMorgana JSON"), "{message}");
}

#[test]
fn persona_probabilities_are_checked_on_import() {
    let text = EXAMPLE.replace("\"probability\": 0.2", "\"probability\": 0.3");
    let error = Taxonomy::from_datamorgana_json(&text, "dm.json").unwrap_err();
    assert_eq!(
        error.to_string(),
        "dm.json: user categorization `expertise`: persona probabilities sum to 1.1, not 1"
    );
}
