#!/bin/bash
# How much the ibverbs wrappers' measured cost depends on where the linker put them. Relinks
# verbs_wrapper_cost_bench with the translation unit of the context-op wrappers (post_send, poll_cq)
# shifted by 0, 16, 32 and 48 bytes (a .skip at the start of its .text), for each set of extra
# compiler flags given; the variants are the harness's kinds (bench/lib/harness.sh), named
# sSfFoO (source S, flag set F, shift O), s0f0o0 the baseline. Within one flag set the variants
# execute the same instructions at different addresses, so their spread is placement. Metrics per
# run (ns per call, medians of the benchmark's 5 repetitions): post_send untraced, floor (forward
# and RDTSC), aggregate, simple, full; simple_added (simple minus untraced), simple_over_floor, and
# the target RDTSC + 3 ns (RDTSC measured in each run). After the table, per variant, the median
# simple_added against the median target. Results: docs/performance.md.
#   bench/verbs/placement_sensitivity.sh [NAME=VALUE...]
#   BUILD: a configured build tree of this repository (Makefile generator) in which
#          verbs_wrapper_cost_bench and recorder_hot_path_bench are built;
#   OUT, REPS (3 rounds), KINDS (every variant built): the harness's settings;
#   CPUS:  the taskset list the benchmarks run on (default 2,3);
#   SOURCES: versions of ibverbs_context_ops.cpp to build, space-separated (default: this tree's),
#          to compare two versions side by side with their placement spread;
#   FLAGSETS: sets of extra compiler flags for that file, separated by | ("" = as built, the
#          default; e.g. FLAGSETS='|-falign-functions=64' for both).
# Every source is built with every flag set at every shift.
set -u
# shellcheck source=bench/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
bench_args "-b=BUILD -r=REPS -c=CPUS -s=SOURCES -f=FLAGSETS|" "$@"
bench_default REPS 3
bench_default CPUS 2,3
bench_default SOURCES "$BENCH_ROOT/src/profiler/providers/verbs/ibverbs_context_ops.cpp"
bench_default FLAGSETS ""
read -r -a srcs <<< "$SOURCES"
IFS='|' read -r -a flag_sets <<< "$FLAGSETS"
[ ${#flag_sets[@]} -gt 0 ] || flag_sets=("")
tree=$(cd "$BUILD" && pwd) || bench_die "no BUILD=$BUILD"
objdir=$tree/src/profiler/CMakeFiles/sigmatrace_runtime_objects.dir
flags_make=$objdir/flags.make
link_txt=$tree/bench/verbs/CMakeFiles/verbs_wrapper_cost_bench.dir/link.txt
runtime_lib=$tree/lib/libsigmatrace_runtime.a
hot_bench=$tree/bench/bin/recorder_hot_path_bench
for f in "$flags_make" "$link_txt" "$runtime_lib" "$hot_bench"; do
  [ -e "$f" ] || bench_skip "$f is missing (configure $tree with the Makefile generator and build verbs_wrapper_cost_bench and recorder_hot_path_bench)"
done
member=ibverbs_context_ops.cpp.o
cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$tree/CMakeCache.txt")
flag_line() { sed -n "s/^$1 = //p" "$flags_make"; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Build the variants: the wrappers' object recompiled (in parallel), put into a copy of the runtime
# library, the benchmark relinked against it with the link line CMake wrote.
variants=()
for j in "${!srcs[@]}"; do
  s=$(realpath "${srcs[$j]}") || bench_die "SOURCES: no ${srcs[$j]}"
  for i in "${!flag_sets[@]}"; do
    for shift in 0 16 32 48; do
      v=$work/s${j}f${i}o$shift
      mkdir -p "$v"
      : > "$v/shift.h"
      [ "$shift" = 0 ] || printf '__asm__(".text\\n\\t.skip %d, 0x90\\n");\n' "$shift" > "$v/shift.h"
      echo "$s|${flag_sets[$i]}|$shift" > "$v/what"
      # shellcheck disable=SC2046,SC2086  # the flag lines are word lists
      eval "$cxx" $(flag_line CXX_DEFINES) $(flag_line CXX_INCLUDES) $(flag_line CXX_FLAGS) ${flag_sets[$i]} \
        -include "$v/shift.h" -c "$s" -o "$v/$member" &
      variants+=("$(basename "$v")")
    done
  done
done
wait
for name in "${variants[@]}"; do
  v=$work/$name
  [ -s "$v/$member" ] || { echo "placement_sensitivity: compiling $(cut -d'|' -f1 "$v/what") failed" >&2; exit 1; }
  cp "$runtime_lib" "$v/runtime.a" && (cd "$v" && ar r runtime.a "$member") || exit 1
  link=$(sed -e "s|[^ ]*libsigmatrace_runtime\.a|$v/runtime.a|" -e "s|-o [^ ]*verbs_wrapper_cost_bench|-o $v/bench|" "$link_txt")
  (cd "$tree/bench/verbs" && eval "$link") || { echo "placement_sensitivity: linking $name failed" >&2; exit 1; }
  IFS='|' read -r s f o < "$v/what"
  echo "variant $name: source $s, flags '$f', shift $o bytes, post_send_hook<simple> at $(nm -C "$v/bench" | sed -n 's/^\([0-9a-f]*\) t int sigmatrace::profiler::ibv::(anonymous namespace)::post_send_hook<(sigmatrace::profiler::TraceMode)1>.*/0x\1/p' | head -1)"
done
bench_default KINDS "${variants[*]}"
BENCH_KIND_PATTERNS="${variants[*]}"
BENCH_TITLE="ibverbs wrappers' cost by placement (ns per call, on CPUs $CPUS)"

median_of() { awk -F, -v n="\"$1/iterations:3000000/repeats:5_median\"" '$1 == n { print $3 }' "$2"; }
bench_run() {
  local csv=$run_dir/bench.csv rdtsc b
  rdtsc=$(taskset -c "$CPUS" "$hot_bench" --benchmark_filter='Rdtsc/threads:1$' --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true --benchmark_format=csv 2> /dev/null |
    awk -F, '$1 ~ /Rdtsc\/threads:1_median"$/ { print $3 }')
  taskset -c "$CPUS" "$work/$kind/bench" --benchmark_filter='^post_send/(untraced|floor_forward_rdtsc|aggregate|simple|full)/' \
    --benchmark_format=csv > "$csv" || return 1
  for b in untraced floor_forward_rdtsc aggregate simple full; do
    bench_record "post_send $b ns" "$(median_of "post_send/$b" "$csv")" || return 1
  done
  bench_record "simple_added ns" "$(awk -v s="$(median_of post_send/simple "$csv")" -v u="$(median_of post_send/untraced "$csv")" 'BEGIN { print s - u }')"
  bench_record "simple_over_floor ns" "$(awk -v s="$(median_of post_send/simple "$csv")" -v f="$(median_of post_send/floor_forward_rdtsc "$csv")" 'BEGIN { print s - f }')"
  bench_record "target (RDTSC + 3) ns" "$(awk -v r="$rdtsc" 'BEGIN { print r + 3 }')"
}

bench_checks() {  # per variant: the median added cost against the median target
  echo
  echo "per variant, medians over rounds: Simple post_send minus untraced against RDTSC + 3"
  python3 - "$OUT/results.json" << 'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
med = {(r["kind"], r["metric"]): r["median"] for r in rows}
for kind in sorted({r["kind"] for r in rows}):
    a, t, f = med.get((kind, "simple_added ns")), med.get((kind, "target (RDTSC + 3) ns")), med.get((kind, "simple_over_floor ns"))
    if a is None or t is None:
        print(f"{kind:<8} no run")
        continue
    print(f"{kind:<8} added {a:6.2f} ns, RDTSC + 3 = {t:6.2f} ns: {'met' if a <= t else f'over by {a - t:.2f}'}; floor + {f:5.2f} ns")
PY
}
bench_main
