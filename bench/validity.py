#!/usr/bin/env python3
"""The statistics of `hierarag_validity::validity()` computed with numpy + scipy, timed, and
checked against the validity.json the Rust side wrote from the same inputs.

    python bench/validity.py DIR [--reps 3]

DIR is what `validity_bench` (crates/hierarag-validity/examples) wrote: inputs.json, validity.json
and timing.json. Run by bench/validity.sh; see docs/benchmarks.md ("Validity").

What is timed (best of --reps, after the inputs are numpy arrays: scores in question order, one
row per system, categories as string arrays):
  - per dimension and level: the category counts of both sides and scipy.stats.chisquare of the
    human counts against the synthetic shares;
  - per property: scipy.stats.mannwhitneyu, median and mean over all questions and per category;
  - per system, level and category: the mean of CS on both sides with a percentile bootstrap
    interval (numpy default_rng; one draw of resampled questions per side, level and category,
    shared by all systems, turned into counts with an offset np.bincount and into every system's
    replicate means with one matrix product), then spearmanr and kendalltau of the category
    means;
  - the systems' means on both sides, scipy.stats.kendalltau of the two orders and its bootstrap
    interval (each side's questions resampled on its own, τ-b of every replicate vectorised in
    numpy), overall and per category;
  - every pair's scipy.stats.ttest_rel on both sides and its decision;
  - the post-stratified prediction of each system's human mean per level.

Then every deterministic value is compared with validity.json (relative 1e-9), and the bootstrap
intervals loosely (independent random streams: each endpoint within 0.1 × the interval's width,
about 3.3 Monte-Carlo standard errors of the difference of two 1,000-resample percentiles).
"""

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

PROPERTIES = ["words", "overlap", "gold_rank", "answer_words", "refusal_expected"]


# ---------------------------------------------------------------------------------------------
# Inputs


class Side:
    def __init__(self, raw, systems):
        self.ids = raw["ids"]
        self.n = len(self.ids)
        self.labels = {
            key: np.array(["" if c is None else c for c in labels])
            for key, labels in raw["categories"].items()
        }
        self.props = {}
        for p in PROPERTIES:
            values = raw[p]
            if p == "refusal_expected":
                self.props[p] = np.array(values, dtype=np.float64)
            else:
                self.props[p] = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
        self.cs = np.array([raw["cs"][s] for s in systems], dtype=np.float64)


def load(directory):
    inputs = json.loads((directory / "inputs.json").read_text())
    systems = inputs["systems"]
    levels = [
        (d["dimension"], level["level"], level["categories"])
        for d in inputs["taxonomy"]
        for level in d["levels"]
    ]
    return {
        "settings": inputs["settings"],
        "systems": systems,
        "levels": levels,
        "synthetic": Side(inputs["synthetic"], systems),
        "human": Side(inputs["human"], systems),
    }


# ---------------------------------------------------------------------------------------------
# The statistics


def bootstrap_means(rng, rows, resamples):
    """(resamples, systems) replicate means of `rows` (systems × n), one draw for all rows."""
    n = rows.shape[1]
    idx = rng.integers(0, n, size=(resamples, n))
    idx += (np.arange(resamples) * n)[:, None]
    counts = np.bincount(idx.ravel(), minlength=resamples * n).reshape(resamples, n)
    return (counts @ rows.T) / n


