#!/bin/bash
# NVIDIA's nccl-tests on one GPU, each rank its own emulated host over softnic's IB (label gpu):
# PROGRAM (all_reduce_perf, ...) with its own correctness check on (-c 1) run with RANKS ranks
# through mpirun and testbed/nccl/nccl_rank.sh, untraced and under `sigmatrace profile` in each
# mode. Each run must find no wrong value; each traced run must print what the untraced run printed
# (numbers aside), drop no event, and hold, per QP and opcode, exactly the send-queue operations
# softnic executed (SOFTNIC_WQE_LOG; tests/gpu/checks/check_verbs_oracle.py), with NCCL's connections
# and the rank matrix as softnic's log implies them (check_nccl_trace.py), and (Simple, Full) every
# operation tied to the NCCL call whose data it moves (check_nccl_calls.py). NCCL_TESTS_KEEP=DIR copies
# each traced run (experiment, softnic's log, output) there: the recorded trace CI analyses comes from it.
# Usage: nccl_tests_test.sh BUILD_DIR SOURCE_DIR NCCL_TESTS_DIR RANKS PROGRAM [ARGS...]
# Exit 77 (skipped) without a GPU, nccl-tests (bench/nccl/build_nccl_tests.sh), mpirun or softnic.
build=$1 src=$2 tests=$3 ranks=$4 prog=$5
shift 5
. "$src/scripts/lib/shell_test.sh"
st=$build/bin/sigmatrace
[ -n "$tests" ] || skip "no nccl-tests binaries (configure with -DNCCL_TESTS=DIR: bench/nccl/build_nccl_tests.sh builds them)"
[ -x "$tests/$prog" ] || skip "no $prog in NCCL_TESTS ($tests)"
nvidia-smi -L >/dev/null 2>&1 || skip "no GPU (nvidia-smi)"
command -v mpirun >/dev/null || skip "no mpirun"
[ -x "$st" ] && [ -e "$build/softnic/libibverbs.so.1" ] || skip "sigmatrace or softnic is not built"
nccl_lib=$(cat "$tests/nccl-lib" 2>/dev/null)
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(-b 8 -e 4M -f 8 -w 2 -n 5)
work=""
test_work_dir work
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 SOFTNIC_FABRIC="nccl-tests-$$"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

run() {  # KIND: untraced, or a mode; the run's output in $work/KIND.out, its experiment in $work/KIND
  local kind=$1 profile=()
  mkdir -p "$work/$kind-oracle"
  [ "$kind" = untraced ] || profile=(--profile "--mode $kind -o $work/$kind")
  # One host: the ranks inherit mpirun's environment.
  SOFTNIC_WQE_LOG=$work/$kind-oracle SIGMATRACE_RUN_ID="nccl-$$-$kind" timeout 240 \
    mpirun -np "$ranks" --oversubscribe --bind-to none "$src/testbed/nccl/nccl_rank.sh" --build "$build" ${nccl_lib:+--nccl-lib "$nccl_lib"} "${profile[@]}" -- \
    "$tests/$prog" "${args[@]}" -c 1 > "$work/$kind.out" 2>&1
  local rc=$?
  [ $rc = 0 ] || { tail -40 "$work/$kind.out"; fail "$prog on $ranks ranks ($kind) ended with status $rc"; }
  grep -q '# Out of bounds values : 0 OK' "$work/$kind.out" || { cat "$work/$kind.out"; fail "$prog found wrong values ($kind)"; }
}
# nccl-tests' lines, numbers masked (times, bandwidths, pids, bus ids vary from run to run).
shape() { grep -v '^#  *Using devices\|^# *Rank\|nThread\|^$' "$1" | sed -E 's/[0-9]+(\.[0-9]+)?/#/g; s/[ \t]+/ /g'; }

run untraced
# nccl-tests picks each rank's GPU from its host name's hash: as its own host, every rank takes GPU 0.
[ "$(grep -cE 'on +node[0-9]+ device +0 ' "$work/untraced.out")" = "$ranks" ] ||
  { cat "$work/untraced.out"; fail "the $ranks ranks are not each its own host on device 0"; }
for mode in aggregate simple full; do
  run "$mode"
  diff <(shape "$work/untraced.out") <(shape "$work/$mode.out") > "$work/$mode.diff" ||
    { cat "$work/$mode.diff"; fail "tracing ($mode) changed what $prog printed"; }
  "$st" info --json "$work/$mode" > "$work/$mode.info" 2>&1 || { cat "$work/$mode.info"; fail "sigmatrace info failed ($mode)"; }
  python3 - "$work/$mode.info" "$ranks" <<'PY' || fail "the trace ($mode) is not complete"
import json, sys
info = json.load(open(sys.argv[1]))
procs = info.get("processes", [])
dropped = sum(p.get("events_dropped", 0) for p in procs)
if len(procs) != int(sys.argv[2]) or dropped:
    sys.exit(f"{len(procs)} processes traced, {dropped} events dropped")
PY
  "$st" analyze -q "$work/$mode" > "$work/$mode.analyze" 2>&1 || { cat "$work/$mode.analyze"; fail "analyze failed ($mode)"; }
  echo "== $prog, $ranks ranks, $mode"
  python3 "$src/tests/gpu/checks/check_verbs_oracle.py" "$work/$mode/aggregate.json" "$work/$mode-oracle" --min-qps "$ranks" ||
    fail "$prog ($mode): the trace is not what softnic executed"
  python3 "$src/tests/gpu/checks/check_nccl_trace.py" "$work/$mode/aggregate.json" "$work/$mode-oracle" "$ranks" ||
    fail "$prog ($mode): NCCL's connections or rank matrix are not as softnic executed them"
  # Simple and Full mode: every operation in the NCCL call whose data it moves (the nccl provider).
  [ "$mode" = aggregate ] || python3 "$src/tests/gpu/checks/check_nccl_calls.py" "$work/$mode/aggregate.json" "$ranks" ||
    fail "$prog ($mode): operations not tied to their NCCL call"
  [ -n "${NCCL_TESTS_KEEP:-}" ] && mkdir -p "$NCCL_TESTS_KEEP" && cp -r "$work/$mode" "$work/$mode-oracle" "$work/$mode.out" "$NCCL_TESTS_KEEP/"
done
echo "PASS: $prog on $ranks ranks of one GPU, untraced and traced in every mode, exactly what softnic executed"
