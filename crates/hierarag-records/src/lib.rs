//! The records of a run directory: every line a stage writes or reads, and the names of the
//! files that hold them (docs/design.md, "Pipeline and run directory").
//!
//! - [`layout`]: [`RunDir`] and [`SystemDir`], the one place that names a run's files;
//! - [`benchmark`]: `benchmark.jsonl` ([`BenchmarkRecord`]) and `rejects.jsonl`
//!   ([`RejectRecord`]), with the [`CategoryRef`]s plans and benchmarks share;
//! - [`answer`]: `answers.jsonl` ([`AnswerRecord`]);
//! - [`score`]: `scores.jsonl` ([`ScoreRecord`]) and the failures of every stage ([`Failure`]);
//! - [`judgement`]: `judgements.jsonl` ([`AnswerGrade`]) and `benchmark.judge.jsonl`
//!   ([`PairRating`]);
//! - [`tag`]: `tags.jsonl` ([`TagRecord`]);
//! - [`agreement`]: `agreement.json`, the people's agreement ([`Agreement`]).
//!
//! Plain data with serde: no stage, model or statistic. The stages that write a record
//! re-export it, so `hierarag_generate::BenchmarkRecord` and this crate's are one type.
//!
//! ```
//! use hierarag_records::{BenchmarkRecord, RunDir};
//!
//! let run = RunDir::new("runs/quickstart");
//! assert!(run.benchmark().ends_with("benchmark.jsonl"));
//! let line = r#"{"id":"q1","question":"Who?","answer":"Ada.","doc_ids":["d1"],"design":"import","set":"import","categories":[]}"#;
//! let record: BenchmarkRecord = serde_json::from_str(line).unwrap();
//! assert_eq!(record.doc_ids, ["d1"]);
//! ```

pub mod agreement;
pub mod answer;
pub mod benchmark;
pub mod judgement;
pub mod layout;
pub mod score;
pub mod tag;

pub use agreement::{
    Agreement, BaselineTest, CategoryAgreement, CoherenceLink, JudgeAgreement, JudgeScale,
    JudgeVsPerson, MetricAgreement, PairKappa, PickAgreement, Quality, ScaleAgreement, Share,
    TaskAgreement,
};
pub use answer::{AnswerModel, AnswerRecord, AnswerUsage, ChunkRef};
pub use benchmark::{
    BenchmarkRecord, CategoryRef, FilterOutcome, ImportSource, ModelInfo, RejectKind, RejectRecord,
    Verdict,
};
pub use judgement::{AnswerGrade, CORRECTNESS_MAX, PairRating};
pub use layout::{AGREEMENT_FILE, ANNOTATIONS_FILE, RunDir, SystemDir};
pub use score::{Failure, ScoreRecord};
pub use tag::{DimensionTag, TagRecord};
