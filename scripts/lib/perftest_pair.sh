# shellcheck shell=bash
# Sourced by shell tests (after shell_test.sh, which gives fail): a perftest pair over softnic.
# perftest_pair ST EXP LOG PROGRAM ARGS...: PROGRAM's server on emulated host node-a, then its client
# on node-b towards it, each under `ST profile --softnic --mode full -o EXP` (the environment's
# SOFTNIC_FABRIC, SOFTNIC_WQE_LOG, ... apply); their output in LOG.server and LOG.client. Fails the
# test when either side fails or the server does not start.
source "$(dirname "${BASH_SOURCE[0]}")/ports.sh"

perftest_pair() {
  local st=$1 exp=$2 log=$3 port server
  shift 3
  port=$(unused_tcp_port)
  SOFTNIC_HOST=node-a timeout 60 "$st" profile --softnic --host node-a --mode full -o "$exp" -- "$@" -p "$port" >"$log.server" 2>&1 &
  server=$!
  wait_tcp_listening "$port" 100 || fail "$1 server did not start"
  SOFTNIC_HOST=node-b timeout 60 "$st" profile --softnic --host node-b --mode full -o "$exp" -- "$@" -p "$port" localhost \
    >"$log.client" 2>&1 || { cat "$log.client"; fail "$1 client failed"; }
  wait "$server" || { cat "$log.server"; fail "$1 server failed"; }
}
