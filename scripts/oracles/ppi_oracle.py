#!/usr/bin/env python3
"""The ppi-python oracle of hierarag-stats' prediction-powered mean (issue 46): people's ratings
on a few answers, an LLM judge's grades on all of them.

Usage:
    .venv-oracles/bin/pip install -r scripts/oracles/requirements.txt
    .venv-oracles/bin/python scripts/oracles/ppi_oracle.py [OUT_DIR]

OUT_DIR defaults to crates/hierarag-stats/tests/data. The script writes `ppi_cases.json` there:
a `versions` entry (numpy, ppi-python), then inputs built deterministically
(`numpy.random.default_rng(SEED)`, SEED = 20261207) and, for each, `ppi_py`'s
`ppi_mean_pointestimate(Y, Yhat, Yhat_unlabeled)` -> estimate and
`ppi_mean_ci(Y, Yhat, Yhat_unlabeled, alpha=alpha)` -> ci (both with their defaults: lambda
tuned for power and clipped to [0, 1], no weights, two-sided). Cases: judge grades 0-3 (as
`judge_correctness`) and 0-1 (as `judge`) that agree with the people's rating most of the time,
with a bias, from 10 to 400 rated answers among 100 to 5,000; a judge that ignores the answer
(lambda clipped to 0: the people's mean), a judge equal to the people (lambda near 1), a
continuous score, and alpha 0.05 and 0.1. Values have at most 15 significant digits.

`crates/hierarag-stats/tests/it/ppi_oracle.rs` reads the committed file (no Python at test
time). Rerun this script after changing the cases or the pinned versions and commit the file.
"""

import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stats_oracle import inputs, num, oracle_main  # noqa: E402

DEFAULT_OUT_DIR = Path(__file__).resolve().parents[2] / "crates/hierarag-stats/tests/data"
FILE_NAME = "ppi_cases.json"
SEED = 20261207


def build():
    rng = np.random.default_rng(SEED)
    cases = []

    def add(name, y, yhat, yhat_unlabeled, alpha=0.05):
        y, yhat, yhat_unlabeled = inputs(y), inputs(yhat), inputs(yhat_unlabeled)
        Y, Yh, Yu = np.array(y), np.array(yhat), np.array(yhat_unlabeled)
        estimate = ppi_mean_pointestimate(Y, Yh, Yu)
        lo, hi = ppi_mean_ci(Y, Yh, Yu, alpha=alpha)
        cases.append({"name": name, "y": y, "yhat": yhat, "yhat_unlabeled": yhat_unlabeled,
                      "alpha": alpha, "estimate": num(np.ravel(estimate)[0]),
                      "ci": [num(np.ravel(lo)[0]), num(np.ravel(hi)[0])]})

    def graded(n, agree, bias, top):
        """People's grades 0..top and a judge that agrees with probability `agree`, else
        grades one step higher (`bias` > 0) or at random."""
        people = rng.integers(0, top + 1, n)
        judge = people.copy()
        off = rng.random(n) >= agree
        up = rng.random(n) < bias
        judge[off & up] = np.minimum(people[off & up] + 1, top)
        judge[off & ~up] = rng.integers(0, top + 1, (off & ~up).sum())
        return people.astype(float), judge.astype(float)

    for n, big_n in [(10, 100), (30, 500), (50, 1000), (200, 2000), (400, 5000)]:
        for top in (3, 1):
            people, judge = graded(n + big_n, 0.8, 0.7, top)
            add(f"grades_0_{top}_n{n}_N{big_n}", people[:n], judge[:n], judge[n:])
    people, judge = graded(300, 0.9, 0.5, 3)
    add("alpha_0_1", people[:60], judge[:60], judge[60:], alpha=0.1)
    # A judge that ignores the answer: lambda clipped to 0, the people's mean and interval.
    people = rng.integers(0, 4, 80).astype(float)
    add("uninformative_judge", people[:40], rng.integers(0, 4, 40).astype(float),
        rng.integers(0, 4, 400).astype(float))
    # A judge equal to the people.
    people = rng.integers(0, 4, 500).astype(float)
    add("perfect_judge", people[:50], people[:50], people[50:])
    # A continuous score (CS-like) with a noisy, biased prediction.
    truth = np.round(rng.beta(3, 2, 1200), 6)
    predicted = np.round(np.clip(truth + 0.05 + rng.normal(0, 0.1, 1200), 0, 1), 6)
    add("continuous", truth[:100], predicted[:100], predicted[100:])
    versions = {"numpy": np.__version__, "ppi-python": version("ppi-python")}
    return {"versions": versions, "ppi_mean": cases}


def main():
    oracle_main(__doc__, build, DEFAULT_OUT_DIR, FILE_NAME)


if __name__ == "__main__":
    main()
