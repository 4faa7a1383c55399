#!/bin/bash
# A PyTorch DDP training loop (ddp_train.py) on RANKS ranks of one GPU, each rank its own emulated
# host over softnic's IB (label gpu): untraced, then under `sigmatrace profile` (MODE, default
# full). The traced run must print the same losses and weights, every rank the same weights, drop
# no event, and tie every verbs operation to the NCCL call whose data it moves (check_nccl_calls.py);
# the analysis and the HTML report are made. DDP_KEEP=DIR copies the traced run there (experiment,
# output): the recorded trace CI analyses comes from it.
# Usage: ddp_test.sh BUILD_DIR SOURCE_DIR RANKS [STEPS] [MODE]
# Exit 77 (skipped) without a GPU, mpirun, softnic, or a python3 with torch and NCCL.
build=$1 src=$2 ranks=$3 steps=${4:-30} mode=${5:-full}
. "$src/scripts/lib/shell_test.sh"
st=$build/bin/sigmatrace
nvidia-smi -L >/dev/null 2>&1 || skip "no GPU (nvidia-smi)"
command -v mpirun >/dev/null || skip "no mpirun"
{ [ -x "$st" ] && [ -e "$build/softnic/libibverbs.so.1" ]; } || skip "sigmatrace or softnic is not built"
work=""
test_work_dir work
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 SOFTNIC_FABRIC="ddp-$$"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
py=${PYTHON:-python3}

run() {  # KIND: untraced or traced
  local kind=$1 profile=()
  [ "$kind" = untraced ] || profile=(--profile "--mode $mode -o $work/exp")
  SIGMATRACE_RUN_ID="ddp-$$-$kind" timeout 300 mpirun -np "$ranks" --oversubscribe --bind-to none \
    "$src/testbed/nccl/nccl_rank.sh" --build "$build" "${profile[@]}" -- \
    "$py" "$src/tests/gpu/nccl/ddp_train.py" "$steps" "$work/rendezvous-$kind" > "$work/$kind.out" 2>&1
  local rc=$?
  grep -q '^skipped:' "$work/$kind.out" && skip "$(grep -m1 '^skipped:' "$work/$kind.out")"
  [ $rc = 0 ] || { tail -40 "$work/$kind.out"; fail "DDP on $ranks ranks ($kind) ended with status $rc"; }
  grep -E '^(step|rank) ' "$work/$kind.out" | sort > "$work/$kind.lines"
}
run untraced
[ "$(grep -c '^step ' "$work/untraced.lines")" = "$steps" ] || { cat "$work/untraced.out"; fail "rank 0 did not print $steps losses"; }
[ "$(awk '/^rank /{print $4}' "$work/untraced.lines" | sort -u | wc -l)" = 1 ] || { cat "$work/untraced.lines"; fail "the ranks' weights differ"; }
run traced
diff "$work/untraced.lines" "$work/traced.lines" || fail "tracing changed the losses or the weights"
"$st" info --json "$work/exp" > "$work/info.json" 2>&1 || { cat "$work/info.json"; fail "sigmatrace info failed"; }
python3 - "$work/info.json" "$ranks" <<'PY' || fail "the trace is not complete"
import json, sys
procs = json.load(open(sys.argv[1])).get("processes", [])
dropped = sum(p.get("events_dropped", 0) for p in procs)
if len(procs) != int(sys.argv[2]) or dropped:
    sys.exit(f"{len(procs)} processes traced, {dropped} events dropped")
PY
"$st" analyze -q "$work/exp" > "$work/analyze.out" 2>&1 || { cat "$work/analyze.out"; fail "analyze failed"; }
"$st" report --html "$work/exp" > "$work/report.out" 2>&1 || { cat "$work/report.out"; fail "report failed"; }
python3 "$src/tests/gpu/checks/check_nccl_calls.py" "$work/exp/aggregate.json" "$ranks" || fail "operations not tied to their NCCL call"
"$st" report "$work/exp" | sed -n '/^NCCL calls/,/^$/p'
if [ -n "${DDP_KEEP:-}" ]; then
  mkdir -p "$DDP_KEEP" && cp "$work"/exp/*.sgt "$work"/exp/manifest.json "$DDP_KEEP"/ && cp "$work/untraced.lines" "$DDP_KEEP/program.out"
fi
echo "PASS: DDP on $ranks ranks of one GPU, traced ($mode), same losses and weights, every operation in its NCCL call"
