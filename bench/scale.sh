#!/usr/bin/env bash
# BM25 at FineWeb scale: `hierarag index` / `hierarag retrieve` over FineWeb-shaped Parquet
# corpora against PISA (block-max MaxScore) and bm25s, measured in this one run on this machine.
# See docs/benchmarks.md, "BM25 at FineWeb scale".
#
#   bench/scale.sh                          # sizes 0.1M,1M,3M; corpora generated once under
#                                           # /work/data/fineweb-shaped (about 2.3 GB a million rows)
#   bench/scale.sh --sizes 1M               # any list of sizes (0.1M, 1M, 3M, 15M, 250k ...)
#   bench/scale.sh --bin /tmp/hierarag      # another binary (default target/release/hierarag)
#   bench/scale.sh --build                  # cargo build --release -p hierarag first
#   bench/.venv/bin/python bench/scale.py --report bench/out/scale-results.json   # table again
#
# Anything else goes to bench/scale.py (`bench/scale.sh --help-driver`): --engines hierarag,pisa,
# --root DIR, --queries N, --query-reps N, --index-reps N, --mem-limit-gb G, --keep-indexes, --out DIR.
# Creates bench/.venv if needed and installs numpy pyarrow bm25s numba PyStemmer pyterrier-pisa.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
cd "$ROOT"

BUILD=0
BIN="$ROOT/target/release/hierarag"
EXTRA=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) BUILD=1; shift ;;
    --bin) BIN="$2"; shift 2 ;;
    --bin=*) BIN="${1#*=}"; shift ;;
    --help-driver) EXTRA+=("--help"); shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) EXTRA+=("$1"); shift ;;
  esac
done

# shellcheck source=bench/venv.sh
source "$HERE/venv.sh"
bench_python scale-bench "import numpy, pyarrow, bm25s, numba, Stemmer, pyterrier_pisa" \
  numpy pyarrow bm25s numba PyStemmer pyterrier-pisa
if [[ -z "${JAVA_HOME:-}" ]] && command -v java >/dev/null 2>&1; then
  JAVA_HOME="$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")"
  export JAVA_HOME
fi
if [[ $BUILD -eq 1 ]]; then
  bench_binary scale-bench 1
  BIN="$ROOT/target/release/hierarag"
fi
[[ -x "$BIN" ]] || { echo "[scale-bench] $BIN not found (build it, or pass --bin PATH)" >&2; exit 1; }

# The generator's vocabulary is the Wikipedia sample (only read when a corpus is generated).
VOCAB=()
if SRC="$("$BIN" -q data fetch wiki-sample --print-path 2>/dev/null | tail -n 1)" && [[ -s "$SRC" ]]; then
  VOCAB=(--vocab "$SRC")
else
  echo "[scale-bench] no Wikipedia sample; a new corpus would use plan.py's built-in word list" >&2
fi

exec "$PY" "$HERE/scale.py" --bin "$BIN" "${VOCAB[@]}" "${EXTRA[@]}"
