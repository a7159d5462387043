#!/usr/bin/env python3
"""The scipy / statsmodels oracle of hierarag-stats' tag statistics (docs/design.md, "Analysis"):
the chi-squared test of a contingency table of tags and the type II ANOVA of a score on several
tag dimensions at once.

Usage:
    .venv-oracles/bin/pip install -r scripts/oracles/requirements.txt
    .venv-oracles/bin/python scripts/oracles/tags_oracle.py [OUT_DIR]

OUT_DIR defaults to crates/hierarag-stats/tests/data. The script writes `tags_cases.json` there:
a `versions` entry (numpy, scipy, statsmodels, pandas, patsy), then inputs built
deterministically (group k = 0, 1 of the list below draws from its own
`numpy.random.default_rng(SEED + k)`, SEED = 20260426, so that adding a case to one group leaves
the other group's bytes as they were) and, for each, the values the reference packages compute.
One case per line, grouped by function; NaN and infinite results are written as null (JSON has
neither). Every input value has at most 15 significant digits (asserted below), which serde_json
parses to exactly the double Python wrote; scores are rounded to 6 decimals.

- `chi2`: `scipy.stats.chi2_contingency(table)` with its defaults (correction=True, which scipy
  applies only when dof == 1, i.e. to a 2x2 table: Yates' correction, each observed count moved
  towards its expected one by min(0.5, |O - E|)) -> statistic, p (pvalue), dof and expected
  (expected_freq). Cases: 2x2 with small counts, with large counts (tiny p), with a zero cell,
  and one where every |O - E| < 0.5 (the correction takes O to E: statistic 0, p 1, dof 1);
  2x3, 3x3, 4x8 and 8x8 tables of tag-like counts (n questions, each with one category of one
  dimension and one tag of another, drawn with some dependence between the two, cross-tabulated;
  every margin asserted non-zero); a table with tiny expected counts (below 1 in most cells) and
  a 3x5 one of mostly zeros. Degenerate tables: one row (1x3), one column (4x1) and a single
  cell (1x1): scipy gives statistic 0.0, p 1.0, dof 0 and expected = the table itself (as
  floats), which is written as it is (asserted). A table with an all-zero row (3x2) or an
  all-zero column (2x3): scipy raises ValueError ("The internally computed table of expected
  frequencies has a zero element at ..."), and the case is written with statistic, p, dof and
  expected all null (the raise is asserted).
- `anova2`: statsmodels `anova_lm(ols("y ~ C(f0) + C(f1) + ...", data).fit(), typ=2)` (main
  effects only, treatment coding; factors are integer labels, not necessarily contiguous, made
  categorical by C()): for each factor in factor order its row's sum_sq, df, F and PR(>F) ->
  ss, df, f, p, and the Residual row's sum_sq and df -> residual.ss, residual.df. Cases: one
  factor of 4 levels with non-contiguous labels (type II is then the one-way ANOVA; asserted
  against `scipy.stats.f_oneway`); two factors balanced (3 x 4, 5 per cell); two factors
  unbalanced (2 x 3, random cell sizes); three factors of 2, 4 and 8 levels (a question's tags on
  three dimensions), n = 300, CS-like y in [0, 1]; three factors with correlated labels (f1 is
  a function of f0 for 70 % of the questions, f2 a function of f1 for 60 %, as confounded tags
  are), n = 300; four factors of 2, 4, 8 and 3 levels, n = 1000, one of them with a strong
  effect (tiny p); two factors where one level of f1 appears exactly once (asserted).
  Rank-deficient cases: `rank_deficient_copy` (f1 an identical copy of f0, 3 levels, n = 30)
  and `rank_deficient_copy_plus_one` (the same with an independent third factor f2 of 2 levels,
  n = 40). statsmodels fits them through the pseudo-inverse (SingularMatrixWarning, silenced
  here) and computes each type II row as a Wald test of the factor's coefficients: it does NOT
  give df 0 or NaN for the copy. Both copies get the same row, which is the one the factor gets
  in the model without its copy (ss, f and p equal those of `y ~ C(f0)` resp.
  `y ~ C(f0) + C(f2)` to ~1e-15 relative, pseudo-inverse rounding; asserted to 1e-9) with df 2
  (the number of levels - 1), finite F and p; the residual row is right (df = n - rank of the
  design = n - 3 resp. n - 4) and the independent f2 row is the one of `y ~ C(f0) + C(f2)`. The
  textbook type II SS of a factor given its copy, RSS(without it) - RSS(full), would be 0 on
  0 degrees of freedom; the Rust side either mirrors statsmodels or differs on purpose there.

`crates/hierarag-stats/tests/` reads the committed file (no Python at test time) and requires our
values to equal these. Rerun this script after changing the cases or the pinned package versions
(scripts/oracles/requirements.txt: numpy, scipy, statsmodels, pandas, patsy) and commit the file;
the same versions always write the same bytes.
"""

