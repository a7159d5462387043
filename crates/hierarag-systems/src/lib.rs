//! RAG systems this tool does not build, asked one question at a time.
//!
//! [`CommandSystem`] runs a user's program once and speaks JSON lines with it: a question
//! `{"id", "question"}` a line on its stdin, an answer `{"id", "answer", "contexts":
//! [{"doc_id"?, "text"?}]}` a line on its stdout, in any order, several outstanding; its stderr
//! goes to a log file. A program that dies is started again and the questions it held are asked
//! again, up to a limit.
//!
//! [`HttpSystem`] POSTs each question to a service: a JSON body template with `{question}` and
//! `{id}` in its strings, the answer and contexts read out of the reply by JSON Pointers
//! ([`ReplyMapping`]). Its calls go through `hierarag-llm`'s [`hierarag_llm::JsonClient`], so
//! that concurrency, timeouts, retries, `Retry-After`, the response cache and usage follow the
//! LLM layer's rules; a reply that does not fit the mapping says which pointer failed.
//!
//! This crate knows nothing of benchmarks or run directories: questions in, [`Reply`]s out.

mod command;
mod http;

pub use command::{CommandError, CommandSettings, CommandSystem, Context, Reply};
pub use http::{
    HttpAnswer, HttpSettings, HttpSystem, PLACEHOLDERS, ReplyMapping, check_pointer, expand_env,
    fill_template, read_reply, template_placeholders,
};
