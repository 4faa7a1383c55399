#!/bin/bash
# sigmatrace diff on real programs over softnic (two emulated hosts, Full mode), with changes
# injected that are known exactly:
#   1. ibv_rc_pingpong run twice as it is: no change above the noise threshold;
#   2. ib_write_bw with the client's messages twice as large: exactly the rows of node-b's writes
#      to node-a change, each to twice its bytes; nothing of node-a -> node-b;
#   3. ibv_rc_pingpong with node-b's link slowed by 1 ms (SOFTNIC_TX_DELAY_US): node-b -> node-a
#      is the process pair that explains the most time, its durations' geometric mean up by about
#      the delay;
#   4. the same against a baseline in which one of node-b's messages was held for 100 ms
#      (SOFTNIC_TX_STALL, a stall of the machine): the stall alone is no change, and it does not
#      hide the slowed link (it did when diff compared arithmetic means: their difference was then
#      within 3 standard errors);
# then report.html of (2) with its baseline in headless Chromium: the changes drawn and listed
# exactly as `sigmatrace diff --json` says. The threshold for durations is 150 %: on the 2-vCPU CI
# machine the mean duration of the same ping-pong moves by 20 % between most runs and by up to
# 72 % when the machine slows a whole run (docs/diff.md), while the changes injected are +100 % in
# bytes (a count: its own 5 % threshold) and about +2800 % in duration (a 1 ms delay on a 35 us
# operation). Once CI's machine stalled the baseline ping-pong (no change was found in the slowed
# one, when diff compared arithmetic means): diff compares geometric means since, and on a
# failure this test prints the rows' numbers.
# ib_write_bw's durations are its queueing behind the WRs in flight and move by half from run to
# run: the noise case is the ping-pong's.
# Usage: diff_softnic_test.sh BUILD_DIR SOURCE_DIR. Exit 77 (skipped) without softnic or perftest.
build=$1 src=$2
. "$src/scripts/lib/shell_test.sh"
st=$build/bin/sigmatrace
[ -x "$st" ] || skip "$st is not built"
[ -e "$build/softnic/libibverbs.so.1" ] || skip "softnic is not built"
command -v ib_write_bw >/dev/null && command -v ibv_rc_pingpong >/dev/null || skip "perftest or ibverbs-utils is not installed"
test_work_dir work
source "$src/scripts/lib/ports.sh"
export SOFTNIC_FABRIC="diff-$$"

