"""``Run.answer_with``: a Python function (sync or async) answers the benchmark as a system of
the run; failures are recorded and retried, an interrupted call resumes, and the system's
answers are scored and analysed like any other."""

from __future__ import annotations

import asyncio
import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import hierarag

from conftest import _embedding, write_config


def _jsonl(path: Path) -> list:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture()
def fresh_run(tmp_path, mock_url):
    return hierarag.run(write_config(tmp_path, mock_url), quiet=True)


def rag(question: str) -> dict:
    """A ten-line RAG function: the run's own index as the retriever, the first passage as
    the answer."""
    words = question.rstrip("?").split()
    return {"answer": " ".join(words[-4:]), "contexts": [" ".join(words[-6:])]}


def test_a_sync_function_answers_as_a_system_of_the_run(fresh_run):
    run = fresh_run
    outcome = run.answer_with(rag, system="mine", concurrency=4, quiet=True)
    assert outcome == {"items": 8, "resumed": 0, "written": 8, "failed": 0}
    assert run.systems == ["bm25", "dense", "mine"]
    folder = run.path / "systems" / "mine"
    answers = _jsonl(folder / "answers.jsonl")
    benchmark = _jsonl(run.path / "benchmark.jsonl")
    assert [a["id"] for a in answers] == [q["id"] for q in benchmark]
    for answer, question in zip(answers, benchmark):
        assert answer["answer"] == rag(question["question"])["answer"]
        assert answer["llm"]["backend"] == "system" and answer["retriever"] == "python"
    assert len(_jsonl(folder / "scores.jsonl")) == 8
    # The new system is compared with the others.
    hierarag.compare(run.path, quiet=True)
    names = {s["name"] for s in json.loads((run.path / "comparison.json").read_text())["systems"]}
    assert names == {"bm25", "dense", "mine"}
    # A second call has nothing to do.
    again = run.answer_with(rag, system="mine", quiet=True)
    assert again == {"items": 8, "resumed": 8, "written": 0, "failed": 0}


def test_an_async_function_and_one_that_raises_for_some_questions(fresh_run):
    run = fresh_run
    calls = []

    async def flaky(question: str) -> str:
        calls.append(question)
        await asyncio.sleep(0.01)
        if "fact" in question and len(calls) % 2 == 0:
            raise RuntimeError(f"no luck with {question!r}")
        return "an answer"

    outcome = run.answer_with(flaky, system="async", evaluate=False, quiet=True)
    assert outcome["failed"] > 0 and outcome["written"] + outcome["failed"] == 8
    folder = run.path / "systems" / "async"
    failures = _jsonl(folder / "answer.failures.jsonl")
    answers = _jsonl(folder / "answers.jsonl")
    assert failures and len(answers) + len(failures) == 8
    assert all("RuntimeError: no luck with" in f["reason"] for f in failures)
    assert all(a["answer"] == "an answer" for a in answers)
    failed_ids = {f["item_id"] for f in failures}

    # Retried: only the failed questions are asked again.
    asked = []

    def steady(question: str) -> str:
        asked.append(question)
        return "an answer"

    outcome = run.answer_with(steady, system="async", quiet=True)
    assert outcome["written"] == len(failed_ids) and outcome["failed"] == 0
    benchmark = {q["id"]: q["question"] for q in _jsonl(run.path / "benchmark.jsonl")}
    assert sorted(asked) == sorted(benchmark[i] for i in failed_ids)
    assert len(_jsonl(folder / "answers.jsonl")) == 8


def test_a_reply_of_the_wrong_shape_is_raised_before_the_stage_records_anything(fresh_run):
    with pytest.raises(TypeError, match="the function returned int"):
        fresh_run.answer_with(lambda q: 42, system="wrong", evaluate=False, quiet=True)
    assert not (fresh_run.path / "systems" / "wrong").exists()
    assert "wrong" not in fresh_run.systems


def test_a_reply_of_the_wrong_shape_for_some_questions_is_a_recorded_failure(fresh_run):
    def sometimes(question: str):
        return 42 if "fact" in question else "an answer"

    outcome = fresh_run.answer_with(sometimes, system="wrong", evaluate=False, quiet=True)
    assert 0 < outcome["failed"] < 8
    failures = _jsonl(fresh_run.path / "systems" / "wrong" / "answer.failures.jsonl")
    assert "the function returned int" in failures[0]["reason"]


