#!/bin/bash
# Multi-process, multi-host analysis over the emulated NIC: four real perftest processes standing
# for two hosts (SOFTNIC_HOST=node-a / node-b), profiled in Full mode into one experiment, then
# `sigmatrace analyze`. Checks the topology (2 connections, each between the two hosts), exact byte
# counts in the host matrix and in SQL, flows from each SEND to its receive in the other process,
# every completion paired with the WR perftest signalled (every cq_mod-th one, all with wr_id 0),
# and the timeline's invariants (tests/bin/pftrace_check).
#   pair 1: ib_write_bw  server on node-a (rank 0), client on node-b (rank 1): WRITEs b -> a
#   pair 2: ib_send_bw   server on node-b (rank 2), client on node-a (rank 3): SENDs  a -> b
#   pair 3: ib_read_bw   server on node-a (rank 4), client on node-b (rank 5): READs  b <- a
# Usage: softnic_multiprocess_test.sh BUILD_DIR SOURCE_DIR. Exit 77 (skipped) while softnic or the
# ibverbs provider is not built.
build=$1
. "$(dirname "$0")/../../scripts/lib/shell_test.sh"
st=$build/bin/sigmatrace

[ -x "$st" ] || skip "$st is not built"
[ -e "$build/softnic/libibverbs.so.1" ] || skip "softnic is not built ($build/softnic/libibverbs.so.1 missing)"
command -v ib_write_bw >/dev/null && command -v ib_send_bw >/dev/null || skip "perftest (ib_write_bw, ib_send_bw) is not installed"
if ! "$st" profile --dry-run --providers ibverbs -- true >/dev/null 2>&1; then
  skip "the ibverbs provider is not available (SIGMATRACE_PROVIDERS=ibverbs refused)"
fi

iters=200 size=65536 cq_mod=10
test_work_dir work
exp=$work/exp
export SIGMATRACE_RUN_ID="analysis-softnic-$$"
export SOFTNIC_FABRIC="analysis-$$"
source "$(dirname "$0")/../../scripts/lib/ports.sh"
port1=$(unused_tcp_port)
port2=$(unused_tcp_port)
[ "$port1" != "$port2" ] || port2=$(unused_tcp_port)
port3=$(unused_tcp_port)
while [ "$port3" = "$port1" ] || [ "$port3" = "$port2" ]; do port3=$(unused_tcp_port); done

run() {  # host rank log program args...
  local host=$1 rank=$2 log=$3
  shift 3
  SOFTNIC_HOST=$host RANK=$rank timeout 120 "$st" profile --softnic --host "$host" --mode full --providers ibverbs -o "$exp" -- "$@" \
    >"$work/$log" 2>&1
}

run node-a 0 s1.log ib_write_bw -p "$port1" -n "$iters" -s "$size" -Q "$cq_mod" & s1=$!
run node-b 2 s2.log ib_send_bw -p "$port2" -n "$iters" -s "$size" -Q "$cq_mod" & s2=$!
run node-a 4 s3.log ib_read_bw -p "$port3" -n "$iters" -s "$size" -Q "$cq_mod" & s3=$!
wait_tcp_listening "$port1" 100 && wait_tcp_listening "$port2" 100 && wait_tcp_listening "$port3" 100 ||
  fail "perftest servers did not start"
run node-b 1 c1.log ib_write_bw -p "$port1" -n "$iters" -s "$size" -Q "$cq_mod" localhost & c1=$!
run node-a 3 c2.log ib_send_bw -p "$port2" -n "$iters" -s "$size" -Q "$cq_mod" localhost & c2=$!
run node-b 5 c3.log ib_read_bw -p "$port3" -n "$iters" -s "$size" -Q "$cq_mod" localhost & c3=$!
rc=0
for p in $s1 $s2 $s3 $c1 $c2 $c3; do wait "$p" || rc=1; done
if [ $rc -ne 0 ]; then
  for l in s1 s2 s3 c1 c2 c3; do echo "---- $l"; cat "$work/$l.log"; done
  fail "a profiled perftest process failed"
fi

"$st" analyze -q "$exp" >"$work/analyze.log" 2>&1 || { cat "$work/analyze.log"; fail "analyze failed"; }
sql() { "$st" sql --csv "$exp" "$1" | tail -n +2 | tr , " "; }
expect() {  # description expected query
  local got
  got=$(sql "$3")
  [ "$got" = "$2" ] || fail "$1: expected '$2', got '$got' ($3)"
  echo "ok: $1 = $2"
}

