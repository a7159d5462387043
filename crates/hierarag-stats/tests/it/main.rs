//! The integration tests of `hierarag-stats`, one binary: each module is one former test file.

mod compare_oracle;
mod judge_oracle;
mod oracle;
mod ppi_oracle;
mod properties;
mod table;
mod tags_oracle;
mod validity_oracle;
