#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting, lints, and every test.
#
# Sets up what the tests need (idempotent, fast when already done; the Python environments in
# the background while cargo checks and builds):
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
# A virtual environment at $1 with the packages of requirements file $2, set up again whenever
# that file changes (its hash is stamped into the environment).
venv_with() {
  local venv=$1 requirements=$2 stamp="$1/.requirements.sha256" want
  want=$(sha256sum "$requirements" | cut -d' ' -f1)
  if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "== setting up $venv ($requirements)"
    "$PYTHON" -m venv --clear "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
    echo "$want" > "$stamp"
  fi
}
# The three environments install in the background while cargo checks and builds: on a new
# machine their downloads take minutes that would otherwise add to the build's. Each logs to a
# file, printed before the tests start (and in full if the job failed).
LOGS=$(mktemp -d)
trap 'rm -rf "$LOGS"' EXIT
# The oracles (pytrec_eval, xllamacpp, ...), and pip for the asset tests' PyPI downloads.
venv_with "$VENV" scripts/oracles/requirements.txt >"$LOGS/oracles" 2>&1 &
ORACLES_JOB=$!
# The peers' own packages (ragas, deepeval), in an environment of their own so that their
# dependencies never move the oracles' pins; the tests let them write the answers files that
# `kind = "file"` systems read (scripts/peers/write_answers.py).
venv_with "$PEERS" scripts/peers/requirements.txt >"$LOGS/peers" 2>&1 &
PEERS_JOB=$!
# The Python package's tests (pandas, pytest, the LangChain packages), for the last step.
venv_with "$PYVENV" python/tests/requirements.txt >"$LOGS/python" 2>&1 &
PYTHON_JOB=$!
export HIERARAG_PYTHON="$VENV/bin/python" HIERARAG_PEERS_PYTHON="$PEERS/bin/python"
# Waits for background job $1, whose log is $2; stops the script if the job failed.
await() {
  local status=0
  wait "$1" || status=$?
  cat "$2"
  if [ "$status" -ne 0 ]; then
    echo "== that setup failed (exit $status)" >&2
    exit "$status"
  fi
}

echo "== cargo fmt --check [${SECONDS} s]"
cargo fmt --all -- --check
echo "== cargo clippy -D warnings [${SECONDS} s]"
cargo clippy --workspace --all-targets --locked -- -D warnings
# Every test, the ignored ones included: those download pinned packages from PyPI (the only
# network they use) or drive Chromium; a plain `cargo test` lists them as ignored, with why.
echo "== cargo test: build [${SECONDS} s]"
cargo test --workspace --locked --no-run
await "$ORACLES_JOB" "$LOGS/oracles"
await "$PEERS_JOB" "$LOGS/peers"
echo "== cargo test (--include-ignored) [${SECONDS} s]"
cargo test --workspace --locked -- --include-ignored
# The Python package: built from this checkout with maturin into a virtual environment of
# its own, beside python/tests/requirements.txt (pandas, pytest, and the LangChain packages
# whose chains the tests pass to `answer_with`; pip fetches them and maturin from PyPI), then
# its pytest suite. The dev profile shares target/ with the cargo build above (a release
# wheel would compile every crate again); `pip install .` on a user's machine builds the
# release profile.
echo "== python: pip install . ($PYVENV) and pytest python/tests [${SECONDS} s]"
await "$PYTHON_JOB" "$LOGS/python"
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}" MATURIN_PEP517_ARGS="--profile dev" \
  "$PYVENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
  --force-reinstall .
"$PYVENV/bin/python" -m pytest -q python/tests
echo "== scripts/test.sh: done [${SECONDS} s]"
