#!/usr/bin/env python3
"""The scikit-learn / scipy oracle of hierarag-stats' judge statistics (docs/design.md, "Human
validation"): the agreement of an LLM judge, or of an automatic metric, with the people who rated
the same items.

Usage:
    .venv-oracles/bin/pip install -r scripts/oracles/requirements.txt
    .venv-oracles/bin/python scripts/oracles/judge_oracle.py [OUT_DIR]

OUT_DIR defaults to crates/hierarag-stats/tests/data. The script writes `judge_cases.json` there:
a `versions` entry (numpy, scipy, scikit-learn), then inputs built deterministically (group k of
the list below draws from its own `numpy.random.default_rng(SEED + k)`, SEED = 20261203) and, for
each, the values the reference packages compute. One case per line, grouped by function; NaN
results are written as null.

- `weighted_kappa`: `sklearn.metrics.cohen_kappa_score(a, b, labels=range(max + 1),
  weights="quadratic")` on integer ratings of a 0..max scale (a judge's and a person's; max 3 or
  2) -> kappa. The labels are the whole scale, so that the weights are the squared distance of
  the ratings themselves even where neither rater used a value. Cases: perfect agreement
  (1), a judge one point off everywhere, a random judge against a person (near 0, n = 2000),
  ratings correlated as a fair judge's are, a scale of which one rater uses only part, a value
  neither uses (the weights still count it), one rater
  constant (kappa 0: sklearn gives 0 when the expected disagreement is not zero and the observed
  equals it), both raters constant on the same value (0/0: NaN, written null), and a single item
  rated differently by the two (0 by the same rule).
- `spearman`: `scipy.stats.spearmanr(x, y)` -> statistic (rho) and pvalue (two-sided, from the
  t distribution with n - 2 degrees of freedom). Cases: a metric against a mean of human ratings
  with many ties (means of two 0-3 ratings), continuous values without ties, a perfect monotone
  pair (rho 1, p 0), a reversed one (rho -1), an unrelated pair (n = 500), three items, and a
  constant side (NaN, written null).

`crates/hierarag-stats/tests/` reads the committed file (no Python at test time) and requires our
values to equal these. Rerun this script after changing the cases or the pinned versions and
commit the file; the same versions always write the same bytes.
"""

import math
import sys
import warnings
from pathlib import Path

import numpy as np
import scipy
import scipy.stats
import sklearn
from sklearn.metrics import cohen_kappa_score

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stats_oracle import grouped_cases, inputs, num, oracle_main  # noqa: E402

DEFAULT_OUT_DIR = Path(__file__).resolve().parents[2] / "crates/hierarag-stats/tests/data"
FILE_NAME = "judge_cases.json"
SEED = 20261203


def ints(values):
    return [int(v) for v in values]


def weighted_kappa_cases(rng):
    cases = []

    def add(name, a, b, expect_nan=False, scale=3):
        a, b = np.asarray(a, dtype=int), np.asarray(b, dtype=int)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # 0/0 in the constant case
            kappa = cohen_kappa_score(a, b, labels=list(range(scale + 1)), weights="quadratic")
        assert math.isnan(kappa) == expect_nan, (name, kappa)
        cases.append({"name": name, "max": scale, "a": ints(a), "b": ints(b),
                      "kappa": num(kappa)})

    person = rng.integers(0, 4, 60)
    add("perfect_0_3", person, person)
    add("one_point_off", person, np.clip(person + 1, 0, 3))
    add("random_judge_n2000", rng.integers(0, 4, 2000), rng.integers(0, 4, 2000))
    person = rng.integers(0, 4, 200)
    judge = np.clip(person + rng.choice([-1, 0, 0, 0, 1], 200), 0, 3)
    add("fair_judge_0_3", judge, person)
    person = rng.integers(0, 3, 150)
    judge = np.where(rng.random(150) < 0.6, person, rng.integers(0, 3, 150))
    add("hallucination_0_2", judge, person, scale=2)
    add("values_unused_by_both", rng.choice([0, 3], 50), rng.choice([0, 1, 3], 50))
    add("part_of_the_scale", rng.integers(2, 4, 80), rng.integers(0, 4, 80))
    add("one_rater_constant", np.full(30, 3), rng.integers(0, 4, 30))
    add("both_constant", np.full(10, 2), np.full(10, 2), expect_nan=True)
    add("single_item", [2], [1])
    return cases


def spearman_cases(rng):
    cases = []

    def add(name, x, y, expect_nan=False):
        x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the constant input warning
            result = scipy.stats.spearmanr(x, y)
        assert math.isnan(result.statistic) == expect_nan, (name, result)
        cases.append({"name": name, "x": inputs(x), "y": inputs(y),
                      "rho": num(result.statistic), "p": num(result.pvalue)})

    means = (rng.integers(0, 4, 120) + rng.integers(0, 4, 120)) / 2
    metric = np.round(np.clip(0.3 + 0.15 * means + rng.normal(0, 0.15, 120), 0, 1), 6)
    add("metric_vs_human_mean_ties", metric, means)
    add("judge_vs_human_mean_ties", np.clip(np.round(means + rng.normal(0, 0.7, 120)), 0, 3),
        means)
    x = np.round(rng.normal(0, 1, 40), 6)
    add("continuous", x, np.round(x + rng.normal(0, 1, 40), 6))
    add("perfect", [1, 2, 3, 4, 5, 6], [0.1, 0.2, 0.5, 0.7, 0.8, 0.95])
    add("reversed", [1, 2, 3, 4, 5], [9, 7, 5, 3, 1])
    add("unrelated_n500", np.round(rng.random(500), 6), np.round(rng.random(500), 6))
    add("three_items", [0.2, 0.9, 0.4], [1, 3, 2.5])
    add("constant_side", [0.5, 0.5, 0.5, 0.5], [1, 2, 3, 0], expect_nan=True)
    return cases


def build():
    versions = {"numpy": np.__version__, "scipy": scipy.__version__,
                "scikit-learn": sklearn.__version__}
    return grouped_cases([weighted_kappa_cases, spearman_cases], versions, SEED)


if __name__ == "__main__":
    oracle_main(__doc__, build, DEFAULT_OUT_DIR, FILE_NAME)
