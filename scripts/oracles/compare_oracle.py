#!/usr/bin/env python3
"""The scipy / statsmodels / pingouin oracle of hierarag-stats' system comparisons (docs/design.md,
"Analysis"): paired tests, the mixed ANOVA, Kendall's tau, Holm and the paired bootstrap.

Usage:
    .venv-oracles/bin/pip install -r scripts/oracles/requirements.txt
    .venv-oracles/bin/python scripts/oracles/compare_oracle.py [OUT_DIR]

OUT_DIR defaults to crates/hierarag-stats/tests/data. The script writes `compare_cases.json`
there: a `versions` entry (numpy, scipy, statsmodels, pandas, pingouin), then inputs built
deterministically (group k = 0..5 of the list below draws from its own
`numpy.random.default_rng(SEED + k)`, SEED = 20260419, so that adding a case to one group leaves
the other groups' bytes as they were) and, for each, the values the reference packages compute.
One case per line, grouped by function; NaN and infinite results are written as null (JSON has
neither).

Every input value has at most 15 significant digits (asserted below): serde_json, without its
`float_roundtrip` feature, parses such a number to exactly the double that Python wrote, whereas a
17-digit one can come back an ulp off. The test then computes on the very doubles the reference
saw, so that the ties and zeros of a - b are the same on both sides. CS-like values are
clip(normal(mean, sd), 0, 1) rounded to 6 decimals (12 for the tie-free Wilcoxon cases, redrawn
until a - b has neither ties nor zeros); where ties or zeros are wanted, values lie on a dyadic
grid (multiples of 2^-10 or 2^-7, "about 3 / 2 decimals"), on which a - b is exact: b on the grid
and a = b + d with d from a few dyadic values (+-1/4, -1/8, 1/16, 1/8, 3/16), distinct multiples of
1/1024, or zeros, as each case needs (asserted: a - b == d, a and b in [0, 1]).

- `ttest_rel`: `scipy.stats.ttest_rel(a, b)` with its defaults (statistic -> t, pvalue -> p):
  CS-like a with b = a + N(-0.02, 0.05) noise for n 2, 3, 5, 10, 30, 200 and 2,000; a common
  offset of 1e6 (values rounded to 8 decimals, 15 digits); a tiny p (n 500, strong shift,
  p ~ 1e-79); a = b (scipy: t and p NaN -> null); a constant non-zero difference of +-0.25 (scipy:
  t = +-inf -> null, p = 0); n = 1 (scipy: NaN, NaN -> null, null).
- `wilcoxon`: `scipy.stats.wilcoxon(a, b)` with all its defaults (zero_method="wilcox",
  correction=False, method="auto"), statistic = min(R+, R-) and p. scipy 1.17 picks, with n the
  number of pairs including zero differences: n > 50 -> asymptotic normal (tie-corrected variance,
  zeros dropped); else no ties among |d| and no zero d -> the exact null distribution; else n <= 13
  -> an exact permutation test over all 2^n sign flips (deterministic); else asymptotic. The case
  name starts with the branch it exercises (each asserted when the case is built): `exact_*`
  n 1, 5, 10, 20, 40 (all d > 0: p = 2^-39) and 50; `permutation_*` n 8 with ties, n 10 with
  zeros, n 13 with ties and zeros, n 10 with |d| tied across opposite signs, n 10 with one
  non-zero d (scipy: statistic 0, p 1), n 10 with every d zero (scipy: statistic 0, p 1, no
  NaN); `asymptotic_*` n 14 with ties, n 30 with zeros, n 50 with ties and zeros, n 24 with
  opposite-sign ties, n 51, 200 and 2,000 continuous, n 200 on the 2^-7 grid (many ties, some
  zeros), n 300 with a tiny p, n 30 with one non-zero d (count 1: z = 1, p = 0.3173), and n 30
  with every d zero (scipy: statistic 0, p NaN -> null, since 0 / 0 in z).
- `mixed_anova`: `pingouin.mixed_anova(data, dv="y", within="system", subject="question",
  between="category")` of the long table built from `y` (questions x systems) and `groups` (the
  category of each question; questions interleave across categories). Rows "category", "system"
  and "Interaction" -> `between`, `within`, `interaction`, with SS, DF1, DF2, F, p_unc (the
  uncorrected p, also where pingouin adds p_GG_corr) and np2 -> ss, df1, df2, f, p, np2. Cases:
  2 systems x 2 categories (n 10 each); 3 x 4 with n 5, 12, 7, 30; 4 x 8 with n 20..60; 2 x 3
  where one category has a single question; 3 x 4 CS-like with an interaction (system 2 worse in
  category 3); the paper's size (2 systems, 4 categories of 252, 265, 265, 218 questions); two
  identical systems (2 x 3) and three identical systems (3 x 3). For identical systems pingouin's
  SS_system and its interaction SS = SS_total - (SS_resall + SS_system + SS_category) are rounding
  noise (0 or +-2.2e-16, 1e-30), as is the within error term, so `within` and `interaction` are
  whatever that noise gives: with two systems SS_system = 0, F 0, p 1, np2 0, and interaction
  SS -2.2e-16, F -7.33, p 1, np2 -2 (negative); with three, F = +inf (written null) with p 0 and
  np2 1 for both. Tests should only check `between` (and the degrees of freedom) there. pingouin
  raised for none of the cases.
- `kendall`: `scipy.stats.kendalltau(x, y)` with its defaults (tau-b), statistic only: x = 1, 2, 3
  against all six permutations; n 4 with ties in x; n 4 and n 6 with ties in both; constant x
  (NaN -> null); n 8 random; n 2; n 50 CS-like rounded to 2 decimals (many ties).
- `holm`: `statsmodels.stats.multitest.multipletests(p, method="holm")[1]` of 2, 4 and 8
  p-values: ties, values near and at 1 (adjusted values capped at 1), unsorted input where the
  running maximum raises later values, and random ones.
- `bootstrap`: an independent numpy reference of the paired bootstrap of a mean difference:
  d = a - b, `resamples` = 20,000 resamples of d with replacement (`rng.integers(0, n,
  (resamples, n))` of this group's generator), replicate = mean of a resample; `mean` and `sd`
  (ddof=1) of the replicates and their `numpy.percentile` at 2.5 and 97.5 (`lo`, `hi`). Our
  bootstrap uses its own generator, so the test compares within Monte Carlo error. CS-like a, b
  of n 8, 40 and 300.

`crates/hierarag-stats/tests/` reads the committed file (no Python at test time) and requires our
values to equal these. Rerun this script after changing the cases or the pinned package versions
(scripts/oracles/requirements.txt: numpy, scipy, statsmodels, pandas, pingouin) and commit the
file; the same versions always write the same bytes.
"""

