#!/bin/bash
# A rank that dies mid-run (label integration): perftest's ib_send_bw -b (both sides send and
# receive) between two emulated hosts over softnic in Full mode; once the server's trace holds its
# QP, the server is killed (SIGKILL: no final record). The client's work then fails (softnic, as a
# NIC, reports the vanished peer as RETRY_EXC_ERR and flushes the rest with WR_FLUSH_ERR). The
# analysis must name the dead process, say that the other went on, and count the client's failed
# completions on its QP to the dead one: all of its completion errors, at least one; the client's
# own trace must be complete.
# Usage: rank_death_test.sh BUILD_DIR SOURCE_DIR. Exit 77 (skipped) without softnic or perftest.
build=$1 src=$2
. "$src/scripts/lib/shell_test.sh"
st=$build/bin/sigmatrace
[ -x "$st" ] && [ -e "$build/softnic/libibverbs.so.1" ] || skip "sigmatrace or softnic is not built"
command -v ib_send_bw >/dev/null || skip "perftest (ib_send_bw) is not installed"
source "$src/scripts/lib/ports.sh"
work=""
test_work_dir work
export SOFTNIC_FABRIC="death-$$" SIGMATRACE_RUN_ID="death-$$"
port=$(unused_tcp_port)
exp=$work/exp
SOFTNIC_HOST=node-a "$st" profile --softnic --host node-a --mode full -o "$exp" -- ib_send_bw -b -p "$port" -D 30 -s 4096 \
  >"$work/server.log" 2>&1 &
wait_tcp_listening "$port" 100 || fail "ib_send_bw server did not start"
SOFTNIC_HOST=node-b timeout 60 "$st" profile --softnic --host node-b --mode full -o "$exp" -- ib_send_bw -b -p "$port" -D 30 -s 4096 localhost \
  >"$work/client.log" 2>&1 &
client=$!
# Kill the server once its trace file holds more than its start (its QP's creation is written
# with its first full chunk).
server_pid=""
for _ in $(seq 200); do
  server_pid=$(pgrep -f "ib_send_bw -b -p $port -D 30 -s 4096$" | head -1)
  f=$(ls "$exp"/node-a.*.sgt 2>/dev/null | head -1)
  [ -n "$server_pid" ] && [ -n "$f" ] && [ "$(stat -c %s "$f")" -gt 300000 ] && break
  sleep 0.1
done
[ -n "$server_pid" ] || fail "no ib_send_bw server process to kill"
kill -KILL "$server_pid"
wait "$client"  # perftest ends with an error once its sends fail
"$st" analyze --no-perfetto "$exp" >"$work/analyze.out" 2>&1 || { cat "$work/analyze.out"; fail "analyze failed"; }
sed -n '/processes that ended/,/^$/p' "$work/analyze.out"
python3 - "$exp/aggregate.json" <<'PY' || fail "the dead process and its peer's failures are not as they happened"
import json, sys
agg = json.load(open(sys.argv[1]))
ended = agg["ended_early"]
procs = {p["process_id"]: p for p in agg["processes"]}
problems = []
if len(ended) != 1:
    sys.exit(f"{len(ended)} processes ended early, expected the server alone: {ended}")
e = ended[0]
if not e["label"].startswith("node-a:") or e["how"] != "no end record (killed or crashed)":
    problems.append(f"the wrong process or cause: {e['label']}, {e['how']}")
if e["processes_that_went_on"] != 1:
    problems.append(f"{e['processes_that_went_on']} processes went on, expected the client")
peers = e["peers_with_failed_completions"]
client = [p for p in procs.values() if p["host"] == "node-b"]
if len(client) != 1 or not client[0]["complete"]:
    problems.append("the client's trace is not complete")
elif len(peers) != 1 or peers[0]["label"] != client[0]["label"]:
    problems.append(f"peers with failed completions: {peers}, expected the client")
elif not peers[0]["failed_completions"] or peers[0]["failed_completions"] != client[0]["completion_errors"]:
    problems.append(f"{peers[0]['failed_completions']} failed completions to the dead process, the client had "
                    f"{client[0]['completion_errors']} ({client[0]['error_kinds']})")
for p in problems:
    print("FAIL:", p)
sys.exit(1 if problems else 0)
PY
grep -q "failed completions on its QPs to node-a" "$work/analyze.out" || fail "the summary does not say what the client's QP to the dead process reported"
echo "PASS: the dead process named, its peer's failed completions on the QP to it counted"
