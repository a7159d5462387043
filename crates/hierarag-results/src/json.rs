//! The JSON files the analyses write into a run directory (`analysis.json`, `comparison.json`,
//! `validity.json`, `items.json`, …): written pretty and atomically, read back with an error
//! that says which command writes them.

use std::path::Path;

use anyhow::Context;
use hierarag_pipeline::write_atomic;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Writes `value` to `path` as pretty JSON with a final newline, atomically, creating its
/// folder.
pub fn write<T: Serialize>(value: &T, path: &Path) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut bytes = serde_json::to_vec_pretty(value)?;
    bytes.push(b'\n');
    write_atomic(path, &bytes)?;
    Ok(())
}

/// Reads `path` when it exists; a file that does not parse is "not `what` (rerun `command`)".
pub fn load<T: DeserializeOwned>(
    path: &Path,
    what: &str,
    command: &str,
) -> anyhow::Result<Option<T>> {
    if !path.exists() {
        return Ok(None);
    }
    let bytes = std::fs::read(path).with_context(|| format!("{}: cannot read", path.display()))?;
    let value = serde_json::from_slice(&bytes)
        .with_context(|| format!("{}: not {what} (rerun `{command}`)", path.display()))?;
    Ok(Some(value))
}
