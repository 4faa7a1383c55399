#!/bin/bash
# A peer that is killed in the middle of a transfer must not wedge the survivor: the
# surviving ib_write_bw gets an error completion (transport retry exceeded), exits, and the
# fabric's shared segments are gone afterwards.
# Usage: crash_peer.sh LIBDIR PORT
set -u
# shellcheck source=../../../scripts/lib/ports.sh
. "$(dirname "$0")/../../../scripts/lib/ports.sh"
libdir=$1 port=$2
export LD_LIBRARY_PATH=$libdir
export SOFTNIC_FABRIC="t-crash-$$"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
ib_write_bw -D 20 -p "$port" >"$out/server.log" 2>&1 &
spid=$!
wait_tcp_listening "$port" 100
timeout 30 ib_write_bw -D 20 -p "$port" localhost >"$out/client.log" 2>&1 &
cpid=$!
sleep 2
kill -9 $spid
start=$SECONDS
wait $cpid
crc=$?
elapsed=$((SECONDS - start))
fail=0
if [ $crc -eq 0 ] || [ $crc -eq 124 ]; then
  echo "FAIL: client rc=$crc (expected an error exit, not success or a hang)"
  fail=1
fi
if ! grep -q "Failed status 12" "$out/client.log"; then
  echo "FAIL: no IBV_WC_RETRY_EXC_ERR (status 12) completion reported"
  fail=1
fi
leftover=$(ls /dev/shm | grep -F "softnic-$SOFTNIC_FABRIC")
if [ -n "$leftover" ]; then
  echo "FAIL: shared segments left behind: $leftover"
  fail=1
fi
if [ $fail -ne 0 ]; then
  cat "$out/client.log"
  exit 1
fi
echo "survivor failed cleanly ${elapsed}s after its peer was killed"
