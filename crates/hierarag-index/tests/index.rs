//! Index building and search against tantivy's own BM25 on real text.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use hierarag_corpus::{ChunkParams, CorpusSpec, OnError};
use hierarag_index::{
    Bm25Index, BuildOptions, BuildOutcome, IndexError, Level, build_index, english_analyzer,
};
use proptest::prelude::*;
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::IndexRecordOption;
use tantivy::{Index, Term};

const SENTENCES: &[&str] = &[
    "The Apollo program landed twelve astronauts on the Moon between 1969 and 1972.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "The Treaty of Westphalia ended the Thirty Years' War in 1648.",
    "Jazz emerged in New Orleans in the late nineteenth century, mixing blues and ragtime.",
    "A prime number has exactly two distinct positive divisors: one and itself.",
    "The Amazon river discharges more water than any other river in the world.",
    "Kubrick directed 2001: A Space Odyssey, co-written with Arthur C. Clarke.",
    "Mitochondria are the organelles where cellular respiration produces ATP.",
    "The printing press of Gutenberg spread literacy across Europe after 1450.",
    "Plate tectonics explains earthquakes, volcanoes and the drift of continents.",
    "Shakespeare wrote Hamlet, a tragedy about the prince of Denmark.",
    "The speed of light in vacuum is about 299,792 kilometres per second.",
    "PCI/acpi-info reports the power states of devices on the PCI bus.",
    "Rice is the staple food for more than half of the world's population.",
    "The Great Wall of China was built over many dynasties to repel invasions.",
    "Neural networks learn representations by adjusting weights with gradient descent.",
];

/// A deterministic corpus: documents of 3 to 60 sentences drawn by a fixed recurrence.
fn write_corpus(dir: &Path, n_docs: usize) -> std::path::PathBuf {
    let path = dir.join("corpus.jsonl");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for d in 0..n_docs {
        let n_sentences = 3 + (next() % 58) as usize;
        let text: Vec<&str> = (0..n_sentences)
            .map(|_| SENTENCES[(next() % SENTENCES.len() as u64) as usize])
            .collect();
        let line = serde_json::json!({"id": format!("doc{d:04}"), "text": text.join(" ")});
        writeln!(file, "{line}").unwrap();
    }
    file.flush().unwrap();
    path
}

fn small_chunks() -> BuildOptions {
    BuildOptions {
        chunking: ChunkParams {
            size: 64,
            overlap: 8,
        },
        // Two threads with the smallest heap make several segments, as on a real corpus.
        threads: 2,
        writer_heap_bytes: 30_000_000,
        ..BuildOptions::default()
    }
}

fn build(dir: &Path, n_docs: usize) -> (CorpusSpec, std::path::PathBuf) {
    let corpus = write_corpus(dir, n_docs);
    let spec = CorpusSpec::new([corpus.to_string_lossy().into_owned()]);
    let out = dir.join("index");
    build_index(&spec, &out, &small_chunks(), &mut |_| {}).unwrap();
    (spec, out)
}

/// Every matching chunk with tantivy's own scoring of a BooleanQuery of TermQuerys.
fn tantivy_scores(index_dir: &Path, query: &str) -> HashMap<(String, u64), f32> {
    let index = Index::open_in_dir(index_dir).unwrap();
    index
        .tokenizers()
        .register(hierarag_index::ANALYZER_NAME, english_analyzer());
    let schema = index.schema();
    let text = schema.get_field("text").unwrap();
    let doc_id = schema.get_field("doc_id").unwrap();
    let mut analyzer = english_analyzer();
    let clauses: Vec<(Occur, Box<dyn Query>)> = hierarag_index::analyze(&mut analyzer, query)
        .into_iter()
        .map(|t| {
            let q: Box<dyn Query> = Box::new(TermQuery::new(
                Term::from_field_text(text, &t),
                IndexRecordOption::WithFreqs,
            ));
            (Occur::Should, q)
        })
        .collect();
    let reader = index.reader().unwrap();
    let searcher = reader.searcher();
    assert!(
        searcher.segment_readers().len() > 1,
        "the test needs several segments"
    );
    let top = searcher
        .search(
            &BooleanQuery::new(clauses),
            &TopDocs::with_limit(100_000).order_by_score(),
        )
        .unwrap();
    top.into_iter()
        .map(|(score, address)| {
            use tantivy::schema::Value;
            let doc: tantivy::TantivyDocument = searcher.doc(address).unwrap();
            let id = doc.get_first(doc_id).unwrap().as_str().unwrap().to_string();
            // chunk_n is a fast field only; recover it from the segment's column.
            let n = searcher
                .segment_reader(address.segment_ord)
                .fast_fields()
                .u64("chunk_n")
                .unwrap()
                .first(address.doc_id)
                .unwrap();
            ((id, n), score)
        })
        .collect()
}

