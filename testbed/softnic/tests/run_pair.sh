#!/bin/bash
# Runs an unmodified RDMA program as server and client over softnic (two processes, one
# emulated fabric private to this test) and checks exit codes, output and shm cleanup.
# Usage: run_pair.sh LIBDIR NAME PORT "SERVER ARGS" "CLIENT ARGS" [CLIENT_REGEX]
#   Arguments are word-split; @PORT@ is replaced by PORT. The client connects to localhost.
set -u
# shellcheck source=../../../scripts/lib/ports.sh
. "$(dirname "$0")/../../../scripts/lib/ports.sh"
libdir=$1 name=$2 port=$3 sargs=$4 cargs=$5 regex=${6:-}
export LD_LIBRARY_PATH=$libdir
export SOFTNIC_FABRIC="t-$name-$$"
limit=${SOFTNIC_TEST_LIMIT:-100}
sargs=${sargs//@PORT@/$port}
cargs=${cargs//@PORT@/$port}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

if tcp_port_listening "$port"; then
  echo "FAIL: TCP port $port is already in use by another program"
  exit 1
fi
timeout "$limit" $sargs >"$out/server.log" 2>&1 &
spid=$!
# Wait until the server listens (the clients do not retry their TCP connect).
for _ in $(seq 1 200); do
  tcp_port_listening "$port" && break
  kill -0 $spid 2>/dev/null || break
  sleep 0.05
done
timeout "$limit" $cargs >"$out/client.log" 2>&1
crc=$?
wait $spid
src=$?

fail=0
if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
  echo "FAIL: client rc=$crc server rc=$src"
  fail=1
fi
if [ -n "$regex" ] && ! grep -Eq "$regex" "$out/client.log"; then
  echo "FAIL: client output does not match /$regex/"
  fail=1
fi
leftover=$(ls /dev/shm | grep -F "softnic-$SOFTNIC_FABRIC" | grep -v '\.lock$')
if [ -n "$leftover" ]; then
  echo "FAIL: shared segments left behind: $leftover"
  fail=1
fi
rm -f "/dev/shm/softnic-$SOFTNIC_FABRIC.lock"
if [ $fail -ne 0 ]; then
  echo "---- server ($sargs) ----"; cat "$out/server.log"
  echo "---- client ($cargs) ----"; cat "$out/client.log"
  exit 1
fi
grep -E "^ *[0-9]+ +[0-9]+ |usec/iter|bytes in" "$out/client.log" | tail -3
exit 0
