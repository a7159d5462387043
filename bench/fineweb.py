#!/usr/bin/env python3
"""A FineWeb-shaped corpus and its questions, for the BM25-at-scale benchmark (bench/scale.sh).

    bench/.venv/bin/python bench/fineweb.py --rows 1M [--root /work/data/fineweb-shaped]
        [--seed 20240601] [--vocab wiki-sample.jsonl] [--workers 2]
    bench/.venv/bin/python bench/fineweb.py --rows 1M --queries 10000   # and the questions

Writes ROOT/<label>/ (label 1M, 3M, 0.1M, or the row count): Parquet shards named like
FineWeb's (`000_00000.parquet`, ...) of at most --shard-rows rows (500,000), FineWeb's schema
(text, id `<urn:uuid:...>`, dump, url, date, file_path, language, language_score, token_count),
snappy, row groups of 1,000 rows (datatrove's ParquetWriter, which wrote FineWeb: snappy by
default, batches of 1,000 documents, each written as one row group); and corpus.json describing
it. Nothing is written when corpus.json says the corpus is complete. A shard that a sibling
directory already holds with the same parameters (the 1M corpus is the first 1,000,000 rows of
the 3M one) is hard-linked, not generated again.

Every document is drawn independently, from its own row group's random stream
(numpy default_rng([seed, row group])), so the output is byte-identical for the same arguments,
whatever --workers, and a corpus of N rows is the first N rows of any larger one.

  length   words ~ lognormal(median 302, sigma 1.0) truncated to 50..100,000 words (the Gopher
           bounds FineWeb's filters apply): mean 515 words; token_count = words x N(1.3, 0.08),
           mean about 670 GPT-2 tokens, as FineWeb's 10BT sample (about 10 B tokens over
           14.9 M documents)
  words    each word position is one of
             background  (the rest) a token of the Wikipedia sample drawn with its frequency
                         there (the 34,419 ASCII tokens seen twice or more; capitals and
                         punctuation included; plan.py's load_vocab)
             long tail   (5 %) a made-up word of 2-4 syllables (`kadomi`, `Tevo`) of rank r in
                         16.8 M, P(r) ~ 1 / (r + 1,000) (Zipf-Mandelbrot): names, rare words,
                         so that the vocabulary keeps growing with the corpus as a web crawl's does
             topical     (3-15 % of the document, uniform) one of the document's 16 topic words,
                         weights 1 / (j + 1) in a per-document order: the 12 words of its topic
                         (one of 100,000 topics, P(t) ~ 1 / (t + 100); 9 mid-frequency
                         vocabulary words of rank >= 300, 3 long-tail words) and 4 of its own
                         (3 mid-frequency words, 1 long-tail word)
           words are separated by a space, or a newline (1 in 60: paragraphs)

Questions (--queries N): N documents drawn without replacement from the first --query-rows rows
(100,000 by default, so that every size from 0.1M up holds every known item), each made into a
question from its most distinctive words (tf x -log of the word's background frequency: 1-3
mid-frequency words, a long-tail word 35 % of the time, a commoner word 30 % of the time) in a
question template ("what is the {} of the {} {}"); written to ROOT/queries-<n>-<seed>.jsonl as
{"id": the source document's id, "query": ..., "row": ...}: the source document is the known
item.
"""
import argparse
import hashlib
import json
import math
import multiprocessing as mp
import os
import re
import string
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from bench import log  # noqa: E402  (stdlib only)
from plan import crawl_columns, load_vocab  # noqa: E402  (numpy, imported inside)

GENERATOR_VERSION = 1
DEFAULT_ROOT = "/work/data/fineweb-shaped"
DEFAULT_SEED = 20240601
ROW_GROUP = 1_000          # datatrove ParquetWriter's batch: one row group per 1,000 documents
SHARD_ROWS = 500_000
MEDIAN_WORDS = 302         # lognormal median before truncation; mean after it 515 words
SIGMA = 1.0
MIN_WORDS, MAX_WORDS = 50, 100_000
TOKENS_PER_WORD = (1.3, 0.08)
P_TAIL = 0.05
TAIL_SIZE = 1 << 24
TAIL_R0 = 1_000
N_TOPICS = 100_000
TOPIC_R0 = 100
TOPIC_VOCAB, TOPIC_TAIL = 9, 3
OWN_VOCAB, OWN_TAIL = 3, 1
TOPICAL_FRAC = (0.03, 0.15)
MID_RANK = 300
PARAGRAPH_WORDS = 60
SLOTS = TOPIC_VOCAB + TOPIC_TAIL + OWN_VOCAB + OWN_TAIL