def tau_b_rows(x, y):
    """Kendall's τ-b of every row of x against the same row of y (NaN where a row is constant)."""
    i, j = np.triu_indices(x.shape[1], 1)
    dx, dy = np.sign(x[:, i] - x[:, j]), np.sign(y[:, i] - y[:, j])
    pairs = len(i)
    tx, ty = (dx == 0).sum(axis=1), (dy == 0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (dx * dy).sum(axis=1) / np.sqrt((pairs - tx) * (pairs - ty))


def interval(replicates, confidence):
    finite = replicates[np.isfinite(replicates)]
    if finite.size == 0:
        return None
    tail = 50.0 * (1.0 - confidence)
    lo, hi = np.percentile(finite, [tail, 100.0 - tail])
    return [float(lo), float(hi)]


def intervals(replicates, confidence):
    """Per column of (resamples, k) replicates without NaN."""
    tail = 50.0 * (1.0 - confidence)
    lo, hi = np.percentile(replicates, [tail, 100.0 - tail], axis=0)
    return [[float(a), float(b)] for a, b in zip(lo, hi)]


def peer(data, timings):
    settings = data["settings"]
    resamples, confidence, alpha = settings["bootstrap"], settings["confidence"], 1.0 - settings["confidence"]
    rng = np.random.default_rng(settings["seed"])
    systems = data["systems"]
    syn, hum = data["synthetic"], data["human"]
    out = {}

    clock = time.perf_counter()
    # Coverage: the levels both sides place a question on.
    levels = [
        (d, l, cats)
        for d, l, cats in data["levels"]
        if (syn.labels[f"{d}/{l}"] != "").any() and (hum.labels[f"{d}/{l}"] != "").any()
    ]
    masks = {}
    for d, l, cats in levels:
        key = f"{d}/{l}"
        for c in cats:
            masks[("s", key, c)] = syn.labels[key] == c
            masks[("h", key, c)] = hum.labels[key] == c
    coverage = []
    for d, l, cats in levels:
        key = f"{d}/{l}"
        s = np.array([masks[("s", key, c)].sum() for c in cats])
        h = np.array([masks[("h", key, c)].sum() for c in cats])
        keep = (s + h) > 0
        designed = s > 0
        observed = h[designed]
        expected = observed.sum() * s[designed] / s.sum()
        row = {
            "dimension": d,
            "level": l,
            "categories": {c: [int(a), int(b)] for c, a, b, k in zip(cats, s, h, keep) if k},
        }
        if designed.sum() >= 2 and observed.sum() > 0:
            fit = stats.chisquare(observed, expected)
            row.update(chi2=float(fit.statistic), p=float(fit.pvalue), dof=int(designed.sum() - 1))
        coverage.append(row)
    out["coverage"] = coverage
    timings["coverage"] += time.perf_counter() - clock

    clock = time.perf_counter()
    properties = []

    def side_by_side(prop, s, h, where):
        if s.size == 0 or h.size == 0:
            return
        test = stats.mannwhitneyu(s, h)
        properties.append(
            dict(
                where,
                property=prop,
                synthetic_n=int(s.size),
                human_n=int(h.size),
                synthetic_median=float(np.median(s)),
                human_median=float(np.median(h)),
                synthetic_mean=float(s.mean()),
                human_mean=float(h.mean()),
                u=float(test.statistic),
                p=float(test.pvalue),
                effect=float(2.0 * test.statistic / (s.size * h.size) - 1.0),
            )
        )

    for prop in PROPERTIES:
        sp, hp = syn.props[prop], hum.props[prop]
        sok, hok = ~np.isnan(sp), ~np.isnan(hp)
        side_by_side(prop, sp[sok], hp[hok], {})
        for d, l, cats in levels:
            key = f"{d}/{l}"
            for c in cats:
                sm, hm = masks[("s", key, c)] & sok, masks[("h", key, c)] & hok
                if masks[("s", key, c)].any():
                    side_by_side(prop, sp[sm], hp[hm], {"dimension": d, "level": l, "category": c})
    out["properties"] = properties
    timings["properties"] += time.perf_counter() - clock

    clock = time.perf_counter()
    # Per-category agreement: one draw per side, level and category, shared by the systems.
    agreement = []
    per_level = {}
    for d, l, cats in levels:
        key = f"{d}/{l}"
        rows = []
        for c in cats:
            sm, hm = masks[("s", key, c)], masks[("h", key, c)]
            if not sm.any() or not hm.any():
                continue
            srows, hrows = syn.cs[:, sm], hum.cs[:, hm]
            sci = intervals(bootstrap_means(rng, srows, resamples), confidence) if srows.shape[1] >= 2 else None
            hci = intervals(bootstrap_means(rng, hrows, resamples), confidence) if hrows.shape[1] >= 2 else None
            rows.append((c, srows.shape[1], hrows.shape[1], srows.mean(axis=1), hrows.mean(axis=1), sci, hci))
        per_level[key] = rows
    for k, system in enumerate(systems):
        for d, l, cats in levels:
            rows = per_level[f"{d}/{l}"]
            if not rows:
                continue
            sm = np.array([r[3][k] for r in rows])
            hm = np.array([r[4][k] for r in rows])
            row = {
                "system": system,
                "dimension": d,
                "level": l,
                "categories": [
                    {
                        "category": c,
                        "synthetic_n": sn,
                        "human_n": hn,
                        "synthetic": {"value": float(smean[k]), "ci": sci[k] if sci else None},
                        "human": {"value": float(hmean[k]), "ci": hci[k] if hci else None},
                    }
                    for c, sn, hn, smean, hmean, sci, hci in rows
                ],
            }
            if len(rows) >= 2:
                rho = stats.spearmanr(sm, hm)
                tau = stats.kendalltau(sm, hm)
                row["spearman"] = {"r": float(rho.statistic), "p": float(rho.pvalue)}
                row["kendall"] = {"r": float(tau.statistic), "p": float(tau.pvalue)}
            agreement.append(row)
    out["agreement"] = agreement
    timings["agreement"] += time.perf_counter() - clock

    clock = time.perf_counter()

    def order(srows, hrows):
        value = stats.kendalltau(srows.mean(axis=1), hrows.mean(axis=1)).statistic
        ci = None
        if resamples > 0:
            replicates = tau_b_rows(
                bootstrap_means(rng, srows, resamples), bootstrap_means(rng, hrows, resamples)
            )
            ci = interval(replicates, confidence)
        return {"value": float(value), "ci": ci}

    decisions = {
        "synthetic_means": syn.cs.mean(axis=1).tolist(),
        "human_means": hum.cs.mean(axis=1).tolist(),
        "tau": order(syn.cs, hum.cs),
        "per_category": [],
    }
    for d, l, cats in levels:
        key = f"{d}/{l}"
        for c in cats:
            sm, hm = masks[("s", key, c)], masks[("h", key, c)]
            if not sm.any() or not hm.any():
                continue
            decisions["per_category"].append(
                {
                    "dimension": d,
                    "level": l,
                    "category": c,
                    "synthetic_n": int(sm.sum()),
                    "human_n": int(hm.sum()),
                    "tau": order(syn.cs[:, sm], hum.cs[:, hm]),
                }
            )
    timings["order"] += time.perf_counter() - clock

    clock = time.perf_counter()

    def decide(a, b):
        difference = float((b - a).mean())
        p = float(stats.ttest_rel(b, a).pvalue)
        if not math.isfinite(p):
            return difference, None, "no_difference"
        if p < alpha and difference != 0.0:
            return difference, p, "better" if difference > 0 else "worse"
        return difference, p, "no_difference"

    pairs = []
    for i in range(len(systems)):
        for j in range(i + 1, len(systems)):
            sd, sp, s = decide(syn.cs[i], syn.cs[j])
            hd, hp, h = decide(hum.cs[i], hum.cs[j])
            if s == h:
                transfer = "holds"
            elif h == "no_difference":
                transfer = "vanishes"
            elif s == "no_difference":
                transfer = "appears"
            else:
                transfer = "flips"
            pairs.append(
                dict(a=systems[i], b=systems[j], synthetic_difference=sd, synthetic_p=sp,
                     human_difference=hd, human_p=hp, synthetic=s, human=h, transfer=transfer)
            )
    decisions["pairs"] = pairs
    decisions["transfer"] = sum(p["transfer"] == "holds" for p in pairs) / len(pairs)
    out["decisions"] = decisions
    timings["pairs"] += time.perf_counter() - clock

    clock = time.perf_counter()
    z = stats.norm.ppf(0.5 + confidence / 2.0)
    predicted = []
    for k, system in enumerate(systems):
        for d, l, cats in levels:
            key = f"{d}/{l}"
            parts, observed, covered, uncovered = [], [], 0, 0
            for c in cats:
                sv, hv = syn.cs[k, masks[("s", key, c)]], hum.cs[k, masks[("h", key, c)]]
                observed.append(hv)
                if sv.size == 0:
                    uncovered += hv.size
                elif hv.size:
                    covered += hv.size
                    parts.append((hv.size, sv))
            if covered == 0:
                continue
            w = np.array([n for n, _ in parts]) / covered
            means = np.array([sv.mean() for _, sv in parts])
            variances = np.array([sv.var(ddof=1) / sv.size if sv.size > 1 else 0.0 for _, sv in parts])
            value = float(w @ means)
            se = float(np.sqrt((w * w) @ variances))
            observed = np.concatenate(observed)
            observed_mean = float(observed.mean())
            observed_se = float(observed.std(ddof=1) / np.sqrt(observed.size))
            predicted.append(
                {
                    "system": system,
                    "dimension": d,
                    "level": l,
                    "predicted": value,
                    "predicted_se": se,
                    "observed": observed_mean,
                    "observed_se": observed_se,
                    "unpredicted_share": uncovered / observed.size,
                    "within": bool(abs(observed_mean - value) <= z * math.sqrt(se * se + observed_se**2)),
                }
            )
    out["predicted"] = predicted
    out["z"] = float(z)
    timings["predicted"] += time.perf_counter() - clock
    return out


# ---------------------------------------------------------------------------------------------
# The check against validity.json


class Check:
    def __init__(self, rtol):
        self.rtol = rtol
        self.kinds = {}  # kind → [compared, agree, max relative difference]
        self.failures = []
        self.loose = {}  # kind → [compared, agree, max |Δ| / width]

    def value(self, kind, where, ours, theirs, atol=1e-15):
        entry = self.kinds.setdefault(kind, [0, 0, 0.0])
        entry[0] += 1
        ok, rel = self._close(ours, theirs, atol)
        entry[2] = max(entry[2], rel)
        if ok:
            entry[1] += 1
        else:
            self.failures.append(f"{kind} {where}: validity.json {ours!r}, numpy+scipy {theirs!r}")

    def _close(self, a, b, atol):
        if a is None or b is None:
            return a is None and b is None, 0.0
        if isinstance(a, (bool, str)) or isinstance(b, (bool, str)):
            return a == b, 0.0
        a, b = float(a), float(b)
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b), 0.0
        if a == b:
            return True, 0.0
        scale = max(abs(a), abs(b))
        rel = abs(a - b) / scale
        # p-values that underflow: below 1e-300 both are zero for any purpose.
        return abs(a - b) <= self.rtol * scale or abs(a - b) <= atol or scale < 1e-300, rel

    def interval(self, kind, where, ours, theirs, step=0.0):
        """Loose: each endpoint within 0.1 × numpy's width (+ `step`, the grid of a discrete
        statistic, counted apart)."""
        entry = self.loose.setdefault(kind, [0, 0, 0.0, 0])
        entry[0] += 1
        if ours is None or theirs is None:
            if ours is None and theirs is None:
                entry[1] += 1
            else:
                self.failures.append(f"{kind} {where}: interval {ours} vs {theirs}")
            return
        width = theirs[1] - theirs[0]
        delta = max(abs(ours[0] - theirs[0]), abs(ours[1] - theirs[1]))
        if delta <= 0.1 * width + 1e-12:
            entry[1] += 1
        elif step and delta <= step + 0.1 * width + 1e-12:
            entry[3] += 1
        if width > 0:
            entry[2] = max(entry[2], delta / width)

    def report(self):
        print("deterministic values (validity.json vs numpy + scipy, relative 1e-9):")
        total = agree = 0
        for kind, (n, ok, rel) in self.kinds.items():
            total, agree = total + n, agree + ok
            print(f"  {kind:<34} {ok:>5} / {n:<5} agree   max relative difference {rel:.1e}")
        print(f"  {'all':<34} {agree:>5} / {total:<5} agree")
        print("bootstrap intervals (independent random streams; |Δ endpoint| ≤ 0.1 × width):")
        for kind, (n, ok, worst, step) in self.loose.items():
            extra = f", {step} more within one step of τ" if step else ""
            print(f"  {kind:<34} {ok:>5} / {n:<5} agree{extra}   max |Δ| / width {worst:.2f}")
        for failure in self.failures[:40]:
            print("  MISMATCH", failure)
        if len(self.failures) > 40:
            print(f"  ... {len(self.failures) - 40} more")
        return agree, total


