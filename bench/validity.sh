#!/usr/bin/env bash
# The validity stage (`hierarag_validity::validity()`) on 10,000 synthetic and 10,000 human
# generated questions × 4 systems with 1,000 bootstrap resamples, against numpy + scipy
# computing the same statistics from the same inputs in this one run on this machine, and the
# check of every deterministic value (and, loosely, every bootstrap interval) between the two.
# See docs/benchmarks.md ("Validity").
#
#   bench/validity.sh                           # build the example, full size, best of 3 each
#   bench/validity.sh --no-build                # use the existing release example
#   bench/validity.sh --synthetic 2000 --human 2000 --reps 1   # other options go to the example
#   bench/validity.sh --keep DIR                # write the inputs and validity.json to DIR
#
# Python: $HIERARAG_PYTHON, else the CI oracles' venv (numpy, scipy). Prints one line at the
# end: hierarag's seconds, numpy + scipy's, their ratio, and whether hierarag is under 15 s.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
cd "$ROOT"

BUILD=1
DIR=""
REPS=3
EXTRA=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-build) BUILD=0; shift ;;
    --keep) DIR="$2"; shift 2 ;;
    --reps) REPS="$2"; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) EXTRA+=("$1"); shift ;;
  esac
done

PY="${HIERARAG_PYTHON:-$HOME/.cache/hierarag-ci/test/venv-oracles/bin/python}"
"$PY" -c "import numpy, scipy" 2>/dev/null \
  || { echo "[validity-bench] $PY lacks numpy or scipy (set HIERARAG_PYTHON)" >&2; exit 1; }

if [[ $BUILD -eq 1 ]]; then
  echo "[validity-bench] cargo build --release -p hierarag-validity --example validity_bench" >&2
  cargo build --release -p hierarag-validity --example validity_bench >&2
fi
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/validity_bench"
[[ -x "$BIN" ]] || { echo "[validity-bench] $BIN not found (run without --no-build)" >&2; exit 1; }

if [[ -z "$DIR" ]]; then
  DIR="$(mktemp -d)"
  trap 'rm -rf "$DIR"' EXIT
fi

"$BIN" --out "$DIR" --reps "$REPS" "${EXTRA[@]}"
"$PY" "$HERE/validity.py" "$DIR" --reps "$REPS"