fn our_scores(index: &Bm25Index, query: &str, k: usize) -> Vec<((String, u64), f32)> {
    let mut scratch = index.scratch();
    index
        .search(&mut scratch, query, k, Level::Chunk)
        .iter()
        .map(|h| ((index.doc_id(h).to_string(), u64::from(h.chunk_n)), h.score))
        .collect()
}

#[test]
fn scores_equal_tantivy_boolean_query_on_a_multi_segment_index() {
    let dir = tempfile::tempdir().unwrap();
    let (_, out) = build(dir.path(), 400);
    let index = Bm25Index::open(&out).unwrap();
    for query in [
        "Who landed astronauts on the Moon?",
        "energy energy light",
        "PCI/acpi-info power states",
        "the of and",
        "zebra quasar",
        "river world population rice",
    ] {
        let ours = our_scores(&index, query, 1_000_000);
        let theirs = tantivy_scores(&out, query);
        assert_eq!(
            ours.len(),
            theirs.len(),
            "query {query:?}: same matching chunks"
        );
        for (key, score) in &ours {
            let expected = theirs[key];
            assert!(
                (score - expected).abs() <= 1e-5 * expected.abs().max(1.0),
                "query {query:?} chunk {key:?}: ours {score} tantivy {expected}"
            );
        }
    }
}

#[test]
fn pruned_and_exhaustive_paths_give_the_same_rankings() {
    let dir = tempfile::tempdir().unwrap();
    let (_, out) = build(dir.path(), 400);
    let exhaustive = Bm25Index::open(&out)
        .unwrap()
        .with_pruning_threshold(u64::MAX);
    let pruned = Bm25Index::open(&out).unwrap().with_pruning_threshold(0);
    let mut s1 = exhaustive.scratch();
    let mut s2 = pruned.scratch();
    for query in [
        "Who landed astronauts on the Moon?",
        "energy energy light",
        "river world population rice prime number",
        "Kubrick",
        "the of and",
        "zebra",
    ] {
        for level in [Level::Chunk, Level::Doc] {
            for k in [1, 10, 37] {
                let a = exhaustive.search(&mut s1, query, k, level);
                let b = pruned.search(&mut s2, query, k, level);
                // Bit-identical: the pruned path rescores its candidates the exhaustive way.
                assert_eq!(a, b, "{query:?} {level:?} k={k}");
            }
        }
    }
}

#[test]
fn rankings_follow_score_then_doc_id_descending_then_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let (_, out) = build(dir.path(), 300);
    let index = Bm25Index::open(&out).unwrap();
    let hits = our_scores(&index, "prime number divisors", 1_000_000);
    assert!(hits.len() > 20);
    for pair in hits.windows(2) {
        let ((doc_a, n_a), s_a) = &pair[0];
        let ((doc_b, n_b), s_b) = &pair[1];
        assert!(s_a >= s_b, "scores descend");
        if s_a == s_b {
            assert!(doc_a > doc_b || (doc_a == doc_b && n_a < n_b), "{pair:?}");
        }
    }
}

#[test]
fn document_level_keeps_each_document_once_at_its_best_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let (_, out) = build(dir.path(), 300);
    let index = Bm25Index::open(&out).unwrap();
    let mut scratch = index.scratch();
    let query = "Gutenberg printing press literacy";
    let chunks = index.search(&mut scratch, query, 1_000_000, Level::Chunk);
    let docs = index.search(&mut scratch, query, 25, Level::Doc);
    assert_eq!(docs.len(), 25);
    let mut expected = Vec::new();
    for hit in &chunks {
        if !expected
            .iter()
            .any(|h: &hierarag_index::Hit| h.doc_ord == hit.doc_ord)
        {
            expected.push(*hit);
        }
    }
    expected.truncate(25);
    assert_eq!(docs, expected);
}

