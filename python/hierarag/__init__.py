"""HieraRAG in Python: generate a hierarchical QA benchmark from your corpus, run RAG systems
on it, and see which question dimension and granularity show where they fail.

>>> import hierarag
>>> run = hierarag.run("examples/quickstart.toml")      # the main job, in this process
>>> run.scores(system="bm25").cs.mean()                   # scores.jsonl as a DataFrame
>>> run.analysis.levels                                   # per-category means, DiscPow, NMI
>>> run.report()                                          # the HTML report, inline in Jupyter

The ``hierarag`` command installed with the package is the same command line.
"""

from ._index import Index
from ._metrics import eval_retrieval, eval_text
from ._native import __version__
from ._run import Analysis, Comparison, Report, Run
from ._stages import (
    HieraragError,
    analyze,
    answer,
    command,
    compare,
    evaluate,
    export,
    generate,
    index,
    judge,
    plan,
    report,
    run,
    tag,
)

__all__ = [
    "Analysis",
    "Comparison",
    "HieraragError",
    "Index",
    "Report",
    "Run",
    "__version__",
    "analyze",
    "answer",
    "command",
    "compare",
    "eval_retrieval",
    "eval_text",
    "evaluate",
    "export",
    "generate",
    "index",
    "judge",
    "plan",
    "report",
    "run",
    "tag",
]
