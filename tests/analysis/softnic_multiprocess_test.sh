#!/bin/bash
# Multi-process, multi-host analysis over the emulated NIC: four real perftest processes standing
# for two hosts (SOFTNIC_HOST=node-a / node-b), profiled in Full mode into one experiment, then
# `sigmatrace analyze`. Checks the topology (2 connections, each between the two hosts), exact byte
# counts in the host matrix and in SQL, and flows from each SEND to its receive in the other process.
#   pair 1: ib_write_bw  server on node-a (rank 0), client on node-b (rank 1): WRITEs b -> a
#   pair 2: ib_send_bw   server on node-b (rank 2), client on node-a (rank 3): SENDs  a -> b
# Usage: softnic_multiprocess_test.sh BUILD_DIR SOURCE_DIR. Exit 77 (skipped) while softnic or the
# ibverbs provider is not built.
set -u
build=$1
# The profiler refuses SIGMATRACE_* variables it does not know: keep the test's own out of its way.
keep=${SIGMATRACE_KEEP_TEST_DIRS:-}
unset SIGMATRACE_KEEP_TEST_DIRS
st=$build/bin/sigmatrace
skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

[ -x "$st" ] || skip "$st is not built"
[ -e "$build/softnic/libibverbs.so.1" ] || skip "softnic is not built ($build/softnic/libibverbs.so.1 missing)"
command -v ib_write_bw >/dev/null && command -v ib_send_bw >/dev/null || skip "perftest (ib_write_bw, ib_send_bw) is not installed"
if ! "$st" profile --dry-run --providers ibverbs -- true >/dev/null 2>&1; then
  skip "the ibverbs provider is not available (SIGMATRACE_PROVIDERS=ibverbs refused)"
fi

iters=200 size=65536
work=$(mktemp -d)
[ -n "$keep" ] && echo "keeping $work" || trap 'rm -rf "$work"' EXIT
exp=$work/exp
export SIGMATRACE_RUN_ID="analysis-softnic-$$"
export SOFTNIC_FABRIC="analysis-$$"
source "$(dirname "$0")/../../scripts/lib/ports.sh"
port1=$(unused_tcp_port)
port2=$(unused_tcp_port)
[ "$port1" != "$port2" ] || port2=$(unused_tcp_port)

run() {  # host rank log program args...
  local host=$1 rank=$2 log=$3
  shift 3
  SOFTNIC_HOST=$host RANK=$rank timeout 120 "$st" profile --softnic --host "$host" --mode full --providers ibverbs -o "$exp" -- "$@" \
    >"$work/$log" 2>&1
}

run node-a 0 s1.log ib_write_bw -p "$port1" -n "$iters" -s "$size" & s1=$!
run node-b 2 s2.log ib_send_bw -p "$port2" -n "$iters" -s "$size" & s2=$!
wait_tcp_listening "$port1" 100 && wait_tcp_listening "$port2" 100 || fail "perftest servers did not start"
run node-b 1 c1.log ib_write_bw -p "$port1" -n "$iters" -s "$size" localhost & c1=$!
run node-a 3 c2.log ib_send_bw -p "$port2" -n "$iters" -s "$size" localhost & c2=$!
rc=0
for p in $s1 $s2 $c1 $c2; do wait "$p" || rc=1; done
if [ $rc -ne 0 ]; then
  for l in s1 s2 c1 c2; do echo "---- $l"; cat "$work/$l.log"; done
  fail "a profiled perftest process failed"
fi

"$st" analyze -q "$exp" >"$work/analyze.log" 2>&1 || { cat "$work/analyze.log"; fail "analyze failed"; }
sql() { "$st" sql --csv "$exp" "$1" | tail -n +2; }
expect() {  # description expected query
  local got
  got=$(sql "$3")
  [ "$got" = "$2" ] || fail "$1: expected '$2', got '$got' ($3)"
  echo "ok: $1 = $2"
}

expect "processes" "4" "SELECT COUNT(*) FROM process"
expect "hosts" "node-a node-b" "SELECT group_concat(name, ' ') FROM (SELECT name FROM host ORDER BY name)"
expect "connections between the hosts" "2" "SELECT COUNT(*) FROM connection WHERE host_a != host_b"
expect "connected rank pairs" "0-1 2-3" \
  "SELECT group_concat(x, ' ') FROM (SELECT MIN(pa.rank, pb.rank) || '-' || MAX(pa.rank, pb.rank) AS x FROM connection c
   JOIN process pa ON pa.process_id = c.process_a JOIN process pb ON pb.process_id = c.process_b ORDER BY x)"
total=$((iters * size))
# WRITEs from rank 1 (node-b) to rank 0 (node-a); SENDs from rank 3 (node-a) to rank 2 (node-b).
expect "write bytes 1 -> 0" "$total" \
  "SELECT SUM(o.bytes) FROM op o JOIN process p ON p.process_id = o.process_id JOIN process q ON q.process_id = o.peer_process_id
   WHERE p.rank = 1 AND q.rank = 0 AND o.opcode = 'WRITE' AND o.bytes = $size"
expect "send bytes 3 -> 2" "$total" \
  "SELECT SUM(o.bytes) FROM op o JOIN process p ON p.process_id = o.process_id JOIN process q ON q.process_id = o.peer_process_id
   WHERE p.rank = 3 AND q.rank = 2 AND o.opcode = 'SEND' AND o.bytes = $size"
expect "flows from rank 3's sends to rank 2's receives" "$iters" \
  "SELECT COUNT(*) FROM op s JOIN completion c ON c.flow_id = s.flow_id JOIN process p ON p.process_id = s.process_id
   JOIN process q ON q.process_id = c.process_id WHERE p.rank = 3 AND q.rank = 2 AND s.opcode = 'SEND' AND s.bytes = $size"
# Host matrix in aggregate.json: at least the payload in each direction (perftest adds no RDMA
# traffic of its own beyond the measured iterations in these modes).
python3 - "$exp/aggregate.json" "$total" <<'PY' || fail "host matrix"
import json, sys
a = json.load(open(sys.argv[1])); total = int(sys.argv[2])
m = a["matrices"]["host"]; l = m["labels"]
ia, ib = l.index("node-a"), l.index("node-b")
sizes = {(r, c): m["bytes"][r][c] for r in (ia, ib) for c in (ia, ib)}
assert sizes[(ib, ia)] == total, ("b->a", sizes)
assert sizes[(ia, ib)] == total, ("a->b", sizes)
print("ok: host matrix a->b = b->a =", total)
PY
echo "PASS"
