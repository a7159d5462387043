#!/usr/bin/env bash
# The batch path's overhead: the generate stage of 3,336 items (rq2's size) with its generator
# and filter in batch mode, against the batch mock (OpenAI's files and batches) that takes a
# fixed time per request; wall time over the mock's own time, and peak memory
# (hierarag-pipeline's example bench_batch). See docs/benchmarks.md ("Batch inference").
#
#   bench/batch.sh                  # 3,336 items, 10 ms a request
#   bench/batch.sh 3336 20 --trace  # ITEMS PER_REQUEST_MS, with the rounds' timeline on stderr
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo run --quiet --release -p hierarag-pipeline --example bench_batch -- "$@"
