#!/usr/bin/env python3
"""The numpy / scikit-learn / statsmodels / scipy oracle for hierarag-stats (docs/design.md, "Analysis").

Usage:
    .venv-oracles/bin/pip install -r scripts/oracles/requirements.txt
    .venv-oracles/bin/python scripts/oracles/stats_oracle.py [OUT_DIR]

OUT_DIR defaults to crates/hierarag-stats/tests/data. The script writes `stats_cases.json` there:
inputs built deterministically (`numpy.random.default_rng(20260412)`) and, for each, the values
the reference packages compute. One case per line, grouped by function:

- `describe`: `numpy.mean`, `numpy.std(ddof=0)` and `numpy.std(ddof=1)`, `numpy.ptp` of small and
  large samples, constants, a large common offset;
- `nmi`: `sklearn.metrics.normalized_mutual_info_score` (arithmetic), `mutual_info_score` and
  `sklearn.metrics.cluster.entropy` of two labellings: single cluster, all unique, one-vs-many,
  relabelled copies, independent designs, random labellings of 5 to 2,000 items, and CS-like
  scores of 2/4/8 categories binned into equal-frequency bins. The binning rule (bin of x =
  floor(n_bins * r / n), r = number of values strictly less than x) is implemented here in
  numpy (`searchsorted`), so the test checks our binning too;
- `anova`: statsmodels `anova_lm(ols("y ~ C(a, Sum) * C(b, Sum)", data).fit(), typ=3)` for 2x2
  (balanced, unbalanced, tiny p), 3x2, 4x2, 2x4, 3x3 layouts, non-contiguous labels, and the
  paper's Table 4 cell sizes (n 252/265/265/218) with CS-like values;
- `fleiss`: `statsmodels.stats.inter_rater.aggregate_raters(ratings, n_cat)` and
  `fleiss_kappa(table, method="fleiss")` for 2-5 raters and 3-4 categories (null where
  statsmodels gives NaN);
- `cohen`: `sklearn.metrics.cohen_kappa_score` (null where it is undefined);
- `point_biserial`: `scipy.stats.pointbiserialr`;
- `binomial`: `scipy.stats.binomtest(k, n, p, alternative="greater").pvalue`, including the
  paper-like 17 and 18 of 60 against 1/8 and 2/8;
- `percentile`: `numpy.percentile(values, q)`; `interval`: `numpy.percentile` of the finite
  replicates at 50(1 - level) and 50(1 + level) (NaN replicates are written as null);
- `permutation`: (1 + sum(null >= observed)) / (1 + len(null)) in numpy;
- `holm`: statsmodels `multipletests(p, method="holm")[1]` of 1 to 40 p-values (ties, values
  near 1, tiny ones), and `bootstrap_p`: min(1, 2 * mean(finite <= null)) in numpy. These draw
  from their own generator (`default_rng(SEED + 1)`) so that adding them left the earlier cases'
  bytes as they were.

`crates/hierarag-stats/tests/oracle.rs` reads the file (no Python at test time) and requires our
values to equal these. Rerun this script after changing the cases or the pinned package versions
(scripts/oracles/requirements.txt: numpy, scipy, scikit-learn, statsmodels, pandas) and commit
the file; the same versions always write the same bytes.
"""

import json
import math
import sys
import warnings
from decimal import Decimal
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pandas as pd
import scipy
import scipy.stats
import sklearn
import statsmodels
import statsmodels.api as sm
from sklearn.metrics import cohen_kappa_score, mutual_info_score, normalized_mutual_info_score
from sklearn.metrics.cluster import entropy as sklearn_entropy
from statsmodels.formula.api import ols
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa
from statsmodels.stats.multitest import multipletests

DEFAULT_OUT_DIR = Path(__file__).resolve().parents[2] / "crates/hierarag-stats/tests/data"
SEED = 20260412
# The paper's Table 4: (lexical variation, question complexity) -> (mean CS, n).
TABLE4 = {("similar", "simple"): (0.637, 252), ("similar", "complex"): (0.672, 265),
          ("distant", "simple"): (0.578, 265), ("distant", "complex"): (0.578, 218)}


