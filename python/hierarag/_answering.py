"""What ``Run.answer_with`` calls: the user's function, a LangChain Runnable or a LlamaIndex
query engine, adapted to one shape (question and id in, the reply as JSON text out), with
coroutines run on one event loop for the whole process, and LangChain's and LlamaIndex's
outputs (messages, ``create_retrieval_chain``'s dict, ``Document``, ``Response``,
``NodeWithScore``) read as an answer and its contexts. Nothing here imports LangChain or
LlamaIndex: their objects are recognised by the attributes they have."""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import json
import threading
from typing import Any, Callable, Dict, List, Optional, Protocol, Tuple, runtime_checkable

#: The metadata key a LangChain ``Document`` or a LlamaIndex node names its document by.
DEFAULT_ID_KEY = "doc_id"

_LOOP: Optional[asyncio.AbstractEventLoop] = None
_LOOP_LOCK = threading.Lock()


def process_loop() -> asyncio.AbstractEventLoop:
    """The event loop on which answering coroutines run, in a daemon thread: one for the whole
    process and never closed, so that a client bound to the loop of its first call (as
    langchain-openai's is) still works on the second ``answer_with``."""
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None or _LOOP.is_closed():
            _LOOP = asyncio.new_event_loop()
            threading.Thread(
                target=_LOOP.run_forever, name="hierarag-answering", daemon=True
            ).start()
        return _LOOP


Target = Callable[[str, str], Any]


@runtime_checkable
class Runnable(Protocol):
    """What ``answer_with`` takes of a LangChain Runnable (``ainvoke`` is used when present)."""

    def invoke(self, input: Any) -> Any: ...


@runtime_checkable
class QueryEngine(Protocol):
    """What ``answer_with`` takes of a LlamaIndex query engine (``aquery`` when present)."""

    def query(self, str_or_query_bundle: Any) -> Any: ...


def target_of(fn: Any) -> Target:
    """``fn`` as a function of (question, question id), checked before any question is asked:
    a Runnable is invoked (``ainvoke`` when it has it) with a string, or with a dict keyed by
    its input's one field (``input``, ``question`` or ``query`` first); a query engine is
    queried (``aquery`` first); a plain function gets the question, and its id as
    ``question_id`` when it takes that keyword."""
    if hasattr(fn, "ainvoke") or hasattr(fn, "invoke"):
        make_input = _runnable_input(fn)
        if hasattr(fn, "ainvoke"):
            return lambda question, _id: fn.ainvoke(make_input(question))
        return lambda question, _id: fn.invoke(make_input(question))
    if hasattr(fn, "aquery") or hasattr(fn, "query"):
        if hasattr(fn, "aquery"):
            return lambda question, _id: fn.aquery(question)
        return lambda question, _id: fn.query(question)
    if not callable(fn):
        raise TypeError(
            f"answer_with takes a function of the question, a LangChain Runnable or a "
            f"LlamaIndex query engine; got {type(fn).__name__}, which is none of them"
        )
    if _takes_question_id(fn):
        return lambda question, question_id: fn(question, question_id=question_id)
    return lambda question, _id: fn(question)


def _takes_question_id(fn: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        p.name == "question_id" and p.kind != inspect.Parameter.POSITIONAL_ONLY
        or p.kind == inspect.Parameter.VAR_KEYWORD
        for p in parameters
    )


def _runnable_input(runnable: Any) -> Callable[[str], Any]:
    """How a Runnable wants the question: as it is when its input is a string, else in a
    dict under its input's field."""
    try:
        schema = runnable.get_input_jsonschema()
    except Exception:  # not a LangChain Runnable after all, or one without a schema
        schema = {}
    properties = schema.get("properties") or {}
    if schema.get("type") != "object" or not properties:
        return lambda question: question
    for key in ("input", "question", "query"):
        if key in properties:
            return lambda question, key=key: {key: question}
    required = schema.get("required") or list(properties)
    if len(required) == 1:
        return lambda question, key=required[0]: {key: question}
    raise TypeError(
        f"the Runnable takes a dict with {', '.join(sorted(properties))}: pass a function that "
        "builds its input from the question, e.g. lambda q: chain.ainvoke({...})"
    )


