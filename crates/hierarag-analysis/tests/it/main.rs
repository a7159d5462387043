//! The integration tests of `hierarag-analysis`, one binary: the analysis of one system, and
//! the comparison of several.

mod analysis;
mod compare;
