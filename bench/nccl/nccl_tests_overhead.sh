#!/bin/bash
# The cost of tracing NCCL (the paper's Fig. 5-6 and Table I) with NVIDIA's nccl-tests: all_reduce_perf
# sweeping 8 B to 128 MiB on RANKS ranks, each rank its own emulated host over softnic's IB
# (testbed/nccl/nccl_rank.sh; on one GPU under MPS, or one GPU per rank with NCCL_RANK_GPUS),
# untraced and under `sigmatrace profile` in each mode, through the harness (bench/lib/harness.sh:
# kinds rotated, repeated, paired with untraced). Cases: the rank counts. One run = one sweep; its
# metrics: time_us:SIZE (nccl-tests' out-of-place time per all-reduce, averaged over its ITERS),
# busbw_GBps (at the largest size) and, traced: trace_bytes (the experiment, du -b), events
# (every rank's), dropped, and allreduces (NCCL calls per rank, from the nccl provider: Simple and
# Full mode). OUT/table.md is the harness's table; OUT/trace_sizes.md the sizes per all-reduce
# (bench/nccl/nccl_trace_sizes.py).
#
#   bench/nccl/nccl_tests_overhead.sh NCCL_TESTS=DIR [NAME=VALUE...]
#   NCCL_TESTS: nccl-tests' binaries and nccl-lib (bench/nccl/build_nccl_tests.sh SRC DIR builds them)
#   BUILD, OUT, KINDS (untraced aggregate simple full), REPS (8), DEADLINE_S, RESULTS_TAR: the
#   harness's settings; RANKS_LIST ("2 4"), MIN_BYTES (8), MAX_BYTES (128M), FACTOR (4), ITERS (20),
#   WARMUP (5), TIMEOUT_S (300 per run), NCCL_RANK_GPUS (GPUs to spread the ranks over; default 1)
#
# Exit status: 0 done, 1 a run failed, 2 bad settings, 77 skipped (no GPU, mpirun, nccl-tests or
# build). Documentation: docs/nccl.md; figures: docs/performance.md.
set -u -o pipefail
# shellcheck source=bench/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
bench_args "" "$@"
bench_default KINDS "untraced aggregate simple full"
bench_default REPS 8
bench_default RANKS_LIST "2 4"
bench_default MIN_BYTES 8
bench_default MAX_BYTES 128M
bench_default FACTOR 4
bench_default ITERS 20
bench_default WARMUP 5
bench_default TIMEOUT_S 300
bench_default NCCL_TESTS ""
for r in $RANKS_LIST; do { [[ $r =~ ^[0-9]+$ ]] && [ "$r" -ge 2 ]; } || bench_die "RANKS_LIST: '$r' is not a rank count >= 2"; done
for v in ITERS WARMUP FACTOR TIMEOUT_S; do [[ ${!v} =~ ^[0-9]+$ ]] || bench_die "$v=${!v}: expected an integer"; done
BENCH_KIND_PATTERNS="untraced aggregate simple full"
BENCH_CASES=$(for r in $RANKS_LIST; do printf '%sranks ' "$r"; done)
BENCH_TITLE="NCCL all_reduce_perf on softnic, ranks as emulated hosts: tracing cost per mode"

[ -n "$NCCL_TESTS" ] || bench_skip "NCCL_TESTS is not set (bench/nccl/build_nccl_tests.sh SRC DIR builds nccl-tests)"
[ -x "$NCCL_TESTS/all_reduce_perf" ] || bench_skip "no all_reduce_perf in NCCL_TESTS=$NCCL_TESTS"
nvidia-smi -L >/dev/null 2>&1 || bench_skip "no GPU (nvidia-smi)"
command -v mpirun >/dev/null || bench_skip "no mpirun"
{ [ -x "$BUILD/bin/sigmatrace" ] && [ -e "$BUILD/softnic/libibverbs.so.1" ]; } || bench_skip "sigmatrace or softnic is not built in $BUILD"
NCCL_LIB=$(cat "$NCCL_TESTS/nccl-lib" 2>/dev/null)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

MPS_STARTED=0
bench_setup() {
  # The ranks' kernels must run side by side on the one GPU (without MPS they time-slice).
  if ! echo get_server_list | nvidia-cuda-mps-control >/dev/null 2>&1; then
    nvidia-cuda-mps-control -d || return 1
    MPS_STARTED=1
  fi
  { date -u; nvidia-smi -L; echo "nccl-lib: $NCCL_LIB"; } > "$OUT/machine.txt"
}

bench_run() {
  local ranks=${case_name%ranks} profile=()
  [ "$kind" = untraced ] || profile=(--profile "--mode $kind -o $run_dir/exp")
  SOFTNIC_FABRIC="bench-$$-$BENCH_RUN" SIGMATRACE_RUN_ID="bench-$$-$BENCH_RUN" timeout "$TIMEOUT_S" \
    mpirun -np "$ranks" --oversubscribe --bind-to none "$BENCH_ROOT/testbed/nccl/nccl_rank.sh" --build "$BUILD" \
    ${NCCL_LIB:+--nccl-lib "$NCCL_LIB"} "${profile[@]}" -- \
    "$NCCL_TESTS/all_reduce_perf" -b "$MIN_BYTES" -e "$MAX_BYTES" -f "$FACTOR" -w "$WARMUP" -n "$ITERS" -c 0 > "$run_dir/out.txt" 2>&1 ||
    { tail -20 "$run_dir/out.txt"; return 1; }
  # nccl-tests' rows: size count type redop root time algbw busbw #wrong (out-of-place), then in-place.
  awk '$1 ~ /^[0-9]+$/ && NF >= 12 { print "time_us:" $1 "\t" $6; last = $8 } END { if (last != "") print "busbw_GBps\t" last }' \
    "$run_dir/out.txt" > "$run_dir/rows.tsv"
  [ -s "$run_dir/rows.tsv" ] || { cat "$run_dir/out.txt"; return 1; }
  while IFS=$'\t' read -r m v; do bench_record "$m" "$v"; done < "$run_dir/rows.tsv"
  [ "$kind" = untraced ] && return 0
  bench_record trace_bytes "$(du -sb "$run_dir/exp" | cut -f1)"
  "$BUILD/bin/sigmatrace" info --json "$run_dir/exp" > "$run_dir/info.json" || return 1
  python3 - "$run_dir/info.json" "$ranks" > "$run_dir/info.tsv" <<'PY' || return 1
import json, sys
procs = json.load(open(sys.argv[1]))["processes"]
events = sum(p.get("events", 0) for p in procs)
print(f"events\t{events}\ndropped\t{sum(p.get('events_dropped', 0) for p in procs)}")
tasks = sum(p.get("events_by_type", {}).get("nccl_task", 0) for p in procs)
if tasks:
    print(f"allreduces\t{tasks / int(sys.argv[2])}")
PY
  while IFS=$'\t' read -r m v; do bench_record "$m" "$v"; done < "$run_dir/info.tsv"
  rm -rf "$run_dir/exp"  # the figures are kept; the traces would fill the disk
}

bench_checks() {
  [ "$MPS_STARTED" = 0 ] || echo quit | nvidia-cuda-mps-control
  python3 "$BENCH_ROOT/bench/nccl/nccl_trace_sizes.py" "$OUT" > "$OUT/trace_sizes.md" && cat "$OUT/trace_sizes.md"
}

bench_main