import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pingouin
import scipy
import scipy.stats
import statsmodels
from statsmodels.stats.multitest import multipletests

# The same one-case-per-line writer as the other stats oracle (a changed case is a one-line diff).
sys.path.insert(0, str(Path(__file__).resolve().parent))
from stats_oracle import grouped_cases, inputs, num, oracle_main  # noqa: E402

DEFAULT_OUT_DIR = Path(__file__).resolve().parents[2] / "crates/hierarag-stats/tests/data"
FILE_NAME = "compare_cases.json"
SEED = 20260419
BOOTSTRAP_RESAMPLES = 20000
# The paper's Table 4 cell sizes, used as the per-category question counts of the paper-size case.
PAPER_SIZES = (252, 265, 265, 218)


def cs(rng, n, mean=0.6, sd=0.15, decimals=6):
    """CS-like values in [0, 1]: clip(normal(mean, sd)) rounded to 6 decimals."""
    return np.round(np.clip(rng.normal(mean, sd, n), 0.0, 1.0), decimals)


def cs_near(rng, a, shift, sd, decimals=6):
    """a + normal(shift, sd) noise, clipped to [0, 1] and rounded to 6 decimals."""
    return np.round(np.clip(a + rng.normal(shift, sd, len(a)), 0.0, 1.0), decimals)


def grid(values, bits):
    """Values rounded to the nearest multiple of 2^-bits: exact doubles, a - b exact."""
    return np.round(np.asarray(values) * 2.0**bits) / 2.0**bits


def ties_and_zeros(a, b):
    """(has ties among the non-zero |a - b|, has a zero a - b) as scipy sees them."""
    d = np.asarray(a) - np.asarray(b)
    nonzero = np.abs(d[d != 0])
    return len(np.unique(nonzero)) < len(nonzero), bool(np.any(d == 0))