#[test]
fn top_k_is_a_prefix_of_the_full_ranking() {
    let dir = tempfile::tempdir().unwrap();
    let (_, out) = build(dir.path(), 200);
    let index = Bm25Index::open(&out).unwrap();
    let mut scratch = index.scratch();
    for level in [Level::Chunk, Level::Doc] {
        let all = index.search(&mut scratch, "jazz blues New Orleans", 1_000_000, level);
        for k in [1, 3, 10, 57] {
            let top = index.search(&mut scratch, "jazz blues New Orleans", k, level);
            assert_eq!(top, all[..k.min(all.len())], "k = {k}, {level:?}");
        }
    }
}

#[test]
fn rebuilding_with_other_chunking_is_refused_and_same_corpus_is_up_to_date() {
    let dir = tempfile::tempdir().unwrap();
    let (spec, out) = build(dir.path(), 50);
    let again = build_index(&spec, &out, &small_chunks(), &mut |_| {}).unwrap();
    assert!(matches!(again, BuildOutcome::UpToDate { .. }));

    let other = BuildOptions {
        chunking: ChunkParams {
            size: 512,
            overlap: 0,
        },
        ..small_chunks()
    };
    let err = build_index(&spec, &out, &other, &mut |_| {}).unwrap_err();
    assert!(matches!(err, IndexError::ParamsMismatch { .. }));
    let message = err.to_string();
    assert!(
        message.contains("chunk size 64 words, overlap 8"),
        "{message}"
    );
    assert!(
        message.contains("chunk size 512 words, overlap 0"),
        "{message}"
    );
    assert!(message.contains("--overwrite"), "{message}");

    let rebuilt = build_index(
        &spec,
        &out,
        &BuildOptions {
            overwrite: true,
            ..other
        },
        &mut |_| {},
    )
    .unwrap();
    assert!(matches!(rebuilt, BuildOutcome::Built { .. }));
    assert_eq!(rebuilt.manifest().chunking.size, 512);
}

#[test]
fn a_changed_corpus_is_not_mistaken_for_the_indexed_one() {
    let dir = tempfile::tempdir().unwrap();
    let (spec, out) = build(dir.path(), 50);
    let corpus = Path::new(&spec.inputs[0]);
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(corpus)
        .unwrap();
    writeln!(
        file,
        r#"{{"id":"extra","text":"A new document about glaciers."}}"#
    )
    .unwrap();
    let err = build_index(&spec, &out, &small_chunks(), &mut |_| {}).unwrap_err();
    assert!(matches!(err, IndexError::CorpusChanged { .. }), "{err}");
}

#[test]
fn an_interrupted_build_is_never_opened_and_is_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let (spec, out) = build(dir.path(), 50);
    // Simulate a crash before the final manifest: the build marks itself incomplete first.
    let manifest_path = out.join("manifest.json");
    let text = std::fs::read_to_string(&manifest_path).unwrap();
    std::fs::write(
        &manifest_path,
        text.replace("\"complete\": true", "\"complete\": false"),
    )
    .unwrap();
    let err = Bm25Index::open(&out).unwrap_err();
    assert!(err.to_string().contains("did not finish"), "{err}");
    let outcome = build_index(&spec, &out, &small_chunks(), &mut |_| {}).unwrap();
    assert!(matches!(outcome, BuildOutcome::Built { .. }));
    Bm25Index::open(&out).unwrap();
}

#[test]
fn counts_match_the_chunker() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = write_corpus(dir.path(), 120);
    let params = small_chunks().chunking;
    let mut expected_chunks = 0u64;
    for line in std::fs::read_to_string(&corpus).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        expected_chunks +=
            hierarag_corpus::chunks(v["text"].as_str().unwrap(), &params).count() as u64;
    }
    let spec = CorpusSpec::new([corpus.to_string_lossy().into_owned()]);
    let out = dir.path().join("index");
    let outcome = build_index(&spec, &out, &small_chunks(), &mut |_| {}).unwrap();
    let counts = &outcome.manifest().counts;
    assert_eq!(counts.documents, 120);
    assert_eq!(counts.chunks, expected_chunks);
    let index = Bm25Index::open(&out).unwrap();
    assert_eq!(index.n_chunks(), expected_chunks);
    assert_eq!(index.n_documents(), 120);
}

#[test]
fn chunk_text_is_the_stored_original_slice() {
    let dir = tempfile::tempdir().unwrap();
    let (_, out) = build(dir.path(), 30);
    let index = Bm25Index::open(&out).unwrap();
    let mut scratch = index.scratch();
    let hit = index.search(&mut scratch, "Westphalia", 1, Level::Chunk)[0];
    let text = index.chunk_text(&hit).unwrap();
    assert!(text.contains("Westphalia"));
    assert!(text.split_whitespace().count() <= 64);
}

