#!/usr/bin/env bash
# Throughput of a `kind = "command"` system against the program's own speed, measured in one
# run (bench/command_system.py). See docs/benchmarks.md ("Command systems").
#
#   bench/command_system.sh                    # build release, 20,000 questions, 64 outstanding
#   bench/command_system.sh --questions 50000  # other options go to bench/command_system.py
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo build --quiet --release -p hierarag
python3 bench/command_system.py "$@"