def floats(values):
    """Plain Python floats, NaN as None (JSON has no NaN)."""
    return [None if np.isnan(v) else float(v) for v in np.asarray(values, dtype=float)]


def ints(values):
    return [int(v) for v in values]


def nan_to_none(value):
    value = float(value)
    return None if np.isnan(value) else value


def equal_frequency_bins(values, n_bins):
    """bin of x = floor(n_bins * r / n), r = #values strictly less than x."""
    values = np.asarray(values, dtype=float)
    ranks = np.searchsorted(np.sort(values), values, side="left")
    return (n_bins * ranks) // len(values)


def cs_like(rng, n, mean, spread=8.0, decimals=3):
    """Context-score-like values in [0, 1]: Beta with the given mean, rounded so that ties occur."""
    return np.round(rng.beta(mean * spread, (1 - mean) * spread, size=n), decimals)


# ------------------------------------------------------------------------------------------------

def describe_cases(rng):
    samples = [
        ("one", np.array([0.42])),
        ("two", np.array([0.25, 0.75])),
        ("hand", np.array([1.0, 2.0, 3.0, 4.0])),
        ("constant", np.full(7, 0.6)),
        ("normal_10", rng.normal(0.5, 0.1, 10)),
        ("normal_100", rng.normal(-3.0, 2.0, 100)),
        ("uniform_1000", rng.uniform(0, 1, 1000)),
        # 15 significant digits, which serde_json parses exactly (17 can be an ulp off, 1e-10
        # here, and the test would measure the parser instead of the two-pass variance).
        ("offset_1e6", np.round(1e6 + rng.normal(0, 1e-3, 50), 8)),
        ("cs_like_8", cs_like(rng, 8, 0.6)),
        ("category_means", np.array([0.637, 0.672, 0.578, 0.578])),
        ("integers", rng.integers(-5, 6, 31).astype(float)),
        ("tiny", rng.normal(0, 1e-12, 20)),
    ]
    cases = []
    for case_id, values in samples:
        cases.append({
            "id": case_id, "values": floats(values),
            "mean": float(np.mean(values)),
            "std_ddof0": float(np.std(values, ddof=0)),
            "std_ddof1": float(np.std(values, ddof=1)) if len(values) > 1 else None,
            "range": float(np.ptp(values)),
        })
    return cases


def nmi_case(case_id, a, b, values=None, n_bins=None):
    a, b = ints(a), ints(b)
    with warnings.catch_warnings():
        # sklearn.metrics.cluster.entropy is deprecated in 1.8 (removed in 1.10): still the
        # reference for our entropy while the pinned version has it.
        warnings.simplefilter("ignore", FutureWarning)
        entropy_a = float(sklearn_entropy(np.array(a)))
        entropy_b = float(sklearn_entropy(np.array(b)))
    case = {
        "id": case_id, "a": a, "b": b,
        "nmi": float(normalized_mutual_info_score(a, b, average_method="arithmetic")),
        "mi": float(mutual_info_score(a, b)),
        "entropy_a": entropy_a, "entropy_b": entropy_b,
    }
    if values is not None:
        case["values"] = floats(values)
        case["n_bins"] = n_bins
    return case


