//! Query evaluation: analysed terms scored term-at-a-time over tantivy's block postings.
//!
//! For the short queries of a RAG benchmark over short posting lists, one pass per term that adds
//! each posting's BM25 contribution into a dense per-segment accumulator beats dynamic pruning
//! and tantivy's generic collector machinery; above [`PRUNING_MIN_POSTINGS`] postings a query
//! goes document-at-a-time with MaxScore ([`crate::maxscore`]). Scores use tantivy's own
//! `Bm25Weight`, so they are bit-identical to a `BooleanQuery` of `TermQuery`s over the same terms.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tantivy::columnar::Column;
use tantivy::fastfield::AliveBitSet;
use tantivy::fieldnorm::FieldNormReader;
use tantivy::postings::TermInfo;
use tantivy::query::Bm25Weight;
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{DocAddress, Index, IndexReader, InvertedIndexReader, ReloadPolicy, Term};

use crate::analyzer::analyzer_for;
use crate::build::{DOC_TABLE_FILE, register_analyzer};
use crate::error::IndexError;
use crate::manifest::IndexManifest;
use crate::maxscore::{self, TermCursor, TopScores};

/// Whether a ranking lists chunks, or documents at their best chunk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Level {
    Chunk,
    #[default]
    Doc,
}

/// One search result with its texts ([`Bm25Index::search_results`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SearchResult {
    /// From 1.
    pub rank: usize,
    pub score: f32,
    pub doc_id: String,
    pub chunk_id: String,
    pub text: String,
}

/// One ranked chunk (at the document level: the document's best chunk).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hit {
    /// BM25 score (f32, as tantivy computes it).
    pub score: f32,
    /// Corpus order of the document (index into the document table).
    pub doc_ord: u32,
    /// Chunk number within the document.
    pub chunk_n: u32,
    /// Where the chunk lives in tantivy, to fetch its stored text.
    pub address: DocAddress,
}

struct SegmentCtx {
    inverted: Arc<InvertedIndexReader>,
    fieldnorms: FieldNormReader,
    doc_ord: Column<u64>,
    chunk_n: Column<u64>,
    alive: Option<AliveBitSet>,
    max_doc: u32,
}

/// An open index, shareable across threads; each thread brings its own [`Scratch`].
pub struct Bm25Index {
    dir: PathBuf,
    manifest: IndexManifest,
    #[allow(dead_code)] // keeps the segment files open for the readers below
    reader: IndexReader,
    searcher: tantivy::Searcher,
    text_field: Field,
    segments: Vec<SegmentCtx>,
    total_docs: u64,
    avg_fieldnorm: f32,
    doc_ids: Vec<String>,
    pruning_min_postings: u64,
}

impl std::fmt::Debug for Bm25Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bm25Index")
            .field("dir", &self.dir)
            .field("documents", &self.doc_ids.len())
            .field("chunks", &self.total_docs)
            .finish()
    }
}

/// Per-thread working memory for queries: score accumulators and the query analyzer.
pub struct Scratch {
    scores: Vec<Vec<f32>>,
    touched: Vec<Vec<u32>>,
    analyzer: TextAnalyzer,
    candidates: Vec<Candidate>,
}

impl std::fmt::Debug for Scratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scratch")
            .field("segments", &self.scores.len())
            .finish()
    }
}

#[derive(Clone, Copy)]
struct Candidate {
    score: f32,
    segment: u32,
    doc: u32,
}

struct QueryTerm {
    doc_freq: u64,
    weight: Bm25Weight,
    infos: Vec<Option<TermInfo>>,
}

/// Above this many postings in all (summed over the query's terms), a query switches from the
/// exhaustive term-at-a-time pass to MaxScore, whose skipping pays off only on long posting
/// lists (measured: docs/benchmarks.md).
const PRUNING_MIN_POSTINGS: u64 = 10_000;

