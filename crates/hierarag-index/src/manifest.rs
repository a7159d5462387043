//! `manifest.json`: what an index was built from and how, so that it is never silently reused with
//! other chunking parameters or another corpus.

use std::io::Read;
use std::path::{Path, PathBuf};

use hierarag_corpus::{ChunkParams, CorpusFormat, CorpusSpec};
use hierarag_lang::Language;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::IndexError;

pub(crate) const MANIFEST_FILE: &str = "manifest.json";
pub(crate) const FORMAT_VERSION: u32 = 1;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndexManifest {
    pub format_version: u32,
    pub hierarag_version: String,
    /// False while the build runs; an index whose build was interrupted is never opened.
    pub complete: bool,
    pub corpus: CorpusInfo,
    pub chunking: ChunkParams,
    /// "whitespace": a token is a whitespace-separated word (docs/design.md, "The RAG run").
    pub chunk_unit: String,
    /// The corpus language, which chose the analyzer (`en` for an index written before
    /// languages existed).
    #[serde(default)]
    pub language: Language,
    pub analyzer: AnalyzerInfo,
    pub bm25: Bm25Params,
    pub counts: Counts,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CorpusInfo {
    pub spec: CorpusSpec,
    pub files: Vec<FileFingerprint>,
    /// sha256 over the inputs' contents in order (paths excluded, so a moved corpus keeps it).
    pub content_sha256: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileFingerprint {
    pub path: PathBuf,
    pub format: CorpusFormat,
    pub bytes: u64,
    pub sha256: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnalyzerInfo {
    pub name: String,
    pub tokenizer: String,
    pub lowercase: bool,
    pub stopwords: String,
    pub stemmer: String,
}

impl Default for AnalyzerInfo {
    fn default() -> Self {
        AnalyzerInfo {
            name: crate::ANALYZER_NAME.into(),
            tokenizer: "tantivy simple (split on non-alphanumeric)".into(),
            lowercase: true,
            stopwords: "english (tantivy)".into(),
            stemmer: "english (snowball)".into(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bm25Params {
    pub k1: f32,
    pub b: f32,
}

/// tantivy's BM25 constants, which are the paper's.
pub(crate) const BM25: Bm25Params = Bm25Params { k1: 1.2, b: 0.75 };

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub documents: u64,
    pub chunks: u64,
    pub skipped: u64,
    /// Records lost with the skipped problems, where known (see `hierarag_corpus::Skipped`).
    #[serde(default)]
    pub records_lost: u64,
    pub text_bytes: u64,
}

impl IndexManifest {
    /// The manifest of the index in `dir`; `None` when there is none.
    pub fn read(dir: &Path) -> Result<Option<IndexManifest>, IndexError> {
        let path = dir.join(MANIFEST_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(IndexError::Io { path, source }),
        };
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| IndexError::BadManifest {
                path,
                message: e.to_string(),
            })
    }

    pub(crate) fn write(&self, dir: &Path) -> Result<(), IndexError> {
        let path = dir.join(MANIFEST_FILE);
        let mut text = serde_json::to_string_pretty(self).expect("manifest serialises");
        text.push('\n');
        hierarag_fs::write_atomic(&path, text.as_bytes())
            .map_err(|source| IndexError::Io { path, source })
    }

    /// Refuses an index built for another language than `wanted`: its terms were cut by another
    /// analyzer.
    pub fn check_language(&self, dir: &Path, wanted: Language) -> Result<(), IndexError> {
        if self.language != wanted {
            return Err(IndexError::LanguageMismatch {
                path: dir.to_path_buf(),
                found: self.language,
                wanted,
            });
        }
        Ok(())
    }

    /// Refuses an index built with other chunking parameters than `wanted`.
    pub fn check_chunking(&self, dir: &Path, wanted: &ChunkParams) -> Result<(), IndexError> {
        if self.chunking != *wanted {
            return Err(IndexError::ParamsMismatch {
                path: dir.to_path_buf(),
                found: describe(&self.chunking),
                wanted: describe(wanted),
            });
        }
        Ok(())
    }
}

fn describe(params: &ChunkParams) -> String {
    format!(
        "chunk size {} words, overlap {}",
        params.size, params.overlap
    )
}

/// Hashes every input file of a corpus (a directory: its `.txt`/`.md` files in sorted order).
pub(crate) fn fingerprint(spec: &CorpusSpec) -> Result<CorpusInfo, IndexError> {
    let mut files = Vec::new();
    let mut all = Sha256::new();
    for (path, format) in spec.resolve()? {
        let (bytes, sha256) = if format == CorpusFormat::TextDir {
            hash_dir(&path)?
        } else {
            hash_file(&path)?
        };
        all.update(sha256.as_bytes());
        all.update(b"\n");
        files.push(FileFingerprint {
            path,
            format,
            bytes,
            sha256,
        });
    }
    Ok(CorpusInfo {
        spec: spec.clone(),
        files,
        content_sha256: hex::encode(all.finalize()),
    })
}

fn hash_file(path: &Path) -> Result<(u64, String), IndexError> {
    let io_err = |source| IndexError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(io_err)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut bytes = 0u64;
    loop {
        let n = file.read(&mut buf).map_err(io_err)?;
        if n == 0 {
            break;
        }
        bytes += n as u64;
        hasher.update(&buf[..n]);
    }
    Ok((bytes, hex::encode(hasher.finalize())))
}

fn hash_dir(root: &Path) -> Result<(u64, String), IndexError> {
    let mut hasher = Sha256::new();
    let mut bytes = 0u64;
    for entry in walkdir::WalkDir::new(root).sort_by_file_name() {
        let entry = entry.map_err(|e| IndexError::Io {
            path: root.to_path_buf(),
            source: e.into(),
        })?;
        let path = entry.path();
        if entry.file_type().is_file() && hierarag_corpus::is_text_document(path) {
            let (n, sha) = hash_file(path)?;
            bytes += n;
            let rel = path.strip_prefix(root).unwrap_or(path);
            hasher.update(rel.to_string_lossy().as_bytes());
            hasher.update(b"\0");
            hasher.update(sha.as_bytes());
            hasher.update(b"\n");
        }
    }
    Ok((bytes, hex::encode(hasher.finalize())))
}
