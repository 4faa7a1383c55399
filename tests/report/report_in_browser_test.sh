#!/bin/bash
# The HTML report opened in a real browser: three perftest pairs (WRITE, SEND, READ; two emulated
# hosts, six processes) profiled in Full mode over softnic, analysed, `sigmatrace report --html
# --plots`; then headless Chromium loads report.html and check_report_dom.py asserts on the DOM it
# rendered: no console message at all, every figure drawn (an SVG with marks), the numbers shown
# (tables, heatmap cells) equal to aggregate.json's and to the traffic perftest was told to make,
# and every figure written as a well-formed SVG and PNG.
# Usage: report_in_browser_test.sh BUILD_DIR SOURCE_DIR. Exit 77 (skipped) without softnic,
# perftest or Chromium.
build=$1 src=$2
. "$src/scripts/lib/shell_test.sh"
st=$build/bin/sigmatrace

[ -x "$st" ] || skip "$st is not built"
[ -e "$build/softnic/libibverbs.so.1" ] || skip "softnic is not built ($build/softnic/libibverbs.so.1 missing)"
command -v ib_write_bw >/dev/null && command -v ib_send_bw >/dev/null && command -v ib_read_bw >/dev/null || skip "perftest is not installed"
source "$src/tests/report/browser_check.sh"
find_browser_or_skip

iters=300 size=8192
test_work_dir work
exp=$work/exp
export SIGMATRACE_RUN_ID="report-browser-$$"
export SOFTNIC_FABRIC="report-$$"
source "$src/scripts/lib/ports.sh"
ports=()
while [ ${#ports[@]} -lt 3 ]; do
  p=$(unused_tcp_port)
  [[ " ${ports[*]} " == *" $p "* ]] || ports+=("$p")
done
run() {  # host rank log program args...
  local host=$1 rank=$2 log=$3
  shift 3
  SOFTNIC_HOST=$host RANK=$rank timeout 120 "$st" profile --softnic --host "$host" --mode full --providers ibverbs -o "$exp" -- "$@" \
    >"$work/$log" 2>&1
}
run node-a 0 s1.log ib_write_bw -p "${ports[0]}" -n $iters -s $size & s1=$!
run node-b 2 s2.log ib_send_bw -p "${ports[1]}" -n $iters -s $size & s2=$!
run node-a 4 s3.log ib_read_bw -p "${ports[2]}" -n $iters -s $size & s3=$!
for p in "${ports[@]}"; do wait_tcp_listening "$p" 100 || fail "perftest server on port $p did not start"; done
run node-b 1 c1.log ib_write_bw -p "${ports[0]}" -n $iters -s $size localhost & c1=$!
run node-a 3 c2.log ib_send_bw -p "${ports[1]}" -n $iters -s $size localhost & c2=$!
run node-b 5 c3.log ib_read_bw -p "${ports[2]}" -n $iters -s $size localhost & c3=$!
rc=0
for p in $s1 $s2 $s3 $c1 $c2 $c3; do wait "$p" || rc=1; done
if [ $rc -ne 0 ]; then
  for l in s1 s2 s3 c1 c2 c3; do echo "---- $l"; cat "$work/$l.log"; done
  fail "a perftest process failed"
fi

"$st" analyze -q "$exp" >"$work/analyze.log" 2>&1 || { cat "$work/analyze.log"; fail "analyze failed"; }
report_and_check "$exp" "$work" --ops-per-pair $iters --bytes-per-op $size
echo "PASS: report.html rendered in $("$browser" --version 2>/dev/null | head -1), its numbers and figures checked"
