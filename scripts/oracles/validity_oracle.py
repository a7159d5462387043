#!/usr/bin/env python3
"""The scipy oracle of the statistics that compare a synthetic benchmark with a human-written
one (docs/design.md, "Validity"): the goodness of fit of a category mix, the two-sample test of a
question property, and the rank correlations of category difficulty and system order.

Usage:
    .venv-oracles/bin/pip install -r scripts/oracles/requirements.txt
    .venv-oracles/bin/python scripts/oracles/validity_oracle.py [OUT_DIR]

OUT_DIR defaults to crates/hierarag-stats/tests/data. The script writes `validity_cases.json`
there: a `versions` entry (numpy, scipy), then inputs built deterministically (group k draws from
its own `numpy.random.default_rng(SEED + k)`, SEED = 20261207) and, for each, what scipy computes.
One case per line, grouped by function; NaN results are written as null.

- `chisquare`: `scipy.stats.chisquare(observed, expected)` -> statistic, p, with `expected` the
  design's proportions scaled to the observed total (`total * proportions / proportions.sum()`);
  dof = len - 1. Cases: 2, 4 and 8 categories near and far from the design, a perfect fit
  (statistic 0, p 1), tiny p, a category nobody asked about (observed 0), and expected counts
  whose total differs from the observed one (scipy raises: written with null statistic and p).
- `mannwhitneyu`: `scipy.stats.mannwhitneyu(x, y)` with its defaults (two-sided, method="auto",
  continuity correction) -> u (the statistic, U of x) and p, and which method "auto" chose
  (exact when one sample has at most 8 values and there are no ties). Cases: small samples
  without ties (exact, 1 to 8 values against 1 to 40), the same with ties (asymptotic),
  word counts (many ties), overlaps in [0, 1], one side of 8 against 400 untied values (exact
  with a long tail), equal samples (U = n1 n2 / 2, p clipped to 1), every value tied, and large
  samples (2,000 against 3,000).
- `kendalltau`: `scipy.stats.kendalltau(x, y)` with its defaults -> statistic and p (null where
  scipy gives NaN: a constant side). Cases: category means of 2 to 8 categories (exact), system
  orders of 3 to 6, 34 and 60 untied values (asymptotic past 33, exact again with at most one
  discordant pair), ties on one or both sides (asymptotic with the tie-corrected variance).
- `spearmanr`: `scipy.stats.spearmanr(x, y)` -> statistic and p on the same kind of inputs.
- `norm_ppf`: `scipy.stats.norm.ppf(q)`, the half-width of a normal interval in standard errors.
- `pearsonr`: `scipy.stats.pearsonr(x, y)` -> statistic and p on the inputs of `kendalltau`.
- `bootstrap_mean`: the 95 % percentile interval of a sample's mean from 1,000 resamples drawn
  by numpy (`rng.integers`, `np.percentile`), an independent resampling that hierarag's seeded
  bootstrap must come close to (within a tenth of the interval's width), not equal.

`crates/hierarag-stats/tests/it/validity_oracle.rs` reads the committed file (no Python at test
time). Rerun this script after changing the cases or the pinned package versions
(scripts/oracles/requirements.txt) and commit the file; the same versions write the same bytes.
"""

import sys
from pathlib import Path

import numpy as np
import scipy
import scipy.stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stats_oracle import grouped_cases, inputs, num, oracle_main  # noqa: E402

DEFAULT_OUT_DIR = Path(__file__).resolve().parents[2] / "crates/hierarag-stats/tests/data"
FILE_NAME = "validity_cases.json"
SEED = 20261207


def chisquare_cases(rng):
    cases = []

    def add(name, observed, proportions, expected=None):
        observed = np.asarray(observed, dtype=np.int64)
        proportions = np.asarray(proportions, dtype=float)
        if expected is None:
            expected = observed.sum() * proportions / proportions.sum()
        case = {"name": name, "observed": [int(v) for v in observed],
                "expected": [float(v) for v in expected]}
        try:
            result = scipy.stats.chisquare(observed, expected)
        except ValueError as error:
            assert "sum of the observed" in str(error) or "must agree" in str(error), error
            case.update(statistic=None, p=None)
        else:
            case.update(statistic=num(result.statistic), p=num(result.pvalue))
        cases.append(case)

    add("two_even", [48, 52], [1, 1])
    add("perfect_fit_four", [25, 25, 25, 25], [1, 1, 1, 1])
    add("far_four", [70, 20, 8, 2], [1, 1, 1, 1])
    add("tiny_p_eight", [400, 10, 10, 10, 10, 10, 10, 40], [1] * 8)
    add("absent_category", [30, 0, 12, 18], [1, 1, 1, 1])
    add("unequal_design", [12, 30, 41, 17], [0.1, 0.3, 0.4, 0.2])
    for k in (2, 4, 8):
        for trial in range(3):
            proportions = rng.dirichlet(np.ones(k))
            proportions = np.round(proportions + 1e-3, 6)
            observed = rng.multinomial(int(rng.integers(20, 400)),
                                       rng.dirichlet(np.ones(k) * 4))
            add(f"random_{k}_{trial}", observed, inputs(proportions))
    add("totals_differ", [10, 20, 30], [1, 1, 1], expected=[10.0, 20.0, 40.0])
    return cases


