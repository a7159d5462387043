#!/usr/bin/env python3
"""The keyword RAG of keyword_rag.py as an HTTP service (`kind = "http"`), standard library only.

    python3 examples/systems/keyword_rag_service.py corpus.jsonl --port 8765

    [[system]]
    name = "service"
    kind = "http"
    url = "http://127.0.0.1:8765/ask"
    headers = { Authorization = "Bearer ${RAG_TOKEN}" }
    body = { query = "{question}", k = 3 }
    answer = "/answer"
    contexts = "/sources"
    context_text = "/text"
    context_doc_id = "/metadata/doc_id"

It answers `POST /ask` with a JSON body `{"query": ..., "k": ...}` by

    {"answer": "...", "sources": [{"text": "...", "metadata": {"doc_id": "..."}}]}

With `--token-env NAME`, it refuses (HTTP 401) a request whose `Authorization` header is not
`Bearer <the value of NAME>`. Stop it with Ctrl-C.
"""

import argparse
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from keyword_rag import answer, load  # noqa: E402


def handler(documents, token):
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            if self.path != "/ask":
                return self.reply(404, {"error": "POST /ask"})
            if token is not None and self.headers.get("Authorization") != "Bearer " + token:
                return self.reply(401, {"error": "missing or wrong bearer token"})
            length = int(self.headers.get("Content-Length", 0))
            try:
                request = json.loads(self.rfile.read(length))
                question, k = request["query"], int(request.get("k", 3))
            except (ValueError, KeyError, TypeError) as error:
                return self.reply(400, {"error": f"bad request: {error}"})
            text, contexts = answer(question, documents, k)
            sources = [{"text": c["text"], "metadata": {"doc_id": c["doc_id"]}} for c in contexts]
            self.reply(200, {"answer": text, "sources": sources})

        def reply(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus", help="a JSONL corpus with fields id and text")
    parser.add_argument("--port", type=int, default=8765, help="0: any free port (printed)")
    parser.add_argument("--token-env", help="require this environment variable's bearer token")
    args = parser.parse_args()
    token = os.environ[args.token_env] if args.token_env else None
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler(load(args.corpus), token))
    print(f"answering on http://127.0.0.1:{server.server_port}/ask", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
