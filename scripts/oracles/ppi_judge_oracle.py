#!/usr/bin/env python3
"""The ppi-python oracle of hierarag-annotate's prediction-powered judge means (issue 46): an LLM
judge's grades of every answer of three systems, people's ratings of a random sample of them,
and the rows `hierarag_annotate::judge_ppi` must produce from them.

Usage:
    .venv-oracles/bin/pip install -r scripts/oracles/requirements.txt
    .venv-oracles/bin/python scripts/oracles/ppi_judge_oracle.py [OUT_DIR]

OUT_DIR defaults to crates/hierarag-annotate/tests/data. The script writes `ppi_judge_cases.json`
there, one entry per line: `versions` (numpy, ppi-python), `alpha`, `systems`, then the input,
built deterministically (`numpy.random.default_rng(SEED)`, SEED = 20261214):

- `questions`: 240 questions with their categories: qc/coarse simple or complex, and on about a
  third a second category lv/medium short or long (factorial questions); 3 in qc/coarse/rare (at
  most one of them rated), 4 in lv/fine/every_rated (all rated), 5 with none (overall only);
- `judge`: the judge's grades (correctness 0-3, hallucination 0-2 or null where it saw no
  passage) of every answer; gamma did not answer 12 questions;
- `items` and `ratings`: the answer items people were shown, and their ratings (one or two
  annotators; hallucination left unrated now and then): every system's answer to 60 questions
  drawn at random, 8 answers of one system only, 4 items nobody rated, and one rated answer the
  judge did not grade.

Then `rows`: for each scale (correctness / 3, hallucination / 2), each system and each ordered
pair of systems (A before B, the difference A - B), overall and per category, computed here from
the definitions: Y the people's mean rating of a rated answer (or the difference of the two
systems' on questions where both were rated), Yhat the judge's on the same, Yhat_unlabeled the
judge's on the other judged answers (questions both systems' answers were judged on); then
`ppi_py.ppi_mean_pointestimate` and `ppi_mean_ci(alpha=alpha)` (null with fewer than 2 rated or
no unrated answer), `ppi_py.classical_mean_ci` of the judge's values over all judged answers and
of the people's over the rated ones (null under 2 values), and the effective number of ratings
n_rated * (people-only width / PPI width)^2. Values have at most 15 significant digits on input.

`crates/hierarag-annotate/tests/it/ppi.rs` reads the committed file (no Python at test time).
Rerun this script after changing the cases or the pinned versions and commit the file.
"""

import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np
from ppi_py import classical_mean_ci, ppi_mean_ci, ppi_mean_pointestimate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stats_oracle import num, oracle_main  # noqa: E402

DEFAULT_OUT_DIR = Path(__file__).resolve().parents[2] / "crates/hierarag-annotate/tests/data"
FILE_NAME = "ppi_judge_cases.json"
SEED = 20261214
ALPHA = 0.05
SYSTEMS = ["alpha", "beta", "gamma"]
# (name, maximum, index in a judge entry / rating)
SCALES = [("correctness", 3), ("hallucination", 2)]


def category(dimension, level, name):
    return {"dimension": dimension, "level": level, "category": name}


def build_input(rng):
    n_questions = 240
    ids = [f"q{i:03}" for i in range(n_questions)]
    order = rng.permutation(n_questions)
    rare = set(order[:3])
    every_rated = set(order[3:7])
    uncategorised = set(order[7:12])
    questions = []
    for i, qid in enumerate(ids):
        if i in uncategorised:
            cats = []
        elif i in rare:
            cats = [category("qc", "coarse", "rare")]
        elif i in every_rated:
            cats = [category("lv", "fine", "every_rated")]
        else:
            cats = [category("qc", "coarse", "simple" if rng.random() < 0.55 else "complex")]
            if rng.random() < 0.35:
                cats.append(category("lv", "medium", "short" if rng.random() < 0.5 else "long"))
        questions.append({"id": qid, "categories": cats})

    # Each answer's true quality, and the judge's grades: one level too high 30 % of the time,
    # a random grade 15 % of the time.
    skill = {"alpha": 0.65, "beta": 0.5, "gamma": 0.55}
    truth = {}
    judge = []
    unanswered = set(rng.choice([i for i in range(n_questions) if i not in every_rated],
                                12, replace=False))
    for system in SYSTEMS:
        for i, qid in enumerate(ids):
            hard = any(c["category"] == "complex" for c in questions[i]["categories"])
            p = skill[system] - (0.15 if hard else 0.0)
            correctness = int(rng.binomial(3, p))
            hallucination = int(rng.binomial(2, 0.6 - 0.5 * p))
            truth[(qid, system)] = (correctness, hallucination)
            if system == "gamma" and i in unanswered:
                continue
            grades = []
            for value, top in ((correctness, 3), (hallucination, 2)):
                u = rng.random()
                if u < 0.3:
                    value = min(value + 1, top)
                elif u < 0.45:
                    value = int(rng.integers(0, top + 1))
                grades.append(value)
            judge.append({"question_id": qid, "system": system, "correctness": grades[0],
                          "hallucination": grades[1] if rng.random() > 0.1 else None})

    # The rated sample: 60 questions (the every_rated ones among them, at most one rare one),
    # every system's answer to each.
    others = [i for i in range(n_questions)
              if i not in every_rated and i not in rare and i not in unanswered]
    sampled = sorted(every_rated) + [int(order[0])] + list(rng.choice(others, 55, replace=False))
    answers = [(ids[i], system) for i in sampled for system in SYSTEMS]
    extra = [i for i in others if i not in sampled]
    single = rng.choice(extra, 12, replace=False)
    answers += [(ids[i], SYSTEMS[k % 3]) for k, i in enumerate(single[:8])]
    unrated_items = [(ids[i], SYSTEMS[k % 3]) for k, i in enumerate(single[8:])]
    unjudged = (ids[next(i for i in sorted(unanswered) if i not in sampled)], "gamma")
    answers.append(unjudged)

    items = []
    ratings = []
    for qid, system in answers + unrated_items:
        item_id = f"answer-{qid}-{system}"
        items.append({"item_id": item_id, "question_id": qid, "system": system})
        if (qid, system) in unrated_items:
            continue
        correctness, hallucination = truth[(qid, system)]
        annotators = ["ann", "bob"] if rng.random() < 0.3 else ["ann"]
        for annotator in annotators:
            c = int(np.clip(correctness + rng.choice([-1, 0, 0, 0, 1]), 0, 3))
            h = int(np.clip(hallucination + rng.choice([-1, 0, 0, 0, 1]), 0, 2))
            ratings.append({"item_id": item_id, "annotator": annotator, "correctness": c,
                            "hallucination": h if rng.random() > 0.05 else None})
    return questions, judge, items, ratings


