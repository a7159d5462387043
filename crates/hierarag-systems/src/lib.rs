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
//! What a system run by someone else cannot do to this side: a reply, or an answer line, is
//! read up to a limit ([`DEFAULT_MAX_REPLY_BYTES`] unless configured) and fails its question
//! past it, so memory stays bounded whatever comes back; a program's log is rotated at a size;
//! an http system's headers go to no origin but its URL's (a redirect elsewhere is not
//! followed) and its header values appear in no error; a program runs in a process group of
//! its own, ended when it exits, when it is started again and when the system is dropped, so
//! that no child it forked outlives it or holds its stdout.
//!
//! This crate knows nothing of benchmarks or run directories: questions in, [`Reply`]s out.

mod command;
mod http;

pub use command::{
    CommandError, CommandSettings, CommandSystem, Context, DEFAULT_MAX_LOG_BYTES, Reply,
};
pub use hierarag_llm::DEFAULT_MAX_REPLY_BYTES;
pub use http::{
    HttpAnswer, HttpSettings, HttpSystem, PLACEHOLDERS, ReplyMapping, check_pointer, expand_env,
    fill_template, read_reply, template_placeholders,
};