def reply_of(value: Any, id_key: str) -> Dict[str, Any]:
    """The answer and contexts of what the function, chain or engine returned."""
    contexts: Any = None
    if isinstance(value, str):
        answer: Any = value
    elif isinstance(value, dict):
        if "answer" not in value:
            raise ValueError(f"the reply has no 'answer' (keys: {', '.join(map(str, value))})")
        answer = value["answer"]
        # Ours is `contexts`; LangChain's create_retrieval_chain returns `context`.
        contexts = value["contexts"] if "contexts" in value else value.get("context")
    elif hasattr(value, "response") and hasattr(value, "source_nodes"):
        answer, contexts = value.response, value.source_nodes  # LlamaIndex's Response
    elif isinstance(getattr(value, "content", None), str):
        answer = value.content  # a LangChain message
    else:
        raise TypeError(
            f"the function returned {type(value).__name__}: return a str, or a dict with "
            "'answer' and optionally 'contexts'"
        )
    if not isinstance(answer, str) and isinstance(getattr(answer, "content", None), str):
        answer = answer.content
    if not isinstance(answer, str):
        raise TypeError(f"the answer is {type(answer).__name__}, not a str")
    reply: Dict[str, Any] = {"answer": answer}
    if contexts is not None:
        if not isinstance(contexts, (list, tuple)):
            raise TypeError(f"the contexts are {type(contexts).__name__}, not a list")
        reply["contexts"] = [_context(c, id_key) for c in contexts]
    return reply


def _context(context: Any, id_key: str) -> Any:
    """A context as the stage reads it: a text, or a dict with ``text`` and ``doc_id``. A
    LangChain ``Document`` gives its ``page_content`` and ``metadata[id_key]``; a LlamaIndex
    ``NodeWithScore`` (or node) its content and ``metadata[id_key]``. Without that key the
    context is a text, matched to the run's index."""
    if isinstance(context, (str, dict)):
        return context
    node = getattr(context, "node", context)
    if hasattr(node, "page_content"):
        text, metadata = node.page_content, getattr(node, "metadata", None) or {}
    elif hasattr(node, "get_content"):
        text, metadata = node.get_content(), getattr(node, "metadata", None) or {}
    else:
        raise TypeError(
            f"a context is {type(context).__name__}: give texts, dicts with 'doc_id' and/or "
            "'text', LangChain Documents or LlamaIndex nodes"
        )
    if id_key in metadata and metadata[id_key] is not None:
        return {"doc_id": str(metadata[id_key]), "text": text}
    return text


class Caller:
    """The adapted function as the compiled stage calls it, from several threads at once."""

    def __init__(self, target: Target, loop: asyncio.AbstractEventLoop, id_key: str) -> None:
        self.target = target
        self.loop = loop
        self.id_key = id_key
        #: What the first calls (see `probe`) made, by question id: a reply, or the exception
        #: raised, which the stage then records as the question's failure.
        self.made: Dict[str, Any] = {}
        self.lock = threading.Lock()
        self.replies = 0
        self.with_contexts = 0

    def reply(self, question: str, question_id: str) -> str:
        """One call: the reply as JSON text, or the function's exception."""
        value = self.target(question, question_id)
        if inspect.isawaitable(value):
            value = asyncio.run_coroutine_threadsafe(_awaited(value), self.loop).result()
        reply = reply_of(value, self.id_key)
        with self.lock:
            self.replies += 1
            self.with_contexts += bool(reply.get("contexts"))
        return json.dumps(reply)

    def __call__(self, question: str, question_id: str) -> str:
        with self.lock:
            made = self.made.pop(question_id, None)
        if made is None:
            return self.reply(question, question_id)
        if isinstance(made, BaseException):
            raise made
        return made

    def probe(self, questions: List[Tuple[str, str]]) -> None:
        """Asks the first questions at once, before the stage starts: when every one of them
        raises the same exception (a chain that takes another input, a reply of the wrong
        type), it is raised here, with its traceback, instead of being recorded for every
        question; their replies are kept for the stage otherwise."""
        if not questions:
            return
        with concurrent.futures.ThreadPoolExecutor(len(questions)) as pool:
            futures = [pool.submit(self.reply, question, qid) for qid, question in questions]
            outcomes = [(f.exception(), f) for f in futures]
        errors = [error for error, _ in outcomes if error is not None]
        if len(errors) == len(questions) and len(
            {(type(e), str(e)) for e in errors}
        ) == 1:
            raise errors[0]
        for (qid, _), (error, future) in zip(questions, outcomes):
            self.made[qid] = error if error is not None else future.result()


async def _awaited(value: Any) -> Any:
    return await value


def unanswered(benchmark: str, answers: str) -> List[Tuple[str, str]]:
    """The (id, question) pairs of ``benchmark`` not in ``answers``, in benchmark order (a
    torn or unreadable line of ``answers`` counts as unanswered, as the stage takes it)."""
    done = set()
    try:
        with open(answers, encoding="utf-8") as lines:
            for line in lines:
                try:
                    done.add(json.loads(line)["id"])
                except (ValueError, KeyError, TypeError):
                    continue
    except FileNotFoundError:
        pass
    pending = []
    with open(benchmark, encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                record = json.loads(line)
                if record["id"] not in done:
                    pending.append((record["id"], record["question"]))
    return pending