impl Bm25Index {
    /// Opens a complete index built by `build_index`.
    pub fn open(dir: &Path) -> Result<Bm25Index, IndexError> {
        let manifest = IndexManifest::read(dir)?.ok_or_else(|| IndexError::NotAnIndex {
            path: dir.to_path_buf(),
        })?;
        if !manifest.complete {
            return Err(IndexError::Incomplete {
                path: dir.to_path_buf(),
            });
        }
        let index = Index::open_in_dir(dir)?;
        register_analyzer(&index, manifest.language);
        let schema = index.schema();
        let text_field = schema.get_field("text")?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        let searcher = reader.searcher();
        let mut segments = Vec::new();
        let mut total_tokens = 0u64;
        let mut total_docs = 0u64;
        for segment in searcher.segment_readers() {
            let inverted = segment.inverted_index(text_field)?;
            total_tokens += inverted.total_num_tokens();
            total_docs += u64::from(segment.max_doc());
            let fast = segment.fast_fields();
            segments.push(SegmentCtx {
                inverted,
                fieldnorms: segment.get_fieldnorms_reader(text_field)?,
                doc_ord: fast.u64("doc_ord")?,
                chunk_n: fast.u64("chunk_n")?,
                alive: segment.alive_bitset().cloned(),
                max_doc: segment.max_doc(),
            });
        }
        // Exactly tantivy's average field norm (Bm25Weight::for_terms).
        let avg_fieldnorm = total_tokens as f32 / total_docs.max(1) as f32;
        let doc_ids = read_doc_table(&dir.join(DOC_TABLE_FILE))?;
        Ok(Bm25Index {
            dir: dir.to_path_buf(),
            manifest,
            reader,
            searcher,
            text_field,
            segments,
            total_docs,
            avg_fieldnorm,
            doc_ids,
            pruning_min_postings: PRUNING_MIN_POSTINGS,
        })
    }

    /// Sets the number of postings (summed over a query's terms) above which queries use
    /// MaxScore instead of the exhaustive pass: 0 prunes always, `u64::MAX` never. Both
    /// paths give the same ranking; this is a speed knob (and lets tests compare the two).
    pub fn with_pruning_threshold(mut self, min_postings: u64) -> Self {
        self.pruning_min_postings = min_postings;
        self
    }

