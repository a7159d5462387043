#!/usr/bin/env python3
"""`hierarag plan` benchmark: sampling documents from a 1M-row Parquet corpus.

Usually started through bench/plan.sh (venv, packages, release build). Steps:

  1. generates, if absent, OUT/fineweb-1m.parquet: 1,000,000 rows in FineWeb's
     schema (text, id `<urn:uuid:…>`, dump, url, date, file_path, language,
     language_score, token_count), deterministic for --corpus-seed; texts are
     word sequences drawn with their frequencies from the ASCII vocabulary of
     the Wikipedia sample (--vocab; a built-in list without it), word counts
     lognormal with median 300 and sigma 1.0, capped at 5,000; snappy, row
     groups of 50,000 rows;
  2. times `hierarag plan --design rq2 --corpus FILE --seed 42 --out F
     --overwrite -q` (3,336 documents) without length bounds and with
     `--min-words 100 --max-words 2000`, --reps times each, the wall time of
     the whole process and its peak RSS (/usr/bin/time %M, or wait4's ru_maxrss);
  3. times peers doing the same job (draw 3,336 documents uniformly at random,
     without replacement, from those within the bounds; write their ids), each
     repetition in its own process measured the same way:
       duckdb   SELECT id FROM (SELECT id FROM read_parquet(F) [WHERE words
                BETWEEN min AND max]) USING SAMPLE reservoir(3336 ROWS)
                REPEATABLE (42), words = len(string_split_regex(trim(text), '\\s+'))
       duckdb-space  the same with words = len(string_split(text, ' ')), bounds
                only: the same counts on this corpus (one space between words), not
                a word count in general, so DuckDB's best case
       pyarrow  pq.read_table(F, columns=[id, text]); words =
                list_value_length(utf8_split_whitespace(text)) (per row group);
                numpy default_rng(42).choice(eligible, 3336, replace=False)
  4. checks (not timed) that every engine returned 3,336 distinct ids of
     documents within the bounds, and counts the eligible documents;
  5. prints a table (median seconds, docs/s, peak RSS, hierarag/peer speed
     ratio) and writes OUT/plan-results.json.

With --shards DIR (a corpus of bench/fineweb.py: shards of 500,000 rows in row groups of 1,000)
every engine reads DIR/*.parquet instead, and the page cache is warmed only when the shards fit
in half the memory. The pyarrow peer holds the whole table: leave it out at that scale.

These are benchmarks, not tests: nothing fails when hierarag is slower.
"""
import argparse
import datetime
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from bench import ensure_packages, log, machine_info, timed_child  # noqa: E402  (stdlib-only helpers)

PACKAGES = {"numpy": "numpy", "pyarrow": "pyarrow", "duckdb": "duckdb"}  # import name: pip name
DEFAULT_ROWS = 1_000_000
SAMPLE = 3336  # documents an rq2 plan with the paper's counts needs (333+333+446 per dimension, 3 dimensions)
ROW_GROUP = 50_000
CHUNK = 10_000
MEDIAN_WORDS = 300
SIGMA = 1.0
MAX_WORDS = 5000
BUSY_CORES = 0.25

# A fallback vocabulary (when the Wikipedia sample is not available): common English words,
# drawn with Zipf weights by rank.
BUILTIN_WORDS = """the of and to a in is that for it as was with be by on not he this are or his
from at which but have an they you were her she there one all we their been has would when who
will more no if out so said what up its about into than them can only other new some could time
these two may then do first any my now such like our over man me even most made after also did
many before must through back years where much your way well down should because each just those
people how too little state good very make world still own see men work long get here between
both life being under never day same another know while last might us great old year off come
since against go came right used take three states himself few house use during without again
place American around however home small found Mrs. thought went say part once general high upon
school every don't does got united left number course war until always away something fact though
water less public put think almost hand enough far took head yet government system better set
told nothing night end why called didn't eyes find going look asked later knew point next city
business give group toward young let room President side social present given several order
national second possible rather per face among form important often things looked early white John
become case large need big four within felt along children saw best church ever least power
development light thing seemed family interest want members mind country area others done turned
although open God service certain kind problem began different door thus help sense means whole
matter perhaps itself York it's times law human line above name example action company hands
local show whether five history gave today either act feet across taken past quite anything seen
having death week experience body word half really field am car words already themselves I'm
information tell together college shall money period held keep sure probably free seems political
real cannot behind miss question air office making brought whose special heard major problems ago
became federal moment study available known result street economic boy reason change position
south board individual job society areas west close turn love community true court force full
seem am policy wife future age voice center woman control common necessary following front
sometimes six girl clear further land run students provide feel party able mother music education
university""".split()


