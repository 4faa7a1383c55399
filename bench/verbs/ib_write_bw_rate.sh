#!/bin/bash
# ib_write_bw's message rate with 64-byte messages over softnic, untraced and under the profiler in
# each of KINDS (the harness: bench/lib/harness.sh). Kinds: untraced; aggregate, simple, full (the
# profiler preloaded in that mode, the ibverbs and mlx5 providers on); preload-only (the profiler
# loaded and recording, no provider on). Metric: the client's MsgRate (Mpps). Results and the
# command used: docs/performance.md.
#   bench/verbs/ib_write_bw_rate.sh [NAME=VALUE...]
#   BUILD, OUT, KINDS (untraced aggregate simple full), REPS (7): the harness's settings
#   ITERS (200000), SIZE (64): ib_write_bw's -n and -s; PROGRAM (ib_write_bw);
#   LIBDIR (BUILD/softnic): softnic's libraries; PRELOAD (BUILD/lib/libsigmatrace.so)
#   SOFTNIC_SPIN_US (200000): see below
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib/harness.sh
. "$here/../lib/harness.sh"
# shellcheck source=scripts/lib/ports.sh
. "$BENCH_ROOT/scripts/lib/ports.sh"
bench_args "-r=REPS -n=ITERS -s=SIZE -l=LIBDIR -p=PRELOAD -b=PROGRAM" "$@"
bench_default KINDS "untraced aggregate simple full"
bench_default REPS 7
bench_default ITERS 200000
bench_default SIZE 64
bench_default PROGRAM ib_write_bw
bench_default LIBDIR "$BUILD/softnic"
bench_default PRELOAD "$BUILD/lib/libsigmatrace.so"
# softnic's engine threads busy-poll instead of sleeping on a futex after 5 us: far less
# run-to-run spread (needs a few idle cores: 2 engines + 2 perftest threads + 2 writers).
bench_default SOFTNIC_SPIN_US 200000
BENCH_KIND_PATTERNS="untraced aggregate simple full preload-only"
BENCH_TITLE="ib_write_bw -s $SIZE -n $ITERS over softnic, SOFTNIC_SPIN_US=$SOFTNIC_SPIN_US: message rate (Mpps)"
[ -e "$LIBDIR/libibverbs.so.1" ] || bench_skip "no softnic libraries in LIBDIR=$LIBDIR"
[ -e "$PRELOAD" ] || bench_skip "no PRELOAD=$PRELOAD"
command -v "$PROGRAM" > /dev/null || bench_skip "PROGRAM=$PROGRAM not found"
export LD_LIBRARY_PATH=$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

bench_run() {
  local port envs=() spid rc=0 s
  port=$(unused_tcp_port) || return 1  # the kernel's ephemeral range: fixed test ports stay below it
  export SOFTNIC_FABRIC="rate-$$-$RANDOM"
  case $kind in
    untraced) ;;
    preload-only) envs=(LD_PRELOAD="$PRELOAD" SIGMATRACE_OUTPUT="$run_dir/exp" SIGMATRACE_PROVIDERS=none) ;;
    *) envs=(LD_PRELOAD="$PRELOAD" SIGMATRACE_MODE="$kind" SIGMATRACE_OUTPUT="$run_dir/exp" "SIGMATRACE_PROVIDERS=ibverbs,mlx5") ;;
  esac
  env "${envs[@]}" "$PROGRAM" -s "$SIZE" -n "$ITERS" -p "$port" > "$run_dir/server.log" 2>&1 &
  spid=$!
  wait_tcp_listening "$port" 100 || echo "no server listening on port $port"
  env "${envs[@]}" "$PROGRAM" -s "$SIZE" -n "$ITERS" -p "$port" localhost > "$run_dir/client.log" 2>&1 || rc=$?
  wait "$spid"
  s=$?
  [ "$rc" != 0 ] || rc=$s
  rm -rf "$run_dir/exp"  # the trace is not what is measured
  bench_record msg_rate_Mpps "$(awk -v s="$SIZE" '$1 == s && NF >= 5 { print $5 }' "$run_dir/client.log" | tail -1)"
  return "$rc"
}
bench_main
