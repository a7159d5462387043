"""The Python API against the files the command line writes: the DataFrames hold the JSONL
files' values, the metrics equal ``hierarag eval``, and the ``hierarag`` command of the package
is the command line."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

import hierarag


def _jsonl(path: Path) -> list:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _same(value, expected) -> bool:
    # pandas shows a JSON null of a numeric column as NaN.
    if expected is None:
        return value is None or (isinstance(value, float) and math.isnan(value))
    if isinstance(expected, float) or isinstance(value, float):
        return value == expected
    return value == expected


def _frame_equals_file(frame, path: Path) -> None:
    records = _jsonl(path)
    assert len(frame) == len(records), path
    rows = frame.to_dict("records")
    for row, record in zip(rows, records):
        for field, expected in record.items():
            assert _same(row[field], expected), (path, record["id"], field, row[field], expected)


def test_a_run_is_read_as_dataframes_equal_to_its_files(finished_run):
    run = finished_run
    assert run.systems == ["bm25", "dense"]
    _frame_equals_file(run.benchmark, run.path / "benchmark.jsonl")
    assert len(run.benchmark) == 8
    for system in run.systems:
        folder = run.path / "systems" / system
        assert run.system_dir(system) == folder
        _frame_equals_file(run.scores(system=system), folder / "scores.jsonl")
        _frame_equals_file(run.answers(system=system), folder / "answers.jsonl")
    # The first system's by default.
    assert run.scores().equals(run.scores(system="bm25"))
    with pytest.raises(KeyError, match="no system 'nope'; its systems: bm25, dense"):
        run.scores(system="nope")


def test_the_analysis_levels_are_the_category_means_of_analysis_json(finished_run):
    analysis = finished_run.analysis
    data = json.loads((finished_run.path / "analysis.json").read_text())
    assert analysis.data == data
    levels = analysis.levels
    expected = [
        (level["set"], category["category"], category["n"], category["means"]["cs"])
        for level in data["levels"]
        for category in level["categories"]
    ]
    got = list(zip(levels["set"], levels["category"], levels["n"], levels["means.cs"]))
    assert got == expected
    assert levels["n"].sum() == 8
    # Each category's CS mean is the mean of its questions' CS in scores.jsonl.
    scores = finished_run.scores(system="bm25").set_index("id")
    benchmark = finished_run.benchmark.set_index("id")
    for _, row in levels.iterrows():
        ids = [
            i for i, categories in benchmark["categories"].items()
            if categories[0]["category"] == row["category"]
        ]
        assert row["means.cs"] == pytest.approx(scores.loc[ids, "cs"].mean(), abs=1e-12)


def test_the_comparison_tables_are_comparison_json(finished_run):
    comparison = finished_run.comparison
    data = json.loads((finished_run.path / "comparison.json").read_text())
    assert comparison.data == data
    differences = comparison.differences
    level = data["levels"][0]
    metric = level["metrics"][0]
    pair = metric["pairs"][0]
    rows = differences[
        (differences["set"] == level["set"]) & (differences["metric"] == metric["metric"])
    ]
    # The level as a whole first (no category: missing, as pandas shows it), then each category.
    assert rows["category"].isna().tolist() == [True] + [False] * len(level["categories"])
    assert list(rows["category"])[1:] == [c["category"] for c in level["categories"]]
    assert list(rows["difference"]) == [pair["overall"]["mean"]["value"]] + [
        c["mean"]["value"] for c in pair["categories"]
    ]
    means = comparison.means
    first = means[(means["set"] == level["set"]) & (means["metric"] == metric["metric"])]
    assert list(first["mean"]) == [m for by_system in metric["means"] for m in by_system]
    assert set(first["system"]) == {"bm25", "dense"}


def test_a_category_without_questions_has_a_row_of_n_0(finished_run):
    """Issue 57, point 3: comparison.json writes null for a category with no question in a
    level (`PairLevel::categories`); `differences` gives it a row with n 0 and no values
    instead of raising TypeError."""
    from hierarag._run import Comparison

    data = json.loads((finished_run.path / "comparison.json").read_text())
    level = data["levels"][0]
    pair = level["metrics"][0]["pairs"][0]
    pair["categories"][0] = None
    differences = Comparison(data).differences
    empty = differences[
        (differences["set"] == level["set"])
        & (differences["metric"] == level["metrics"][0]["metric"])
        & (differences["category"] == level["categories"][0]["category"])
        & (differences["a"] == pair["a"])
        & (differences["b"] == pair["b"])
    ]
    assert len(empty) == 1
    assert empty["n"].tolist() == [0]
    assert empty["difference"].isna().all() and empty["low"].isna().all()


def test_the_report_shows_inline(finished_run):
    report = finished_run.report()
    page = report._repr_html_()
    assert page.startswith("<iframe")
    assert "srcdoc=" in page and "<html" not in page  # escaped into the attribute
    assert "Run summary" in report.html or "hierarag" in report.html


def test_eval_text_equals_the_command_line(tmp_path):
    references = ["The cat sat on the mat.", "Paris is the capital of France.", "x"]
    predictions = ["A cat was sitting on the mat", "The capital of France is Paris.", ""]
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(
        "".join(
            json.dumps({"id": str(i), "reference": r, "prediction": p}) + "\n"
            for i, (r, p) in enumerate(zip(references, predictions))
        )
    )
    cli = subprocess.run(
        [str(Path(sys.executable).parent / "hierarag"), "eval", "text", "--pairs", str(pairs),
         "--no-cs", "--json"],
        check=True, capture_output=True, text=True,
    )
    assert hierarag.eval_text(references, predictions) == json.loads(cli.stdout)
    with pytest.raises(ValueError, match="3 references but 2 predictions"):
        hierarag.eval_text(references, predictions[:2])


def test_eval_text_in_korean_uses_its_tokenizers_as_the_command_line_does(tmp_path):
    references = ["서울 인구는 약 천만 명입니다.", "김치는 한국의 전통 발효 음식이다."]
    predictions = ["서울의 인구는 약 천만 명이다.", "한국 전통 발효 음식"]
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(
        "".join(
            json.dumps({"id": str(i), "reference": r, "prediction": p}) + "\n"
            for i, (r, p) in enumerate(zip(references, predictions))
        )
    )
    cli = subprocess.run(
        [str(Path(sys.executable).parent / "hierarag"), "eval", "text", "--pairs", str(pairs),
         "--no-cs", "--json", "--language", "ko"],
        check=True, capture_output=True, text=True,
    )
    korean = hierarag.eval_text(references, predictions, language="ko")
    assert korean == json.loads(cli.stdout)
    assert korean["tokenizers"] == {"rouge1": "cjk-bigram", "bleu": "char"}
    assert korean["pairs"][0]["rouge1"]["fmeasure"] == 0.625
    assert hierarag.eval_text(references, predictions)["pairs"][0]["rouge1"]["fmeasure"] == 0.0
    with pytest.raises(ValueError, match="unknown language"):
        hierarag.eval_text(references, predictions, language="kr")


def test_eval_retrieval_equals_the_command_line(tmp_path):
    qrels = {"q1": {"d1": 1, "d3": 2}, "q2": {"d2": 1}, "q3": {"d9": 1}}
    run = {"q1": {"d1": 0.5, "d2": 0.9, "d3": 0.1}, "q2": {"d2": 1.0, "d4": 1.0}}
    qrels_file = tmp_path / "qrels.txt"
    qrels_file.write_text(
        "".join(f"{q} 0 {d} {r}\n" for q, docs in qrels.items() for d, r in docs.items())
    )
    run_file = tmp_path / "run.trec"
    run_file.write_text(
        "".join(
            f"{q} Q0 {d} {rank} {s} t\n"
            for q, docs in run.items()
            for rank, (d, s) in enumerate(docs.items(), 1)
        )
    )
    cli = subprocess.run(
        [str(Path(sys.executable).parent / "hierarag"), "eval", "retrieval", "--qrels",
         str(qrels_file), "--run", str(run_file), "--json"],
        check=True, capture_output=True, text=True,
    )
    assert hierarag.eval_retrieval(qrels, run) == json.loads(cli.stdout)


def test_the_command_is_the_command_line():
    command = Path(sys.executable).parent / "hierarag"
    out = subprocess.run([str(command), "--version"], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == f"hierarag {hierarag.__version__}"
    bad = subprocess.run([str(command), "analyze", "--no-such-option"], capture_output=True,
                         text=True)
    assert bad.returncode == 1 and "--no-such-option" in bad.stderr
    with pytest.raises(hierarag.HieraragError) as error:
        hierarag.analyze("/nonexistent/run", quiet=True)
    assert error.value.code == 1
