//! Terminal output: stdout for data, stderr for notes, progress and logs; the one place that
//! decides what `--quiet` hides; exit codes.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

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
        .with_writer(std::io::stderr)
        .with_target(false)
        // Already set when the command line runs twice in one process (the Python package).
        .try_init()
        .ok();
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

/// Whether `cause` is an internal failure; `None` when its kind does not tell.
fn is_internal(cause: &(dyn std::error::Error + 'static)) -> Option<bool> {
    use hierarag_annotate::StoreError;
    use hierarag_index::IndexError;
    use hierarag_llm::LlmError;
    use hierarag_pipeline::PipelineError;
    if cause.is::<hierarag_corpus::CorpusError>() {
        return Some(false);
    }
    if let Some(error) = cause.downcast_ref::<hierarag_fs::LockError>() {
        // Another process holding the run directory is the user's doing.
        return Some(matches!(error, hierarag_fs::LockError::Io { .. }));
    }
    if let Some(error) = cause.downcast_ref::<IndexError>() {
        return match error {
            IndexError::Tantivy(_) | IndexError::Io { .. } => Some(true),
            _ => Some(false),
        };
    }
    if let Some(error) = cause.downcast_ref::<LlmError>() {
        return Some(matches!(
            error,
            LlmError::Call { .. } | LlmError::Cache { .. }
        ));
    }
    if let Some(error) = cause.downcast_ref::<PipelineError>() {
        return match error {
            PipelineError::Io { source, .. } => Some(source.kind() != std::io::ErrorKind::NotFound),
            _ => Some(false),
        };
    }
    if let Some(error) = cause.downcast_ref::<StoreError>() {
        return Some(matches!(
            error,
            StoreError::Open { .. } | StoreError::Sqlite(_) | StoreError::Corrupt { .. }
        ));
    }
    if let Some(error) = cause.downcast_ref::<hierarag_assets::AssetError>() {
        use hierarag_assets::AssetError;
        // What the user named (an asset, a folder of wheels, a file) is input; the store,
        // pip and the network are not.
        return Some(!matches!(
            error,
            AssetError::NoHome
                | AssetError::UnknownAsset { .. }
                | AssetError::WheelNotFound { .. }
                | AssetError::HashMismatch { .. }
        ));
    }
    if let Some(error) = cause.downcast_ref::<std::io::Error>() {
        // A missing file or one that is not text is the input's fault.
        return Some(!matches!(
            error.kind(),
            std::io::ErrorKind::NotFound | std::io::ErrorKind::InvalidData
        ));
    }
    None
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
            eprintln!("{message}");
        }
    }

    fn warn(&self, message: &str) {
        eprintln!("{message}");
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
        self.0.set_message(message);
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
