//! The integration tests of `hierarag-annotate-server`, one binary: each module is one former test file.

mod support;

mod app;
mod browser;
mod load;
