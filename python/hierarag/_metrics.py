"""The text and retrieval metrics on Python values, computed by the same Rust code as
``hierarag eval text`` and ``hierarag eval retrieval`` (and so as ``hierarag evaluate``)."""

from __future__ import annotations

import json
from typing import Any, Dict, Mapping, Sequence

from . import _native


def eval_text(
    references: Sequence[str], predictions: Sequence[str], language: str = "en"
) -> Dict[str, Any]:
    """ROUGE-1 (rouge-score's defaults, no stemming) and sentence BLEU (sacrebleu's defaults,
    0–100) of each prediction against its reference, their means and corpus BLEU: the dict
    ``hierarag eval text --no-cs --json`` prints (pairs numbered from "0"). For another
    ``language`` than English (an ISO 639-1 code: ``ko``, ``ja``, ``zh``, ``de``, ...), the
    tokenizers of ``hierarag eval text --language``, named under ``tokenizers``."""
    return json.loads(_native.eval_text(list(references), list(predictions), language))


def eval_retrieval(
    qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]]
) -> Dict[str, Any]:
    """trec_eval's AP, nDCG@10, Recall@10 and RR (and the rest ``hierarag eval retrieval``
    gives) of ``run`` (``{query: {doc: score}}``) against ``qrels`` (``{query: {doc:
    relevance}}``), the dicts pytrec_eval takes: per query, their mean over the judged queries,
    and the counts, as ``hierarag eval retrieval --json`` prints them."""
    return json.loads(
        _native.eval_retrieval(
            {q: {d: int(r) for d, r in docs.items()} for q, docs in qrels.items()},
            {q: {d: float(s) for d, s in docs.items()} for q, docs in run.items()},
        )
    )
