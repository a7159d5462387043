#!/usr/bin/env python3
"""`hierarag compare` benchmark: 4 systems compared on 10,000 scored questions, bootstrap included.

Usually started through bench/compare.sh (venv, packages, release build). Steps:

  1. generates, deterministically for --n, --systems and --seed, a run directory with
     several systems, OUT/compare-10k-4/ (OUT/compare-N-S/ for other sizes): benchmark.jsonl
     and taxonomy.toml from bench/analysis.py's generate() (the rq2 shape: --n questions over
     the nine sets qc/…, at/…, lv/…, categories balanced), and per system
     systems/<name>/scores.jsonl. System 0's scores are analysis.py's as generated; every other
     system's CS is shifted per category (a seeded system effect plus a seeded category
     effect) plus per-question noise, clipped to [0, 1], with ROUGE-1 and BLEU moved
     consistently; the retrieval metrics and refusals are system 0's. manifest.json lists the
     systems (`config.systems`, kind "file"), seed 0;
  2. times `hierarag compare DIR -q --out W` with the default settings (1,000 bootstrap
     resamples, and 1,000 permutations in each system's own analysis), --reps times: wall
     time of the whole process, its CPU time and peak RSS (/usr/bin/time %M, or wait4's
     ru_maxrss);
  3. times the peer the same way, each repetition in its own process:
     `python bench/compare.py --peer DIR --peer-out F` — the same statistics on the same files
     with numpy, scipy, statsmodels and pingouin (see peer below), each system's own analysis
     by analysis.py's peer_numpy; the peer reports how long each part took;
  4. checks (not timed) that the peer's point estimates agree with hierarag's comparison.json
     (every mean difference, t and Wilcoxon statistic and p, Holm p, wins/ties/losses, spread,
     mixed-ANOVA F, Kendall τ, category means, each system's category means and DiscPow, the
     questions no system answers), and prints the largest difference;
  5. prints a table (median and min seconds, peak RSS, CPU seconds, peer/hierarag ratios: > 1
     means hierarag is faster) and writes OUT/compare-results.json.

These are benchmarks, not tests: nothing fails when hierarag is slower.
"""
import argparse
import contextlib
import datetime
import io
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
import analysis  # noqa: E402  (the generator and the one-system peer; numpy is imported lazily)

PACKAGES = {"numpy": "numpy", "scipy": "scipy", "statsmodels": "statsmodels", "pandas": "pandas",
            "pingouin": "pingouin", "sklearn": "scikit-learn"}  # import name: pip name
LEVELS, METRICS, CS = analysis.LEVELS, analysis.METRICS, analysis.CS
REFUSED = METRICS.index("refused")
SYSTEM_NAMES = ["bm25", "dense", "hybrid", "rerank"]
BUSY_CORES = 0.25
TOL = 1e-9

# How the systems after the first differ from it on CS (seeded, see generate).
SYSTEM_SD, CATEGORY_SD, QUESTION_SD = 0.02, 0.025, 0.06


# ----------------------------------------------------------------------------- the run directory
def dir_name(n, systems):
    size = f"{n // 1000}k" if n % 1000 == 0 else str(n)
    return f"compare-{size}-{systems}"


def system_names(count):
    return [SYSTEM_NAMES[i] if i < len(SYSTEM_NAMES) else f"system{i + 1}" for i in range(count)]


