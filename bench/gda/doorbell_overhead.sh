#!/usr/bin/env bash
# What tracing GPU doorbells costs (the paper's Fig. 4, side by side in one run): testbed/gda's four
# microbenchmarks (Put+Quiet, Get, Atomic FetchAdd, Ping-Pong RTT; 8 bytes, two PEs on one GPU under
# MPS), untraced and under `sigmatrace profile` in each of KINDS, through the harness
# (bench/lib/harness.sh: rotated, repeated, paired with the first kind). Kinds: untraced; off (the
# profiler loaded, the doorbell page left alone); forward (doorbells recorded and forwarded); spin
# (untraced, with two busy CPU threads for its length, on SIGMATRACE_DOORBELL_CPUS when set: what
# two spinning pollers cost the machine, without any forwarding); KIND+aggregate (KIND in aggregate
# mode: per-QP counts, no event per doorbell, no kernel markers); wqe:N (and their WQEs recovered,
# parsed in batches of N WQE slots; wqe:sync reads them before forwarding; wqe:N:doorbell enqueues
# each copy right after forwarding instead of in the poller's next idle moment:
# SIGMATRACE_WQE_COPY); KIND/VAR=VALUE... (KIND with these variables set for its runs only, e.g.
# forward/SIGMATRACE_KERNEL_MARKERS=0, so that a setting is paired with the same kind without it).
# Metrics per operation: each run's median and p99 (us); per traced run the trace's bytes per
# event and per recovered WQE. Every traced run is also checked to hold exactly the doorbells the
# GPUs rang (and, with wqe, exactly the WQEs they posted); after the table, per kind, the checks,
# the pollers' CPU use and the batches' waits.
#   bench/gda/doorbell_overhead.sh [NAME=VALUE...]
#   BUILD, OUT, REPS (5), KINDS (untraced off forward wqe:1 wqe:32 wqe:128 wqe:512), DEADLINE_S,
#   RESULTS_TAR: the harness's settings; WARMUP (1000), ITERS (5000): gda_bench's iterations
#   SOFTNIC_DEVX_STATS=1: softnic prints its stage times at exit (SQ read, transport, CQE write,
#   GPU reads and writes), recorded as metrics "softnic STAGE us" (softnic_stages.py), paired
#   PLACEMENT_S=N: every N seconds, where each thread of the running PEs is (CPU, CPU share,
#   scheduling class, name: gda_bench, softnic-devx, softnic-verbs, sigmatrace-db*) goes to
#   OUT/placement.log
# Needs MPS running (CUDA_MPS_PIPE_DIRECTORY / CUDA_MPS_LOG_DIRECTORY set) and a GPU.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib/harness.sh
. "$here/../lib/harness.sh"
# shellcheck source=scripts/lib/cpu_list.sh
. "$BENCH_ROOT/scripts/lib/cpu_list.sh"
bench_args "BUILD REPS WARMUP ITERS" "$@"
bench_default KINDS "untraced off forward wqe:1 wqe:32 wqe:128 wqe:512"
bench_default REPS 5
bench_default WARMUP 1000
bench_default ITERS 5000
BENCH_KIND_PATTERNS="untraced off forward spin wqe:* *+aggregate"
BENCH_TITLE="GPU doorbells traced (Fig. 4): gda_bench, $WARMUP warm-up and $ITERS timed iterations per operation, us"
export GDA_PAIR_TIMEOUT_S=${GDA_PAIR_TIMEOUT_S:-120}
PAIR=$BENCH_ROOT/tests/gpu/gda/run_gda_pair.sh
for f in bin/gda_probe bin/gda_bench bin/sigmatrace tests/bin/doorbell_trace_check; do
  [ -x "$BUILD/$f" ] || bench_skip "no $BUILD/$f (build gda_all, sigmatrace_cli and doorbell_trace_check)"
done

# Kinds whose trace holds every doorbell (and WQE), so that it is checked against what the GPUs rang.
checked() { case $1 in untraced | off | spin | *+aggregate) return 1 ;; esac; }

bench_setup() {
  [ -n "${PLACEMENT_S:-}" ] || return 0
  while :; do
    date +%s.%N
    for p in $(pgrep -x gda_bench); do ps -L -o pid=,tid=,psr=,pcpu=,cls=,comm= -p "$p"; done
    sleep "$PLACEMENT_S"
  done > "$OUT/placement.log" 2>&1 &
  sampler=$!
  trap 'kill $sampler 2> /dev/null' EXIT
}

