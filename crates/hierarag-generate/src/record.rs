//! The records the generation stage writes (`benchmark.jsonl`, `rejects.jsonl`) live with the
//! other records of a run directory in `hierarag-records`.

pub use hierarag_records::{
    BenchmarkRecord, FilterOutcome, ImportSource, ModelInfo, RejectKind, RejectRecord, Verdict,
};
