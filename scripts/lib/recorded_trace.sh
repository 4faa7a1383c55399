# Sourced by the tests that analyse a trace recorded on the GPU machine:
#   analyze_recorded SIGMATRACE DATA_DIR
# copies DATA_DIR's trace files and manifest into a new work directory ($work, removed at exit
# unless SIGMATRACE_KEEP_TEST_DIRS was set) as $exp, and analyses it there; on failure prints the
# analysis log and exits 1.
analyze_recorded() {
  local st=$1 data=$2 keep=${SIGMATRACE_KEEP_TEST_DIRS:-}
  unset SIGMATRACE_KEEP_TEST_DIRS
  work=$(mktemp -d)
  [ -n "$keep" ] && echo "keeping $work" || trap 'rm -rf "$work"' EXIT
  exp=$work/exp
  mkdir -p "$exp"
  cp "$data"/*.sgt "$data/manifest.json" "$exp/"
  "$st" analyze -q "$exp" >"$work/analyze.log" 2>&1 || { cat "$work/analyze.log"; echo "FAIL: analyze failed"; exit 1; }
}
