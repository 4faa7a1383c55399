#!/bin/bash
# Host clocks corrected from the messages of real programs over softnic: three emulated hosts,
# ibv_rc_pingpong between node-a and node-b and between node-b and node-c (Full mode), the
# profilers of node-b reading their wall clock 5 ms ahead and node-c's 2 ms behind
# (SIGMATRACE_DEBUG_CLOCK_SKEW, the test-only setting). Analysed without the correction, messages
# arrive before they were sent; with it (the default), none does, in trace.sqlite, and each host's
# offset is found to within the smallest message latency; node-c is tied to node-a through node-b.
# The programs' own output is the same as untraced.
# Usage: clock_sync_softnic_test.sh BUILD_DIR SOURCE_DIR. Exit 77 (skipped) without softnic or ibverbs-utils.
build=$1 src=$2
. "$src/scripts/lib/shell_test.sh"
st=$build/bin/sigmatrace
[ -x "$st" ] || skip "$st is not built"
[ -e "$build/softnic/libibverbs.so.1" ] || skip "softnic is not built"
command -v ibv_rc_pingpong >/dev/null || skip "ibverbs-utils is not installed"
command -v sqlite3 >/dev/null || skip "the sqlite3 command is not installed"
test_work_dir work
source "$src/scripts/lib/ports.sh"
export SOFTNIC_FABRIC="clock-$$" SIGMATRACE_RUN_ID="clock-$$"
exp=$work/exp
declare -A skew=([node-a]=0 [node-b]=5000000 [node-c]=-2000000)

# pingpong SERVER_HOST CLIENT_HOST: one ibv_rc_pingpong pair, traced, each side with its host's skew.
pingpong() {
  local port
  port=$(unused_tcp_port)
  SIGMATRACE_DEBUG_CLOCK_SKEW=${skew[$1]} SOFTNIC_HOST=$1 timeout 120 "$st" profile --softnic --host "$1" --mode full --providers ibverbs -o "$exp" -- \
    ibv_rc_pingpong -p "$port" -n 500 -s 2048 >"$work/$1-$2.server.log" 2>&1 &
  local server=$!
  wait_tcp_listening "$port" 100 || fail "ibv_rc_pingpong server on $1 did not start"
  SIGMATRACE_DEBUG_CLOCK_SKEW=${skew[$2]} SOFTNIC_HOST=$2 timeout 120 "$st" profile --softnic --host "$2" --mode full --providers ibverbs -o "$exp" -- \
    ibv_rc_pingpong -p "$port" -n 500 -s 2048 localhost >"$work/$1-$2.client.log" 2>&1 || { cat "$work/$1-$2.client.log"; fail "client on $2 failed"; }
  wait $server || { cat "$work/$1-$2.server.log"; fail "server on $1 failed"; }
  grep -q "500 iters" "$work/$1-$2.client.log" || fail "the client on $2 did not report its 500 iterations"
}
pingpong node-a node-b
pingpong node-b node-c

flows="FROM op o JOIN completion c ON c.flow_id = o.flow_id WHERE o.flow_id IS NOT NULL AND c.opcode LIKE 'RECV%' AND o.opcode = 'SEND'"
"$st" analyze -q --clock-sync off "$exp" >"$work/off.log" 2>&1 || { cat "$work/off.log"; fail "analyze --clock-sync off failed"; }
read -r n_off back_off <<<"$(sqlite3 -separator ' ' "$exp/trace.sqlite" "SELECT COUNT(*), SUM(c.ts_ns < o.ts_ns) $flows")"
# Each direction's smallest latency as recorded with each host's own clock (its skew taken out below).
sqlite3 -separator ' ' "$exp/trace.sqlite" \
  "SELECT ps.host, pr.host, MIN(c.ts_ns - o.ts_ns) FROM op o JOIN completion c ON c.flow_id = o.flow_id JOIN process ps ON ps.process_id = o.process_id
   JOIN process pr ON pr.process_id = c.process_id WHERE o.flow_id IS NOT NULL AND c.opcode LIKE 'RECV%' AND o.opcode = 'SEND' GROUP BY 1, 2" >"$work/min_latency_off.txt"
[ "$n_off" = 2000 ] || fail "$n_off messages paired in trace.sqlite, expected 2000 (2 pairs x 500 iterations x 2 directions)"
[ "$back_off" -gt 0 ] || fail "without the correction no message arrives before it was sent: the skew was not applied"
"$st" analyze -q "$exp" >"$work/on.log" 2>&1 || { cat "$work/on.log"; fail "analyze failed"; }
read -r n_on back_on min_latency <<<"$(sqlite3 -separator ' ' "$exp/trace.sqlite" "SELECT COUNT(*), SUM(c.ts_ns < o.ts_ns), MIN(c.ts_ns - o.ts_ns) $flows")"
[ "$n_on" = 2000 ] && [ "$back_on" = 0 ] || fail "corrected: $back_on of $n_on messages still arrive before they were sent"
python3 - "$exp/aggregate.json" "$work/min_latency_off.txt" <<'PY' || fail "the offsets found are not the skews"
import json, sys
c = json.load(open(sys.argv[1]))["clock_sync"]
want = {"node-a": 0, "node-b": 5000000, "node-c": -2000000}
# The true smallest latency of each direction: as recorded, less the receiver's skew plus the sender's.
true_min = {}
for line in open(sys.argv[2]):
    src, dst, d = line.split()
    true_min[(src, dst)] = int(d) - want[dst] + want[src]
# A host's offset is right to within the smallest latency of the slower direction between it and
# the host it is tied through (what two one-way minima can tell apart: half their sum is the bound).
tied_through = {"node-b": "node-a", "node-c": "node-b"}
problems = [] if c["applied"] else [f"not applied: {c['outcome']}"]
found = {h["host"]: h.get("offset_ns", 0) for h in c["hosts"]}
for h in c["hosts"]:
    if h["reference"]:
        if h["host"] != "node-a":
            problems.append(f"the reference is {h['host']}, expected node-a (rank order: the first process's host)")
        continue
    if not h["estimated"]:
        problems.append(f"{h['host']} not tied to the reference")
    else:
        x, y = tied_through[h["host"]], h["host"]
        # The error of this hop: this host's offset against the one it is tied through.
        error = (found[y] - found[x]) - (want[y] - want[x])
        tolerance = max(true_min[(x, y)], true_min[(y, x)])
        print(f"clock_sync_softnic: {y}: offset {h['offset_ns']:.0f} ns (skew {want[y]}), off by {error:.0f} ns against {x}; "
              f"smallest latencies {true_min[(x, y)]} and {true_min[(y, x)]} ns")
        if abs(error) > tolerance:
            problems.append(f"{y}: off by {error:.0f} ns against {x}, more than the slower direction's smallest latency ({tolerance} ns)")
for p in problems:
    print("clock_sync_softnic: " + p)
print("clock_sync_softnic: " + c["outcome"])
sys.exit(1 if problems else 0)
PY
echo "PASS: 2000 messages: $back_off arrived before they were sent with each host's clock, none after the correction (smallest latency $min_latency ns)"
