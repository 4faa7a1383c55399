#!/usr/bin/env bash
# Whether busy CPUs slow the others on this host (docs/performance.md, "Forwarding's cost is the
# pollers' CPUs"): one CPU's speed on a dependent chain, alone and while other CPUs spin with
# pause loops (as doorbell pollers) or busy loops (as doorbell_overhead.sh's spin kind), the
# loads alternating, REPS times each.
#   bench/cpu_speed_under_load.sh BUILD_DIR [REPS] [MEASURED_CPU] [FEW_CPUS] [MANY_CPUS]
#   defaults: 3, CPU 2, the last two CPUs, the upper half of the CPUs (taskset lists)
set -u
B=${1:?usage: cpu_speed_under_load.sh BUILD_DIR [REPS] [MEASURED_CPU] [FEW_CPUS] [MANY_CPUS]}
n=$(nproc)
REPS=${2:-3} CPU=${3:-2} FEW=${4:-$((n - 2)),$((n - 1))} MANY=${5:-$((n / 2))-$((n - 1))}
P=$B/bench/bin/cpu_speed_under_load
[ -x "$P" ] || { echo "cpu_speed_under_load.sh: $P not built (cmake --build $B --target cpu_speed_under_load)" >&2; exit 2; }
# shellcheck source=../scripts/lib/cpu_list.sh
. "$(dirname "$0")/../scripts/lib/cpu_list.sh"
echo "load rep median_ns p10_ns p90_ns samples"
for rep in $(seq "$REPS"); do
  for load in none "pause:$FEW" "busy:$FEW" "pause:$MANY" "busy:$MANY"; do
    spinners=()
    if [ "$load" != none ]; then
      for c in $(cpu_list_expand "${load#*:}"); do
        taskset -c "$c" "$P" spin "${load%%:*}" &
        spinners+=($!)
      done
      sleep 0.2
    fi
    read -r med p10 p90 samples _ < <("$P" measure "$CPU" 1.5)
    echo "$load $rep $med $p10 $p90 $samples"
    [ ${#spinners[@]} = 0 ] || { kill "${spinners[@]}"; wait "${spinners[@]}" 2>/dev/null; }
  done
done
