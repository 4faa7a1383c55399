#!/bin/bash
# analyze --otf2 read back by OTF2's own tools (label integration): real programs over softnic in
# Full mode, their experiments analysed with --otf2, then `otf2-print` must read each archive
# without a warning and check_otf2.py (Debian's python3-otf2) must find every operation, completion,
# NVTX range and NCCL call of trace.sqlite in it, exactly:
#   perftest's ib_write_bw, ib_send_bw, ib_read_bw and ib_atomic_bw (puts, messages, gets, atomics;
#   two emulated hosts); verbs_probe_nvtx (NVTX ranges around its writes); nccl_net_ib_pattern (NCCL's
#   calls, through NCCL's profiler plugin).
# Usage: otf2_test.sh BUILD_DIR SOURCE_DIR. Exit 77 (skipped) without OTF2's tools, perftest or softnic.
build=$1 src=$2
. "$src/scripts/lib/shell_test.sh"
st=$build/bin/sigmatrace
[ -x "$st" ] && [ -e "$build/softnic/libibverbs.so.1" ] || skip "sigmatrace or softnic is not built"
command -v otf2-print >/dev/null || skip "otf2-print is not installed (otf2-tools)"
/usr/bin/python3 -c 'import otf2' 2>/dev/null || skip "OTF2's Python bindings are not installed (python3-otf2)"
for p in ib_write_bw ib_send_bw ib_read_bw ib_atomic_bw; do command -v $p >/dev/null || skip "perftest ($p) is not installed"; done
"$st" analyze --help | grep -q -- '--otf2' || skip "this sigmatrace was built without OTF2"
source "$src/scripts/lib/perftest_pair.sh"
work=""
test_work_dir work
export SIGMATRACE_RUN_ID="otf2-$$" SOFTNIC_FABRIC="otf2-$$"

check() {  # EXP: analysed with --otf2, read back by otf2-print and check_otf2.py
  "$st" analyze -q --otf2 "$1" >"$work/analyze.log" 2>&1 || { cat "$work/analyze.log"; fail "analyze --otf2 failed on $1"; }
  grep 'otf2/traces.otf2' "$work/analyze.log"
  otf2-print "$1/otf2/traces.otf2" >"$work/print.out" 2>"$work/print.err" || { cat "$work/print.err"; fail "otf2-print cannot read $1's archive"; }
  [ ! -s "$work/print.err" ] || { cat "$work/print.err"; fail "otf2-print warned about $1's archive"; }
  /usr/bin/python3 "$src/tests/export/check_otf2.py" "$1" || fail "the OTF2 archive of $1 is not trace.sqlite's"
}

exp=$work/perftest
for prog in ib_write_bw ib_send_bw ib_read_bw ib_atomic_bw; do perftest_pair "$st" "$exp" "$work/$prog" $prog -n 200; done
check "$exp"

if [ -x "$build/tests/bin/verbs_probe_nvtx" ]; then
  timeout 60 "$st" profile --softnic --mode full -o "$work/nvtx" -- "$build/tests/bin/verbs_probe_nvtx" --writes 25 --size 64 \
    >"$work/nvtx.log" 2>&1 || { cat "$work/nvtx.log"; fail "verbs_probe_nvtx failed"; }
  check "$work/nvtx"
else
  echo "NVTX ranges not checked: verbs_probe_nvtx is not built (no NVTX headers)"
fi

timeout 60 "$st" profile --softnic --mode full -o "$work/nccl" -- "$build/tests/bin/nccl_net_ib_pattern" --iters 40 \
  >"$work/nccl.log" 2>&1 || { cat "$work/nccl.log"; fail "nccl_net_ib_pattern failed"; }
check "$work/nccl"
echo "PASS: OTF2 archives of perftest, NVTX ranges and NCCL calls read back by OTF2's tools, exactly trace.sqlite"
