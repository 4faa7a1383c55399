#!/usr/bin/env bash
# What tracing GPU doorbells costs (the paper's Fig. 4, side by side in one run): testbed/gda's four
# microbenchmarks (Put+Quiet, Get, Atomic FetchAdd, Ping-Pong RTT; 8 bytes, two PEs on one GPU under
# MPS), untraced and under `sigmatrace profile` in each of KINDS, in turn (the order rotating from
# one repetition to the next), REPS times each. Kinds: untraced; off (the profiler loaded, the
# doorbell page left alone); forward (doorbells recorded and forwarded); spin (untraced, with two
# busy CPU threads for its length, on SIGMATRACE_DOORBELL_CPUS when set: what two spinning pollers
# cost the machine, without any forwarding); KIND+aggregate (KIND in aggregate mode: per-QP counts,
# no event per doorbell, no kernel markers); wqe:N (and their WQEs recovered, parsed in batches of N
# WQE slots; wqe:sync reads them before forwarding; wqe:N:doorbell enqueues each copy right after
# forwarding instead of in the poller's next idle moment: SIGMATRACE_WQE_COPY); KIND/VAR=VALUE...
# (KIND with these variables set for its runs only, e.g. forward/SIGMATRACE_KERNEL_MARKERS=0, so
# that a setting is paired with the same kind without it in one session). Reports per
# operation the median over the repetitions of each run's median and p99, and each kind's difference
# to untraced; the pollers' CPU use and the batches' waits; the trace size per event and per
# recovered WQE. Every traced run is also checked to hold exactly the doorbells the GPUs rang (and,
# with wqe, exactly the WQEs they posted).
#   bench/gda/doorbell_overhead.sh BUILD_DIR [REPS] [WARMUP] [ITERS]
#   KINDS="untraced forward wqe:128" bench/gda/doorbell_overhead.sh ...   (default: all below)
#   DEADLINE_S=N: start no repetition after N seconds (a bounded session still ends with its table,
#   over the repetitions it completed)
#   RESULTS_TAR=FILE.tar.gz: every run's results, logs and checks (not the traces) packed into FILE,
#   for paired_differences.py on another machine (the raw directory is in /tmp)
#   SOFTNIC_DEVX_STATS=1: softnic prints its stage times at exit (SQ read, transport, CQE write,
#   GPU reads and writes), and the table ends with them per kind, paired (softnic_stages.py)
#   PLACEMENT_S=N: every N seconds, where each thread of the running PEs is (CPU, CPU share,
#   scheduling class, name: gda_bench, softnic-devx, softnic-verbs, sigmatrace-db*) goes to
#   placement.log in the raw directory (packed with RESULTS_TAR)
# Needs MPS running (CUDA_MPS_PIPE_DIRECTORY / CUDA_MPS_LOG_DIRECTORY set) and a GPU.
set -u
B=${1:?usage: doorbell_overhead.sh BUILD_DIR [REPS] [WARMUP] [ITERS]}
REPS=${2:-5} WARM=${3:-1000} ITERS=${4:-5000}
read -r -a kinds <<< "${KINDS:-untraced off forward wqe:1 wqe:32 wqe:128 wqe:512}"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/scripts/lib/stats.sh"
. "$ROOT/scripts/lib/cpu_list.sh"
. "$ROOT/bench/gda/kinds.sh"
PAIR=$ROOT/testbed/gda/tests/run_gda_pair.sh
W=$(mktemp -d /tmp/doorbell-overhead.XXXXXX)
export GDA_PAIR_TIMEOUT_S=${GDA_PAIR_TIMEOUT_S:-120}
failed=0
# Kinds whose trace holds every doorbell (and WQE), so that it is checked against what the GPUs rang.
checked() { case ${1%%/*} in untraced | off | spin | *+aggregate) return 1 ;; esac; }
T0=$(date +%s)
if [ -n "${PLACEMENT_S:-}" ]; then
  while :; do
    date +%s.%N
    for p in $(pgrep -x gda_bench); do ps -L -o pid=,tid=,psr=,pcpu=,cls=,comm= -p "$p"; done
    sleep "$PLACEMENT_S"
  done > "$W/placement.log" 2>&1 &
  sampler=$!
  trap 'kill $sampler 2>/dev/null' EXIT
fi
for rep in $(seq "$REPS"); do
  if [ -n "${DEADLINE_S:-}" ] && [ $(( $(date +%s) - T0 )) -ge "$DEADLINE_S" ]; then
    echo "DEADLINE_S=$DEADLINE_S reached: $((rep - 1)) of $REPS repetitions run"
    break
  fi
  # The kinds' order rotates from one repetition to the next, so that a drift of the machine over
  # the session does not favour the kind that always runs first.
  n=${#kinds[@]}
  for k in $(seq 0 $((n - 1))); do
    name=${kinds[$(( (k + rep - 1) % n ))]}
    d=$W/$(kind_tag "$name")-$rep
    mkdir -p "$d"
    wrap=() flags=() spinners=() extra=()
    split_kind "$name"
    if [ "$kind" = spin ]; then
      spin_cpus=("" "")
      [ -n "${SIGMATRACE_DOORBELL_CPUS:-}" ] && read -r -a spin_cpus <<< "$(cpu_list_expand "$SIGMATRACE_DOORBELL_CPUS")"
      [ ${#spin_cpus[@]} = 1 ] && spin_cpus+=("${spin_cpus[0]}")
      for c in "${spin_cpus[@]:0:2}"; do
        ${c:+taskset -c "$c"} bash -c 'while :; do :; done' &
        spinners+=($!)
      done
    elif [ "$kind" != untraced ]; then
      base=${kind%+aggregate}
      [ "$base" = "$kind" ] || export SIGMATRACE_MODE=aggregate
      export SIGMATRACE_RUN_ID="overhead-$(kind_tag "$kind")-$rep" SIGMATRACE_DOORBELLS=${base%%:*}
      case $kind in
        wqe:*:*) b=${kind#wqe:}; export SIGMATRACE_WQE_BATCH=${b%%:*} SIGMATRACE_WQE_COPY=${b#*:}; flags=(--wqes) ;;
        wqe:*) export SIGMATRACE_WQE_BATCH=${kind#wqe:}; flags=(--wqes) ;;
      esac
      wrap=(GDA_WRAP="$B/bin/sigmatrace profile -o $d/exp --")
    fi
    env "${extra[@]}" "${wrap[@]}" GDA_PAIR_TAG=all "$PAIR" "$B/bin/gda_probe" "$B/bin/gda_bench" "$B/softnic" all "$WARM" "$ITERS" "$d" \
      > "$d/pair.log" 2>&1 || { echo "rep $rep $name: pair FAILED"; failed=1; }
    [ ${#spinners[@]} = 0 ] || { kill "${spinners[@]}"; wait "${spinners[@]}" 2>/dev/null; }
    if checked "$kind"; then
      "$B/tests/bin/doorbell_trace_check" "${flags[@]}" "$d/exp" "$d/pair.log" > "$d/check.log" 2>&1 \
        || { echo "rep $rep $name: doorbell check FAILED"; cat "$d/check.log"; failed=1; }
      "$B/bin/sigmatrace" info "$d/exp" > "$d/info.log" 2>&1
    fi
    unset SIGMATRACE_RUN_ID SIGMATRACE_DOORBELLS SIGMATRACE_WQE_BATCH SIGMATRACE_WQE_COPY SIGMATRACE_MODE
  done
done
[ -z "${sampler:-}" ] || { kill "$sampler"; wait "$sampler" 2>/dev/null; }
# One JSON object per line: "benchmark": "put", ... "median_us": x, "p99_us": y
field() { sed -n "s/.*\"benchmark\": \"$1\".*\"$2\": \([0-9.]*\).*/\1/p"; }
printf '%-10s %-7s' operation stat
for kind in "${kinds[@]}"; do printf ' %10s' "$kind"; done
for kind in "${kinds[@]:1}"; do printf ' %10s' "d:$kind"; done
echo
for op in put get fadd pingpong; do
  for stat in median_us p99_us; do
    v=()
    for kind in "${kinds[@]}"; do v+=("$(cat "$W"/"$(kind_tag "$kind")"-[0-9]*/gda_all_pe0.json 2>/dev/null | field $op $stat | median)"); done
    printf '%-10s %-7s' "$op" "${stat%_us}"
    printf ' %10s' "${v[@]}"
    for x in "${v[@]:1}"; do
      awk -v u="${v[0]}" -v f="$x" 'BEGIN { if (u == "n/a" || f == "n/a") printf " %10s", "n/a"; else printf " %+10.2f", f - u }'
    done
    echo
  done
done
echo "checks (QPs whose doorbells, and WQEs with wqe, were all recorded exactly):"
for kind in "${kinds[@]}"; do
  checked "$kind" || continue
  logs=("$W/$(kind_tag "$kind")"-[0-9]*/check.log)
  echo "  $kind: $(cat "${logs[@]}" | grep -c ': ok$') of $(cat "${logs[@]}" | grep -c '^QP ') QP checks ok"
  grep -h "WQEs:" "${logs[@]}" | sed 's/.*recovered \([0-9]*\).*; \([0-9]*\) batches, \([0-9.]*\) us waited.*/    recovered \1 WQEs in \2 batches, \3 us waited/' | head -2
  grep -h "^poller" "${logs[@]}" | head -2 | sed 's/^/    /'
  # Trace size: all processes' trace files over their events, and over the recovered WQEs.
  for d in "$W/$(kind_tag "$kind")"-1; do
    bytes=$(cat "$d"/exp/*.sgt 2>/dev/null | wc -c)
    events=$(awk '/^  [a-z_]+ +[0-9]+$/ { n += $2 } END { print n + 0 }' "$d/info.log")
    wqes=$(awk '$1 == "gpu_wqe" { print $2 }' "$d/info.log")
    awk -v b="$bytes" -v e="$events" -v w="${wqes:-0}" 'BEGIN { printf "    trace %d bytes, %d events: %.1f B/event", b, e, e ? b / e : 0;
      if (w > 0) printf ", %.1f B per recovered WQE (doorbell and WQE events together)", b / w; printf "\n" }'
  done
done
python3 "$ROOT/bench/gda/paired_differences.py" "$W" "${kinds[@]}"
# Where a kind's time goes in softnic: its stages, paired like the operations.
if [ "${SOFTNIC_DEVX_STATS:-}" = 1 ]; then python3 "$ROOT/bench/gda/softnic_stages.py" "$W" "${kinds[@]}" || failed=1; fi
echo "raw results: $W"
if [ -n "${RESULTS_TAR:-}" ]; then
  RESULTS_TAR=$(realpath -m "$RESULTS_TAR")
  (cd "$W" && find . -maxdepth 2 -type f \( -name '*.json' -o -name '*.log' \) | tar -czf "$RESULTS_TAR" -T -) \
    && echo "results packed: $RESULTS_TAR" || { echo "RESULTS_TAR=$RESULTS_TAR: could not write it"; failed=1; }
fi
exit $failed
