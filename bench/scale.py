#!/usr/bin/env python3
"""BM25 at FineWeb scale: `hierarag index` and `hierarag retrieve` over FineWeb-shaped Parquet
corpora of 0.1 M, 1 M, 3 M ... documents, against PISA (block-max MaxScore, pyterrier-pisa) and
bm25s (numba) in the same run. Usually started through bench/scale.sh (venv, packages,
Wikipedia sample for the vocabulary).

For each size (--sizes, default 0.1M,1M,3M):

  1. the corpus ROOT/<size>/ (bench/fineweb.py: generated once, kept outside the repository) and
     the questions (10,000 by default, from the first 100,000 rows, so the same at every size;
     each names its source document, the known item);
  2. hierarag: `hierarag index --corpus 'ROOT/<size>/*.parquet' --out D --overwrite
     --chunk-size 100000` (one chunk a document, as the peers index whole documents; default
     threads and 256 MB writer heap): wall time of the whole process (MB/s of text), the
     in-process figure it prints, peak RSS (/usr/bin/time %M) and the peaks of RssAnon/RssFile
     sampled every 20 ms, bytes a document above the writer heap, index size on disk; then
     `hierarag retrieve -k 10 --threads 1` (--query-reps passes; the queries/s it prints);
  3. peers (bench/peers.py, one process each, on the same Parquet files; bm25s reads them into
     memory before its clock starts, PISA streams them through its timed indexing call): PISA (index + block-max data + compression; queries with
     terrier and Lucene stop words) and bm25s. A peer runs only where it should fit: below
     --mem-limit-gb (default 80 % of the machine's memory), predicted from its peak at the
     largest smaller size measured in this run (linear in documents); it is stopped when its RSS
     passes the limit anyway (peers.py --rss-cap-mb);
  4. known-item recall@10 and top-1 of each engine (the source document among the top 10);
  5. prints a table (MB/s, peak RSS, bytes a document above the heap, index size, queries/s,
     ratios to the faster peer), how cost grows with size (µs a document to index, µs a
     query, against the growth in documents), and writes OUT/scale-results.json.

These are benchmarks, not tests: nothing fails when a target is missed.
"""
import argparse
import datetime
import json
import os
import shutil
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import bench  # noqa: E402  (stdlib only)
import fineweb  # noqa: E402
from bench import log, dir_mb, median  # noqa: E402

HEAP_MB = 256


def mem_total_gb():
    with open("/proc/meminfo") as f:
        return int(f.readline().split()[1]) / 1024 / 1024


def mem_available_gb():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024 / 1024
    return None


def warm_cache(files):
    """Read the shards once so that every engine starts from the same (warm) page cache."""
    for fn in files:
        with open(fn, "rb") as f:
            while f.read(1 << 24):
                pass


def run_known_item(run_path, qids):
    """top-1 and recall@10 of the known item (query id = source document id) in a TREC run."""
    top = {}
    with open(run_path) as f:
        for line in f:
            p = line.split()
            if len(p) >= 4 and int(p[3]) <= 10:
                top.setdefault(p[0], []).append(p[2])
    top1 = sum(1 for q in qids if top.get(q) and top[q][0] == q) / len(qids)
    rec = sum(1 for q in qids if q in top.get(q, ())) / len(qids)
    return top1, rec, sum(1 for q in qids if q not in top)


