#!/bin/bash
# Where a hung job is stuck (sigmatrace profile --hang-dump): verbs_hang's two ranks deadlock on
# purpose over softnic (Full mode), stay hung until `timeout` ends them with SIGTERM, and the
# analysis must name exactly what each QP waits for:
#   recv: both ranks wait to receive (1 receive each, posted after 3 rounds): each waits for a
#         message the other never sent, a deadlock;
#   send: rank 0's send waits for a receive rank 1 never posted (rank 1, idle with nothing posted,
#         records no dump: nothing of its own is outstanding);
#   gone: rank 1 ended after the rounds; rank 0's receive waits for it;
#   SIGUSR1 to a rank records a dump at once (--hang-dump 3600: the timer cannot);
# and a job that makes progress (ib_write_bw, 2 s under --hang-dump 1) records none, its output
# the same as untraced.
# Usage: hang_dump_test.sh BUILD_DIR SOURCE_DIR. Exit 77 (skipped) without softnic or perftest.
build=$1 src=$2
. "$src/scripts/lib/shell_test.sh"
st=$build/bin/sigmatrace
hang=$build/tests/bin/verbs_hang
[ -x "$st" ] && [ -x "$hang" ] || skip "sigmatrace or verbs_hang is not built"
[ -e "$build/softnic/libibverbs.so.1" ] || skip "softnic is not built"
test_work_dir work
export SOFTNIC_FABRIC="hang-$$"

# deadlock MODE: verbs_hang --mode MODE under --hang-dump 1, ended by SIGTERM after 4 s.
deadlock() {
  export SIGMATRACE_RUN_ID="hang-$1-$$"
  timeout -s TERM 4 "$st" profile --softnic --mode full --providers ibverbs --hang-dump 1 -o "$work/$1" -- "$hang" --mode "$1" \
    >"$work/$1.out" 2>"$work/$1.err"
  local rc=$?
  [ $rc = 124 ] || { cat "$work/$1.out" "$work/$1.err"; fail "$1: verbs_hang ended with $rc, not hung until the timeout"; }
  grep -q "no progress: hang state recorded" "$work/$1.err" || { cat "$work/$1.err"; fail "$1: no hang dump was announced"; }
  "$st" analyze -q "$work/$1" >"$work/$1.analyze" 2>&1 || { cat "$work/$1.analyze"; fail "$1: analyze failed"; }
  "$st" report "$work/$1" >"$work/$1.report" || fail "$1: report failed"
  sed -n '/^hang dumps/,/^coverage/p' "$work/$1.report"
}
for mode in recv send gone; do deadlock $mode; done

# On demand: SIGUSR1 to rank 0 while the timer (an hour) has not run out.
export SIGMATRACE_RUN_ID="hang-usr1-$$"
"$st" profile --softnic --mode full --providers ibverbs --hang-dump 3600 -o "$work/usr1" -- "$hang" --mode recv >"$work/usr1.out" 2>"$work/usr1.err" &
launcher=$!
for _ in $(seq 100); do grep -q "rank 0: 3 rounds" "$work/usr1.out" 2>/dev/null && break; sleep 0.1; done
sleep 0.5
rank0=$(pgrep -f -- "--rank 0 --fd" | head -1)
[ -n "$rank0" ] || fail "usr1: rank 0 not found"
kill -USR1 "$rank0"
sleep 1
kill -TERM "$launcher"
wait "$launcher" 2>/dev/null
grep -q "SIGUSR1: hang state recorded" "$work/usr1.err" || { cat "$work/usr1.err"; fail "usr1: SIGUSR1 recorded no dump"; }
"$st" analyze -q "$work/usr1" >/dev/null 2>&1 || fail "usr1: analyze failed"