    pub fn manifest(&self) -> &IndexManifest {
        &self.manifest
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Number of documents.
    pub fn n_documents(&self) -> usize {
        self.doc_ids.len()
    }

    /// Number of chunks.
    pub fn n_chunks(&self) -> u64 {
        self.total_docs
    }

    /// The id of the document a hit belongs to.
    pub fn doc_id(&self, hit: &Hit) -> &str {
        &self.doc_ids[hit.doc_ord as usize]
    }

    /// The id of a hit's chunk, `{doc_id}#{n}`.
    pub fn chunk_id(&self, hit: &Hit) -> String {
        hierarag_corpus::chunk_id(self.doc_id(hit), hit.chunk_n as usize)
    }

    /// The stored text of a hit's chunk.
    pub fn chunk_text(&self, hit: &Hit) -> Result<String, IndexError> {
        use tantivy::schema::Value;
        let doc: tantivy::TantivyDocument = self.searcher.doc(hit.address)?;
        Ok(doc
            .get_first(self.text_field)
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string())
    }

    /// Fresh working memory for one thread.
    pub fn scratch(&self) -> Scratch {
        Scratch {
            scores: self
                .segments
                .iter()
                .map(|s| vec![0.0; s.max_doc as usize])
                .collect(),
            touched: vec![Vec::new(); self.segments.len()],
            analyzer: analyzer_for(self.manifest.language),
            candidates: Vec::new(),
        }
    }

    /// The top `k` chunks or documents for `query`, best first (score descending, then document
    /// id descending, then chunk number ascending).
    pub fn search(&self, scratch: &mut Scratch, query: &str, k: usize, level: Level) -> Vec<Hit> {
        if k == 0 {
            return Vec::new();
        }
        let terms = self.query_terms(scratch, query);
        let n_postings: u64 = terms.iter().map(|t| t.doc_freq).sum();
        if n_postings > self.pruning_min_postings {
            return self.search_pruned(scratch, &terms, k, level);
        }
        self.accumulate(scratch, &terms);
        let hits = self.select(scratch, k, level);
        for (segment, touched) in scratch.touched.iter_mut().enumerate() {
            let scores = &mut scratch.scores[segment];
            for &doc in touched.iter() {
                scores[doc as usize] = 0.0;
            }
            touched.clear();
        }
        hits
    }

    /// [`Bm25Index::search`] with each hit's document id, chunk id and stored text, ranked
    /// from 1: what `hierarag search --json` prints.
    pub fn search_results(
        &self,
        query: &str,
        k: usize,
        level: Level,
    ) -> Result<Vec<SearchResult>, IndexError> {
        let mut scratch = self.scratch();
        self.search(&mut scratch, query, k, level)
            .iter()
            .enumerate()
            .map(|(i, hit)| {
                Ok(SearchResult {
                    rank: i + 1,
                    score: hit.score,
                    doc_id: self.doc_id(hit).to_owned(),
                    chunk_id: self.chunk_id(hit),
                    text: self.chunk_text(hit)?,
                })
            })
            .collect()
    }

    /// Runs many queries in parallel (`threads` 0: one per core); results in input order.
    /// `on_done` is called once per finished query, from any thread, for progress reporting.
    pub fn search_batch<Q: AsRef<str> + Sync>(
        &self,
        queries: &[Q],
        k: usize,
        level: Level,
        threads: usize,
        on_done: &(dyn Fn() + Sync),
    ) -> Result<Vec<Vec<Hit>>, IndexError> {
        use rayon::prelude::*;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(|e| IndexError::InvalidOptions(format!("cannot start query threads: {e}")))?;
        Ok(pool.install(|| {
            queries
                .par_iter()
                .map_init(
                    || self.scratch(),
                    |scratch, query| {
                        let hits = self.search(scratch, query.as_ref(), k, level);
                        on_done();
                        hits
                    },
                )
                .collect()
        }))
    }

    fn query_terms(&self, scratch: &mut Scratch, query: &str) -> Vec<QueryTerm> {
        let mut terms = Vec::new();
        let mut stream = scratch.analyzer.token_stream(query);
        while let Some(token) = stream.next() {
            let term = Term::from_field_text(self.text_field, &token.text);
            let mut doc_freq = 0u64;
            let infos: Vec<Option<TermInfo>> = self
                .segments
                .iter()
                .map(|s| {
                    let info = s.inverted.get_term_info(&term).ok().flatten();
                    doc_freq += info.as_ref().map_or(0, |i| u64::from(i.doc_freq));
                    info
                })
                .collect();
            if doc_freq == 0 {
                continue;
            }
            let weight = Bm25Weight::for_one_term_without_explain(
                doc_freq,
                self.total_docs,
                self.avg_fieldnorm,
            );
            terms.push(QueryTerm {
                doc_freq,
                weight,
                infos,
            });
        }
        terms
    }

    fn accumulate(&self, scratch: &mut Scratch, terms: &[QueryTerm]) {
        for term in terms {
            for (segment_idx, segment) in self.segments.iter().enumerate() {
                let Some(info) = &term.infos[segment_idx] else {
                    continue;
                };
                let Ok(mut postings) = segment
                    .inverted
                    .read_block_postings_from_terminfo(info, IndexRecordOption::WithFreqs)
                else {
                    continue;
                };
                let scores = &mut scratch.scores[segment_idx];
                let touched = &mut scratch.touched[segment_idx];
                while postings.block_len() > 0 {
                    for (&doc, &freq) in postings.docs().iter().zip(postings.freqs()) {
                        let slot = &mut scores[doc as usize];
                        if *slot == 0.0 {
                            touched.push(doc);
                        }
                        *slot += term
                            .weight
                            .score(segment.fieldnorms.fieldnorm_id(doc), freq);
                    }
                    postings.advance();
                }
            }
        }
    }

    fn select(&self, scratch: &mut Scratch, k: usize, level: Level) -> Vec<Hit> {
        let candidates = &mut scratch.candidates;
        candidates.clear();
        for (segment_idx, touched) in scratch.touched.iter().enumerate() {
            let segment = &self.segments[segment_idx];
            let scores = &scratch.scores[segment_idx];
            for &doc in touched {
                if segment.alive.as_ref().is_some_and(|a| a.is_deleted(doc)) {
                    continue;
                }
                candidates.push(Candidate {
                    score: scores[doc as usize],
                    segment: segment_idx as u32,
                    doc,
                });
            }
        }
        // Take the best `want` chunks (with every chunk tied at the boundary), resolve their keys,
        // and widen when, at the document level, several of them belong to one document.
        let mut want = k;
        loop {
            let n_candidates = candidates.len();
            let pool = self.top_candidates(candidates, want);
            let exhausted = pool.len() == n_candidates;
            let hits = self.rank(pool, level);
            if hits.len() >= k || exhausted {
                return truncated(hits, k);
            }
            want = want.saturating_mul(4);
        }
    }

    /// MaxScore for queries with long posting lists ([`crate::maxscore`]). The pool keeps every
    /// chunk that scored at least the `want`-th best when it was met, ties included, with exact
    /// scores, so the final order is the same total order as the exhaustive path.
    fn search_pruned(
        &self,
        scratch: &mut Scratch,
        terms: &[QueryTerm],
        k: usize,
        level: Level,
    ) -> Vec<Hit> {
        let mut want = k;
        loop {
            let pool = &mut scratch.candidates;
            pool.clear();
            let mut top = TopScores::new(want);
            for (segment_idx, segment) in self.segments.iter().enumerate() {
                let cursors: Vec<TermCursor> = terms
                    .iter()
                    .enumerate()
                    .filter_map(|(query_pos, term)| {
                        let info = term.infos[segment_idx].as_ref()?;
                        let postings = segment
                            .inverted
                            .read_postings_from_terminfo(info, IndexRecordOption::WithFreqs)
                            .ok()?;
                        Some(TermCursor {
                            postings,
                            weight: &term.weight,
                            query_pos,
                        })
                    })
                    .collect();
                maxscore::score_segment(
                    cursors,
                    terms.len(),
                    &segment.fieldnorms,
                    segment.alive.as_ref(),
                    &mut top,
                    |doc, score| {
                        pool.push(Candidate {
                            score,
                            segment: segment_idx as u32,
                            doc,
                        })
                    },
                );
            }
            let exhausted = top.is_short();
            let pool = self.top_candidates(pool, want);
            let hits = self.rank(pool, level);
            if hits.len() >= k || exhausted {
                return truncated(hits, k);
            }
            want = want.saturating_mul(4);
        }
    }

    /// Resolves candidates to hits in the total ranking order, each document once at the
    /// document level.
    fn rank(&self, pool: &[Candidate], level: Level) -> Vec<Hit> {
        let mut hits: Vec<Hit> = pool.iter().map(|c| self.hit(c)).collect();
        hits.sort_by(|a, b| self.compare(a, b));
        if level == Level::Doc {
            let mut seen = std::collections::HashSet::with_capacity(hits.len());
            hits.retain(|h| seen.insert(h.doc_ord));
        }
        hits
    }

    /// The `want` highest-scoring candidates plus any tied with the last of them.
    fn top_candidates<'c>(&self, candidates: &'c mut [Candidate], want: usize) -> &'c [Candidate] {
        if candidates.len() <= want {
            return candidates;
        }
        let by_score_desc = |a: &Candidate, b: &Candidate| b.score.total_cmp(&a.score);
        candidates.select_nth_unstable_by(want - 1, by_score_desc);
        let threshold = candidates[want - 1].score;
        let (_, rest) = candidates.split_at_mut(want);
        // Move ties with the threshold from the tail up to the front of the tail.
        let mut n_ties = 0;
        for i in 0..rest.len() {
            if rest[i].score == threshold {
                rest.swap(i, n_ties);
                n_ties += 1;
            }
        }
        &candidates[..want + n_ties]
    }

    fn hit(&self, c: &Candidate) -> Hit {
        let segment = &self.segments[c.segment as usize];
        Hit {
            score: c.score,
            doc_ord: segment.doc_ord.first(c.doc).unwrap_or_default() as u32,
            chunk_n: segment.chunk_n.first(c.doc).unwrap_or_default() as u32,
            address: DocAddress::new(c.segment, c.doc),
        }
    }

    fn compare(&self, a: &Hit, b: &Hit) -> Ordering {
        b.score
            .total_cmp(&a.score)
            .then_with(|| {
                if a.doc_ord == b.doc_ord {
                    Ordering::Equal
                } else {
                    self.doc_ids[b.doc_ord as usize].cmp(&self.doc_ids[a.doc_ord as usize])
                }
            })
            .then_with(|| a.chunk_n.cmp(&b.chunk_n))
    }
}

