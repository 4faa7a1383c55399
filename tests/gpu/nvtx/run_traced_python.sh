# Sourced by the nvtx provider's GPU test scripts: run_traced_python NAME SIGMATRACE SCRIPT ARGS...
# runs a Python program untraced, then under `sigmatrace profile`, requires the same output, and
# analyses the experiment (no SQLite: the GPU machine has none). Leaves the work directory in $w
# (plain.out: the program's output; exp/: the experiment), removed at exit. Exits 77 when the
# program says it skipped (no torch, no GPU), 1 when a run fails or the output changed.
run_traced_python() {
  local name=$1 st=$2 script=$3
  shift 3
  local py=${PYTHON:-python3}
  w=$(mktemp -d "/tmp/$name.XXXXXX")
  trap 'rm -rf "$w"' EXIT
  "$py" "$script" "$@" > "$w/plain.out" 2>&1
  local rc=$?
  if [ $rc = 77 ]; then cat "$w/plain.out"; exit 77; fi
  [ $rc = 0 ] || { cat "$w/plain.out"; echo "untraced run failed"; exit 1; }
  SIGMATRACE_RUN_ID=$name-$$ "$st" profile -o "$w/exp" -- "$py" "$script" "$@" > "$w/traced.out" 2>&1 || {
    cat "$w/traced.out"; echo "traced run failed"; exit 1; }
  cmp -s "$w/plain.out" "$w/traced.out" || { echo "output changed by tracing:"; diff "$w/plain.out" "$w/traced.out"; exit 1; }
  "$st" analyze -q --no-sqlite "$w/exp" || exit 1
  "$st" info "$w/exp" | head -3
}
