#!/usr/bin/env bash
# LLM-layer benchmarks (embedded SmolLM2 vs llama.cpp server, MiniLM vs sentence-transformers,
# ChatClient vs raw reqwest), every peer measured in the same run. See docs/benchmarks.md.
#   bench/llm.sh [--no-build] [--only smollm2,minilm,client] [--reps N] [--threads 1,2]
# Needs HIERARAG_HOME (default target/test-home) holding the SmolLM2 GGUF, the MiniLM model
# and data/wiki-sample.jsonl; .venv-oracles (xllamacpp) and a sentence-transformers venv
# (HIERARAG_ST_PY, default /tmp/st-venv/bin/python).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export HIERARAG_HOME="${HIERARAG_HOME:-$PWD/target/test-home}"
exec python3 bench/llm.py "$@"
