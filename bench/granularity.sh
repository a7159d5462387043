#!/usr/bin/env bash
# The recommended granularity on generated scores of known structure: the share of
# recommendations per level, false moves past the level carrying an effect, and power, for the
# first release's rule and the current one. See docs/benchmarks.md ("Granularity").
#
#   bench/granularity.sh              # 1,000 seeds a scenario, 1,000 bootstrap resamples (~4 min)
#   bench/granularity.sh 0            # only the power plans of five pilots (~75 s)
#   bench/granularity.sh 200 500      # SEEDS BOOTSTRAP
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo run --quiet --release -p hierarag-analysis --example simulate_granularity -- "${1:-1000}" "${2:-1000}"
