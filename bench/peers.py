#!/usr/bin/env python3
"""Peer BM25 engines for the HieraRAG benchmark (bench/run.sh).

One process per engine per corpus scale:

    python bench/peers.py --engine bm25s --corpus C.jsonl --queries Q.jsonl \
        --workdir DIR --json-out R.json [--index-reps N] [--query-reps N] [--rss-cap-mb MB]

The corpus is a JSONL file or Parquet (a .parquet file, a quoted glob, or a directory of
shards; columns id and text), read whole into memory before any clock starts; except that PISA
streams Parquet input batch by batch inside its timed indexing call (as `hierarag index` reads
its shards), so its memory is PISA's own and not a Python copy of the corpus (3.5 GB at 1 M
FineWeb-shaped documents). Reading Parquet is about 1 % of PISA's indexing time.

Timed sections (time.perf_counter):
  * indexing: only the engine's indexing call(s), on documents already read
    from the JSONL file into memory (JSON parsing is not timed);
  * queries: query analysis + top-10 retrieval of all queries on one thread,
    with query strings already in memory; mapping internal doc numbers to ids
    (bm25s) happens after the clock stops; for PISA the ids come back inside
    the timed retriever call, as part of its DataFrame.

bm25s (numba backend)
  index  = bm25s.tokenize(texts, stopwords='en', stemmer=PyStemmer english)
           + BM25(k1=1.2, b=0.75, method='lucene', backend='numba').index(...)
           (single-threaded: bm25s indexing is Python/NumPy plus a serial
           numba CSC builder, JIT-compiled before the clock starts)
  query  = bm25s.tokenize(queries, same options, return_ids=False)
           + retrieve(k=10, n_threads=1, backend_selection='numba')
           (the serial numba kernel; NUMBA_NUM_THREADS=1 is also set by the
           driver).  Numba JIT is warmed up with a few queries first.  The
           variant with return_ids=True (the README's usage, which goes
           through a Tokenized object) is timed too and the faster is kept.

PISA (pyterrier-pisa)
  index  = PisaIndex(path, stemmer='porter2', threads=1).index(docs)
           -> forward index + inversion (PISA runs threads+1 = 2 TBB workers)
           + the first .bm25(...) call, which builds the block-max (wand)
           data and compresses the index (block_simdbp); both timed
           separately and reported separately and together.
  query  = PisaRetrieve(bm25 k1=1.2 b=0.75, block_max_maxscore,
           num_results=10, threads=1).transform(DataFrame of all queries)
           -> tokenisation, porter2 stemming, stopword removal and search
           in C++, results built into a pandas DataFrame (with docnos).
           Stopwords: PISA's default 'terrier' list (733 words) and, for
           analyzer parity with hierarag/bm25s (Lucene's 33 words), 'lucene'.
"""
import argparse
import gc
import json
import os
import re
import shutil
import statistics
import sys
import time

COPY_SUFFIX = re.compile(r"__c\d+$")


def base_id(doc_id):
    return COPY_SUFFIX.sub("", doc_id)


def is_parquet(path):
    return path.endswith(".parquet") or "*" in path or os.path.isdir(path)


def parquet_batches(path):
    """(ids, texts, text bytes) of each batch of Parquet files (a .parquet path, a glob of them, or
    a directory holding them; columns id and text, files in name order)."""
    import glob
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    files = sorted(glob.glob(os.path.join(path, "*.parquet")) if os.path.isdir(path) else glob.glob(path))
    if not files:
        sys.exit(f"no Parquet files at {path}")
    for fn in files:
        pf = pq.ParquetFile(fn)
        for batch in pf.iter_batches(batch_size=65536, columns=["id", "text"]):
            text = batch.column(1)
            yield (batch.column(0).to_pylist(), text.to_pylist(),
                   pc.sum(pc.binary_length(text.cast("binary"))).as_py() or 0)


def read_corpus(path):
    """ids and texts of a JSONL file, or of Parquet files (see parquet_batches)."""
    if is_parquet(path):
        ids, texts = [], []
        for bi, bt, _ in parquet_batches(path):
            ids.extend(bi)
            texts.extend(bt)
        return ids, texts
    ids, texts = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            ids.append(d["id"])
            texts.append(d["text"])
    return ids, texts


def rss_watchdog(cap_mb):
    """Exit (status 3) as soon as this process's resident memory passes cap_mb, so that a peer
    that does not fit stops itself instead of pushing the machine into the OOM killer."""
    import threading

    def watch():
        while True:
            try:
                with open("/proc/self/status") as f:
                    for line in f:
                        if line.startswith("VmRSS:"):
                            kb = int(line.split()[1])
                            if kb > cap_mb * 1024:
                                print(f"RSS cap exceeded: {kb / 1024:.0f} MB > {cap_mb} MB", file=sys.stderr,
                                      flush=True)
                                os._exit(3)
                            break
            except (OSError, ValueError):
                pass
            time.sleep(0.2)

    threading.Thread(target=watch, daemon=True).start()