def wilcoxon_branch(a, b):
    """The branch scipy 1.17's wilcoxon(method="auto") takes for these pairs."""
    ties, zeros = ties_and_zeros(a, b)
    if len(a) > 50:
        return "asymptotic"
    if not (ties or zeros):
        return "exact"
    return "permutation" if len(a) <= 13 else "asymptotic"


# ------------------------------------------------------------------------------------------------

def ttest_rel_cases(rng):
    cases = []

    def add(name, a, b):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # zero variance, n = 1
            result = scipy.stats.ttest_rel(a, b)
        cases.append({"name": name, "a": inputs(a), "b": inputs(b),
                      "t": num(result.statistic), "p": num(result.pvalue)})

    for n in [2, 3, 5, 10, 30, 200, 2000]:
        a = cs(rng, n)
        add(f"cs_n{n}", a, cs_near(rng, a, -0.02, 0.05))
    a = np.round(1e6 + rng.normal(0.0, 0.1, 50), 8)
    add("offset_1e6_n50", a, np.round(a + rng.normal(0.01, 0.05, 50), 8))
    a = cs(rng, 500, 0.7, 0.1)
    add("tiny_p_n500", a, cs_near(rng, a, -0.1, 0.1))
    a = cs(rng, 12)
    add("identical_n12", a, a.copy())
    a = grid(rng.uniform(0.25, 1.0, 9), 10)
    add("constant_difference_n9", a, a - 0.25)
    add("constant_difference_negative_n9", a - 0.25, a)
    add("n1", np.array([0.625]), np.array([0.5]))
    return cases


def wilcoxon_cases(rng):
    cases = []

    def add(name, a, b):
        branch = wilcoxon_branch(a, b)
        assert name.startswith(branch + "_"), (name, branch)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # 0 / 0 when every d is zero
            result = scipy.stats.wilcoxon(a, b)
        cases.append({"name": name, "a": inputs(a), "b": inputs(b),
                      "statistic": num(result.statistic), "p": num(result.pvalue)})

    def continuous(n, shift=-0.03, sd=0.08):
        """CS-like pairs (12 decimals), redrawn until a - b has no ties and no zeros."""
        for _ in range(100):
            a = cs(rng, n, 0.5, 0.12, decimals=12)
            b = cs_near(rng, a, shift, sd, decimals=12)
            if ties_and_zeros(a, b) == (False, False):
                return a, b
        raise AssertionError("no tie-free draw")

    def on_grid(d):
        """b on the 2^-10 grid, a = b + d (exact: d is dyadic), both in [0, 1]."""
        d = np.asarray(d, dtype=float)
        b = grid(np.clip(rng.normal(0.5, 0.15, len(d)), np.maximum(0.0, -d),
                         np.minimum(1.0, 1.0 - d)), 10)
        a = b + d
        assert np.all((a >= 0) & (a <= 1)) and np.array_equal(a - b, d)
        return a, b

    def distinct(n, zeros=0, positive=0.7):
        """n differences: n - zeros distinct magnitudes k/1024 with random signs, then zeros."""
        magnitudes = (rng.choice(200, n - zeros, replace=False) + 1) / 1024
        signs = np.where(rng.random(n - zeros) < positive, 1.0, -1.0)
        return rng.permutation(np.concatenate([signs * magnitudes, np.zeros(zeros)]))

    tied_values = np.array([-0.25, -0.125, 0.0625, 0.125, 0.1875, 0.25])

    def tied(n, zeros=0):
        """n differences from a few dyadic values (ties), of which `zeros` are zero."""
        d = rng.choice(tied_values, n - zeros, p=[0.1, 0.15, 0.15, 0.25, 0.15, 0.2])
        return rng.permutation(np.concatenate([d, np.zeros(zeros)]))

    # Exact null distribution: no ties, no zeros, n <= 50.
    add("exact_n1", np.array([0.625]), np.array([0.5]))
    for n in [5, 10, 20, 50]:
        add(f"exact_n{n}", *continuous(n))
    add("exact_n40_all_positive", *on_grid(np.abs(distinct(40))))
    # Permutation test: ties or zeros, n <= 13.
    add("permutation_ties_n8", *on_grid(tied(8)))
    add("permutation_zeros_n10", *on_grid(distinct(10, zeros=2)))
    add("permutation_ties_zeros_n13", *on_grid(tied(13, zeros=3)))
    add("permutation_opposite_sign_ties_n10",
        *on_grid([0.125, -0.125, 0.25, -0.25, 0.375, 0.5, -0.0625, 0.1875, 0.0625, 0.3125]))
    add("permutation_one_nonzero_n10", *on_grid([0.0] * 6 + [0.25] + [0.0] * 3))
    add("permutation_all_zero_n10", *on_grid(np.zeros(10)))
    # Asymptotic: ties or zeros with 14 <= n <= 50, and every n > 50.
    add("asymptotic_ties_n14", *on_grid(tied(14)))
    add("asymptotic_zeros_n30", *on_grid(distinct(30, zeros=4)))
    add("asymptotic_ties_zeros_n50", *on_grid(tied(50, zeros=6)))
    add("asymptotic_opposite_sign_ties_n24",
        *on_grid(np.tile([0.125, -0.125, 0.25, -0.25, 0.375, -0.0625], 4)))
    for n in [51, 200, 2000]:
        add(f"asymptotic_n{n}", *continuous(n))
    a = cs(rng, 200)
    a, b = grid(a, 7), grid(cs_near(rng, a, -0.02, 0.06), 7)
    assert ties_and_zeros(a, b) == (True, True)
    add("asymptotic_grid7_ties_zeros_n200", a, b)
    a = cs(rng, 300, 0.7, 0.1)
    add("asymptotic_tiny_p_n300", a, cs_near(rng, a, -0.08, 0.06))
    add("asymptotic_one_nonzero_n30", *on_grid([0.0] * 17 + [-0.125] + [0.0] * 12))
    add("asymptotic_all_zero_n30", *on_grid(np.zeros(30)))
    return cases


