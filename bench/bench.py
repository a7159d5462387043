#!/usr/bin/env python3
"""HieraRAG BM25 benchmark driver (called by bench/run.sh; stdlib only).

For each corpus scale (1x = the 10,033-article Wikipedia sample, Nx = N
concatenated copies, copy c > 0 with ids `{id}__c{c}`):

  * hierarag: `hierarag index` (default threads = one per core, default
    256 MB writer heap) timed as the wall time of the whole process, plus the
    in-process MB/s it prints, peak RSS from /usr/bin/time -f %M; then
    `hierarag retrieve -k 10 --threads 1` with the 10,033 titles as queries,
    taking the queries/s it prints (query analysis + search, no process start,
    no index open, no file I/O);
  * peers (bench/peers.py, one process per engine per scale): bm25s with the
    numba backend, and PISA via pyterrier-pisa (block-max MaxScore).

Prints a table with index MB/s and queries/s per engine and hierarag's ratio
to the faster peer, and writes bench/out/results.json.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
COPY_SUFFIX = re.compile(r"__c\d+$")


def log(msg):
    print(f"[bench {datetime.datetime.now():%H:%M:%S}] {msg}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- machine state
def cpu_jiffies():
    with open("/proc/stat") as f:
        parts = f.readline().split()[1:]
    vals = [int(x) for x in parts]
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
    return sum(vals[:8]), idle


def busy_cores(interval=1.0):
    t0, i0 = cpu_jiffies()
    time.sleep(interval)
    t1, i1 = cpu_jiffies()
    dt = max(t1 - t0, 1)
    return (dt - (i1 - i0)) / dt * os.cpu_count()


def wait_quiet(max_wait, threshold=0.3):
    """Wait until other processes use < threshold cores (2 consecutive 1 s
    samples), at most max_wait seconds. Returns (busy_cores_seen, waited_s)."""
    start = time.time()
    ok = 0
    b = busy_cores()
    while True:
        if b < threshold:
            ok += 1
            if ok >= 2:
                break
        else:
            ok = 0
        if time.time() - start > max_wait:
            log(f"machine still busy ({b:.2f} cores used by others) after {max_wait}s; measuring anyway")
            break
        b = busy_cores()
    return b, time.time() - start


def timed_child(cmd, log_path, max_wait_quiet, root):
    """Wall time, CPU and peak RSS of one process (/usr/bin/time -f '%M %U %S' when present, else
    wait4()), after waiting for the machine to be quiet; the log path is reported relative to root.
    Used by plan.py and analysis.py."""
    busy_before, waited = wait_quiet(max_wait_quiet)
    use_time = os.path.exists("/usr/bin/time")
    tfile = log_path + ".time"
    full = (["/usr/bin/time", "-f", "%M %U %S", "-o", tfile] + cmd) if use_time else cmd
    tot0, idle0 = cpu_jiffies()
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    with open(log_path, "w") as lf:
        p = subprocess.Popen(full, stdout=lf, stderr=subprocess.STDOUT)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    tot1, idle1 = cpu_jiffies()
    busy_s = ((tot1 - tot0) - (idle1 - idle0)) / os.sysconf("SC_CLK_TCK")
    rss, user, sys_ = ru.ru_maxrss, ru.ru_utime, ru.ru_stime  # of /usr/bin/time itself when used
    if use_time:
        try:
            with open(tfile) as f:
                last = [l for l in f.read().splitlines() if l.strip()][-1].split()
            rss, user, sys_ = int(last[0]), float(last[1]), float(last[2])
        except Exception:
            pass
    with open(log_path, errors="replace") as f:
        output = f.read()
    return {"wall_s": wall, "peak_rss_kb": rss, "user_s": user, "sys_s": sys_,
            "other_cpu_s": max(0.0, busy_s - user - sys_), "busy_cores_before": busy_before,
            "loadavg_1m_before": load0, "waited_quiet_s": waited, "rc": p.returncode,
            "output": output[-2000:], "log": os.path.relpath(log_path, root)}


def ensure_packages(modules, script):
    """Install the missing ones of `modules` ({import name: pip name}) into this interpreter's
    environment; outside a venv, exit saying to run `script` (which creates bench/.venv)."""
    missing = []
    for name, pip_name in modules.items():
        try:
            __import__(name)
        except ImportError:
            missing.append(pip_name)
    if missing:
        if sys.prefix == sys.base_prefix:
            sys.exit(f"missing Python packages {missing}; run {script} (it creates bench/.venv), "
                     f"or bench/.venv/bin/python -m pip install {' '.join(missing)}")
        log(f"installing {' '.join(missing)} into {sys.prefix}")
        subprocess.run([sys.executable, "-m", "pip", "install", "-q"] + missing, check=True)


def child_pid(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = f.read().split()
        return int(kids[0]) if kids else None
    except OSError:
        return None


def sample_status(pid, peaks):
    """Record the peaks of RssAnon / RssFile (kB) of pid from /proc/pid/status."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("RssAnon", "RssFile", "VmRSS"):
                    peaks[k] = max(peaks.get(k, 0), int(v.split()[0]))
    except (OSError, ValueError, IndexError):
        pass