# pair NAME DELAY_US STALL PROGRAM ARGS...: server on node-a, client on node-b (its link slowed
# by DELAY_US, and SOFTNIC_TX_STALL=STALL unless it is -), profiled in Full mode into $work/NAME,
# then analysed.
pair() {
  local name=$1 delay=$2 stall=$3 port
  shift 3
  port=$(unused_tcp_port)
  export SIGMATRACE_RUN_ID="diff-$name-$$"
  SOFTNIC_HOST=node-a timeout 120 "$st" profile --softnic --host node-a --mode full --providers ibverbs -o "$work/$name" -- "$@" -p "$port" \
    >"$work/$name.server.log" 2>&1 &
  local server=$!
  wait_tcp_listening "$port" 100 || fail "$1 server did not start"
  SOFTNIC_TX_STALL=${stall#-} SOFTNIC_TX_DELAY_US=$delay SOFTNIC_HOST=node-b timeout 120 "$st" profile --softnic --host node-b --mode full --providers ibverbs -o "$work/$name" -- \
    "$@" -p "$port" localhost >"$work/$name.client.log" 2>&1 || { cat "$work/$name.client.log"; fail "$name: the client failed"; }
  wait $server || { cat "$work/$name.server.log"; fail "$name: the server failed"; }
  "$st" analyze -q "$work/$name" >"$work/$name.analyze.log" 2>&1 || { cat "$work/$name.analyze.log"; fail "$name: analyze failed"; }
}
pair write_a 0 - ib_write_bw -n 300 -s 65536
pair write_b 0 - ib_write_bw -n 300 -s 131072
pair pingpong 0 - ibv_rc_pingpong -n 300 -s 4096
pair pingpong2 0 - ibv_rc_pingpong -n 300 -s 4096
pair pingpong_slow 1000 - ibv_rc_pingpong -n 300 -s 4096
pair pingpong_stalled 0 100000@150 ibv_rc_pingpong -n 300 -s 4096
threshold=(--threshold 150)
for comparison in pingpong:pingpong2 write_a:write_b pingpong:pingpong_slow pingpong:pingpong_stalled pingpong_stalled:pingpong_slow; do
  base=${comparison%%:*} d=${comparison##*:}
  "$st" diff "$work/$base" "$work/$d" "${threshold[@]}" --json >"$work/$base-$d.diff.json" || fail "sigmatrace diff $base $d failed"
  "$st" diff "$work/$base" "$work/$d" "${threshold[@]}" >"$work/$base-$d.diff.txt" || fail "sigmatrace diff $base $d (text) failed"
  echo "---- sigmatrace diff $base $d"; cat "$work/$base-$d.diff.txt"
done
python3 - "$work" <<'PY' || fail "the diffs do not say what was injected"
import json, os, sys
w = sys.argv[1]
problems = []
for name, what in (("pingpong2", "the same program twice"), ("pingpong_stalled", "one message held for 100 ms")):
    same = json.load(open(f"{w}/pingpong-{name}.diff.json"))
    if same["changes"]:
        problems.append(f"{what}: {len(same['changes'])} changes reported: {[c['group'] + ' ' + c['key'] for c in same['changes']]}")
big = json.load(open(f"{w}/write_a-write_b.diff.json"))
want = {("process pair", "node-b -> node-a"), ("host pair", "node-b -> node-a"), ("connection", "node-a <-> node-b #0"), ("operation kind", "WRITE")}
got = {(c["group"], c["key"]) for c in big["changes"] if "bytes" in c["changed"]}
if got != want:
    problems.append(f"client's messages twice as large: bytes changed in {sorted(got)}, expected {sorted(want)}")
for c in big["changes"]:
    if "bytes" in c["changed"] and c["b"]["bytes"] != 2 * c["a"]["bytes"]:
        problems.append(f"{c['group']} {c['key']}: {c['a']['bytes']} -> {c['b']['bytes']} bytes, not twice")
    if "node-a -> node-b" in c["key"]:
        problems.append(f"{c['group']} {c['key']} changed ({c['changed']}): node-a wrote nothing")
for base, what in (("pingpong", "slowed link"), ("pingpong_stalled", "slowed link against a stalled baseline")):
    slow = json.load(open(f"{w}/{base}-pingpong_slow.diff.json"))
    pairs = [c for c in slow["changes"] if c["group"] == "process pair"]
    if not pairs or pairs[0]["key"] != "node-b -> node-a":
        problems.append(f"{what}: the process pairs that changed are {[(c['key'], c['explains_ns']) for c in pairs]}, node-b -> node-a should lead")
        continue
    a, b = pairs[0]["a"], pairs[0]["b"]
    up = b["geomean_ns"] - a["geomean_ns"]
    if not 800e3 <= up <= 1500e3:
        problems.append(f"{what}: node-b -> node-a's durations' geometric mean went up {up:.0f} ns, the link was slowed by 1000000 ns")
    # What the arithmetic means would have said (the test diff made before it compared logarithms).
    z = (b["mean_ns"] - a["mean_ns"]) / ((a["stddev_ns"] ** 2 / a["durations"] + b["stddev_ns"] ** 2 / b["durations"]) ** 0.5)
    print(f"diff_softnic_test: {what}: geometric means {a['geomean_ns']:.0f} -> {b['geomean_ns']:.0f} ns, arithmetic {a['mean_ns']:.0f} -> {b['mean_ns']:.0f} ns ({z:.1f} standard errors)")
    # Against the clean baseline no other pair explains a tenth as much. Against the stalled one
    # the leader explains its slowdown less the 100 ms held in the baseline, while node-a's sends,
    # slower in the slowed run too (once 39 -> 105 us: 13 -> 39 ms in all, 25 ms of its 241), explain
    # about a tenth of that by construction: there the bound would measure the stall, not the diff.
    other = [c for c in pairs[1:] if abs(c["explains_ns"]) > 0.1 * abs(pairs[0]["explains_ns"])]
    if base == "pingpong" and other:
        problems.append(f"{what}: other pairs explain more than a tenth as much: {[(c['key'], c['explains_ns']) for c in other]}")
for p in problems:
    print("diff_softnic_test: " + p)
if problems:  # what each run's rows held, to tell a stalled machine from a wrong diff
    for name in sorted(d.name for d in os.scandir(w) if os.path.isfile(f"{w}/{d.name}/aggregate.json")):
        agg = json.load(open(f"{w}/{name}/aggregate.json"))
        for q in agg["qps"]:
            print(f"diff_softnic_test: {name} qp {q['qp_id']} (process {q['process_id']}): ops {q.get('ops')} durations {q.get('durations')}")
sys.exit(1 if problems else 0)
PY
source "$src/tests/report/browser_check.sh"
if browser_available; then
  report_and_check "$work/write_b" "$work" --baseline "$work/write_a"
  echo "PASS: the injected changes found exactly; report.html's changes checked in $("$browser" --version 2>/dev/null | head -1)"
else
  echo "PASS: the injected changes found exactly (report.html not checked: no headless Chromium)"
fi
