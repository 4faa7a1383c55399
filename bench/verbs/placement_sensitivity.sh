#!/bin/bash
# How much the ibverbs wrappers' measured cost depends on where the linker put them. Relinks
# verbs_wrapper_cost_bench with the translation unit of the context-op wrappers (post_send, poll_cq)
# shifted by 0, 16, 32 and 48 bytes (a .skip at the start of its .text), for each set of extra
# compiler flags given, and runs every variant in alternated rounds. Within one flag set the
# variants execute the same instructions at different addresses, so their spread is placement.
# Prints one line per variant and round (ns per call, medians of the benchmark's 5 repetitions)
# and, per variant, the median over rounds of Simple-mode post_send minus untraced beside the
# round's RDTSC + 3 ns, the per-call target. Results: docs/performance.md.
#
# Usage: placement_sensitivity.sh [-b BUILD] [-r ROUNDS] [-c CPUS] [-s SOURCE]... [-f FLAGS]...
#   BUILD:  a configured build tree of this repository (Makefile generator) in which
#           verbs_wrapper_cost_bench and recorder_hot_path_bench are built (default ./build);
#   CPUS:   the taskset list the benchmarks run on (default 2,3);
#   SOURCE: a version of ibverbs_context_ops.cpp to build, one per -s (default: this tree's), to
#           compare two versions side by side with their placement spread;
#   FLAGS:  extra compiler flags for that file, one set per -f ("" = as built; default).
# Every SOURCE is built with every FLAGS at every shift.
set -eu
build=build rounds=3 cpus=2,3 sources=() flagsets=()
while getopts b:r:c:s:f: o; do
  case $o in
    b) build=$OPTARG ;; r) rounds=$OPTARG ;; c) cpus=$OPTARG ;; s) sources+=("$(realpath "$OPTARG")") ;; f) flagsets+=("$OPTARG") ;;
    *) exit 2 ;;
  esac
done
[ ${#flagsets[@]} -gt 0 ] || flagsets=("")
[ ${#sources[@]} -gt 0 ] || sources=("$(cd "$(dirname "$0")/../.." && pwd)/src/profiler/providers/verbs/ibverbs_context_ops.cpp")
build=$(cd "$build" && pwd)
objdir=$build/src/profiler/CMakeFiles/sigmatrace_runtime_objects.dir
flags_make=$objdir/flags.make
link_txt=$build/bench/verbs/CMakeFiles/verbs_wrapper_cost_bench.dir/link.txt
runtime_lib=$build/lib/libsigmatrace_runtime.a
hot_bench=$build/bench/bin/recorder_hot_path_bench
for f in "$flags_make" "$link_txt" "$runtime_lib" "$hot_bench"; do
  [ -e "$f" ] || { echo "placement_sensitivity: $f is missing (configure $build with the Makefile generator and build verbs_wrapper_cost_bench and recorder_hot_path_bench)" >&2; exit 2; }
done
member=ibverbs_context_ops.cpp.o
cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
flag_line() { sed -n "s/^$1 = //p" "$flags_make"; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Build the variants: the wrappers' object recompiled (in parallel), put into a copy of the runtime
# library, the benchmark relinked against it with the link line CMake wrote.
variants=()
for j in "${!sources[@]}"; do
  for i in "${!flagsets[@]}"; do
    for shift in 0 16 32 48; do
      v=$work/s${j}f${i}o$shift
      mkdir -p "$v"
      : >"$v/shift.h"
      [ "$shift" = 0 ] || printf '__asm__(".text\\n\\t.skip %d, 0x90\\n");\n' "$shift" >"$v/shift.h"
      echo "${sources[$j]}|${flagsets[$i]}|$shift" >"$v/what"
      # shellcheck disable=SC2046,SC2086  # the flag lines are word lists
      eval "$cxx" $(flag_line CXX_DEFINES) $(flag_line CXX_INCLUDES) $(flag_line CXX_FLAGS) ${flagsets[$i]} \
        -include "$v/shift.h" -c "${sources[$j]}" -o "$v/$member" &
      variants+=("$v")
    done
  done
done
wait
for v in "${variants[@]}"; do
  [ -s "$v/$member" ] || { echo "placement_sensitivity: compiling $(cut -d'|' -f1 "$v/what") failed" >&2; exit 1; }
  cp "$runtime_lib" "$v/runtime.a"
  (cd "$v" && ar r runtime.a "$member")
  link=$(sed -e "s|[^ ]*libsigmatrace_runtime\.a|$v/runtime.a|" -e "s|-o [^ ]*verbs_wrapper_cost_bench|-o $v/bench|" "$link_txt")
  (cd "$build/bench/verbs" && eval "$link")
  IFS='|' read -r s f o <"$v/what"
  echo "variant $(basename "$v"): source $s, flags '$f', shift $o bytes, post_send_hook<simple> at $(nm -C "$v/bench" | sed -n 's/^\([0-9a-f]*\) t int sigmatrace::profiler::ibv::(anonymous namespace)::post_send_hook<(sigmatrace::profiler::TraceMode)1>.*/0x\1/p' | head -1)"
done

filter='^post_send/(untraced|floor_forward_rdtsc|aggregate|simple|full)/'
median_of() { awk -F, -v n="\"$1/iterations:3000000/repeats:5_median\"" '$1 == n { print $3 }' "$2"; }
results=$work/results
: >"$results"
printf '%-6s %-8s %6s %9s %9s %9s %9s %9s\n' round variant rdtsc untraced floor agg simple full
for r in $(seq "$rounds"); do
  rdtsc=$(taskset -c "$cpus" "$hot_bench" --benchmark_filter='Rdtsc/threads:1$' --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true --benchmark_format=csv 2>/dev/null |
    awk -F, '$1 ~ /Rdtsc\/threads:1_median"$/ { print $3 }')
  for v in "${variants[@]}"; do
    csv=$v/round$r.csv
    taskset -c "$cpus" "$v/bench" --benchmark_filter="$filter" --benchmark_format=csv >"$csv" 2>/dev/null
    line=$(printf '%-6s %-8s %6.1f' "$r" "$(basename "$v")" "$rdtsc")
    for b in post_send/untraced post_send/floor_forward_rdtsc post_send/aggregate post_send/simple post_send/full; do
      line+=$(printf ' %9.2f' "$(median_of "$b" "$csv")")
    done
    echo "$line" | tee -a "$results"
  done
done

echo
echo "per variant, medians over rounds: Simple post_send minus untraced against RDTSC + 3, and minus the floor"
awk 'function median(list,   v, n, i, j, t) {
       n = split(list, v, " ")
       for (i = 2; i <= n; ++i) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; --j) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
       return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
     }
     { added[$2] = added[$2] " " ($7 - $4); target[$2] = target[$2] " " ($3 + 3); over_floor[$2] = over_floor[$2] " " ($7 - $5) }
     END {
       for (k in added) {
         a = median(added[k]); t = median(target[k])
         printf "%-8s added %6.2f ns, RDTSC + 3 = %6.2f ns: %s; floor + %5.2f ns\n", k, a, t, a <= t ? "met" : sprintf("over by %.2f", a - t), median(over_floor[k])
       }
     }' "$results" | sort