def mannwhitneyu_cases(rng):
    cases = []

    def add(name, x, y):
        x, y = inputs(x), inputs(y)
        result = scipy.stats.mannwhitneyu(x, y)
        n1, n2 = len(x), len(y)
        ties = len(set(x + y)) < n1 + n2
        method = "asymptotic" if (n1 > 8 and n2 > 8) or ties else "exact"
        cases.append({"name": name, "x": x, "y": y, "u": num(result.statistic),
                      "p": num(result.pvalue), "exact": method == "exact"})

    def untied(n, shift=0.0):
        return np.round(rng.normal(size=n) + shift, 9)

    for n1 in (1, 2, 3, 5, 8):
        for n2 in (1, 4, 8, 13, 40):
            add(f"exact_{n1}_{n2}", untied(n1), untied(n2, 0.3))
    add("exact_separated", [4, 5, 6], [1, 2, 3])
    add("exact_8_against_400", untied(8, 0.8), untied(400))
    add("exact_long_side_first", untied(300), untied(6, -0.5))
    add("ties_small", [1, 2, 2, 3], [2, 3, 3, 4, 5])
    for trial in range(4):
        add(f"word_counts_{trial}", rng.poisson(8, size=int(rng.integers(20, 120))) + 1,
            rng.poisson(6, size=int(rng.integers(20, 120))) + 1)
        add(f"overlaps_{trial}", np.round(rng.beta(2, 2, size=int(rng.integers(10, 200))), 2),
            np.round(rng.beta(4, 1.5, size=int(rng.integers(10, 200))), 2))
    add("equal_samples", [1, 2, 3, 4], [1, 2, 3, 4])
    add("all_tied", [5, 5, 5], [5, 5, 5, 5])
    add("large", np.round(rng.normal(size=2000), 6), np.round(rng.normal(0.05, 1, 3000), 6))
    return cases


def correlation_cases(rng, function):
    cases = []

    def add(name, x, y):
        x, y = inputs(x), inputs(y)
        result = function(x, y)
        cases.append({"name": name, "x": x, "y": y, "statistic": num(result.statistic),
                      "p": num(result.pvalue)})

    for k in (2, 3, 4, 5, 6, 8):
        for trial in range(2):
            x = np.round(rng.uniform(0.2, 0.8, size=k), 6)
            add(f"category_means_{k}_{trial}", x, np.round(x + rng.normal(0, 0.1, k), 6))
    add("identical_order", [1, 2, 3, 4, 5], [0.1, 0.2, 0.3, 0.4, 0.5])
    add("reversed_order", [1, 2, 3, 4], [0.4, 0.3, 0.2, 0.1])
    add("three_systems", [0.31, 0.343, 0.335], [0.701, 0.612, 0.705])
    add("untied_34", rng.permutation(34), np.arange(34))
    add("untied_60", np.round(rng.normal(size=60), 6), np.round(rng.normal(size=60), 6))
    add("one_discordant_40", np.r_[1, 0, np.arange(2, 40)], np.arange(40))
    add("ties_one_side", [1, 1, 2, 3, 3, 4], [0.1, 0.3, 0.2, 0.5, 0.4, 0.6])
    add("ties_both", [1, 1, 2, 2, 3, 3, 4], [2, 1, 1, 3, 3, 4, 4])
    add("ties_large", rng.integers(0, 5, 80), rng.integers(0, 7, 80))
    add("constant", [1, 1, 1], [1, 2, 3])
    return cases


def kendalltau_cases(rng):
    return correlation_cases(rng, scipy.stats.kendalltau)


def spearmanr_cases(rng):
    return correlation_cases(rng, scipy.stats.spearmanr)


def norm_ppf_cases(rng):
    """The half-widths of normal intervals: `scipy.stats.norm.ppf(q)`."""
    qs = [0.5, 0.8, 0.9, 0.95, 0.975, 0.995, 0.9995, 0.025, 1e-6, 0.3]
    return [{"q": q, "z": num(scipy.stats.norm.ppf(q))} for q in qs]


def pearsonr_cases(rng):
    """Pearson's r, the corrected item-total correlation of an item analysis (issue 46)."""
    return correlation_cases(rng, scipy.stats.pearsonr)


def bootstrap_mean_cases(rng):
    """The percentile interval of a mean from 1,000 resamples of numpy's own generator: an
    independent resampling that hierarag's seeded bootstrap must come close to (not equal:
    the streams differ)."""
    cases = []
    for name, x in [
        ("n5", np.round(rng.normal(0.5, 0.2, 5), 6)),
        ("n20_grades", rng.integers(0, 4, 20).astype(float)),
        ("n50_cs", np.round(rng.beta(3, 2, 50), 6)),
        ("n200_skewed", np.round(rng.exponential(0.3, 200), 6)),
        ("n500_binary", rng.integers(0, 2, 500).astype(float)),
        ("n1000_cs", np.round(rng.beta(2, 2, 1000), 6)),
    ]:
        x = np.array(inputs(x))
        means = x[rng.integers(0, len(x), (1000, len(x)))].mean(axis=1)
        lo, hi = np.percentile(means, [2.5, 97.5])
        cases.append({"name": name, "x": [float(v) for v in x], "lo": float(lo),
                      "hi": float(hi)})
    return cases


def build():
    versions = {"numpy": np.__version__, "scipy": scipy.__version__}
    return grouped_cases([chisquare_cases, mannwhitneyu_cases, kendalltau_cases,
                          spearmanr_cases, norm_ppf_cases, pearsonr_cases,
                          bootstrap_mean_cases], versions, SEED)


def main():
    oracle_main(__doc__, build, DEFAULT_OUT_DIR, FILE_NAME)


if __name__ == "__main__":
    main()