def hierarag_size(args, man, label, queries, qids, work):
    idx_dir = os.path.join(work, f"hierarag-{label}")
    corpus = {"path": man["glob"], "text_bytes": man["text_bytes"]}
    extra = ["--chunk-size", str(args.chunk_words)]
    runs = []
    for i in range(args.index_reps):
        log(f"  hierarag index {label} (rep {i + 1}/{args.index_reps}) ...")
        r = bench.hierarag_index(args.bin, corpus, idx_dir, os.path.join(work, f"hierarag-index-{label}-r{i}.log"),
                                 args, extra_args=extra)
        log(f"    {r['wall_mb_s']:.1f} MB/s wall ({r['inproc_mb_s']:.1f} in-process), {r['wall_s']:.1f} s, "
            f"peak RSS {r['peak_rss_kb'] / 1024:.0f} MB, other processes {r['other_cpu_s']:.1f} CPU s")
        runs.append(r)
    disk = dir_mb(idx_dir)
    run_path = os.path.join(work, f"hierarag-{label}.trec")
    q = []
    for i in range(args.query_reps):
        r = bench.hierarag_retrieve(args.bin, idx_dir, queries, run_path,
                                    os.path.join(work, f"hierarag-retrieve-{label}-r{i}.log"), args)
        log(f"    retrieve: {r['qps']:,.0f} queries/s (process {r['process_wall_s']:.1f} s)")
        q.append(r)
    top1, rec10, empty = run_known_item(run_path, qids)
    if not args.keep_indexes:
        shutil.rmtree(idx_dir, ignore_errors=True)
    docs = man["rows"]
    peak = max(x["peak_rss_kb"] for x in runs)
    anon = max((x["sampled_peak_anon_kb"] or 0) for x in runs)
    return {"engine": "hierarag", "index_runs": runs, "query_runs": q,
            "chunk_words": args.chunk_words, "chunks": runs[-1]["chunks"], "writer_heap_mb": HEAP_MB,
            "index_mb_s": median([x["wall_mb_s"] for x in runs]),
            "index_inproc_mb_s": median([x["inproc_mb_s"] for x in runs]),
            "index_wall_s": median([x["wall_s"] for x in runs]),
            "index_peak_rss_kb": peak, "index_peak_anon_kb": anon,
            "bytes_per_doc_above_heap": (peak * 1024 - HEAP_MB * 2 ** 20) / docs,
            "anon_bytes_per_doc_above_heap": (anon * 1024 - HEAP_MB * 2 ** 20) / docs,
            "index_disk_mb": disk, "qps": median([x["qps"] for x in q]),
            "top1_own": top1, "top10_own": rec10, "queries_without_results": empty}


def peer_fit(engine, docs, results, limit_gb):
    """(fits, predicted GB, reason). With two smaller sizes measured in this run, the peak is
    extrapolated along the line through the two largest; with one, bm25s's peak is scaled by
    documents (it holds every token of the corpus in Python lists), while PISA, which streams
    documents through a FIFO and inverts them in batches of 100,000, runs under the RSS cap."""
    seen = sorted((s["docs"], s["engines"][engine]["process_peak_rss_kb"] / 1024 / 1024, s["label"])
                  for s in results["sizes"].values()
                  if s["docs"] < docs and engine in s["engines"]
                  and "failed" not in s["engines"][engine] and s["engines"][engine].get("process_peak_rss_kb"))
    if len(seen) >= 2:
        (d0, g0, l0), (d1, g1, l1) = seen[-2:]
        pred = g1 + (g1 - g0) / (d1 - d0) * (docs - d1)
        reason = (f"{g0:.1f} GB at {l0}, {g1:.1f} GB at {l1}: {(g1 - g0) * 2 ** 20 / (d1 - d0):,.1f} KiB a "
                  f"document more, {pred:.1f} GB predicted, limit {limit_gb:.1f} GB")
        return pred <= limit_gb, pred, reason
    if len(seen) == 1 and engine == "bm25s":
        d1, g1, l1 = seen[0]
        pred = g1 * docs / d1
        return pred <= limit_gb, pred, (f"{g1:.1f} GB at {l1} x {docs / d1:.1f} = {pred:.1f} GB predicted, "
                                        f"limit {limit_gb:.1f} GB")
    return True, None, "not predicted; runs under the RSS cap"


def peer_size(engine, args, man, label, queries, work, limit_gb):
    ns = types.SimpleNamespace(query_reps=args.bm25s_query_reps if engine == "bm25s" else args.query_reps,
                               peer_timeout=args.peer_timeout, max_wait_quiet=args.max_wait_quiet,
                               keep_indexes=args.keep_indexes)
    corpus = {"path": man["glob"]}
    log(f"  {engine} {label} (RSS cap {limit_gb:.1f} GB) ...")
    r = bench.run_peer(engine, corpus, label, queries, work, ns, args.index_reps,
                       extra_args=["--rss-cap-mb", str(int(limit_gb * 1024))])
    if "failed" in r and "RSS cap exceeded" in open(os.path.join(ROOT, r["log"]), errors="replace").read():
        r["failed"] = f"did not fit: its RSS passed the {limit_gb:.1f} GB limit (stopped); " + r["failed"]
        r["did_not_fit"] = True
    if "failed" in r:
        log(f"    {engine} failed: {r['failed'].splitlines()[0]}")
    else:
        log(f"    {engine}: {r['index_mb_s']:.1f} MB/s, {r['qps']:,.0f} queries/s, "
            f"peak RSS {r['process_peak_rss_kb'] / 1024:.0f} MB")
    return r