def timed_process(cmd, env=None, log_path=None, timeout=None, max_wait_quiet=300, sample_rss=False):
    """Run cmd under /usr/bin/time; returns dict with wall_s, peak_rss_kb (%M),
    user_s, sys_s, other_cpu_s (CPU used by other processes during the run),
    rc, output text; with sample_rss, also the peaks of RssAnon and RssFile
    sampled every 20 ms from /proc (anonymous memory vs file-backed pages,
    e.g. mmapped index segments)."""
    busy_before, waited = wait_quiet(max_wait_quiet)
    tfile = log_path + ".time"
    full = ["/usr/bin/time", "-f", "%M %U %S", "-o", tfile] + cmd
    tot0, idle0 = cpu_jiffies()
    t0 = time.perf_counter()
    timed_out = False
    peaks = {}
    with open(log_path, "w") as lf:
        p = subprocess.Popen(full, stdout=lf, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            if sample_rss:
                kid = None
                while p.poll() is None:
                    if timeout is not None and time.perf_counter() - t0 > timeout:
                        raise subprocess.TimeoutExpired(full, timeout)
                    kid = kid or child_pid(p.pid)
                    if kid:
                        sample_status(kid, peaks)
                    time.sleep(0.02)
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)  # our own child's process group
            p.wait()
            rc, timed_out = None, True
    wall = time.perf_counter() - t0
    tot1, idle1 = cpu_jiffies()
    hz = os.sysconf("SC_CLK_TCK")
    busy_s = ((tot1 - tot0) - (idle1 - idle0)) / hz
    rss = user = sys_ = None
    try:
        with open(tfile) as f:
            last = [l for l in f.read().splitlines() if l.strip()][-1].split()
        rss, user, sys_ = int(last[0]), float(last[1]), float(last[2])
    except Exception:
        pass
    with open(log_path, errors="replace") as f:
        text = f.read()
    other = None if user is None else max(0.0, busy_s - user - sys_)
    return {"cmd": " ".join(cmd), "wall_s": wall, "peak_rss_kb": rss, "user_s": user, "sys_s": sys_,
            "sampled_peak_anon_kb": peaks.get("RssAnon"), "sampled_peak_file_kb": peaks.get("RssFile"),
            "other_cpu_s": other, "busy_cores_before": busy_before, "waited_quiet_s": waited,
            "rc": rc, "timed_out": timed_out, "log": os.path.relpath(log_path, ROOT), "output": text}


def median(xs):
    return statistics.median(xs)


