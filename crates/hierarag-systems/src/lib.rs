//! RAG systems this tool does not build, asked one question at a time.
//!
//! [`CommandSystem`] runs a user's program once and speaks JSON lines with it: a question
//! `{"id", "question"}` a line on its stdin, an answer `{"id", "answer", "contexts":
//! [{"doc_id"?, "text"?}]}` a line on its stdout, in any order, several outstanding; its stderr
//! goes to a log file. A program that dies is started again and the questions it held are asked
//! again, up to a limit. This crate knows nothing of benchmarks or run directories: questions in,
//! [`Reply`]s out.

mod command;

pub use command::{CommandError, CommandSettings, CommandSystem, Context, Reply};