def check(validity, ours, n_systems):
    c = Check(1e-9)
    theirs = {(r["dimension"], r["level"]): r for r in ours["coverage"]}
    for row in validity["coverage"]:
        where = f"{row['dimension']}/{row['level']}"
        t = theirs.pop((row["dimension"], row["level"]), None)
        if t is None:
            c.failures.append(f"coverage {where}: not computed by numpy + scipy")
            continue
        counts = {x["category"]: [x["synthetic"], x["human"]] for x in row["categories"]}
        c.value("coverage counts", where, json.dumps(counts, sort_keys=True), json.dumps(t["categories"], sort_keys=True))
        c.value("chisquare statistic", where, row.get("chi2"), t.get("chi2"))
        c.value("chisquare p", where, row.get("p"), t.get("p"), atol=0)
        c.value("chisquare dof", where, row.get("dof"), t.get("dof"))
    for key in theirs:
        c.failures.append(f"coverage {key}: missing from validity.json")

    def pkey(r):
        return (r["property"], r.get("dimension"), r.get("level"), r.get("category"))

    theirs = {pkey(r): r for r in ours["properties"]}
    for row in validity["properties"]:
        where = "/".join(str(x) for x in pkey(row) if x is not None)
        t = theirs.pop(pkey(row), None)
        if t is None:
            c.failures.append(f"property {where}: not computed by numpy + scipy")
            continue
        for field in ["synthetic_n", "human_n"]:
            c.value("property n", where, row[field], t[field])
        for field in ["synthetic_median", "human_median", "synthetic_mean", "human_mean"]:
            c.value("property median / mean", where, row[field], t[field])
        c.value("mannwhitneyu U", where, row["u"], t["u"])
        c.value("mannwhitneyu p", where, row["p"], t["p"], atol=0)
        c.value("rank-biserial effect", where, row["effect"], t["effect"])
    for key in theirs:
        c.failures.append(f"property {key}: missing from validity.json")

    theirs = {(r["system"], r["dimension"], r["level"]): r for r in ours["agreement"]}
    for row in validity["agreement"]:
        key = (row["system"], row["dimension"], row["level"])
        where = "/".join(key)
        t = theirs.pop(key, None)
        if t is None:
            c.failures.append(f"agreement {where}: not computed by numpy + scipy")
            continue
        c.value("category count", where, len(row["categories"]), len(t["categories"]))
        for x, y in zip(row["categories"], t["categories"]):
            w = f"{where}/{x['category']}"
            c.value("category name", w, x["category"], y["category"])
            c.value("category n", w, x["synthetic_n"], y["synthetic_n"])
            c.value("category n", w, x["human_n"], y["human_n"])
            for side in ["synthetic", "human"]:
                c.value("category mean", w, x[side]["value"], y[side]["value"])
                c.interval("category mean interval", f"{w}/{side}", x[side].get("ci"), y[side]["ci"])
        for name in ["spearman", "kendall"]:
            r, s = row.get(name), t.get(name)
            if r is None and s is not None and len(t["categories"]) < 3 and name == "spearman":
                # scipy gives ρ = ±1 with p NaN for two points; hierarag leaves it out.
                c.value(f"{name} (n = 2: left out / p NaN)", where, None, None if math.isnan(s["p"]) else s)
                continue
            c.value(f"{name} r", where, r and r["r"], s and s["r"])
            c.value(f"{name} p", where, r and r["p"], s and s["p"], atol=0)
    for key in theirs:
        c.failures.append(f"agreement {key}: missing from validity.json")

    d, t = validity.get("decisions"), ours["decisions"]
    step = 1.0 / (n_systems * (n_systems - 1) / 2)
    if d is None:
        c.failures.append("decisions: missing from validity.json")
    else:
        for side in ["synthetic_means", "human_means"]:
            for k, (x, y) in enumerate(zip(d[side], t[side])):
                c.value("system mean", f"{side}/{k}", x, y)
        c.value("kendall tau-b of the orders", "all", d["tau"]["value"], t["tau"]["value"])
        c.interval("tau interval", "all", d["tau"].get("ci"), t["tau"]["ci"], step)
        theirs = {(r["dimension"], r["level"], r["category"]): r for r in t["per_category"]}
        for row in d["per_category"]:
            key = (row["dimension"], row["level"], row["category"])
            where = "/".join(key)
            s = theirs.pop(key, None)
            if s is None:
                c.failures.append(f"order {where}: not computed by numpy + scipy")
                continue
            c.value("category n", where, row["synthetic_n"], s["synthetic_n"])
            c.value("category n", where, row["human_n"], s["human_n"])
            c.value("kendall tau-b of the orders", where, row["tau"]["value"], s["tau"]["value"])
            c.interval("tau interval", where, row["tau"].get("ci"), s["tau"]["ci"], step)
        for key in theirs:
            c.failures.append(f"order {key}: missing from validity.json")
        for x, y in zip(d["pairs"], t["pairs"]):
            where = f"{x['a']}-{x['b']}"
            c.value("pair names", where, f"{x['a']}-{x['b']}", f"{y['a']}-{y['b']}")
            for side in ["synthetic", "human"]:
                c.value("pair difference", f"{where}/{side}", x[f"{side}_difference"], y[f"{side}_difference"])
                c.value("ttest_rel p", f"{where}/{side}", x.get(f"{side}_p"), y[f"{side}_p"], atol=0)
                c.value("pair decision", f"{where}/{side}", x[side], y[side])
            c.value("pair transfer", where, x["transfer"], y["transfer"])
        c.value("share of decisions that transfer", "all", d.get("transfer"), t["transfer"])

    z = ours["z"]
    theirs = {(r["system"], r["dimension"], r["level"]): r for r in ours["predicted"]}
    for row in validity["predicted"]:
        key = (row["system"], row["dimension"], row["level"])
        where = "/".join(key)
        s = theirs.pop(key, None)
        if s is None:
            c.failures.append(f"prediction {where}: not computed by numpy + scipy")
            continue
        c.value("predicted mean", where, row["predicted"]["value"], s["predicted"])
        lo, hi = row["predicted"]["ci"]
        c.value("predicted standard error", where, (hi - lo) / (2 * z), s["predicted_se"])
        c.value("observed mean", where, row["observed"]["value"], s["observed"])
        lo, hi = row["observed"]["ci"]
        c.value("observed standard error", where, (hi - lo) / (2 * z), s["observed_se"])
        c.value("unpredicted share", where, row["unpredicted_share"], s["unpredicted_share"])
        c.value("within", where, row["within"], s["within"])
    for key in theirs:
        c.failures.append(f"prediction {key}: missing from validity.json")
    return c


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path, help="what validity_bench wrote (--out DIR)")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    data = load(args.dir)
    runs, result, phases = [], None, None
    for _ in range(max(1, args.reps)):
        timings = dict.fromkeys(["coverage", "properties", "agreement", "order", "pairs", "predicted"], 0.0)
        started = time.perf_counter()
        result = peer(data, timings)
        runs.append(time.perf_counter() - started)
        if phases is None or runs[-1] == min(runs):
            phases = timings
    best = min(runs)
    print(
        f"numpy + scipy: best of {len(runs)} {best:.3f} s (runs {', '.join(f'{r:.3f}' for r in runs)}); "
        + ", ".join(f"{k} {v:.3f}" for k, v in phases.items())
        + f" (numpy {np.__version__}, scipy {__import__('scipy').__version__})"
    )

    # The vectorised τ-b of the bootstrap against scipy's kendalltau, on random orders.
    probe = np.random.default_rng(0)
    x, y = probe.integers(0, 3, (200, 4)).astype(float), probe.normal(size=(200, 4))
    mine = tau_b_rows(x, y)
    for a, b, m in zip(x, y, mine):
        assert (math.isnan(m) and len(set(a)) == 1) or abs(m - stats.kendalltau(a, b).statistic) < 1e-12

    validity = json.loads((args.dir / "validity.json").read_text())
    c = check(validity, result, len(data["systems"]))
    agree, total = c.report()
    timing = json.loads((args.dir / "timing.json").read_text())
    ours = timing["validity_s"]
    print(
        f"[validity-bench] {timing['synthetic_questions']:,} synthetic + {timing['human_questions']:,} human "
        f"questions × {timing['systems']} systems, {timing['bootstrap']:,} resamples: "
        f"hierarag {ours:.3f} s, numpy + scipy {best:.3f} s, ratio {best / ours:.2f}× "
        f"(numpy+scipy ÷ hierarag), hierarag under 15 s: {'yes' if ours < 15 else 'NO'}; "
        f"{agree} / {total} deterministic values agree"
    )
    return 0 if not c.failures else 1


if __name__ == "__main__":
    sys.exit(main())
