"""The command line as Python functions: each stage takes its positional arguments, then
keyword arguments named as the command's options (``top_k=5`` is ``--top-k 5``, ``quiet=True``
is ``--quiet``, a list repeats the option once per value), and runs in this process. A non-zero
exit raises :class:`HieraragError`; the command's progress and messages go to stderr as in a
terminal, its summary tables to stdout; ``quiet=True`` leaves out both (but not errors, nor
what ``json=True`` asks for)."""

from __future__ import annotations

import os
from typing import Any, Iterable, List, Optional, Union

from . import _native

PathLike = Union[str, "os.PathLike[str]"]


class HieraragError(RuntimeError):
    """A command exited with a non-zero code (1: bad input or failed items; 2: internal)."""

    def __init__(self, argv: List[str], code: int) -> None:
        super().__init__(
            f"`{' '.join(argv)}` exited with code {code} (its messages are on stderr)"
        )
        self.argv = argv
        self.code = code


def _arg(value: Any) -> str:
    return os.fspath(value) if isinstance(value, os.PathLike) else str(value)


def _options(options: dict) -> List[str]:
    argv: List[str] = []
    for name, value in options.items():
        flag = "--" + name.rstrip("_").replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            argv.append(flag)
        else:
            for item in value if isinstance(value, (list, tuple)) else [value]:
                argv.extend([flag, _arg(item)])
    return argv


def command(*args: Any, **options: Any) -> int:
    """Runs ``hierarag ARGS... --OPTION VALUE...`` in this process and returns 0; raises
    :class:`HieraragError` on another exit code. ``command("eval", "retrieval", qrels=...,
    run=...)`` is ``hierarag eval retrieval --qrels ... --run ...``."""
    argv = ["hierarag", *(_arg(a) for a in args)]
    argv += _options(options)
    code = _native.cli(argv, not options.get("quiet", False))
    if code != 0:
        raise HieraragError(argv, code)
    return code


def run(config: PathLike, **options: Any) -> "Run":
    """``hierarag run CONFIG``: the main job; returns the finished :class:`Run`. The run
    directory is ``dir=`` when given, else the config's ``[run] dir``."""
    from ._run import Run

    command("run", config, **options)
    directory = options.get("dir")
    if directory is None:
        directory = _native.run_dir_of(os.fspath(config))
    return Run(directory)


def index(**options: Any) -> None:
    """``hierarag index`` (``corpus=``, ``out=``, …)."""
    command("index", **options)


def plan(**options: Any) -> None:
    """``hierarag plan`` (``corpus=``, ``design=``, ``out=``, …)."""
    command("plan", **options)


def generate(**options: Any) -> None:
    """``hierarag generate`` (``plan=``, ``corpus=``, ``config=``, ``screen=True``, …)."""
    command("generate", **options)


def answer(**options: Any) -> None:
    """``hierarag answer`` (``benchmark=``, ``index=``, ``config=``, …)."""
    command("answer", **options)


def evaluate(**options: Any) -> None:
    """``hierarag evaluate`` (``benchmark=``, ``answers=``, …)."""
    command("evaluate", **options)


def analyze(run_dir: Optional[PathLike] = None, **options: Any) -> None:
    """``hierarag analyze RUN_DIR`` (``metric=``, ``bootstrap=``, …)."""
    command("analyze", *([run_dir] if run_dir is not None else []), **options)


def compare(*run_dirs: PathLike, **options: Any) -> None:
    """``hierarag compare RUN_DIR...`` (``metric=``, …)."""
    command("compare", *run_dirs, **options)


def report(run_dir: PathLike, **options: Any) -> None:
    """``hierarag report RUN_DIR``."""
    command("report", run_dir, **options)


def judge(run_dir: PathLike, **options: Any) -> None:
    """``hierarag judge RUN`` (``config=``, ``systems=``, ``benchmark=True``, …)."""
    command("judge", run_dir, **options)


def tag(run_dir: PathLike, **options: Any) -> None:
    """``hierarag tag RUN`` (``config=``, ``dimensions=``, …)."""
    command("tag", run_dir, **options)


def export(**options: Any) -> None:
    """``hierarag export`` (``run=``, ``format=``, ``out=``)."""
    command("export", **options)


__all__: Iterable[str] = [
    "HieraragError",
    "command",
    "run",
    "index",
    "plan",
    "generate",
    "answer",
    "evaluate",
    "analyze",
    "compare",
    "report",
    "judge",
    "tag",
    "export",
]
