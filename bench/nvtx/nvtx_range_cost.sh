#!/usr/bin/env bash
# What an NVTX range costs its thread under the nvtx provider: verbs_probe_nvtx pushes and pops N
# ranges (two deep, ASCII messages) as fast as it can, twice, timing the second (the first touches
# the trace buffer's pages), untraced (NVTX without an injection: its
# no-op stubs) and under `sigmatrace profile` (Simple mode), alternated REPS times; reports the
# median ns per range of each and their difference, and checks the traced runs dropped nothing
# (N is kept within what the buffer holds: the writer is not what is measured here).
#   bench/nvtx/nvtx_range_cost.sh BUILD_DIR [REPS] [N]
set -u
B=${1:?usage: nvtx_range_cost.sh BUILD_DIR [REPS] [N]}
REPS=${2:-11} N=${3:-100000}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/scripts/lib/stats.sh"
exe=$B/tests/bin/verbs_probe_nvtx
[ -x "$exe" ] || { echo "nvtx_range_cost: $exe is missing (built where the CUDA toolkit's NVTX headers are)"; exit 2; }
W=$(mktemp -d /tmp/nvtx-cost.XXXXXX)
trap 'rm -rf "$W"' EXIT
for rep in $(seq "$REPS"); do
  env -u NVTX_INJECTION64_PATH "$exe" --only-ranges "$N" --time-ranges | sed -n 's/ns_per_range=//p' >> "$W/untraced"
  rm -rf "$W/exp"
  SIGMATRACE_RUN_ID=nvtx-cost-$rep "$B/bin/sigmatrace" profile -o "$W/exp" -- "$exe" --only-ranges "$N" --time-ranges \
    | sed -n 's/ns_per_range=//p' >> "$W/traced"
  "$B/bin/sigmatrace" info "$W/exp" | head -1 | grep -q ' 0 dropped' || echo "rep $rep: the traced run dropped events"
done
u=$(median < "$W/untraced") t=$(median < "$W/traced")
awk -v n="$N" -v r="$REPS" -v u="$u" -v t="$t" 'BEGIN { printf "ranges per run %s, %s alternated runs\nns per range: untraced %s, traced %s, added %.2f\n", n, r, u, t, t - u }'