bench_run() {
  local wrap=() flags=() spinners=() spin_cpus=("" "") c base b rc bytes events wqes stage mean
  if [ "$kind" = spin ]; then
    [ -n "${SIGMATRACE_DOORBELL_CPUS:-}" ] && read -r -a spin_cpus <<< "$(cpu_list_expand "$SIGMATRACE_DOORBELL_CPUS")"
    [ ${#spin_cpus[@]} = 1 ] && spin_cpus+=("${spin_cpus[0]}")
    for c in "${spin_cpus[@]:0:2}"; do
      ${c:+taskset -c "$c"} bash -c 'while :; do :; done' &
      spinners+=($!)
    done
  elif [ "$kind" != untraced ]; then
    base=${kind%+aggregate}
    [ "$base" = "$kind" ] || export SIGMATRACE_MODE=aggregate
    SIGMATRACE_RUN_ID="overhead-$(kind_tag "$kind")-$rep"
    export SIGMATRACE_RUN_ID SIGMATRACE_DOORBELLS=${base%%:*}
    case $kind in
      wqe:*:*) b=${kind#wqe:}; export SIGMATRACE_WQE_BATCH=${b%%:*} SIGMATRACE_WQE_COPY=${b#*:}; flags=(--wqes) ;;
      wqe:*) export SIGMATRACE_WQE_BATCH=${kind#wqe:}; flags=(--wqes) ;;
    esac
    wrap=(GDA_WRAP="$BUILD/bin/sigmatrace profile -o $run_dir/exp --")
  fi
  env "${wrap[@]}" GDA_PAIR_TAG=all "$PAIR" "$BUILD/bin/gda_probe" "$BUILD/bin/gda_bench" "$BUILD/softnic" all "$WARMUP" "$ITERS" \
    "$run_dir" > "$run_dir/pair.log" 2>&1
  rc=$?
  [ ${#spinners[@]} = 0 ] || { kill "${spinners[@]}"; wait "${spinners[@]}" 2> /dev/null; }
  # gda_bench's results: a JSON array of one object per operation ("benchmark": "put", ...).
  bench_record_json "$run_dir/gda_all_pe0.json" --by benchmark median_us p99_us
  if checked "$kind"; then
    if ! "$BUILD/tests/bin/doorbell_trace_check" "${flags[@]}" "$run_dir/exp" "$run_dir/pair.log" > "$run_dir/check.log" 2>&1; then
      bench_fail "doorbell check FAILED ($run_dir/check.log):"
      bench_say "$(sed 's/^/    /' "$run_dir/check.log")"
    fi
    "$BUILD/bin/sigmatrace" info "$run_dir/exp" > "$run_dir/info.log" 2>&1
    # Trace size: all processes' trace files over their events, and over the recovered WQEs.
    bytes=$(cat "$run_dir"/exp/*.sgt 2> /dev/null | wc -c)
    events=$(awk '/^  [a-z_]+ +[0-9]+$/ { n += $2 } END { print n + 0 }' "$run_dir/info.log")
    wqes=$(awk '$1 == "gpu_wqe" { print $2 }' "$run_dir/info.log")
    [ "$events" -gt 0 ] && bench_record "trace B/event" "$(awk -v b="$bytes" -v e="$events" 'BEGIN { printf "%.2f", b / e }')"
    [ "${wqes:-0}" -gt 0 ] && bench_record "trace B/recovered WQE" "$(awk -v b="$bytes" -v w="$wqes" 'BEGIN { printf "%.2f", b / w }')"
  fi
  # Where a kind's time goes in softnic: its stages, paired like the operations.
  if [ "${SOFTNIC_DEVX_STATS:-}" = 1 ]; then
    while IFS=$'\t' read -r stage mean; do bench_record "softnic $stage us" "$mean"; done \
      < <(python3 "$here/softnic_stages.py" "$run_dir/pair.log")
  fi
  return "$rc"
}

bench_checks() {
  local k r d logs failed=0
  echo "checks (QPs whose doorbells, and WQEs with wqe, were all recorded exactly):"
  for k in $KINDS; do
    checked "${k%%/*}" || continue
    logs=()
    for r in $(seq "$REPS"); do
      d=$OUT/runs/$(bench_run_name "" "$k" "$r")
      [ ! -e "$d/check.log" ] || logs+=("$d/check.log")
    done
    [ ${#logs[@]} -gt 0 ] || { echo "  $k: no check ran"; failed=1; continue; }
    echo "  $k: $(cat "${logs[@]}" | grep -c ': ok$') of $(cat "${logs[@]}" | grep -c '^QP ') QP checks ok"
    grep -h "WQEs:" "${logs[@]}" | sed 's/.*recovered \([0-9]*\).*; \([0-9]*\) batches, \([0-9.]*\) us waited.*/    recovered \1 WQEs in \2 batches, \3 us waited/' | head -2
    grep -h "^poller" "${logs[@]}" | head -2 | sed 's/^/    /'
  done
  if [ "${SOFTNIC_DEVX_STATS:-}" = 1 ] && ! grep -q $'\tsoftnic ' "$OUT/results.tsv"; then
    echo "softnic stage times: none in the runs (does this softnic print them with SOFTNIC_DEVX_STATS=1?)"
    failed=1
  fi
  return $failed
}
bench_main
