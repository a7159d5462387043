//! The tags of a run (`tags.jsonl`, written by `hierarag tag`) read back with their taxonomy.

use hierarag_pipeline::read_records;
use hierarag_tag::TagRecord;
use hierarag_taxonomy::Taxonomy;

use crate::layout::RunDir;

/// A run's tags and the taxonomy they were made against.
#[derive(Debug)]
pub struct RunTags {
    pub records: Vec<TagRecord>,
    pub taxonomy: Taxonomy,
}

/// The tags of a run, if it has been tagged, with their taxonomy (`tags.taxonomy.toml`, or
/// the run's own for tags made before it was kept).
pub fn load_tags(run: &RunDir) -> anyhow::Result<Option<RunTags>> {
    let path = run.tags();
    if !path.exists() {
        return Ok(None);
    }
    let records = read_records(&path)?;
    let saved = run.tags_taxonomy();
    let taxonomy = if saved.exists() {
        crate::taxonomy::load(Some(&saved))?
    } else {
        crate::taxonomy::of_run(None, Some(run))?
    };
    Ok(Some(RunTags { records, taxonomy }))
}