#[test]
fn chunks_come_in_corpus_order_whatever_the_segment_layout() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = write_corpus(dir.path(), 150);
    let params = small_chunks().chunking;
    let mut expected = Vec::new();
    for (doc_ord, line) in std::fs::read_to_string(&corpus)
        .unwrap()
        .lines()
        .enumerate()
    {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let doc_id = v["id"].as_str().unwrap().to_string();
        for chunk in hierarag_corpus::chunks(v["text"].as_str().unwrap(), &params) {
            expected.push((
                doc_ord as u32,
                doc_id.clone(),
                chunk.n as u32,
                hierarag_corpus::chunk_id(&doc_id, chunk.n),
                chunk.text.to_string(),
            ));
        }
    }
    let spec = CorpusSpec::new([corpus.to_string_lossy().into_owned()]);
    // Several segments (two writer threads) and one segment must list the chunks alike.
    for (name, threads) in [("multi", 2), ("single", 1)] {
        let out = dir.path().join(name);
        let options = BuildOptions {
            threads,
            ..small_chunks()
        };
        build_index(&spec, &out, &options, &mut |_| {}).unwrap();
        let index = Bm25Index::open(&out).unwrap();
        let chunks: Vec<_> = index.chunks().map(Result::unwrap).collect();
        let got: Vec<_> = chunks
            .iter()
            .map(|c| {
                (
                    c.doc_ord,
                    c.doc_id.clone(),
                    c.chunk_n,
                    c.chunk_id.clone(),
                    c.text.clone(),
                )
            })
            .collect();
        assert_eq!(got, expected, "{name}-segment index");
        // The chunks of some documents are those documents' rows of the whole list.
        let (first, last) = (
            expected[0].1.clone(),
            expected[expected.len() - 1].1.clone(),
        );
        let wanted: std::collections::HashSet<&str> =
            [first.as_str(), last.as_str(), "no-such-document"].into();
        let some: Vec<_> = index
            .chunks_of(&wanted)
            .unwrap()
            .into_iter()
            .map(|c| (c.chunk_id, c.text))
            .collect();
        let of_them: Vec<_> = expected
            .iter()
            .filter(|e| e.1 == first || e.1 == last)
            .map(|e| (e.3.clone(), e.4.clone()))
            .collect();
        assert!(of_them.len() >= 2);
        assert_eq!(some, of_them, "{name}-segment index");
        let positions = index.chunk_positions();
        assert_eq!(positions.len() as u64, index.n_chunks());
        for (chunk, position) in chunks.iter().zip(&positions) {
            assert_eq!(chunk.position(), *position);
            let hit = position.hit(1.5);
            assert_eq!(index.chunk_id(&hit), chunk.chunk_id);
            assert_eq!(index.doc_id_at(position.doc_ord), chunk.doc_id);
        }
    }
    let searcher_segments = tantivy::Index::open_in_dir(dir.path().join("multi"))
        .unwrap()
        .searchable_segment_ids()
        .unwrap()
        .len();
    assert!(searcher_segments > 1, "the test needs several segments");
}

/// Regression: an empty input ended in "the corpus has no document to index", naming nothing.
/// Now it is named under both policies: under fail by the reader's error, under skip by the
/// index error, which lists what was skipped and where the list is.
#[test]
fn empty_corpus_file_or_directory_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let empty_jsonl = dir.path().join("empty.jsonl");
    std::fs::write(&empty_jsonl, "\n\n").unwrap();
    let empty_dir = dir.path().join("notes");
    std::fs::create_dir(&empty_dir).unwrap();
    for (input, what) in [
        (&empty_jsonl, "the file holds no record"),
        (&empty_dir, "the directory holds no .txt or .md file"),
    ] {
        let spec = CorpusSpec::new([input.to_string_lossy().into_owned()]);
        let named = format!("{}: empty input: {what}", input.display());
        for on_error in [OnError::Fail, OnError::Skip] {
            let out = dir.path().join(format!("index-{on_error:?}"));
            let options = BuildOptions {
                on_error,
                overwrite: true,
                ..small_chunks()
            };
            let message = build_index(&spec, &out, &options, &mut |_| {})
                .unwrap_err()
                .to_string();
            assert!(message.contains(&named), "{on_error:?}: {message}");
            if on_error == OnError::Skip {
                let listed = format!("listed in {}", out.join("skipped.jsonl").display());
                assert!(message.contains(&listed), "{message}");
                assert!(
                    message.starts_with(&format!(
                        "the corpus {} has no document to index: ",
                        input.display()
                    )),
                    "{message}"
                );
            }
        }
    }
}

