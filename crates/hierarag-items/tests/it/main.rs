//! The integration tests of `hierarag-items`, one binary.

mod irt_oracle;
mod items;
