"""A run directory as data: its benchmark, each system's answers and scores, the analysis and
the comparison as pandas DataFrames, and its HTML report shown inline in Jupyter. The files are
read and checked by the same Rust code as the command line; the DataFrames hold exactly the
values of the JSONL files (one row a line, one column a field)."""

from __future__ import annotations

import asyncio
import html
import json
import os
import warnings
from pathlib import Path
from typing import Any, Awaitable, Callable, Dict, List, Optional, Union

import pandas as pd

from . import _answering, _native

PathLike = Union[str, "os.PathLike[str]"]

#: What an answering function returns: the answer, or a dict with ``answer`` and optionally
#: ``contexts`` (texts, dicts with ``doc_id`` and/or ``text``, LangChain Documents or LlamaIndex
#: nodes, best first); LangChain's messages and ``create_retrieval_chain`` output and
#: LlamaIndex's ``Response`` are read too.
Reply = Union[str, Dict[str, Any], Any]
#: A function of the question (and, when it takes that keyword, ``question_id``), plain or
#: async; or a LangChain Runnable or a LlamaIndex query engine, passed as it is.
AnswerFn = Union[
    Callable[..., Union[Reply, Awaitable[Reply]]], _answering.Runnable, _answering.QueryEngine
]


def _frame(path: Path, kind: str) -> pd.DataFrame:
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file (has that stage run?)")
    return pd.DataFrame(json.loads(_native.read_records(os.fspath(path), kind)))


class Analysis:
    """``analysis.json`` of a system: the whole document as :attr:`data`, and its tables as
    DataFrames."""

    def __init__(self, data: Dict[str, Any]) -> None:
        self.data = data

    @property
    def settings(self) -> Dict[str, Any]:
        return self.data["settings"]

    @property
    def levels(self) -> pd.DataFrame:
        """One row per category of each analysed (set, dimension, level): its size, the mean
        of the analysed metric with its interval, the level's DiscPow and NMI, and every
        metric's mean (``means.cs``, ``means.map``, …)."""
        rows = []
        for level in self.data["levels"]:
            discpow = level.get("discpow") or {}
            for category in level["categories"]:
                row = {
                    "set": level["set"],
                    "dimension": level["dimension"],
                    "level": level["level"],
                    "category": category["category"],
                    "parent": category.get("parent"),
                    "n": category["n"],
                    "metric": category["metric"]["value"],
                    "metric_low": (category["metric"].get("ci") or [None, None])[0],
                    "metric_high": (category["metric"].get("ci") or [None, None])[1],
                    "discpow": discpow.get("value"),
                    "discpow_p": level.get("discpow_p"),
                    "nmi": level.get("nmi"),
                }
                row.update({f"means.{k}": v for k, v in category["means"].items()})
                rows.append(row)
        return pd.DataFrame(rows)

    @property
    def dimensions(self) -> pd.DataFrame:
        """Per dimension: the recommended granularity and the mean ρ."""
        return pd.json_normalize(self.data["dimensions"])

    @property
    def table1(self) -> pd.DataFrame:
        return pd.json_normalize(self.data["table1"])

    @property
    def table2(self) -> pd.DataFrame:
        return pd.json_normalize(self.data["table2"])

    @property
    def splits(self) -> pd.DataFrame:
        return pd.json_normalize(self.data["splits"])

    @property
    def refusals(self) -> Optional[pd.DataFrame]:
        """Refusal precision and recall per category, when questions are marked unanswerable."""
        refusals = self.data.get("refusals")
        return None if refusals is None else pd.DataFrame(refusals["categories"])

    def __repr__(self) -> str:
        return f"Analysis(metric={self.settings.get('metric')!r}, levels={len(self.data['levels'])})"