/// Regression: a truncated Parquet file given alone under `--on-error skip` ended with "the
/// corpus has no document to index" and no reason anywhere.
#[test]
fn unreadable_parquet_file_alone_under_skip_is_named_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    // A Parquet file cut short after its leading magic: no footer.
    let shard = dir.path().join("000_00000.parquet");
    std::fs::write(&shard, b"PAR1\x15\x04\x15\x80\x01\x15\x80\x01\x4c\x15\x02").unwrap();
    let spec = CorpusSpec::new([shard.to_string_lossy().into_owned()]);
    let out = dir.path().join("index");
    let options = BuildOptions {
        on_error: OnError::Skip,
        ..small_chunks()
    };
    let err = build_index(&spec, &out, &options, &mut |_| {}).unwrap_err();
    assert!(matches!(err, IndexError::EmptyCorpus { .. }), "{err}");
    let message = err.to_string();
    for fragment in [
        format!("{}: unreadable Parquet file: ", shard.display()),
        "1 problem, the records of 1 unreadable file lost (number unknown)".into(),
        format!("listed in {}", out.join("skipped.jsonl").display()),
    ] {
        assert!(message.contains(&fragment), "{fragment:?} not in {message}");
    }
    let listed = std::fs::read_to_string(out.join("skipped.jsonl")).unwrap();
    let record: serde_json::Value = serde_json::from_str(listed.trim()).unwrap();
    assert_eq!(record["records_lost"], serde_json::Value::Null);

    let fail = BuildOptions {
        overwrite: true,
        ..small_chunks()
    };
    let message = build_index(&spec, &out, &fail, &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(
        message.starts_with(&format!("{}: unreadable Parquet file: ", shard.display())),
        "{message}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn batch_search_equals_one_by_one(words in prop::collection::vec(
        prop::sample::select(vec!["moon", "energy", "river", "war", "jazz", "prime", "light",
                                  "wall", "the", "of", "PCI", "gradient", "zebra", "2001"]), 1..6)) {
        let index = shared_index();
        let query = words.join(" ");
        let mut scratch = index.scratch();
        let single = index.search(&mut scratch, &query, 10, Level::Doc);
        let batch = index.search_batch(&[query.as_str(), query.as_str()], 10, Level::Doc, 2, &|| {}).unwrap();
        prop_assert_eq!(&batch[0], &single);
        prop_assert_eq!(&batch[1], &single);
    }
}

fn shared_index() -> &'static Bm25Index {
    use std::sync::OnceLock;
    static INDEX: OnceLock<(tempfile::TempDir, Bm25Index)> = OnceLock::new();
    &INDEX
        .get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            let (_, out) = build(dir.path(), 150);
            let index = Bm25Index::open(&out).unwrap();
            (dir, index)
        })
        .1
}

/// The Korean example corpus: twelve paragraphs of Korean Wikipedia.
fn korean_spec() -> CorpusSpec {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/korean/corpus.jsonl");
    CorpusSpec::new([corpus.to_string_lossy().into_owned()])
}

fn korean_options(language: &str) -> BuildOptions {
    BuildOptions {
        chunking: ChunkParams {
            size: 24,
            overlap: 0,
        },
        threads: 2,
        writer_heap_bytes: 30_000_000,
        language: hierarag_lang::Language::from_code(language).unwrap(),
        ..BuildOptions::default()
    }
}

