#!/usr/bin/env bash
# Wall time of a `kind = "http"` system against a service that holds each request 100 ms, 64 in
# flight, against the service's own time, measured in one run (hierarag-pipeline's example
# bench_http_system). See docs/benchmarks.md ("HTTP systems").
#
#   bench/http_system.sh                  # 3,200 questions, 100 ms, 64 in flight
#   bench/http_system.sh 6400 100 64      # QUESTIONS HOLD_MS CONCURRENCY
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo build --quiet --release -p hierarag
cargo run --quiet --release -p hierarag-pipeline --example bench_http_system -- "$@"
