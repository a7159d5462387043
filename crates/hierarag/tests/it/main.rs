//! The integration tests of `hierarag`, one binary: each module is one former test file.

mod support;

mod annotate;
mod batch;
mod cli;
mod compare;
mod eval_text;
mod every_kind;
mod export;
mod http_system;
mod import;
mod items;
mod judge;
mod llm;
mod money_and_secrets;
mod plan;
mod quickstart;
mod quickstart_run;
mod reliability;
mod report;
mod run;

mod systems;
mod tag;
mod taxonomy;
mod validity;
