#!/usr/bin/env bash
# The release profile's settings, measured: for each variant, a cold `cargo build --release` of
# the binary (its own target directory, so nothing is shared between variants), a rebuild after
# a change to the top crate (the loop of someone who edits and reruns), then the binary's time on
# three workloads that exercise the hot code of different crates:
#   - smoke: index the Wikipedia sample (10,033 articles) and run its 10,033 titles as queries
#     (tantivy, the corpus readers, trec_eval's metrics);
#   - cs: `eval text` over 2,000 pairs, CS through the embedded MiniLM (the models crate's
#     kernels);
#   - generate: the quickstart config cut to 4 questions and one system (BM25): SmolLM2-135M
#     generates, filters and answers (the smollm2 crate's kernels).
# See docs/benchmarks.md ("Release profile").
#
#   bench/profile.sh                    # every variant below
#   bench/profile.sh current nolto      # some of them
#
# Needs the assets (`hierarag models fetch minilm smollm2`, `hierarag data fetch wiki-sample`)
# in $HIERARAG_HOME; writes bench/out/profile/ and bench/out/profile.tsv. Run it on a quiet
# machine: every number is a wall time.
set -euo pipefail
cd "$(dirname "$0")/.."

# name → cargo --config overrides of [profile.release] (empty: Cargo.toml's own settings).
declare -A VARIANTS=(
  [current]=""
  [nolto]="profile.release.lto=false"
  [default]="profile.release.lto=false profile.release.codegen-units=16 profile.release.debug=false"
)
ORDER=(current nolto default)
[ $# -gt 0 ] && ORDER=("$@")

OUT=bench/out/profile
mkdir -p "$OUT"
TSV=bench/out/profile.tsv
[ -f "$TSV" ] || printf 'variant\tcold_build_s\trebuild_s\tbinary_mb\tsmoke_s\tcs_s\tgenerate_s\n' > "$TSV"

seconds() { # runs "$@", prints its wall time in seconds
  local start end
  start=$(date +%s.%N)
  "$@" > /dev/null 2>&1
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}

# The workloads' inputs, built once from the quickstart config and the Wikipedia sample.
PAIRS="$OUT/pairs.jsonl"
CONFIG="$OUT/generate.toml"
python3 - "$PAIRS" <<'EOF'
import json, sys
# Reference and prediction of each pair: two different sentences of one made-up record, so
# that the cosines vary and every text has to go through the model.
with open(sys.argv[1], "w") as out:
    for i in range(2000):
        ref = f"The station number {i} opened in {1900 + i % 120} and serves {i % 17 + 2} lines of the network."
        pred = f"It serves {i % 13 + 1} lines and was opened in {1890 + i % 130}, says entry {i}."
        out.write(json.dumps({"id": str(i), "reference": ref, "prediction": pred}) + "\n")
EOF
python3 - examples/quickstart.toml "$CONFIG" <<'EOF'
import sys
text = open(sys.argv[1]).read().replace("per_dimension = 4", "per_dimension = 1")
start = text.index('\n[[system]]\nname = "hybrid"')
end = text.index("\n[", start + 1)
open(sys.argv[2], "w").write(text[:start] + text[end:])
EOF

for name in "${ORDER[@]}"; do
  overrides=()
  for setting in ${VARIANTS[$name]}; do overrides+=(--config "$setting"); done
  target="$OUT/target-$name"
  rm -rf "$target"
  echo "== $name: ${VARIANTS[$name]:-as Cargo.toml sets it}"
  cold=$(CARGO_TARGET_DIR=$target seconds cargo build --release --locked -p hierarag "${overrides[@]}")
  touch crates/hierarag/src/main.rs crates/hierarag-run/src/lib.rs
  rebuild=$(CARGO_TARGET_DIR=$target seconds cargo build --release --locked -p hierarag "${overrides[@]}")
  bin="$target/release/hierarag"
  mb=$(( $(stat -c %s "$bin") / 1000000 ))
  rm -rf "$OUT/smoke" "$OUT/run"
  smoke=$(seconds "$bin" smoke --out "$OUT/smoke" --quiet)
  cs=$(seconds "$bin" eval text --pairs "$PAIRS" --quiet --json)
  generate=$(seconds "$bin" run "$CONFIG" --dir "$OUT/run")
  printf '%s\t%.0f\t%.0f\t%s\t%.1f\t%.1f\t%.1f\n' "$name" "$cold" "$rebuild" "$mb" "$smoke" "$cs" "$generate" | tee -a "$TSV"
  rm -rf "$target"
done
column -t "$TSV"
