#!/usr/bin/env python3
"""Dense retrieval at scale: hierarag's HNSW graph (usearch, searched memory-mapped) against
hnswlib on the same 1 M MiniLM-shaped vectors, and the embedded MiniLM's speed per chunk
(called by bench/ann.sh; docs/benchmarks.md, "Dense retrieval at scale").

  1. The Wikipedia sample (10,033 summaries) is indexed with `hierarag index` and every chunk
     embedded with the embedded MiniLM by `ann_bench embed-chunks` (the dense retriever's own
     build): the real rows.
  2. The same texts, concatenated in corpus order and cut into --timing-chunks documents of
     512 words, are indexed and embedded the same way, timed: MiniLM per million chunks (every
     chunk is longer than MiniLM's 256 tokens, so each costs a full-length pass).
  3. --size rows of 384 dimensions: the real rows first, then rows made from them with the
     seeded numpy generator: row = normalise((1 - t) a + t b + sigma g), a and b two real rows
     drawn uniformly, t ~ U(0, 0.5), g ~ N(0, I), sigma = 0.02 (a noise of norm ~0.39 against
     the unit rows).
  4. --queries questions "What is {title}?" over titles of the sample drawn with the seed,
     embedded with MiniLM: the queries; the exact top 10 of each by numpy (f32 matrix products),
     score descending then row ascending: the truth.
  5. hierarag: `ann_bench build` (one thread, as hierarag builds it) and `ann_bench search` per
     --ef-search (one query at a time, one thread; candidates rescored exactly from the mapped
     f32 rows), each its own process under /usr/bin/time; hnswlib 0.8.0 with the same M,
     ef_construction and ef_search, one thread, in its own processes.

Writes bench/out/ann/ann-results.json (or --results) and prints the table.
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from bench import log, machine_info, timed_process  # noqa: E402  (stdlib-only helpers)

DIM = 384
K = 10
SIGMA = 0.02


def parse_size(text):
    text = text.strip().upper()
    for suffix, factor in (("M", 1_000_000), ("K", 1_000)):
        if text.endswith(suffix):
            return int(float(text[:-1]) * factor)
    return int(text)


def run_json(cmd, log_path, args, sample_rss=True):
    """Runs one measured process and returns (its JSON line on stdout, the measurement)."""
    r = timed_process(cmd, log_path=log_path, max_wait_quiet=args.max_wait_quiet, sample_rss=sample_rss)
    if r["rc"] != 0:
        raise SystemExit(f"{cmd[0]} {cmd[1]} failed (rc={r['rc']}), see {log_path}")
    lines = [l for l in r["output"].splitlines() if l.startswith("{")]
    if not lines:
        raise SystemExit(f"no JSON line in the output of {' '.join(cmd)}, see {log_path}")
    return json.loads(lines[-1]), r


def hierarag_index(binary, corpus, index_dir, log_path):
    r = timed_process([binary, "index", "--corpus", corpus, "--out", index_dir, "--overwrite"],
                      log_path=log_path, max_wait_quiet=0)
    if r["rc"] != 0:
        raise SystemExit(f"hierarag index failed (rc={r['rc']}), see {log_path}")


def wiki_records(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def write_long_corpus(records, n_docs, path, words_per_doc=512):
    """n_docs documents of words_per_doc words: the sample's texts in order, concatenated."""
    words = [w for r in records for w in r["text"].split()]
    with open(path, "w") as f:
        pos = 0
        for d in range(n_docs):
            doc = []
            while len(doc) < words_per_doc:
                take = words[pos:pos + words_per_doc - len(doc)]
                doc += take
                pos = (pos + len(take)) % len(words)
            f.write(json.dumps({"id": f"long{d:06d}", "text": " ".join(doc)}) + "\n")


def expand(np, base, size, seed, path):
    """The real rows, then rows interpolated between two real rows plus Gaussian noise."""
    rng = np.random.default_rng(seed)
    n_base = base.shape[0]
    block = 100_000
    with open(path + ".tmp", "wb") as f:
        f.write(base[:min(n_base, size)].astype("<f4").tobytes())
        done = min(n_base, size)
        while done < size:
            n = min(block, size - done)
            a = base[rng.integers(0, n_base, n)]
            b = base[rng.integers(0, n_base, n)]
            t = rng.uniform(0.0, 0.5, (n, 1)).astype(np.float32)
            rows = (1 - t) * a + t * b + SIGMA * rng.standard_normal((n, DIM), dtype=np.float32)
            rows /= np.linalg.norm(rows, axis=1, keepdims=True)
            f.write(rows.astype("<f4").tobytes())
            done += n
    os.replace(path + ".tmp", path)


