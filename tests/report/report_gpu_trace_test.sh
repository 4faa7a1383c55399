#!/bin/bash
# The HTML report of a real GPU-initiated run, in a real browser: data/nvshmem-4pe-h200 is the
# trace of NVSHMEM 3.4.5's IBGDA over softnic on the H200 (4 PEs, nvshmem_ops --iters 64, under
# `sigmatrace profile` with SIGMATRACE_DOORBELLS=wqe; testbed/nvshmem/run_nvshmem.sh --trace
# --check, whose check found all 4800 WQEs softnic executed in the trace). Analysed here (no GPU
# needed), `report --html --plots`, then the page checked in headless Chromium: the GPU matrix,
# bandwidth per GPU, doorbell rate and doorbells per kernel drawn, their numbers aggregate.json's,
# and the 4800 WQEs all there.
# Usage: report_gpu_trace_test.sh BUILD_DIR SOURCE_DIR. Exit 77 (skipped) without Chromium.
build=$1 src=$2
. "$src/scripts/lib/shell_test.sh"
st=$build/bin/sigmatrace
[ -x "$st" ] || skip "$st is not built"
source "$src/tests/report/browser_check.sh"
find_browser_or_skip

test_work_dir work
exp=$work/exp
cp -r "$src/tests/report/data/nvshmem-4pe-h200" "$exp"
"$st" analyze -q "$exp" >"$work/analyze.log" 2>&1 || { cat "$work/analyze.log"; fail "analyze failed"; }
report_and_check "$exp" "$work" --gpu-wqes 4800
echo "PASS: the report of NVSHMEM's 4-PE IBGDA run rendered in $("$browser" --version 2>/dev/null | head -1), its GPU figures checked"
