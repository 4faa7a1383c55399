# shellcheck shell=bash
# Sourced, after shell_test.sh, by the tests that analyse a trace recorded on the GPU machine:
#   analyze_recorded SIGMATRACE DATA_DIR
# copies DATA_DIR's trace files and manifest into a new work directory ($work: test_work_dir) as
# $exp, and analyses it there; on failure prints the analysis log and exits 1.
analyze_recorded() {
  local st=$1 data=$2
  test_work_dir work
  exp=$work/exp
  mkdir -p "$exp"
  cp "$data"/*.sgt "$data/manifest.json" "$exp/"
  "$st" analyze -q "$exp" >"$work/analyze.log" 2>&1 || { cat "$work/analyze.log"; fail "analyze failed"; }
}