def mixed_anova_case(name, y, groups):
    y = np.asarray(y, dtype=float)
    groups = np.asarray(groups, dtype=int)
    n_questions, n_systems = y.shape
    data = pd.DataFrame({
        "question": np.repeat(np.arange(n_questions), n_systems),
        "system": np.tile(np.arange(n_systems), n_questions),
        "category": np.repeat(groups, n_systems),
        "y": y.ravel(),
    })
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # 0 / 0 for identical systems
        table = pingouin.mixed_anova(data=data, dv="y", within="system", subject="question",
                                     between="category").set_index("Source")

    def term(source):
        row = table.loc[source]
        return {"ss": num(row["SS"]), "df1": float(row["DF1"]), "df2": float(row["DF2"]),
                "f": num(row["F"]), "p": num(row["p_unc"]), "np2": num(row["np2"])}

    return {"name": name, "y": [inputs(row) for row in y], "groups": [int(g) for g in groups],
            "between": term("category"), "within": term("system"),
            "interaction": term("Interaction")}


def mixed_layout(rng, sizes, system_effects, subject_sd=0.1, noise_sd=0.08, base=0.6,
                 category_effects=None, interaction=None):
    """y[question][system] = clip(base + category + system (+ interaction) + subject + noise),
    rounded to 6 decimals; questions shuffled so that the categories interleave."""
    n_systems = len(system_effects)
    if category_effects is None:
        category_effects = np.linspace(-0.05, 0.05, len(sizes))
    groups = np.repeat(np.arange(len(sizes)), sizes)
    mean = base + np.asarray(category_effects)[groups][:, None] + np.asarray(system_effects)
    if interaction is not None:
        mean = mean + np.asarray(interaction)[groups]
    subject = rng.normal(0.0, subject_sd, (len(groups), 1))
    y = np.round(np.clip(mean + subject + rng.normal(0.0, noise_sd, (len(groups), n_systems)),
                         0.0, 1.0), 6)
    order = rng.permutation(len(groups))
    return y[order], groups[order]


