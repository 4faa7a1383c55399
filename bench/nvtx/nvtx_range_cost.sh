#!/usr/bin/env bash
# What an NVTX range costs its thread under the nvtx provider: verbs_probe_nvtx pushes and pops
# RANGES ranges (two deep, ASCII messages) as fast as it can, twice, timing the second (the first
# touches the trace buffer's pages). Kinds (the harness: bench/lib/harness.sh): untraced (NVTX
# without an injection: its no-op stubs) and traced (under `sigmatrace profile`, Simple mode).
# Metric: ns per range. Every traced run is checked to have dropped nothing (RANGES is kept
# within what the buffer holds: the writer is not what is measured here).
#   bench/nvtx/nvtx_range_cost.sh [NAME=VALUE...]
#   BUILD, OUT, KINDS (untraced traced), REPS (11): the harness's settings; RANGES (100000)
set -u
# shellcheck source=bench/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
bench_args "BUILD REPS RANGES" "$@"
bench_default KINDS "untraced traced"
bench_default REPS 11
bench_default RANGES 100000
BENCH_KIND_PATTERNS="untraced traced"
BENCH_TITLE="NVTX range (push + pop), $RANGES ranges per run: ns per range"
exe=$BUILD/tests/bin/verbs_probe_nvtx
[ -x "$exe" ] || bench_skip "no $exe (built where the CUDA toolkit's NVTX headers are)"
[ -x "$BUILD/bin/sigmatrace" ] || bench_skip "no $BUILD/bin/sigmatrace"

bench_run() {
  local rc
  if [ "$kind" = untraced ]; then
    env -u NVTX_INJECTION64_PATH "$exe" --only-ranges "$RANGES" --time-ranges > "$run_dir/out.txt"
    rc=$?
  else
    SIGMATRACE_RUN_ID=nvtx-cost-$rep "$BUILD/bin/sigmatrace" profile -o "$run_dir/exp" -- "$exe" --only-ranges "$RANGES" \
      --time-ranges > "$run_dir/out.txt"
    rc=$?
    "$BUILD/bin/sigmatrace" info "$run_dir/exp" > "$run_dir/info.txt"
    head -1 "$run_dir/info.txt" | grep -q ' 0 dropped' || bench_fail "the traced run dropped events ($(head -1 "$run_dir/info.txt"))"
    rm -rf "$run_dir/exp"
  fi
  bench_record ns_per_range "$(sed -n 's/ns_per_range=//p' "$run_dir/out.txt")"
  return "$rc"
}
bench_main
