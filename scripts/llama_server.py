#!/usr/bin/env python3
"""Serve a GGUF model with llama.cpp's OpenAI-compatible server (the `xllamacpp` wheel).

Contract:
    python scripts/llama_server.py --model PATH.gguf [--port 0] [--threads N] [--parallel N] [--ctx N]

- Binds 127.0.0.1 only; `--port 0` (the default) picks a free port.
- Loads the model, waits until `GET /health` answers 200, then prints exactly one line
  `READY http://127.0.0.1:PORT/v1` to stdout and flushes it. Nothing else goes to stdout;
  llama.cpp's own logs go to stderr.
- Serves until SIGTERM or SIGINT (or until its parent process dies), then stops the server
  cleanly and exits 0. Exits 1 with a message on stderr if the server cannot start.
- `--parallel N` is the number of slots decoding at once; `--ctx N` is the context size of
  each slot (the server allocates N × parallel tokens in all).

Needs `xllamacpp` (pinned in scripts/oracles/requirements.txt).
"""

import argparse
import os
import signal
import sys
import threading
import time
import urllib.error
import urllib.request

HEALTH_TIMEOUT_S = 120.0
PARENT_POLL_S = 1.0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--model", required=True, help="path to the .gguf file")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1; 0 picks a free one")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2, help="CPU threads")
    parser.add_argument("--parallel", type=int, default=4, help="requests decoded at once (slots)")
    parser.add_argument("--ctx", type=int, default=2048, help="context tokens per slot")
    return parser.parse_args()


def wait_healthy(root: str, deadline: float) -> None:
    """Polls `GET {root}/health` until it answers 200 (the model is loaded) or the deadline."""
    last_error = "no answer"
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{root}/health", timeout=5) as response:
                if response.status == 200:
                    return
                last_error = f"HTTP {response.status}"
        except (urllib.error.URLError, OSError) as error:
            last_error = str(error)
        time.sleep(0.1)
    raise RuntimeError(f"{root}/health did not answer 200 within {HEALTH_TIMEOUT_S:.0f} s: {last_error}")


def main() -> int:
    args = parse_args()
    if not os.path.isfile(args.model):
        print(f"llama_server.py: no such model file: {args.model}", file=sys.stderr)
        return 1
    try:
        import xllamacpp  # imported late so that `--help` works without it
    except ImportError as error:
        print(
            f"llama_server.py: {error}; install it with "
            "`pip install -r scripts/oracles/requirements.txt`",
            file=sys.stderr,
        )
        return 1

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.n_parallel = args.parallel
    params.n_ctx = args.ctx * args.parallel
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads

    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda *_: stop.set())
    parent = os.getppid()

    # The constructor loads the model and starts serving on background threads.
    try:
        server = xllamacpp.Server(params)
    except Exception as error:  # noqa: BLE001 - any failure to start is reported the same way
        print(f"llama_server.py: cannot start the server: {error}", file=sys.stderr)
        return 1
    try:
        root = server.listening_address.rstrip("/")
        if not root.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"unexpected listening address {root!r}")
        wait_healthy(root, time.monotonic() + HEALTH_TIMEOUT_S)
        print(f"READY {root}/v1", flush=True)
        # Wake up now and then to notice a parent that died without signalling us.
        while not stop.wait(PARENT_POLL_S):
            if os.getppid() != parent:
                break
    except Exception as error:  # noqa: BLE001 - reported, then the server is stopped below
        print(f"llama_server.py: {error}", file=sys.stderr)
        return 1
    finally:
        # Dropping the last reference runs the server's destructor, which joins its loop.
        del server
    return 0


if __name__ == "__main__":
    sys.exit(main())
