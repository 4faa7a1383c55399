#!/usr/bin/env bash
# The doorbell hijack's forwarding latency alone (testbed/gda/bench/doorbell_forward_bench.cu):
# untraced and under `sigmatrace profile` in each of KINDS, through the harness
# (bench/lib/harness.sh: rotated, repeated, paired with the first kind). A kind is untraced, forward
# (doorbells forwarded; any other SIGMATRACE_DOORBELLS value likewise), or KIND/VAR=VALUE...
# (KIND with these variables set, e.g. forward/SIGMATRACE_KERNEL_MARKERS=0). Cases: each burst of
# BURSTS (1: one doorbell in flight), each delay of NIC_DELAYS (us the stand-in NIC waits,
# spinning, before it answers: a round trip long enough for the poller to go idle and ask about
# kernel markers; 0: none) and each NIC read of NIC_READS (bytes the stand-in NIC reads of GPU
# memory through the driver per doorbell, as softnic's engine does; 0: none), named bB_dD_rR.
# Metrics: each run's median and p99 round trip (us) and, with NIC reads, the reads' median and
# p99. After the table: whether each traced run recorded every doorbell its GPU rang, and the
# kernel's end where markers are on (forward_checks.py, from each traced run's
# `sigmatrace info --json`, kept beside its results as OUT/runs/RUN/result.json.info).
#   bench/gda/doorbell_forward.sh [NAME=VALUE...]
#   BUILD, OUT, KINDS (untraced forward), REPS (5), DEADLINE_S, RESULTS_TAR: the harness's
#   settings; ITERS (20000), BURSTS ("1 8"), NIC_DELAYS (0), NIC_READS (0)
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib/harness.sh
. "$here/../lib/harness.sh"
bench_args "BUILD OUT" "$@"
bench_default KINDS "untraced forward"
bench_default REPS 5
bench_default ITERS 20000
bench_default BURSTS "1 8"
bench_default NIC_DELAYS 0
bench_default NIC_READS 0
for delay in $NIC_DELAYS; do for nic in $NIC_READS; do for burst in $BURSTS; do
  BENCH_CASES+=" b${burst}_d${delay}_r$nic"
done; done; done
BENCH_TITLE="doorbell forwarding alone: doorbell_forward_bench, $ITERS rounds per run, round trip us"
bench=$BUILD/bin/doorbell_forward_bench
st=$BUILD/bin/sigmatrace
[ -x "$bench" ] || bench_skip "no $bench (built where the CUDA toolkit is: the gda_all target)"
[ -x "$st" ] || bench_skip "no $st"
export LD_LIBRARY_PATH=$BUILD/softnic${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

bench_run() {
  local j=$run_dir/result.json args rc
  [[ $case_name =~ ^b([0-9]+)_d([0-9]+)_r([0-9]+)$ ]] || return 2
  args=(--iters "$ITERS" --burst "${BASH_REMATCH[1]}" --nic-delay-us "${BASH_REMATCH[2]}" --nic-read "${BASH_REMATCH[3]}" --json "$j")
  if [ "$kind" = untraced ]; then
    timeout 60 "$bench" "${args[@]}"
    rc=$?
  else
    SIGMATRACE_DOORBELLS="$kind" timeout 60 "$st" profile --softnic -o "$run_dir/exp" -- "$bench" "${args[@]}"
    rc=$?
    # What was recorded: forward_checks.py compares it with what the GPU rang.
    [ "$rc" != 0 ] || "$st" info --json "$run_dir/exp" > "$j.info" || rc=$?
  fi
  bench_record_json "$j" median_us p99_us nic_read_median_us nic_read_p99_us
  return "$rc"
}

bench_checks() {
  # shellcheck disable=SC2086  # KINDS is a word list
  python3 "$here/forward_checks.py" "$OUT" $KINDS
}
bench_main
