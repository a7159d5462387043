#!/usr/bin/env bash
# `hierarag analyze` on 10,000 generated scored questions (rq2 shape, bootstrap and
# permutations included), against numpy + scikit-learn measured in this one run on this
# machine. See docs/benchmarks.md ("Analysis").
#
#   bench/analysis.sh                 # build, generate bench/out/analysis-10k/ if absent, 5 reps
#   bench/analysis.sh --no-build      # use the existing target/release/hierarag
#   bench/analysis.sh --reps 3 --n 100000 --factorial 1000   # other options go to bench/analysis.py
#   bench/.venv/bin/python bench/analysis.py --report bench/out/analysis-results.json   # table again
#
# Creates bench/.venv (python3 -m venv) if needed, installs numpy scikit-learn into it,
# and writes everything to bench/out/.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
cd "$ROOT"

BUILD=1
EXTRA=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-build) BUILD=0; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) EXTRA+=("$1"); shift ;;
  esac
done

# shellcheck source=bench/venv.sh
source "$HERE/venv.sh"
bench_python analysis-bench "import numpy, sklearn, scipy" numpy scikit-learn scipy
bench_binary analysis-bench "$BUILD"

exec "$PY" "$HERE/analysis.py" --hierarag "$BIN" "${EXTRA[@]}"