def mixed_anova_cases(rng):
    cases = [
        mixed_anova_case("sys2_cat2_n10", *mixed_layout(rng, [10, 10], [0.0, -0.03])),
        mixed_anova_case("sys3_cat4_unequal", *mixed_layout(rng, [5, 12, 7, 30],
                                                            [0.0, -0.02, 0.01])),
        mixed_anova_case("sys4_cat8", *mixed_layout(rng, rng.integers(20, 61, 8),
                                                    [0.0, -0.02, 0.01, 0.03])),
        mixed_anova_case("sys2_cat3_singleton", *mixed_layout(rng, [9, 1, 14], [0.0, 0.04])),
    ]
    interaction = np.zeros((4, 3))
    interaction[3, 2] = -0.15  # system 2 is worse in category 3
    cases.append(mixed_anova_case("cs_interaction_sys3_cat4", *mixed_layout(
        rng, [30, 25, 35, 28], [0.0, -0.01, 0.02], interaction=interaction)))
    cases.append(mixed_anova_case("paper_size_sys2_cat4", *mixed_layout(
        rng, list(PAPER_SIZES), [0.0, -0.02], subject_sd=0.12, noise_sd=0.1,
        category_effects=[0.037, 0.072, -0.022, -0.022])))
    y, groups = mixed_layout(rng, [8, 11, 6], [0.0])
    cases.append(mixed_anova_case("identical_sys2_cat3", np.repeat(y, 2, axis=1), groups))
    y, groups = mixed_layout(rng, [7, 9, 12], [0.0])
    cases.append(mixed_anova_case("identical_sys3_cat3", np.repeat(y, 3, axis=1), groups))
    return cases


def kendall_cases(rng):
    cases = []

    def add(name, x, y):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # constant input
            tau = scipy.stats.kendalltau(x, y).statistic
        cases.append({"name": name, "x": inputs(x), "y": inputs(y), "tau": num(tau)})

    for y in [[1, 2, 3], [1, 3, 2], [2, 1, 3], [2, 3, 1], [3, 1, 2], [3, 2, 1]]:
        add("n3_" + "".join(map(str, y)), [1, 2, 3], y)
    add("n4_ties_x", [1, 1, 2, 3], [0.4, 0.1, 0.3, 0.9])
    add("n4_ties_both", [1, 1, 2, 2], [0.5, 0.7, 0.7, 0.9])
    add("n6_ties_both", [0.2, 0.2, 0.5, 0.5, 0.5, 0.9], [3, 1, 2, 2, 5, 5])
    add("constant_x", [0.5, 0.5, 0.5, 0.5, 0.5], [0.1, 0.2, 0.3, 0.4, 0.5])
    add("n8_random", np.round(rng.normal(0, 1, 8), 6), np.round(rng.normal(0, 1, 8), 6))
    add("n2", [1.0, 2.0], [2.0, 1.0])
    x = cs(rng, 50)
    add("n50_cs_ties", np.round(x, 2), np.round(cs_near(rng, x, 0.0, 0.1), 2))
    return cases


def holm_cases(rng):
    cases = []
    for name, p in [
            ("two", [0.01, 0.04]),
            ("two_tie", [0.03, 0.03]),
            ("two_near_one", [0.6, 0.99]),
            ("four_ties", [0.01, 0.02, 0.02, 0.04]),
            ("four_near_one", [0.9, 0.95, 0.999, 1.0]),
            ("four_unsorted", [0.3, 0.001, 0.4, 0.5]),
            ("eight_mixed", [0.001, 0.01, 0.01, 0.02, 0.2, 0.6, 0.99, 1.0]),
            ("eight_random", np.round(rng.uniform(0, 0.2, 8), 6))]:
        adjusted = multipletests(np.asarray(p, dtype=float), alpha=0.05, method="holm")[1]
        cases.append({"name": name, "p": inputs(p), "adjusted": [num(v) for v in adjusted]})
    return cases


def bootstrap_cases(rng):
    cases = []
    for n in [8, 40, 300]:
        a = cs(rng, n)
        b = cs_near(rng, a, -0.02, 0.08)
        d = a - b
        replicates = d[rng.integers(0, n, (BOOTSTRAP_RESAMPLES, n))].mean(axis=1)
        lo, hi = np.percentile(replicates, [2.5, 97.5])
        cases.append({"name": f"cs_n{n}", "a": inputs(a), "b": inputs(b),
                      "resamples": BOOTSTRAP_RESAMPLES, "mean": float(np.mean(replicates)),
                      "sd": float(np.std(replicates, ddof=1)), "lo": float(lo), "hi": float(hi)})
    return cases


def build():
    versions = {"numpy": np.__version__, "scipy": scipy.__version__,
                "statsmodels": statsmodels.__version__, "pandas": pd.__version__,
                "pingouin": pingouin.__version__}
    groups = [ttest_rel_cases, wilcoxon_cases, mixed_anova_cases, kendall_cases, holm_cases,
              bootstrap_cases]
    return grouped_cases(groups, versions, SEED)


def main():
    oracle_main(__doc__, build, DEFAULT_OUT_DIR, FILE_NAME)


if __name__ == "__main__":
    main()
