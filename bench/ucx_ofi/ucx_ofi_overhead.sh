#!/bin/bash
# Small-message latency and message rate of real UCX and libfabric programs, untraced and under
# `sigmatrace profile` in each mode, in one invocation; every configuration is repeated and the
# median reported (2 busy-polling processes on a small machine are noisy: medians, not means).
#
#   bench/ucx_ofi/ucx_ofi_overhead.sh [BUILD_DIR=build] [REPEATS=5] [MODES="off aggregate simple full"]
#
# ucx_perftest: tag_lat (8 B, median latency in us) and tag_bw (8 B, message rate in msg/s) over
# UCX_TLS=posix,self (shared memory) and tcp on lo; fi_pingpong: 64 B ping-pong (us per transfer)
# over tcp (msg) and shm (rdm). Prints a Markdown table.
set -u
BUILD=${1:-build}
REPEATS=${2:-5}
MODES=${3:-"off aggregate simple full"}
S=$BUILD/bin/sigmatrace
[ -x "$S" ] || { echo "no $S (build the sigmatrace_cli and sigmatrace targets)" >&2; exit 1; }
command -v ucx_perftest >/dev/null || { echo "ucx_perftest is not installed" >&2; exit 1; }
command -v fi_pingpong >/dev/null || { echo "fi_pingpong is not installed" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
here=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../../scripts/lib/ports.sh
. "$here/scripts/lib/ports.sh"
# shellcheck source=../../scripts/lib/stats.sh
. "$here/scripts/lib/stats.sh"

prefix() {  # mode -> command prefix
  if [ "$1" = off ]; then echo ""; else echo "$S profile --mode $1 -o $TMP/exp-$1 --"; fi
}


# ucx_run TLS TEST ITERS FIELD -> one number (FIELD of ucx_perftest's "Final:" line)
ucx_run() {
  local mode=$1 tls=$2 test=$3 iters=$4 field=$5 p
  p=$(prefix "$mode")
  PORT=$(unused_tcp_port)
  UCX_TLS=$tls UCX_NET_DEVICES=lo timeout 60 $p ucx_perftest -p $PORT >/dev/null 2>&1 &
  local srv=$!
  wait_tcp_listening "$PORT" 100
  UCX_TLS=$tls UCX_NET_DEVICES=lo timeout 60 $p ucx_perftest 127.0.0.1 -p $PORT -t "$test" -n "$iters" -s 8 2>/dev/null |
    awk -v f="$field" '/^Final:/ {print $f}'
  wait $srv
  rm -rf "$TMP"/exp-*
}

# ofi_run PROVIDER EP ITERS FIELD -> usec/xfer ($7) of fi_pingpong's result line
ofi_run() {
  local mode=$1 prov=$2 ep=$3 iters=$4 p
  p=$(prefix "$mode")
  PORT=$(unused_tcp_port)
  timeout 60 $p fi_pingpong -p "$prov" -e "$ep" -I "$iters" -S 64 -B $PORT >/dev/null 2>&1 &
  local srv=$!
  wait_tcp_listening "$PORT" 100
  timeout 60 $p fi_pingpong -p "$prov" -e "$ep" -I "$iters" -S 64 -P $PORT 127.0.0.1 2>/dev/null | awk '$1 == 64 {print $7}'
  wait $srv
  rm -rf "$TMP"/exp-*
}

cases=(
  "ucx_perftest tag_lat posix,self, 8 B, median latency (us)|ucx_run MODE posix,self tag_lat 20000 3"
  "ucx_perftest tag_lat tcp/lo, 8 B, median latency (us)|ucx_run MODE tcp tag_lat 5000 3"
  "ucx_perftest tag_bw posix,self, 8 B, message rate (msg/s)|ucx_run MODE posix,self tag_bw 200000 9"
  "ucx_perftest tag_bw tcp/lo, 8 B, message rate (msg/s)|ucx_run MODE tcp tag_bw 50000 9"
  "fi_pingpong shm rdm, 64 B, us per transfer|ofi_run MODE shm rdm 20000"
  "fi_pingpong tcp msg, 64 B, us per transfer|ofi_run MODE tcp msg 5000"
)

header="| program, size, metric |"
sep="|---|"
for m in $MODES; do header="$header $m |"; sep="$sep---:|"; done
echo "$header"
echo "$sep"
for c in "${cases[@]}"; do
  label=${c%%|*}
  cmd=${c#*|}
  row="| $label |"
  for m in $MODES; do
    v=$(for _ in $(seq "$REPEATS"); do ${cmd/MODE/$m}; done | median)
    row="$row $v |"
  done
  echo "$row"
done
