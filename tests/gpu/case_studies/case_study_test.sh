#!/usr/bin/env bash
# A case study as a GPU test: the program on 4 PEs over softnic (NVSHMEM IBGDA), traced with WQE
# recovery; every WQE softnic executed must be in the trace (run_nvshmem.sh --check), and the
# finding recovered from the analysis (aggregate.json) must equal what the program injected:
#   moe: the byte matrix of each of moe_dispatch and moe_combine equals the routing table's;
#   bfs: the slow PE is last at every level's barrier, by the delay it waited (check_bfs_trace.py).
# Usage: case_study_test.sh BUILD_DIR NVSHMEM_HOME moe|bfs PROGRAM. Exit 77 (skipped) without a GPU.
# SIGMATRACE_KEEP_TEST_DIRS=1 keeps the run's directory (the experiment in it: exp/).
set -u
build=$1 nvshmem=$2 study=$3 program=$4
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=$(mktemp -d)
[ -n "${SIGMATRACE_KEEP_TEST_DIRS:-}" ] && echo "keeping $out" || trap 'rm -rf "$out"' EXIT
unset SIGMATRACE_KEEP_TEST_DIRS
source "$root/examples/nvshmem/case_study_args.sh"
case "$study" in
  moe) read -r -a args <<< "$MOE_ARGS" ;;
  bfs) read -r -a args <<< "$BFS_ARGS" ;;
  *) echo "case_study_test.sh: unknown case study $study (moe or bfs)" >&2; exit 2 ;;
esac
SIGMATRACE_DOORBELLS=wqe "$root/testbed/nvshmem/run_nvshmem.sh" --build "$build" --nvshmem "$nvshmem" --trace --check --out "$out" 4 -- \
  "$program" "${args[@]}" --expected "$out/expected.json"
rc=$?
[ $rc = 0 ] || exit $rc
"$build/bin/sigmatrace" analyze -q --no-sqlite "$out/exp" >"$out/analyze.log" 2>&1 || { cat "$out/analyze.log"; exit 1; }
python3 "$root/tests/gpu/checks/check_${study}_trace.py" "$out/expected.json" "$out/exp/aggregate.json"
