#!/usr/bin/env bash
# The hang dump on GPU-initiated RDMA (label gpu; docs/hangs.md): nvshmem_hang on 2 PEs over
# softnic (NVSHMEM IBGDA), traced with --hang-dump 2 (SIGMATRACE_HANG_DUMP_S), hanging on purpose
# for a bounded time (its kernels' waits time out after --wait-s):
#   peer-silent: PE 0's kernel wait_for_put waits for a put PE 1 never issues (PE 1 idles on the
#                host): only PE 0 dumps, and the analysis says its kernel waits for a put rank 1
#                never issued;
#   deadlock:    each PE's kernel wait_then_put waits before it puts: both dump, each waiting for
#                the other.
# The program's own lines must be exactly those it prints untraced (check_hang.py).
# Usage: hang_test.sh BUILD_DIR NVSHMEM_HOME PROGRAM peer-silent|deadlock. Exit 77 without a GPU.
# SIGMATRACE_KEEP_TEST_DIRS=1 keeps the run's directory (the experiment in it: exp/).
set -u
build=$1 nvshmem=$2 program=$3 mode=$4
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
[ -n "${SIGMATRACE_KEEP_TEST_DIRS:-}" ] && echo "keeping $out" || trap 'rm -rf "$out"' EXIT
unset SIGMATRACE_KEEP_TEST_DIRS
wait_s=6
SIGMATRACE_HANG_DUMP_S=2 "$here/../../../testbed/nvshmem/run_nvshmem.sh" --build "$build" --nvshmem "$nvshmem" --trace --out "$out" --timeout 90 2 -- \
  "$program" --mode "$mode" --wait-s $wait_s
rc=$?
[ $rc = 0 ] || exit $rc
"$build/bin/sigmatrace" analyze -q --no-sqlite "$out/exp" >"$out/analyze.log" 2>&1 || { cat "$out/analyze.log"; exit 1; }
"$build/bin/sigmatrace" report "$out/exp" | sed -n '/^hang dumps/,/^$/p'
python3 "$here/../checks/check_hang.py" "$mode" $wait_s "$out/exp/aggregate.json" "$out"/pe0.log "$out"/pe1.log