def generate(run_dir, n, systems, seed):
    """benchmark.jsonl and taxonomy.toml (analysis.py's generate), manifest.json and
    systems/<name>/scores.jsonl (deterministic for n, systems, seed)."""
    import numpy as np
    t0 = time.perf_counter()
    base = analysis.generate(run_dir, n, 0, seed)
    names = system_names(systems)
    rng = np.random.default_rng([seed, systems, 2])  # a stream of its own, after analysis.py's

    categories = {}
    with open(os.path.join(run_dir, "benchmark.jsonl"), encoding="utf-8") as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                categories[r["id"]] = tuple((c["dimension"], c["level"], c["category"]) for c in r["categories"])
    with open(os.path.join(run_dir, "scores.jsonl"), encoding="utf-8") as f:
        scores = [json.loads(line) for line in f if line.strip()]

    # Effects in taxonomy order, so that they do not depend on the questions' order.
    cells = [(dim, lv, cat) for dim, levels in analysis.load_taxonomy(analysis.TAXONOMY)
             for lv in LEVELS for cat, _ in levels.get(lv, [])]
    shifts = {names[0]: 0.0}
    effects = [{cell: 0.0 for cell in cells}]
    for name in names[1:]:
        shift = float(rng.normal(0.0, SYSTEM_SD))
        shifts[name] = shift
        effects.append({cell: shift + float(rng.normal(0.0, CATEGORY_SD)) for cell in cells})

    sizes = {}
    for s, name in enumerate(names):
        lines = []
        for r in scores:
            if s == 0:
                out = r
            else:
                cell = categories[r["id"]]
                effect = sum(effects[s][c] for c in cell) / len(cell)
                cs = float(np.clip(r["cs"] + effect + rng.normal(0.0, QUESTION_SD), 0.0, 1.0))
                rouge1 = float(np.clip(r["rouge1"] + 0.85 * (cs - r["cs"]), 0.0, 1.0))
                bleu = float(np.clip(r["bleu"] + 55.0 * (rouge1 ** 2 - r["rouge1"] ** 2), 0.0, 100.0))
                out = dict(r, cs=cs, rouge1=rouge1, bleu=bleu)
            lines.append(json.dumps(out))
        folder = os.path.join(run_dir, "systems", name)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "scores.jsonl")
        with open(path + ".partial", "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(path + ".partial", path)
        sizes[name] = os.path.getsize(path)
    os.remove(os.path.join(run_dir, "scores.jsonl"))  # a run with [[system]]s has none at the top
    for stale in os.listdir(os.path.join(run_dir, "systems")):
        if stale not in names:
            shutil.rmtree(os.path.join(run_dir, "systems", stale))
    manifest = {"tool": "hierarag", "version": "bench", "seed": 0,
                "config": {"systems": [{"name": name, "kind": "file"} for name in names]}}
    with open(os.path.join(run_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    info = {"kind": "compare", "n": n, "systems": names, "seed": seed, "questions": base["questions"],
            "sets": base["sets"], "refused": base["refused"], "benchmark_bytes": base["benchmark_bytes"],
            "scores_bytes": sizes, "system_shift": shifts,
            "effects": {"system_sd": SYSTEM_SD, "category_sd": CATEGORY_SD, "question_sd": QUESTION_SD}}
    with open(os.path.join(run_dir, "generated.json"), "w") as f:
        json.dump(info, f, indent=1)
    log(f"generated {run_dir}: {info['questions']:,} questions × {systems} systems "
        f"({', '.join(names)}), {time.perf_counter() - t0:.1f} s")
    return info


def ensure_run_dir(run_dir, n, systems, seed):
    try:
        with open(os.path.join(run_dir, "generated.json")) as f:
            info = json.load(f)
        if (info.get("kind"), info["n"], len(info["systems"]), info["seed"]) == ("compare", n, systems, seed) and all(
                os.path.exists(os.path.join(run_dir, f)) for f in
                ["benchmark.jsonl", "taxonomy.toml", "manifest.json"] +
                [os.path.join("systems", s, "scores.jsonl") for s in info["systems"]]):
            return info
    except (OSError, ValueError, KeyError):
        pass
    return generate(run_dir, n, systems, seed)


# ----------------------------------------------------------------------------- the peer
def peer(args):
    """The peer: the statistics of `hierarag compare` with numpy, scipy, statsmodels, pingouin.

    As a numpy user would write it: json per line, one (systems, questions, 8 metrics) float
    array of the questions every system scored; each system's own analysis by analysis.py's
    peer_numpy on a folder that shows it the system's scores (symlinks). Paired statistics per
    stratum (all questions; each category of each (set, dimension, level)): one draw
    rng.integers(0, n_k, (B, n_k)) per stratum, shared by every system (paired) and every
    metric, turned into resample counts (np.bincount with row offsets) so that the replicate
    means of all systems and metrics are one matrix product; np.percentile intervals of the
    differences, of a level's overall difference (category replicates weighted by size) and of
    the spread (np.std over categories); scipy.stats.ttest_rel(b, a) and wilcoxon(b, a) along
    the questions axis for all pairs and metrics at once (per slice where n ≤ 50, where scipy's
    choice of method looks at the whole array); statsmodels multipletests(method="holm") per
    pair and metric over the level's categories; scipy.stats.kendalltau; and per level and
    metric pingouin.mixed_anova on a long pandas DataFrame.
    """
    t0 = time.perf_counter()
    import gc
    import warnings
    import numpy as np
    import pandas as pd
    import pingouin
    import scipy.stats
    import sklearn.metrics  # noqa: F401  (for analysis.peer_numpy)
    from statsmodels.stats.multitest import multipletests
    t_import = time.perf_counter()
    warnings.filterwarnings("ignore")  # scipy's and pingouin's on the constant differences

    B, P, CONF, DDOF = args.bootstrap, args.permutations, 0.95, 0
    tails = [50 * (1 - CONF), 50 * (1 + CONF)]
    rng = np.random.default_rng(0)
    run_dir = args.peer
    with open(os.path.join(run_dir, "manifest.json")) as f:
        names = [s["name"] for s in json.load(f)["config"]["systems"]]
    if args.peer_systems:
        names = args.peer_systems.split(",")
    S = len(names)
    tax_path = os.path.join(run_dir, "taxonomy.toml")
    taxonomy = analysis.load_taxonomy(tax_path if os.path.exists(tax_path) else analysis.TAXONOMY)
    dim_order = {key: i for i, (key, _) in enumerate(taxonomy)}
    tax = dict(taxonomy)

    bench = {}
    with open(os.path.join(run_dir, "benchmark.jsonl"), encoding="utf-8") as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                bench[r["id"]] = (r["set"], r["categories"])
    rows = []
    for name in names:
        with open(os.path.join(run_dir, "systems", name, "scores.jsonl"), encoding="utf-8") as f:
            rows.append({r["id"]: r for r in (json.loads(line) for line in f if line.strip())})
    ids = [i for i in rows[0] if all(i in r for r in rows[1:])]
    X = np.array([[[float(r[i][m]) for m in METRICS] for i in ids] for r in rows])  # (S, n, 8)
    n = len(ids)
    groups = {}
    for q, i in enumerate(ids):
        set_name, cats = bench[i]
        if len(cats) == 1:
            c = cats[0]
            key = (dim_order.get(c["dimension"], 1 << 30), c["dimension"], LEVELS.index(c["level"]), set_name)
            groups.setdefault(key, {}).setdefault(c["category"], []).append(q)
    t_load = time.perf_counter()

    # Each system's own analysis of the common questions: analysis.py's peer, once per system.
    views = args.peer_out + ".systems"
    analyses, analysis_phases = {}, {}
    for s, name in enumerate(names):
        view = os.path.join(views, name)
        shutil.rmtree(view, ignore_errors=True)
        os.makedirs(view)
        for fname in ("benchmark.jsonl", "taxonomy.toml"):
            if os.path.exists(os.path.join(run_dir, fname)):
                os.symlink(os.path.abspath(os.path.join(run_dir, fname)), os.path.join(view, fname))
        scores = os.path.abspath(os.path.join(run_dir, "systems", name, "scores.jsonl"))
        if len(rows[s]) == n:
            os.symlink(scores, os.path.join(view, "scores.jsonl"))
        else:
            with open(os.path.join(view, "scores.jsonl"), "w") as f:
                f.writelines(json.dumps(rows[s][i]) + "\n" for i in ids)
        one = argparse.Namespace(peer_numpy=view, peer_out=os.path.join(view, "analysis.json"),
                                 bootstrap=B, permutations=P)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            analysis.peer_numpy(one)
        analyses[name] = one.peer_out
        analysis_phases[name] = json.loads(printed.getvalue().strip().splitlines()[-1])
    # statsmodels' multipletests(method="holm") runs gc.collect() on every call: ~0.1 s a call
    # with pandas, scipy and pingouin loaded. Freezing what exists now makes those collections
    # scan only the objects made since (what a user who profiled this would do).
    gc.freeze()
    t_analyses = time.perf_counter()

    pairs = [(i, j) for i in range(S) for j in range(i + 1, S)]
    ii = np.array([i for i, _ in pairs])
    jj = np.array([j for _, j in pairs])
    pair_names = [(names[i], names[j]) for i, j in pairs]

    def none(x):
        x = float(x)
        return x if math.isfinite(x) else None

    def replicate_means(Xk):
        """(B, S, 8) bootstrap means of one stratum Xk (S, n_k, 8), questions drawn jointly."""
        nk = Xk.shape[1]
        idx = rng.integers(0, nk, (B, nk))
        counts = np.bincount((idx + nk * np.arange(B)[:, None]).ravel(), minlength=B * nk).reshape(B, nk)
        return (counts @ Xk.transpose(1, 0, 2).reshape(nk, -1) / nk).reshape(B, S, len(METRICS))

    def tests(Xk):
        """Every pair's differences b − a on every metric of stratum Xk: dict of (pairs, 8) arrays."""
        a, b = Xk[ii], Xk[jj]  # (pairs, n_k, 8)
        d = b - a
        t = scipy.stats.ttest_rel(b, a, axis=1)
        if Xk.shape[1] > 50:
            w = scipy.stats.wilcoxon(b, a, axis=1)
            w_stat, w_p = w.statistic, w.pvalue
        else:  # scipy picks exact/permutation/normal from the whole array's ties and zeros
            w_stat = np.empty(d.shape[::2])
            w_p = np.empty(d.shape[::2])
            for p in range(d.shape[0]):
                for m in range(d.shape[2]):
                    r = scipy.stats.wilcoxon(b[p, :, m], a[p, :, m])
                    w_stat[p, m], w_p[p, m] = r.statistic, r.pvalue
        return {"mean": d.mean(axis=1) + 0.0, "t": t.statistic, "t_p": t.pvalue, "w": w_stat, "w_p": w_p,
                "wins": (d > 0).sum(axis=1), "ties": (d == 0).sum(axis=1), "losses": (d < 0).sum(axis=1)}

    def diff_out(r, p, m, ci):
        t_p, w_p = none(r["t_p"][p, m]), none(r["w_p"][p, m])
        return {"n": None, "mean": {"value": float(r["mean"][p, m]), "ci": ci},
                "t": none(r["t"][p, m]) if t_p is not None else None, "t_p": t_p,
                "w": float(r["w"][p, m]) + 0.0 if w_p is not None else None, "w_p": w_p,
                "wins": int(r["wins"][p, m]), "ties": int(r["ties"][p, m]), "losses": int(r["losses"][p, m])}

    def ci_of(reps):  # reps (B, ...) → (2, ...) or None
        return np.percentile(reps, tails, axis=0) if B > 0 else None

    # Over all common questions.
    reps = replicate_means(X) if B > 0 else None
    res = tests(X)
    cis = ci_of(reps[:, jj] - reps[:, ii]) if reps is not None else None  # (2, pairs, 8)
    overall = []
    for m, metric in enumerate(METRICS):
        overall.append({"metric": metric, "systems": names, "means": X[:, :, m].mean(axis=1).tolist(), "n": n,
                        "pairs": [{"a": a, "b": b, "diff": dict(diff_out(res, p, m, None if cis is None else
                                                                        cis[:, p, m].tolist()), n=n)}
                                  for p, (a, b) in enumerate(pair_names)]})

    # Per (set, dimension, level).
    levels, level_data, holm_s = [], [], 0.0
    for key in sorted(groups):
        _, dim, lvi, set_name = key
        lv = LEVELS[lvi]
        members = groups[key]
        known = [c for c, _ in tax.get(dim, {}).get(lv, [])]
        cats = [c for c in known if c in members] + sorted(c for c in members if c not in known)
        K = len(cats)
        sizes = np.array([len(members[c]) for c in cats])
        pos = [np.array(members[c]) for c in cats]
        Xl = X[:, np.concatenate(pos)]
        strata = [X[:, p] for p in pos]
        cat_means = np.stack([x.mean(axis=1) for x in strata])  # (K, S, 8)
        cat_tests = [tests(x) for x in strata]
        lvl_tests = tests(Xl)
        R = np.stack([replicate_means(x) for x in strata], axis=1) if B > 0 else None  # (B, K, S, 8)
        lvl_ci = spread_ci = cat_ci = None
        if R is not None:
            lvl_reps = np.einsum("bksm,k->bsm", R, sizes) / sizes.sum()
            lvl_ci = ci_of(lvl_reps[:, jj] - lvl_reps[:, ii])  # (2, pairs, 8)
            rep_d = R[:, :, jj] - R[:, :, ii]  # (B, K, pairs, 8)
            cat_ci = ci_of(rep_d)  # (2, K, pairs, 8)
            spread_ci = ci_of(np.std(rep_d, axis=1, ddof=DDOF)) if K >= 2 else None
        cat_d = cat_means[:, jj] - cat_means[:, ii]  # (K, pairs, 8)
        spread = np.std(cat_d, axis=0, ddof=DDOF) if K >= 2 else None
        level_means = Xl.mean(axis=1)  # (S, 8)
        metrics_out = []
        for m, metric in enumerate(METRICS):
            pairs_out = []
            for p, (a, b) in enumerate(pair_names):
                per_cat = [dict(diff_out(cat_tests[k], p, m, None if cat_ci is None else cat_ci[:, k, p, m].tolist()),
                                n=int(sizes[k])) for k in range(K)]
                for field in ("t_p", "w_p"):
                    ps = np.array([np.nan if c[field] is None else c[field] for c in per_cat])
                    ok = np.isfinite(ps)
                    adj = np.full(K, np.nan)
                    if ok.any():
                        th = time.perf_counter()
                        adj[ok] = multipletests(ps[ok], method="holm")[1]
                        holm_s += time.perf_counter() - th
                    for c, v in zip(per_cat, adj):
                        c[field + "_holm"] = none(v)
                pairs_out.append({
                    "a": a, "b": b,
                    "overall": dict(diff_out(lvl_tests, p, m, None if lvl_ci is None else lvl_ci[:, p, m].tolist()),
                                    n=int(sizes.sum())),
                    "categories": per_cat,
                    "spread": None if spread is None else {
                        "value": float(spread[p, m]),
                        "ci": None if spread_ci is None else spread_ci[:, p, m].tolist()}})
            ranks = None
            if S >= 3:
                better = np.argmin if m == REFUSED else np.argmax
                ranks = {"best": names[int(better(level_means[:, m]))], "categories": [
                    {"category": c, "tau": none(scipy.stats.kendalltau(cat_means[k, :, m], level_means[:, m]).statistic),
                     "best": names[int(better(cat_means[k, :, m]))]} for k, c in enumerate(cats)]}
            metrics_out.append({"metric": metric, "systems": names, "n": int(sizes.sum()),
                                "means": cat_means[:, :, m].T.tolist(), "pairs": pairs_out, "ranks": ranks,
                                "anova": None,
                                "within_constant": bool(np.all(Xl[:, :, m] == Xl[:1, :, m]))})
        out = {"set": set_name, "dimension": dim, "level": lv,
               "categories": [{"category": c, "n": int(k)} for c, k in zip(cats, sizes)], "metrics": metrics_out}
        levels.append(out)
        level_data.append((out, Xl, np.repeat(np.arange(K), sizes)))

    # The questions no system answers (refused, or CS below 0.5).
    unanswered = [ids[q] for q in np.flatnonzero(np.all((X[:, :, REFUSED] > 0) | (X[:, :, CS] < 0.5), axis=0))]
    t_paired = time.perf_counter()

    # pingouin's mixed ANOVA per level and metric: system within questions, category between.
    system_labels = np.array(names)
    for out, Xl, labels in level_data:
        nl = Xl.shape[1]
        df = pd.DataFrame({"question": np.repeat(np.arange(nl), S), "system": np.tile(system_labels, nl),
                           "category": np.repeat(labels, S)})
        for m, metric in enumerate(METRICS):
            df[metric] = Xl[:, :, m].T.ravel()
        for m, metric in enumerate(METRICS):
            if len(out["categories"]) < 2 or nl <= len(out["categories"]):
                continue
            a = pingouin.mixed_anova(data=df, dv=metric, within="system", subject="question", between="category")
            rows_ = {r["Source"]: r for r in a.to_dict("records")}
            p_col = "p_unc" if "p_unc" in a.columns else "p-unc"
            out["metrics"][m]["anova"] = {
                term: {"ss": float(r["SS"]), "df1": float(r["DF1"]), "df2": float(r["DF2"]), "f": none(r["F"]),
                       "p": none(r[p_col]), "np2": none(r["np2"])}
                for term, r in (("category", rows_["category"]), ("system", rows_["system"]),
                                ("interaction", rows_["Interaction"]))}
    # Per dimension, the level whose interaction (on CS) has the largest partial η².
    separating = {}
    for out in levels:
        a = out["metrics"][CS]["anova"]
        if a and a["interaction"]["np2"] is not None:
            best = separating.get(out["dimension"])
            if best is None or a["interaction"]["np2"] > best[1]:
                separating[out["dimension"]] = (out["level"], a["interaction"]["np2"])
    t_anova = time.perf_counter()

    result = {"settings": {"bootstrap": B, "permutations": P, "confidence": CONF, "ddof": DDOF},
              "systems": names, "common": n, "overall": overall, "levels": levels, "unanswered": unanswered,
              "separating": {d: lv for d, (lv, _) in separating.items()}, "analyses": analyses,
              "analysis_timings_s": analysis_phases,
              "timings_s": {"import": t_import - t0, "load": t_load - t_import,
                            "per-system analyses": t_analyses - t_load, "paired stats": t_paired - t_analyses - holm_s,
                            "Holm (statsmodels)": holm_s,
                            "mixed ANOVA": t_anova - t_paired}}
    with open(args.peer_out, "w") as f:
        json.dump(result, f, indent=1)
    result["timings_s"]["write"] = time.perf_counter() - t_anova
    print(json.dumps(result["timings_s"]))


# ----------------------------------------------------------------------------- the check
def metric_key(name):
    return name.replace("_", "")  # comparison.json may spell nDCG@10 ndcg10 or ndcg_10


def compare(ours_path, peer_path):
    """Largest differences between hierarag's and the peer's point estimates, by kind:
    absolute, relative for values above 1 in magnitude (F, t, W)."""
    with open(ours_path) as f:
        ours = json.load(f)
    with open(peer_path) as f:
        peer = json.load(f)
    diffs, problems, by_design = {}, [], {}

    def put(kind, x, y, what):
        if x is None or y is None:
            if (x is None) != (y is None):
                problems.append(f"{kind}, {what}: hierarag {x}, peer {y}")
            return
        x, y = float(x), float(y)
        d = abs(x - y) / max(1.0, abs(x), abs(y))
        if math.isnan(d):
            problems.append(f"{kind}, {what}: NaN")
            return
        n, worst, where = diffs.get(kind, (0, -1.0, ""))
        diffs[kind] = (n + 1, d, what) if d > worst else (n + 1, worst, where)

    def put_diff(kind, do, dp, what):
        put(f"{kind} mean difference", do["mean"]["value"], dp["mean"]["value"], what)
        put(f"{kind} t", do["t"], dp["t"], what)
        put(f"{kind} t p", do["t_p"], dp["t_p"], what)
        put(f"{kind} Wilcoxon W", do["w"], dp["w"], what)
        put(f"{kind} Wilcoxon p", do["w_p"], dp["w_p"], what)
        if (do["n"], do["wins"], do["ties"], do["losses"]) != (dp["n"], dp["wins"], dp["ties"], dp["losses"]):
            problems.append(f"{kind}, {what}: n/wins/ties/losses hierarag {do['n']}/{do['wins']}/{do['ties']}/"
                            f"{do['losses']}, peer {dp['n']}/{dp['wins']}/{dp['ties']}/{dp['losses']}")
        else:
            put(f"{kind} n, wins, ties, losses", 0.0, 0.0, what)

    if [s["name"] for s in ours["systems"]] != peer["systems"] or ours["common"] != peer["common"]:
        problems.append(f"systems/common: hierarag {[s['name'] for s in ours['systems']]} {ours['common']}, "
                        f"peer {peer['systems']} {peer['common']}")
    peer_overall = {metric_key(m["metric"]): m for m in peer["overall"]}
    for mo in ours["overall"]:
        mp = peer_overall.get(metric_key(mo["metric"]))
        if mp is None:
            problems.append(f"overall {mo['metric']}: not in the peer's output")
            continue
        for s, (x, y) in enumerate(zip(mo["means"], mp["means"])):
            put("overall means", x, y, f"{mo['metric']} {mo['systems'][s]}")
        for po, pp in zip(mo["pairs"], mp["pairs"]):
            put_diff("overall", po["diff"], pp["diff"], f"{mo['metric']} {po['b']} − {po['a']}")
    if len(peer_overall) != len(ours["overall"]):
        problems.append(f"overall: hierarag {len(ours['overall'])} metrics, peer {len(peer_overall)}")

    analyses = {}
    for name, path in peer["analyses"].items():
        with open(path) as f:
            analyses[name] = {(l["set"], l["dimension"], l["level"]): l for l in json.load(f)["levels"]}
    peer_levels = {(l["set"], l["dimension"], l["level"]): l for l in peer["levels"]}
    if len(peer_levels) != len(ours["levels"]):
        problems.append(f"levels: hierarag {len(ours['levels'])}, peer {len(peer_levels)}")
    width_ratio = []
    for lo in ours["levels"]:
        key = (lo["set"], lo["dimension"], lo["level"])
        lp = peer_levels.get(key)
        name = " ".join(key)
        if lp is None:
            problems.append(f"{name}: not in the peer's output")
            continue
        cats = [c["category"] for c in lo["categories"]]
        if lo["categories"] != lp["categories"]:
            problems.append(f"{name}: categories or their sizes differ")
            continue
        for sl in lo["side_by_side"]:
            la = analyses.get(sl["system"], {}).get(key)
            if la is None:
                problems.append(f"{name} {sl['system']}: not in the peer's analysis of the system")
                continue
            for c, e, ca in zip(cats, sl["means"], la["categories"]):
                put("each system's analysis: category means", e and e["value"], ca["metric"]["value"],
                    f"{name} {sl['system']} {c}")
            put("each system's analysis: DiscPow", sl["discpow"] and sl["discpow"]["value"],
                la["discpow"] and la["discpow"]["value"], f"{name} {sl['system']}")
        peer_metrics = {metric_key(m["metric"]): m for m in lp["metrics"]}
        for mo in lo["metrics"]:
            mp = peer_metrics.get(metric_key(mo["metric"]))
            what = f"{name} {mo['metric']}"
            if mp is None:
                problems.append(f"{what}: not in the peer's output")
                continue
            for s, (xs, ys) in enumerate(zip(mo["means"], mp["means"])):
                for c, x, y in zip(cats, xs, ys):
                    put("category means", x, y, f"{what} {mo['systems'][s]} {c}")
            for po, pp in zip(mo["pairs"], mp["pairs"]):
                pw = f"{what} {po['b']} − {po['a']}"
                put_diff("level", po["overall"], pp["overall"], pw)
                for c, co, cp in zip(cats, po["categories"], pp["categories"]):
                    if co is None:
                        problems.append(f"{pw} {c}: hierarag has no difference")
                        continue
                    put_diff("category", co, cp, f"{pw} {c}")
                    put("category Holm t p", co["t_p_holm"], cp["t_p_holm"], f"{pw} {c}")
                    put("category Holm Wilcoxon p", co["w_p_holm"], cp["w_p_holm"], f"{pw} {c}")
                    if co["mean"].get("ci") and cp["mean"].get("ci"):
                        wo = co["mean"]["ci"][1] - co["mean"]["ci"][0]
                        wp = cp["mean"]["ci"][1] - cp["mean"]["ci"][0]
                        if wo > 0:
                            width_ratio.append(wp / wo)
                put("spread", po.get("spread") and po["spread"]["value"], pp["spread"] and pp["spread"]["value"], pw)
            ao, ap_ = mo.get("anova"), mp.get("anova")
            if (ao is None) != (ap_ is None):
                problems.append(f"{what}: mixed ANOVA hierarag {ao is not None}, peer {ap_ is not None}")
            elif ao:
                for term in ("category", "system", "interaction"):
                    fo, fp = ao[term]["f"], ap_[term]["f"]
                    if term != "category" and fo is None and mp["within_constant"]:
                        # Identical systems: no within-question variation; hierarag leaves F out
                        # where pingouin divides rounding noise (by design, see stats::mixed_anova).
                        by_design[f"mixed ANOVA {term} F"] = by_design.get(f"mixed ANOVA {term} F", 0) + 1
                        continue
                    put(f"mixed ANOVA {term} F", fo, fp, what)
                    put("mixed ANOVA SS, df, p, η²p", ao[term]["ss"], ap_[term]["ss"], f"{what} {term} SS")
                    put("mixed ANOVA SS, df, p, η²p", ao[term]["df1"], ap_[term]["df1"], f"{what} {term} df1")
                    put("mixed ANOVA SS, df, p, η²p", ao[term]["df2"], ap_[term]["df2"], f"{what} {term} df2")
                    put("mixed ANOVA SS, df, p, η²p", ao[term]["p"], ap_[term]["p"], f"{what} {term} p")
                    put("mixed ANOVA SS, df, p, η²p", ao[term]["np2"], ap_[term]["np2"], f"{what} {term} η²p")
            ro, rp = mo.get("ranks"), mp.get("ranks")
            if (ro is None) != (rp is None):
                problems.append(f"{what}: ranks hierarag {ro is not None}, peer {rp is not None}")
            elif ro:
                if ro["best"] != rp["best"]:
                    problems.append(f"{what}: best system hierarag {ro['best']}, peer {rp['best']}")
                for co, cp in zip(ro["categories"], rp["categories"]):
                    put("Kendall τ", co["tau"], cp["tau"], f"{what} {co['category']}")
                    if co["best"] != cp["best"]:
                        problems.append(f"{what} {co['category']}: best hierarag {co['best']}, peer {cp['best']}")
        if len(peer_metrics) != len(lo["metrics"]):
            problems.append(f"{name}: hierarag {len(lo['metrics'])} metrics, peer {len(peer_metrics)}")
    ours_unanswered = [u["id"] for u in ours["unanswered"]]
    if ours_unanswered != peer["unanswered"]:
        problems.append(f"unanswered: hierarag {len(ours_unanswered)} questions, peer {len(peer['unanswered'])}"
                        f"{' (same set, other order)' if set(ours_unanswered) == set(peer['unanswered']) else ''}")
    for d in ours["dimensions"]:
        ours_level = d.get("separating") and d["separating"]["level"]
        if ours_level != peer["separating"].get(d["dimension"]):
            problems.append(f"{d['dimension']}: separating level hierarag {ours_level}, "
                            f"peer {peer['separating'].get(d['dimension'])}")
    kinds = {k: {"compared": n, "max_diff": d, "where": w} for k, (n, d, w) in diffs.items()}
    return {"kinds": kinds, "max_diff": max((d for _, d, _ in diffs.values()), default=float("nan")),
            "compared": sum(n for n, _, _ in diffs.values()), "problems": problems,
            "left_out_by_design": by_design, "unanswered": len(ours_unanswered),
            "ci_width_ratio_peer_over_hierarag": ([min(width_ratio), statistics.median(width_ratio), max(width_ratio)]
                                                  if width_ratio else None)}


# ----------------------------------------------------------------------------- runs
ENGINE_LABEL = {"hierarag": "hierarag compare", "peer": "numpy + scipy + statsmodels + pingouin"}


def engine_cmd(engine, args, run_dir, work):
    extra = [] if args.bootstrap == 1000 else ["--bootstrap", str(args.bootstrap)]
    if engine == "hierarag":
        out = os.path.join(work, "hierarag")
        return [args.hierarag, "compare", run_dir, "-q", "--out", out] + extra, os.path.join(out, "comparison.json")
    out = os.path.join(work, "peer.json")
    return [sys.executable, os.path.abspath(__file__), "--peer", run_dir, "--peer-out", out] + extra, out


def summarize(runs):
    summary = {}
    for engine, rs in runs.items():
        ok = [r for r in rs if r["rc"] == 0]
        if not ok:
            summary[engine] = {"failed": True}
            continue
        s = {"median_s": statistics.median(r["wall_s"] for r in ok), "min_s": min(r["wall_s"] for r in ok),
             "max_s": max(r["wall_s"] for r in ok), "peak_rss_mb": max(r["peak_rss_kb"] for r in ok) / 1024,
             "cpu_s": statistics.median(r["user_s"] + r["sys_s"] for r in ok), "reps": len(ok),
             "busy": sum(1 for r in ok if r["other_cpu_s"] / max(r["wall_s"], 1e-9) > BUSY_CORES) * 2 > len(ok)}
        if engine == "peer":
            phases = [json.loads(r["output"].strip().splitlines()[-1]) for r in ok]
            s["in_process_s"] = {k: statistics.median(p[k] for p in phases) for k in phases[0]}
        summary[engine] = s
    peer_ratios(summary)
    return summary


def print_report(results):
    g = results["generated"]
    print(f"\nrun directory {results['run_dir']}: {g['questions']:,} scored questions × {len(g['systems'])} systems "
          f"({', '.join(g['systems'])}; {', '.join(f'{k} {v:,}' for k, v in g['sets'].items())}), "
          f"{g['refused']:,} refused; benchmark.jsonl {g['benchmark_bytes'] / 1e6:.1f} MB, scores.jsonl "
          f"{sum(g['scores_bytes'].values()) / len(g['scores_bytes']) / 1e6:.1f} MB a system")
    m = results["machine"]
    print(f"machine: {m.get('cpu_model')}, {m.get('nproc')} cores, {m.get('mem_total_gb')} GB; "
          f"{m.get('hierarag_version')} at {m.get('git_head')}{' + working tree' if m.get('git_dirty_crates') else ''}; "
          f"load average {results.get('loadavg_start')} at the start, {results.get('loadavg_end')} at the end")
    print(f"{results['bootstrap']:,} bootstrap resamples; {results['reps']} repetitions, each its own process "
          f"(median)\n")
    print("| engine | median s | min s | peak RSS MB | CPU s | ratio (peer/hierarag) | ratio of mins | CPU ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for engine, s in results["summary"].items():
        if s.get("failed"):
            print(f"| {ENGINE_LABEL[engine]} | failed | | | | | | |")
            continue
        r = lambda k: f"{s[k]:.2f}×" if k in s else ""  # noqa: E731
        flag = "*" if s["busy"] else ""
        print(f"| {ENGINE_LABEL[engine]} | {s['median_s']:.3f}{flag} | {s['min_s']:.3f} | "
              f"{s['peak_rss_mb']:,.0f} | {s['cpu_s']:.2f} | {r('ratio')} | {r('ratio_min')} | {r('cpu_ratio')} |")
    print("\nratio = peer seconds / hierarag seconds (> 1: hierarag is faster); CPU = user + sys of the process;\n"
          "* = other processes used > 0.25 cores during most repetitions")
    ph = results["summary"].get("peer", {}).get("in_process_s")
    if ph:
        total = sum(ph.values())
        print("peer phases (median s): " + ", ".join(f"{k} {v:.3f} ({100 * v / total:.0f} %)" for k, v in ph.items()))
    if results.get("check"):
        print_check(results["check"])


def print_check(c):
    if "error" in c:
        print(f"check: {c['error']}")
        return
    print(f"\ncheck: {c['compared']:,} point estimates compared, max |hierarag − peer| (relative above 1) = "
          f"{c['max_diff']:.3g}{'' if c['max_diff'] <= TOL else f'  (ABOVE {TOL:g})'}")
    for kind, k in c["kinds"].items():
        print(f"  {kind:42s} {k['compared']:7,d} values, max diff {k['max_diff']:.3g}"
              f"{'' if k['max_diff'] <= TOL else '  ABOVE'} ({k['where']})")
    for kind, count in c.get("left_out_by_design", {}).items():
        print(f"  {kind:42s} {count:7,d} left out: identical systems, hierarag None, pingouin F of rounding noise")
    print(f"  questions no system answers: {c['unanswered']:,}")
    for p in c["problems"][:40]:
        print(f"  PROBLEM: {p}")
    if len(c["problems"]) > 40:
        print(f"  … {len(c['problems']) - 40} more problems in the results file")
    if c.get("ci_width_ratio_peer_over_hierarag"):
        lo, med, hi = c["ci_width_ratio_peer_over_hierarag"]
        print(f"  not checked (different random streams): CI width of the category differences, peer/hierarag "
              f"median {med:.3f} (range {lo:.3f}–{hi:.3f})")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hierarag", default=os.path.join(ROOT, "target", "release", "hierarag"))
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    ap.add_argument("--n", type=int, default=10_000, help="questions (default 10,000)")
    ap.add_argument("--systems", type=int, default=4, help="systems compared (default 4)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the generated scores")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--engines", default="hierarag,peer")
    ap.add_argument("--bootstrap", type=int, default=1000,
                    help="bootstrap resamples of both engines (default 1,000, hierarag's default)")
    ap.add_argument("--max-wait-quiet", type=int, default=30,
                    help="wait up to this many seconds before each measurement for other processes to go quiet")
    ap.add_argument("--generate-only", action="store_true")
    ap.add_argument("--report", metavar="RESULTS_JSON", help="only print the table of an earlier run")
    ap.add_argument("--check", nargs=2, metavar=("COMPARISON_JSON", "PEER_JSON"),
                    help="only check a peer output against a comparison.json, and print the differences")
    ap.add_argument("--peer", metavar="RUN_DIR", help="run the peer on RUN_DIR (one timed repetition)")
    ap.add_argument("--peer-out", help="where the peer writes its JSON")
    ap.add_argument("--peer-systems", help="peer only: the systems to compare, in this order [default: the run's]")
    ap.add_argument("--permutations", type=int, default=1000, help="peer only")
    args = ap.parse_args()
    if args.peer:
        return peer(args)
    if args.report:
        with open(args.report) as f:
            return print_report(json.load(f))
    if args.check:
        return print_check(compare(*args.check))
    ensure_packages(PACKAGES, "bench/compare.sh")
    run_dir = os.path.join(args.out, dir_name(args.n, args.systems))
    generated = ensure_run_dir(run_dir, args.n, args.systems, args.seed)
    if args.generate_only:
        return
    if not os.access(args.hierarag, os.X_OK):
        sys.exit(f"{args.hierarag} not found; cargo build --release -p hierarag")

    engines = [e for e in args.engines.split(",") if e]
    work = os.path.join(args.out, "compare-work")
    os.makedirs(work, exist_ok=True)
    results = {"started": datetime.datetime.now().isoformat(timespec="seconds"),
               "machine": machine_info(args.hierarag), "run_dir": os.path.relpath(run_dir, ROOT),
               "generated": generated, "reps": args.reps, "bootstrap": args.bootstrap,
               "loadavg_start": [round(x, 2) for x in os.getloadavg()],
               "timing": "/usr/bin/time -f %M" if os.path.exists("/usr/bin/time") else "wait4 ru_maxrss",
               "runs": {e: [] for e in engines}}
    for module in ("numpy", "scipy", "statsmodels", "pandas", "pingouin", "sklearn"):
        try:
            results["machine"][module] = __import__(module).__version__
        except ImportError:
            pass
    res_path = os.path.join(args.out, "compare-results.json")
    # Warm the page cache and the binaries once, untimed.
    for engine in engines:
        cmd, _ = engine_cmd(engine, args, run_dir, work)
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    outputs = {}
    for rep in range(args.reps):
        for engine in engines:
            cmd, out_file = engine_cmd(engine, args, run_dir, work)
            r = timed_child(cmd, os.path.join(work, f"{engine}-{rep}.log"), args.max_wait_quiet, ROOT)
            r["cmd"] = " ".join(os.path.relpath(c, ROOT) if c.startswith(ROOT) else c for c in cmd)
            results["runs"][engine].append(r)
            log(f"rep {rep + 1}/{args.reps} {engine:8s} {r['wall_s']:7.3f} s  {r['peak_rss_kb'] / 1024:6.0f} MB  "
                f"other cores {r['other_cpu_s'] / max(r['wall_s'], 1e-9):.2f}  rc {r['rc']}")
            if r["rc"] != 0:
                log(f"  failed: {r['output'][-500:]}")
            else:
                outputs[engine] = out_file
            with open(res_path, "w") as f:
                json.dump(results, f, indent=1)
    results["summary"] = summarize(results["runs"])
    if "hierarag" in outputs and "peer" in outputs:
        try:
            results["check"] = compare(outputs["hierarag"], outputs["peer"])
        except Exception as e:  # a broken output should not lose the timings
            results["check"] = {"error": f"{type(e).__name__}: {e}"}
    results["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    results["finished"] = datetime.datetime.now().isoformat(timespec="seconds")
    with open(res_path, "w") as f:
        json.dump(results, f, indent=1)
    print_report(results)
    print(f"\nresults: {os.path.relpath(res_path, os.getcwd())}")


if __name__ == "__main__":
    main()
