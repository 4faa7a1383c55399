#!/bin/bash
# Latency and bandwidth of RDMA writes over softnic, measured with the unmodified perftest
# binaries between two processes on this machine. Each figure is the median of REPEAT runs.
#   bench/softnic_perftest.sh [LIBDIR]      (default: build/softnic)
# Environment: REPEAT (default 5), ITERS_LAT (default 20000), ITERS_BW (default 5000),
# PORT (default 19500), NICE (default 0: niceness of both perftest processes; a negative
# value keeps other work on a shared machine from skewing the figures); any SOFTNIC_*
# setting is passed through to both processes.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../scripts/lib/ports.sh
. "$here/scripts/lib/ports.sh"
# shellcheck source=../scripts/lib/stats.sh
. "$here/scripts/lib/stats.sh"
libdir=${1:-$here/build/softnic}
repeat=${REPEAT:-5}
iters_lat=${ITERS_LAT:-20000}
iters_bw=${ITERS_BW:-5000}
port=${PORT:-19500}
niceness=${NICE:-0}
if [ ! -e "$libdir/libibverbs.so.1" ]; then
  echo "no softnic libraries in $libdir (build the 'softnic' target first)" >&2
  exit 1
fi
export LD_LIBRARY_PATH=$libdir
export SOFTNIC_FABRIC="bench-$$"

# run_pair PROGRAM ARGS... : prints the client's result line
run_pair() {
  port=$((port + 1))
  nice -n "$niceness" timeout 120 "$@" -p $port >/dev/null 2>&1 &
  local spid=$!
  wait_tcp_listening "$port" 100
  nice -n "$niceness" timeout 120 "$@" -p $port localhost 2>/dev/null | grep -E '^ +[0-9]+ +[0-9]+ ' | tail -1
  wait $spid
}


lat_typ=() lat_p99=() bw64k=() bw1m=()
for i in $(seq 1 "$repeat"); do
  # ib_write_lat columns: bytes iters t_min t_max t_typical t_avg t_stdev p99 p99.9 (usec, one way)
  line=$(run_pair ib_write_lat -s 8 -n "$iters_lat")
  lat_typ+=("$(awk '{print $5}' <<<"$line")")
  lat_p99+=("$(awk '{print $8}' <<<"$line")")
  # ib_write_bw columns: bytes iters peak avg(MB/s) msgrate
  line=$(run_pair ib_write_bw -s 65536 -n "$iters_bw")
  bw64k+=("$(awk '{print $4}' <<<"$line")")
  line=$(run_pair ib_write_bw -s 1048576 -n $((iters_bw / 10)))
  bw1m+=("$(awk '{print $4}' <<<"$line")")
done
rm -f "/dev/shm/softnic-$SOFTNIC_FABRIC.lock"

echo "softnic perftest, median of $repeat runs, nice $niceness ($(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), Linux $(uname -r))"
printf '  ib_write_lat  8 B   typical one-way latency : %s us  (runs: %s)\n' "$(printf '%s\n' "${lat_typ[@]}" | median)" "${lat_typ[*]}"
printf '  ib_write_lat  8 B   99th percentile         : %s us  (runs: %s)\n' "$(printf '%s\n' "${lat_p99[@]}" | median)" "${lat_p99[*]}"
printf '  ib_write_bw  64 KiB average bandwidth       : %s MB/s  (runs: %s)\n' "$(printf '%s\n' "${bw64k[@]}" | median)" "${bw64k[*]}"
printf '  ib_write_bw   1 MiB average bandwidth       : %s MB/s  (runs: %s)\n' "$(printf '%s\n' "${bw1m[@]}" | median)" "${bw1m[*]}"
