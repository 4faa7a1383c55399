#!/bin/bash
# Latency and bandwidth of RDMA writes over softnic, measured with the unmodified perftest
# binaries between two processes on this machine, through the harness (bench/lib/harness.sh).
# The one kind is softnic as configured; softnic/VAR=VALUE... kinds pair settings against it
# (e.g. KINDS="softnic softnic/SOFTNIC_SPIN_US=200000"). Cases: ib_write_lat with 8 B
# (typical one-way latency and its 99th percentile, us), ib_write_bw with 64 KiB and 1 MiB
# (average bandwidth, MB/s).
#   bench/softnic_perftest.sh [NAME=VALUE...]
#   BUILD, OUT, KINDS (softnic), REPS (5): the harness's settings; LIBDIR (BUILD/softnic);
#   ITERS_LAT (20000), ITERS_BW (5000; a tenth with 1 MiB); NICE (0: niceness of both perftest
#   processes; a negative value keeps other work on a shared machine from skewing the figures).
#   Any SOFTNIC_* setting is passed through to both processes.
set -u
# shellcheck source=bench/lib/harness.sh
. "$(dirname "$0")/lib/harness.sh"
# shellcheck source=scripts/lib/ports.sh
. "$BENCH_ROOT/scripts/lib/ports.sh"
bench_args "LIBDIR" "$@"
bench_default KINDS softnic
bench_default REPS 5
bench_default LIBDIR "$BUILD/softnic"
bench_default ITERS_LAT 20000
bench_default ITERS_BW 5000
bench_default NICE 0
BENCH_KIND_PATTERNS=softnic
BENCH_CASES="write_lat_8B write_bw_64KiB write_bw_1MiB"
BENCH_TITLE="softnic perftest, nice $NICE ($(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), Linux $(uname -r))"
[ -e "$LIBDIR/libibverbs.so.1" ] || bench_skip "no softnic libraries in LIBDIR=$LIBDIR (build the 'softnic' target first)"
export LD_LIBRARY_PATH=$LIBDIR

run_pair() {  # PROGRAM ARGS...: the client's result line
  local port spid
  port=$(unused_tcp_port) || return 1
  nice -n "$NICE" timeout 120 "$@" -p "$port" > "$run_dir/server.log" 2>&1 &
  spid=$!
  wait_tcp_listening "$port" 100
  nice -n "$NICE" timeout 120 "$@" -p "$port" localhost 2> "$run_dir/client.err" | tee "$run_dir/client.log" | grep -E '^ +[0-9]+ +[0-9]+ ' | tail -1
  wait "$spid"
}

bench_run() {
  local line
  export SOFTNIC_FABRIC="bench-$$-$RANDOM"
  case $case_name in
    write_lat_8B)  # columns: bytes iters t_min t_max t_typical t_avg t_stdev p99 p99.9 (usec, one way)
      line=$(run_pair ib_write_lat -s 8 -n "$ITERS_LAT")
      bench_record typical_us "$(awk '{print $5}' <<< "$line")"
      bench_record p99_us "$(awk '{print $8}' <<< "$line")" ;;
    write_bw_64KiB)  # columns: bytes iters peak avg(MB/s) msgrate
      line=$(run_pair ib_write_bw -s 65536 -n "$ITERS_BW")
      bench_record average_MBps "$(awk '{print $4}' <<< "$line")" ;;
    write_bw_1MiB)
      line=$(run_pair ib_write_bw -s 1048576 -n $((ITERS_BW / 10)))
      bench_record average_MBps "$(awk '{print $4}' <<< "$line")" ;;
  esac
  local rc=$?
  rm -f "/dev/shm/softnic-$SOFTNIC_FABRIC.lock"
  return $rc
}
bench_main