# Progress: ib_write_bw for 2 s under --hang-dump 1 records no dump; its output is unchanged.
if command -v ib_write_bw >/dev/null; then
  source "$src/scripts/lib/ports.sh"
  export SIGMATRACE_RUN_ID="hang-busy-$$"
  port=$(unused_tcp_port)
  SOFTNIC_HOST=node-a "$st" profile --softnic --host node-a --hang-dump 1 -o "$work/busy" -- ib_write_bw -p "$port" -D 2 -s 4096 \
    >"$work/busy.server" 2>&1 &
  server=$!
  wait_tcp_listening "$port" 100 || fail "ib_write_bw server did not start"
  SOFTNIC_HOST=node-b "$st" profile --softnic --host node-b --hang-dump 1 -o "$work/busy" -- ib_write_bw -p "$port" -D 2 -s 4096 localhost \
    >"$work/busy.client" 2>&1 || { cat "$work/busy.client"; fail "ib_write_bw client failed"; }
  wait $server
  grep -q "hang state recorded" "$work/busy.server" "$work/busy.client" && fail "a job making progress had a hang dump"
  "$st" analyze -q "$work/busy" >/dev/null 2>&1 || fail "busy: analyze failed"
fi

python3 - "$work" <<'PY' || fail "the analysis does not name what each QP waits for"
import json, os, sys
w = sys.argv[1]
problems = []
def hangs(name):
    return json.load(open(f"{w}/{name}/aggregate.json"))["hangs"]
def waiting(h):
    return sorted((x["label"], x["outstanding_sends"], x["outstanding_receives"], x.get("peer_label"), x["waits_for"]) for x in h["waiting"])
def expect(what, got, want):
    if got != want:
        problems.append(f"{what}: got {got!r}, expected {want!r}")

h = hangs("recv")
expect("recv: processes that dumped", sorted(d["label"] for d in h["dumps"]), ["rank 0", "rank 1"])
expect("recv: reasons", {d["reason"] for d in h["dumps"]}, {"no progress"})
expect("recv: what waits", waiting(h), [
    ("rank 0", 0, 1, "rank 1", "a message rank 1 never sent: rank 1 sent 3, all received, and waits to receive from rank 0 itself (deadlock: each waits for the other to send)"),
    ("rank 1", 0, 1, "rank 0", "a message rank 0 never sent: rank 0 sent 3, all received, and waits to receive from rank 1 itself (deadlock: each waits for the other to send)")])
for x in h["waiting"]:
    r = x["oldest_receive"]
    if r["opcode"] != "RECV" or r["bytes"] != 4096 or not 0.9e9 <= r["age_at_dump_ns"] <= 3e9:
        problems.append(f"recv: {x['label']}'s oldest receive {r}: a 4096-byte RECV posted about 1 s before the dump")

h = hangs("send")
expect("send: what waits", waiting(h), [
    ("rank 0", 1, 0, "rank 1", "a send rank 1 never posted a receive for: rank 1 had 3 receives complete and none waiting (the NIC retries it for ever: RNR)")])
expect("send: processes that dumped", [d["label"] for d in h["dumps"]], ["rank 0"])
expect("send: the send", {k: h["waiting"][0]["oldest_send"][k] for k in ("opcode", "bytes")} if h["waiting"] else None, {"opcode": "SEND", "bytes": 4096})

h = hangs("gone")
expect("gone: processes that dumped", [d["label"] for d in h["dumps"]], ["rank 0"])
got = [x["waits_for"] for x in h["waiting"]]
if len(got) != 1 or not got[0].startswith("rank 1 ended before this dump"):
    problems.append(f"gone: rank 0 waits for {got}; expected rank 1 ended before this dump")

h = hangs("usr1")
expect("usr1: dumps", [(d["label"], d["reason"]) for d in h["dumps"]], [("rank 0", "signal")])

if os.path.isdir(f"{w}/busy"):
    expect("busy: dumps", hangs("busy")["dumps"], [])
for p in problems:
    print("hang_dump_test: " + p)
sys.exit(1 if problems else 0)
PY
echo "PASS: the recv and send deadlocks and the peer that ended named exactly; SIGUSR1 dumps at once; no dump while ib_write_bw makes progress"
