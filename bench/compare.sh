#!/usr/bin/env bash
# `hierarag compare` on 10,000 generated scored questions × 4 systems (1,000 bootstrap
# resamples; each system's own analysis with 1,000 permutations), against numpy + scipy +
# statsmodels + pingouin measured in this one run on this machine. See docs/benchmarks.md
# ("Comparison").
#
#   bench/compare.sh                  # build, generate bench/out/compare-10k-4/ if absent, 5 reps
#   bench/compare.sh --no-build       # use the existing target/release/hierarag
#   bench/compare.sh --no-build --reps 3 --n 2000 --systems 3   # other options go to bench/compare.py
#   bench/.venv/bin/python bench/compare.py --report bench/out/compare-results.json   # table again
#
# Creates bench/.venv (python3 -m venv) if needed, installs numpy scipy statsmodels pandas
# pingouin scikit-learn into it, and writes everything to bench/out/.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
cd "$ROOT"

BUILD=1
EXTRA=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-build) BUILD=0; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) EXTRA+=("$1"); shift ;;
  esac
done

# shellcheck source=bench/venv.sh
source "$HERE/venv.sh"
bench_python compare-bench "import numpy, scipy, statsmodels, pingouin, sklearn" numpy scipy statsmodels pandas pingouin scikit-learn
bench_binary compare-bench "$BUILD"

exec "$PY" "$HERE/compare.py" --hierarag "$BIN" "${EXTRA[@]}"
