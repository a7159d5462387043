//! The integration tests of `hierarag-taxonomy`, one binary: each module is one former test file.

mod datamorgana;
mod figure;
mod properties;
mod taxonomy;