# ----------------------------------------------------------------------------- report
def ratios(sr):
    eng = sr["engines"]
    h = eng.get("hierarag")
    out = {}
    if not h:
        return out
    peers = {k: v for k, v in eng.items() if k != "hierarag" and "failed" not in v and "skipped" not in v}
    idx = [(k, v["index_mb_s"]) for k, v in peers.items()]
    if idx:
        name, best = max(idx, key=lambda x: x[1])
        out.update(index_faster_peer=name, index_vs_faster_peer=h["index_mb_s"] / best,
                   index_inproc_vs_faster_peer=h["index_inproc_mb_s"] / best)
        if "pisa" in peers:
            out["index_vs_pisa_index_only"] = h["index_mb_s"] / peers["pisa"]["index_only_mb_s"]
    q = []
    if "pisa" in peers:
        p = peers["pisa"]
        q += [("pisa (terrier stops)", p["qps"]), ("pisa (lucene stops)", p["stop_variants"]["lucene"]["qps"])]
        out["qps_vs_pisa_lucene"] = h["qps"] / p["stop_variants"]["lucene"]["qps"]
        out["qps_vs_pisa_terrier"] = h["qps"] / p["qps"]
    if "bm25s" in peers:
        q.append(("bm25s", peers["bm25s"]["qps"]))
    if q:
        name, best = max(q, key=lambda x: x[1])
        out.update(qps_faster_peer=name, qps_vs_faster_peer=h["qps"] / best)
    return out


def fmt(x, nd=1):
    return "-" if x is None else f"{x:,.{nd}f}"


