#!/usr/bin/env bash
# HieraRAG BM25 benchmark against bm25s (numba backend) and PISA (pyterrier-pisa),
# all measured in this one run on this machine. See docs/benchmarks.md.
#
#   bench/run.sh                  # scales 1x, 10x, 100x (+ memory at 4x)
#   bench/run.sh --quick          # 1x only (+ memory at 4x)
#   bench/run.sh --scales 1,10    # any list of scales
#   bench/run.sh --no-build       # use the existing target/release/hierarag
#   bench/.venv/bin/python bench/bench.py --report bench/out/results.json   # table again
#
# Anything else is passed to bench/bench.py (see `bench/run.sh --help-driver`),
# e.g. --engines hierarag,pisa, --query-reps 5, --index-reps 3, --keep-indexes.
# Creates bench/.venv (python3 -m venv) and writes everything to bench/out/.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
cd "$ROOT"

SCALES="1,10,100"
BUILD=1
EXTRA=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --scales) SCALES="$2"; shift 2 ;;
    --scales=*) SCALES="${1#*=}"; shift ;;
    --quick) SCALES="1"; shift ;;
    --no-build) BUILD=0; shift ;;
    --help-driver) EXTRA+=("--help"); shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) EXTRA+=("$1"); shift ;;
  esac
done

VENV="$HERE/.venv"
PY="$VENV/bin/python"
if [[ ! -x "$PY" ]] || ! "$PY" -c 'import bm25s, numba, Stemmer, pyterrier_pisa' 2>/dev/null; then
  echo "[bench] creating $VENV and installing bm25s numba PyStemmer pyterrier-pisa" >&2
  python3 -m venv "$VENV"
  "$PY" -m pip install -q --upgrade pip
  # pyterrier-pisa pulls in python-terrier, pandas, ir_datasets; its PISA binding
  # (a compiled extension) does not start a JVM, so Java is not needed for it.
  "$PY" -m pip install -q bm25s numba PyStemmer pyterrier-pisa
fi
# pyterrier may look for a JDK when it starts Terrier (not used here); point it at one if present.
if [[ -z "${JAVA_HOME:-}" ]] && command -v java >/dev/null 2>&1; then
  JAVA_HOME="$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")"
  export JAVA_HOME
fi
"$PY" -m pip freeze 2>/dev/null | grep -iE '^(bm25s|numba|llvmlite|numpy|pandas|PyStemmer|pyterrier[-_]pisa|pyterrier|python[-_]terrier)==' \
  | sed 's/^/[bench] /' >&2 || true

if [[ $BUILD -eq 1 ]]; then
  echo "[bench] cargo build --release -p hierarag" >&2
  cargo build --release -p hierarag >&2
fi
BIN="$ROOT/target/release/hierarag"
[[ -x "$BIN" ]] || { echo "[bench] $BIN not found (run without --no-build)" >&2; exit 1; }

SRC="$("$BIN" -q data fetch wiki-sample --print-path | tail -n 1)"
[[ -s "$SRC" ]] || { echo "[bench] could not fetch the Wikipedia sample" >&2; exit 1; }

exec "$PY" "$HERE/bench.py" --scales "$SCALES" --hierarag "$BIN" --source "$SRC" "${EXTRA[@]}"
