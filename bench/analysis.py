#!/usr/bin/env python3
"""`hierarag analyze` benchmark: the analysis of 10,000 scored questions, bootstrap included.

Usually started through bench/analysis.sh (venv, packages, release build). Steps:

  1. generates, deterministically for --n and --seed, an rq2-shaped run directory
     OUT/analysis-10k/ (OUT/analysis-N/ for other sizes): --n questions spread evenly
     over the nine sets qc/coarse, qc/medium, qc/fine, at/…, lv/… of the built-in
     taxonomy (copied beside them as taxonomy.toml), categories balanced within each
     set; benchmark.jsonl (the generation stage's records) and scores.jsonl (the
     evaluate stage's). CS is a clipped normal around a per-category mean (category
     effects drawn down the taxonomy: a fine category near its medium parent, near its
     coarse parent), ~5% refusals (low CS, ROUGE-1 and BLEU), retrieval metrics from
     the rank of the one source document. No answers.jsonl, so corpus BLEU is skipped.
     With --factorial N, N more questions in an rq3-style set lv×qc (2 × 2 cells);
  2. times `hierarag analyze DIR -q --out W` with the default settings (1,000
     bootstrap resamples, 1,000 permutations, 5 NMI bins, seed 0) and with
     `--bootstrap 0 --permutations 0`, --reps times each: wall time of the whole
     process, its CPU time and peak RSS (/usr/bin/time %M, or wait4's ru_maxrss);
  3. times the peer the same way, each repetition in its own process:
     `python bench/analysis.py --peer-numpy DIR --peer-out F` — the same statistics
     on the same files with numpy and scikit-learn (see peer_numpy below), with the
     same two settings;
  4. checks (not timed) that the peer's point estimates (every metric's mean per
     level and category, DiscPow, range, NMI, Δ, σ_sib, δ_vert, ρ; for a factorial
     set the cell means, effects and ANOVA F) agree with hierarag's analysis.json,
     and prints the largest difference;
  5. prints a table (median and min seconds, peak RSS, CPU seconds, peer/hierarag
     ratios: > 1 means hierarag is faster) and writes OUT/analysis-results.json.

These are benchmarks, not tests: nothing fails when hierarag is slower.
"""
import argparse
import datetime
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from bench import ensure_packages, log, machine_info, peer_ratios, timed_child  # noqa: E402  (stdlib-only helpers)

PACKAGES = {"numpy": "numpy", "sklearn": "scikit-learn"}  # import name: pip name
TAXONOMY = os.path.join(ROOT, "crates", "hierarag-taxonomy", "src", "default.toml")
LEVELS = ["coarse", "medium", "fine"]
RQ2_DIMENSIONS = ["qc", "at", "lv"]
FACTORS = ["lv", "qc"]  # the paper's rq3 factorial
BUSY_CORES = 0.25

# The per-question metrics of scores.jsonl and the names of their means in analysis.json.
METRICS = ["ap", "ndcg_10", "recall_10", "rr", "cs", "rouge1", "bleu", "refused"]
MEAN_NAMES = ["map", "ndcg_10", "recall_10", "mrr", "cs", "rouge1", "bleu", "refusal_rate"]
CS = METRICS.index("cs")

WORDS = """what which how why when where does did the a of in to for and or between after before
during river city war treaty company album species law theory language election team bridge
mountain island king queen museum festival painting novel film station engine protein planet
method network algorithm battle empire dynasty reform policy market bank school university
church temple road railway canal harbor fortress castle garden forest desert climate disease
vaccine ocean lake valley province region village capital border century decade year month
founded built named written designed elected discovered released signed destroyed restored
compared caused explained described replaced located measured""".split()


def load_taxonomy(path):
    """The taxonomy TOML as [(key, {level: [(category, parent)]})], in file order."""
    import tomllib
    with open(path, "rb") as f:
        data = tomllib.load(f)
    out = []
    for d in data["dimension"]:
        levels = {lv: [(c["name"], c.get("parent")) for c in d.get(lv, [])] for lv in LEVELS if d.get(lv)}
        out.append((d["key"], levels))
    return out


# ----------------------------------------------------------------------------- the run directory
def dir_name(n, factorial):
    size = f"{n // 1000}k" if n % 1000 == 0 else str(n)
    return f"analysis-{size}" + (f"-f{factorial}" if factorial else "")


