#!/bin/bash
# A trace the GPU tests recorded on the GPU machine (data/RECORDING: the trace files, the manifest
# and the program's own output), analysed here without a GPU and checked as the GPU test checks it
# there; with SQLite, also what only trace.sqlite holds:
#   hang_peer_silent, hang_deadlock (tests/gpu/checks/check_hang.py): who dumped, the kernel each
#     waited in, what it waited for; the summary says it too;
#   torch_nccl (tests/gpu/checks/check_torch_nccl.py): NCCL's ranges once per call with their sizes
#     and reductions decoded; each collective's range lies in its step's range (SQL);
#   nvshmem_perftest_nvtx (tests/gpu/checks/check_perftest_nvtx.py): NVSHMEM's own ranges on its
#     perftest shmem_put_latency; the perftest's kernels' puts in no range, the barrier kernel's
#     operations in the NVSHMEM call that launched it, each barrier with its atomic (SQL).
# Usage: recorded_trace_test.sh BUILD_DIR SOURCE_DIR RECORDING. Exit 77 (skipped) when the command
# is not built.
build=$1 src=$2 rec=$3
. "$src/scripts/lib/shell_test.sh"
st=$build/bin/sigmatrace
[ -x "$st" ] || skip "$st is not built"
data=$src/tests/gpu/recorded/data/$rec
source "$src/scripts/lib/recorded_trace.sh"
analyze_recorded "$st" "$data"
case "$rec" in
  hang_*)
    mode=${rec#hang_}; mode=${mode//_/-}
    python3 "$src/tests/gpu/checks/check_hang.py" "$mode" 6 "$exp/aggregate.json" "$data/pe0.log" "$data/pe1.log" || fail "the hang is not diagnosed"
    "$st" report "$exp" > "$work/report.txt" || fail "report failed"
    sed -n '/^hang dumps/,/^$/p' "$work/report.txt"
    grep -q "kernel wait_" "$work/report.txt" || fail "the summary does not name the waiting kernel"
    ;;
  nccl_*)
    # nccl-tests on one GPU, each rank its own host (tests/gpu/nccl/nccl_tests_test.sh): the trace
    # against softnic's own log, and NCCL's connections and rank matrix from it.
    ranks=$(find "$data" -maxdepth 1 -name '*.sgt' | wc -l)
    grep -q '# Out of bounds values : 0 OK' "$data/program.out" || fail "the recorded run found wrong values"
    python3 "$src/tests/gpu/checks/check_verbs_oracle.py" "$exp/aggregate.json" "$data/oracle" --min-qps "$ranks" ||
      fail "the trace is not what softnic executed"
    python3 "$src/tests/gpu/checks/check_nccl_trace.py" "$exp/aggregate.json" "$data/oracle" "$ranks" ||
      fail "NCCL's connections or rank matrix are not as softnic executed them"
    # Both checks refuse a log with one WRITE_IMM of 8 bytes fewer on one QP.
    mkdir -p "$work/bad"
    cp "$data"/oracle/*.txt "$work/bad/"
    f=$(grep -l 'WRITE_IMM' "$work"/bad/*.txt | head -1)
    awk '!done && match($0, /WRITE_IMM:[0-9]+:[0-9]+/) { split(substr($0, RSTART, RLENGTH), a, ":");
         $0 = substr($0, 1, RSTART - 1) "WRITE_IMM:" a[2] - 1 ":" a[3] - 8 substr($0, RSTART + RLENGTH); done = 1 } { print }' "$f" > "$f.new" && mv "$f.new" "$f"
    python3 "$src/tests/gpu/checks/check_verbs_oracle.py" "$exp/aggregate.json" "$work/bad" > "$work/bad1.log" && fail "check_verbs_oracle.py passed an altered log"
    python3 "$src/tests/gpu/checks/check_nccl_trace.py" "$exp/aggregate.json" "$work/bad" "$ranks" > "$work/bad2.log" && fail "check_nccl_trace.py passed an altered log"
    grep -q 'rank matrix .* B executed by softnic' "$work/bad2.log" || { cat "$work/bad2.log"; fail "check_nccl_trace.py did not name the matrix cell"; }
    echo "ok: an altered softnic log is refused by both checks"
    ;;
  torch_nccl)
    python3 "$src/tests/gpu/checks/check_torch_nccl.py" "$exp/aggregate.json" "$data/program.out" || fail "NCCL's ranges are not as called"
    if [ -f "$exp/trace.sqlite" ]; then
      # Every collective of a step lies in that step's range on its thread (a path names the
      # outermost range's domain: "step 0 / ncclAllReduce"; the warm-up's is "NCCL / ncclAllReduce").
      bad=$("$st" sql --csv "$exp" "SELECT count(*) FROM range WHERE domain = 'NCCL' AND name IN ('ncclAllReduce', 'ncclBroadcast', 'ncclAllGather') AND path NOT LIKE 'step % / nccl%' AND path NOT LIKE 'NCCL / nccl%'" | tail -1)
      in_steps=$("$st" sql --csv "$exp" "SELECT count(*) FROM range WHERE domain = 'NCCL' AND path LIKE 'step % / nccl%'" | tail -1)
      "$st" sql "$exp" "SELECT path, count(*), min(payload) FROM range WHERE domain = 'NCCL' GROUP BY path ORDER BY path" | head -20
      # docs/sql.md's "per NVTX range name (per collective kind)" query, as the docs show it.
      q=$(python3 - "$src/docs/sql.md" <<'PY'
import re, sys
for block in re.findall(r"```sql\n(.*?)```", open(sys.argv[1]).read(), re.S):
    if block.startswith("SELECT r.domain, r.name, COUNT(DISTINCT r.range_id)"):
        print(block.strip())
PY
)
      [ -n "$q" ] || fail "docs/sql.md has no per-range-name query"
      allreduce=$("$st" sql --csv "$exp" "$q" | grep '^NCCL,ncclAllReduce,' | cut -d, -f3)
      [ "$allreduce" = 7 ] || fail "docs/sql.md's query counts $allreduce ncclAllReduce ranges, the program called it 7 times"
      [ "$bad" = 0 ] || fail "$bad collective ranges lie neither in a step nor outside every range"
      [ "$in_steps" = 12 ] || fail "$in_steps NCCL ranges lie in a step's range: the 3 steps call 4 collectives each"
    fi
    ;;
  nvshmem_perftest_nvtx)
    python3 "$src/tests/gpu/checks/check_perftest_nvtx.py" "$exp/aggregate.json" 8 4096 512 220 || fail "NVSHMEM's ranges do not hold what it issued in them"
    if [ -f "$exp/trace.sqlite" ]; then
      q() { "$st" sql --csv "$exp" "$1" | tail -1; }
      "$st" sql "$exp" "SELECT g.kernel, r.path, count(*) AS ops, sum(o.bytes) AS bytes FROM gpu_op g JOIN op o USING (op_id) LEFT JOIN range r ON r.range_id = o.range_id GROUP BY 1, 2 ORDER BY 1, 2"
      outside=$(q "SELECT count(*) FROM gpu_op g JOIN op o USING (op_id) WHERE g.kernel LIKE 'latency_kern%' AND o.range_id IS NOT NULL")
      [ "$outside" = 0 ] || fail "$outside operations of the perftest's own kernels lie in a range: it opens none around them"
      unranged=$(q "SELECT count(*) FROM gpu_op g JOIN op o USING (op_id) WHERE g.kernel NOT LIKE 'latency_kern%' AND o.range_id IS NULL")
      [ "$unranged" = 0 ] || fail "$unranged operations of NVSHMEM's kernels lie in no range: each was launched inside an NVSHMEM call"
      silent=$(q "SELECT count(*) FROM range r WHERE r.name = 'nvshmem_barrier_all' AND NOT EXISTS (SELECT 1 FROM op o WHERE o.range_id = r.range_id AND o.opcode LIKE 'ATOMIC%')")
      [ "$silent" = 0 ] || fail "$silent nvshmem_barrier_all ranges hold no atomic: each barrier signals its peer with one"
    fi
    ;;
  *) fail "unknown recording $rec" ;;
esac
echo PASS
