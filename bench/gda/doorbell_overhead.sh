#!/usr/bin/env bash
# What forwarding GPU doorbells costs (the paper's Fig. 4, side by side in one run): testbed/gda's
# four microbenchmarks (Put+Quiet, Get, Atomic FetchAdd, Ping-Pong RTT; 8 bytes, two PEs on one
# GPU under MPS), untraced, under `sigmatrace profile` with SIGMATRACE_DOORBELLS=off (the profiler
# loaded, the doorbell page left alone) and with SIGMATRACE_DOORBELLS=forward, in turn, REPS
# times each. Reports per operation the median over the repetitions of each run's median and
# p99, and forward's difference to untraced; and the doorbell pollers' CPU use per page (from the
# traces). Every forwarded run is also checked to hold exactly the doorbells the GPUs rang.
#   bench/gda/doorbell_overhead.sh BUILD_DIR [REPS] [WARMUP] [ITERS]
# Needs MPS running (CUDA_MPS_PIPE_DIRECTORY / CUDA_MPS_LOG_DIRECTORY set) and a GPU.
set -u
B=${1:?usage: doorbell_overhead.sh BUILD_DIR [REPS] [WARMUP] [ITERS]}
REPS=${2:-5} WARM=${3:-1000} ITERS=${4:-5000}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/scripts/lib/stats.sh"
PAIR=$ROOT/testbed/gda/tests/run_gda_pair.sh
W=$(mktemp -d /tmp/doorbell-overhead.XXXXXX)
export GDA_PAIR_TIMEOUT_S=${GDA_PAIR_TIMEOUT_S:-120}
failed=0
for rep in $(seq "$REPS"); do
  for kind in untraced off forward; do
    mkdir -p "$W/$kind-$rep"
    if [ $kind != untraced ]; then
      export SIGMATRACE_RUN_ID="overhead-$kind-$rep" SIGMATRACE_DOORBELLS=$kind
      GDA_WRAP="$B/bin/sigmatrace profile -o $W/$kind-$rep/exp --" GDA_PAIR_TAG=all \
        "$PAIR" "$B/bin/gda_probe" "$B/bin/gda_bench" "$B/softnic" all "$WARM" "$ITERS" "$W/$kind-$rep" \
        > "$W/$kind-$rep/pair.log" 2>&1 || { echo "rep $rep $kind: pair FAILED"; failed=1; }
      if [ $kind = forward ]; then
        "$B/tests/bin/doorbell_trace_check" "$W/$kind-$rep/exp" "$W/$kind-$rep/pair.log" > "$W/$kind-$rep/check.log" 2>&1 \
          || { echo "rep $rep: doorbell check FAILED"; cat "$W/$kind-$rep/check.log"; failed=1; }
      fi
      unset SIGMATRACE_RUN_ID SIGMATRACE_DOORBELLS
    else
      GDA_PAIR_TAG=all "$PAIR" "$B/bin/gda_probe" "$B/bin/gda_bench" "$B/softnic" all "$WARM" "$ITERS" \
        "$W/$kind-$rep" > "$W/$kind-$rep/pair.log" 2>&1 || { echo "rep $rep $kind: pair FAILED"; failed=1; }
    fi
  done
done
# One JSON object per line: "benchmark": "put", ... "median_us": x, "p99_us": y
field() { sed -n "s/.*\"benchmark\": \"$1\".*\"$2\": \([0-9.]*\).*/\1/p"; }
printf '%-10s %-7s %10s %10s %10s %9s\n' operation stat untraced "doorbells" "+forward" "delta"
printf '%-10s %-7s %10s %10s %10s %9s\n' "" "" "" "off" "" ""
for op in put get fadd pingpong; do
  for stat in median_us p99_us; do
    v=()
    for kind in untraced off forward; do v+=("$(cat "$W"/$kind-*/gda_all_pe0.json 2>/dev/null | field $op $stat | median)"); done
    d=$(awk -v u="${v[0]}" -v f="${v[2]}" 'BEGIN { if (u == "n/a" || f == "n/a") print "n/a"; else printf "%+.2f", f - u }')
    printf '%-10s %-7s %10s %10s %10s %9s\n' "$op" "${stat%_us}" "${v[@]}" "$d"
  done
done
echo "doorbell checks:"
echo "  QPs with every doorbell recorded: $(cat "$W"/forward-*/check.log | grep -c ': ok$') of $(cat "$W"/forward-*/check.log | grep -c '^QP ')"
grep -h "poller" "$W"/forward-*/check.log | sed 's/^/  /' | head -8
echo "raw results: $W"
exit $failed
