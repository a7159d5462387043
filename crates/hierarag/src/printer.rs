//! Terminal output: stdout for data, stderr for notes, progress and logs; the one place that
//! decides what `--quiet` hides; exit codes. Everything printed passes the process's secret
//! scrubber ([`hierarag_fs::secrets`]): a provider's error that quotes the key shows
//! `[redacted]` on the terminal as in the files.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use hierarag_fs::secrets::{ScrubWriter, scrub};
use hierarag_fs::{Blame, Fault};
use hierarag_run::{Counter, Reporter};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Exit code for bad input (a file, an option, a corpus record) or items that failed.
pub const EXIT_BAD_INPUT: u8 = 1;
/// Exit code for an internal error (a bug, or the index store failing underneath us).
pub const EXIT_INTERNAL: u8 = 2;

pub fn init_logging(quiet: bool, verbose: u8) {
    let default = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, _) => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| ScrubWriter::new(std::io::stderr()))
        .with_target(false)
        // Already set when the command line runs twice in one process (the Python package).
        .try_init()
        .ok();
}

/// Standard output for data, scrubbed of every secret.
pub fn stdout() -> ScrubWriter<std::io::StdoutLock<'static>> {
    ScrubWriter::new(std::io::stdout().lock())
}

/// Prints a line of data to stdout.
pub fn say(line: &str) {
    println!("{}", scrub(line));
}

/// Prints a line to stderr.
pub fn tell(line: &str) {
    eprintln!("{}", scrub(line));
}

pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            // serde_json's error hides the io::Error from `source()`, so ask it directly.
            || cause
                .downcast_ref::<serde_json::Error>()
                .and_then(serde_json::Error::io_error_kind)
                == Some(std::io::ErrorKind::BrokenPipe)
    })
}

/// Exit code 2 for a failure that is not the user's input — a model server that gave up, the
/// index store, SQLite (the response cache, the annotation store), fetching an asset, I/O on
/// files other than a missing one — and 1 for the rest (bad input, a bad option, a wrong key).
/// The first error in the chain that tells decides.
pub fn exit_code_for(error: &anyhow::Error) -> ExitCode {
    let internal = error.chain().find_map(is_internal).unwrap_or(false);
    ExitCode::from(if internal {
        EXIT_INTERNAL
    } else {
        EXIT_BAD_INPUT
    })
}