import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import patsy
import scipy
import scipy.stats
import statsmodels
import statsmodels.api as sm
from statsmodels.formula.api import ols
from statsmodels.tools.sm_exceptions import SingularMatrixWarning

# The same one-case-per-line writer as the other stats oracles (a changed case is a one-line diff).
sys.path.insert(0, str(Path(__file__).resolve().parent))
from stats_oracle import grouped_cases, inputs, num, oracle_main  # noqa: E402

DEFAULT_OUT_DIR = Path(__file__).resolve().parents[2] / "crates/hierarag-stats/tests/data"
FILE_NAME = "tags_cases.json"
SEED = 20260426


def labels(values):
    return [int(v) for v in values]


def cs(values):
    """CS-like values: clipped to [0, 1] and rounded to 6 decimals."""
    return np.round(np.clip(values, 0.0, 1.0), 6)


# ------------------------------------------------------------------------------------------------

def chi2_cases(rng):
    cases = []

    def add(name, table, raises=False, dof0=False):
        table = np.asarray(table, dtype=np.int64)
        case = {"name": name, "table": [labels(row) for row in table]}
        try:
            result = scipy.stats.chi2_contingency(table)
        except ValueError as error:
            assert raises, (name, error)
            assert "expected frequencies has a zero element" in str(error), error
            case.update(statistic=None, p=None, dof=None, expected=None)
        else:
            assert not raises, name
            if dof0:
                assert (result.statistic, result.pvalue, result.dof) == (0.0, 1.0, 0), result
                assert np.array_equal(result.expected_freq, table), result
            case.update(statistic=num(result.statistic), p=num(result.pvalue),
                        dof=int(result.dof),
                        expected=[[num(v) for v in row] for row in result.expected_freq])
        cases.append(case)

    def tag_like(n, n_rows, n_columns, dependence):
        """n questions: a category (row) and a tag of another dimension (column); with
        probability `dependence` the tag follows from the category, else it is random. Category
        and tag frequencies are uneven (Dirichlet), as tags are. Every margin is non-zero."""
        for _ in range(100):
            row_p = rng.dirichlet(np.full(n_rows, 2.0))
            column_p = rng.dirichlet(np.full(n_columns, 2.0))
            rows = rng.choice(n_rows, n, p=row_p)
            columns = np.where(rng.random(n) < dependence, (rows * 3 + 1) % n_columns,
                               rng.choice(n_columns, n, p=column_p))
            table = np.zeros((n_rows, n_columns), dtype=np.int64)
            np.add.at(table, (rows, columns), 1)
            if np.all(table.sum(axis=0) > 0) and np.all(table.sum(axis=1) > 0):
                return table
        raise AssertionError("no draw with non-zero margins")

    # 2x2: the Yates branch (dof 1).
    add("2x2_small", [[3, 7], [6, 2]])
    add("2x2_large", [[412, 288], [301, 399]])
    add("2x2_zero_cell", [[0, 9], [5, 6]])
    add("2x2_within_half", [[5, 5], [5, 6]])  # every |O - E| = 0.238 < 0.5: statistic 0
    add("2x2_random", rng.integers(5, 60, (2, 2)))
    # Larger tables: no correction.
    add("2x3", [[12, 20, 9], [15, 8, 14]])
    add("3x3", [[30, 12, 8], [10, 25, 11], [9, 14, 27]])
    add("4x8_tag_like", tag_like(240, 4, 8, 0.25))
    add("8x8_tag_like", tag_like(600, 8, 8, 0.2))
    add("8x8_tag_like_independent", tag_like(400, 8, 8, 0.0))
    add("tiny_expected_3x4", [[1, 0, 0, 1], [0, 1, 0, 0], [0, 0, 2, 1]])
    add("mostly_zero_3x5", [[0, 0, 1, 0, 0], [0, 3, 0, 0, 1], [1, 0, 0, 2, 0]])
    # Degenerate tables.
    add("one_row_1x3", [[3, 5, 2]], dof0=True)
    add("one_column_4x1", [[3], [5], [2], [7]], dof0=True)
    add("single_cell_1x1", [[6]], dof0=True)
    add("zero_row_3x2", [[4, 6], [0, 0], [3, 5]], raises=True)
    add("zero_column_2x3", [[4, 0, 6], [3, 0, 5]], raises=True)
    return cases


