#!/bin/bash
# ib_write_bw's message rate with 64-byte messages over softnic, untraced and under the profiler in
# each mode, interleaved (untraced, aggregate, simple, full, untraced, ...) so that drift in the
# machine's load hits every configuration alike. Prints the median MsgRate of each and the loss
# against the untraced median. Results and the command used: docs/performance.md.
#
# Usage: ib_write_bw_rate.sh [-r REPS] [-n ITERS] [-s SIZE] [-l LIBDIR] [-p LIBSIGMATRACE] [-b IB_WRITE_BW]
#   LIBDIR: softnic's libraries (default <build>/softnic); LIBSIGMATRACE: the preload library.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${SIGMATRACE_BUILD_DIR:-$here/../../build}
# shellcheck source=../../scripts/lib/ports.sh
. "$here/../../scripts/lib/ports.sh"
# shellcheck source=../../scripts/lib/stats.sh
. "$here/../../scripts/lib/stats.sh"
reps=7 iters=200000 size=64 libdir=$build/softnic preload=$build/lib/libsigmatrace.so prog=ib_write_bw
while getopts r:n:s:l:p:b: o; do
  case $o in
    r) reps=$OPTARG ;; n) iters=$OPTARG ;; s) size=$OPTARG ;; l) libdir=$OPTARG ;; p) preload=$OPTARG ;; b) prog=$OPTARG ;;
    *) exit 2 ;;
  esac
done
[ -e "$libdir/libibverbs.so.1" ] || { echo "no softnic libraries in $libdir" >&2; exit 77; }
[ -e "$preload" ] || { echo "no $preload" >&2; exit 77; }
command -v "$prog" >/dev/null || { echo "$prog not found" >&2; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# softnic's engine threads busy-poll instead of sleeping on a futex after 5 us: far less
# run-to-run spread (needs a few idle cores: 2 engines + 2 perftest threads + 2 writers).
export SOFTNIC_SPIN_US=${SOFTNIC_SPIN_US:-200000}

run_one() {  # mode -> prints MsgRate (Mpps) of the client
  local mode=$1 port envs=()
  port=$(unused_tcp_port) || return 1  # the kernel's ephemeral range: fixed test ports stay below it
  export SOFTNIC_FABRIC="rate-$$-$RANDOM"
  if [ "$mode" = preload-only ]; then  # the profiler loaded and recording, no provider on
    envs=(LD_PRELOAD="$preload" SIGMATRACE_OUTPUT="$work/exp-$mode-$port" SIGMATRACE_PROVIDERS=none)
  elif [ "$mode" != untraced ]; then
    envs=(LD_PRELOAD="$preload" SIGMATRACE_MODE="$mode" SIGMATRACE_OUTPUT="$work/exp-$mode-$port" SIGMATRACE_PROVIDERS=ibverbs,mlx5)
  fi
  env "${envs[@]}" "$prog" -s "$size" -n "$iters" -p "$port" >"$work/server.log" 2>&1 &
  local spid=$!
  wait_tcp_listening "$port" 100
  env "${envs[@]}" "$prog" -s "$size" -n "$iters" -p "$port" localhost >"$work/client.log" 2>&1
  wait "$spid"
  awk -v s="$size" '$1 == s && NF >= 5 { print $5 }' "$work/client.log" | tail -1
}

modes=${MODES:-untraced aggregate simple full}
for r in $(seq 1 "$reps"); do
  for m in $modes; do
    v=$(run_one "$m")
    [ -n "$v" ] && echo "$v" >>"$work/$m.txt"
  done
done
base=$(median < "$work/untraced.txt")
printf "ib_write_bw -s %s -n %s, SOFTNIC_SPIN_US=%s, %s interleaved runs per configuration (median MsgRate)\n" "$size" "$iters" "$SOFTNIC_SPIN_US" "$reps"
printf "%-10s %12s %10s   %s\n" mode "Mpps" "loss" "all runs"
for m in $modes; do
  v=$(median < "$work/$m.txt")
  loss=$(awk -v b="$base" -v v="$v" 'BEGIN { printf "%.2f %%", (b - v) / b * 100 }')
  printf "%-10s %12s %10s   %s\n" "$m" "$v" "$loss" "$(tr '\n' ' ' <"$work/$m.txt")"
done
