#!/usr/bin/env bash
# BM25 on a Korean known-item task, with each analyzer: the question of every KorQuAD 1.0
# development item against the 964 Korean Wikipedia paragraphs the questions were written from
# (the paragraph is the one relevant document). nDCG@10, Recall@10 and MRR for `--language en`
# (the English analyzer: whole words, English stemmer) and `--language ko` (CJK bigrams). See
# docs/benchmarks.md ("Korean retrieval").
#
#   bench/korean.sh                              # build, download KorQuAD_v1.0_dev.json once
#   bench/korean.sh --no-build --data FILE.json  # a copy of the file you already have
#
# Needs cargo and python3; the data (3.9 MB, CC BY-ND 2.0 KR) is downloaded from
# korquad.github.io into bench/out/korean/ unless --data is given. Nothing else is installed.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
cd "$ROOT"

BUILD=1
DATA=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-build) BUILD=0; shift ;;
    --data) DATA="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

# shellcheck source=bench/venv.sh
source "$HERE/venv.sh"
bench_binary korean-bench "$BUILD"
OUT="$HERE/out/korean"
mkdir -p "$OUT"
if [[ -z "$DATA" ]]; then
  DATA="$OUT/KorQuAD_v1.0_dev.json"
  if [[ ! -s "$DATA" ]]; then
    echo "[korean-bench] downloading KorQuAD_v1.0_dev.json" >&2
    curl -fsSL -o "$DATA" https://korquad.github.io/dataset/KorQuAD_v1.0_dev.json
  fi
fi
python3 "$HERE/korean.py" --data "$DATA" --bin "$BIN" --out "$OUT"
