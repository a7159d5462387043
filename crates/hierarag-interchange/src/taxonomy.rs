//! Taxonomy files: TOML, or a DataMorgana configuration (`.json`); the run's own copy.

use std::path::Path;

use anyhow::Context;
use hierarag_taxonomy::Taxonomy;

use hierarag_records::RunDir;

/// Reads a taxonomy: TOML, or a DataMorgana configuration when the file ends in `.json`; the
/// built-in default without a file.
pub fn load(path: Option<&Path>) -> anyhow::Result<Taxonomy> {
    let Some(path) = path else {
        return Ok(Taxonomy::default_taxonomy());
    };
    let text =
        hierarag_fs::read_text(path).with_context(|| format!("{}: cannot read", path.display()))?;
    let name = path.display().to_string();
    let is_json = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    let taxonomy = if is_json {
        Taxonomy::from_datamorgana_json(&text, &name)?
    } else {
        Taxonomy::from_toml_str(&text, &name)?
    };
    Ok(taxonomy)
}

/// `path`, else the taxonomy a run was planned with (its `taxonomy.toml`), else the built-in
/// one.
pub fn of_run(path: Option<&Path>, run: Option<&RunDir>) -> anyhow::Result<Taxonomy> {
    if path.is_some() {
        return load(path);
    }
    match run.map(RunDir::taxonomy).filter(|p| p.exists()) {
        Some(saved) => load(Some(&saved)),
        None => load(None),
    }
}
