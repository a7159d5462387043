//! Whose failure an error is: what decides a command's exit code (1: the input's, 2: not).
//! Each crate's error type says it of its own variants ([`Blame`]), with a `match` that names
//! every variant, so that a new variant is classified where it is added.

use std::io;

/// Whose failure an error is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// What the user gave is wrong or missing: a file, a config, an argument, a held lock
    /// (exit 1).
    Input,
    /// The machine, a service or the program failed: I/O on the run directory, a model
    /// server, SQLite (exit 2).
    Internal,
}

/// An error that says whose failure it is.
pub trait Blame: std::error::Error {
    fn fault(&self) -> Fault;
}

impl Blame for io::Error {
    /// A missing file, or one that is not text, is the input's; any other I/O error is not.
    fn fault(&self) -> Fault {
        match self.kind() {
            io::ErrorKind::NotFound | io::ErrorKind::InvalidData => Fault::Input,
            _ => Fault::Internal,
        }
    }
}

impl Blame for crate::LockError {
    /// Another process holding the lock is the user's doing; failing to take it is not.
    fn fault(&self) -> Fault {
        match self {
            crate::LockError::Held { .. } => Fault::Input,
            crate::LockError::Io { .. } => Fault::Internal,
        }
    }
}
