//! The integration tests of `hierarag-report`, one binary: each module is one former test file.

mod browser;
mod svg;
