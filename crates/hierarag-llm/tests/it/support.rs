//! The scripted mock server of the fault tests is the workspace's one
//! ([`hierarag_test_support::mock`]).

pub use hierarag_test_support::mock::*;