def print_report(res):
    sizes = sorted(res["sizes"].values(), key=lambda s: s["docs"])
    print()
    print(f"BM25 at FineWeb scale: {res['queries']:,} questions, top 10, one query thread; "
          f"machine {res['machine']['cpu_model']}, {res['machine']['nproc']} cores, {res['machine']['mem_total_gb']} GB")
    hdr = (f"{'size':>5} {'docs':>10} {'text MB':>8}  {'engine':<24} {'index MB/s':>10} {'(alt)':>7} "
           f"{'peak RSS MB':>11} {'B/doc>heap':>10} {'index MB':>9} {'queries/s':>10} {'top1':>6} {'R@10':>6}")
    print(hdr)
    print("-" * len(hdr))
    for s in sizes:
        pre = f"{s['label']:>5} {s['docs']:>10,} {s['text_mb']:>8,.0f}"
        for name, e in s["engines"].items():
            if "skipped" in e or "failed" in e:
                print(f"{pre}  {name:<24} {'SKIPPED: ' + e['skipped'] if 'skipped' in e else 'FAILED: ' + e['failed'].splitlines()[0]}")
                pre = " " * 25
                continue
            if name == "hierarag":
                flag = bench.busy_majority(e["index_runs"], "wall_s") or bench.busy_majority(e["query_runs"], "process_wall_s")
                row = [(name + flag, e["index_mb_s"], e["index_inproc_mb_s"], e["index_peak_rss_kb"],
                        e["bytes_per_doc_above_heap"], e["index_disk_mb"], e["qps"], e["top1_own"], e["top10_own"])]
            elif name == "pisa":
                flag = bench.busy_flag(e["process_other_cpu_s"], e["process_wall_s"])
                lv = e["stop_variants"]["lucene"]
                row = [("pisa bmm, terrier" + flag, e["index_mb_s"], e["index_only_mb_s"], e["process_peak_rss_kb"],
                        None, e.get("index_disk_mb"), e["qps"], e["top1_own"], e.get("top10_own")),
                       ("pisa bmm, lucene" + flag, None, None, None, None, None, lv["qps"], lv["top1_own"],
                        lv.get("top10_own"))]
            else:
                flag = bench.busy_flag(e["process_other_cpu_s"], e["process_wall_s"])
                row = [("bm25s-numba" + flag, e["index_mb_s"], None, e["process_peak_rss_kb"], None, None, e["qps"],
                        e["top1_own"], e.get("top10_own"))]
            for n, mbs, alt, rss, bpd, disk, qps, t1, r10 in row:
                print(f"{pre}  {n:<24} {fmt(mbs):>10} {fmt(alt):>7} {fmt(None if rss is None else rss / 1024, 0):>11} "
                      f"{fmt(bpd if bpd is None or bpd > 0 else None, 0):>10} {fmt(disk, 0):>9} {fmt(qps, 0):>10} {fmt(t1, 3):>6} {fmt(r10, 3):>6}")
                pre = " " * 25
        r = s.get("ratios") or {}
        if r:
            line = " " * 25 + "  hierarag /"
            if "index_faster_peer" in r:
                line += f" indexing: {r['index_vs_faster_peer']:.2f}x {r['index_faster_peer']}"
                if "index_vs_pisa_index_only" in r:
                    line += f" ({r['index_vs_pisa_index_only']:.2f}x pisa index() only);"
            if "qps_vs_pisa_lucene" in r:
                line += f" queries: {r['qps_vs_pisa_lucene']:.2f}x pisa lucene, {r['qps_vs_pisa_terrier']:.2f}x pisa terrier"
            if "qps_faster_peer" in r:
                line += f"; {r['qps_vs_faster_peer']:.2f}x faster peer ({r['qps_faster_peer']})"
            print(line)
        print()
    # growth between sizes
    rows = []
    for a, b in zip(sizes, sizes[1:]):
        for name in ("hierarag", "pisa", "bm25s"):
            ea, eb = a["engines"].get(name), b["engines"].get(name)
            if not ea or not eb or any(k in e for e in (ea, eb) for k in ("failed", "skipped")):
                continue
            ia = a["text_mb"] / ea["index_mb_s"] / a["docs"] * 1e6
            ib = b["text_mb"] / eb["index_mb_s"] / b["docs"] * 1e6
            qa, qb = 1e6 / ea["qps"], 1e6 / eb["qps"]
            rows.append((f"{a['label']} -> {b['label']}", name, b["docs"] / a["docs"], ia, ib, qa, qb))
    if rows:
        print("cost growth: index µs a document (whole process for hierarag) and µs a query, one thread")
        print(f"{'sizes':>14} {'engine':<10} {'docs x':>7} {'idx µs/doc':>20} {'x':>6} {'µs/query':>20} {'x':>6}")
        for sz, name, dx, ia, ib, qa, qb in rows:
            print(f"{sz:>14} {name:<10} {dx:>7.1f} {ia:>9.1f} -> {ib:>8.1f} {ib / ia:>6.2f} {qa:>9.0f} -> {qb:>8.0f} {qb / qa:>6.2f}")
        print()
    print("index MB/s: hierarag = text MB / wall time of the whole `hierarag index` process over the Parquet shards")
    print("(in-process figure as alt); pisa = index() + block-max data + compression on documents already in memory")
    print("(index() only as alt); bm25s = tokenize + index in memory. B/doc>heap = (peak RSS - 256 MiB) / documents.")
    print("top1 / R@10: the question's source document first / in the top 10. * = other processes used > 0.25 cores.")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="0.1M,1M,3M", help="corpus sizes in documents (0.1M, 1M, 3M, 15M, 250k ...)")
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "hierarag"), help="the hierarag binary")
    ap.add_argument("--root", default=fineweb.DEFAULT_ROOT, help="where the corpora live (outside the repository)")
    ap.add_argument("--seed", type=int, default=fineweb.DEFAULT_SEED)
    ap.add_argument("--vocab", help="the Wikipedia sample JSONL, the generator's vocabulary")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="generator processes")
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--query-rows", default="100k", help="questions come from the first N rows (in every size)")
    ap.add_argument("--engines", default="hierarag,pisa,bm25s")
    ap.add_argument("--chunk-words", type=int, default=fineweb.MAX_WORDS,
                    help="hierarag --chunk-size (default: the longest document, so one chunk a document)")
    ap.add_argument("--index-reps", type=int, default=1)
    ap.add_argument("--query-reps", type=int, default=3)
    ap.add_argument("--bm25s-query-reps", type=int, default=1)
    ap.add_argument("--mem-limit-gb", type=float, default=None,
                    help="a peer runs only when predicted below this, and is stopped above it (default 80 %% of RAM)")
    ap.add_argument("--peer-timeout", type=int, default=5400)
    ap.add_argument("--max-wait-quiet", type=int, default=60)
    ap.add_argument("--keep-indexes", action="store_true")
    ap.add_argument("--resume", action="store_true",
                    help="keep the measurements already in OUT/scale-results.json (same sizes and engines) "
                         "and measure only what is missing")
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    ap.add_argument("--report", metavar="RESULTS_JSON", help="only print the table of an earlier run")
    args = ap.parse_args()
    if args.report:
        with open(args.report) as f:
            print_report(json.load(f))
        return
    if not os.access(args.bin, os.X_OK):
        sys.exit(f"{args.bin} not found or not executable")
    args.bin = os.path.abspath(args.bin)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    sizes = sorted(fineweb.parse_rows(s) for s in args.sizes.split(",") if s.strip())
    limit_gb = args.mem_limit_gb or round(0.8 * mem_total_gb(), 1)
    work = os.path.join(args.out, "scale-work")
    os.makedirs(work, exist_ok=True)
    res_path = os.path.join(args.out, "scale-results.json")

    # corpora and questions first (not timed): generation uses every core
    mans = {}
    for n in sizes:
        mans[n] = fineweb.ensure_corpus(n, args.root, args.seed, args.vocab, args.workers)
    qrows = fineweb.parse_rows(args.query_rows)
    qsrc = next((n for n in sizes if n >= qrows), None)
    if qsrc is None:
        sys.exit(f"--query-rows {args.query_rows} is larger than every size")
    queries = fineweb.ensure_queries(args.queries, qrows, os.path.join(args.root, fineweb.label(qsrc)), args.root,
                                     args.seed, args.vocab)
    with open(queries) as f:
        qids = [json.loads(l)["id"] for l in f]

    results = {"started": datetime.datetime.now().isoformat(timespec="seconds"),
               "machine": bench.machine_info(args.bin), "args": vars(args), "queries": len(qids),
               "queries_file": queries, "mem_limit_gb": limit_gb, "sizes": {}}

    if args.resume and os.path.exists(res_path):
        with open(res_path) as f:
            old = json.load(f)
        if old.get("queries_file") == queries:
            results["sizes"] = old.get("sizes", {})
            results["started"] = old.get("started", results["started"])
            results["resumed"] = datetime.datetime.now().isoformat(timespec="seconds")
            log(f"resuming {res_path}: " + ", ".join(f"{k}: {'/'.join(v['engines'])}" for k, v in results["sizes"].items()))

    def save():
        with open(res_path, "w") as f:
            json.dump(results, f, indent=1)

    for n in sizes:
        man = mans[n]
        lab = fineweb.label(n)
        disk_free = shutil.disk_usage(args.root).free / 1e9
        log(f"size {lab}: {n:,} documents, {man['text_bytes'] / 1e6:,.0f} MB of text, "
            f"{man['file_bytes'] / 1e6:,.0f} MB of Parquet; {disk_free:.0f} GB free; load {os.getloadavg()[0]:.2f}")
        sr = {"label": lab, "docs": n, "text_mb": man["text_bytes"] / 1e6, "parquet_mb": man["file_bytes"] / 1e6,
              "tokens": man["tokens"], "words": man["words"], "corpus_dir": os.path.dirname(man["glob"]),
              "loadavg_before": os.getloadavg(), "engines": {}}
        done = results["sizes"].get(lab, {}).get("engines", {})
        sr["engines"] = {k: v for k, v in done.items() if k not in engines or ("failed" not in v and "skipped" not in v)}
        results["sizes"][lab] = sr
        files = [os.path.join(sr["corpus_dir"], s["file"]) for s in man["shards"]]
        if "hierarag" in engines and "hierarag" not in sr["engines"]:
            warm_cache(files)
            sr["engines"]["hierarag"] = hierarag_size(args, man, lab, queries, qids, work)
            save()
        for e in ("pisa", "bm25s"):
            if e not in engines or e in sr["engines"]:
                continue
            fits, pred, reason = peer_fit(e, n, results, limit_gb)
            if not fits:
                log(f"  {e} {lab}: skipped, would not fit in memory ({reason})")
                sr["engines"][e] = {"engine": e, "skipped": f"would not fit in memory: {reason}",
                                    "predicted_gb": pred}
            else:
                sr["engines"][e] = peer_size(e, args, man, lab, queries, work, limit_gb)
                sr["engines"][e]["fit_check"] = reason
            save()
        sr["ratios"] = ratios(sr)
        sr["loadavg_after"] = os.getloadavg()
        save()
    results["finished"] = datetime.datetime.now().isoformat(timespec="seconds")
    save()
    print_report(results)
    print(f"\nresults: {os.path.relpath(res_path, os.getcwd())}")


if __name__ == "__main__":
    main()
