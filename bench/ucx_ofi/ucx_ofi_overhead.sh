#!/bin/bash
# Small-message latency and message rate of real UCX and libfabric programs, untraced and under
# `sigmatrace profile` in each mode, through the harness (bench/lib/harness.sh): kinds untraced,
# aggregate, simple, full (2 busy-polling processes on a small machine are noisy: medians and
# paired differences, not means). Cases: ucx_perftest tag_lat (8 B, median latency in us) and
# tag_bw (8 B, message rate in msg/s) over UCX_TLS=posix,self (shared memory) and tcp on lo;
# fi_pingpong 64 B ping-pong (us per transfer) over shm (rdm) and tcp (msg).
#   bench/ucx_ofi/ucx_ofi_overhead.sh [NAME=VALUE...]
#   BUILD, OUT, KINDS (untraced aggregate simple full), REPS (5): the harness's settings
set -u
# shellcheck source=bench/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
# shellcheck source=scripts/lib/ports.sh
. "$BENCH_ROOT/scripts/lib/ports.sh"
bench_args "BUILD REPS KINDS" "$@"
bench_default KINDS "untraced aggregate simple full"
bench_default REPS 5
BENCH_KIND_PATTERNS="untraced aggregate simple full"
BENCH_CASES="ucx_tag_lat_shm ucx_tag_lat_tcp ucx_tag_bw_shm ucx_tag_bw_tcp fi_pingpong_shm fi_pingpong_tcp"
BENCH_TITLE="UCX and libfabric programs, traced and untraced"
S=$BUILD/bin/sigmatrace
[ -x "$S" ] || bench_skip "no $S (build the sigmatrace_cli and sigmatrace targets)"
command -v ucx_perftest > /dev/null || bench_skip "ucx_perftest is not installed"
command -v fi_pingpong > /dev/null || bench_skip "fi_pingpong is not installed"

prefix=()  # the command prefix of this run's kind
set_prefix() { [ "$kind" = untraced ] || prefix=("$S" profile --mode "$kind" -o "$run_dir/exp" --); }

ucx_run() {  # TLS TEST ITERS FIELD: FIELD of ucx_perftest's "Final:" line
  local tls=$1 test=$2 iters=$3 field=$4 port srv
  port=$(unused_tcp_port) || return 1
  UCX_TLS=$tls UCX_NET_DEVICES=lo timeout 60 "${prefix[@]}" ucx_perftest -p "$port" > "$run_dir/server.log" 2>&1 &
  srv=$!
  wait_tcp_listening "$port" 100
  UCX_TLS=$tls UCX_NET_DEVICES=lo timeout 60 "${prefix[@]}" ucx_perftest 127.0.0.1 -p "$port" -t "$test" -n "$iters" -s 8 \
    2> "$run_dir/client.err" | tee "$run_dir/client.log" | awk -v f="$field" '/^Final:/ {print $f}'
  wait "$srv"
}

ofi_run() {  # PROVIDER EP ITERS: usec/xfer ($7) of fi_pingpong's result line
  local prov=$1 ep=$2 iters=$3 port srv
  port=$(unused_tcp_port) || return 1
  timeout 60 "${prefix[@]}" fi_pingpong -p "$prov" -e "$ep" -I "$iters" -S 64 -B "$port" > "$run_dir/server.log" 2>&1 &
  srv=$!
  wait_tcp_listening "$port" 100
  timeout 60 "${prefix[@]}" fi_pingpong -p "$prov" -e "$ep" -I "$iters" -S 64 -P "$port" 127.0.0.1 2> "$run_dir/client.err" |
    tee "$run_dir/client.log" | awk '$1 == 64 {print $7}'
  wait "$srv"
}

bench_run() {
  set_prefix
  case $case_name in
    ucx_tag_lat_shm) bench_record median_latency_us "$(ucx_run posix,self tag_lat 20000 3)" ;;
    ucx_tag_lat_tcp) bench_record median_latency_us "$(ucx_run tcp tag_lat 5000 3)" ;;
    ucx_tag_bw_shm) bench_record msg_per_s "$(ucx_run posix,self tag_bw 200000 9)" ;;
    ucx_tag_bw_tcp) bench_record msg_per_s "$(ucx_run tcp tag_bw 50000 9)" ;;
    fi_pingpong_shm) bench_record us_per_xfer "$(ofi_run shm rdm 20000)" ;;
    fi_pingpong_tcp) bench_record us_per_xfer "$(ofi_run tcp msg 5000)" ;;
  esac
  local rc=$?
  rm -rf "$run_dir/exp"
  return $rc
}
bench_main
