"""A BM25 index as a retriever in Python: the same search as ``hierarag search``."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Union

from . import _native

PathLike = Union[str, "os.PathLike[str]"]


class Index:
    """An index built by ``hierarag index`` (a run's ``index/``).

    >>> index = hierarag.Index("runs/quickstart/index")
    >>> index.search("When was the railway opened?", k=3)[0]["text"]
    """

    def __init__(self, path: PathLike) -> None:
        self.path = os.fspath(path)
        self._index = _native.Index(self.path)

    def search(self, query: str, k: int = 10, documents: bool = False) -> List[Dict[str, Any]]:
        """The best ``k`` chunks for ``query`` (with ``documents``, documents by their best
        chunk), best first: dicts of ``rank``, ``score``, ``doc_id``, ``chunk_id``, ``text``,
        as ``hierarag search --json`` prints them."""
        return json.loads(self._index.search(query, k, documents))

    def __len__(self) -> int:
        return len(self._index)

    def __repr__(self) -> str:
        return f"Index({self.path!r}, {len(self)} documents)"