fn truncated(mut hits: Vec<Hit>, k: usize) -> Vec<Hit> {
    hits.truncate(k);
    hits
}

fn read_doc_table(path: &Path) -> Result<Vec<String>, IndexError> {
    let io_err = |source| IndexError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io_err)?;
    let mut ids = Vec::new();
    for (n, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(io_err)?;
        let id: String = serde_json::from_str(&line).map_err(|e| IndexError::BadManifest {
            path: path.to_path_buf(),
            message: format!("line {}: {e}", n + 1),
        })?;
        ids.push(id);
    }
    Ok(ids)
}

/// Where one chunk lives: its document's corpus order, its number within the document, and its
/// tantivy address (valid for the [`Bm25Index`] it came from).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkPosition {
    pub doc_ord: u32,
    pub chunk_n: u32,
    pub address: DocAddress,
}

impl ChunkPosition {
    /// This chunk as a hit scored `score`, to use with [`Bm25Index::doc_id`],
    /// [`Bm25Index::chunk_id`] and [`Bm25Index::chunk_text`].
    pub fn hit(self, score: f32) -> Hit {
        Hit {
            score,
            doc_ord: self.doc_ord,
            chunk_n: self.chunk_n,
            address: self.address,
        }
    }
}

/// One chunk of an index with its stored text.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredChunk {
    /// Corpus order of the document.
    pub doc_ord: u32,
    pub doc_id: String,
    /// Chunk number within the document.
    pub chunk_n: u32,
    /// `{doc_id}#{n}`.
    pub chunk_id: String,
    pub text: String,
    /// Where the chunk lives in tantivy.
    pub address: DocAddress,
}