class Comparison:
    """``comparison.json`` of a run's systems: the whole document as :attr:`data`, and its
    per-category paired differences and means as DataFrames."""

    def __init__(self, data: Dict[str, Any]) -> None:
        self.data = data

    @property
    def differences(self) -> pd.DataFrame:
        """One row per (set, dimension, level, metric, pair of systems, category): the mean
        paired difference ``b − a`` with its interval, the t and Wilcoxon p-values (and Holm's
        over the level's categories), wins, ties and losses; ``category`` is None for the
        level as a whole. A category with no question in the level has ``n`` 0 and no values."""
        rows = []
        for level in self.data["levels"]:
            names = [c["category"] for c in level["categories"]]
            for metric in level["metrics"]:
                for pair in metric["pairs"]:
                    for category, test in [(None, pair["overall"]), *zip(names, pair["categories"])]:
                        # comparison.json holds null for a category without questions here.
                        test = test or {"n": 0}
                        mean = test.get("mean") or {}
                        ci = mean.get("ci") or [None, None]
                        rows.append({
                            "set": level["set"],
                            "dimension": level["dimension"],
                            "level": level["level"],
                            "metric": metric["metric"],
                            "a": pair["a"],
                            "b": pair["b"],
                            "category": category,
                            "n": test["n"],
                            "difference": mean.get("value"),
                            "low": ci[0],
                            "high": ci[1],
                            "t_p": test.get("t_p"),
                            "w_p": test.get("w_p"),
                            "t_p_holm": test.get("t_p_holm"),
                            "w_p_holm": test.get("w_p_holm"),
                            "wins": test.get("wins"),
                            "ties": test.get("ties"),
                            "losses": test.get("losses"),
                        })
        return pd.DataFrame(rows)

    @property
    def means(self) -> pd.DataFrame:
        """One row per (set, dimension, level, metric, category, system): the system's mean
        on the questions every system scored."""
        rows = []
        for level in self.data["levels"]:
            names = [c["category"] for c in level["categories"]]
            for metric in level["metrics"]:
                # `means[s][k]`: system s's mean on category k.
                for system, by_category in zip(metric["systems"], metric["means"]):
                    for category, mean in zip(names, by_category):
                        rows.append({
                            "set": level["set"],
                            "dimension": level["dimension"],
                            "level": level["level"],
                            "metric": metric["metric"],
                            "category": category,
                            "system": system,
                            "mean": mean,
                        })
        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        names = [s["name"] for s in self.data["systems"]]
        return f"Comparison(systems={names}, levels={len(self.data['levels'])})"


