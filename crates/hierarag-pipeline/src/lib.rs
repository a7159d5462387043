//! The stages that turn a plan into a benchmark, answers and scores, each appending finished
//! records to the files it is given and resuming from them (the run directory's layout and
//! manifest are `hierarag-run`'s).
//!
//! - [`Journal`]: an append-only JSONL file; reopening it cuts off a torn last line and tells
//!   which ids are done; [`Journal::finish`] sorts a finished file into plan order and
//!   replaces it atomically ([`sort_records`]), so a run killed and resumed ends with the same
//!   bytes as one that was not;
//! - [`GenerateStage`], [`AnswerStage`], [`EvaluateStage`], [`TagStage`],
//!   [`JudgeStage`], [`RatePairsStage`]: one pass of a stage over the items
//!   not yet done, concurrently, with failures recorded in the stage's failures file and
//!   retried by the next pass. Generation and answering keep a fixed number of items in
//!   progress, each running as a task on the runtime's worker threads, and append each record
//!   as its item finishes (the response cache holds the replies behind it by then);
//!
//! The crate does no terminal output: stages report through [`Progress`].

mod error;
mod journal;
mod pool;
mod reporter;
mod stages;

pub use error::PipelineError;
pub use journal::{
    Journal, file_fingerprint, file_sha256, has_records, read_input, read_records, read_values,
    retain_records, sort_records, write_atomic, write_values_atomic,
};
pub use reporter::{Counter, Reporter, Silent, StageProgress};
pub use stages::{
    AnswerStage, AnswerSystem, EvaluateStage, Failure, GenerateStage, JudgeStage, NoProgress,
    Progress, RatePairsStage, ScoreRecord, StageOutcome, SystemAnswerStage, TagStage, answer_seed,
    cosine, in_batches, merge_grades, score, score_with, write_failures,
};
