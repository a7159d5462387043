# Sourced by bench/plan.sh and bench/analysis.sh: the shared venv and release build.
#
#   bench_python TAG "import a, b" pip-name...   sets PY to bench/.venv's python (created if
#                                                 needed), installing the packages when the
#                                                 import fails, and logs their versions
#   bench_binary TAG BUILD                        builds hierarag when BUILD is 1; sets BIN
# Expects HERE (bench/) and ROOT (the repository) to be set.

bench_python() {
  local tag="$1" imports="$2"
  shift 2
  local venv="$HERE/.venv"
  PY="$venv/bin/python"
  if [[ ! -x "$PY" ]]; then
    echo "[$tag] creating $venv" >&2
    python3 -m venv "$venv"
    "$PY" -m pip install -q --upgrade pip
  fi
  if ! "$PY" -c "$imports" 2>/dev/null; then
    echo "[$tag] installing $* into $venv" >&2
    "$PY" -m pip install -q "$@"
  fi
  local names
  names="$(printf '%s|' "$@")"
  "$PY" -m pip freeze 2>/dev/null | grep -iE "^(${names%|})==" | sed "s/^/[$tag] /" >&2 || true
}

bench_binary() {
  local tag="$1" build="$2"
  if [[ $build -eq 1 ]]; then
    echo "[$tag] cargo build --release -p hierarag" >&2
    cargo build --release -p hierarag >&2
  fi
  BIN="$ROOT/target/release/hierarag"
  [[ -x "$BIN" ]] || { echo "[$tag] $BIN not found (run without --no-build)" >&2; exit 1; }
}
