#!/usr/bin/env python3
"""The girth oracle of hierarag-items' two-parameter logistic (2PL) IRT fit (issue 46, item
analysis): the items are benchmark questions, the respondents RAG systems, a response 1 where a
system passes a question.

Usage:
    .venv-oracles/bin/pip install -r scripts/oracles/requirements.txt
    .venv-oracles/bin/python scripts/oracles/irt_oracle.py [OUT_DIR]

OUT_DIR defaults to crates/hierarag-items/tests/data. The script writes `irt_cases.json` there:
a `versions` entry (numpy, scipy, girth), girth's default quadrature (`quadrature`: the 41
Gauss-Legendre points on [-4.5, 4.5] and their weights), then 0/1 matrices built
deterministically (`numpy.random.default_rng(SEED)`, SEED = 20261214), one string of 0s and 1s
per item, and for each girth's `twopl_mml(dataset, options)` -> discrimination and difficulty.

girth is given only the items that some respondents pass and others fail: an item every
respondent passes or fails has no finite estimate, hierarag-items leaves it out of the fit and
reports none for it (null here). The case `degenerate_items` also keeps girth's answer with those
items in (`girth_all_items`), to document it: girth 0.8.0 gives a saturated item difficulty +6
(hard, where it is the easiest) and a failed item that is not the first the same ratio as a
saturated one.

Cases: responses simulated from a 2PL with known parameters (discrimination uniform on
[0.5, 2.5], difficulty and ability standard normal) for 6 x 40, 10 x 100, 25 x 300 and
100 x 20 respondents x items; 25 x 300 again with `max_iteration` 3 (not converged) and with 61
quadrature points on [-5, 5]; and `degenerate_items` (40 x 25): a saturated item, a failed item
and a reversed item (discrimination -1.5: the strong systems fail it).

`crates/hierarag-items/tests/it/irt_oracle.rs` reads the committed file (no Python at test time).
Rerun this script after changing the cases or the pinned versions and commit the file.
"""

import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np
import scipy
from girth import twopl_mml
from girth.utilities.utils import _get_quadrature_points

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stats_oracle import num, oracle_main  # noqa: E402

DEFAULT_OUT_DIR = Path(__file__).resolve().parents[2] / "crates/hierarag-items/tests/data"
FILE_NAME = "irt_cases.json"
SEED = 20261214


def fit(responses, options):
    """girth's twopl_mml on the items that separate the respondents, null for the others."""
    informative = responses.min(axis=1) != responses.max(axis=1)
    result = twopl_mml(responses[informative], dict(options) or None)
    discrimination = [None] * responses.shape[0]
    difficulty = [None] * responses.shape[0]
    for out_idx, item_idx in enumerate(np.flatnonzero(informative)):
        discrimination[item_idx] = num(result["Discrimination"][out_idx])
        difficulty[item_idx] = num(np.atleast_1d(result["Difficulty"])[out_idx])
    return discrimination, difficulty


def build():
    rng = np.random.default_rng(SEED)
    cases = []

    def add(name, responses, options=None, **extra):
        options = options or {}
        discrimination, difficulty = fit(responses, options)
        case = {"name": name, "options": options,
                "responses": ["".join(str(int(v)) for v in row) for row in responses],
                "discrimination": discrimination, "difficulty": difficulty}
        case.update(extra)
        cases.append(case)

    def simulate(n_respondents, n_items):
        """[item][respondent] 0/1 responses of a 2PL with known parameters."""
        ability = rng.standard_normal(n_respondents)
        discrimination = rng.uniform(0.5, 2.5, n_items)
        difficulty = rng.standard_normal(n_items)
        logit = discrimination[:, None] * (ability[None, :] - difficulty[:, None])
        responses = rng.random((n_items, n_respondents)) < 1 / (1 + np.exp(-logit))
        return responses.astype(int), ability

    for n_respondents, n_items in [(6, 40), (10, 100), (25, 300), (100, 20)]:
        add(f"simulated_{n_respondents}x{n_items}", simulate(n_respondents, n_items)[0])
    responses, _ = simulate(25, 300)
    add("max_iteration_3", responses, {"max_iteration": 3})
    add("quadrature_61_on_5", responses, {"quadrature_n": 61, "quadrature_bounds": [-5.0, 5.0]})

    # A saturated item (0), a failed one (1) and a reversed one (2) among simulated items.
    responses, ability = simulate(40, 25)
    responses[0] = 1
    responses[1] = 0
    reversed_logit = -1.5 * ability
    responses[2] = rng.random(40) < 1 / (1 + np.exp(-reversed_logit))
    full = twopl_mml(responses)
    add("degenerate_items", responses,
        girth_all_items={"discrimination": [num(v) for v in full["Discrimination"]],
                         "difficulty": [num(v) for v in full["Difficulty"]]})

    theta, weights = _get_quadrature_points(41, -4.5, 4.5)
    versions = {"numpy": np.__version__, "scipy": scipy.__version__, "girth": version("girth")}
    return {"versions": versions,
            "quadrature": {"theta": [num(v) for v in theta], "weights": [num(v) for v in weights]},
            "twopl_mml": cases}


def main():
    oracle_main(__doc__, build, DEFAULT_OUT_DIR, FILE_NAME)


if __name__ == "__main__":
    main()