def generate(run_dir, n, factorial, seed):
    """Writes benchmark.jsonl, scores.jsonl and taxonomy.toml into run_dir (deterministic)."""
    import numpy as np
    t0 = time.perf_counter()
    taxonomy = dict(load_taxonomy(TAXONOMY))
    rng = np.random.default_rng(seed)

    # Category effects on CS, drawn down the hierarchy, and a base CS per dimension.
    effect = {}
    base = {"qc": 0.66, "at": 0.63, "lv": 0.69}
    for dim in RQ2_DIMENSIONS + [d for d in FACTORS if d not in RQ2_DIMENSIONS]:
        sd = {"coarse": 0.06, "medium": 0.035, "fine": 0.025}
        for lv in LEVELS:
            for cat, parent in taxonomy[dim].get(lv, []):
                up = effect[(dim, parent)] if parent else 0.0
                effect[(dim, cat)] = up + float(rng.normal(0.0, sd[lv]))

    # The sets and their cells: (set, design, [(dimension, level, category), ...]) per cell.
    sets = []
    for dim in RQ2_DIMENSIONS:
        for lv in LEVELS:
            cells = [[(dim, lv, cat)] for cat, _ in taxonomy[dim][lv]]
            sets.append((f"{dim}/{lv}", "rq2", cells))
    per_set = [n // len(sets) + (1 if i < n % len(sets) else 0) for i in range(len(sets))]
    if factorial:
        a, b = FACTORS
        cells = [[(a, "coarse", ca), (b, "coarse", cb)]
                 for ca, _ in taxonomy[a]["coarse"] for cb, _ in taxonomy[b]["coarse"]]
        sets.append(("×".join(FACTORS), "rq3", cells))
        per_set.append(factorial)

    os.makedirs(run_dir, exist_ok=True)
    bench_lines, score_lines = [], []
    for (name, design, cells), count in zip(sets, per_set):
        width = max(4, len(str(count)))
        slug = name.replace("/", "-") if design == "rq2" else ""
        prefix = f"{design}-{slug}" if slug else design
        for i in range(count):
            cell = cells[i % len(cells)]  # round-robin over the cells, as plans are laid out
            qid = f"{prefix}-{i + 1:0{width}d}"
            mu = sum(base.get(d, 0.66) for d, _, _ in cell) / len(cell) + sum(effect[(d, c)] for d, _, c in cell)
            refused = bool(rng.random() < 0.05)
            if refused:
                cs = float(np.clip(rng.normal(0.18, 0.08), 0.0, 1.0))
                rouge1 = float(np.clip(rng.normal(0.04, 0.03), 0.0, 1.0))
                bleu = float(np.clip(rng.normal(0.5, 0.5), 0.0, 100.0))
            else:
                cs = float(np.clip(rng.normal(mu, 0.16), 0.0, 1.0))
                rouge1 = float(np.clip(0.85 * cs - 0.2 + rng.normal(0.0, 0.08), 0.0, 1.0))
                bleu = float(np.clip(55.0 * rouge1 ** 2 + rng.normal(0.0, 4.0), 0.0, 100.0))
            # Retrieval: the source document's rank (trec_eval with one relevant document).
            if rng.random() < float(np.clip(0.8 + 1.5 * (mu - 0.66), 0.3, 0.98)):
                rank = int(rng.geometric(0.4))
            else:
                rank = 0  # not retrieved in the top 100
            if rank > 100:
                rank = 0
            rr = 1.0 / rank if rank else 0.0
            ndcg = 1.0 / math.log2(rank + 1) if 0 < rank <= 10 else 0.0
            recall = 1.0 if 0 < rank <= 10 else 0.0
            words = rng.integers(0, len(WORDS), 24)
            question = " ".join(WORDS[w] for w in words[:10]).capitalize() + "?"
            answer = " ".join(WORDS[w] for w in words[10:]).capitalize() + "."
            doc = f"<urn:uuid:{rng.integers(0, 1 << 62):016x}-bench>"
            record = {
                "id": qid, "question": question, "answer": answer, "doc_ids": [doc],
                "design": design, "set": name,
                "categories": [{"dimension": d, "level": lv, "category": c} for d, lv, c in cell],
                "persona": {"expertise": "novice" if rng.random() < 0.5 else "expert"},
                "generator": {"backend": "openai", "model": "synthetic-bench",
                              "params": {"temperature": 0.8, "max_tokens": 512}},
                "candidates_considered": 3, "attempts": 1,
                "filter": {"enabled": True,
                           "model": {"backend": "openai", "model": "synthetic-bench", "params": {"temperature": 0.0}},
                           "passed": 2, "judged": 3,
                           "verdict": {"faithful": True, "fits_category": True, "standalone": True}},
            }
            score = {"id": qid, "ap": rr, "ndcg_10": ndcg, "recall_10": recall, "rr": rr, "cs": cs,
                     "rouge1": rouge1, "bleu": bleu, "refused": refused}
            bench_lines.append(json.dumps(record, ensure_ascii=False))
            score_lines.append(json.dumps(score))
    for fname, lines in (("benchmark.jsonl", bench_lines), ("scores.jsonl", score_lines)):
        with open(os.path.join(run_dir, fname + ".partial"), "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(os.path.join(run_dir, fname + ".partial"), os.path.join(run_dir, fname))
    shutil.copyfile(TAXONOMY, os.path.join(run_dir, "taxonomy.toml"))
    for stale in ("answers.jsonl", "manifest.json"):
        if os.path.exists(os.path.join(run_dir, stale)):
            os.remove(os.path.join(run_dir, stale))
    info = {"n": n, "factorial": factorial, "seed": seed, "questions": len(score_lines),
            "sets": {name: count for (name, _, _), count in zip(sets, per_set)},
            "benchmark_bytes": os.path.getsize(os.path.join(run_dir, "benchmark.jsonl")),
            "scores_bytes": os.path.getsize(os.path.join(run_dir, "scores.jsonl")),
            "refused": sum(1 for s in score_lines if '"refused": true' in s)}
    with open(os.path.join(run_dir, "generated.json"), "w") as f:
        json.dump(info, f, indent=1)
    log(f"generated {run_dir}: {info['questions']:,} questions, benchmark.jsonl "
        f"{info['benchmark_bytes'] / 1e6:.1f} MB, scores.jsonl {info['scores_bytes'] / 1e6:.1f} MB "
        f"({time.perf_counter() - t0:.1f} s)")
    return info


def ensure_run_dir(run_dir, n, factorial, seed):
    try:
        with open(os.path.join(run_dir, "generated.json")) as f:
            info = json.load(f)
        if (info["n"], info["factorial"], info["seed"]) == (n, factorial, seed) and all(
                os.path.exists(os.path.join(run_dir, f)) for f in ("benchmark.jsonl", "scores.jsonl", "taxonomy.toml")):
            return info
    except (OSError, ValueError, KeyError):
        pass
    return generate(run_dir, n, factorial, seed)


# ----------------------------------------------------------------------------- the peer
def peer_numpy(args):
    """The peer: the statistics of `hierarag analyze` with numpy and scikit-learn.

    As a numpy user would write it: json per line, one float matrix of the metrics, grouping
    in dicts; per (set, dimension, level): np.bincount means of every metric, np.std (DiscPow),
    np.ptp (range), sklearn normalized_mutual_info_score over equal-frequency bins
    (bin = floor(B · #values strictly less / n), via np.searchsorted); the bootstrap with one
    np.random.default_rng: per category rng.integers(0, n_k, (B, n_k)) and the means of the
    rows, np.percentile intervals of the category means, DiscPow, range, Δ and per taxonomy
    split σ_sib, δ_vert, ρ; P label permutations (rng.permuted of a (P, n) tile, bincount with
    row offsets) for the DiscPow p-value. Factorial sets: cell means, their bootstrap, main
    effects, interaction, Type III ANOVA (sum coding, np.linalg.lstsq, scipy's F tail).
    """
    t0 = time.perf_counter()
    import numpy as np
    from sklearn.metrics import normalized_mutual_info_score
    t_import = time.perf_counter()

    B, P, BINS, EPS, DDOF, CONF = args.bootstrap, args.permutations, 5, 1e-3, 0, 0.95
    tails = [50 * (1 - CONF), 50 * (1 + CONF)]
    rng = np.random.default_rng(0)
    run_dir = args.peer_numpy
    tax_path = os.path.join(run_dir, "taxonomy.toml")
    taxonomy = load_taxonomy(tax_path if os.path.exists(tax_path) else TAXONOMY)
    dim_order = {key: i for i, (key, _) in enumerate(taxonomy)}
    tax = dict(taxonomy)

    bench = {}
    with open(os.path.join(run_dir, "benchmark.jsonl"), encoding="utf-8") as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                bench[r["id"]] = (r["set"], r["categories"])
    rows = []
    with open(os.path.join(run_dir, "scores.jsonl"), encoding="utf-8") as f:
        for line in f:
            if line.strip():
                rows.append(json.loads(line))
    M = np.array([[float(r[m]) for m in METRICS] for r in rows])  # refused: True → 1.0
    groups, factorial_sets = {}, {}
    for i, r in enumerate(rows):
        set_name, cats = bench[r["id"]]
        if len(cats) == 1:
            c = cats[0]
            key = (dim_order.get(c["dimension"], 1 << 30), c["dimension"], LEVELS.index(c["level"]), set_name)
            groups.setdefault(key, {}).setdefault(c["category"], []).append(i)
        elif len(cats) > 1:
            factorial_sets.setdefault(set_name, []).append((i, cats))
    t_load = time.perf_counter()

    def interval(reps):
        reps = reps[np.isfinite(reps)]
        return np.percentile(reps, tails).tolist() if len(reps) else None

    def est(value, reps):
        return {"value": float(value), "ci": interval(reps) if reps is not None else None}

    def mean_dict(idx):
        return dict(zip(MEAN_NAMES, M[idx].mean(axis=0).tolist()))

    levels = []
    level_data = {}  # (dimension, level) -> (category names, category means, replicates)
    for key in sorted(groups):
        _, dim, lvi, set_name = key
        lv = LEVELS[lvi]
        members = groups[key]
        known = [c for c, _ in tax.get(dim, {}).get(lv, [])]
        parents = dict(tax.get(dim, {}).get(lv, []))
        names = [c for c in known if c in members] + sorted(c for c in members if c not in known)
        idx = np.concatenate([np.array(members[c]) for c in names])
        labels = np.repeat(np.arange(len(names)), [len(members[c]) for c in names])
        counts = np.bincount(labels)
        sums = np.stack([np.bincount(labels, weights=M[idx, j]) for j in range(len(METRICS))], axis=1)
        cat_means_all = sums / counts[:, None]
        y = M[idx, CS]
        means = cat_means_all[:, CS]

        reps = None
        if B > 0:
            reps = np.empty((B, len(names)))
            for k, c in enumerate(names):
                vals = M[members[c], CS]
                reps[:, k] = vals[rng.integers(0, len(vals), (B, len(vals)))].mean(axis=1)
        cats_out = [{"category": c, "parent": parents.get(c), "n": int(counts[k]),
                     "means": dict(zip(MEAN_NAMES, cat_means_all[k].tolist())),
                     "metric": est(means[k], reps[:, k] if reps is not None else None)}
                    for k, c in enumerate(names)]
        out = {"set": set_name, "dimension": dim, "level": lv, "n": int(len(idx)), "means": mean_dict(idx),
               "categories": cats_out, "discpow": None, "discpow_p": None, "range": None, "nmi": None,
               "delta": None}
        if len(names) >= 2:
            discpow = np.std(means, ddof=DDOF)
            out["discpow"] = est(discpow, np.std(reps, axis=1, ddof=DDOF) if reps is not None else None)
            out["range"] = est(np.ptp(means), np.ptp(reps, axis=1) if reps is not None else None)
            ranks = np.searchsorted(np.sort(y), y, side="left")
            bins = (BINS * ranks) // len(y)
            out["nmi"] = float(normalized_mutual_info_score(labels, bins))
            if P > 0:
                perm = rng.permuted(np.tile(labels, (P, 1)), axis=1)
                flat = (perm + len(names) * np.arange(P)[:, None]).ravel()
                null_sums = np.bincount(flat, weights=np.tile(y, P), minlength=P * len(names))
                null = np.std(null_sums.reshape(P, len(names)) / counts, axis=1, ddof=DDOF) + 1e-12
                out["discpow_p"] = float((1 + np.sum(null >= discpow)) / (1 + P))
        levels.append(out)
        level_data.setdefault(dim, []).append((lv, names, means, reps, out))

    # Δ between consecutive levels, splits (Coherence Ratio), mean ρ per dimension.
    splits, dimensions = [], []
    for dim, present in level_data.items():
        if len({lv for lv, *_ in present}) != len(present):
            continue  # several sets at one level: left out, as hierarag does
        for (_, _, _, rc, upper), (_, _, _, rf, lower) in zip(present, present[1:]):
            if upper["discpow"] and lower["discpow"]:
                ratio = lower["discpow"]["value"] / upper["discpow"]["value"]
                reps = (np.std(rf, axis=1, ddof=DDOF) / np.std(rc, axis=1, ddof=DDOF)) if rc is not None else None
                lower["delta"] = {"against": upper["level"], "ratio": est(ratio, reps)}
        by_level = {lv: (names, means, reps) for lv, names, means, reps, _ in present}
        rhos = []
        for lvi, lv in enumerate(LEVELS[:-1]):
            child_lv = LEVELS[lvi + 1]
            if lv not in by_level or child_lv not in by_level:
                continue
            up_names, up_means, up_reps = by_level[lv]
            lo_names, lo_means, lo_reps = by_level[child_lv]
            for parent, _ in tax[dim][lv]:
                children = [c for c, p in tax[dim][child_lv] if p == parent and c in lo_names]
                if parent not in up_names or len(children) < 2:
                    continue
                pk = up_names.index(parent)
                ck = [lo_names.index(c) for c in children]
                cm = lo_means[ck]
                sigma = np.std(cm)
                delta = abs(up_means[pk] - cm.mean())
                rho = sigma / (delta + EPS)
                rs = rd = rr = None
                if up_reps is not None:
                    rs = np.std(lo_reps[:, ck], axis=1)
                    rd = np.abs(up_reps[:, pk] - lo_reps[:, ck].mean(axis=1))
                    rr = rs / (rd + EPS)
                splits.append({"dimension": dim, "parent_level": lv, "parent": parent,
                               "parent_mean": float(up_means[pk]), "children": children,
                               "children_means": cm.tolist(), "sigma_sib": est(sigma, rs),
                               "delta_vert": est(delta, rd), "rho": est(rho, rr)})
                rhos.append(rho)
        dimensions.append({"dimension": dim, "levels": [lv for lv, *_ in present],
                           "mean_rho": float(np.mean(rhos)) if rhos else None})

    factorials = [peer_factorial(np, rng, set_name, members, tax, M, B, est, mean_dict)
                  for set_name, members in sorted(factorial_sets.items())]
    t_done = time.perf_counter()
    result = {"settings": {"metric": "cs", "ddof": DDOF, "nmi_bins": BINS, "epsilon": EPS, "bootstrap": B,
                           "permutations": P, "confidence": CONF},
              "questions": len(rows), "levels": levels, "splits": splits, "dimensions": dimensions,
              "factorials": factorials,
              "timings_s": {"import": t_import - t0, "load": t_load - t_import, "compute": t_done - t_load}}
    with open(args.peer_out, "w") as f:
        json.dump(result, f, indent=1)
    result["timings_s"]["write"] = time.perf_counter() - t_done
    print(json.dumps(result["timings_s"]))


def peer_factorial(np, rng, set_name, members, tax, M, B, est, mean_dict):
    """Cells, their bootstrap, main effects, interaction and a Type III ANOVA of one factorial set."""
    first = members[0][1]
    factors = []
    for f, c0 in enumerate(first):
        present = {cats[f]["category"] for _, cats in members}
        known = [c for c, _ in tax.get(c0["dimension"], {}).get(c0["level"], []) if c in present]
        factors.append({"dimension": c0["dimension"], "level": c0["level"],
                        "categories": known + sorted(present - set(known))})
    members = [(i, cats) for i, cats in members
               if [(c["dimension"], c["level"]) for c in cats] == [(f["dimension"], f["level"]) for f in factors]]
    a, b = factors[0]["categories"], factors[1]["categories"]
    ia = np.array([a.index(cats[0]["category"]) for _, cats in members])
    ib = np.array([b.index(cats[1]["category"]) for _, cats in members])
    idx = np.array([i for i, _ in members])
    cell = ia * len(b) + ib
    y = M[idx, CS]
    ncell = len(a) * len(b)
    cell_idx = [idx[cell == c] for c in range(ncell)]
    cell_means = np.array([M[ci, CS].mean() for ci in cell_idx])
    reps = None
    if B > 0:
        reps = np.empty((B, ncell))
        for c, ci in enumerate(cell_idx):
            vals = M[ci, CS]
            reps[:, c] = vals[rng.integers(0, len(vals), (B, len(vals)))].mean(axis=1)
    cells = [{"categories": [a[c // len(b)], b[c % len(b)]], "n": int(len(ci)), "means": mean_dict(ci),
              "metric": est(cell_means[c], reps[:, c] if reps is not None else None)}
             for c, ci in enumerate(cell_idx)]

    def effects(m):  # m: (..., ncell) → main effect of a, of b, interaction (2 × 2)
        m = m.reshape(m.shape[:-1] + (len(a), len(b)))
        ma, mb = m.mean(axis=-1), m.mean(axis=-2)
        ea = ma[..., 1] - ma[..., 0] if len(a) == 2 else np.ptp(ma, axis=-1)
        eb = mb[..., 1] - mb[..., 0] if len(b) == 2 else np.ptp(mb, axis=-1)
        inter = (m[..., 1, 1] - m[..., 1, 0]) - (m[..., 0, 1] - m[..., 0, 0])
        return ea, eb, inter
    point = effects(cell_means)
    rep_eff = effects(reps) if reps is not None else (None, None, None)
    main_effects = [est(point[0], rep_eff[0]), est(point[1], rep_eff[1])]
    interaction = est(point[2], rep_eff[2]) if len(a) == 2 and len(b) == 2 else None

    # Type III ANOVA, sum (deviation) coding: SS of a term = RSS without its columns − RSS.
    def coding(levels, k):
        x = np.zeros((len(levels), k - 1))
        for j in range(k - 1):
            x[levels == j, j] = 1.0
        x[levels == k - 1, :] = -1.0
        return x
    xa, xb = coding(ia, len(a)), coding(ib, len(b))
    xab = np.einsum("ni,nj->nij", xa, xb).reshape(len(y), -1)
    blocks = {"a": xa, "b": xb, "ab": xab}

    def rss(names):
        x = np.column_stack([np.ones(len(y))] + [blocks[n] for n in names])
        beta = np.linalg.lstsq(x, y, rcond=None)[0]
        r = y - x @ beta
        return float(r @ r)
    full = rss(["a", "b", "ab"])
    resid_df = len(y) - ncell
    from scipy.stats import f as f_dist
    anova = {}
    for term in ("a", "b", "ab"):
        ss = rss([t for t in ("a", "b", "ab") if t != term]) - full
        df = blocks[term].shape[1]
        fval = (ss / df) / (full / resid_df)
        anova[term] = {"sum_sq": ss, "df": df, "f": fval, "p": float(f_dist.sf(fval, df, resid_df))}
    return {"set": set_name, "factors": factors, "cells": cells, "main_effects": main_effects,
            "interaction": interaction, "anova": {"first": anova["a"], "second": anova["b"],
                                                  "interaction": anova["ab"], "residual_sum_sq": full,
                                                  "residual_df": resid_df}}


# ----------------------------------------------------------------------------- the check
def compare(ours_path, peer_path):
    """Largest absolute differences between hierarag's and the peer's point estimates, by kind."""
    with open(ours_path) as f:
        ours = json.load(f)
    with open(peer_path) as f:
        peer = json.load(f)
    diffs, missing = {}, []

    def put(kind, x, y, what):
        if x is None or y is None:
            if (x is None) != (y is None):
                missing.append(f"{what}: hierarag {x}, peer {y}")
            return
        d = abs(float(x) - float(y))
        if math.isnan(d):
            missing.append(f"{what}: NaN")
            return
        n, worst, where = diffs.get(kind, (0, -1.0, ""))
        diffs[kind] = (n + 1, d, what) if d > worst else (n + 1, worst, where)

    val = lambda e: None if e is None else e["value"]  # noqa: E731
    peer_levels = {(l["set"], l["dimension"], l["level"]): l for l in peer["levels"]}
    if len(peer_levels) != len(ours["levels"]):
        missing.append(f"levels: hierarag {len(ours['levels'])}, peer {len(peer_levels)}")
    for lo in ours["levels"]:
        key = (lo["set"], lo["dimension"], lo["level"])
        lp = peer_levels.get(key)
        name = " ".join(key)
        if lp is None:
            missing.append(f"{name}: not in the peer's output")
            continue
        if lo["n"] != lp["n"] or [c["category"] for c in lo["categories"]] != [c["category"] for c in lp["categories"]]:
            missing.append(f"{name}: n or categories differ")
        for m in MEAN_NAMES:
            put("level means (8 metrics)", lo["means"][m], lp["means"][m], f"{name} {m}")
        for co, cp in zip(lo["categories"], lp["categories"]):
            for m in MEAN_NAMES:
                put("category means (8 metrics)", co["means"][m], cp["means"][m], f"{name} {co['category']} {m}")
            put("category means (8 metrics)", co["metric"]["value"], cp["metric"]["value"],
                f"{name} {co['category']} metric")
        put("DiscPow", val(lo["discpow"]), val(lp["discpow"]), name)
        put("range", val(lo["range"]), val(lp["range"]), name)
        put("NMI", lo["nmi"], lp["nmi"], name)
        put("Δ", val(lo["delta"]["ratio"]) if lo["delta"] else None,
            val(lp["delta"]["ratio"]) if lp["delta"] else None, name)
    peer_splits = {(s["dimension"], s["parent"]): s for s in peer["splits"]}
    if len(peer_splits) != len(ours["splits"]):
        missing.append(f"splits: hierarag {len(ours['splits'])}, peer {len(peer_splits)}")
    for so in ours["splits"]:
        sp = peer_splits.get((so["dimension"], so["parent"]))
        name = f"{so['dimension']} split {so['parent']}"
        if sp is None:
            missing.append(f"{name}: not in the peer's output")
            continue
        put("ρ, σ_sib, δ_vert, split means", so["parent_mean"], sp["parent_mean"], name + " parent mean")
        for x, y in zip(so["children_means"], sp["children_means"]):
            put("ρ, σ_sib, δ_vert, split means", x, y, name + " child mean")
        put("ρ, σ_sib, δ_vert, split means", val(so["sigma_sib"]), val(sp["sigma_sib"]), name + " σ_sib")
        put("ρ, σ_sib, δ_vert, split means", val(so["delta_vert"]), val(sp["delta_vert"]), name + " δ_vert")
        put("ρ, σ_sib, δ_vert, split means", val(so["rho"]), val(sp["rho"]), name + " ρ")
    peer_dims = {d["dimension"]: d for d in peer["dimensions"]}
    for do in ours["dimensions"]:
        dp = peer_dims.get(do["dimension"])
        put("ρ, σ_sib, δ_vert, split means", do["mean_rho"], dp and dp["mean_rho"], f"{do['dimension']} mean ρ")
    peer_fact = {f["set"]: f for f in peer["factorials"]}
    for fo in ours["factorials"]:
        fp = peer_fact.get(fo["set"])
        if fp is None:
            missing.append(f"factorial {fo['set']}: not in the peer's output")
            continue
        for co, cp in zip(fo["cells"], fp["cells"]):
            put("factorial cells, effects, ANOVA", co["metric"]["value"], cp["metric"]["value"],
                f"{fo['set']} cell {co['categories']}")
            for m in MEAN_NAMES:
                put("factorial cells, effects, ANOVA", co["means"][m], cp["means"][m], f"{fo['set']} cell {m}")
        for eo, ep in zip(fo["main_effects"], fp["main_effects"]):
            put("factorial cells, effects, ANOVA", val(eo["value"]), val(ep), f"{fo['set']} {eo['contrast']}")
        if fo["interaction"]:
            put("factorial cells, effects, ANOVA", val(fo["interaction"]["value"]), val(fp["interaction"]),
                f"{fo['set']} interaction")
        if fo["anova"]:
            for term in ("first", "second", "interaction"):
                put("factorial cells, effects, ANOVA", fo["anova"][term]["f"], fp["anova"][term]["f"],
                    f"{fo['set']} ANOVA F {term}")
                put("factorial cells, effects, ANOVA", fo["anova"][term]["sum_sq"], fp["anova"][term]["sum_sq"],
                    f"{fo['set']} ANOVA SS {term}")
    # Not a check (different random streams): how close the resampling results are.
    width_ratio, p_diff = [], []
    for lo in ours["levels"]:
        lp = peer_levels.get((lo["set"], lo["dimension"], lo["level"]))
        if not lp:
            continue
        for co, cp in zip(lo["categories"], lp["categories"]):
            if co["metric"].get("ci") and cp["metric"].get("ci"):
                width_ratio.append((cp["metric"]["ci"][1] - cp["metric"]["ci"][0]) /
                                   (co["metric"]["ci"][1] - co["metric"]["ci"][0]))
        if lo.get("discpow_p") is not None and lp.get("discpow_p") is not None:
            p_diff.append(abs(lo["discpow_p"] - lp["discpow_p"]))
    kinds = {k: {"compared": n, "max_abs_diff": d, "where": w} for k, (n, d, w) in diffs.items()}
    return {"kinds": kinds, "max_abs_diff": max((d for _, d, _ in diffs.values()), default=float("nan")),
            "compared": sum(n for n, _, _ in diffs.values()), "problems": missing,
            "ci_width_ratio_peer_over_hierarag": ([min(width_ratio), statistics.median(width_ratio), max(width_ratio)]
                                                  if width_ratio else None),
            "discpow_p_max_abs_diff": max(p_diff) if p_diff else None}


# ----------------------------------------------------------------------------- runs
SCENARIOS = {"resampling": [], "no-resampling": ["--bootstrap", "0", "--permutations", "0"]}
SCEN_LABEL = {"resampling": "1,000 bootstrap + 1,000 permutations",
              "no-resampling": "--bootstrap 0 --permutations 0"}
ENGINE_LABEL = {"hierarag": "hierarag analyze", "numpy": "numpy + scikit-learn"}


def engine_cmd(engine, args, run_dir, scen, work):
    if engine == "hierarag":
        out = os.path.join(work, f"hierarag-{scen}")
        return [args.hierarag, "analyze", run_dir, "-q", "--out", out] + SCENARIOS[scen], \
            os.path.join(out, "analysis.json")
    out = os.path.join(work, f"numpy-{scen}.json")
    return [sys.executable, os.path.abspath(__file__), "--peer-numpy", run_dir, "--peer-out", out] + \
        SCENARIOS[scen], out


def summarize(runs):
    summary = {}
    for scen, per_engine in runs.items():
        summary[scen] = {}
        for engine, rs in per_engine.items():
            ok = [r for r in rs if r["rc"] == 0]
            if not ok:
                summary[scen][engine] = {"failed": True}
                continue
            s = {"median_s": statistics.median(r["wall_s"] for r in ok), "min_s": min(r["wall_s"] for r in ok),
                 "max_s": max(r["wall_s"] for r in ok), "peak_rss_mb": max(r["peak_rss_kb"] for r in ok) / 1024,
                 "cpu_s": statistics.median(r["user_s"] + r["sys_s"] for r in ok), "reps": len(ok),
                 "busy": sum(1 for r in ok if r["other_cpu_s"] / max(r["wall_s"], 1e-9) > BUSY_CORES) * 2 > len(ok)}
            if engine == "numpy":
                phases = [json.loads(r["output"].strip().splitlines()[-1]) for r in ok]
                s["in_process_s"] = {k: statistics.median(p[k] for p in phases) for k in phases[0]}
            summary[scen][engine] = s
        peer_ratios(summary[scen])
    return summary


def print_report(results):
    g = results["generated"]
    print(f"\nrun directory {results['run_dir']}: {g['questions']:,} scored questions "
          f"({', '.join(f'{k} {v:,}' for k, v in g['sets'].items())}), {g['refused']:,} refused; "
          f"benchmark.jsonl {g['benchmark_bytes'] / 1e6:.1f} MB, scores.jsonl {g['scores_bytes'] / 1e6:.1f} MB")
    m = results["machine"]
    print(f"machine: {m.get('cpu_model')}, {m.get('nproc')} cores, {m.get('mem_total_gb')} GB; "
          f"{m.get('hierarag_version')} at {m.get('git_head')}{' + working tree' if m.get('git_dirty_crates') else ''}; "
          f"load average {results.get('loadavg_start')} at the start, {results.get('loadavg_end')} at the end")
    print(f"{results['reps']} repetitions, each its own process (median)\n")
    print("| settings | engine | median s | min s | peak RSS MB | CPU s | ratio (peer/hierarag) | ratio of mins | CPU ratio |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for scen, per_engine in results["summary"].items():
        for engine, s in per_engine.items():
            if s.get("failed"):
                print(f"| {SCEN_LABEL[scen]} | {ENGINE_LABEL[engine]} | failed | | | | | | |")
                continue
            r = lambda k: f"{s[k]:.2f}×" if k in s else ""  # noqa: E731
            flag = "*" if s["busy"] else ""
            print(f"| {SCEN_LABEL[scen]} | {ENGINE_LABEL[engine]} | {s['median_s']:.3f}{flag} | {s['min_s']:.3f} | "
                  f"{s['peak_rss_mb']:,.0f} | {s['cpu_s']:.2f} | {r('ratio')} | {r('ratio_min')} | {r('cpu_ratio')} |")
    print("\nratio = peer seconds / hierarag seconds (> 1: hierarag is faster); CPU = user + sys of the process;\n"
          "* = other processes used > 0.25 cores during most repetitions")
    for scen, per_engine in results["summary"].items():
        ph = per_engine.get("numpy", {}).get("in_process_s")
        if ph:
            print(f"peer phases ({scen}, median s): " + ", ".join(f"{k} {v:.3f}" for k, v in ph.items()))
    for scen, c in (results.get("check") or {}).items():
        if "error" in c:
            print(f"check ({scen}): {c['error']}")
            continue
        print(f"\ncheck ({scen}): {c['compared']:,} point estimates compared, max |hierarag − peer| = "
              f"{c['max_abs_diff']:.3g}{'' if c['max_abs_diff'] <= 1e-9 else '  (ABOVE 1e-9)'}")
        for kind, k in c["kinds"].items():
            print(f"  {kind:34s} {k['compared']:6,d} values, max diff {k['max_abs_diff']:.3g} ({k['where']})")
        for p in c["problems"]:
            print(f"  PROBLEM: {p}")
        if c.get("ci_width_ratio_peer_over_hierarag"):
            lo, med, hi = c["ci_width_ratio_peer_over_hierarag"]
            print(f"  not checked (different random streams): CI width of category means, peer/hierarag "
                  f"median {med:.3f} (range {lo:.3f}–{hi:.3f}); DiscPow p-values differ by at most "
                  f"{c['discpow_p_max_abs_diff']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hierarag", default=os.path.join(ROOT, "target", "release", "hierarag"))
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    ap.add_argument("--n", type=int, default=10_000, help="questions in the rq2 sets (default 10,000)")
    ap.add_argument("--factorial", type=int, default=0, metavar="N",
                    help="also N questions in an rq3-style factorial set lv×qc (default 0: none)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the generated scores")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--engines", default="hierarag,numpy")
    ap.add_argument("--scenarios", default="resampling,no-resampling")
    ap.add_argument("--max-wait-quiet", type=int, default=30,
                    help="wait up to this many seconds before each measurement for other processes to go quiet")
    ap.add_argument("--generate-only", action="store_true")
    ap.add_argument("--report", metavar="RESULTS_JSON", help="only print the table of an earlier run")
    ap.add_argument("--peer-numpy", metavar="RUN_DIR", help="run the peer on RUN_DIR (one timed repetition)")
    ap.add_argument("--peer-out", help="where the peer writes its JSON")
    ap.add_argument("--bootstrap", type=int, default=1000, help="peer only")
    ap.add_argument("--permutations", type=int, default=1000, help="peer only")
    args = ap.parse_args()
    if args.peer_numpy:
        return peer_numpy(args)
    if args.report:
        with open(args.report) as f:
            return print_report(json.load(f))
    ensure_packages(PACKAGES, "bench/analysis.sh")
    run_dir = os.path.join(args.out, dir_name(args.n, args.factorial))
    generated = ensure_run_dir(run_dir, args.n, args.factorial, args.seed)
    if args.generate_only:
        return
    if not os.access(args.hierarag, os.X_OK):
        sys.exit(f"{args.hierarag} not found; cargo build --release -p hierarag")

    engines = [e for e in args.engines.split(",") if e]
    scenarios = [s for s in args.scenarios.split(",") if s]
    work = os.path.join(args.out, "analysis-work")
    os.makedirs(work, exist_ok=True)
    results = {"started": datetime.datetime.now().isoformat(timespec="seconds"),
               "machine": machine_info(args.hierarag), "run_dir": os.path.relpath(run_dir, ROOT),
               "generated": generated, "reps": args.reps, "loadavg_start": [round(x, 2) for x in os.getloadavg()],
               "timing": "/usr/bin/time -f %M" if os.path.exists("/usr/bin/time") else "wait4 ru_maxrss",
               "runs": {s: {e: [] for e in engines} for s in scenarios}}
    try:
        import numpy
        import sklearn
        results["machine"]["numpy"] = numpy.__version__
        results["machine"]["scikit-learn"] = sklearn.__version__
    except ImportError:
        pass
    res_path = os.path.join(args.out, "analysis-results.json")
    # Warm the page cache and the binaries once, untimed.
    for scen in scenarios[:1]:
        for engine in engines:
            cmd, _ = engine_cmd(engine, args, run_dir, scen, work)
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    outputs = {}
    for rep in range(args.reps):
        for scen in scenarios:
            for engine in engines:
                cmd, out_file = engine_cmd(engine, args, run_dir, scen, work)
                r = timed_child(cmd, os.path.join(work, f"{engine}-{scen}-{rep}.log"), args.max_wait_quiet, ROOT)
                r["cmd"] = " ".join(os.path.relpath(c, ROOT) if c.startswith(ROOT) else c for c in cmd)
                results["runs"][scen][engine].append(r)
                log(f"rep {rep + 1}/{args.reps} {scen:13s} {engine:8s} {r['wall_s']:7.3f} s  "
                    f"{r['peak_rss_kb'] / 1024:6.0f} MB  other cores {r['other_cpu_s'] / max(r['wall_s'], 1e-9):.2f}"
                    f"  rc {r['rc']}")
                if r["rc"] != 0:
                    log(f"  failed: {r['output'][-500:]}")
                else:
                    outputs.setdefault(scen, {})[engine] = out_file
                with open(res_path, "w") as f:
                    json.dump(results, f, indent=1)
    results["summary"] = summarize(results["runs"])
    results["check"] = {}
    for scen, files in outputs.items():
        if "hierarag" in files and "numpy" in files:
            try:
                results["check"][scen] = compare(files["hierarag"], files["numpy"])
            except Exception as e:  # a broken output should not lose the timings
                results["check"][scen] = {"error": f"{type(e).__name__}: {e}"}
    results["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    results["finished"] = datetime.datetime.now().isoformat(timespec="seconds")
    with open(res_path, "w") as f:
        json.dump(results, f, indent=1)
    print_report(results)
    print(f"\nresults: {os.path.relpath(res_path, os.getcwd())}")


if __name__ == "__main__":
    main()
