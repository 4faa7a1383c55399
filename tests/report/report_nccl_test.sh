#!/bin/bash
# The HTML report of NCCL's calls, in a real browser: nccl_net_ib_pattern (two ranks driving
# NCCL's IB transport's verbs and its profiler plugin as NCCL 2.28 does, 40 all-reduces each) in
# Full mode over softnic, analysed, `report --html --plots`; then headless Chromium loads the page
# and check_report_dom.py requires the NCCL figure drawn and the calls table to be aggregate.json's.
# Usage: report_nccl_test.sh BUILD_DIR SOURCE_DIR. Exit 77 (skipped) without softnic or Chromium.
build=$1 src=$2
. "$src/scripts/lib/shell_test.sh"
st=$build/bin/sigmatrace
pattern=$build/tests/bin/nccl_net_ib_pattern
[ -x "$st" ] && [ -x "$pattern" ] || skip "sigmatrace or nccl_net_ib_pattern is not built"
[ -e "$build/softnic/libibverbs.so.1" ] || skip "softnic is not built ($build/softnic/libibverbs.so.1 missing)"
source "$src/tests/report/browser_check.sh"
find_browser_or_skip

test_work_dir work
exp=$work/exp
SOFTNIC_FABRIC="report-nccl-$$" SIGMATRACE_RUN_ID="report-nccl-$$" timeout 120 "$st" profile --softnic --mode full -o "$exp" -- \
  "$pattern" --iters 40 >"$work/run.log" 2>&1 || { cat "$work/run.log"; fail "nccl_net_ib_pattern failed"; }
"$st" analyze -q "$exp" >"$work/analyze.log" 2>&1 || { cat "$work/analyze.log"; fail "analyze failed"; }
report_and_check "$exp" "$work"
echo "PASS: the report of NCCL's calls rendered in $("$browser" --version 2>/dev/null | head -1), checked"