PARAMS = {"generator_version": GENERATOR_VERSION, "row_group_rows": ROW_GROUP, "median_words": MEDIAN_WORDS,
          "sigma": SIGMA, "min_words": MIN_WORDS, "max_words": MAX_WORDS, "tokens_per_word": TOKENS_PER_WORD,
          "p_tail": P_TAIL, "tail_size": TAIL_SIZE, "tail_r0": TAIL_R0, "n_topics": N_TOPICS,
          "topic_r0": TOPIC_R0, "topic_words": [TOPIC_VOCAB, TOPIC_TAIL], "own_words": [OWN_VOCAB, OWN_TAIL],
          "topical_fraction": TOPICAL_FRAC, "mid_rank": MID_RANK, "paragraph_words": PARAGRAPH_WORDS,
          "compression": "snappy"}

SCHEMA_FIELDS = [("text", "string"), ("id", "string"), ("dump", "string"), ("url", "string"), ("date", "string"),
                 ("file_path", "string"), ("language", "string"), ("language_score", "float64"),
                 ("token_count", "int64")]


def parse_rows(s):
    """'1M' -> 1,000,000; '0.1M' -> 100,000; '250k' -> 250,000; '1500' -> 1,500."""
    s = s.strip().upper()
    mult = {"K": 1_000, "M": 1_000_000}.get(s[-1:], 1)
    num = s[:-1] if mult > 1 else s
    return int(round(float(num) * mult))


def label(rows):
    if rows % 100_000 == 0:
        m = rows / 1_000_000
        return f"{m:g}M"
    if rows % 1_000 == 0:
        return f"{rows // 1000}k"
    return str(rows)


# ----------------------------------------------------------------------------- tables
# Built once in the parent before the workers fork (copy-on-write), global in the workers.
T = {}

CONSONANTS = b"bdfgklmnprstvz"
VOWELS = b"aeiou"


