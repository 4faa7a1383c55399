#!/usr/bin/env bash
# NVSHMEM's own perftests over softnic (IBGDA, GPU-rung doorbells), untraced and under the
# profiler side by side: the paper's Fig. 4 on real NVSHMEM, through the harness
# (bench/lib/harness.sh): each repetition runs every test (the cases) in every kind, the kinds'
# order rotating between repetitions. Kinds: untraced; forward (doorbells forwarded); wqe (and
# the WQEs recovered, checked against softnic's own log of what it executed: wqe_oracle_check);
# KIND/VAR=VALUE... Metrics: each row the test printed ("TABLE SCOPE SIZE B": its mean latency
# over its iterations, or its bandwidth), and for traced runs the trace's bytes and its bytes
# per WQE softnic executed (whole run, init included). The table gives their medians and each
# kind's paired difference to untraced (each traced run minus the untraced run of the same test
# and repetition, with its 95 % interval). Every traced run's output is also checked against the
# untraced run's (output_unchanged.py): a mismatch fails the session.
#   PERFTESTS=DIR bench/nvshmem/nvshmem_perftests.sh OUT=DIR [NAME=VALUE...]
#   BUILD, OUT, KINDS (untraced forward wqe), REPS (3), DEADLINE_S, RESULTS_TAR: the harness's
#   settings; PERFTESTS: the perftest binaries (NVSHMEM's perftest/device/pt-to-pt, built against
#   the installed NVSHMEM by build_perftests.sh); TESTS (perftest_names.sh); RUN_TIMEOUT_S (150)
# MPS must be running (tests/gpu/gda/mps.sh). Writes the harness's files and OUT/fig4.md
# (the table and the output check).
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib/harness.sh
. "$here/../lib/harness.sh"
# shellcheck source=bench/nvshmem/perftest_names.sh
. "$here/perftest_names.sh"
bench_args "OUT" "$@"
bench_default KINDS "untraced forward wqe"
bench_default REPS 3
bench_default TESTS "${fig4_perftests[*]}"
bench_default RUN_TIMEOUT_S 150
[ -n "${PERFTESTS:-}" ] || bench_die "set PERFTESTS to the directory of NVSHMEM perftest binaries"
BENCH_KIND_PATTERNS="untraced forward wqe"
BENCH_CASES=$TESTS
BENCH_TITLE="NVSHMEM perftests over softnic (Fig. 4), 2 PEs"

args_of() {
  case "$1" in
    shmem_put_latency | shmem_get_latency) echo "-b 8 -e 4096 -f 512 -n 200 -w 20" ;;
    shmem_atomic_latency) echo "-a fetch_add" ;;
    shmem_p_ping_pong_latency) echo "-b 8 -e 8 -n 500 -w 50" ;;
    shmem_put_bw) echo "-b 8 -e 65536 -f 8192 -n 200 -w 20 -c 4 -t 1024" ;;
    *) echo "" ;;
  esac
}

bench_run() {
  local flags=() rc bytes wqes metric value
  case "$kind" in
    forward) flags=(--trace); export SIGMATRACE_DOORBELLS=forward ;;
    wqe) flags=(--trace --check); export SIGMATRACE_DOORBELLS=wqe ;;
  esac
  # shellcheck disable=SC2046  # the test's arguments are a word list
  "$BENCH_ROOT/testbed/nvshmem/run_nvshmem.sh" --build "$BUILD" --out "$run_dir" --timeout "$RUN_TIMEOUT_S" "${flags[@]}" 2 -- \
    "$PERFTESTS/$case_name" $(args_of "$case_name")
  rc=$?
  # PE 0 prints the tables: "#<name>", a header, then "<size> <scope> <value>" rows.
  while IFS=$'\t' read -r metric value; do bench_record "$metric" "$value"; done < <(awk '
    /^#/ { table = substr($0, 2); next }
    $1 ~ /^[0-9]+$/ && NF >= 3 && $NF ~ /^[0-9.]+$/ { printf "%s %s %s B\t%s\n", table, $2, $1, $NF }' "$run_dir/pe0.log")
  if [ "$kind" != untraced ] && [ -d "$run_dir/exp" ]; then
    bytes=$(du -sb "$run_dir/exp" | cut -f1)
    wqes=$(cat "$run_dir"/oracle/*.txt 2> /dev/null | sed -n 's/.* wqes=\([0-9]*\) .*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
    bench_record "trace bytes" "$bytes"
    [ "$wqes" -gt 0 ] && bench_record "trace bytes per executed WQE" "$(awk -v b="$bytes" -v w="$wqes" 'BEGIN { printf "%.1f", b / w }')"
  fi
  return "$rc"
}

bench_checks() {
  # Tracing must not change what the tests print (numbers aside): a difference fails the session.
  local rc
  python3 "$here/output_unchanged.py" "$OUT" > "$OUT/output_unchanged.txt"
  rc=$?
  cat "$OUT/output_unchanged.txt"
  { cat "$OUT/table.md"; echo; cat "$OUT/output_unchanged.txt"; } > "$OUT/fig4.md"
  return "$rc"
}
bench_main