def read_queries(path):
    qids, qtexts = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            qids.append(d["id"])
            qtexts.append(d["query"])
    return qids, qtexts


def top1_own(qids, top1_ids):
    """Fraction of queries whose first result is the query's own article
    (any copy of it, at scales > 1)."""
    hits = sum(1 for q, d in zip(qids, top1_ids) if d is not None and base_id(d) == q)
    return hits / len(qids)


def top10_own(qids, top_ids):
    """Fraction of queries whose own article (any copy) is among their results (the top 10)."""
    hits = sum(1 for q, ds in zip(qids, top_ids) if any(base_id(d) == q for d in ds))
    return hits / len(qids)


def dist_version(name):
    try:
        from importlib.metadata import version
        return version(name)
    except Exception:
        return "?"


def median(xs):
    return statistics.median(xs) if xs else None


# --------------------------------------------------------------------------- bm25s
def run_bm25s(args, ids, texts, qids, qtexts, text_mb):
    import numpy as np
    import numba
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    out = {
        "engine": "bm25s-numba",
        "versions": {"bm25s": bm25s.__version__, "numba": numba.__version__,
                     "numpy": np.__version__, "PyStemmer": dist_version("PyStemmer")},
        "index_threads": 1,
        "numba_num_threads": numba.config.NUMBA_NUM_THREADS,
    }

    def new_retriever():
        r = bm25s.BM25(k1=1.2, b=0.75, method="lucene", backend="numba")
        # JIT-compile the numba CSC builder and scorer outside the timed section
        r.compile(activate_numba=True, warmup=True)
        return r

    index_times, tok_times = [], []
    retriever = None
    for _ in range(args.index_reps):
        retriever = None
        gc.collect()
        r = new_retriever()
        t0 = time.perf_counter()
        corpus_tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
        t1 = time.perf_counter()
        r.index(corpus_tokens, show_progress=False)
        t2 = time.perf_counter()
        del corpus_tokens
        index_times.append(t2 - t0)
        tok_times.append(t1 - t0)
        retriever = r
    out["index_s"] = index_times
    out["index_tokenize_s"] = tok_times
    out["index_mb_s"] = text_mb / median(index_times)

    def query_once(return_ids):
        t0 = time.perf_counter()
        q_tokens = bm25s.tokenize(qtexts, stopwords="en", stemmer=stemmer,
                                  return_ids=return_ids, show_progress=False)
        docs, scores = retriever.retrieve(q_tokens, k=10, n_threads=1,
                                          backend_selection="numba", show_progress=False)
        t1 = time.perf_counter()
        return t1 - t0, docs, scores

    # warm up numba JIT (and caches) with a few queries, both code paths
    for rid in (False, True):
        q_tokens = bm25s.tokenize(qtexts[:64], stopwords="en", stemmer=stemmer,
                                  return_ids=rid, show_progress=False)
        retriever.retrieve(q_tokens, k=10, n_threads=1, backend_selection="numba",
                           show_progress=False)

    variants = {}
    docs = scores = None
    for rid in (False, True):
        ts = []
        for _ in range(args.query_reps):
            dt, docs_v, scores_v = query_once(rid)
            ts.append(dt)
        variants["return_ids=%s" % rid] = {"query_s": ts, "qps": len(qtexts) / median(ts)}
        if docs is None:
            docs, scores = docs_v, scores_v
    best = max(variants, key=lambda k: variants[k]["qps"])
    out["query_variants"] = variants
    out["query_variant_used"] = best
    out["qps"] = variants[best]["qps"]

    # sanity check (untimed): queries with no scoring term get score 0 everywhere
    top1 = [ids[int(d[0])] if s[0] > 0 else None for d, s in zip(docs, scores)]
    out["top1_own"] = top1_own(qids, top1)
    out["top10_own"] = top10_own(qids, [[ids[int(x)] for x, y in zip(d, s) if y > 0] for d, s in zip(docs, scores)])
    out["queries_without_results"] = sum(1 for t in top1 if t is None)
    return out