def tail_blob(np):
    """The long-tail words of rank 0..TAIL_SIZE-1, each followed by a space: rank r is written in
    base 70 with consonant-vowel syllables, 2 syllables for the first 4,900 ranks, 3 for the next
    343,000, 4 after; one in four capitalised (names)."""
    syl = np.array([[c, v] for c in CONSONANTS for v in VOWELS], dtype=np.uint8)  # (70, 2)
    b = len(syl)
    parts, lens = [], []
    start = 0
    ns = 2
    while start < TAIL_SIZE:
        count = min(b ** ns, TAIL_SIZE - start)
        v = np.arange(count, dtype=np.int32)
        digits = np.stack([(v // b ** j) % b for j in range(ns)], axis=1)          # (count, ns)
        word = syl[digits].reshape(count, 2 * ns)
        ranks = start + v.astype(np.int64)
        cap = ranks % 4 == 0
        word[cap, 0] -= 32
        word = np.concatenate([word, np.full((count, 1), ord(" "), dtype=np.uint8)], axis=1)
        parts.append(word.reshape(-1))
        lens.append(np.full(count, 2 * ns, dtype=np.int64))
        start += count
        ns += 1
    return np.concatenate(parts), np.concatenate(lens)


def build_tables(seed, vocab_path):
    import numpy as np
    words, counts, vocab_source = load_vocab(vocab_path)
    v = len(words)
    encoded = [w.encode() for w in words]
    real_len = np.array([len(e) for e in encoded], dtype=np.int64)
    real_blob = np.frombuffer(b"".join(e + b" " for e in encoded), dtype=np.uint8)
    tblob, tlen = tail_blob(np)
    blob = np.concatenate([real_blob, tblob])
    vlen = np.concatenate([real_len, tlen])
    voff = np.concatenate([[0], np.cumsum(vlen + 1)[:-1]]).astype(np.int64)
    draw_table = np.repeat(np.arange(v, dtype=np.int64), counts)
    mid_lo = min(MID_RANK, max(0, v - 1))
    trng = np.random.default_rng([seed, 7])
    topics = np.concatenate([trng.integers(mid_lo, v, (N_TOPICS, TOPIC_VOCAB)),
                             v + tail_ranks(trng, (N_TOPICS, TOPIC_TAIL))], axis=1).astype(np.int64)
    slot_w = 1.0 / np.arange(1, SLOTS + 1)
    T.update(words=words, counts=counts, vocab_source=vocab_source, V=v, blob=blob, vlen=vlen, voff=voff,
             draw_table=draw_table, topics=topics, mid_lo=mid_lo, slot_cdf=np.cumsum(slot_w / slot_w.sum()),
             slug_words=[w.lower() for w in words[:5000] if w.isalpha()] or ["page"])


def zipf_mandelbrot(rng, n_max, r0, size):
    """Ranks 0..n_max-1 with P(r) ~ 1 / (r + r0), by inverting the continuous CDF."""
    import numpy as np
    u = rng.random(size)
    r = np.floor(r0 * np.power((n_max + r0) / r0, u) - r0).astype(np.int64)
    return np.clip(r, 0, n_max - 1)


def tail_ranks(rng, size):
    return zipf_mandelbrot(rng, TAIL_SIZE, TAIL_R0, size)


DUMPS = [(y, w) for y in range(2013, 2025) for w in (10, 22, 40, 50)]
TLDS = ["com", "org", "net", "co.uk", "info", "edu", "io", "de"]


def row_group(g, seed):
    """Row group g (rows g*ROW_GROUP ..): its ROW_GROUP documents as a pyarrow Table, and per
    document its text bytes, words and tokens."""
    import numpy as np
    import pyarrow as pa
    n = ROW_GROUP
    rng = np.random.default_rng([seed, g])
    v = T["V"]
    # lengths: lognormal, truncated to the Gopher bounds by redrawing
    w = np.rint(rng.lognormal(math.log(MEDIAN_WORDS), SIGMA, n)).astype(np.int64)
    bad = (w < MIN_WORDS) | (w > MAX_WORDS)
    while bad.any():
        w[bad] = np.rint(rng.lognormal(math.log(MEDIAN_WORDS), SIGMA, int(bad.sum()))).astype(np.int64)
        bad = (w < MIN_WORDS) | (w > MAX_WORDS)
    # topic words of each document: its topic's 12 and 4 of its own, in a per-document order
    topic = zipf_mandelbrot(rng, N_TOPICS, TOPIC_R0, n)
    own = np.concatenate([rng.integers(T["mid_lo"], v, (n, OWN_VOCAB)), v + tail_ranks(rng, (n, OWN_TAIL))], axis=1)
    slots = rng.permuted(np.concatenate([T["topics"][topic], own], axis=1), axis=1)
    frac = rng.uniform(TOPICAL_FRAC[0], TOPICAL_FRAC[1], n)

    total = int(w.sum())
    doc_of = np.repeat(np.arange(n), w)
    u = rng.random(total)
    f = frac[doc_of]
    is_topic = u < f
    is_tail = (~is_topic) & (u < f + P_TAIL)
    is_bg = ~(is_topic | is_tail)
    idx = np.empty(total, dtype=np.int64)
    dt = T["draw_table"]
    idx[is_bg] = dt[rng.integers(0, len(dt), int(is_bg.sum()))]
    idx[is_tail] = v + tail_ranks(rng, int(is_tail.sum()))
    k = np.searchsorted(T["slot_cdf"], rng.random(int(is_topic.sum())), side="right")
    idx[is_topic] = slots[doc_of[is_topic], np.minimum(k, SLOTS - 1)]

    # bytes: each word and the separator after it, but not after a document's last word
    vlen, voff, blob = T["vlen"], T["voff"], T["blob"]
    wl = vlen[idx] + 1
    doc_end = np.cumsum(w)
    wl[doc_end - 1] -= 1
    doc_bytes = np.add.reduceat(wl, doc_end - w)
    nbytes = int(wl.sum())
    out_start = np.cumsum(wl) - wl
    src = np.repeat(voff[idx] - out_start, wl) + np.arange(nbytes)
    data = blob[src]
    # paragraphs: one separator in PARAGRAPH_WORDS becomes a newline
    sep = out_start + vlen[idx]
    last = np.zeros(total, dtype=bool)
    last[doc_end - 1] = True
    nl = (~last) & (rng.random(total) < 1.0 / PARAGRAPH_WORDS)
    data[sep[nl]] = ord("\n")
    offsets = np.concatenate([[0], np.cumsum(doc_bytes)]).astype(np.int32)
    text = pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])

    ids, dump_col, url_col, date_col, path_col = crawl_columns(
        rng, n, g * ROW_GROUP, DUMPS, T["slug_words"], TLDS, (1368696381249, 1728000000000), "https")
    tokens = np.maximum(np.rint(w * rng.normal(TOKENS_PER_WORD[0], TOKENS_PER_WORD[1], n)), 1).astype(np.int64)
    table = pa.table([text, pa.array(ids), pa.array(dump_col), pa.array(url_col), pa.array(date_col),
                      pa.array(path_col), pa.array(["en"] * n), pa.array(rng.uniform(0.65, 1.0, n)),
                      pa.array(tokens)], schema=schema())
    return table, doc_bytes, w, tokens


def schema():
    import pyarrow as pa
    return pa.schema([(name, getattr(pa, typ)()) for name, typ in SCHEMA_FIELDS])


def write_shard(job):
    """Worker: rows [first, first + rows) into path (via path.partial); returns the shard's stats."""
    import numpy as np  # noqa: F401
    import pyarrow.parquet as pq
    path, first, rows, seed = job
    t0 = time.perf_counter()
    partial = path + ".partial"
    writer = pq.ParquetWriter(partial, schema(), compression="snappy")
    text_bytes = words = tokens = 0
    try:
        g0 = first // ROW_GROUP
        for g in range(g0, g0 + (rows + ROW_GROUP - 1) // ROW_GROUP):
            n = min(ROW_GROUP, first + rows - g * ROW_GROUP)
            table, nb, nw, nt = row_group(g, seed)
            if n < ROW_GROUP:  # a partial last group is the prefix of the full one
                table = table.slice(0, n)
            writer.write_table(table, row_group_size=ROW_GROUP)
            text_bytes += int(nb[:n].sum())
            words += int(nw[:n].sum())
            tokens += int(nt[:n].sum())
    finally:
        writer.close()
    os.replace(partial, path)
    return {"file": os.path.basename(path), "first_row": first, "rows": rows, "file_bytes": os.path.getsize(path),
            "text_bytes": text_bytes, "words": words, "tokens": tokens,
            "seconds": round(time.perf_counter() - t0, 1)}


def params_key(seed, vocab_source):
    blob = json.dumps(dict(PARAMS, seed=seed, vocabulary=vocab_source), sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def shard_plan(rows, shard_rows):
    return [(f"{k:03d}_00000.parquet", first, min(shard_rows, rows - first))
            for k, first in enumerate(range(0, rows, shard_rows))]


def read_manifest(d):
    try:
        with open(os.path.join(d, "corpus.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def complete(man, d):
    return bool(man) and man.get("complete") and all(
        os.path.exists(os.path.join(d, s["file"])) and os.path.getsize(os.path.join(d, s["file"])) == s["file_bytes"]
        for s in man["shards"])


def ensure_corpus(rows, root=DEFAULT_ROOT, seed=DEFAULT_SEED, vocab_path=None, workers=2, shard_rows=SHARD_ROWS):
    """The corpus of `rows` rows under root/<label>; generated (or hard-linked from a sibling)
    unless complete. Returns its corpus.json."""
    d = os.path.join(root, label(rows))
    man = read_manifest(d)
    if complete(man, d) and man["seed"] == seed and man["rows"] == rows and man["shard_rows"] == shard_rows \
            and man["params"] == json.loads(json.dumps(PARAMS)):
        return man
    os.makedirs(d, exist_ok=True)
    t0 = time.perf_counter()
    build_tables(seed, vocab_path)
    key = params_key(seed, T["vocab_source"])
    plan = shard_plan(rows, shard_rows)
    # shards a sibling corpus already has, with the same parameters and rows: hard links
    have = {}
    for sib in sorted(os.listdir(root)):
        sd = os.path.join(root, sib)
        sm = read_manifest(sd)
        if sd == d or not complete(sm, sd) or sm.get("key") != key or sm.get("shard_rows") != shard_rows:
            continue
        for s in sm["shards"]:
            have.setdefault((s["file"], s["first_row"], s["rows"]), (sd, s))
    shards, jobs = {}, []
    for name, first, n in plan:
        path = os.path.join(d, name)
        if (name, first, n) in have:
            sd, s = have[(name, first, n)]
            if not (os.path.exists(path) and os.path.samefile(path, os.path.join(sd, name))):
                if os.path.exists(path):
                    os.remove(path)
                os.link(os.path.join(sd, name), path)
            shards[name] = dict(s, linked_from=os.path.basename(sd))
        else:
            jobs.append((path, first, n, seed))
    log(f"corpus {d}: {rows:,} rows in {len(plan)} shards ({len(plan) - len(jobs)} linked); "
        f"generating {len(jobs)} with {min(workers, max(1, len(jobs)))} workers; vocabulary {T['vocab_source']}")
    if jobs:
        if workers > 1 and len(jobs) > 1:
            with mp.get_context("fork").Pool(min(workers, len(jobs))) as pool:
                for s in pool.imap_unordered(write_shard, jobs):
                    shards[s["file"]] = s
                    log(f"  {s['file']}: {s['rows']:,} rows, {s['file_bytes'] / 1e6:,.0f} MB, {s['seconds']} s")
        else:
            for j in jobs:
                s = write_shard(j)
                shards[s["file"]] = s
                log(f"  {s['file']}: {s['rows']:,} rows, {s['file_bytes'] / 1e6:,.0f} MB, {s['seconds']} s")
    ordered = [shards[name] for name, _, _ in plan]
    words = sum(s["words"] for s in ordered)
    man = {"rows": rows, "label": label(rows), "seed": seed, "shard_rows": shard_rows, "key": key,
           "params": PARAMS, "vocabulary": T["vocab_source"], "shards": ordered,
           "file_bytes": sum(s["file_bytes"] for s in ordered), "text_bytes": sum(s["text_bytes"] for s in ordered),
           "words": words, "tokens": sum(s["tokens"] for s in ordered),
           "generated_in_s": round(time.perf_counter() - t0, 1), "complete": True,
           "glob": os.path.join(d, "*.parquet")}
    with open(os.path.join(d, "corpus.json.tmp"), "w") as f:
        json.dump(man, f, indent=1)
    os.replace(os.path.join(d, "corpus.json.tmp"), os.path.join(d, "corpus.json"))
    log(f"corpus {d}: {man['text_bytes'] / 1e6:,.0f} MB of text, {man['file_bytes'] / 1e6:,.0f} MB on disk, "
        f"{man['tokens'] / rows:.0f} tokens a document, in {man['generated_in_s']} s")
    return man


# ----------------------------------------------------------------------------- questions
TEMPLATES = {
    2: ["what is {} {}", "what is the {} of {}", "how does {} work in {}", "where is the {} {}", "who was {} {}",
        "{} {} meaning", "why is {} important for {}", "when did {} start {}"],
    3: ["what is the {} of the {} {}", "how to {} {} {}", "when did the {} {} {}", "what are {} {} and {}",
        "best {} for {} {}", "why does {} {} {}", "who is the {} in {} {}", "how many {} are in {} {}"],
    4: ["how do {} and {} affect {} {}", "what is the difference between {} {} and {} {}",
        "where can i find {} {} {} {}", "what happened to the {} {} at {} {}", "is {} {} better than {} {}"],
    5: ["how does the {} {} of {} relate to {} {}", "what are the {} {} {} {} {}",
        "why did the {} {} {} {} {}"],
}
PUNCT = string.punctuation + "\u201c\u201d\u2018\u2019"
WORD = re.compile(r"^[a-z]{3,}$")


def norm(tok):
    return tok.strip(PUNCT).lower()


def make_queries(n_queries, from_rows, corpus_dir, seed, vocab_path, out_path):
    """n_queries questions from documents drawn among the first from_rows rows of the corpus in
    corpus_dir (which must hold at least that many); deterministic for the arguments."""
    import numpy as np
    import pyarrow.parquet as pq
    words, counts, _ = load_vocab(vocab_path)
    total = float(counts.sum())
    rank, prob = {}, {}
    for r, (wd, c) in enumerate(zip(words, counts)):
        k = norm(wd)
        if WORD.match(k):
            rank.setdefault(k, r)
            prob[k] = prob.get(k, 0.0) + c / total
    rng = np.random.default_rng([seed, 99])
    rows = np.sort(rng.choice(from_rows, size=n_queries, replace=False))
    man = read_manifest(corpus_dir)
    out = []
    want = iter(rows.tolist())
    nxt = next(want, None)
    for s in man["shards"]:
        if nxt is None:
            break
        pf = pq.ParquetFile(os.path.join(corpus_dir, s["file"]))
        for gi in range(pf.num_row_groups):
            g_first = s["first_row"] + gi * ROW_GROUP
            g_end = g_first + pf.metadata.row_group(gi).num_rows
            if nxt is None or nxt >= g_end:
                continue
            t = pf.read_row_group(gi, columns=["id", "text"])
            ids, texts = t.column("id"), t.column("text")
            while nxt is not None and nxt < g_end:
                i = nxt - g_first
                out.append((nxt, ids[i].as_py(), texts[i].as_py()))
                nxt = next(want, None)
    queries = []
    for row, doc_id, text in out:
        tf = {}
        for tok in text.split():
            k = norm(tok)
            if WORD.match(k):
                tf[k] = tf.get(k, 0) + 1
        mid = sorted(((c * -math.log(prob[k]), k) for k, c in tf.items() if k in rank and rank[k] >= MID_RANK),
                     reverse=True)[:8]
        tail = sorted(((c, k) for k, c in tf.items() if k not in rank), reverse=True)[:3]
        common = sorted(k for k in tf if k in rank and 100 <= rank[k] < MID_RANK)
        n_mid = int(rng.choice([1, 2, 3], p=[0.25, 0.5, 0.25]))
        picked = []
        if mid:
            sc = np.array([s for s, _ in mid])
            take = rng.choice(len(mid), size=min(n_mid, len(mid)), replace=False, p=sc / sc.sum())
            picked += [mid[int(j)][1] for j in take]
        if tail and rng.random() < 0.35:
            picked.append(tail[int(rng.integers(0, len(tail)))][1])
        if common and rng.random() < 0.3:
            picked.append(common[int(rng.integers(0, len(common)))])
        extra = [k for _, k in mid if k not in picked] + [k for _, k in tail if k not in picked]
        while len(picked) < 2 and extra:
            picked.append(extra.pop(0))
        picked = [picked[int(j)] for j in rng.permutation(len(picked))]
        tmpl = TEMPLATES[max(2, min(5, len(picked)))]
        q = tmpl[int(rng.integers(0, len(tmpl)))].format(*(picked + [""] * 5)[:max(2, len(picked))])
        queries.append({"id": doc_id, "query": " ".join(q.split()), "row": row})
    tmp = out_path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        for q in queries:
            f.write(json.dumps(q) + "\n")
    os.replace(tmp, out_path)
    return out_path


def ensure_queries(n_queries, from_rows, corpus_dir, root=DEFAULT_ROOT, seed=DEFAULT_SEED, vocab_path=None):
    path = os.path.join(root, f"queries-{n_queries}-from-{label(from_rows)}-{seed}.jsonl")
    if os.path.exists(path):
        with open(path) as f:
            if sum(1 for _ in f) == n_queries:
                return path
    log(f"writing {n_queries:,} questions from the first {from_rows:,} rows to {path}")
    return make_queries(n_queries, from_rows, corpus_dir, seed, vocab_path, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", required=True, help="documents: 1M, 3M, 0.1M, 250k or a number")
    ap.add_argument("--root", default=DEFAULT_ROOT)
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--vocab", help="the Wikipedia sample JSONL (hierarag data fetch wiki-sample --print-path)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--shard-rows", type=int, default=SHARD_ROWS)
    ap.add_argument("--queries", type=int, default=0, help="also write this many questions")
    ap.add_argument("--query-rows", default="100k", help="draw the questions' documents from the first N rows")
    args = ap.parse_args()
    rows = parse_rows(args.rows)
    man = ensure_corpus(rows, args.root, args.seed, args.vocab, args.workers, args.shard_rows)
    print(json.dumps({k: man[k] for k in ("rows", "file_bytes", "text_bytes", "words", "tokens", "glob")}))
    if args.queries:
        qrows = min(parse_rows(args.query_rows), rows)
        print(ensure_queries(args.queries, qrows, os.path.join(args.root, label(rows)), args.root, args.seed,
                             args.vocab))


if __name__ == "__main__":
    main()