expect "processes" "6" "SELECT COUNT(*) FROM process"
expect "hosts" "node-a node-b" "SELECT group_concat(name, ' ') FROM (SELECT name FROM host ORDER BY name)"
expect "connections between the hosts" "3" "SELECT COUNT(*) FROM connection WHERE host_a != host_b"
expect "connected rank pairs" "0-1 2-3 4-5" \
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
# Completions paired with the WRs perftest signalled: the clients post every WR with wr_id 0 and
# signal one in cq_mod (-Q 10); each completion belongs to the WR at position 9, 19, ... of its QP,
# which waited for it (post -> completion), and every WR before it completed with it.
for kind in "1 WRITE" "3 SEND" "5 READ"; do
  set -- $kind
  expect "rank $1: ${2}s signalled and completed" "$((iters / cq_mod)) $((iters / cq_mod)) 0" \
    "WITH s AS (SELECT o.op_id, o.dur_ns, ROW_NUMBER() OVER (PARTITION BY o.qp_id ORDER BY o.op_id) - 1 AS pos
       FROM op o JOIN process p ON p.process_id = o.process_id WHERE p.rank = $1 AND o.opcode = '$2')
     SELECT COUNT(*), SUM(s.pos % $cq_mod = $cq_mod - 1), SUM(s.dur_ns < 0) FROM s JOIN completion c ON c.op_id = s.op_id"
  expect "rank $1: every $2 has its duration" "$iters" \
    "SELECT COUNT(*) FROM op o JOIN process p ON p.process_id = o.process_id WHERE p.rank = $1 AND o.opcode = '$2' AND o.dur_ns >= 0"
done
expect "rank 2: every receive completion paired with a RECV WR" "$iters $iters" \
  "SELECT COUNT(*), COUNT(DISTINCT c.op_id) FROM completion c JOIN process p ON p.process_id = c.process_id
   JOIN op o ON o.op_id = c.op_id WHERE p.rank = 2 AND c.opcode = 'RECV' AND o.opcode = 'RECV'"
"$build/tests/bin/pftrace_check" "$exp/trace.pftrace" "$exp/trace.sqlite" || fail "the timeline breaks Perfetto's invariants"
# Host matrix in aggregate.json: at least the payload in each direction (perftest adds no RDMA
# traffic of its own beyond the measured iterations in these modes).
python3 - "$exp/aggregate.json" "$total" <<'PY' || fail "host matrix"
import json, sys
a = json.load(open(sys.argv[1])); total = int(sys.argv[2])
m = a["matrices"]["host"]; l = m["labels"]
ia, ib = l.index("node-a"), l.index("node-b")
sizes = {(r, c): m["bytes"][r][c] for r in (ia, ib) for c in (ia, ib)}
assert sizes[(ib, ia)] == total, ("b->a: the WRITEs", sizes)
assert sizes[(ia, ib)] == 2 * total, ("a->b: the SENDs, and the bytes the READs fetched", sizes)
print("ok: host matrix a->b =", 2 * total, "b->a =", total)
PY
# The same analysis in two shards, one per host, merged (as an MPI job of two ranks would write
# them): the same aggregate.json, the same rows in every table of trace.sqlite.
mkdir -p "$work/whole" && mv "$exp/aggregate.json" "$exp/trace.sqlite" "$exp/trace.pftrace" "$work/whole/"
for k in 0 1; do
  "$st" analyze "$exp" --shard "$k/2" >"$work/shard$k.log" 2>&1 || { cat "$work/shard$k.log"; fail "analyze --shard $k/2 failed"; }
done
grep -Eq "shard 0 of 2: hosts node-a, [1-9][0-9]* events" "$work/shard0.log" || fail "shard 0 is not node-a's: $(cat "$work/shard0.log")"
grep -Eq "shard 1 of 2: hosts node-b, [1-9][0-9]* events" "$work/shard1.log" || fail "shard 1 is not node-b's: $(cat "$work/shard1.log")"
"$st" merge -q "$exp" >"$work/merge.log" 2>&1 || { cat "$work/merge.log"; fail "merge failed"; }
"$build/tests/bin/pftrace_check" "$exp/trace.pftrace" "$exp/trace.sqlite" || fail "the merged timeline breaks Perfetto's invariants"
python3 - "$work/whole/aggregate.json" "$exp/aggregate.json" <<'PY' || fail "merged aggregate.json"
import json, sys
whole, merged = (json.load(open(f)) for f in sys.argv[1:])
assert merged.pop("merged_shards") == 2
assert merged == whole, "the merged aggregate.json differs from the whole analysis's"
print("ok: merged aggregate.json = the whole analysis's")
PY
for table in $("$st" sql --csv "$exp" "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name" | tail -n +2); do
  cmp -s <("$st" sql --csv "$work/whole" "SELECT * FROM $table" | sort) <("$st" sql --csv "$exp" "SELECT * FROM $table" | sort) ||
    fail "merged table $table differs from the whole analysis's"
done
echo "ok: every table of the merged trace.sqlite = the whole analysis's"
echo "PASS"
