//! Property tests: snake_case names and TOML round trips of generated taxonomies.

use hierarag_taxonomy::{Category, Dimension, Granularity, Level, Taxonomy, is_snake_case};
use proptest::prelude::*;

proptest! {
    #[test]
    fn generated_snake_case_names_are_accepted(name in "[a-z][a-z0-9]{0,5}(_[a-z0-9]{1,5}){0,3}") {
        prop_assert!(is_snake_case(&name));
    }

    #[test]
    fn names_with_other_characters_are_rejected(name in "[a-z]{1,4}[A-Z -][a-z]{0,4}") {
        prop_assert!(!is_snake_case(&name));
    }

    /// Any tree with at least one child per parent validates and survives a TOML round trip.
    #[test]
    fn generated_hierarchies_round_trip(
        medium_per_coarse in proptest::collection::vec(1usize..4, 1..4),
        fine_per_medium in 1usize..4,
        description in "[A-Za-z ,.]{0,20}[A-Za-z]",
    ) {
        let coarse: Vec<Category> = (0..medium_per_coarse.len())
            .map(|i| Category::new(format!("c{i}"), description.clone()))
            .collect();
        let mut medium = Vec::new();
        for (i, n) in medium_per_coarse.iter().enumerate() {
            for j in 0..*n {
                medium.push(Category::new(format!("m{i}_{j}"), "M.").with_parent(format!("c{i}")));
            }
        }
        let fine: Vec<Category> = medium
            .iter()
            .flat_map(|m| {
                (0..fine_per_medium)
                    .map(move |k| Category::new(format!("f{}_{k}", m.name), "F.").with_parent(m.name.clone()))
            })
            .collect();
        let taxonomy = Taxonomy {
            dimensions: vec![Dimension {
                key: "d".into(),
                name: "Generated".into(),
                levels: vec![
                    Level { granularity: Granularity::Coarse, categories: coarse },
                    Level { granularity: Granularity::Medium, categories: medium },
                    Level { granularity: Granularity::Fine, categories: fine },
                ],
            }],
            user_categorizations: vec![],
        };
        taxonomy.validate("generated").unwrap();
        let n_medium: usize = medium_per_coarse.iter().sum();
        prop_assert_eq!(taxonomy.splits("d").len(), medium_per_coarse.len() + n_medium);
        let again = Taxonomy::from_toml_str(&taxonomy.to_toml_string(), "generated").unwrap();
        prop_assert_eq!(again, taxonomy);
    }
}