def load_vocab(path):
    """ASCII whitespace-separated tokens of the Wikipedia sample and their counts (at least 2),
    so that drawn texts have English word frequencies, capitals and punctuation."""
    import numpy as np
    if path and os.path.exists(path):
        counts = {}
        with open(path, encoding="utf-8") as f:
            for line in f:
                for tok in json.loads(line)["text"].split():
                    if tok.isascii() and tok.isprintable():
                        counts[tok] = counts.get(tok, 0) + 1
        items = sorted(((t, c) for t, c in counts.items() if c >= 2), key=lambda x: (-x[1], x[0]))
        source = f"{os.path.basename(path)} ({len(items):,} distinct ASCII tokens seen twice or more)"
    else:
        items = [(w, max(1, round(100_000 / (r + 1)))) for r, w in enumerate(BUILTIN_WORDS)]
        source = f"built-in list of {len(items)} words, Zipf weights"
    words = [t for t, _ in items]
    return words, np.array([c for _, c in items], dtype=np.int64), source


def crawl_columns(rng, n, first_row, dumps, slug_words, tlds, segments, scheme):
    """FineWeb's metadata of rows first_row .. first_row + n, drawn from rng in a fixed order:
    ids (`<urn:uuid:...>`), dump, url, date and file_path columns as lists. dumps: (year, week)
    pairs; segments: the range of Common Crawl segment numbers; scheme: the URLs' scheme."""
    import uuid

    raw = rng.bytes(16 * n)
    ids = [f"<urn:uuid:{uuid.UUID(bytes=raw[16 * i:16 * i + 16], version=4)}>" for i in range(n)]
    d = rng.integers(0, len(dumps), n)
    month = rng.integers(1, 13, n)
    day = rng.integers(1, 29, n)
    secs = rng.integers(0, 86400, n)
    seg = rng.integers(segments[0], segments[1], n)
    dom = rng.integers(0, len(slug_words), (n, 3))
    tld = rng.integers(0, len(tlds), n)
    dump_col, date_col, url_col, path_col = [], [], [], []
    for i in range(n):
        y, wk = dumps[d[i]]
        dump = f"CC-MAIN-{y}-{wk:02d}"
        dump_col.append(dump)
        t = int(secs[i])
        date_col.append(f"{y}-{month[i]:02d}-{day[i]:02d}T{t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}Z")
        a, b, c = (slug_words[j] for j in dom[i])
        url_col.append(f"{scheme}://www.{a}{b}.{tlds[tld[i]]}/{c}/{b}-{a}-{first_row + i}.html")
        path_col.append(f"s3://commoncrawl/crawl-data/{dump}/segments/{seg[i]}.{i % 100}/warc/"
                        f"{dump}-{seg[i] // 1000}-{(first_row + i) % 100000:05d}.warc.gz")
    return ids, dump_col, url_col, date_col, path_col


