#!/usr/bin/env bash
# UCX's own client-server example (AM API, 20 messages of 1000 bytes) with the server traced in
# full mode and ended by `timeout -s TERM`, as a launcher ends a job: timeout(1) signals the
# program and then its own process group, so the server gets SIGTERM twice. Every run must leave
# a complete trace: status "ended by signal" and all 20 ucx_am_recv. The client's output must be
# the same as in an untraced run.
# usage: ucp_server_sigterm.sh BUILD_DIR UCP_CLIENT_SERVER RUNS
set -u
build=$1 prog=$2 runs=${3:-20}
here=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../../scripts/lib/ports.sh
. "$here/scripts/lib/ports.sh"
st=$build/bin/sigmatrace
work=$(mktemp -d /tmp/ucp-sigterm.XXXXXX)
trap 'rm -rf "$work"' EXIT
args=(-c am -i 20 -s 1000)

client_run() {  # client_run PORT OUT: one client against a server listening on PORT
  "$prog" -a 127.0.0.1 "${args[@]}" -p "$1" > "$2" 2>&1
}

# The untraced reference: the client's output against an untraced server.
port=$(unused_tcp_port) || exit 1
timeout -s TERM 20 "$prog" "${args[@]}" -p "$port" > "$work/ref-server.log" 2>&1 &
srv=$!
wait_tcp_listening "$port" || { echo "FAIL: untraced server did not listen"; exit 1; }
client_run "$port" "$work/ref-client.log" || { echo "FAIL: untraced client failed"; cat "$work/ref-client.log"; exit 1; }
kill -TERM "$srv"; wait "$srv"

failed=0
for i in $(seq "$runs"); do
  port=$(unused_tcp_port) || exit 1
  exp=$work/exp$i
  timeout -s TERM 3 "$st" profile --mode full -o "$exp" -- "$prog" "${args[@]}" -p "$port" > "$work/server$i.log" 2>&1 &
  srv=$!
  if ! wait_tcp_listening "$port"; then echo "run $i: FAIL: the traced server did not listen"; failed=$((failed + 1)); wait "$srv"; continue; fi
  client_run "$port" "$work/client$i.log"
  wait "$srv"
  info=$("$st" info "$exp" 2>&1)
  status=$(echo "$info" | awk '/ ucp_client_serv/ {s=$0} END {print s}')
  recv=$(echo "$info" | awk '$1 == "ucx_am_recv" {print $2}')
  if ! echo "$status" | grep -q "ended by signal" || [ "${recv:-0}" != 20 ]; then
    echo "run $i: FAIL: ${status:-no process line}; ucx_am_recv ${recv:-0} (want 20)"
    failed=$((failed + 1))
  elif ! cmp -s "$work/ref-client.log" "$work/client$i.log"; then
    echo "run $i: FAIL: the client's output differs from the untraced run"
    failed=$((failed + 1))
  fi
done
echo "$((runs - failed)) of $runs runs left a complete trace (ended by signal, 20 ucx_am_recv)"
[ $failed = 0 ] && echo "ucp server sigterm: PASSED" && exit 0
exit 1