def nmi_cases(rng):
    cases = [
        nmi_case("single_cluster_both", [0] * 10, [3] * 10),
        nmi_case("single_cluster_a", [1] * 12, rng.integers(0, 4, 12)),
        nmi_case("single_cluster_b", rng.integers(0, 4, 12), [0] * 12),
        nmi_case("all_unique_both", np.arange(20), rng.permutation(20)),
        nmi_case("all_unique_a", np.arange(30), rng.integers(0, 3, 30)),
        nmi_case("one_vs_many", [0] + [1] * 39, rng.integers(0, 5, 40)),
        nmi_case("one_vs_many_matched", [0] + [1] * 39, [0] + [1] * 39),
        nmi_case("identical", (x := rng.integers(0, 6, 50)), x),
        nmi_case("relabelled", (x := rng.integers(0, 4, 60)), (x * 7 + 3) % 11),
        nmi_case("independent_design", [0, 0, 1, 1] * 10, [0, 1, 0, 1] * 10),
        nmi_case("two_items", [0, 1], [1, 1]),
        nmi_case("two_items_split", [0, 1], [5, 2]),
        nmi_case("non_contiguous", rng.choice([3, 7, 100], 40), rng.choice([0, 9], 40)),
    ]
    for n, k_a, k_b in [(5, 2, 2), (10, 3, 2), (50, 2, 5), (100, 4, 5), (100, 8, 5),
                        (500, 8, 5), (1000, 2, 10), (2000, 4, 3)]:
        cases.append(nmi_case(f"random_n{n}_{k_a}x{k_b}", rng.integers(0, k_a, n),
                              rng.integers(0, k_b, n)))
    # Noisy copies: b agrees with a with probability 0.7.
    for n, k in [(40, 3), (300, 8)]:
        a = rng.integers(0, k, n)
        b = np.where(rng.random(n) < 0.7, a, rng.integers(0, k, n))
        cases.append(nmi_case(f"noisy_copy_n{n}_k{k}", a, b))
    # CS-like scores: categories shift the mean; the score is binned into equal-frequency bins.
    for n_categories, per_category, effect, n_bins, decimals in [
            (2, 60, 0.05, 5, 3), (4, 40, 0.04, 5, 3), (8, 30, 0.03, 5, 3), (8, 30, 0.0, 5, 3),
            (4, 100, 0.08, 5, 2), (2, 252, 0.06, 5, 3), (8, 25, 0.05, 3, 3), (4, 50, 0.05, 10, 4),
            (4, 33, 0.05, 5, 1), (3, 7, 0.1, 5, 3)]:
        labels = np.repeat(np.arange(n_categories), per_category)
        values = np.concatenate([
            cs_like(rng, per_category, 0.55 + effect * (c - n_categories / 2), decimals=decimals)
            for c in range(n_categories)])
        order = rng.permutation(len(labels))
        labels, values = labels[order], values[order]
        case_id = f"cs_{n_categories}cat_{per_category}each_e{effect}_b{n_bins}_d{decimals}"
        cases.append(nmi_case(case_id, labels, equal_frequency_bins(values, n_bins), values,
                              n_bins))
    # Binning edge cases: all tied, fewer values than bins, integer scores.
    for case_id, labels, values, n_bins in [
            ("bins_all_tied", rng.integers(0, 3, 20), np.full(20, 0.5), 5),
            ("bins_fewer_values", np.array([0, 1, 1]), np.array([0.3, 0.1, 0.2]), 5),
            ("bins_integer_scores", rng.integers(0, 4, 80),
             rng.integers(0, 4, 80).astype(float), 5),
            ("bins_unit_fraction", rng.integers(0, 2, 23), rng.random(23), 4)]:
        cases.append(nmi_case(case_id, labels, equal_frequency_bins(values, n_bins), values,
                              n_bins))
    return cases


def anova_case(case_id, y, a, b):
    data = pd.DataFrame({"y": np.asarray(y, dtype=float), "a": ints(a), "b": ints(b)})
    table = sm.stats.anova_lm(ols("y ~ C(a, Sum) * C(b, Sum)", data).fit(), typ=3)

    def term(row):
        return {"sum_sq": float(table.loc[row, "sum_sq"]), "df": float(table.loc[row, "df"]),
                "f": float(table.loc[row, "F"]), "p": float(table.loc[row, "PR(>F)"])}

    return {"id": case_id, "y": floats(y), "a": ints(a), "b": ints(b),
            "a_term": term("C(a, Sum)"), "b_term": term("C(b, Sum)"),
            "interaction": term("C(a, Sum):C(b, Sum)"),
            "residual_sum_sq": float(table.loc["Residual", "sum_sq"]),
            "residual_df": float(table.loc["Residual", "df"])}


