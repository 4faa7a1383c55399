#!/usr/bin/env bash
# NVSHMEM's own perftests over softnic (IBGDA, GPU-rung doorbells), untraced and under the
# profiler side by side: the paper's Fig. 4 on real NVSHMEM. Each repetition runs every test
# in every mode, the order of the modes rotating between repetitions; the table gives, per
# test, scope and size, the median over the repetitions (and the largest) of what the test
# printed (its mean latency over its iterations, or its bandwidth), the change against untraced,
# and the trace's bytes per recovered operation. WQE-recovery runs are checked against softnic's
# own log of what it executed (wqe_oracle_check), and every traced run's output against the
# untraced run's (output_unchanged.py): a mismatch fails the run.
#   PERFTESTS=DIR [REPEAT=3] [MODES="untraced forward wqe"] [TESTS="..."] bench/nvshmem/nvshmem_perftests.sh OUT
# PERFTESTS: the perftest binaries (NVSHMEM's perftest/device/pt-to-pt, built against the
# installed NVSHMEM by build_perftests.sh). MPS must be running (testbed/gda/tests/mps.sh).
# Writes OUT/results.tsv (every row every run printed), OUT/fig4.md and OUT/runs/*.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/perftest_names.sh"
out=${1:?usage: PERFTESTS=DIR bench/nvshmem/nvshmem_perftests.sh OUT}
perftests=${PERFTESTS:?set PERFTESTS to the directory of NVSHMEM perftest binaries}
repeat=${REPEAT:-3}
modes=(${MODES:-untraced forward wqe})
tests=(${TESTS:-${fig4_perftests[*]}})
build=${BUILD:-$root/build}
mkdir -p "$out/runs"
out=$(cd "$out" && pwd)
results=$out/results.tsv
printf 'test\tmode\trep\ttable\tsize\tscope\tvalue\trc\ttrace_bytes\twqes\n' > "$results"

args_of() {
  case "$1" in
    shmem_put_latency | shmem_get_latency) echo "-b 8 -e 4096 -f 512 -n 200 -w 20" ;;
    shmem_atomic_latency) echo "-a fetch_add" ;;
    shmem_p_ping_pong_latency) echo "-b 8 -e 8 -n 500 -w 50" ;;
    shmem_put_bw) echo "-b 8 -e 65536 -f 8192 -n 200 -w 20 -c 4 -t 1024" ;;
    *) echo "" ;;
  esac
}

failed=0
for rep in $(seq "$repeat"); do
  for t in "${tests[@]}"; do
    n=${#modes[@]}
    for k in $(seq 0 $((n - 1))); do
      mode=${modes[$(( (k + rep - 1) % n ))]}
      run=$out/runs/$t-$mode-$rep
      flags=()
      case "$mode" in
        untraced) ;;
        forward) flags=(--trace); export SIGMATRACE_DOORBELLS=forward ;;
        wqe) flags=(--trace --check); export SIGMATRACE_DOORBELLS=wqe ;;
        *) echo "unknown mode $mode"; exit 2 ;;
      esac
      # shellcheck disable=SC2046
      "$root/testbed/nvshmem/run_nvshmem.sh" --build "$build" --out "$run" --timeout "${RUN_TIMEOUT_S:-150}" "${flags[@]}" 2 -- \
        "$perftests/$t" $(args_of "$t") > "$run.log" 2>&1
      rc=$?
      unset SIGMATRACE_DOORBELLS
      [ $rc -ne 0 ] && failed=1
      bytes=0 wqes=0
      [ -d "$run/exp" ] && bytes=$(du -sb "$run/exp" | cut -f1)
      wqes=$(cat "$run"/oracle/*.txt 2>/dev/null | sed -n 's/.* wqes=\([0-9]*\) .*/\1/p' | awk '{s+=$1} END {print s+0}')
      # PE 0 prints the tables: "#<name>", a header, then "<size> <scope> <value>" rows.
      awk -v t="$t" -v m="$mode" -v r="$rep" -v rc="$rc" -v b="$bytes" -v w="$wqes" '
        /^#/ { table = substr($0, 2); next }
        $1 ~ /^[0-9]+$/ && NF >= 3 && $NF ~ /^[0-9.]+$/ { printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t, m, r, table, $1, $2, $NF, rc, b, w }
      ' "$run/pe0.log" >> "$results"
      echo "rep $rep $t $mode: status $rc, trace $bytes B, $wqes WQEs executed"
    done
  done
done
python3 "$here/fig4_table.py" "$results" > "$out/fig4.md"
# Tracing must not change what the tests print (numbers aside): a difference fails the run.
{ echo; python3 "$here/output_unchanged.py" "$out"; } >> "$out/fig4.md" || failed=1
cat "$out/fig4.md"
exit $failed
