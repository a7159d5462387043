//! How the libraries above the stages talk to the person running them: notes and progress
//! counters. The binary draws them on stderr (and hides them with `--quiet`); tests pass
//! [`Silent`].

use crate::stages::Progress;

/// Where notes and progress go.
pub trait Reporter: Sync {
    /// A line for the person running the command (progress, not data); hidden by `--quiet`.
    fn note(&self, message: &str);
    /// A line that is always shown (why a stage stopped, which items failed).
    fn warn(&self, message: &str);
    /// A counter for a long step: `step` names it, `unit` is what it counts (`docs`, `items`),
    /// `total` is known for a bar and unknown for a spinner. Dropping it clears it.
    fn counter(&self, step: &str, unit: &str, total: Option<u64>) -> Box<dyn Counter>;
}

/// A progress counter.
pub trait Counter: Send + Sync {
    fn set_length(&self, total: u64);
    fn set_position(&self, position: u64);
    fn inc(&self, n: u64);
    /// A short text after the counts (`1234 chunks, 5.1 MB/s`).
    fn set_message(&self, message: String);
}

/// A counter as a stage's [`Progress`] (cleared when it is dropped).
#[allow(missing_debug_implementations)]
pub struct StageProgress(pub Box<dyn Counter>);

impl Progress for StageProgress {
    fn start(&self, total: u64, already_done: u64) {
        self.0.set_length(total);
        self.0.set_position(already_done);
    }

    fn advance(&self, n: u64) {
        self.0.inc(n);
    }
}

/// Reports nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

struct NoCounter;

impl Counter for NoCounter {
    fn set_length(&self, _total: u64) {}
    fn set_position(&self, _position: u64) {}
    fn inc(&self, _n: u64) {}
    fn set_message(&self, _message: String) {}
}

impl Reporter for Silent {
    fn note(&self, _message: &str) {}
    fn warn(&self, _message: &str) {}
    fn counter(&self, _step: &str, _unit: &str, _total: Option<u64>) -> Box<dyn Counter> {
        Box::new(NoCounter)
    }
}