# --------------------------------------------------------------------------- PISA
def run_pisa(args, ids, texts, qids, qtexts, text_mb, stream=None):
    """stream: when the corpus is Parquet, {"path": ...}; documents are then read inside the
    timed indexing call and stream["docs"], stream["text_bytes"] are filled in."""
    import pandas as pd
    import pyterrier as pt
    import pyterrier_pisa
    from pyterrier_pisa import PisaIndex, PisaRetrieve

    out = {
        "engine": "pisa",
        "versions": {"pyterrier-pisa": pyterrier_pisa.__version__, "pyterrier": pt.__version__,
                     "pandas": pd.__version__},
        "index_threads": "threads=1 (default) -> PISA forward index/inversion with threads+1 = 2 TBB workers",
        "query_algorithm": "block_max_maxscore",
        "index_encoding": "block_simdbp",
    }
    path = os.path.join(args.workdir, "pisa-index")

    def docs_iter():
        if stream is None:
            for i, t in zip(ids, texts):
                yield {"docno": i, "text": t}
            return
        stream["docs"], stream["text_bytes"] = 0, 0
        for bi, bt, nbytes in parquet_batches(stream["path"]):
            stream["docs"] += len(bi)
            stream["text_bytes"] += nbytes
            for i, t in zip(bi, bt):
                yield {"docno": i, "text": t}

    idx_times, prep_times = [], []
    index = None
    for _ in range(args.index_reps):
        if os.path.exists(path):
            shutil.rmtree(path)
        gc.collect()
        index = PisaIndex(path, text_field="text", stemmer="porter2", stops="terrier", threads=1)
        t0 = time.perf_counter()
        index.index(docs_iter())
        t1 = time.perf_counter()
        # first retriever construction builds the bmw data and compresses the index
        PisaRetrieve(index, scorer="bm25", bm25_k1=1.2, bm25_b=0.75, num_results=10, threads=1,
                     query_algorithm="block_max_maxscore")
        t2 = time.perf_counter()
        idx_times.append(t1 - t0)
        prep_times.append(t2 - t1)
    if stream is not None:
        text_mb = stream["text_bytes"] / 1e6
    out["index_s"] = idx_times
    out["compress_s"] = prep_times
    out["index_total_s"] = [a + b for a, b in zip(idx_times, prep_times)]
    out["index_mb_s"] = text_mb / median(out["index_total_s"])
    out["index_only_mb_s"] = text_mb / median(idx_times)

    topics = pd.DataFrame({"qid": qids, "query": qtexts})
    out["stop_variants"] = {}
    for stops in ("terrier", "lucene"):
        retr = PisaRetrieve(index, scorer="bm25", bm25_k1=1.2, bm25_b=0.75, num_results=10,
                            threads=1, stops=stops, query_algorithm="block_max_maxscore")
        retr.transform(topics.iloc[:64])  # warm-up (page cache, context)
        ts = []
        res = None
        for _ in range(args.query_reps):
            t0 = time.perf_counter()
            res = retr.transform(topics)
            t1 = time.perf_counter()
            ts.append(t1 - t0)
        first = res[res["rank"] == 0]
        top1 = dict(zip(first["qid"], first["docno"]))
        top1_list = [top1.get(q) for q in qids]
        top = {}
        for q, d in zip(res["qid"], res["docno"]):
            top.setdefault(q, []).append(d)
        out["stop_variants"][stops] = {
            "query_s": ts, "qps": len(qtexts) / median(ts),
            "top1_own": top1_own(qids, top1_list),
            "top10_own": top10_own(qids, [top.get(q, []) for q in qids]),
            "queries_without_results": sum(1 for t in top1_list if t is None),
        }
    out["qps"] = out["stop_variants"]["terrier"]["qps"]
    out["top1_own"] = out["stop_variants"]["terrier"]["top1_own"]
    out["top10_own"] = out["stop_variants"]["terrier"]["top10_own"]
    out["queries_without_results"] = out["stop_variants"]["terrier"]["queries_without_results"]
    out["qps_lucene_stops"] = out["stop_variants"]["lucene"]["qps"]
    out["index_disk_mb"] = sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path)
                               if os.path.isfile(os.path.join(path, f))) / 1e6
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine", required=True, choices=["bm25s", "pisa"])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--json-out", required=True)
    ap.add_argument("--index-reps", type=int, default=1)
    ap.add_argument("--query-reps", type=int, default=3)
    ap.add_argument("--rss-cap-mb", type=int, default=0,
                    help="exit with status 3 when this process's RSS passes this many MB (0: no cap)")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    if args.rss_cap_mb:
        rss_watchdog(args.rss_cap_mb)

    t0 = time.perf_counter()
    qids, qtexts = read_queries(args.queries)
    stream = {"path": args.corpus} if args.engine == "pisa" and is_parquet(args.corpus) else None
    ids, texts = ([], []) if stream else read_corpus(args.corpus)
    text_bytes = sum(len(t.encode("utf-8")) for t in texts)
    load_s = time.perf_counter() - t0

    if args.engine == "bm25s":
        out = run_bm25s(args, ids, texts, qids, qtexts, text_bytes / 1e6)
    else:
        out = run_pisa(args, ids, texts, qids, qtexts, text_bytes / 1e6, stream)
    if stream:
        out["corpus_streamed"] = "Parquet read inside the timed indexing call"
        text_bytes = stream["text_bytes"]
    out.update({"docs": stream["docs"] if stream else len(ids), "queries": len(qids), "text_bytes": text_bytes,
                "corpus_load_s_untimed": load_s, "python": sys.version.split()[0]})
    with open(args.json_out, "w") as f:
        json.dump(out, f, indent=1)
    print(json.dumps({k: out.get(k) for k in ("engine", "docs", "index_mb_s", "qps", "top1_own", "top10_own")}))


if __name__ == "__main__":
    main()