impl StoredChunk {
    pub fn position(&self) -> ChunkPosition {
        ChunkPosition {
            doc_ord: self.doc_ord,
            chunk_n: self.chunk_n,
            address: self.address,
        }
    }
}

impl Bm25Index {
    /// Every chunk's position, ordered by document (corpus order), then chunk number. The order
    /// does not depend on tantivy's segment layout, so row n of anything computed over the
    /// chunks (embeddings) names the same chunk in every build of the same corpus and chunking.
    /// Reads only fast fields: 16 bytes per chunk, no stored text.
    pub fn chunk_positions(&self) -> Vec<ChunkPosition> {
        let mut positions = Vec::with_capacity(self.total_docs as usize);
        for (segment_idx, segment) in self.segments.iter().enumerate() {
            for doc in 0..segment.max_doc {
                if segment.alive.as_ref().is_some_and(|a| a.is_deleted(doc)) {
                    continue;
                }
                positions.push(ChunkPosition {
                    doc_ord: segment.doc_ord.first(doc).unwrap_or_default() as u32,
                    chunk_n: segment.chunk_n.first(doc).unwrap_or_default() as u32,
                    address: DocAddress::new(segment_idx as u32, doc),
                });
            }
        }
        // (doc_ord, chunk_n) is unique in an index built by `build_index`; the address only
        // keeps the order total should it not be.
        positions.sort_unstable_by_key(|p| {
            (
                p.doc_ord,
                p.chunk_n,
                p.address.segment_ord,
                p.address.doc_id,
            )
        });
        positions
    }

    /// Every chunk with its stored text, in the order of [`Bm25Index::chunk_positions`]. Texts
    /// are read one at a time as the iterator advances; only the positions are held up front.
    pub fn chunks(&self) -> impl Iterator<Item = Result<StoredChunk, IndexError>> + '_ {
        self.chunk_positions()
            .into_iter()
            .map(move |position| self.stored_chunk(position))
    }

    /// Every chunk of the documents `doc_ids` with its stored text, in the order of
    /// [`Bm25Index::chunk_positions`]; ids the index does not have are skipped. Reads the
    /// stored text of those chunks only.
    pub fn chunks_of(&self, doc_ids: &HashSet<&str>) -> Result<Vec<StoredChunk>, IndexError> {
        let ords: HashSet<u32> = self
            .doc_ids
            .iter()
            .enumerate()
            .filter(|(_, id)| doc_ids.contains(id.as_str()))
            .map(|(ord, _)| ord as u32)
            .collect();
        self.chunk_positions()
            .into_iter()
            .filter(|position| ords.contains(&position.doc_ord))
            .map(|position| self.stored_chunk(position))
            .collect()
    }

    fn stored_chunk(&self, position: ChunkPosition) -> Result<StoredChunk, IndexError> {
        let hit = position.hit(0.0);
        Ok(StoredChunk {
            doc_ord: position.doc_ord,
            doc_id: self.doc_id(&hit).to_string(),
            chunk_n: position.chunk_n,
            chunk_id: self.chunk_id(&hit),
            text: self.chunk_text(&hit)?,
            address: position.address,
        })
    }

    /// The id of the document at corpus position `doc_ord`.
    ///
    /// # Panics
    /// If `doc_ord` is not below [`Bm25Index::n_documents`].
    pub fn doc_id_at(&self, doc_ord: u32) -> &str {
        &self.doc_ids[doc_ord as usize]
    }
}
