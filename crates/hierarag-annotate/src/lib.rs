//! Human validation of a benchmark (docs/design.md, "Human validation"): a stratified sample of questions that people
//! rate, kept in an SQLite store, exchanged as CSV, and summarised as agreement statistics.
//!
//! - [`sample`] draws the items from the benchmark's questions ([`Question`]): stratified by
//!   (dimension, level), proportional with at least one per stratum ([`allocate`]), seeded; a
//!   subset also gets the category task (a blind pick among the level's categories).
//! - [`Store`] keeps items, [`Annotator`]s and [`Rating`]s in `annotations.sqlite` (WAL, safe
//!   for several processes); the annotation app (`hierarag annotate serve`) writes through it.
//! - [`write_csv`] / [`import_csv`] exchange ratings with spreadsheets; an import checks every
//!   row before writing anything and names the row and column of each problem ([`RowError`]).
//!   Cells a spreadsheet would run as a formula are written with a leading `'`
//!   ([`neutralize_cell`], also used by `hierarag export`'s CSVs) and read back without it
//!   ([`restore_cell`]).
//! - [`judge_agreement`] measures the LLM judge (both tasks) and every automatic metric (the
//!   answer task) against the people who rated the same items.
//! - [`judge_ppi`] combines the judge's grades of every system answer with the people's
//!   ratings of a random few into prediction-powered means per system and category, and
//!   paired differences between systems ([`JudgePpi`]); [`plan_ratings`] says how many ratings
//!   a wanted interval width needs.
//! - [`agreement`] computes Fleiss' κ per scale, answer quality, category agreement against
//!   chance with binomial p-values, Cohen's κ between annotators, and the point-biserial link
//!   between an item's agreement and its split's Coherence Ratio ([`Agreement`]).
//!
//! This crate reads and writes the store and CSV it is given; it knows nothing of run
//! directories, corpora or HTTP.
//!
//! ```
//! use hierarag_annotate::{CategoryParents, Rating, Store, agreement, sample, Question, SampleOptions};
//! use hierarag_records::CategoryRef;
//! use hierarag_taxonomy::{Granularity, Taxonomy};
//!
//! let taxonomy = Taxonomy::default_taxonomy();
//! let questions: Vec<Question> = (0..20)
//!     .map(|i| Question {
//!         id: format!("q{i:02}"),
//!         set: "qc/coarse".into(),
//!         categories: vec![CategoryRef {
//!             dimension: "qc".into(),
//!             level: Granularity::Coarse,
//!             category: if i % 2 == 0 { "simple" } else { "complex" }.into(),
//!         }],
//!         question: format!("Question {i}?"),
//!         reference: "An answer.".into(),
//!         doc_ids: vec![format!("doc{i}")],
//!     })
//!     .collect();
//! let options = SampleOptions { n: 6, category_subset: 3, seed: 7 };
//! let drawn = sample(&questions, &taxonomy, &options).unwrap();
//! assert_eq!(drawn.items.len(), 6);
//! assert_eq!(drawn.n_category_task(), 3);
//!
//! let dir = tempfile::tempdir().unwrap();
//! let store = Store::create(&dir.path().join("annotations.sqlite"), &drawn.items, &drawn.meta()).unwrap();
//! let alice = store.add_annotator("alice").unwrap();
//! assert_eq!(alice.token.len(), 32);
//! let item = &drawn.items[0];
//! store
//!     .save_rating(&Rating {
//!         item_id: item.item_id.clone(),
//!         annotator: "alice".into(),
//!         correctness: Some(3),
//!         hallucination: Some(0),
//!         answerability: Some(2),
//!         category_pick: None,
//!         note: None,
//!         updated_unix_s: 0,
//!     })
//!     .unwrap();
//! let result = agreement(&store.items().unwrap(), &store.ratings().unwrap(), &drawn.parents, None);
//! assert_eq!(result.quality.acceptable.unwrap().count, 1);
//! assert_eq!(result.scales[0].kappa, None); // one annotator: a note, not a failure
//! ```

pub mod agreement;
pub mod exchange;
pub mod judged;
pub mod ppi;
pub mod sample;
pub use hierarag_fs::spreadsheet;
pub mod store;

pub use agreement::{
    AGREEMENT_FILE, Agreement, BaselineTest, CategoryAgreement, CategoryParents, CoherenceLink,
    PairKappa, PickAgreement, Quality, ScaleAgreement, Share, TAGGER, TaggerAnnotator, agreement,
    tagger_as_annotator,
};
pub use exchange::{
    CSV_COLUMNS, ImportError, ImportSummary, ParsedRatings, RowError, import_csv, read_csv,
    write_csv,
};
pub use hierarag_fs::{FORMULA_STARTS, neutralize_cell, restore_cell};
pub use hierarag_validity::ppi::{
    CategoryPpi, DifferencePpi, JudgePpi, MeanInterval, PlanMethod, PpiEstimate, PpiRow,
    RatingsNeeded, RatingsPlan, ScalePpi, SystemPpi, ppi_row, ratings_for_width,
};
pub use judged::{
    FAIR, GOOD, JudgeAgreement, JudgeInputs, JudgeScale, JudgeVsPerson, MetricAgreement,
    TaskAgreement, judge_agreement,
};
pub use ppi::{judge_ppi, plan_ratings};
pub use sample::{
    Question, Sample, SampleError, SampleOptions, Stratum, allocate, sample, sample_with_first,
};
pub use store::{
    ANNOTATIONS_FILE, Annotator, Item, MAX_ANSWERABILITY, MAX_CORRECTNESS, MAX_HALLUCINATION,
    Rating, Store, StoreError, SystemAnswer, lock_store, now_unix_s,
};
