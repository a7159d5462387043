#!/usr/bin/env bash
# `hierarag plan` on a 1M-row Parquet corpus in FineWeb's schema, against DuckDB and
# pyarrow + numpy measured in this one run on this machine. See docs/benchmarks.md.
#
#   bench/plan.sh                 # build, generate bench/out/fineweb-1m.parquet if absent, 3 reps
#   bench/plan.sh --no-build      # use the existing target/release/hierarag
#   bench/plan.sh --reps 5 --engines hierarag,duckdb   # other options go to bench/plan.py
#   bench/plan.sh --no-build --shards /work/data/fineweb-shaped/3M --engines hierarag,duckdb,duckdb-space
#                                 # a corpus of bench/fineweb.py (its shards) instead
#   bench/.venv/bin/python bench/plan.py --report bench/out/plan-results.json   # table again
#
# Creates bench/.venv (python3 -m venv) if needed, installs numpy pyarrow duckdb into it,
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
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) EXTRA+=("$1"); shift ;;
  esac
done

# shellcheck source=bench/venv.sh
source "$HERE/venv.sh"
bench_python plan-bench "import numpy, pyarrow, duckdb" numpy pyarrow duckdb
bench_binary plan-bench "$BUILD"

# The vocabulary of the generated texts comes from the Wikipedia sample; it is only needed
# when the corpus is generated, and plan.py falls back on a built-in word list without it.
VOCAB=()
if [[ ! -s "$HERE/out/fineweb-1m.parquet" && " ${EXTRA[*]} " != *" --shards "* ]]; then
  if SRC="$("$BIN" -q data fetch wiki-sample --print-path 2>/dev/null | tail -n 1)" && [[ -s "$SRC" ]]; then
    VOCAB=(--vocab "$SRC")
  else
    echo "[plan-bench] no Wikipedia sample; texts will use the built-in word list" >&2
  fi
fi

exec "$PY" "$HERE/plan.py" --hierarag "$BIN" "${VOCAB[@]}" "${EXTRA[@]}"
