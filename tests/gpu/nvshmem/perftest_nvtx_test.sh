#!/usr/bin/env bash
# NVSHMEM's own NVTX ranges on its perftests (label gpu; docs/nvtx.md): shmem_put_latency on 2
# PEs over softnic (IBGDA), with NVSHMEM_NVTX=all, untraced and then traced with WQE recovery.
# The traced run's output must be the untraced run's (numbers aside: bench/nvshmem's
# output_unchanged.py); the analysis must put each operation where the program put it
# (check_perftest_nvtx.py): the perftest's own kernels, launched outside any NVSHMEM call, in no
# range, with exactly their puts; NVSHMEM's barriers, one range per nvshmem_barrier_all call, with
# the operations of the kernels NVSHMEM launched inside them; nothing else outside a range.
# Usage: perftest_nvtx_test.sh BUILD_DIR NVSHMEM_HOME PERFTESTS_DIR
#   PERFTESTS_DIR: NVSHMEM's perftest binaries (docs/nvshmem.md, "NVSHMEM's perftests"); exit 77
#   (skipped) when it is not given, or without a GPU.
# SIGMATRACE_KEEP_TEST_DIRS=1 keeps the run's directory; PERFTEST_NVTX_KEEP=DIR copies the
# experiment there (the recorded trace CI analyses comes from there).
set -u
build=$1 nvshmem=$2 perftests=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
test=shmem_put_latency
program=$perftests/$test
if [ -z "$perftests" ]; then
  echo "skipped: NVSHMEM_PERFTESTS was not set when this tree was configured (NVSHMEM's perftest binaries: docs/nvshmem.md says how to build them)"
  exit 77
fi
[ -x "$program" ] || { echo "skipped: no $test in NVSHMEM_PERFTESTS ($perftests)"; exit 77; }
w=$(mktemp -d /tmp/perftest-nvtx.XXXXXX)
[ -n "${SIGMATRACE_KEEP_TEST_DIRS:-}" ] && echo "keeping $w" || trap 'rm -rf "$w"' EXIT
unset SIGMATRACE_KEEP_TEST_DIRS
# 8 and 4096 bytes (-f 512: the next size is past -e), 20 warm-up and 200 timed iterations each.
min=8 max=4096 factor=512 warmup=20 iters=200
args=(-b $min -e $max -f $factor -n $iters -w $warmup)
export NVSHMEM_NVTX=all
mkdir -p "$w/runs"
for mode in untraced wqe; do
  run=$w/runs/$test-$mode-1
  flags=()
  [ $mode = wqe ] && flags=(--trace --check)
  env ${flags:+SIGMATRACE_DOORBELLS=wqe} "$root/testbed/nvshmem/run_nvshmem.sh" --build "$build" --nvshmem "$nvshmem" --out "$run" --timeout 120 \
    "${flags[@]}" 2 -- "$program" "${args[@]}" > "$run.log" 2>&1
  rc=$?
  [ $rc = 0 ] || { cat "$run.log"; echo "FAIL: the $mode run ended with status $rc"; exit 1; }
done
python3 "$root/bench/nvshmem/output_unchanged.py" "$w" || { echo "FAIL: tracing changed what the perftest printed"; exit 1; }
exp=$w/runs/$test-wqe-1/exp
"$build/bin/sigmatrace" analyze -q --no-sqlite "$exp" > "$w/analyze.log" 2>&1 || { cat "$w/analyze.log"; exit 1; }
if [ -n "${PERFTEST_NVTX_KEEP:-}" ]; then
  mkdir -p "$PERFTEST_NVTX_KEEP"
  cp "$exp"/*.sgt "$exp/manifest.json" "$w/runs/$test-wqe-1"/pe*.log "$PERFTEST_NVTX_KEEP/"
fi
python3 "$root/tests/gpu/checks/check_perftest_nvtx.py" "$exp/aggregate.json" $min $max $factor $((warmup + iters))
