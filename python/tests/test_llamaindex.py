"""``Run.answer_with`` as a LlamaIndex user calls it, with the real packages (llama-index-core's
``RetrieverQueryEngine`` over a retriever of the run's corpus, llama-index-llms-openai-like's
``OpenAILike`` pointed at the tests' local mock server): the engine passed as it is (``aquery``),
twice in one process, its ``source_nodes`` read as contexts; and a plain function returning
the engine's ``Response`` from ``query``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List

import pytest

import hierarag

from conftest import write_config


def _jsonl(path: Path) -> list:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture()
def fresh_run(tmp_path, mock_url):
    return hierarag.run(write_config(tmp_path, mock_url), quiet=True)


def _engine(corpus: Path, url: str):
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
    from llama_index.llms.openai_like import OpenAILike

    nodes = [
        TextNode(text=r["text"], id_=f"node-{r['id']}", metadata={"doc_id": r["id"]})
        for r in _jsonl(corpus)
    ]

    class Overlap(BaseRetriever):
        """The three nodes sharing most words with the query (ties by corpus order)."""

        def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
            words = set(query_bundle.query_str.lower().rstrip("?").split())
            scored = [
                NodeWithScore(node=n, score=float(len(words & set(n.text.lower().split()))))
                for n in nodes
            ]
            return sorted(scored, key=lambda s: -s.score)[:3]

    llm = OpenAILike(
        model="mock-1", api_base=url, api_key="not-used", is_chat_model=True,
        context_window=4096, max_retries=0,
    )
    return RetrieverQueryEngine.from_args(Overlap(), llm=llm), Overlap()


def test_a_query_engine_passed_as_it_is_answers_twice_in_one_process_with_its_nodes(
    fresh_run, tmp_path, keep_alive_url
):
    engine, retriever = _engine(tmp_path / "corpus.jsonl", keep_alive_url)
    outcome = fresh_run.answer_with(engine, system="llamaindex", quiet=True)
    assert outcome == {"items": 8, "resumed": 0, "written": 8, "failed": 0}
    folder = fresh_run.path / "systems" / "llamaindex"
    answers = _jsonl(folder / "answers.jsonl")
    for answer in answers:
        retrieved = [n.node.metadata["doc_id"] for n in retriever.retrieve(answer["question"])]
        assert answer["doc_ids"] == retrieved
        assert answer["answer"]
    scores = fresh_run.scores(system="llamaindex")
    assert len(scores) == 8 and scores.ndcg_10.notna().all()

    # A resume in the same process: the engine's async client, bound to the process's one
    # loop, still works.
    (folder / "answers.jsonl").write_text("")
    again = fresh_run.answer_with(engine, system="llamaindex", evaluate=False, quiet=True)
    assert again == {"items": 8, "resumed": 0, "written": 8, "failed": 0}
    assert _jsonl(folder / "answers.jsonl") == answers


def test_a_function_returning_the_engines_response_from_query_is_read(
    fresh_run, tmp_path, mock_url
):
    engine, retriever = _engine(tmp_path / "corpus.jsonl", mock_url)
    outcome = fresh_run.answer_with(
        lambda q: engine.query(q), system="sync", evaluate=False, quiet=True
    )
    assert outcome["written"] == 8 and outcome["failed"] == 0
    for answer in _jsonl(fresh_run.path / "systems" / "sync" / "answers.jsonl"):
        retrieved = [n.node.metadata["doc_id"] for n in retriever.retrieve(answer["question"])]
        assert answer["doc_ids"] == retrieved
        assert len(answer["contexts"]) == 3