def exact_top(np, vectors, queries, k):
    """Each query's k best rows by inner product: score descending, then row ascending."""
    n = vectors.shape[0]
    best_scores = np.full((len(queries), 0), -np.inf, dtype=np.float32)
    best_rows = np.zeros((len(queries), 0), dtype=np.int64)
    block = 50_000
    for start in range(0, n, block):
        scores = queries @ vectors[start:start + block].T
        keep = min(k, scores.shape[1])
        part = np.argpartition(-scores, keep - 1, axis=1)[:, :keep]
        best_scores = np.concatenate([best_scores, np.take_along_axis(scores, part, 1)], axis=1)
        best_rows = np.concatenate([best_rows, part + start], axis=1)
        order = np.lexsort((best_rows, -best_scores), axis=1)[:, :k]
        best_scores = np.take_along_axis(best_scores, order, 1)
        best_rows = np.take_along_axis(best_rows, order, 1)
    return best_rows


def recall(np, found, truth):
    hits = sum(len(set(f.tolist()) & set(t.tolist())) for f, t in zip(found, truth))
    return hits / truth.size


# ----------------------------------------------------------------------------- hnswlib (child)
def peer_build(args):
    import hnswlib
    import numpy as np
    vectors = np.memmap(args.vectors, dtype="<f4", mode="r").reshape(-1, DIM)
    t0 = time.perf_counter()
    index = hnswlib.Index(space="ip", dim=DIM)
    index.init_index(max_elements=len(vectors), ef_construction=args.ef_construction,
                     M=args.connectivity, random_seed=args.seed)
    index.set_num_threads(1)
    for start in range(0, len(vectors), 100_000):
        rows = np.ascontiguousarray(vectors[start:start + 100_000])
        index.add_items(rows, np.arange(start, start + len(rows)), num_threads=1)
    index.save_index(args.graph)
    print(json.dumps({"rows": len(vectors), "build_s": time.perf_counter() - t0,
                      "file_bytes": os.path.getsize(args.graph)}))


def peer_search(args):
    import hnswlib
    import numpy as np
    queries = np.fromfile(args.queries, dtype="<f4").reshape(-1, DIM)
    index = hnswlib.Index(space="ip", dim=DIM)
    index.load_index(args.graph)
    index.set_ef(args.ef_search)
    index.set_num_threads(1)
    # Two passes, as hierarag's: the index is in memory already, so both are warm.
    t0 = time.perf_counter()
    np.stack([index.knn_query(q, k=K, num_threads=1)[0][0] for q in queries])
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    found = np.stack([index.knn_query(q, k=K, num_threads=1)[0][0] for q in queries])
    seconds = time.perf_counter() - t0
    found.astype("<u4").tofile(args.out)
    print(json.dumps({"queries": len(queries), "search_s": seconds,
                      "queries_per_s": len(queries) / seconds, "cold_queries_per_s": len(queries) / cold}))


