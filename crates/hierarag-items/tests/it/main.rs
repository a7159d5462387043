//! The integration tests of `hierarag-items`, one binary.

mod core;
mod irt_oracle;
mod items;
