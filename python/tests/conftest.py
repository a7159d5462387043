"""Fixtures of the Python API's tests: a local OpenAI-compatible mock server (127.0.0.1, a
thread of this process) that answers deterministically from the request, and a small finished
run made with it by ``hierarag.run``."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

TOPICS = ["river", "castle", "orchestra", "volcano", "library", "railway", "glacier", "harbour"]


def _words_after(text: str, marker: str, n: int) -> list:
    return text.split(marker, 1)[1].split()[:n] if marker in text else []


def _chat(body: dict) -> str:
    messages = body["messages"]
    system = messages[0]["content"]
    user = messages[-1]["content"]
    if "reviewer" in system:
        n = len(re.findall(r"Candidate \d+:", user))
        return json.dumps(
            {
                "verdicts": [
                    {"candidate": c, "faithful": True, "fits_category": True,
                     "standalone": True, "reason": "fine"}
                    for c in range(1, n + 1)
                ]
            }
        )
    if "question-answer pairs" in system:
        k = int(_words_after(user, "Write ", 1)[0])
        words = _words_after(user, '<document number="1">', 12)
        return json.dumps(
            {
                "candidates": [
                    {"question": f"Which {['fact', 'detail', 'claim'][i % 3]} about "
                                 f"{' '.join(words[i:i + 3])}?",
                     "answer": " ".join(words[i:i + 6])}
                    for i in range(k)
                ]
            }
        )
    answer = " ".join(_words_after(user, "[1]", 8))
    return answer or "I cannot answer this question from the given context."


def _embedding(text: str) -> list:
    vector = [0.0] * 16
    for word in text.lower().split():
        h = 7
        for b in word.encode():
            h = (h * 31 + b) % (1 << 32)
        vector[h % 16] += 1.0
    vector[15] += 0.5
    return vector


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # quiet
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path.endswith("/chat/completions"):
            reply = {
                "id": "mock", "object": "chat.completion", "model": "mock-1",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": _chat(body)}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }
        else:
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            reply = {
                "object": "list", "model": "mock-embed",
                "data": [{"object": "embedding", "index": i, "embedding": _embedding(t)}
                         for i, t in enumerate(inputs)],
                "usage": {"prompt_tokens": 1, "total_tokens": 1},
            }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="session")
def mock_url():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


class _KeepAliveHandler(_Handler):
    # HTTP/1.1: connections stay open, so a client pools them on the loop it first used.
    protocol_version = "HTTP/1.1"


@pytest.fixture(scope="session")
def keep_alive_url():
    """The mock server keeping connections alive, as real model servers do."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _KeepAliveHandler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def write_config(directory: Path, url: str) -> Path:
    """A corpus of 24 documents and a run config (rq1, 8 questions, two systems) for the mock."""
    corpus = directory / "corpus.jsonl"
    with corpus.open("w") as f:
        for n in range(24):
            topic = TOPICS[n % len(TOPICS)]
            text = (
                f"The {topic} of Example{n} was first described in {1800 + 3 * n} by a "
                f"traveller named Writer{n}. It lies near the town of Place{n} and is known for "
                f"its long history. Visitors to the {topic} hear stories about Example{n}."
            )
            f.write(json.dumps({"id": f"doc{n:02}", "text": text}) + "\n")
    config = directory / "run.toml"
    config.write_text(
        f"""[run]
dir = "{directory / 'run'}"
seed = 7

[corpus]
inputs = ["{corpus}"]

[design]
kind = "rq1"
per_dimension = 2

[generate]
candidates = 2

[answer]
top_k = 3

[llm]
backend = "openai"
model = "mock-1"
base_urls = ["{url}"]
concurrency = 4
max_attempts = 2
backoff_s = 0.01

[embeddings]
backend = "openai"
model = "mock-embed"
base_urls = ["{url}"]

[[system]]
name = "bm25"
kind = "builtin"
retriever = "bm25"

[[system]]
name = "dense"
kind = "builtin"
retriever = "dense"
"""
    )
    return config


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory, mock_url):
    import hierarag

    directory = tmp_path_factory.mktemp("api")
    config = write_config(directory, mock_url)
    run = hierarag.run(config, quiet=True)
    return run
