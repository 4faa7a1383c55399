#!/usr/bin/env bash
# Whether busy CPUs slow the others on this host (docs/performance-log/gpu-forwarding.md, "Forwarding's cost is the
# pollers' CPUs"): one CPU's speed on a dependent chain, alone and while other CPUs spin with
# pause loops (as doorbell pollers) or busy loops (as doorbell_overhead.sh's spin kind), through
# the harness (bench/lib/harness.sh). Kinds: none; pause:CPUS and busy:CPUS (a taskset list of
# the CPUs that spin). Metrics: the measured CPU's median, p10 and p90 ns, and its samples.
#   bench/cpu_speed_under_load.sh [NAME=VALUE...]
#   BUILD, OUT, REPS (3), KINDS (none pause:FEW_CPUS busy:FEW_CPUS pause:MANY_CPUS busy:MANY_CPUS):
#   the harness's settings; CPU (2: the one measured), FEW_CPUS (the last two CPUs), MANY_CPUS
#   (the upper half of the CPUs)
set -u
# shellcheck source=bench/lib/harness.sh
. "$(dirname "$0")/lib/harness.sh"
# shellcheck source=scripts/lib/cpu_list.sh
. "$BENCH_ROOT/scripts/lib/cpu_list.sh"
bench_args "BUILD REPS CPU FEW_CPUS MANY_CPUS" "$@"
n=$(nproc)
bench_default REPS 3
bench_default CPU 2
bench_default FEW_CPUS "$((n - 2)),$((n - 1))"
bench_default MANY_CPUS "$((n / 2))-$((n - 1))"
bench_default KINDS "none pause:$FEW_CPUS busy:$FEW_CPUS pause:$MANY_CPUS busy:$MANY_CPUS"
BENCH_KIND_PATTERNS="none pause:* busy:*"
BENCH_TITLE="CPU $CPU's speed on a dependent chain (1.5 s per run) while other CPUs spin"
P=$BUILD/bench/bin/cpu_speed_under_load
[ -x "$P" ] || bench_skip "$P not built (cmake --build $BUILD --target cpu_speed_under_load)"

bench_run() {
  local spinners=() c med p10 p90 samples
  if [ "$kind" != none ]; then
    for c in $(cpu_list_expand "${kind#*:}"); do
      taskset -c "$c" "$P" spin "${kind%%:*}" &
      spinners+=($!)
    done
    sleep 0.2
  fi
  read -r med p10 p90 samples _ < <("$P" measure "$CPU" 1.5)
  [ ${#spinners[@]} = 0 ] || { kill "${spinners[@]}"; wait "${spinners[@]}" 2> /dev/null; }
  bench_record median_ns "$med" && bench_record p10_ns "$p10" && bench_record p90_ns "$p90" && bench_record samples "$samples"
}
bench_main