def test_a_failed_attempt_does_not_poison_the_run(fresh_run):
    run = fresh_run

    def failing(question: str) -> str:
        raise RuntimeError(f"no answer to {question!r}")  # each message its own

    outcome = run.answer_with(failing, system="failing", evaluate=False, quiet=True)
    assert outcome["failed"] == 8
    assert "failing" not in run.systems, "a system without answers is not registered"
    run.answer_with(rag, system="unscored", evaluate=False, quiet=True)
    assert "unscored" in run.systems

    # compare leaves out the system without scores and compares the others.
    hierarag.compare(run.path, quiet=True)
    comparison = run.path / "comparison.json"
    names = {s["name"] for s in json.loads(comparison.read_text())["systems"]}
    assert names == {"bm25", "dense"}
    before = comparison.read_bytes()
    # Fewer than two left: exit 1, and the comparison there is kept.
    with pytest.raises(hierarag.HieraragError) as raised:
        hierarag.compare(run.path, systems=["bm25", "unscored"], quiet=True)
    assert raised.value.code == 1
    assert comparison.read_bytes() == before

    run.remove_system("unscored")
    assert "unscored" not in run.systems
    assert not (run.path / "systems" / "unscored").exists()
    with pytest.raises(hierarag.HieraragError):
        run.remove_system("bm25")  # a system of the run's config
    assert "bm25" in run.systems


