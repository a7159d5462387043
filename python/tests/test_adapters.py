"""``Run.answer_with`` as a LangChain user calls it, with the real packages (langchain-core,
langchain-openai's ``ChatOpenAI`` pointed at the tests' local mock server, langchain-classic's
``create_retrieval_chain``): a chain passed as it is, twice in one process, its documents read
as contexts; and the mistakes that used to be found on the last question found on the first."""

from __future__ import annotations

import asyncio
import json
import traceback
from pathlib import Path

import pytest

import hierarag

from conftest import write_config


def _jsonl(path: Path) -> list:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture()
def fresh_run(tmp_path, mock_url):
    return hierarag.run(write_config(tmp_path, mock_url), quiet=True)


def _chat_model(mock_url: str):
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(base_url=mock_url, api_key="not-used", model="mock-1", max_retries=0)


def test_an_async_chain_answers_a_second_time_in_the_same_process(fresh_run, keep_alive_url):
    # The bug: each call made an event loop of its own and closed it, and langchain-openai's
    # client stayed bound to the first; about `concurrency` questions of the second call failed.
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate

    # Passed as it is: a Runnable whose input is a dict with `question`.
    chain = (
        ChatPromptTemplate.from_template("Answer briefly: {question}")
        | _chat_model(keep_alive_url)
        | StrOutputParser()
    )
    for system in ["first", "second"]:
        with pytest.warns(UserWarning, match="no reply gave contexts"):
            outcome = fresh_run.answer_with(chain, system=system, evaluate=False, quiet=True)
        assert outcome == {"items": 8, "resumed": 0, "written": 8, "failed": 0}, system
        answers = _jsonl(fresh_run.path / "systems" / system / "answers.jsonl")
        assert all(a["answer"] for a in answers)
    # A resume of the first, in the same process, with nothing left to do but the loop reused.
    (fresh_run.path / "systems" / "first" / "answers.jsonl").write_text("")
    with pytest.warns(UserWarning):
        again = fresh_run.answer_with(chain, system="first", evaluate=False, quiet=True)
    assert again["written"] == 8 and again["failed"] == 0


def test_create_retrieval_chain_output_is_read_with_its_documents(fresh_run, tmp_path, mock_url):
    from langchain_classic.chains import create_retrieval_chain
    from langchain_classic.chains.combine_documents import create_stuff_documents_chain
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.vectorstores import InMemoryVectorStore

    documents = [
        Document(page_content=record["text"], metadata={"doc_id": record["id"]})
        for record in _jsonl(tmp_path / "corpus.jsonl")
    ]
    retriever = InMemoryVectorStore.from_documents(
        documents, DeterministicFakeEmbedding(size=32)
    ).as_retriever(search_kwargs={"k": 3})
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from the context:\n{context}"), ("human", "{input}")]
    )
    chain = create_retrieval_chain(
        retriever, create_stuff_documents_chain(_chat_model(mock_url), prompt)
    )
    # Its output is {"input", "context": [Document], "answer"}; its input a dict with `input`.
    outcome = fresh_run.answer_with(chain, system="retrieval", quiet=True)
    assert outcome == {"items": 8, "resumed": 0, "written": 8, "failed": 0}
    answers = _jsonl(fresh_run.path / "systems" / "retrieval" / "answers.jsonl")
    by_text = {d.page_content: d.metadata["doc_id"] for d in documents}
    for answer in answers:
        retrieved = retriever.invoke(answer["question"])
        assert answer["doc_ids"] == [d.metadata["doc_id"] for d in retrieved]
        assert [by_text[t] for t in answer["contexts"]] == answer["doc_ids"]
    # The documents named by metadata["doc_id"] are the ranking: retrieval is scored.
    scores = fresh_run.scores(system="retrieval")
    assert len(scores) == 8 and scores.ndcg_10.notna().all()
    # Sync: a plain function calling `invoke` gives the same ranking.
    outcome = fresh_run.answer_with(
        lambda q: chain.invoke({"input": q}), system="sync", evaluate=False, quiet=True
    )
    assert outcome["written"] == 8 and outcome["failed"] == 0
    synced = _jsonl(fresh_run.path / "systems" / "sync" / "answers.jsonl")
    assert [a["doc_ids"] for a in synced] == [a["doc_ids"] for a in answers]


def test_the_readme_lambda_on_a_chain_that_takes_a_dict_fails_at_once(fresh_run, mock_url):
    from langchain_core.prompts import ChatPromptTemplate

    chain = ChatPromptTemplate.from_template("{question} {context}") | _chat_model(mock_url)
    # LangChain's own error, raised from the first calls instead of recorded for every question.
    with pytest.raises(TypeError, match="Expected mapping type as input to ChatPromptTemplate"):
        fresh_run.answer_with(lambda q: chain.invoke(q), system="lambda", concurrency=4)
    # Nothing recorded, no system registered: the next call starts clean.
    assert not (fresh_run.path / "systems" / "lambda").exists()
    assert "lambda" not in fresh_run.systems


def test_the_same_exception_from_the_first_calls_is_raised_with_its_traceback(fresh_run):
    calls = []

    def broken(question: str) -> dict:
        calls.append(question)
        return {"answer": question.missing_attribute}

    with pytest.raises(AttributeError, match="missing_attribute") as raised:
        fresh_run.answer_with(broken, system="broken", concurrency=4, quiet=True)
    assert len(calls) == 4, "only the first `concurrency` questions were asked"
    frames = [frame.name for frame in traceback.extract_tb(raised.tb)]
    assert "broken" in frames, frames
    assert not (fresh_run.path / "systems" / "broken").exists()


def test_something_that_is_neither_a_function_nor_a_chain_is_refused_before_any_question(
    fresh_run,
):
    with pytest.raises(TypeError, match="got int, which is none of them"):
        fresh_run.answer_with(42, system="number")
    assert not (fresh_run.path / "systems" / "number").exists()


def test_the_function_receives_the_question_id(fresh_run):
    seen = {}

    def traced(question: str, question_id: str) -> dict:
        seen[question_id] = question
        return {"answer": "an answer", "contexts": ["a passage"]}

    fresh_run.answer_with(traced, system="traced", evaluate=False, quiet=True)
    benchmark = _jsonl(fresh_run.path / "benchmark.jsonl")
    assert seen == {q["id"]: q["question"] for q in benchmark}


def test_aanswer_with_runs_the_coroutines_on_the_callers_loop(fresh_run):
    loops = []

    async def answer(question: str) -> dict:
        loops.append(asyncio.get_running_loop())
        await asyncio.sleep(0.001)
        return {"answer": "an answer", "contexts": ["a passage"]}

    async def notebook_cell():
        outcome = await fresh_run.aanswer_with(answer, system="nb", evaluate=False, quiet=True)
        return outcome, asyncio.get_running_loop()

    outcome, loop = asyncio.run(notebook_cell())
    assert outcome["written"] == 8 and outcome["failed"] == 0
    assert len(loops) == 8 and all(seen is loop for seen in loops)