def layout(rng, cell_sizes, cell_means, sd=0.1, cs=False, a_labels=None, b_labels=None):
    """Observations for cell_sizes[i][j], shuffled so that cells interleave."""
    y, a, b = [], [], []
    for i, row in enumerate(cell_sizes):
        for j, n in enumerate(row):
            mean = cell_means[i][j]
            y.append(cs_like(rng, n, mean) if cs else rng.normal(mean, sd, n))
            a += [a_labels[i] if a_labels else i] * n
            b += [b_labels[j] if b_labels else j] * n
    y = np.concatenate(y)
    order = rng.permutation(len(y))
    return y[order], np.array(a)[order], np.array(b)[order]


def anova_cases(rng):
    table4_sizes = [[TABLE4[("similar", "simple")][1], TABLE4[("similar", "complex")][1]],
                    [TABLE4[("distant", "simple")][1], TABLE4[("distant", "complex")][1]]]
    table4_means = [[TABLE4[("similar", "simple")][0], TABLE4[("similar", "complex")][0]],
                    [TABLE4[("distant", "simple")][0], TABLE4[("distant", "complex")][0]]]
    specs = [
        ("2x2_balanced", [[10, 10], [10, 10]], [[0.5, 0.6], [0.55, 0.5]], {}),
        ("2x2_unbalanced", [[5, 8], [12, 3]], [[0.5, 0.6], [0.55, 0.5]], {}),
        ("2x2_unbalanced_null", [[7, 9], [11, 6]], [[0.5, 0.5], [0.5, 0.5]], {}),
        ("2x2_tiny_p", [[40, 35], [30, 45]], [[0.2, 0.8], [0.8, 0.2]], {"sd": 0.05}),
        ("2x2_two_per_cell", [[2, 2], [2, 2]], [[1.0, 2.0], [3.0, 5.0]], {"sd": 1.0}),
        ("2x2_singleton_cell", [[1, 6], [4, 9]], [[0.3, 0.4], [0.5, 0.7]], {}),
        ("3x2_unbalanced", [[6, 9], [11, 4], [7, 8]], [[0.5, 0.6], [0.55, 0.5], [0.7, 0.65]], {}),
        ("4x2_unbalanced", [[6, 9], [11, 4], [7, 8], [5, 13]],
         [[0.5, 0.6], [0.55, 0.5], [0.7, 0.65], [0.6, 0.6]], {}),
        ("2x4_unbalanced", [[6, 9, 11, 4], [7, 8, 5, 13]],
         [[0.5, 0.6, 0.55, 0.5], [0.7, 0.65, 0.6, 0.6]], {}),
        ("3x3_unbalanced", [[6, 9, 4], [11, 4, 7], [7, 8, 12]],
         [[0.5, 0.6, 0.5], [0.55, 0.5, 0.6], [0.7, 0.65, 0.6]], {}),
        ("2x3_non_contiguous_labels", [[5, 7, 6], [8, 4, 9]],
         [[0.4, 0.5, 0.45], [0.6, 0.5, 0.55]], {"a_labels": [3, 7], "b_labels": [1, 5, 9]}),
        ("table4_cs_like", table4_sizes, table4_means, {"cs": True}),
        ("table4_normal", table4_sizes, table4_means, {"sd": 0.2}),
    ]
    return [anova_case(case_id, *layout(rng, sizes, means, **kwargs))
            for case_id, sizes, means, kwargs in specs]


def fleiss_cases(rng):
    cases = []

    def add(case_id, ratings, n_categories):
        ratings = np.asarray(ratings, dtype=int)
        table, _ = aggregate_raters(ratings, n_cat=n_categories)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # 0/0 when all in one category
            kappa = fleiss_kappa(table, method="fleiss")
        cases.append({"id": case_id, "ratings": [ints(r) for r in ratings],
                      "n_categories": n_categories, "table": [ints(r) for r in table],
                      "kappa": nan_to_none(kappa)})

    for n_subjects, n_raters, n_categories, accuracy in [
            (10, 2, 3, 0.7), (30, 3, 3, 0.6), (50, 3, 4, 0.8), (20, 4, 3, 0.5), (60, 5, 4, 0.7),
            (100, 3, 3, 0.0), (15, 5, 3, 0.9), (200, 2, 4, 0.75), (40, 4, 4, 0.3)]:
        truth = rng.integers(0, n_categories, n_subjects)
        ratings = np.where(rng.random((n_subjects, n_raters)) < accuracy, truth[:, None],
                           rng.integers(0, n_categories, (n_subjects, n_raters)))
        add(f"s{n_subjects}_r{n_raters}_c{n_categories}_acc{accuracy}", ratings, n_categories)
    truth = rng.integers(0, 3, 25)
    add("perfect_agreement", np.repeat(truth[:, None], 3, axis=1), 3)
    add("unused_category", rng.integers(0, 3, (20, 3)), 4)
    add("all_one_category", np.zeros((10, 3), dtype=int), 3)
    add("worst_disagreement", np.array([[0, 1], [1, 0]] * 5), 3)
    return cases


