#!/bin/bash
# What the profiler recorded against what softnic itself executed (SOFTNIC_WQE_LOG, its per-QP
# log of completed send-queue work requests: testbed/softnic/engine/op_log.hpp): real perftest
# pairs (WRITE, SEND, READ, atomics) on two emulated hosts, profiled in each mode, analysed, and
# every QP's operations per opcode (per QP in total in Simple mode) equal to softnic's count
# (tests/gpu/checks/check_verbs_oracle.py, the check the NCCL GPU tests make). A second, untraced
# run writes the same log: the oracle does not depend on the profiler.
# Usage: verbs_oracle_test.sh BUILD_DIR SOURCE_DIR. Exit 77 (skipped) without softnic or perftest.
build=$1 src=$2
. "$src/scripts/lib/shell_test.sh"
st=$build/bin/sigmatrace
[ -x "$st" ] || skip "$st is not built"
[ -e "$build/softnic/libibverbs.so.1" ] || skip "softnic is not built"
for p in ib_write_bw ib_send_bw ib_read_bw ib_atomic_bw; do command -v $p >/dev/null || skip "perftest ($p) is not installed"; done
source "$src/scripts/lib/ports.sh"
work=""
test_work_dir work
iters=300

# run MODE DIR HOST LOG PROGRAM ARGS...: one side of a pair, its output in DIR/LOG, softnic's log in
# DIR/oracle; MODE "untraced" runs it on softnic without the profiler (as the C++ pair runner does).
run() {
  local mode=$1 dir=$2 host=$3 log=$4
  shift 4
  if [ "$mode" = untraced ]; then
    SOFTNIC_HOST=$host SOFTNIC_WQE_LOG=$dir/oracle LD_LIBRARY_PATH=$build/softnic timeout 60 "$@" >"$dir/$log" 2>&1
  else
    SOFTNIC_HOST=$host SOFTNIC_WQE_LOG=$dir/oracle timeout 60 "$st" profile --softnic --host "$host" --mode "$mode" \
      --providers ibverbs,mlx5 -o "$dir/exp" -- "$@" >"$dir/$log" 2>&1
  fi
}

# pair MODE PROGRAM EXTRA...: one perftest pair, node-a serving node-b, into $work/MODE-PROGRAM.
pair() {
  local mode=$1 prog=$2 dir=$work/$1-$2 port s rc=0
  shift 2
  mkdir -p "$dir/oracle"
  port=$(unused_tcp_port)
  export SOFTNIC_FABRIC="oracle-$$-$mode-$prog" SIGMATRACE_RUN_ID="oracle-$$-$mode-$prog"
  run "$mode" "$dir" node-a server.log "$prog" -p "$port" -n "$iters" "$@" & s=$!
  wait_tcp_listening "$port" 100 || fail "$prog's server did not start ($mode)"
  run "$mode" "$dir" node-b client.log "$prog" -p "$port" -n "$iters" "$@" localhost || rc=1
  wait "$s" || rc=1
  [ $rc = 0 ] || { cat "$dir/server.log" "$dir/client.log"; fail "$prog failed ($mode)"; }
  ls "$dir"/oracle/softnic-verbs-node-*.txt >/dev/null 2>&1 || fail "softnic wrote no log of what it executed ($mode $prog)"
}

for mode in aggregate simple full; do
  for prog in ib_write_bw ib_send_bw ib_read_bw ib_atomic_bw; do
    size=(-s 4096)
    [ "$prog" = ib_atomic_bw ] && size=()  # 8-byte atomics
    pair "$mode" "$prog" "${size[@]}"
    "$st" analyze -q "$work/$mode-$prog/exp" >"$work/analyze.log" 2>&1 || { cat "$work/analyze.log"; fail "analyze failed ($mode $prog)"; }
    echo "== $mode $prog"
    python3 "$src/tests/gpu/checks/check_verbs_oracle.py" "$work/$mode-$prog/exp/aggregate.json" "$work/$mode-$prog/oracle" --min-qps 1 ||
      fail "$prog in $mode mode: the trace is not what softnic executed"
  done
done

# The oracle itself: the same program untraced logs the same operations (perftest's fixed counts).
pair untraced ib_write_bw -s 4096
grep -h 'ops=WRITE' "$work/untraced-ib_write_bw/oracle"/*.txt | sed 's/qp=0x[0-9a-f]* //' | sort > "$work/untraced.ops"
grep -h 'ops=WRITE' "$work/full-ib_write_bw/oracle"/*.txt | sed 's/qp=0x[0-9a-f]* //' | sort > "$work/full.ops"
[ -s "$work/untraced.ops" ] && cmp -s "$work/untraced.ops" "$work/full.ops" ||
  fail "softnic's log of ib_write_bw differs untraced ($(cat "$work/untraced.ops")) and traced ($(cat "$work/full.ops"))"
echo "ok: untraced, softnic logged $(cat "$work/untraced.ops") as in the traced run"

# The check fails where the trace and softnic differ: one WRITE fewer in the traced Full run's log.
bad=$work/bad-oracle
mkdir -p "$bad"
for f in "$work/full-ib_write_bw/oracle"/*.txt; do
  awk '{ if (match($0, /WRITE:[0-9]+:[0-9]+/)) { split(substr($0, RSTART, RLENGTH), a, ":");
         $0 = substr($0, 1, RSTART - 1) "WRITE:" a[2] - 1 ":" a[3] - 4096 substr($0, RSTART + RLENGTH) } print }' "$f" >"$bad/$(basename "$f")"
done
if python3 "$src/tests/gpu/checks/check_verbs_oracle.py" "$work/full-ib_write_bw/exp/aggregate.json" "$bad" >"$work/bad.log"; then
  cat "$work/bad.log"; fail "check_verbs_oracle.py passed a log with one WRITE fewer"
fi
grep -q "MISMATCH" "$work/bad.log" || fail "check_verbs_oracle.py did not name the mismatch"
echo "ok: a log with one WRITE fewer is refused"
echo "PASS"
