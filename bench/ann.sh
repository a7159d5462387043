#!/usr/bin/env bash
# Dense retrieval at scale: hierarag's HNSW graph (usearch, memory-mapped) against hnswlib on
# 1 M MiniLM-shaped vectors of 384 dimensions (real MiniLM rows of the Wikipedia sample expanded
# with seeded interpolations and noise; real MiniLM question embeddings as queries), and the
# embedded MiniLM's time per million 512-word chunks. See docs/benchmarks.md, "Dense retrieval at
# scale".
#
#   bench/ann.sh                      # 1 M rows, 1,000 queries, ef_search 64,128,256,512, MiniLM timed
#                                     # on 20,000 chunks; everything under bench/out/ann
#   bench/ann.sh --size 100k --timing-chunks 0      # a quick run
#   bench/ann.sh --no-build           # use the binaries already built
#   bench/.venv/bin/python bench/ann.py --help      # every option of the driver
#
# Builds `hierarag` and the `ann_bench` example (crates/hierarag-run/examples/ann_bench.rs) in
# release; creates bench/.venv if needed and installs numpy and hnswlib 0.8.0.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
cd "$ROOT"

BUILD=1
EXTRA=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-build) BUILD=0; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) EXTRA+=("$1"); shift ;;
  esac
done

# shellcheck source=bench/venv.sh
source "$HERE/venv.sh"
bench_python ann-bench "import numpy, hnswlib" numpy hnswlib==0.8.0
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
if [[ $BUILD -eq 1 ]]; then
  echo "[ann-bench] cargo build --release -p hierarag -p hierarag-run --example ann_bench" >&2
  cargo build --release -p hierarag >&2
  cargo build --release -p hierarag-run --example ann_bench >&2
fi
BIN="$TARGET/release/hierarag"
ANN="$TARGET/release/examples/ann_bench"
for f in "$BIN" "$ANN"; do
  [[ -x "$f" ]] || { echo "[ann-bench] $f not found (run without --no-build)" >&2; exit 1; }
done

exec "$PY" "$HERE/ann.py" --bin "$BIN" --ann-bench "$ANN" "${EXTRA[@]}"
