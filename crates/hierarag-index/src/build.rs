//! Index building: corpus → chunks → tantivy, streaming with bounded memory.

use std::io::{BufWriter, Write};
use std::path::Path;

use hierarag_corpus::{ChunkParams, CorpusSpec, OnError, ReadSummary, Skipped, chunks};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::{Index, IndexWriter, TantivyDocument};

use hierarag_lang::{Language, LanguageMismatch, ScriptCounts};

use crate::analyzer::{analyzer_for, analyzer_info, analyzer_name};
use crate::error::IndexError;
use crate::manifest::{self, BM25, Counts, FORMAT_VERSION, IndexManifest};

pub(crate) const DOC_TABLE_FILE: &str = "doc_ids.jsonl";
pub(crate) const SKIPPED_FILE: &str = "skipped.jsonl";

/// Text read for the language check: enough to tell the scripts apart, bounded so that it
/// costs nothing on a large corpus.
const SCRIPT_CHECK_BYTES: u64 = 64 << 20;

/// Minimum writer heap per indexing thread that tantivy accepts.
const MIN_HEAP_PER_THREAD: usize = 15_000_000;

/// How to build an index.
#[derive(Clone, Debug)]
pub struct BuildOptions {
    pub chunking: ChunkParams,
    pub on_error: OnError,
    /// Total memory for tantivy's in-memory segments, shared by all indexing threads; peak memory
    /// follows this, not the corpus size.
    pub writer_heap_bytes: usize,
    /// Indexing threads; 0 means one per core.
    pub threads: usize,
    /// Replace an existing index in the output directory.
    pub overwrite: bool,
    /// The corpus language, which chooses the analyzer (docs/design.md, "Languages").
    pub language: Language,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            chunking: ChunkParams::default(),
            on_error: OnError::Fail,
            writer_heap_bytes: 256 << 20,
            threads: 0,
            overwrite: false,
            language: Language::ENGLISH,
        }
    }
}

/// Counts reported while building.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BuildProgress {
    pub documents: u64,
    pub chunks: u64,
    pub text_bytes: u64,
}

/// What `build_index` did.
#[derive(Debug)]
pub enum BuildOutcome {
    /// A new index was written.
    Built {
        manifest: IndexManifest,
        skipped: Vec<Skipped>,
        /// Most letters of the corpus (of its first 64 MB of text) are not in the scripts of
        /// the configured language: the caller should warn.
        language_mismatch: Option<LanguageMismatch>,
    },
    /// A complete index of the same corpus with the same parameters was already there.
    UpToDate { manifest: IndexManifest },
}

impl BuildOutcome {
    pub fn manifest(&self) -> &IndexManifest {
        match self {
            BuildOutcome::Built { manifest, .. } | BuildOutcome::UpToDate { manifest } => manifest,
        }
    }
}

pub(crate) struct Fields {
    pub doc_id: Field,
    pub text: Field,
    pub doc_ord: Field,
    pub chunk_n: Field,
}

pub(crate) fn schema(language: Language) -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let doc_id = builder.add_text_field("doc_id", STRING | STORED);
    // Frequencies but no positions: BM25 needs nothing more, and positions double the postings.
    let text_options = TextOptions::default().set_stored().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(&analyzer_name(language))
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let text = builder.add_text_field("text", text_options);
    // Corpus order of the document and chunk number: stable keys whatever the segment layout.
    let doc_ord = builder.add_u64_field("doc_ord", FAST | INDEXED);
    let chunk_n = builder.add_u64_field("chunk_n", FAST);
    let fields = Fields {
        doc_id,
        text,
        doc_ord,
        chunk_n,
    };
    (builder.build(), fields)
}

pub(crate) fn register_analyzer(index: &Index, language: Language) {
    index
        .tokenizers()
        .register(&analyzer_name(language), analyzer_for(language));
}