def anova2_case(name, y, factors):
    y = np.asarray(y, dtype=float)
    factors = [np.asarray(f, dtype=int) for f in factors]
    assert all(len(f) == len(y) for f in factors)
    data = pd.DataFrame({"y": y, **{f"f{k}": f for k, f in enumerate(factors)}})
    formula = "y ~ " + " + ".join(f"C(f{k})" for k in range(len(factors)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SingularMatrixWarning)  # the rank-deficient cases
        table = sm.stats.anova_lm(ols(formula, data).fit(), typ=2)
    assert list(table.index) == [f"C(f{k})" for k in range(len(factors))] + ["Residual"]

    def term(row):
        return {"ss": float(row["sum_sq"]), "df": float(row["df"]), "f": num(row["F"]),
                "p": num(row["PR(>F)"])}

    residual = table.loc["Residual"]
    return {"name": name, "y": inputs(y), "factors": [labels(f) for f in factors],
            "terms": [term(table.loc[f"C(f{k})"]) for k in range(len(factors))],
            "residual": {"ss": float(residual["sum_sq"]), "df": float(residual["df"])}}


def additive(rng, factors, effects, base=0.6, sd=0.12):
    """CS-like y = clip(base + sum of each factor's level effect + noise) on 6 decimals."""
    mean = np.full(len(factors[0]), base)
    for f, e in zip(factors, effects):
        mean = mean + np.asarray(e)[f]
    return cs(mean + rng.normal(0.0, sd, len(mean)))


def anova2_cases(rng):
    cases = []

    # One factor, non-contiguous labels: type II = one-way ANOVA.
    codes = rng.permutation(np.repeat(np.arange(4), [8, 12, 9, 11]))
    y = additive(rng, [codes], [[0.0, 0.05, -0.04, 0.02]])
    f0 = np.array([3, 7, 10, 42])[codes]
    case = anova2_case("one_factor_4_levels", y, [f0])
    oneway = scipy.stats.f_oneway(*[y[f0 == level] for level in np.unique(f0)])
    assert math.isclose(case["terms"][0]["f"], oneway.statistic, rel_tol=1e-9)
    assert math.isclose(case["terms"][0]["p"], oneway.pvalue, rel_tol=1e-9)
    cases.append(case)

    # Two factors, balanced 3 x 4 with 5 per cell.
    f0, f1 = np.meshgrid(np.arange(3), np.arange(4), indexing="ij")
    f0, f1 = np.repeat(f0.ravel(), 5), np.repeat(f1.ravel(), 5)
    order = rng.permutation(len(f0))
    f0, f1 = f0[order], f1[order]
    cases.append(anova2_case("two_factors_balanced_3x4", additive(
        rng, [f0, f1], [[0.0, 0.04, -0.03], [0.0, -0.02, 0.05, 0.01]], sd=0.1), [f0, f1]))

    # Two factors, unbalanced 2 x 3 (random cell sizes 2..15).
    sizes = rng.integers(2, 16, (2, 3))
    f0 = np.concatenate([np.full(sizes[i, j], i) for i in range(2) for j in range(3)])
    f1 = np.concatenate([np.full(sizes[i, j], j) for i in range(2) for j in range(3)])
    order = rng.permutation(len(f0))
    f0, f1 = f0[order], f1[order]
    cases.append(anova2_case("two_factors_unbalanced_2x3", additive(
        rng, [f0, f1], [[0.0, 0.06], [0.0, -0.03, 0.02]]), [f0, f1]))

    # Three factors of 2, 4 and 8 levels (a question's tags on three dimensions), n = 300.
    n = 300
    f0 = rng.integers(0, 2, n)
    f1 = rng.choice(4, n, p=[0.4, 0.3, 0.2, 0.1])
    f2 = rng.choice(8, n, p=rng.dirichlet(np.full(8, 3.0)))
    cases.append(anova2_case("three_factors_2_4_8_n300", additive(
        rng, [f0, f1, f2], [[0.0, 0.03], [0.0, -0.02, 0.04, 0.01],
                            np.round(rng.normal(0.0, 0.03, 8), 3)], sd=0.15), [f0, f1, f2]))

    # Three factors with correlated labels: f1 follows f0 for 70 %, f2 follows f1 for 60 %.
    f0 = rng.integers(0, 2, n)
    f1 = np.where(rng.random(n) < 0.7, 2 * f0 + rng.integers(0, 2, n), rng.integers(0, 4, n))
    f2 = np.where(rng.random(n) < 0.6, (2 * f1 + 1) % 8, rng.integers(0, 8, n))
    cases.append(anova2_case("three_factors_correlated_n300", additive(
        rng, [f0, f1, f2], [[0.0, 0.05], [0.0, 0.02, -0.03, 0.01],
                            np.round(rng.normal(0.0, 0.03, 8), 3)], sd=0.15), [f0, f1, f2]))

    # Four factors of 2, 4, 8 and 3 levels, n = 1000; f1 has a strong effect (tiny p).
    n = 1000
    f0 = rng.integers(0, 2, n)
    f1 = rng.integers(0, 4, n)
    f2 = rng.choice(8, n, p=rng.dirichlet(np.full(8, 3.0)))
    f3 = np.array([5, 11, 20])[rng.integers(0, 3, n)]
    codes3 = np.searchsorted([5, 11, 20], f3)
    cases.append(anova2_case("four_factors_2_4_8_3_n1000", additive(
        rng, [f0, f1, f2, codes3], [[0.0, 0.01], [0.0, 0.1, -0.08, 0.15],
                                    np.round(rng.normal(0.0, 0.02, 8), 3), [0.0, 0.0, 0.01]],
        sd=0.15), [f0, f1, f2, f3]))

    # One level of f1 appears exactly once.
    n = 40
    f0 = rng.integers(0, 3, n)
    f1 = rng.integers(0, 3, n)
    f1[rng.integers(0, n)] = 3
    assert np.sum(f1 == 3) == 1
    cases.append(anova2_case("singleton_level", additive(
        rng, [f0, f1], [[0.0, 0.03, -0.02], [0.0, 0.02, 0.04, -0.05]]), [f0, f1]))

    # Rank-deficient: f1 is an identical copy of f0.
    def check_copy(case, reduced):
        """Both copies get the row of f0 in the model without the copy (pseudo-inverse noise)."""
        for k in (0, 1):
            got, want = case["terms"][k], reduced["terms"][0]
            assert got["df"] == want["df"]
            for key in ("ss", "f", "p"):
                assert math.isclose(got[key], want[key], rel_tol=1e-9), (k, key, got, want)
        for got, want in zip(case["terms"][2:], reduced["terms"][1:]):
            assert got["df"] == want["df"]
            for key in ("ss", "f", "p"):
                assert math.isclose(got[key], want[key], rel_tol=1e-9), (key, got, want)
        assert case["residual"]["df"] == reduced["residual"]["df"]
        assert math.isclose(case["residual"]["ss"], reduced["residual"]["ss"], rel_tol=1e-9)

    n = 30
    f0 = rng.integers(0, 3, n)
    y = additive(rng, [f0], [[0.0, 0.05, -0.03]])
    case = anova2_case("rank_deficient_copy", y, [f0, f0.copy()])
    check_copy(case, anova2_case("reduced", y, [f0]))
    cases.append(case)

    n = 40
    f0 = rng.integers(0, 3, n)
    f2 = rng.integers(0, 2, n)
    y = additive(rng, [f0, f2], [[0.0, 0.05, -0.03], [0.0, 0.04]])
    case = anova2_case("rank_deficient_copy_plus_one", y, [f0, f0.copy(), f2])
    check_copy(case, anova2_case("reduced", y, [f0, f2]))
    cases.append(case)
    return cases


def build():
    versions = {"numpy": np.__version__, "scipy": scipy.__version__,
                "statsmodels": statsmodels.__version__, "pandas": pd.__version__,
                "patsy": patsy.__version__}
    return grouped_cases([chi2_cases, anova2_cases], versions, SEED)


def main():
    oracle_main(__doc__, build, DEFAULT_OUT_DIR, FILE_NAME)


if __name__ == "__main__":
    main()
