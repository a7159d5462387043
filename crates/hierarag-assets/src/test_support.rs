//! Helpers for unit tests: small fake wheels and specs pinned to their hashes.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

use crate::fsutil::sha256_file;
use crate::{AssetSpec, WIKI_SUMMARIES_MEMBER};

/// A summaries file with three entries: non-ASCII text, a title with a slash and quotes, and an
/// empty description.
pub(crate) const THREE_SUMMARIES: &str = r#"{
  "Zürich": {"title": "Zürich", "extract": "Zürich is the largest city in Switzerland — «Züri».", "description": "Stadt in der Schweiz", "topic": "Geography"},
  "AC/DC \"Back in Black\"": {"title": "AC/DC \"Back in Black\"", "extract": "An album by AC/DC.\nIt sold well.", "description": "", "topic": "Arts"},
  "東京": {"title": "東京", "extract": "東京は日本の首都である。", "description": "capital of Japan", "topic": "Geography"}
}"#;

/// Writes a wheel (zip) at `dir/NAME` holding `members` as (path, contents) pairs.
pub(crate) fn write_wheel(dir: &Path, name: &str, members: &[(&str, &str)]) -> PathBuf {
    let path = dir.join(name);
    let mut zip = ZipWriter::new(File::create(&path).unwrap());
    let options = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
    for (member, contents) in members {
        zip.start_file(*member, options).unwrap();
        zip.write_all(contents.as_bytes()).unwrap();
    }
    zip.finish().unwrap();
    path
}

/// A fake wiki wheel in `dir` holding `summaries`, and a spec pinned to its actual hash.
pub(crate) fn fake_wiki_wheel(dir: &Path, summaries: &str) -> (PathBuf, AssetSpec) {
    let wheel_file = "fake_wiki-0.0.1-py3-none-any.whl";
    let wheel = write_wheel(
        dir,
        wheel_file,
        &[
            ("fake_wiki/__init__.py", ""),
            (WIKI_SUMMARIES_MEMBER, summaries),
        ],
    );
    let spec = fake_spec(wheel_file, sha256_file(&wheel).unwrap());
    (wheel, spec)
}

/// A wiki-shaped spec for `wheel_file` pinned to `sha256`.
pub(crate) fn fake_spec(wheel_file: &'static str, sha256: String) -> AssetSpec {
    AssetSpec {
        name: "wiki-sample",
        package: "fake-wiki",
        version: "0.0.1",
        wheel_file,
        // Specs hold `'static` strings because the real ones are constants; leaking one small
        // string per test is the price of a hash computed at run time.
        sha256: sha256.leak(),
        members: &[WIKI_SUMMARIES_MEMBER],
        license: "test data",
        kind: crate::AssetKind::Data,
    }
}