class Report:
    """A run's HTML report; Jupyter shows it inline (in an iframe, so that its styles and
    scripts stay its own)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def html(self) -> str:
        return self.path.read_text(encoding="utf-8")

    def _repr_html_(self) -> str:
        return (
            '<iframe style="width:100%;height:720px;border:1px solid #ccc" '
            f'srcdoc="{html.escape(self.html, quote=True)}"></iframe>'
        )

    def __repr__(self) -> str:
        return f"Report({os.fspath(self.path)!r})"


class Run:
    """A run directory (``hierarag run``'s ``[run] dir``, or any directory with a
    ``benchmark.jsonl``)."""

    def __init__(self, path: PathLike) -> None:
        self.path = Path(path)
        if not self.path.is_dir():
            raise FileNotFoundError(f"{self.path}: not a run directory")

    def __repr__(self) -> str:
        return f"Run({os.fspath(self.path)!r})"

    @property
    def systems(self) -> List[str]:
        """The run's systems in its config's order (``main`` for a run without ``[[system]]``)."""
        return [name for name, _ in json.loads(_native.systems(os.fspath(self.path)))]

    def system_dir(self, system: Optional[str] = None) -> Path:
        """Where a system keeps its files (the first system's when ``system`` is None)."""
        listed = json.loads(_native.systems(os.fspath(self.path)))
        if system is None:
            return Path(listed[0][1])
        for name, folder in listed:
            if name == system:
                return Path(folder)
        names = ", ".join(name for name, _ in listed)
        raise KeyError(f"{self.path}: no system {system!r}; its systems: {names}")

    @property
    def benchmark(self) -> pd.DataFrame:
        """``benchmark.jsonl``: one row per question."""
        return _frame(self.path / "benchmark.jsonl", "benchmark")

    def answers(self, system: Optional[str] = None) -> pd.DataFrame:
        """A system's ``answers.jsonl`` (the first system's by default)."""
        return _frame(self.system_dir(system) / "answers.jsonl", "answers")

    def scores(self, system: Optional[str] = None) -> pd.DataFrame:
        """A system's ``scores.jsonl``: AP, nDCG@10, Recall@10, RR, CS, ROUGE-1, BLEU, refusal
        (and the judge's grades when judged), one row per question."""
        return _frame(self.system_dir(system) / "scores.jsonl", "scores")

    def analysis_of(self, system: Optional[str] = None) -> Analysis:
        """A system's ``analysis.json`` (the first system's by default)."""
        path = self.system_dir(system) / "analysis.json"
        return Analysis(json.loads(path.read_text(encoding="utf-8")))

    @property
    def analysis(self) -> Analysis:
        """The first system's ``analysis.json`` (the one at the top of the run directory)."""
        return Analysis(json.loads((self.path / "analysis.json").read_text(encoding="utf-8")))

    @property
    def comparison(self) -> Optional[Comparison]:
        """``comparison.json`` (two or more systems), or None."""
        path = self.path / "comparison.json"
        if not path.exists():
            return None
        return Comparison(json.loads(path.read_text(encoding="utf-8")))

    def answer_with(
        self,
        fn: AnswerFn,
        system: str = "mine",
        concurrency: int = 8,
        evaluate: bool = True,
        quiet: bool = False,
        id_key: str = _answering.DEFAULT_ID_KEY,
    ) -> Dict[str, int]:
        """Answers every question of the benchmark that ``system`` has not answered yet with
        ``fn``, ``concurrency`` at a time, into ``systems/<system>/`` as a system of the run.

        ``fn`` is a function of the question returning a str or ``dict(answer=...,
        contexts=[...])`` (plain or ``async``; it also gets ``question_id=`` when it takes that
        keyword), or a LangChain Runnable (``ainvoke``/``invoke``, with the question, or a dict
        of its one input field) or a LlamaIndex query engine (``aquery``/``query``) passed as it
        is. LangChain's ``create_retrieval_chain`` output (``answer``, ``context``), messages,
        ``Document`` contexts, and LlamaIndex's ``Response`` with its ``source_nodes`` are
        read; a Document or node names its document by ``metadata[id_key]``, else its text is
        matched to the run's index. Coroutines run on one event loop for the whole process, so
        clients bound to it keep working from call to call.

        The first ``concurrency`` questions are asked before the stage starts: when all of them
        raise the same exception, it is raised here and nothing is recorded. Resumable: a
        second call answers only what is missing, so a question whose call raised (recorded in
        ``answer.failures.jsonl`` with the exception) is tried again. A warning says when no
        reply had contexts (the system's retrieval metrics are then absent). With
        ``evaluate``, the answers are scored (``scores.jsonl``) with the run's own config, so
        that ``analyze``, ``compare`` and ``report`` take the system in, and with two or more
        scored systems ``comparison.json`` is made again. Returns the counts:
        ``items``, ``resumed`` (answered before), ``written``, ``failed``. In code that runs
        in an event loop already (Jupyter), ``await run.aanswer_with(...)``."""
        return self._answer_with(
            fn, system, concurrency, evaluate, quiet, id_key, _answering.process_loop()
        )

    async def aanswer_with(
        self,
        fn: AnswerFn,
        system: str = "mine",
        concurrency: int = 8,
        evaluate: bool = True,
        quiet: bool = False,
        id_key: str = _answering.DEFAULT_ID_KEY,
    ) -> Dict[str, int]:
        """``answer_with``, awaitable: the stage runs in a worker thread and ``fn``'s
        coroutines on the running loop, the caller's (a notebook's, say)."""
        loop = asyncio.get_running_loop()
        return await asyncio.to_thread(
            self._answer_with, fn, system, concurrency, evaluate, quiet, id_key, loop
        )

    def _answer_with(
        self,
        fn: AnswerFn,
        system: str,
        concurrency: int,
        evaluate: bool,
        quiet: bool,
        id_key: str,
        loop: asyncio.AbstractEventLoop,
    ) -> Dict[str, int]:
        caller = _answering.Caller(_answering.target_of(fn), loop, id_key)
        folder = self.path / "systems" / system
        pending = _answering.unanswered(
            os.fspath(self.path / "benchmark.jsonl"), os.fspath(folder / "answers.jsonl")
        )
        caller.probe(pending[: max(1, concurrency)])
        outcome = json.loads(
            _native.answer_with(os.fspath(self.path), system, caller, concurrency, quiet)
        )
        if caller.replies > 0 and caller.with_contexts == 0:
            warnings.warn(
                f"system {system!r}: no reply gave contexts, so its retrieval metrics are "
                "absent; return them as 'contexts' (LangChain's 'context' and LlamaIndex's "
                "source_nodes are read)",
                stacklevel=3,
            )
        if evaluate and outcome["written"] + outcome["resumed"] > 0:
            self._evaluate(system, quiet)
        return outcome

    def _evaluate(self, system: str, quiet: bool) -> None:
        """Scores ``system`` with the run's own settings (its manifest's ``[embeddings]`` and
        ``[evaluate]``, so a run scored with API embeddings is not scored with MiniLM here),
        then compares the run's systems again when two or more have scores, so that
        :attr:`comparison` takes the new answers in."""
        from ._stages import HieraragError, command

        if not _native.evaluate_system(os.fspath(self.path), system, quiet):
            raise HieraragError(["answer_with", "evaluate", system], 1)
        # The run's systems, listed once; compare itself leaves out those without scores.
        listed = json.loads(_native.systems(os.fspath(self.path)))
        scores = [Path(folder) / "scores.jsonl" for _, folder in listed]
        scored = [path for path in scores if path.is_file() and path.stat().st_size > 0]
        if len(scored) >= 2:
            command("compare", self.path, quiet=True)

    def remove_system(self, name: str) -> None:
        """Takes out a system added to the run by ``answer_with`` (``systems/<name>/`` with its
        answers, scores and failures), as ``hierarag system remove``; a system of the run's
        config is refused (take it out of the config instead)."""
        from ._stages import command

        command("system", "remove", self.path, name, quiet=True)

    def report(self) -> Report:
        """The run's HTML report (written first when it is not there)."""
        path = self.path / "report.html"
        if not path.exists():
            from ._stages import command

            command("report", self.path, quiet=True)
        return Report(path)