def cohen_cases(rng):
    cases = []

    def add(case_id, a, b):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # UndefinedMetricWarning when kappa is undefined
            kappa = cohen_kappa_score(ints(a), ints(b))
        cases.append({"id": case_id, "a": ints(a), "b": ints(b), "kappa": nan_to_none(kappa)})

    x = rng.integers(0, 8, 60)
    add("perfect_8", x, x)
    for n, k, accuracy in [(10, 2, 0.5), (60, 8, 0.4), (100, 3, 0.8), (500, 5, 0.6),
                           (30, 4, 0.0), (200, 8, 0.9)]:
        a = rng.integers(0, k, n)
        b = np.where(rng.random(n) < accuracy, a, rng.integers(0, k, n))
        add(f"n{n}_k{k}_acc{accuracy}", a, b)
    add("complete_disagreement", [0, 1] * 10, [1, 0] * 10)
    add("disjoint_labels", [0, 0, 1, 1], [2, 3, 2, 3])
    add("label_missing_in_b", rng.integers(0, 4, 40), rng.integers(0, 3, 40))
    add("non_contiguous", rng.choice([2, 11, 40], 30), rng.choice([2, 11, 40], 30))
    add("both_constant_same", [4] * 8, [4] * 8)
    add("one_constant", [1] * 12, rng.integers(0, 3, 12))
    return cases


def point_biserial_cases(rng):
    cases = []
    for case_id, n, share, effect, sd in [
            ("n3", 3, 0.5, 0.5, 1.0), ("n4", 4, 0.5, 1.0, 1.0), ("n10", 10, 0.5, 0.3, 0.5),
            ("n30_null", 30, 0.4, 0.0, 1.0), ("n100", 100, 0.5, 0.2, 0.5),
            ("n100_negative", 100, 0.3, -0.3, 0.5), ("n1000_small", 1000, 0.5, 0.05, 1.0),
            ("n200_tiny_p", 200, 0.5, 2.0, 0.5), ("n50_one_true", 50, 0.0, 1.0, 1.0),
            ("n60_cs_like", 60, 0.3, 0.1, 0.15), ("n24_coherence", 24, 0.5, 0.8, 1.2)]:
        x = rng.random(n) < share
        if not x.any():
            x[rng.integers(0, n)] = True
        if x.all():
            x[0] = False
        y = rng.normal(0, sd, n) + effect * x
        result = scipy.stats.pointbiserialr(x, y)
        cases.append({"id": case_id, "x": [bool(v) for v in x], "y": floats(y),
                      "r": float(result.statistic), "p": float(result.pvalue)})
    return cases


def binomial_cases():
    cases = []
    for k, n, p in [(17, 60, 0.125), (18, 60, 0.125), (17, 60, 0.25), (18, 60, 0.25),
                    (0, 60, 0.125), (60, 60, 0.125), (1, 60, 0.125), (7, 60, 0.125),
                    (8, 60, 0.125), (30, 60, 0.5), (200, 1000, 0.125), (500, 1000, 0.125),
                    (3, 10, 0.0), (0, 10, 0.0), (4, 10, 1.0), (5, 5, 0.5), (1, 1, 0.3)]:
        pvalue = scipy.stats.binomtest(k, n, p, alternative="greater").pvalue
        cases.append({"k": k, "n": n, "p": p, "pvalue": float(pvalue)})
    return cases


