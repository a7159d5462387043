#!/usr/bin/env bash
# `hierarag evaluate` (MiniLM cosine, ROUGE-1, BLEU, retrieval metrics) of a paper-size rq2 run:
# 3,336 questions × 3 systems, against sentence-transformers encoding the same texts with the
# same MiniLM files, measured in this one run on this machine. See docs/benchmarks.md.
#
#   bench/evaluate.sh                         # generate bench/out/evaluate-3336-3/ if absent, 3 reps
#   bench/evaluate.sh --bin /tmp/hierarag-base --reps 1     # another binary (default target/release/hierarag)
#   bench/evaluate.sh --engines hierarag,st --n 1000 --systems 2   # other options go to bench/evaluate.py
#   python3 bench/evaluate.py --report bench/out/evaluate-results.json   # table again
#
# Builds nothing: build the binary first (cargo build --release -p hierarag). Creates the
# sentence-transformers venv HIERARAG_ST_PY (default /tmp/st-venv/bin/python) if needed.
# Reads HIERARAG_HOME (default ~/.cache/hierarag, as the binary) for the MiniLM model
# (`hierarag models fetch minilm`) and data/wiki-sample.jsonl (`hierarag data fetch wiki-sample`).
# Writes everything to bench/out/.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
cd "$ROOT"

case " $* " in
  *" -h "*|*" --help "*) sed -n '2,15p' "$0"; exit 0 ;;
esac

NEED_PEER=1
case " $* " in
  *" --generate-only "*|*" --report "*) NEED_PEER=0 ;;
esac
case " $* " in
  *" --engines "*) [[ " $* " =~ --engines\ [^\ ]*st ]] || NEED_PEER=0 ;;
esac

ST_PY="${HIERARAG_ST_PY:-/tmp/st-venv/bin/python}"
if [[ $NEED_PEER -eq 1 ]] && ! "$ST_PY" -c "import sentence_transformers, torch" 2>/dev/null; then
  venv="$(dirname "$(dirname "$ST_PY")")"
  echo "[evaluate-bench] creating $venv (torch CPU, sentence-transformers)" >&2
  [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
  # The CPU wheels when their index is reachable, else PyPI's (the same CPU kernels).
  "$venv/bin/pip" install -q torch --index-url https://download.pytorch.org/whl/cpu --retries 1 --timeout 20 \
    || "$venv/bin/pip" install -q torch
  "$venv/bin/pip" install -q sentence-transformers
fi
if [[ $NEED_PEER -eq 1 ]]; then
  "$ST_PY" -m pip freeze 2>/dev/null | grep -iE "^(torch|sentence-transformers|transformers|tokenizers)==" \
    | sed "s/^/[evaluate-bench] /" >&2 || true
fi
export HIERARAG_ST_PY="$ST_PY"
exec python3 "$HERE/evaluate.py" "$@"