/// Builds (or confirms up to date) the index of `spec` in `out`.
pub fn build_index(
    spec: &CorpusSpec,
    out: &Path,
    options: &BuildOptions,
    progress: &mut dyn FnMut(&BuildProgress),
) -> Result<BuildOutcome, IndexError> {
    options
        .chunking
        .validate()
        .map_err(|e| IndexError::InvalidOptions(e.to_string()))?;
    let threads = if options.threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        options.threads
    };
    // tantivy needs 15 MB per thread; use fewer threads rather than fail on a small heap.
    let threads = threads
        .min(options.writer_heap_bytes / MIN_HEAP_PER_THREAD)
        .max(1);
    if options.writer_heap_bytes < MIN_HEAP_PER_THREAD {
        return Err(IndexError::InvalidOptions(format!(
            "writer heap of {} MB is below tantivy's minimum of 15 MB",
            options.writer_heap_bytes >> 20
        )));
    }

    let corpus = manifest::fingerprint(spec)?;
    if let Some(existing) = IndexManifest::read(out)? {
        if !options.overwrite {
            existing.check_chunking(out, &options.chunking)?;
            if existing.complete {
                existing.check_language(out, options.language)?;
                if existing.corpus.content_sha256 == corpus.content_sha256
                    && existing.corpus.spec.id_field == spec.id_field
                    && existing.corpus.spec.text_field == spec.text_field
                {
                    return Ok(BuildOutcome::UpToDate { manifest: existing });
                }
                return Err(IndexError::CorpusChanged {
                    path: out.to_path_buf(),
                    found: existing.corpus.content_sha256,
                    wanted: corpus.content_sha256,
                });
            }
        }
        // An interrupted build, or --overwrite: start again from nothing.
        std::fs::remove_dir_all(out).map_err(|source| IndexError::Io {
            path: out.to_path_buf(),
            source,
        })?;
    } else if out.exists() {
        let mut entries = std::fs::read_dir(out).map_err(|source| IndexError::Io {
            path: out.to_path_buf(),
            source,
        })?;
        if entries.next().is_some() {
            return Err(IndexError::NotEmpty {
                path: out.to_path_buf(),
            });
        }
    }
    let io_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| IndexError::Io { path, source }
    };
    std::fs::create_dir_all(out).map_err(io_err(out))?;

    let mut manifest = IndexManifest {
        format_version: FORMAT_VERSION,
        hierarag_version: env!("CARGO_PKG_VERSION").into(),
        complete: false,
        corpus,
        chunking: options.chunking,
        chunk_unit: "whitespace".into(),
        language: options.language,
        analyzer: analyzer_info(options.language),
        bm25: BM25,
        counts: Counts::default(),
    };
    manifest.write(out)?;

    let (schema, fields) = schema(options.language);
    let index = Index::create_in_dir(out, schema)?;
    register_analyzer(&index, options.language);
    let mut writer: IndexWriter<TantivyDocument> =
        index.writer_with_num_threads(threads, options.writer_heap_bytes)?;

    let doc_table_path = out.join(DOC_TABLE_FILE);
    let mut doc_table =
        BufWriter::new(std::fs::File::create(&doc_table_path).map_err(io_err(&doc_table_path))?);
    let mut documents = spec.documents(options.on_error)?;
    let mut counts = BuildProgress::default();
    let mut letters = ScriptCounts::default();
    for document in documents.by_ref() {
        let document = document?;
        if counts.text_bytes < SCRIPT_CHECK_BYTES {
            letters.add(&document.text);
        }
        let doc_ord = counts.documents;
        for chunk in chunks(&document.text, &options.chunking) {
            let mut doc = TantivyDocument::default();
            doc.add_text(fields.doc_id, &document.id);
            doc.add_text(fields.text, chunk.text);
            doc.add_u64(fields.doc_ord, doc_ord);
            doc.add_u64(fields.chunk_n, chunk.n as u64);
            writer.add_document(doc)?;
            counts.chunks += 1;
        }
        serde_json::to_writer(&mut doc_table, &document.id).expect("string serialises");
        doc_table
            .write_all(b"\n")
            .map_err(io_err(&doc_table_path))?;
        counts.documents += 1;
        counts.text_bytes += document.text.len() as u64;
        if counts.documents % 1024 == 0 {
            progress(&counts);
        }
    }
    progress(&counts);
    doc_table.flush().map_err(io_err(&doc_table_path))?;

    // Written before the emptiness check, so that an index of nothing still lists why.
    let skipped = documents.skipped().to_vec();
    let skipped_path = out.join(SKIPPED_FILE);
    let mut skipped_file =
        BufWriter::new(std::fs::File::create(&skipped_path).map_err(io_err(&skipped_path))?);
    for record in &skipped {
        serde_json::to_writer(&mut skipped_file, record).expect("record serialises");
        skipped_file
            .write_all(b"\n")
            .map_err(io_err(&skipped_path))?;
    }
    skipped_file.flush().map_err(io_err(&skipped_path))?;
    let read = documents.summary();
    if counts.documents == 0 {
        return Err(empty_corpus(spec, &skipped, &read, &skipped_path));
    }
    writer.commit()?;
    writer.wait_merging_threads()?;

    manifest.counts = Counts {
        documents: counts.documents,
        chunks: counts.chunks,
        skipped: skipped.len() as u64,
        records_lost: read.n_records_lost,
        text_bytes: counts.text_bytes,
    };
    manifest.complete = true;
    manifest.write(out)?;
    Ok(BuildOutcome::Built {
        manifest,
        skipped,
        language_mismatch: letters.check(options.language),
    })
}

/// Says why nothing is left to index. An empty input stops the read under `--on-error fail`
/// already, naming itself, so what is left is a corpus whose every record was skipped, or no
/// input at all.
fn empty_corpus(
    spec: &CorpusSpec,
    skipped: &[Skipped],
    read: &ReadSummary,
    skipped_path: &Path,
) -> IndexError {
    const FIRST: usize = 3;
    let why = if skipped.is_empty() {
        if spec.inputs.is_empty() {
            "no input was given".to_string()
        } else {
            "its inputs hold no record".to_string()
        }
    } else {
        let reasons: Vec<&str> = skipped
            .iter()
            .take(FIRST)
            .map(|s| s.reason.as_str())
            .collect();
        format!(
            "--on-error skip passed over everything: {}, listed in {}; {}: {}",
            read.describe_skipped(),
            skipped_path.display(),
            if skipped.len() > FIRST {
                format!("the first {FIRST}")
            } else if skipped.len() == 1 {
                "the problem".to_string()
            } else {
                "the problems".to_string()
            },
            reasons.join("; ")
        )
    };
    IndexError::EmptyCorpus {
        inputs: spec.inputs.join(", "),
        why,
    }
}