def mean_ci(values):
    if len(values) < 2:
        return None
    lo, hi = classical_mean_ci(np.array(values), alpha=ALPHA)
    return {"mean": num(np.mean(values)), "ci": [num(lo), num(hi)]}


def row(scale, system_a, system_b, cat, values):
    """values: (question, judge, people or None) in question order."""
    rated = [(p, j) for _, j, p in values if p is not None]
    unrated = [j for _, j, p in values if p is None]
    y = np.array([p for p, _ in rated])
    yhat = np.array([j for _, j in rated])
    people = mean_ci(list(y))
    out = {"scale": scale, "system_a": system_a, "system_b": system_b, "category": cat,
           "n_rated": len(rated), "n_judged": len(values), "ppi": None,
           "judge_only": mean_ci(list(yhat) + unrated), "people_only": people}
    # A judge that gives every answer the same grade has no PPI estimate (lambda is 0/0); none
    # of the rows here has one.
    assert len(set(list(yhat) + unrated)) > 1 or len(values) < 2
    if len(rated) >= 2 and unrated:
        u = np.array(unrated)
        estimate = float(np.ravel(ppi_mean_pointestimate(y, yhat, u))[0])
        lo, hi = (float(np.ravel(v)[0]) for v in ppi_mean_ci(y, yhat, u, alpha=ALPHA))
        assert np.isfinite([estimate, lo, hi]).all(), (scale, system_a, system_b, cat)
        effective = len(rated) * ((people["ci"][1] - people["ci"][0]) / (hi - lo)) ** 2
        out["ppi"] = {"estimate": num(estimate), "ci": [num(lo), num(hi)],
                      "effective_n_rated": num(effective)}
        if system_b is not None:
            out["ppi"]["excludes_zero"] = bool(lo > 0 or hi < 0)
    return out


def stratified(scale, system_a, system_b, values, categories_of):
    rows = [row(scale, system_a, system_b, None, values)]
    present = sorted({tuple(c.values()) for q, _, _ in values for c in categories_of[q]},
                     key=lambda c: (c[0], ["coarse", "medium", "fine"].index(c[1]), c[2]))
    for dimension, level, name in present:
        cat = category(dimension, level, name)
        rows.append(row(scale, system_a, system_b, cat,
                        [v for v in values if cat in categories_of[v[0]]]))
    return rows


def build():
    rng = np.random.default_rng(SEED)
    questions, judge, items, ratings = build_input(rng)
    categories_of = {q["id"]: q["categories"] for q in questions}
    item_of = {i["item_id"]: (i["question_id"], i["system"]) for i in items}
    rows = []
    for scale, top in SCALES:
        graded = {s: {} for s in SYSTEMS}
        for entry in judge:
            if entry[scale] is not None:
                graded[entry["system"]][entry["question_id"]] = entry[scale] / top
        by_answer = {}
        for rating in ratings:
            if rating[scale] is not None:
                by_answer.setdefault(item_of[rating["item_id"]], []).append(rating[scale])
        people = {s: {} for s in SYSTEMS}
        for (qid, system), values in by_answer.items():
            if qid in graded[system]:
                people[system][qid] = float(np.mean(values)) / top
        for system in SYSTEMS:
            values = [(q, graded[system][q], people[system].get(q))
                      for q in sorted(graded[system])]
            rows += stratified(scale, system, None, values, categories_of)
        for a_index, a in enumerate(SYSTEMS):
            for b in SYSTEMS[a_index + 1:]:
                values = []
                for q in sorted(set(graded[a]) & set(graded[b])):
                    both = q in people[a] and q in people[b]
                    values.append((q, graded[a][q] - graded[b][q],
                                   people[a][q] - people[b][q] if both else None))
                rows += stratified(scale, a, b, values, categories_of)
    versions = {"numpy": np.__version__, "ppi-python": version("ppi-python")}
    return {"versions": versions, "alpha": ALPHA, "systems": SYSTEMS, "questions": questions,
            "judge": judge, "items": items, "ratings": ratings, "rows": rows}


def main():
    oracle_main(__doc__, build, DEFAULT_OUT_DIR, FILE_NAME)


if __name__ == "__main__":
    main()