# ----------------------------------------------------------------------------- data
def make_corpora(src, out_dir, scales):
    """Write {out_dir}/wiki-x{n}.jsonl for each n, and the title queries."""
    os.makedirs(out_dir, exist_ok=True)
    docs = []
    with open(src, encoding="utf-8") as f:
        for line in f:
            docs.append(json.loads(line))
    text_bytes = sum(len(d["text"].encode("utf-8")) for d in docs)
    src_stat = os.stat(src)
    qpath = os.path.join(out_dir, "queries-titles.jsonl")
    with open(qpath, "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps({"id": d["id"], "query": d["title"]}, ensure_ascii=False) + "\n")
    corpora = {}
    for n in sorted(set(scales)):
        path = os.path.join(out_dir, f"wiki-x{n}.jsonl")
        meta_path = path + ".meta.json"
        meta = {"source": src, "source_size": src_stat.st_size, "source_mtime": src_stat.st_mtime,
                "copies": n, "docs": n * len(docs), "text_bytes": n * text_bytes}
        if os.path.exists(path) and os.path.exists(meta_path):
            with open(meta_path) as f:
                if json.load(f) == meta:
                    corpora[n] = dict(meta, path=path)
                    continue
        log(f"writing {n}x corpus ({n * len(docs)} docs) to {os.path.relpath(path, ROOT)}")
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            for c in range(n):
                for d in docs:
                    e = dict(d)
                    if c > 0:
                        e["id"] = f"{d['id']}__c{c}"
                    f.write(json.dumps(e, ensure_ascii=False) + "\n")
        os.replace(tmp, path)
        with open(meta_path, "w") as f:
            json.dump(meta, f)
        corpora[n] = dict(meta, path=path)
    return corpora, qpath, len(docs)


def dir_mb(path):
    total = 0
    for dp, _, fns in os.walk(path):
        for fn in fns:
            fp = os.path.join(dp, fn)
            if os.path.isfile(fp):
                total += os.path.getsize(fp)
    return total / 1e6


def top1_own_trec(run_path, qids):
    top1 = {}
    with open(run_path) as f:
        for line in f:
            p = line.split()
            if len(p) >= 4 and p[3] == "1":
                top1[p[0]] = p[2]
    hits = sum(1 for q in qids if q in top1 and COPY_SUFFIX.sub("", top1[q]) == q)
    return hits / len(qids), sum(1 for q in qids if q not in top1)


# ----------------------------------------------------------------------------- hierarag
INDEX_RE = re.compile(r"indexed (\d+) documents into (\d+) chunks.*?in ([\d.]+) s: (\d+) docs/s, ([\d.]+) MB/s")
RETRIEVE_RE = re.compile(r"retrieved top (\d+) for (\d+) queries in ([\d.]+) s \(([\d.]+) queries/s\)")


def hierarag_index(binary, corpus, idx_dir, log_path, args, heap_mb=None, extra_args=()):
    cmd = [binary, "index", "--corpus", corpus["path"], "--out", idx_dir, "--overwrite"]
    if heap_mb:
        cmd += ["--writer-heap-mb", str(heap_mb)]
    cmd += list(extra_args)
    r = timed_process(cmd, log_path=log_path, max_wait_quiet=args.max_wait_quiet, sample_rss=True)
    if r["rc"] != 0:
        raise SystemExit(f"hierarag index failed (rc={r['rc']}), see {log_path}")
    m = INDEX_RE.search(r["output"])
    if not m:
        raise SystemExit(f"could not parse the summary line of hierarag index, see {log_path}")
    mb = corpus["text_bytes"] / 1e6
    return {"wall_s": r["wall_s"], "wall_mb_s": mb / r["wall_s"], "inproc_mb_s": float(m.group(5)),
            "inproc_docs_s": int(m.group(4)), "chunks": int(m.group(2)), "peak_rss_kb": r["peak_rss_kb"],
            "sampled_peak_anon_kb": r["sampled_peak_anon_kb"], "sampled_peak_file_kb": r["sampled_peak_file_kb"],
            "writer_heap_mb": heap_mb or 256,
            "cpu_s": r["user_s"] + r["sys_s"], "other_cpu_s": r["other_cpu_s"],
            "busy_cores_before": r["busy_cores_before"], "log": r["log"]}


def hierarag_retrieve(binary, idx_dir, queries, run_path, log_path, args):
    cmd = [binary, "retrieve", "--index", idx_dir, "--queries", queries, "--out", run_path,
           "-k", "10", "--threads", "1"]
    r = timed_process(cmd, log_path=log_path, max_wait_quiet=args.max_wait_quiet)
    if r["rc"] != 0:
        raise SystemExit(f"hierarag retrieve failed (rc={r['rc']}), see {log_path}")
    m = RETRIEVE_RE.search(r["output"])
    if not m:
        raise SystemExit(f"could not parse the summary line of hierarag retrieve, see {log_path}")
    return {"qps": float(m.group(4)), "seconds_printed": float(m.group(3)), "process_wall_s": r["wall_s"],
            "peak_rss_kb": r["peak_rss_kb"], "other_cpu_s": r["other_cpu_s"], "log": r["log"]}


def run_hierarag(binary, corpus, n, queries, qids, work, args, index_reps):
    idx_dir = os.path.join(work, f"hierarag-x{n}")
    idx = [hierarag_index(binary, corpus, idx_dir, os.path.join(work, f"hierarag-index-x{n}-r{i}.log"), args)
           for i in range(index_reps)]
    run_path = os.path.join(work, f"hierarag-x{n}.trec")
    q = [hierarag_retrieve(binary, idx_dir, queries, run_path, os.path.join(work, f"hierarag-retrieve-x{n}-r{i}.log"), args)
         for i in range(args.query_reps)]
    top1, empty = top1_own_trec(run_path, qids)
    out = {
        "engine": "hierarag",
        "index_threads": f"default (0 = one per core = {os.cpu_count()})",
        "writer_heap_mb": 256,
        "index_runs": idx,
        "index_mb_s": median([x["wall_mb_s"] for x in idx]),
        "index_inproc_mb_s": median([x["inproc_mb_s"] for x in idx]),
        "index_peak_rss_kb": max(x["peak_rss_kb"] for x in idx),
        "index_disk_mb": dir_mb(idx_dir),
        "query_runs": q,
        "qps": median([x["qps"] for x in q]),
        "top1_own": top1,
        "queries_without_results": empty,
    }
    if not args.keep_indexes:
        shutil.rmtree(idx_dir, ignore_errors=True)
    return out


# ----------------------------------------------------------------------------- peers
def run_peer(engine, corpus, n, queries, work, args, index_reps, extra_args=()):
    pwork = os.path.join(work, f"{engine}-x{n}")
    os.makedirs(pwork, exist_ok=True)
    jout = os.path.join(work, f"{engine}-x{n}.json")
    if os.path.exists(jout):
        os.remove(jout)
    env = dict(os.environ)
    env["NUMBA_NUM_THREADS"] = "1"   # numba: single thread (bm25s query phase; its indexing is serial anyway)
    env["PYTHONUNBUFFERED"] = "1"
    cmd = [sys.executable, os.path.join(HERE, "peers.py"), "--engine", engine, "--corpus", corpus["path"],
           "--queries", queries, "--workdir", pwork, "--json-out", jout,
           "--index-reps", str(index_reps), "--query-reps", str(args.query_reps)] + list(extra_args)
    log(f"  {engine} x{n} ...")
    r = timed_process(cmd, env=env, log_path=os.path.join(work, f"{engine}-x{n}.log"),
                      timeout=args.peer_timeout, max_wait_quiet=args.max_wait_quiet)
    if not args.keep_indexes:
        shutil.rmtree(pwork, ignore_errors=True)
    if r["timed_out"]:
        return {"engine": engine, "failed": f"did not finish within {args.peer_timeout} s", "log": r["log"]}
    if r["rc"] != 0 or not os.path.exists(jout):
        tail = "\n".join(r["output"].splitlines()[-5:])
        oom = r["rc"] in (-9, 137) or "MemoryError" in r["output"]
        return {"engine": engine, "failed": f"rc={r['rc']}" + (" (out of memory?)" if oom else "") + f": {tail}",
                "peak_rss_kb": r["peak_rss_kb"], "log": r["log"]}
    with open(jout) as f:
        res = json.load(f)
    res.update({"process_peak_rss_kb": r["peak_rss_kb"], "process_wall_s": r["wall_s"],
                "process_other_cpu_s": r["other_cpu_s"], "log": r["log"]})
    return res


# ----------------------------------------------------------------------------- report
def peer_ratios(summary, base="hierarag"):
    """Adds to every other engine's entry of `summary` (engine -> median_s, min_s, cpu_s) its
    time over `base`'s: ratio (medians), ratio_min and cpu_ratio; > 1 means `base` is faster."""
    h = summary.get(base, {})
    for engine, s in summary.items():
        if engine != base and "median_s" in s and "median_s" in h:
            s["ratio"] = s["median_s"] / h["median_s"]
            s["ratio_min"] = s["min_s"] / h["min_s"]
            s["cpu_ratio"] = s["cpu_s"] / max(h["cpu_s"], 1e-9)


def fmt(x, nd=1):
    return "-" if x is None else f"{x:,.{nd}f}"


BUSY_CORES = 0.25  # other processes using more than this many cores on average: flag the figure


def is_busy(other_cpu_s, wall_s):
    return other_cpu_s is not None and bool(wall_s) and other_cpu_s > 0.05 and other_cpu_s / wall_s > BUSY_CORES


def busy_flag(other_cpu_s, wall_s):
    return "*" if is_busy(other_cpu_s, wall_s) else ""


def busy_majority(runs, wall_key):
    """'*' when most repetitions (so possibly the median) ran while the machine was busy."""
    n = sum(1 for x in runs if is_busy(x["other_cpu_s"], x[wall_key]))
    return "*" if n * 2 > len(runs) else ""


def summarize(scale_res):
    """Rows (name, index MB/s, alt MB/s, q/s, top1, peak RSS KB, flag) and ratios for one scale."""
    eng = scale_res["engines"]
    h = eng.get("hierarag")
    peers = {k: v for k, v in eng.items() if k != "hierarag" and "failed" not in v}
    rows = []
    if h:
        flag = busy_majority(h["index_runs"], "wall_s") or busy_majority(h["query_runs"], "process_wall_s")
        rows.append(("hierarag", h["index_mb_s"], h["index_inproc_mb_s"], h["qps"], h["top1_own"],
                     h["index_peak_rss_kb"], flag))
    idx_peer, q_peer = [], []
    if "bm25s" in peers:
        b = peers["bm25s"]
        flag = busy_flag(b["process_other_cpu_s"], b["process_wall_s"])
        rows.append(("bm25s-numba", b["index_mb_s"], None, b["qps"], b["top1_own"], b["process_peak_rss_kb"], flag))
        idx_peer.append(("bm25s-numba", b["index_mb_s"]))
        q_peer.append(("bm25s-numba", b["qps"]))
    if "pisa" in peers:
        p = peers["pisa"]
        flag = busy_flag(p["process_other_cpu_s"], p["process_wall_s"])
        rows.append(("pisa (bmm, terrier stops)", p["index_mb_s"], p["index_only_mb_s"], p["qps"], p["top1_own"],
                     p["process_peak_rss_kb"], flag))
        lv = p["stop_variants"]["lucene"]
        rows.append(("pisa (bmm, lucene stops)", None, None, lv["qps"], lv["top1_own"], None, flag))
        idx_peer.append(("pisa", p["index_mb_s"]))
        q_peer.append(("pisa (terrier stops)", p["qps"]))
        q_peer.append(("pisa (lucene stops)", lv["qps"]))
    ratios = {}
    if h and idx_peer:
        name, best = max(idx_peer, key=lambda x: x[1])
        ratios["index_faster_peer"] = name
        ratios["index_faster_peer_mb_s"] = best
        ratios["index_wall_vs_faster_peer"] = h["index_mb_s"] / best
        ratios["index_inproc_vs_faster_peer"] = h["index_inproc_mb_s"] / best
        # most conservative: PISA without its bmw/compression step
        cons = max([v for _, v in idx_peer] + ([peers["pisa"]["index_only_mb_s"]] if "pisa" in peers else []))
        ratios["index_wall_vs_fastest_peer_figure_conservative"] = h["index_mb_s"] / cons
    if h and q_peer:
        name, best = max(q_peer, key=lambda x: x[1])
        ratios["qps_faster_peer"] = name
        ratios["qps_faster_peer_value"] = best
        ratios["qps_vs_faster_peer"] = h["qps"] / best
    return rows, ratios


def print_report(results):
    print()
    print("HieraRAG BM25 benchmark: 10,033 Wikipedia titles as queries, top 10, 1 query thread")
    print(f"machine: {results['machine']['cpu_model']}, {results['machine']['nproc']} cores; "
          f"hierarag index uses the default thread count ({results['machine']['nproc']})")
    print()
    hdr = (f"{'scale':>5} {'docs':>9} {'text MB':>8}  {'engine':<26} {'index MB/s':>10} {'(in-proc/idx-only)':>18} "
           f"{'queries/s':>10} {'top1 own':>8} {'peak RSS MB':>11}")
    print(hdr)
    print("-" * len(hdr))
    flagged = False
    for n, sr in sorted(results["scales"].items(), key=lambda kv: int(kv[0])):
        rows, ratios = summarize(sr)
        first = True
        for name, imb, alt, qps, top1, rss, flag in rows:
            flagged = flagged or bool(flag)
            pre = f"{n + 'x':>5} {sr['docs']:>9,} {sr['text_mb']:>8.1f}" if first else " " * 24
            first = False
            print(f"{pre}  {name + flag:<26} {fmt(imb):>10} {fmt(alt):>18} {fmt(qps, 0):>10} "
                  f"{fmt(top1, 3):>8} {fmt(None if rss is None else rss / 1024, 0):>11}")
        for k, v in sr["engines"].items():
            if "failed" in v:
                print(" " * 24 + f"  {k:<26} FAILED: {v['failed'].splitlines()[0]}")
        if ratios:
            line = " " * 24 + "  ratio hierarag / faster peer:"
            if "index_faster_peer" in ratios:
                line += (f" index {ratios['index_wall_vs_faster_peer']:.2f}x wall"
                         f" ({ratios['index_inproc_vs_faster_peer']:.2f}x in-process) vs {ratios['index_faster_peer']};")
            if "qps_faster_peer" in ratios:
                line += f" queries {ratios['qps_vs_faster_peer']:.2f}x vs {ratios['qps_faster_peer']}"
            print(line)
        print()
    if flagged:
        print(f"* other processes used more than {BUSY_CORES} cores on average during this measurement (most reps);")
        print("  see other_cpu_s in results.json and rerun when the machine is quiet.")
        print()
    if results.get("memory"):
        def mb(kb):
            return "-" if kb is None else f"{kb / 1024:.0f}"
        print("hierarag index peak RSS (/usr/bin/time %M; anon/file = peaks of RssAnon/RssFile sampled every 20 ms):")
        rows = sorted(results["memory"].items(), key=lambda kv: int(kv[0]))
        if results.get("memory_alt_heap"):
            a = results["memory_alt_heap"]
            rows.append((str(a["scale"]), a))
        for n, m in rows:
            print(f"  {n + 'x':>5} {m['docs']:>9,} docs {m['text_mb']:>7.1f} MB text, heap {m.get('writer_heap_mb', 256):>4} MB: "
                  f"peak RSS {mb(m['peak_rss_kb']):>5} MB (anon {mb(m.get('sampled_peak_anon_kb')):>5}, "
                  f"file {mb(m.get('sampled_peak_file_kb')):>5}), {m['wall_mb_s']:.1f} MB/s wall")
    print()
    print("index MB/s: hierarag = text MB / wall time of the whole `hierarag index` process (in-process figure")
    print("in brackets); bm25s = tokenize + index in memory (1 thread); pisa = index() + bmw data + compression")
    print("(PISA's own 2 TBB workers; its index()-only figure in brackets). Peers get documents pre-parsed.")
    print("top1 own = share of titles whose own article (any copy) is ranked first (sanity check).")
    print("peak RSS: hierarag = the index process; peers = their whole benchmark process (corpus held in Python).")


def machine_info(binary):
    info = {"nproc": os.cpu_count(), "platform": platform.platform(), "python": sys.version.split()[0]}
    model = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            key, _, val = line.partition(":")
            key = key.strip()
            if key == "model name" and model == "?":
                model = val.strip()
            elif key in ("cpu family", "model") and key.replace(" ", "_") not in info:
                info[key.replace(" ", "_")] = val.strip()
    info["cpu_model"] = model
    with open("/proc/meminfo") as f:
        info["mem_total_gb"] = round(int(f.readline().split()[1]) / 1024 / 1024, 1)
    def sh(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT).stdout.strip()
        except Exception:
            return "?"
    info["hierarag_version"] = sh([binary, "--version"])
    info["rustc"] = sh(["rustc", "--version"])
    info["git_head"] = sh(["git", "rev-parse", "--short", "HEAD"])
    info["git_dirty_crates"] = bool(sh(["git", "status", "--porcelain", "crates", "Cargo.lock"]))
    return info


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scales", default="1,10,100")
    ap.add_argument("--mem-scales", default="1,4", help="extra scales at which only hierarag indexing (peak RSS) is measured")
    ap.add_argument("--hierarag", default=os.path.join(ROOT, "target", "release", "hierarag"))
    ap.add_argument("--source", help="wiki-sample JSONL (hierarag data fetch wiki-sample --print-path)")
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    ap.add_argument("--index-reps", type=int, default=5,
                    help="indexing repetitions at scales < 10 (at most 3 below 100, 1 from 100 on)")
    ap.add_argument("--query-reps", type=int, default=5)
    ap.add_argument("--corpus-dir", default=None, help="where the generated corpora live (default OUT/corpus)")
    ap.add_argument("--engines", default="hierarag,bm25s,pisa")
    ap.add_argument("--peer-timeout", type=int, default=3600, help="seconds per peer process")
    ap.add_argument("--max-wait-quiet", type=int, default=300,
                    help="wait up to this many seconds for other processes to go quiet before each measurement")
    ap.add_argument("--alt-heap-mb", type=int, default=64,
                    help="also index the largest memory scale with this writer heap (0: skip)")
    ap.add_argument("--keep-indexes", action="store_true")
    ap.add_argument("--report", metavar="RESULTS_JSON", help="only print the table of an earlier run")
    args = ap.parse_args()
    if args.report:
        with open(args.report) as f:
            print_report(json.load(f))
        return
    if not args.source:
        ap.error("--source is required")

    scales = [int(s) for s in args.scales.split(",") if s.strip()]
    mem_scales = sorted(set(int(s) for s in args.mem_scales.split(",") if s.strip()) | set(scales))
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    os.makedirs(args.out, exist_ok=True)
    work = os.path.join(args.out, "work")
    os.makedirs(work, exist_ok=True)

    corpora, queries, ndocs = make_corpora(args.source, args.corpus_dir or os.path.join(args.out, "corpus"),
                                           mem_scales)
    with open(queries, encoding="utf-8") as f:
        qids = [json.loads(l)["id"] for l in f]

    results = {"started": datetime.datetime.now().isoformat(timespec="seconds"),
               "machine": machine_info(args.hierarag), "args": vars(args), "queries": len(qids),
               "scales": {}, "memory": {}}
    res_path = os.path.join(args.out, "results.json")

    def save():
        with open(res_path, "w") as f:
            json.dump(results, f, indent=1)

    for n in scales:
        c = corpora[n]
        reps = args.index_reps if n < 10 else min(args.index_reps, 3) if n < 100 else 1
        log(f"scale {n}x: {c['docs']} docs, {c['text_bytes'] / 1e6:.1f} MB text")
        sr = {"docs": c["docs"], "text_mb": c["text_bytes"] / 1e6, "engines": {}}
        results["scales"][str(n)] = sr
        if "hierarag" in engines:
            log(f"  hierarag x{n} ...")
            sr["engines"]["hierarag"] = run_hierarag(args.hierarag, c, n, queries, qids, work, args, reps)
            save()
        for e in ("bm25s", "pisa"):
            if e in engines:
                sr["engines"][e] = run_peer(e, c, n, queries, work, args, reps)
                save()
        sr["ratios"] = summarize(sr)[1]
        save()

    if "hierarag" in engines:
        for n in mem_scales:
            c = corpora[n]
            if str(n) in results["scales"]:
                h = results["scales"][str(n)]["engines"]["hierarag"]
                top = max(h["index_runs"], key=lambda x: x["peak_rss_kb"])
                results["memory"][str(n)] = {"docs": c["docs"], "text_mb": c["text_bytes"] / 1e6,
                                             "peak_rss_kb": top["peak_rss_kb"],
                                             "sampled_peak_anon_kb": top["sampled_peak_anon_kb"],
                                             "sampled_peak_file_kb": top["sampled_peak_file_kb"],
                                             "wall_mb_s": h["index_mb_s"], "writer_heap_mb": 256,
                                             "from": "main run"}
            else:
                log(f"memory-only run: hierarag index x{n}")
                idx_dir = os.path.join(work, f"hierarag-mem-x{n}")
                r = hierarag_index(args.hierarag, c, idx_dir, os.path.join(work, f"hierarag-index-mem-x{n}.log"), args)
                shutil.rmtree(idx_dir, ignore_errors=True)
                results["memory"][str(n)] = dict(r, docs=c["docs"], text_mb=c["text_bytes"] / 1e6,
                                                 **{"from": "memory-only run"})
            save()
        # the same at the largest scale with a smaller writer heap: does the peak follow the heap?
        if args.alt_heap_mb:
            n = max(mem_scales)
            c = corpora[n]
            log(f"memory-only run: hierarag index x{n} --writer-heap-mb {args.alt_heap_mb}")
            idx_dir = os.path.join(work, f"hierarag-mem-x{n}-heap{args.alt_heap_mb}")
            r = hierarag_index(args.hierarag, c, idx_dir,
                               os.path.join(work, f"hierarag-index-mem-x{n}-heap{args.alt_heap_mb}.log"), args,
                               heap_mb=args.alt_heap_mb)
            shutil.rmtree(idx_dir, ignore_errors=True)
            results["memory_alt_heap"] = dict(r, scale=n, docs=c["docs"], text_mb=c["text_bytes"] / 1e6)
            save()

    results["finished"] = datetime.datetime.now().isoformat(timespec="seconds")
    save()
    print_report(results)
    print(f"\nresults: {os.path.relpath(res_path, os.getcwd())}")


if __name__ == "__main__":
    main()