def percentile_cases(rng):
    cases = []
    samples = [("one", np.array([0.3])), ("two", np.array([0.1, 0.9])),
               ("hand", np.array([4.0, 1.0, 3.0, 2.0])), ("ties", np.array([0.5] * 5 + [0.7] * 3)),
               ("normal_37", rng.normal(0, 1, 37)), ("uniform_1000", rng.uniform(0, 1, 1000)),
               ("bootstrap_like", rng.normal(0.6, 0.02, 1000))]
    for case_id, values in samples:
        for q in [0.0, 2.5, 25.0, 33.3, 50.0, 97.5, 100.0]:
            cases.append({"id": f"{case_id}_q{q}", "values": floats(values), "q": q,
                          "expected": float(np.percentile(values, q))})
    return cases


def interval_cases(rng):
    cases = []
    for case_id, samples, level in [
            ("n1000_95", rng.normal(0.6, 0.02, 1000), 0.95),
            ("n1000_90", rng.normal(0.6, 0.02, 1000), 0.90),
            ("n1000_50", rng.normal(0.6, 0.02, 1000), 0.50),
            ("n200_99", rng.exponential(1.0, 200), 0.99),
            ("n7_95", rng.normal(0, 1, 7), 0.95),
            ("n1_95", np.array([0.4]), 0.95),
            ("level_0", rng.normal(0, 1, 11), 0.0),
            ("level_1", rng.normal(0, 1, 11), 1.0),
            ("with_nan", np.where(rng.random(500) < 0.05, np.nan, rng.normal(2.0, 0.5, 500)), 0.95),
            ("ratio_like", rng.lognormal(0, 0.5, 1000), 0.95)]:
        finite = samples[np.isfinite(samples)]
        # The literal [2.5, 97.5] for 95% (what callers write); otherwise the general tails.
        tail = 2.5 if level == 0.95 else 50 * (1 - level)
        lo, hi = np.percentile(finite, [tail, 100 - tail])
        cases.append({"id": case_id, "samples": floats(samples), "level": level,
                      "lo": float(lo), "hi": float(hi),
                      "n_ignored": int(len(samples) - len(finite))})
    return cases


def permutation_cases(rng):
    cases = []
    for case_id, observed, null in [
            ("extreme", 5.0, rng.normal(0, 1, 999)),
            ("typical", 0.1, rng.normal(0, 1, 999)),
            ("below_all", -10.0, rng.normal(0, 1, 99)),
            ("ties", 0.5, np.array([0.5, 0.4, 0.6, 0.5, 0.1])),
            ("empty", 1.0, np.array([]))]:
        p = (1 + np.sum(null >= observed)) / (1 + len(null))
        cases.append({"id": case_id, "observed": observed, "null": floats(null), "p": float(p)})
    return cases


def holm_cases(rng):
    cases = []
    for case_id, p in [
            ("one", np.array([0.03])),
            ("by_hand", np.array([0.03, 0.01, 0.5, 0.02])),
            ("ties", np.array([0.01, 0.01, 0.04, 0.04, 0.2])),
            ("near_one", np.array([0.6, 0.9, 0.99, 1.0])),
            ("tiny", np.array([1e-12, 3e-8, 0.002, 0.049, 0.051])),
            ("uniform_6", rng.uniform(0, 1, 6)),
            ("mixed_40", np.concatenate([rng.uniform(0, 0.01, 10), rng.uniform(0, 1, 30)]))]:
        adjusted = multipletests(p, alpha=0.05, method="holm")[1]
        cases.append({"id": case_id, "p": floats(p), "adjusted": floats(adjusted)})
    return cases


def bootstrap_p_cases(rng):
    cases = []
    for case_id, replicates, null in [
            ("ratio_above_one", rng.normal(1.6, 0.3, 1000), 1.0),
            ("ratio_around_one", rng.normal(1.05, 0.2, 1000), 1.0),
            ("all_below", rng.normal(-3, 0.1, 200), 0.0),
            ("ties_at_null", np.array([0.0, 0.0, 0.1, 0.2, 0.3, np.nan, np.inf]), 0.0)]:
        finite = replicates[np.isfinite(replicates)]
        p = min(1.0, 2 * np.mean(finite <= null))
        cases.append({"id": case_id, "replicates": floats(np.where(np.isinf(replicates),
                                                                     np.nan, replicates)),
                      "null": null, "p": float(p)})
    return cases