def generate_corpus(path, rows, seed, vocab_path):
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    t0 = time.perf_counter()
    words, counts, vocab_source = load_vocab(vocab_path)
    log(f"generating {path}: {rows:,} rows, vocabulary: {vocab_source}")
    encoded = [w.encode() for w in words]
    vlen = np.array([len(b) for b in encoded], dtype=np.int64)
    blob = np.frombuffer(b"".join(b + b" " for b in encoded), dtype=np.uint8)
    voff = np.concatenate([[0], np.cumsum(vlen + 1)[:-1]])
    draw_table = np.repeat(np.arange(len(words), dtype=np.int32), counts)  # frequency-weighted draws
    slug_words = [w.lower() for w in words[:5000] if w.isalpha()] or ["page"]

    rng = np.random.default_rng(seed)
    text_rng = np.random.default_rng([seed, 1])
    n_words = np.clip(np.rint(rng.lognormal(np.log(MEDIAN_WORDS), SIGMA, rows)), 1, MAX_WORDS).astype(np.int64)

    dumps = [(y, w) for y in range(2013, 2025) for w in (10, 22, 40, 50)]
    schema = pa.schema([("text", pa.string()), ("id", pa.string()), ("dump", pa.string()), ("url", pa.string()),
                        ("date", pa.string()), ("file_path", pa.string()), ("language", pa.string()),
                        ("language_score", pa.float64()), ("token_count", pa.int64())])
    tlds = ["com", "org", "net", "co.uk", "info", "edu", "io", "de"]
    partial = path + ".partial"
    text_bytes = 0
    writer = pq.ParquetWriter(partial, schema, compression="snappy")
    try:
        for g0 in range(0, rows, ROW_GROUP):
            parts = []
            for s in range(g0, min(g0 + ROW_GROUP, rows), CHUNK):
                e = min(s + CHUNK, rows, g0 + ROW_GROUP)
                n = e - s
                w = n_words[s:e]
                total = int(w.sum())
                idx = draw_table[text_rng.integers(0, len(draw_table), total)]
                wl = vlen[idx] + 1                      # each word and the space after it ...
                doc_end = np.cumsum(w)
                wl[doc_end - 1] -= 1                    # ... but not after a document's last word
                doc_bytes = np.add.reduceat(wl, doc_end - w)
                nbytes = int(wl.sum())
                out_start = np.cumsum(wl) - wl
                src = np.repeat(voff[idx] - out_start, wl) + np.arange(nbytes)
                data = blob[src]
                offsets = np.concatenate([[0], np.cumsum(doc_bytes)]).astype(np.int32)
                text = pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
                text_bytes += nbytes

                ids, dump_col, url_col, date_col, path_col = crawl_columns(
                    rng, n, s, dumps, slug_words, tlds, (1368696381249, 1368708000000), "http")
                tokens = np.rint(w * rng.normal(1.3, 0.08, n)).astype(np.int64)
                parts.append(pa.table([text, pa.array(ids), pa.array(dump_col), pa.array(url_col),
                                       pa.array(date_col), pa.array(path_col), pa.array(["en"] * n),
                                       pa.array(rng.uniform(0.65, 1.0, n)), pa.array(np.maximum(tokens, 1))],
                                      schema=schema))
            writer.write_table(pa.concat_tables(parts), row_group_size=ROW_GROUP)
            if (g0 // ROW_GROUP) % 4 == 3:
                log(f"  {g0 + ROW_GROUP:,} rows, {time.perf_counter() - t0:.0f} s")
    finally:
        writer.close()
    os.replace(partial, path)
    info = corpus_stats(n_words, text_bytes, path, seed, vocab_source)
    info["generated_in_s"] = round(time.perf_counter() - t0, 1)
    with open(path + ".json", "w") as f:
        json.dump(info, f, indent=1)
    return info


def corpus_stats(n_words, text_bytes, path, seed, vocab_source):
    import numpy as np
    return {"path": os.path.relpath(path, ROOT), "rows": int(len(n_words)), "file_bytes": os.path.getsize(path),
            "text_bytes": int(text_bytes), "words_total": int(n_words.sum()),
            "words_median": float(np.median(n_words)), "words_mean": float(n_words.mean()),
            "words_p99": float(np.percentile(n_words, 99)), "words_max": int(n_words.max()),
            "seed": seed, "vocabulary": vocab_source, "row_group_rows": ROW_GROUP, "compression": "snappy",
            "word_counts": f"lognormal(median {MEDIAN_WORDS}, sigma {SIGMA}), rounded, clipped to 1..{MAX_WORDS}"}


def corpus_info(path, rows, seed, vocab_path):
    meta = path + ".json"
    if os.path.exists(path) and os.path.exists(meta):
        with open(meta) as f:
            info = json.load(f)
        if info.get("file_bytes") == os.path.getsize(path):
            return info
    if os.path.exists(path):
        sys.exit(f"{path} exists but its description {meta} is missing or stale; delete the file to regenerate it")
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    return generate_corpus(path, rows, seed, vocab_path)


# ----------------------------------------------------------------------------- peers (workers)
def worker(args):
    """One peer run, in its own process: prints a JSON line, writes the ids to --ids-out."""
    bounded = args.bounded
    t0 = time.perf_counter()
    extra = {}
    if args.worker in ("duckdb", "duckdb-space"):
        import duckdb
        con = duckdb.connect()
        lit = "'" + args.corpus.replace("'", "''") + "'"
        inner = f"SELECT id FROM read_parquet({lit})"
        if bounded:
            # duckdb: whitespace-separated words, as hierarag and pyarrow count them;
            # duckdb-space: pieces between single spaces, the same counts on this corpus (its
            # words are separated by exactly one space) but not a word count in general.
            words = ("len(string_split_regex(trim(text), '\\s+'))" if args.worker == "duckdb"
                     else "len(string_split(text, ' '))")
            inner += f" WHERE {words} BETWEEN {args.min_words} AND {args.max_words}"
        # USING SAMPLE is applied to the FROM clause before WHERE, hence the subquery.
        query = f"SELECT id FROM ({inner}) USING SAMPLE reservoir({args.k} ROWS) REPEATABLE ({args.seed})"
        ids = [r[0] for r in con.execute(query).fetchall()]
        extra = {"threads": con.execute("SELECT current_setting('threads')").fetchone()[0],
                 "version": duckdb.__version__, "query": query}
    elif args.worker == "pyarrow":
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq
        table = pq.read_table(args.corpus, columns=["id", "text"])
        ids_col = table.column("id")
        if bounded:
            masks = []
            for chunk in table.column("text").chunks:  # one row group at a time: the split lists stay small
                words = pc.list_value_length(pc.utf8_split_whitespace(chunk))
                masks.append(pc.and_(pc.greater_equal(words, args.min_words), pc.less_equal(words, args.max_words)))
            ids_col = ids_col.filter(pa.chunked_array(masks, type=pa.bool_()))
        n = len(ids_col)
        pick = np.random.default_rng(args.seed).choice(n, size=min(args.k, n), replace=False)
        ids = ids_col.take(pa.array(pick)).to_pylist()
        extra = {"eligible": n, "version": pa.__version__, "numpy": np.__version__, "threads": pa.cpu_count()}
    else:
        raise SystemExit(f"unknown worker {args.worker}")
    elapsed = time.perf_counter() - t0
    with open(args.ids_out, "w") as f:
        f.write("\n".join(ids) + "\n")
    print(json.dumps(dict(extra, n=len(ids), in_process_s=elapsed)))


def corpus_files(corpus):
    """The files of a corpus path or glob, sorted."""
    import glob
    return sorted(glob.glob(corpus)) if any(c in corpus for c in "*?[") else [corpus]


def shards_info(directory):
    """(glob, description) of a corpus written by bench/fineweb.py, in corpus_stats's keys."""
    path = os.path.join(directory, "corpus.json")
    if not os.path.exists(path):
        sys.exit(f"{path} not found: generate the corpus with bench/fineweb.py --rows N first")
    with open(path) as f:
        man = json.load(f)
    if not man.get("complete"):
        sys.exit(f"{directory}: the corpus is not complete; run bench/fineweb.py again")
    rows = man["rows"]
    info = {"path": os.path.join(directory, "*.parquet"), "rows": rows, "file_bytes": man["file_bytes"],
            "text_bytes": man["text_bytes"], "words_total": man["words"], "words_mean": man["words"] / rows,
            "words_median": man["params"].get("median_words", float("nan")), "seed": man["seed"],
            "vocabulary": man["vocabulary"], "shards": len(man["shards"]), "generator": "bench/fineweb.py"}
    return os.path.join(directory, "*.parquet"), info


def validate(corpus, bounds, outputs, k):
    """Not timed: every engine's ids are distinct, exist, and lie within the bounds; eligible count."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    words = {}
    for path in corpus_files(corpus):
        for batch in pq.ParquetFile(path).iter_batches(batch_size=65536, columns=["id", "text"]):
            wc = pc.list_value_length(pc.utf8_split_whitespace(batch.column(1))).to_pylist()
            words.update(zip(batch.column(0).to_pylist(), wc))
    report = {}
    for scen, (lo, hi) in bounds.items():
        eligible = sum(1 for w in words.values() if lo <= w <= hi)
        report[scen] = {"eligible": eligible, "engines": {}}
        for engine, ids in outputs.get(scen, {}).items():
            bad = [i for i in ids if not (lo <= words.get(i, -1) <= hi)]
            report[scen]["engines"][engine] = {
                "n": len(ids), "distinct": len(set(ids)), "outside_bounds_or_unknown": len(bad),
                "ok": len(ids) == min(k, eligible) and len(set(ids)) == len(ids) and not bad}
    return report


def read_ids(engine, path):
    if engine == "hierarag":
        ids = []
        with open(path) as f:
            for line in f:
                ids.extend(json.loads(line)["doc_ids"])
        return ids
    with open(path) as f:
        return [l for l in f.read().splitlines() if l]


# ----------------------------------------------------------------------------- runs
def engine_cmd(engine, args, corpus, scen, bounds, out_file):
    lo, hi = bounds
    if engine == "hierarag":
        cmd = [args.hierarag, "plan", "--design", "rq2", "--corpus", corpus, "--seed", str(args.seed),
               "--out", out_file, "--overwrite", "-q"]
        if scen == "bounded":
            cmd += ["--min-words", str(lo), "--max-words", str(hi)]
        return cmd
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", engine, "--corpus", corpus,
           "--k", str(args.sample), "--seed", str(args.seed), "--ids-out", out_file]
    if scen == "bounded":
        cmd += ["--bounded", "--min-words", str(lo), "--max-words", str(hi)]
    return cmd


ENGINE_LABEL = {"hierarag": "hierarag plan", "duckdb": "DuckDB", "duckdb-space": "DuckDB, split on ' '",
                "pyarrow": "pyarrow + numpy"}
BOUNDED_ONLY = {"duckdb-space"}  # the same query as duckdb when there is no word count
SCEN_LABEL = {"unbounded": "no length bounds", "bounded": "100–2000 words"}


def summarize(results):
    rows = results["rows"]
    summary = {}
    for scen, per_engine in results["runs"].items():
        summary[scen] = {}
        for engine, runs in per_engine.items():
            ok = [r for r in runs if r["rc"] == 0]
            if not ok:
                summary[scen][engine] = {"failed": True}
                continue
            med = statistics.median(r["wall_s"] for r in ok)
            summary[scen][engine] = {
                "median_s": med, "docs_per_s": rows / med, "min_s": min(r["wall_s"] for r in ok),
                "max_s": max(r["wall_s"] for r in ok),
                "peak_rss_mb": max(r["peak_rss_kb"] for r in ok) / 1024,
                "cpu_s": statistics.median(r["user_s"] + r["sys_s"] for r in ok),
                "busy": sum(1 for r in ok if r["other_cpu_s"] / r["wall_s"] > BUSY_CORES) * 2 > len(ok),
                "in_process_s": statistics.median(json.loads(r["output"].strip().splitlines()[-1])["in_process_s"]
                                                  for r in ok) if engine != "hierarag" else None}
        h = summary[scen].get("hierarag", {})
        for engine, s in summary[scen].items():
            if engine != "hierarag" and "median_s" in s and "median_s" in h:
                s["hierarag_speed_ratio"] = s["median_s"] / h["median_s"]
                s["hierarag_cpu_ratio"] = s["cpu_s"] / h["cpu_s"]
    return summary


def print_report(results):
    c = results["corpus"]
    print(f"\ncorpus {os.path.relpath(c['path'], ROOT) if os.path.isabs(c['path']) else c['path']}: "
          f"{c['rows']:,} rows, file {c['file_bytes'] / 1e6:,.1f} MB, "
          f"text {c['text_bytes'] / 1e6:,.1f} MB; words median {c['words_median']:.0f}, mean {c['words_mean']:.0f}")
    m = results["machine"]
    print(f"machine: {m.get('cpu_model')}, {m.get('nproc')} cores, {m.get('mem_total_gb')} GB; "
          f"{m.get('hierarag_version')} at {m.get('git_head')}{' + working tree' if m.get('git_dirty_crates') else ''}")
    print(f"sample: {results['sample']} documents, seed {results['seed']}, {results['reps']} repetitions (median)\n")
    print("| engine | scenario | median s | docs/s | peak RSS MB | CPU s | hierarag/peer speed | hierarag/peer CPU |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for scen, per_engine in results["summary"].items():
        for engine, s in per_engine.items():
            if s.get("failed"):
                print(f"| {ENGINE_LABEL[engine]} | {SCEN_LABEL[scen]} | failed | | | | | |")
                continue
            ratio = f"{s['hierarag_speed_ratio']:.2f}×" if "hierarag_speed_ratio" in s else ""
            cpu_ratio = f"{s['hierarag_cpu_ratio']:.2f}×" if "hierarag_cpu_ratio" in s else ""
            flag = "*" if s["busy"] else ""
            print(f"| {ENGINE_LABEL[engine]} | {SCEN_LABEL[scen]} | {s['median_s']:.2f}{flag} | "
                  f"{s['docs_per_s']:,.0f} | {s['peak_rss_mb']:,.0f} | {s['cpu_s']:.1f} | {ratio} | {cpu_ratio} |")
    print("\nspeed ratio = peer wall seconds / hierarag wall seconds, CPU ratio = peer CPU seconds (user + sys) /"
          " hierarag CPU seconds; > 1: hierarag is faster or cheaper;\n* = other processes used > 0.25 cores"
          " during most repetitions (then wall times favour single-threaded hierarag; CPU seconds less so)")
    v = results.get("validation")
    if v:
        for scen, r in v.items():
            oks = ", ".join(f"{e} {'ok' if x['ok'] else 'WRONG ' + json.dumps(x)}" for e, x in r["engines"].items())
            print(f"check {SCEN_LABEL[scen]}: {r['eligible']:,} eligible documents; {oks}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hierarag", default=os.path.join(ROOT, "target", "release", "hierarag"))
    ap.add_argument("--vocab", help="wiki-sample JSONL for the vocabulary (hierarag data fetch wiki-sample --print-path)")
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    ap.add_argument("--rows", type=int, default=DEFAULT_ROWS)
    ap.add_argument("--corpus", help="corpus file (default OUT/fineweb-1m.parquet for 1M rows)")
    ap.add_argument("--shards", metavar="DIR",
                    help="a FineWeb-shaped corpus of bench/fineweb.py (DIR/corpus.json and its shards) instead of "
                         "--corpus: every engine reads DIR/*.parquet")
    ap.add_argument("--corpus-seed", type=int, default=20240601)
    ap.add_argument("--seed", type=int, default=42, help="sampling seed of every engine")
    ap.add_argument("--sample", type=int, default=SAMPLE, help="documents the peers draw (rq2 plan: 3336)")
    ap.add_argument("--min-words", type=int, default=100)
    ap.add_argument("--max-words", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--engines", default="hierarag,duckdb,duckdb-space,pyarrow",
                    help="duckdb-space (word count = pieces between single spaces) runs with bounds only")
    ap.add_argument("--scenarios", default="unbounded,bounded")
    ap.add_argument("--max-wait-quiet", type=int, default=300)
    ap.add_argument("--no-validate", action="store_true")
    ap.add_argument("--report", metavar="RESULTS_JSON", help="only print the table of an earlier run")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--k", type=int, default=SAMPLE, help=argparse.SUPPRESS)
    ap.add_argument("--ids-out", help=argparse.SUPPRESS)
    ap.add_argument("--bounded", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    if args.report:
        with open(args.report) as f:
            return print_report(json.load(f))
    ensure_packages(PACKAGES, "bench/plan.sh")
    if not os.access(args.hierarag, os.X_OK):
        sys.exit(f"{args.hierarag} not found; cargo build --release -p hierarag")

    if args.shards:
        corpus, info = shards_info(os.path.abspath(args.shards))
    else:
        name = "fineweb-1m.parquet" if args.rows == DEFAULT_ROWS else f"fineweb-{args.rows}.parquet"
        corpus = os.path.abspath(args.corpus or os.path.join(args.out, name))
        info = corpus_info(corpus, args.rows, args.corpus_seed, args.vocab)
    print(f"[plan-bench] corpus {os.path.relpath(corpus, ROOT)}: {info['rows']:,} rows, "
          f"file {info['file_bytes']:,} bytes ({info['file_bytes'] / 1e6:,.1f} MB), "
          f"text {info['text_bytes']:,} bytes ({info['text_bytes'] / 1e6:,.1f} MB)", file=sys.stderr, flush=True)

    engines = [e for e in args.engines.split(",") if e]
    scenarios = [s for s in args.scenarios.split(",") if s]
    bounds = {"unbounded": (0, 1 << 62), "bounded": (args.min_words, args.max_words)}
    work = os.path.join(args.out, "plan-work")
    os.makedirs(work, exist_ok=True)
    results = {"started": datetime.datetime.now().isoformat(timespec="seconds"),
               "machine": machine_info(args.hierarag), "corpus": info, "rows": info["rows"],
               "sample": args.sample, "seed": args.seed, "reps": args.reps,
               "bounds": {"min_words": args.min_words, "max_words": args.max_words},
               "timing": "/usr/bin/time -f %M" if os.path.exists("/usr/bin/time") else "wait4 ru_maxrss",
               "runs": {s: {e: [] for e in engines if s == "bounded" or e not in BOUNDED_ONLY}
                        for s in scenarios}}
    res_path = os.path.join(args.out, "plan-results.json")

    # Page cache: read the files once so that every engine starts from the same warm cache,
    # when they fit in half the memory (otherwise every engine reads from disk).
    files = corpus_files(corpus)
    if sum(os.path.getsize(f) for f in files) < 0.5 * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"):
        for path in files:
            with open(path, "rb") as f:
                while f.read(1 << 24):
                    pass
        results["page_cache"] = "warm"
    else:
        results["page_cache"] = "larger than half the memory: read from disk"
    outputs = {s: {} for s in scenarios}
    for rep in range(args.reps):
        for scen in scenarios:
            for engine in results["runs"][scen]:
                out_file = os.path.join(work, f"{engine}-{scen}.{'jsonl' if engine == 'hierarag' else 'ids'}")
                cmd = engine_cmd(engine, args, corpus, scen, bounds[scen], out_file)
                r = timed_child(cmd, os.path.join(work, f"{engine}-{scen}-{rep}.log"), args.max_wait_quiet, ROOT)
                r["cmd"] = " ".join(os.path.relpath(c, ROOT) if c.startswith(ROOT) else c for c in cmd)
                results["runs"][scen][engine].append(r)
                log(f"rep {rep + 1}/{args.reps} {scen:9s} {engine:8s} {r['wall_s']:7.2f} s  "
                    f"{r['peak_rss_kb'] / 1024:7.0f} MB  rc {r['rc']}")
                if r["rc"] != 0:
                    log(f"  failed: {r['output'][-500:]}")
                else:
                    ids = read_ids(engine, out_file)
                    prev = outputs[scen].get(engine)
                    r["same_ids_as_previous_rep"] = None if prev is None else prev == ids
                    outputs[scen][engine] = ids
                with open(res_path, "w") as f:
                    json.dump(results, f, indent=1)
    results["summary"] = summarize(results)
    if not args.no_validate:
        log("checking the samples (not timed)")
        results["validation"] = validate(corpus, {s: bounds[s] for s in scenarios}, outputs, args.sample)
    results["finished"] = datetime.datetime.now().isoformat(timespec="seconds")
    with open(res_path, "w") as f:
        json.dump(results, f, indent=1)
    print_report(results)
    print(f"\nresults: {os.path.relpath(res_path, os.getcwd())}")


if __name__ == "__main__":
    main()
