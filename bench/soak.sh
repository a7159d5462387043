#!/usr/bin/env bash
# The soak test of issue 56: ~10,000 LLM calls through generate, answer (the builtin pipeline,
# an http and a command system) and judge, 5 % of the attempts failing (a 500 quoting the key,
# a reply held past the timeout after the work was done, a cut reply, a 503), three SIGKILLs at
# random moments and one full disk, in direct and in batch mode; each must end byte-identical
# to a clean run, with no question lost or duplicated, the budget counting at least what the
# server billed, and no file holding the key (hierarag's example `soak`). See
# docs/benchmarks.md ("Soak"). The full disk mounts a tmpfs: run as root for it.
#
#   bench/soak.sh                 # 1,650 questions (about 10,000 calls), seed 7
#   bench/soak.sh 400 3           # QUESTIONS SEED
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo build --quiet --release -p hierarag
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
cargo run --quiet --release -p hierarag --example soak -- "$target_dir/release/hierarag" "$@"