# ----------------------------------------------------------------------------- the driver
def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="the hierarag binary")
    ap.add_argument("--ann-bench", required=True, help="the ann_bench example binary")
    ap.add_argument("--size", default="1M", help="rows (1M, 100k, ...)")
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--connectivity", type=int, default=16)
    ap.add_argument("--ef-construction", type=int, default=128)
    ap.add_argument("--ef-search", default="64,128,256,512", help="comma-separated")
    ap.add_argument("--reuse-graphs", action="store_true",
                    help="search the graphs of the last run again (its build figures kept)")
    ap.add_argument("--timing-chunks", type=int, default=20_000,
                    help="512-word chunks embedded to time MiniLM (0: skip)")
    ap.add_argument("--seed", type=int, default=24)
    ap.add_argument("--engines", default="hierarag,hnswlib")
    ap.add_argument("--max-wait-quiet", type=int, default=30)
    ap.add_argument("--out", default=os.path.join(HERE, "out", "ann"))
    ap.add_argument("--results", help="the results JSON (default OUT/ann-results.json)")
    # hnswlib in its own process (internal)
    ap.add_argument("--peer", choices=["build", "search"], help=argparse.SUPPRESS)
    ap.add_argument("--vectors", help=argparse.SUPPRESS)
    ap.add_argument("--graph", help=argparse.SUPPRESS)
    ap.add_argument("--queries-file", dest="queries_path", help=argparse.SUPPRESS)
    ap.add_argument("--ids-out", dest="ids_out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.peer:
        if args.peer == "build":
            return peer_build(args)
        args.queries, args.out, args.ef_search = args.queries_path, args.ids_out, int(args.ef_search)
        return peer_search(args)

    import numpy as np
    size = parse_size(args.size)
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    engines = [e for e in args.engines.split(",") if e]
    results = {"machine": machine_info(args.bin), "size": size, "dim": DIM, "k": K,
               "queries": args.queries, "seed": args.seed, "sigma": SIGMA,
               "connectivity": args.connectivity, "ef_construction": args.ef_construction,
               "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}

    wiki = [l for l in os.popen(f"'{args.bin}' -q data fetch wiki-sample --print-path").read().splitlines() if l][-1]
    records = wiki_records(wiki)

    # 1. The real rows.
    index_dir, dense_dir = os.path.join(out, "wiki-index"), os.path.join(out, "wiki-dense")
    if not os.path.exists(os.path.join(index_dir, "manifest.json")):
        hierarag_index(args.bin, wiki, index_dir, os.path.join(out, "wiki-index.log"))
    log("embedding the Wikipedia sample's chunks (reused when stored)")
    real, _ = run_json([args.ann_bench, "embed-chunks", index_dir, dense_dir],
                       os.path.join(out, "wiki-embed.log"), args, sample_rss=False)
    base = np.fromfile(real["embeddings"], dtype="<f4").reshape(-1, DIM)
    results["real_rows"] = int(base.shape[0])

    # 2. MiniLM's time per chunk.
    if args.timing_chunks:
        long_path = os.path.join(out, f"long-{args.timing_chunks}.jsonl")
        long_index = os.path.join(out, f"long-{args.timing_chunks}-index")
        long_dense = os.path.join(out, f"long-{args.timing_chunks}-dense")
        if not os.path.exists(os.path.join(long_index, "manifest.json")):
            write_long_corpus(records, args.timing_chunks, long_path)
            hierarag_index(args.bin, long_path, long_index, os.path.join(out, "long-index.log"))
        if os.path.exists(long_dense):
            for name in os.listdir(long_dense):
                os.remove(os.path.join(long_dense, name))
        log(f"timing MiniLM on {args.timing_chunks} chunks of 512 words")
        timing, r = run_json([args.ann_bench, "embed-chunks", long_index, long_dense],
                             os.path.join(out, "long-embed.log"), args, sample_rss=False)
        timing["hours_per_million"] = timing["embed_s"] / timing["chunks"] * 1e6 / 3600
        timing["other_cpu_s"] = r["other_cpu_s"]
        timing["busy_cores_before"] = r["busy_cores_before"]
        results["minilm"] = timing
        log(f"MiniLM: {timing['chunks_per_s']:.1f} chunks/s, {timing['hours_per_million']:.1f} h per million")

    # 3. The rows.
    vectors_path = os.path.join(out, f"vectors-{size}-seed{args.seed}.f32")
    if not os.path.exists(vectors_path):
        log(f"expanding {base.shape[0]} real rows to {size}")
        expand(np, base, size, args.seed, vectors_path)
    vectors = np.memmap(vectors_path, dtype="<f4", mode="r").reshape(-1, DIM)

    # 4. Queries and the truth.
    queries_path = os.path.join(out, f"queries-{args.queries}-seed{args.seed}.f32")
    if not os.path.exists(queries_path):
        rng = np.random.default_rng(args.seed)
        picked = rng.choice(len(records), size=args.queries, replace=False)
        texts_path = queries_path + ".txt"
        with open(texts_path, "w") as f:
            for i in picked:
                f.write(f"What is {records[i]['title']}?\n")
        run_json([args.ann_bench, "embed-texts", texts_path, queries_path],
                 os.path.join(out, "queries-embed.log"), args, sample_rss=False)
    queries = np.fromfile(queries_path, dtype="<f4").reshape(-1, DIM)
    truth_path = os.path.join(out, f"truth-{size}-seed{args.seed}-q{args.queries}.npy")
    if not os.path.exists(truth_path):
        log("exact top 10 of every query (numpy)")
        t0 = time.perf_counter()
        np.save(truth_path, exact_top(np, vectors, queries, K))
        results["exact_numpy_s"] = time.perf_counter() - t0
    truth = np.load(truth_path)

    # 5. The engines.
    ef_searches = [int(x) for x in args.ef_search.split(",")]
    previous = {}
    if args.reuse_graphs:
        with open(args.results or os.path.join(out, "ann-results.json")) as f:
            previous = json.load(f).get("engines", {})
    results["engines"] = {}
    for engine in engines:
        graph_dir = os.path.join(out, f"{engine}-{size}-M{args.connectivity}-ef{args.ef_construction}")
        reuse = previous.get(engine) if args.reuse_graphs else None
        os.makedirs(graph_dir, exist_ok=True)
        if not reuse:
            for name in os.listdir(graph_dir):
                os.remove(os.path.join(graph_dir, name))
        if engine == "hierarag":
            base_cmd = [args.ann_bench]
            build_cmd = base_cmd + ["build", vectors_path, str(DIM), graph_dir,
                                    str(args.connectivity), str(args.ef_construction)]
        else:
            graph_file = os.path.join(graph_dir, "hnswlib.bin")
            peer = [sys.executable, os.path.abspath(__file__), "--bin", args.bin, "--ann-bench", args.ann_bench,
                    "--vectors", vectors_path, "--graph", graph_file, "--seed", str(args.seed),
                    "--connectivity", str(args.connectivity), "--ef-construction", str(args.ef_construction)]
            build_cmd = peer + ["--peer", "build"]
        if reuse:
            entry = {key: value for key, value in reuse.items() if key != "search"}
            entry["search"] = {}
        else:
            log(f"{engine}: building the graph of {size} rows")
            built, r = run_json(build_cmd, os.path.join(out, f"{engine}-build.log"), args)
            entry = {"build_s": built["build_s"], "build_wall_s": r["wall_s"], "file_bytes": built["file_bytes"],
                     "build_peak_rss_kb": r["peak_rss_kb"], "build_anon_kb": r["sampled_peak_anon_kb"],
                     "build_other_cpu_s": r["other_cpu_s"], "search": {}}
            log(f"{engine}: built in {built['build_s']:.0f} s")
        for ef in ef_searches:
            ids_path = os.path.join(out, f"{engine}-ef{ef}.u32")
            if engine == "hierarag":
                cmd = base_cmd + ["search", vectors_path, str(DIM), graph_dir, str(args.connectivity),
                                  str(args.ef_construction), str(ef), queries_path, str(K), ids_path]
            else:
                cmd = peer + ["--peer", "search", "--ef-search", str(ef), "--queries-file", queries_path,
                              "--ids-out", ids_path]
            searched, r = run_json(cmd, os.path.join(out, f"{engine}-search-ef{ef}.log"), args)
            found = np.fromfile(ids_path, dtype="<u4").reshape(-1, K)
            entry["search"][str(ef)] = {
                "recall_at_10": recall(np, found, truth), "queries_per_s": searched["queries_per_s"],
                "cold_queries_per_s": searched["cold_queries_per_s"],
                "peak_rss_kb": r["peak_rss_kb"], "anon_kb": r["sampled_peak_anon_kb"],
                "file_kb": r["sampled_peak_file_kb"], "other_cpu_s": r["other_cpu_s"]}
            log(f"{engine} ef_search {ef}: recall@10 {entry['search'][str(ef)]['recall_at_10']:.4f}, "
                f"{searched['queries_per_s']:.0f} q/s")
        results["engines"][engine] = entry
        save(results, args, out)
    save(results, args, out)
    report(results)


def save(results, args, out):
    with open(args.results or os.path.join(out, "ann-results.json"), "w") as f:
        json.dump(results, f, indent=1)


def report(results):
    print(f"\n{results['size']:,} rows × {results['dim']}, {results['queries']} queries, "
          f"M {results['connectivity']}, ef_construction {results['ef_construction']}")
    print(f"{'engine':<10} {'build s':>8} {'file MB':>8} {'build RSS MB':>12} {'ef':>4} {'recall@10':>9} "
          f"{'q/s':>7} {'cold q/s':>8} {'search RSS MB (anon/file)':>26}")
    for engine, e in results["engines"].items():
        for ef, s in e["search"].items():
            print(f"{engine:<10} {e['build_s']:>8.0f} {e['file_bytes'] / 1e6:>8.0f} "
                  f"{e['build_peak_rss_kb'] / 1024:>12.0f} {ef:>4} {s['recall_at_10']:>9.4f} "
                  f"{s['queries_per_s']:>7.0f} {s['cold_queries_per_s']:>8.0f} {s['peak_rss_kb'] / 1024:>10.0f} "
                  f"({(s['anon_kb'] or 0) / 1024:.0f}/{(s['file_kb'] or 0) / 1024:.0f})")
    if "minilm" in results:
        m = results["minilm"]
        print(f"MiniLM (embedded, release): {m['chunks']} chunks of 512 words in {m['embed_s']:.0f} s: "
              f"{m['chunks_per_s']:.1f} chunks/s, {m['hours_per_million']:.1f} h per million chunks")


if __name__ == "__main__":
    main()
