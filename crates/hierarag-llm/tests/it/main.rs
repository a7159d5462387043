//! The integration tests of `hierarag-llm`, one binary: each module is one former test file.

mod support;

mod faults;
mod json_client;
mod llama_server;