def build():
    rng = np.random.default_rng(SEED)
    return {
        "generator": "scripts/oracles/stats_oracle.py",
        "packages": {
            "python": sys.version.split()[0], "numpy": np.__version__, "scipy": scipy.__version__,
            "scikit-learn": sklearn.__version__, "statsmodels": statsmodels.__version__,
            "pandas": pd.__version__, "patsy": version("patsy"),
        },
        "seed": SEED,
        "describe": describe_cases(rng),
        "nmi": nmi_cases(rng),
        "anova": anova_cases(rng),
        "fleiss": fleiss_cases(rng),
        "cohen": cohen_cases(rng),
        "point_biserial": point_biserial_cases(rng),
        "binomial": binomial_cases(),
        "percentile": percentile_cases(rng),
        "interval": interval_cases(rng),
        "permutation": permutation_cases(rng),
        "holm": holm_cases(np.random.default_rng(SEED + 1)),
        "bootstrap_p": bootstrap_p_cases(np.random.default_rng(SEED + 1)),
    }


def write(cases, path):
    """One case per line, so that a changed case is a one-line diff."""
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        out.write("{\n")
        items = list(cases.items())
        for i, (key, value) in enumerate(items):
            comma = "," if i + 1 < len(items) else ""
            if isinstance(value, list):
                out.write(f" {json.dumps(key)}: [\n")
                for j, case in enumerate(value):
                    inner = "," if j + 1 < len(value) else ""
                    out.write(f"  {json.dumps(case, allow_nan=False)}{inner}\n")
                out.write(f" ]{comma}\n")
            else:
                out.write(f" {json.dumps(key)}: {json.dumps(value, allow_nan=False)}{comma}\n")
        out.write("}\n")


def num(value):
    """A plain float, or None where it is NaN or infinite (JSON has neither)."""
    value = float(value)
    return value if math.isfinite(value) else None


def inputs(values):
    """Input values as plain floats, each with at most 15 significant digits, so that a JSON
    reader without exact float parsing (serde_json's default) gets them back exactly."""
    out = []
    for value in np.asarray(values, dtype=float).ravel():
        value = float(value)
        assert math.isfinite(value), value
        digits = Decimal(repr(value)).normalize().as_tuple().digits
        assert len(digits) <= 15, f"{value!r} has more than 15 significant digits"
        out.append(value)
    return out


def grouped_cases(groups, versions, seed):
    """The cases of the other oracles: `versions`, then each group's list under its name
    (without `_cases`), drawn from its own generator `default_rng(seed + k)`, so that a case added
    to one group leaves the others' bytes as they were."""
    cases = {"versions": versions}
    for k, group in enumerate(groups):
        cases[group.__name__.removesuffix("_cases")] = group(np.random.default_rng(seed + k))
    return cases


def oracle_main(doc, build, default_out_dir, file_name):
    """The command line of the other oracles: `[OUT_DIR]`, the cases written there."""
    if len(sys.argv) > 2:
        sys.exit(doc)
    out_dir = Path(sys.argv[1]) if len(sys.argv) == 2 else default_out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    cases = build()
    write(cases, out_dir / file_name)
    counts = ", ".join(f"{len(v)} {k}" for k, v in cases.items() if isinstance(v, list))
    print(f"{counts} written to {out_dir / file_name}", file=sys.stderr)


def main():
    if len(sys.argv) > 2:
        sys.exit(__doc__)
    out_dir = Path(sys.argv[1]) if len(sys.argv) == 2 else DEFAULT_OUT_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    cases = build()
    write(cases, out_dir / "stats_cases.json")
    counts = ", ".join(f"{len(v)} {k}" for k, v in cases.items() if isinstance(v, list))
    print(f"{counts} written to {out_dir / 'stats_cases.json'}", file=sys.stderr)


if __name__ == "__main__":
    main()
