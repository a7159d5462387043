//! The integration tests of `hierarag-annotate`, one binary: each module is one former test file.

mod support;

mod agreement;
mod exchange;
mod ppi;
mod sample;
mod store;