#[test]
fn a_korean_index_cuts_bigrams_and_scores_equal_tantivy_with_its_analyzer() {
    let dir = tempfile::tempdir().unwrap();
    let spec = korean_spec();
    let (ko_dir, en_dir) = (dir.path().join("ko"), dir.path().join("en"));
    let built = build_index(&spec, &ko_dir, &korean_options("ko"), &mut |_| {}).unwrap();
    let BuildOutcome::Built {
        language_mismatch, ..
    } = &built
    else {
        panic!("a new index")
    };
    assert_eq!(*language_mismatch, None);
    assert_eq!(built.manifest().language.code(), "ko");
    assert_eq!(built.manifest().analyzer.name, "hierarag_ko");
    // The same corpus as English: built, with a warning that suggests Korean.
    let english = build_index(&spec, &en_dir, &korean_options("en"), &mut |_| {}).unwrap();
    let BuildOutcome::Built {
        language_mismatch: Some(mismatch),
        ..
    } = &english
    else {
        panic!("a warning for Korean text indexed as English")
    };
    assert_eq!(mismatch.suggestion.map(|l| l.code()), Some("ko"));
    assert!(
        mismatch.share < 0.1 && mismatch.dominant_share > 0.9,
        "{mismatch}"
    );

    let korean = Bm25Index::open(&ko_dir).unwrap();
    let english = Bm25Index::open(&en_dir).unwrap();
    let top = |index: &Bm25Index, query: &str| -> Option<String> {
        let mut scratch = index.scratch();
        index
            .search(&mut scratch, query, 1, Level::Doc)
            .first()
            .map(|hit| index.doc_id(hit).to_string())
    };
    // Query words with other particles than the document's (블루스는 / 블루스(Blues)는, 고원이
    // / 고원은): bigrams find the paragraph, whole words find nothing of it.
    for (query, doc) in [
        ("블루스는 어디에서 생겨났나", "kowiki-블루스"),
        ("금강산에는 어떤 이름들이 있나", "kowiki-금강산"),
    ] {
        assert_eq!(top(&korean, query).as_deref(), Some(doc), "{query}");
        assert_ne!(top(&english, query).as_deref(), Some(doc), "{query}");
    }

    // Scores equal tantivy's BooleanQuery of TermQuerys under the same analyzer.
    let index = Index::open_in_dir(&ko_dir).unwrap();
    let language = hierarag_lang::Language::from_code("ko").unwrap();
    index.tokenizers().register(
        &hierarag_index::analyzer_name(language),
        hierarag_index::analyzer_for(language),
    );
    let text = index.schema().get_field("text").unwrap();
    let searcher = index.reader().unwrap().searcher();
    for query in ["정사각형 체스보드", "티베트 고원의 형성", "NTSC 방송 방식"] {
        let terms = hierarag_index::analyze(&mut hierarag_index::analyzer_for(language), query);
        assert!(terms.len() >= 3, "{terms:?}");
        let clauses: Vec<(Occur, Box<dyn Query>)> = terms
            .iter()
            .map(|t| {
                let q: Box<dyn Query> = Box::new(TermQuery::new(
                    Term::from_field_text(text, t),
                    IndexRecordOption::WithFreqs,
                ));
                (Occur::Should, q)
            })
            .collect();
        let theirs = searcher
            .search(
                &BooleanQuery::new(clauses),
                &TopDocs::with_limit(10_000).order_by_score(),
            )
            .unwrap();
        let ours = our_scores(&korean, query, 10_000);
        assert_eq!(ours.len(), theirs.len(), "{query}");
        assert!(!ours.is_empty(), "{query}");
        let mut ours: Vec<f32> = ours.iter().map(|(_, score)| *score).collect();
        let mut theirs: Vec<f32> = theirs.iter().map(|(score, _)| *score).collect();
        ours.sort_by(f32::total_cmp);
        theirs.sort_by(f32::total_cmp);
        for (a, b) in ours.iter().zip(&theirs) {
            assert!(
                (a - b).abs() <= 1e-5 * b.abs().max(1.0),
                "{query}: {a} vs {b}"
            );
        }
    }

    // Reusing the index for another language is refused; --overwrite rebuilds it.
    let error = build_index(&spec, &ko_dir, &korean_options("en"), &mut |_| {}).unwrap_err();
    assert!(
        matches!(error, IndexError::LanguageMismatch { .. }),
        "{error}"
    );
    let message = error.to_string();
    assert!(
        message.contains("built for language ko (Korean), but en (English)"),
        "{message}"
    );
    assert!(message.contains("--overwrite"), "{message}");
}

#[test]
fn an_index_written_before_languages_existed_opens_as_english() {
    let dir = tempfile::tempdir().unwrap();
    let (_, out) = build(dir.path(), 20);
    let path = out.join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(manifest["language"], "en");
    manifest.as_object_mut().unwrap().remove("language");
    std::fs::write(&path, serde_json::to_vec_pretty(&manifest).unwrap()).unwrap();
    let index = Bm25Index::open(&out).unwrap();
    assert!(index.manifest().language.is_english());
    assert!(!our_scores(&index, "Moon astronauts", 5).is_empty());
}
