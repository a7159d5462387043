//! The crate's error type: every message names the file or command at fault and how to recover.

use std::io;
use std::path::PathBuf;

/// Everything that can go wrong while locating, fetching, verifying, unpacking or converting an
/// asset.
///
/// Messages are complete sentences meant for a user at a terminal: they name the path or command
/// involved and, where there is one, the command that fixes the problem.
#[derive(Debug, thiserror::Error)]
pub enum AssetError {
    /// Neither `HIERARAG_HOME` nor `HOME` is set, so there is no default store location.
    #[error(
        "cannot locate the asset store: neither HIERARAG_HOME nor HOME is set; \
         set HIERARAG_HOME to a writable directory"
    )]
    NoHome,

    /// A name that is not in [`crate::ASSETS`].
    #[error("unknown asset `{name}`; known assets: {known}")]
    UnknownAsset {
        /// The name asked for.
        name: String,
        /// The registered names, comma separated.
        known: String,
    },

    /// A filesystem operation failed.
    #[error("cannot {action} {}", path.display())]
    Io {
        /// What was being attempted, as a verb phrase ("create directory", "read", ...).
        action: &'static str,
        /// The path it was attempted on.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },

    /// The Python executable could not be started at all.
    #[error(
        "cannot run `{command}`: {cause}\n\
         Install Python 3 with pip, or set HIERARAG_PYTHON to a Python executable that has pip.\n\
         {manual}"
    )]
    PythonNotRunnable {
        /// The full command line that was attempted.
        command: String,
        /// Why it could not be started (shown in the message, before the hints, so not a
        /// `source()` too).
        cause: io::Error,
        /// The commands to run by hand instead.
        manual: String,
    },

    /// `pip download` ran and failed.
    #[error(
        "pip could not download the wheel: `{command}` failed ({status}); its output ends with:\n\
         {stderr_tail}\n\
         {manual}"
    )]
    PipFailed {
        /// The full command line that was run.
        command: String,
        /// The exit status, as displayed by the standard library.
        status: String,
        /// The last lines of pip's standard error (or standard output if stderr was empty).
        stderr_tail: String,
        /// The commands to run by hand instead.
        manual: String,
    },

    /// A directory (pip's download folder or one given with `--from-dir`) lacks the pinned wheel.
    #[error(
        "{} does not contain the wheel {wheel_file} (found: {found}). {hint}",
        dir.display()
    )]
    WheelNotFound {
        /// The directory searched.
        dir: PathBuf,
        /// The file name looked for.
        wheel_file: String,
        /// The `.whl` files that are there, comma separated, or `no wheels`.
        found: String,
        /// How to obtain the right wheel.
        hint: String,
    },

    /// The wheel's sha256 is not the pinned one: a corrupt download or a different file.
    #[error(
        "sha256 mismatch for {}: expected {expected}, actual {actual}; \
         the file is corrupt or not the pinned {requirement} wheel. {hint}",
        path.display()
    )]
    HashMismatch {
        /// The wheel that was hashed.
        path: PathBuf,
        /// The `PACKAGE==VERSION` it should be.
        requirement: String,
        /// The pinned hash (lowercase hex).
        expected: String,
        /// The hash of the file (lowercase hex).
        actual: String,
        /// How to obtain the right wheel.
        hint: String,
    },

    /// The wheel has the right hash but cannot be read as a zip archive.
    #[error("cannot read {} as a wheel (zip archive)", path.display())]
    BadWheel {
        /// The wheel.
        path: PathBuf,
        /// What the zip reader reported.
        #[source]
        source: zip::result::ZipError,
    },

    /// The wheel lacks a file this asset needs.
    #[error("{} does not contain {member}", wheel.display())]
    MissingMember {
        /// The wheel.
        wheel: PathBuf,
        /// The path inside the wheel that was expected.
        member: String,
    },

    /// An unpacked JSON source file cannot be parsed or has an entry of the wrong shape.
    #[error("{}: {detail}", path.display())]
    BadSourceJson {
        /// The unpacked file.
        path: PathBuf,
        /// Which part is wrong ("not a JSON object keyed by article title", "entry \"X\"", ...).
        detail: String,
        /// The parser's message (with line and column where it has them).
        #[source]
        source: serde_json::Error,
    },

    /// A line of a converted JSONL file cannot be parsed.
    #[error(
        "{}:{line}: not a valid record: {cause}\nDelete the file and it is rebuilt on next use.",
        path.display()
    )]
    BadJsonl {
        /// The JSONL file.
        path: PathBuf,
        /// The 1-based line number.
        line: usize,
        /// The parser's message.
        /// (Shown in the message, before the hint, so not a `source()` too.)
        cause: serde_json::Error,
    },
}

impl AssetError {
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        AssetError::Io {
            action,
            path: path.into(),
            source,
        }
    }
}

impl hierarag_fs::Blame for AssetError {
    /// What the user named (an asset, a folder of wheels, a file that does not match its pin)
    /// is the input's; the store, pip, Python and the network are not.
    fn fault(&self) -> hierarag_fs::Fault {
        use hierarag_fs::Fault;
        match self {
            AssetError::NoHome
            | AssetError::UnknownAsset { .. }
            | AssetError::WheelNotFound { .. }
            | AssetError::HashMismatch { .. } => Fault::Input,
            AssetError::Io { .. }
            | AssetError::PythonNotRunnable { .. }
            | AssetError::PipFailed { .. }
            | AssetError::BadWheel { .. }
            | AssetError::MissingMember { .. }
            | AssetError::BadSourceJson { .. }
            | AssetError::BadJsonl { .. } => Fault::Internal,
        }
    }
}