def test_an_interrupted_call_resumes_to_the_same_answers(tmp_path, mock_url):
    config = write_config(tmp_path, mock_url)
    run = hierarag.run(config, quiet=True)
    run.answer_with(rag, system="straight", evaluate=False, quiet=True)
    straight_bytes = (run.path / "systems" / "straight" / "answers.jsonl").read_bytes()

    # A slow function in another process, killed after some answers are written.
    script = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        import hierarag
        from test_answer_with import rag
        def slow(question):
            time.sleep(0.4)
            return rag(question)
        hierarag.Run({str(run.path)!r}).answer_with(slow, system="killed", concurrency=1,
                                                    evaluate=False, quiet=True)
        """
    )
    child = subprocess.Popen([sys.executable, "-c", script])
    answers = run.path / "systems" / "killed" / "answers.jsonl"
    deadline = time.time() + 60
    while time.time() < deadline:
        if answers.exists() and len(_jsonl(answers)) >= 3:
            break
        time.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    done = len(_jsonl(answers))
    assert 3 <= done < 8, done

    asked = []

    def counted(question):
        asked.append(question)
        return rag(question)

    outcome = run.answer_with(counted, system="killed", evaluate=False, quiet=True)
    assert outcome["resumed"] == done and outcome["written"] == 8 - done
    assert len(asked) == 8 - done
    # The same bytes as the uninterrupted call's, but for the system's name in each record.
    assert answers.read_bytes() == straight_bytes.replace(b'"straight"', b'"killed"')


def test_the_example_runs_top_to_bottom_on_a_finished_run(fresh_run):
    example = Path(__file__).parents[2] / "examples" / "python" / "quickstart.py"
    out = subprocess.run(
        [sys.executable, str(example), str(fresh_run.path)],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert "'written': 8" in out.stdout
    assert fresh_run.systems == ["bm25", "dense", "mine"]
    scores = fresh_run.scores(system="mine")
    # The contexts named their documents: retrieval is scored, and as the index ranks them.
    assert scores.ndcg_10.notna().all()
    comparison = json.loads((fresh_run.path / "comparison.json").read_text())
    assert {s["name"] for s in comparison["systems"]} == {"bm25", "dense", "mine"}
    assert (fresh_run.path / "systems" / "mine" / "analysis.json").exists()


def test_the_index_searches_as_the_command_line(fresh_run):
    index = hierarag.Index(fresh_run.path / "index")
    assert len(index) == 24
    query = "castle Example1 traveller"
    cli = subprocess.run(
        [str(Path(sys.executable).parent / "hierarag"), "search", "--index",
         str(fresh_run.path / "index"), "--json", "-k", "5", "--level", "chunk", query],
        capture_output=True, text=True,
    )
    assert cli.returncode == 0, cli.stderr
    assert index.search(query, k=5) == json.loads(cli.stdout)


def _corpus_text(run, doc_id: str) -> str:
    corpus = run.path.parent / "corpus.jsonl"
    return next(r["text"] for r in _jsonl(corpus) if r["id"] == doc_id)


def test_contexts_given_as_text_beside_contexts_with_ids_are_ranked_too(fresh_run):
    # The bug: when any context had an id, the contexts given only as text were dropped from
    # the ranking. Now each is looked up in the run's index, in the order given.
    run = fresh_run
    passage = _corpus_text(run, "doc05")

    def mixed(question: str) -> dict:
        return {
            "answer": "an answer",
            "contexts": [{"doc_id": "doc03", "text": "a passage"}, passage, {"doc_id": "doc11"}],
        }

    run.answer_with(mixed, system="mixed", evaluate=False, quiet=True)
    for answer in _jsonl(run.path / "systems" / "mixed" / "answers.jsonl"):
        assert answer["doc_ids"] == ["doc03", "doc05", "doc11"]
        assert answer["doc_ids_found"] == ["given", "contains", "given"]
        assert answer["contexts"] == ["a passage", passage]


def test_the_comparison_takes_the_new_system_in_without_compare(fresh_run):
    # The bug: `run.comparison` kept the systems of `hierarag run` until compare ran again.
    run = fresh_run
    assert {s["name"] for s in run.comparison.data["systems"]} == {"bm25", "dense"}
    run.answer_with(rag, system="mine", quiet=True)
    assert {s["name"] for s in run.comparison.data["systems"]} == {"bm25", "dense", "mine"}
    # The DataFrame reads `means[system][category]` (it used to read it the other way round,
    # which dropped systems beyond the level's number of categories).
    means = run.comparison.means
    assert set(means.system) == {"bm25", "dense", "mine"}
    level = run.comparison.data["levels"][0]
    metric = level["metrics"][0]
    for s, system in enumerate(metric["systems"]):
        for k, category in enumerate(c["category"] for c in level["categories"]):
            [row] = means[
                (means.set == level["set"]) & (means.dimension == level["dimension"])
                & (means.level == level["level"]) & (means.metric == metric["metric"])
                & (means.system == system) & (means.category == category)
            ].to_dict("records")
            expected = metric["means"][s][k]
            assert row["mean"] == expected or (expected is None and row["mean"] != row["mean"])


def test_compare_quiet_prints_no_table(finished_run, capfd):
    hierarag.compare(finished_run.path, quiet=True)
    printed = capfd.readouterr()
    assert printed.out == "" and printed.err == ""
    # Without quiet, the table is printed as on the command line.
    hierarag.compare(finished_run.path)
    assert "bm25" in capfd.readouterr().out


def test_answers_are_scored_with_the_runs_embeddings_when_its_config_file_is_gone(
    tmp_path, mock_url
):
    # The bug: without the config file, answer_with scored with the default model (MiniLM),
    # not the run's `[embeddings]` (here the mock's API model).
    config = write_config(tmp_path, mock_url)
    run = hierarag.run(config, quiet=True)
    config.unlink()
    run.answer_with(rag, system="mine", quiet=True)
    manifest = json.loads((run.path / "manifest.json").read_text())
    [usage] = manifest["stages"]["evaluate:mine"]["usage"]
    assert usage["role"] == "embeddings"
    assert usage["model"] == "mock-embed", usage
    # CS is the cosine of the mock's embeddings of the answer and the reference.
    references = {q["id"]: q["answer"] for q in _jsonl(run.path / "benchmark.jsonl")}
    answers = {a["id"]: a["answer"] for a in run.answers(system="mine").to_dict("records")}
    for row in run.scores(system="mine").to_dict("records"):
        a, b = _embedding(answers[row["id"]]), _embedding(references[row["id"]])
        cosine = sum(x * y for x, y in zip(a, b)) / math.sqrt(
            sum(x * x for x in a) * sum(y * y for y in b)
        )
        assert row["cs"] == pytest.approx(cosine, abs=1e-6), row["id"]