/// Whether `cause` is an internal failure, as its own type says ([`Blame`]); `None` when it is
/// of none of the types that say it.
fn is_internal(cause: &(dyn std::error::Error + 'static)) -> Option<bool> {
    /// `Some(fault)` when `cause` is an `E`.
    fn fault_of<E: Blame + 'static>(cause: &(dyn std::error::Error + 'static)) -> Option<Fault> {
        cause.downcast_ref::<E>().map(Blame::fault)
    }
    // The error types of the crates below, each classifying its own variants.
    const TYPES: [fn(&(dyn std::error::Error + 'static)) -> Option<Fault>; 8] = [
        fault_of::<hierarag_corpus::CorpusError>,
        fault_of::<hierarag_fs::LockError>,
        fault_of::<hierarag_index::IndexError>,
        fault_of::<hierarag_llm::LlmError>,
        fault_of::<hierarag_pipeline::PipelineError>,
        fault_of::<hierarag_annotate::StoreError>,
        fault_of::<hierarag_assets::AssetError>,
        fault_of::<std::io::Error>,
    ];
    TYPES
        .iter()
        .find_map(|fault| fault(cause))
        .map(|fault| fault == Fault::Internal)
}

/// Notes and progress on stderr: hidden with `--quiet` (warnings and errors are not), bars only
/// when stderr is a terminal.
#[derive(Debug, Clone, Copy)]
pub struct Printer {
    pub quiet: bool,
}

impl Reporter for Printer {
    fn note(&self, message: &str) {
        if !self.quiet {
            tell(message);
        }
    }

    fn warn(&self, message: &str) {
        tell(message);
    }

    fn counter(&self, step: &str, unit: &str, total: Option<u64>) -> Box<dyn Counter> {
        let bar = match total {
            Some(total) => ProgressBar::new(total),
            None => ProgressBar::new_spinner(),
        };
        if self.quiet || !std::io::stderr().is_terminal() {
            bar.set_draw_target(ProgressDrawTarget::hidden());
        }
        let template = match total {
            Some(_) => format!(
                "{step:>9} [{{bar:30}}] {{pos}}/{{len}} {unit} {{per_sec}} eta {{eta}} [{{elapsed}}] {{msg}}"
            ),
            None => {
                format!("{{spinner}} {step}: {{pos}} {unit}, {{per_sec}} {{msg}} [{{elapsed}}]")
            }
        };
        bar.set_style(
            ProgressStyle::with_template(&template)
                .expect("valid progress template")
                .progress_chars("=> "),
        );
        bar.enable_steady_tick(Duration::from_millis(200));
        Box::new(Bar(bar))
    }
}

/// An indicatif bar, cleared when dropped.
struct Bar(ProgressBar);

impl Counter for Bar {
    fn set_length(&self, total: u64) {
        self.0.set_length(total);
        self.0.reset_eta();
    }

    fn set_position(&self, position: u64) {
        self.0.set_position(position);
    }

    fn inc(&self, n: u64) {
        self.0.inc(n);
    }

    fn set_message(&self, message: String) {
        self.0.set_message(scrub(&message).into_owned());
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

/// Shortens `text` to at most `width` characters on one line, for tables.
pub fn snippet(text: &str, width: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= width {
        return flat;
    }
    let mut out: String = flat.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Exit code 0 when everything went through, 1 when items failed or a stage stopped.
/// The result of printing data to stdout, with a reader that went away (a closed pipe) taken
/// as success, so that the command's exit status does not depend on whether stdout stayed
/// open.
pub fn printed(result: anyhow::Result<()>) -> anyhow::Result<()> {
    match result {
        Err(error) if is_broken_pipe(&error) => Ok(()),
        result => result,
    }
}

pub fn exit_for(ok: bool) -> ExitCode {
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_BAD_INPUT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    fn code(error: anyhow::Error) -> ExitCode {
        exit_code_for(&error)
    }

    #[test]
    fn the_first_error_of_the_chain_that_says_whose_it_is_decides_the_exit_code() {
        use hierarag_pipeline::PipelineError;
        let io_error = |kind| PipelineError::Io {
            path: "answers.jsonl".into(),
            source: io::Error::from(kind),
        };
        // A file that is not there is the input's; a disk that refuses is not.
        let missing = anyhow::Error::new(io_error(io::ErrorKind::NotFound)).context("answer");
        assert_eq!(code(missing), ExitCode::from(EXIT_BAD_INPUT));
        let denied = anyhow::Error::new(io_error(io::ErrorKind::PermissionDenied));
        assert_eq!(code(denied), ExitCode::from(EXIT_INTERNAL));
        // The crate's own error decides before the I/O error it wraps.
        let store = hierarag_annotate::StoreError::Corrupt {
            path: "annotations.sqlite".into(),
            message: "not a store".into(),
        };
        assert_eq!(code(store.into()), ExitCode::from(EXIT_INTERNAL));
        let held = hierarag_annotate::StoreError::Exists {
            path: "annotations.sqlite".into(),
        };
        assert_eq!(code(held.into()), ExitCode::from(EXIT_BAD_INPUT));
        let cache = hierarag_llm::LlmError::Cache {
            path: "cache.sqlite".into(),
            message: "locked".into(),
        };
        assert_eq!(code(cache.into()), ExitCode::from(EXIT_INTERNAL));
        // An error of no known type is the input's (a bad option, a wrong key).
        assert_eq!(
            code(anyhow::anyhow!("no such metric")),
            ExitCode::from(EXIT_BAD_INPUT)
        );
    }
}
