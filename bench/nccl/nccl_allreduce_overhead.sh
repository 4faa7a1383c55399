#!/bin/bash
# NCCL all-reduce between the GPUs of one machine, forced through NCCL's IB transport onto softnic
# (the emulated RDMA NIC), untraced and under `sigmatrace profile` in each mode (issue #8), through
# the harness (bench/lib/harness.sh: kinds rotated, repeated, paired with untraced). Kinds:
# untraced, aggregate, simple, full (KIND/VAR=VALUE... too). Cases: the sizes. One run = one launch
# of nccl_allreduce_bench with RANKS ranks (one process per GPU); its metrics: the median
# per-operation time of its inner repetitions (time_us), algbw and busbw (GB/s) and, traced, the
# experiment's bytes (du -b), events and drops (`sigmatrace info`: all processes, the launcher
# included). Writes the harness's files and OUT/summary.md (the table for docs/performance.md,
# with the environment), OUT/info/ (`sigmatrace info` of each traced kind's first run per size),
# and keeps one experiment directory per size (the last kind's first run) in OUT/experiments/,
# analysed into OUT/analysis/ when `sigmatrace analyze` is built (else later, with ANALYZE_ONLY=1).
# A failed run, or NCCL not on NET/IB over softnic, stops the session.
#
#   bench/nccl/nccl_allreduce_overhead.sh BUILD=DIR OUT=DIR [NAME=VALUE...]
#   BUILD, OUT, KINDS (untraced aggregate simple full), REPS (5), DEADLINE_S, RESULTS_TAR: the
#   harness's settings; RANKS (2), SIZES ("1M 128M"), PROVIDERS (ibverbs,mlx5), ITERS (about
#   256 MiB per repetition, 5..100), WARMUP (a fifth of ITERS, at least 2), INNER_REPS (5),
#   TIMEOUT_S (900)
#   bench/nccl/nccl_allreduce_overhead.sh OUT=DIR ANALYZE_ONLY=1    (analyse the kept experiments)
#
# Exit status: 0 done, 1 a run failed or NCCL did not use NET/IB on softnic, 2 bad settings,
# 77 skipped (no nvidia-smi, fewer GPUs than ranks, no NCCL, a build product missing).
# Documentation: docs/nccl.md.
set -u -o pipefail
# shellcheck source=bench/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
bench_args "BUILD OUT --ranks=RANKS --sizes=SIZES --reps=REPS --modes=KINDS --providers=PROVIDERS --iters=ITERS --warmup=WARMUP --inner-reps=INNER_REPS --timeout=TIMEOUT_S --analyze-only=ANALYZE_ONLY!" "$@"
bench_default KINDS "untraced aggregate simple full"
bench_default REPS 5
bench_default RANKS 2
bench_default SIZES "1M 128M"
bench_default PROVIDERS ibverbs,mlx5
bench_default ITERS ""
bench_default WARMUP ""
bench_default INNER_REPS 5
bench_default TIMEOUT_S 900
bench_default ANALYZE_ONLY 0
is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
{ is_uint "$RANKS" && [ "$RANKS" -ge 2 ]; } || bench_die "RANKS=$RANKS: expected an integer >= 2"
{ is_uint "$INNER_REPS" && [ "$INNER_REPS" -ge 1 ]; } || bench_die "INNER_REPS=$INNER_REPS: expected an integer >= 1"
{ is_uint "$TIMEOUT_S" && [ "$TIMEOUT_S" -ge 10 ]; } || bench_die "TIMEOUT_S=$TIMEOUT_S: expected seconds >= 10"
[ -z "$ITERS" ] || { is_uint "$ITERS" && [ "$ITERS" -ge 1 ]; } || bench_die "ITERS=$ITERS: expected an integer >= 1"
[ -z "$WARMUP" ] || is_uint "$WARMUP" || bench_die "WARMUP=$WARMUP: expected an integer >= 0"
[ -n "$SIZES" ] || bench_die "SIZES: give at least one size"
for s in $SIZES; do
  [[ $s =~ ^[0-9]+([KkMmGg]([iI]?[bB])?)?$ ]] || bench_die "SIZES: '$s' is not a size such as 4096, 1M or 128M"
done
[[ $PROVIDERS =~ ^[a-z0-9,]+$ ]] || bench_die "PROVIDERS=$PROVIDERS: expected a comma-separated list (all, ibverbs, mlx5, ...)"
BENCH_KIND_PATTERNS="untraced aggregate simple full"
BENCH_CASES=$SIZES

[ -d "$BUILD" ] && BUILD=$(cd -P "$BUILD" && pwd)  # absolute: compared with /proc/PID/maps paths
S=$BUILD/bin/sigmatrace
BENCH=$BUILD/bin/nccl_allreduce_bench
SOFTNIC=$BUILD/softnic

# ---- analysis of a kept experiment directory ---------------------------------------------------------
sql() {  # DIR FILE QUERY: one CSV file of the analysed experiment
  "$S" sql "$1" "$3" --csv >"$2" 2>&1 || echo "(query failed, see $2)"
}
analyze_dir() {  # EXPERIMENT_DIR ANALYSIS_DIR
  local exp=$1 dst=$2
  mkdir -p "$dst"
  echo "analysing $exp -> $dst"
  if ! "$S" analyze "$exp" >"$dst/summary.txt" 2>&1; then
    echo "$BENCH_NAME: sigmatrace analyze $exp failed (see $dst/summary.txt)" >&2
    return 1
  fi
  # QP topology: every QP NCCL created, its owner and the peer it was connected to at RTR.
  sql "$exp" "$dst/qp_topology.csv" "SELECT p.rank AS rank, p.host AS host, p.pid AS pid, q.device AS device, q.qp_num AS qp_num, q.type AS type, q.state AS state, pr.rank AS peer_rank, q.remote_qp_num AS peer_qp_num, q.connection_id AS connection_id FROM qp q JOIN process p ON p.process_id = q.process_id LEFT JOIN qp r ON r.qp_id = q.remote_qp_id LEFT JOIN process pr ON pr.process_id = r.process_id ORDER BY p.rank, q.qp_num"
  # Bytes and operations per QP and opcode (every mode, aggregate included).
  sql "$exp" "$dst/qp_stats.csv" "SELECT p.rank AS rank, qp.qp_num AS qp_num, s.opcode AS opcode, s.ops AS ops, s.bytes AS bytes FROM qp_stats s JOIN qp ON qp.qp_id = s.qp_id JOIN process p ON p.process_id = qp.process_id ORDER BY s.bytes DESC"
  # Host/rank matrix: bytes from the initiating rank to its target (simple and full modes).
  sql "$exp" "$dst/rank_matrix.csv" "SELECT p.host AS src_host, p.rank AS src_rank, q.host AS dst_host, q.rank AS dst_rank, COUNT(*) AS ops, SUM(o.bytes) AS bytes FROM op o JOIN process p ON p.process_id = o.process_id LEFT JOIN process q ON q.process_id = o.peer_process_id WHERE o.opcode NOT IN ('READ', 'RECV') GROUP BY p.host, p.rank, q.host, q.rank ORDER BY p.rank, q.rank"
  # Per-QP bandwidth: bytes over the span from its first post to its last completion (full mode;
  # in simple mode the span ends at the last post). Warm-up and verification traffic are included.
  sql "$exp" "$dst/qp_bandwidth.csv" "SELECT p.rank AS rank, qp.qp_num AS qp_num, pr.rank AS peer_rank, COUNT(*) AS ops, SUM(o.bytes) AS bytes, MAX(o.ts_ns + COALESCE(o.dur_ns, 0)) - MIN(o.ts_ns) AS active_ns, ROUND(SUM(o.bytes) * 1.0 / NULLIF(MAX(o.ts_ns + COALESCE(o.dur_ns, 0)) - MIN(o.ts_ns), 0), 3) AS GBps FROM op o JOIN qp ON qp.qp_id = o.qp_id JOIN process p ON p.process_id = o.process_id LEFT JOIN process pr ON pr.process_id = o.peer_process_id WHERE o.opcode NOT IN ('READ', 'RECV') GROUP BY o.qp_id ORDER BY bytes DESC"
}
have_analyze() { "$S" analyze --help >/dev/null 2>&1; }
analyze_kept() {
  local n=0 exp
  for exp in "$OUT"/experiments/*/; do
    [ -d "$exp" ] || continue
    exp=${exp%/}
    analyze_dir "$exp" "$OUT/analysis/$(basename "$exp")" || return 1
    n=$((n + 1))
  done
  [ "$n" -gt 0 ] || { echo "$BENCH_NAME: no experiment directory in $OUT/experiments" >&2; return 1; }
}

if [ "$ANALYZE_ONLY" = 1 ]; then
  [ -n "${OUT:-}" ] || bench_die "ANALYZE_ONLY=1 needs OUT, the directory of an earlier session"
  [ -x "$S" ] || { echo "$BENCH_NAME: no $S" >&2; exit 1; }
  have_analyze || { echo "$BENCH_NAME: $S has no 'analyze' command (built without SQLite: run scripts/setup.sh and rebuild)" >&2; exit 1; }
  analyze_kept || exit 1
  echo "analysis written to $OUT/analysis/"
  exit 0
fi

# ---- what the runs need: otherwise skip ---------------------------------------------------------------
[ -x "$BENCH" ] || bench_skip "no $BENCH (built where the CUDA toolkit is found: cmake --build $BUILD --target nccl_allreduce_bench)"
[ -x "$S" ] || bench_skip "no $S (cmake --build $BUILD --target sigmatrace_cli)"
[ -e "$BUILD/lib/libsigmatrace.so" ] || bench_skip "no $BUILD/lib/libsigmatrace.so (cmake --build $BUILD --target sigmatrace)"
{ [ -e "$SOFTNIC/libibverbs.so.1" ] && [ -e "$SOFTNIC/libibverbs.so" ]; } || bench_skip "no softnic libraries in $SOFTNIC (cmake --build $BUILD --target softnic)"
command -v nvidia-smi > /dev/null 2>&1 || bench_skip "nvidia-smi not found (no NVIDIA driver)"
gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU ')
[ "$gpus" -ge "$RANKS" ] || bench_skip "$RANKS ranks need $RANKS GPUs, nvidia-smi lists $gpus"

find_nccl() {  # prints the path of libnccl.so.2
  if [ -n "${NCCL_BENCH_LIB:-}" ]; then echo "$NCCL_BENCH_LIB"; return 0; fi
  local p
  p=$(ldconfig -p 2>/dev/null | awk '$1 == "libnccl.so.2" { print $NF; exit }')
  if [ -n "$p" ]; then echo "$p"; return 0; fi
  # A pip wheel (nvidia-nccl-cu*), then the copy some PyTorch wheels carry; found without importing torch.
  command -v python3 >/dev/null 2>&1 || return 1
  python3 - <<'EOF' 2>/dev/null
import importlib.util, os, sys
for mod, sub in (("nvidia.nccl", "lib"), ("torch", "lib")):
    try:
        spec = importlib.util.find_spec(mod)
    except Exception:
        continue
    for d in (spec.submodule_search_locations or []) if spec else []:
        f = os.path.join(d, sub, "libnccl.so.2")
        if os.path.exists(f):
            print(f)
            sys.exit(0)
sys.exit(1)
EOF
}
NCCL_LIB=$(find_nccl) || bench_skip "NCCL not found (not in ldconfig, no nvidia-nccl or torch wheel for python3); set NCCL_BENCH_LIB=/path/to/libnccl.so.2"
[ -e "$NCCL_LIB" ] || { echo "$BENCH_NAME: NCCL_BENCH_LIB=$NCCL_LIB does not exist" >&2; exit 1; }
export NCCL_BENCH_LIB=$NCCL_LIB

# ---- the environment that puts NCCL on softnic's IB transport ---------------------------------------
export LD_LIBRARY_PATH=$SOFTNIC${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}  # NCCL dlopens libibverbs.so(.1): softnic's
export SOFTNIC_DEVICES=1                                              # one emulated device: mlx5_0
export NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1                          # no CUDA P2P, no host shared memory
export NCCL_NVLS_ENABLE=0 NCCL_MNNVL_ENABLE=0 NCCL_PXN_DISABLE=1      # no NVLink SHARP / multi-node NVLink / PXN
export NCCL_COLLNET_ENABLE=0 NCCL_GIN_ENABLE=0                        # no CollNet (SHARP), no GPU-initiated networking
export NCCL_NET=IB NCCL_IB_DISABLE=0 NCCL_NET_PLUGIN=none             # the built-in IB transport, no external plugin
export NCCL_IB_HCA=${NCCL_IB_HCA:-mlx5_0}
export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo}                   # bootstrap (and OOB) over loopback
export NCCL_CUMEM_ENABLE=${NCCL_CUMEM_ENABLE:-0}                      # plain cudaMalloc buffers (see docs/nccl.md)
export NCCL_DEBUG=${NCCL_DEBUG:-INFO} NCCL_DEBUG_SUBSYS=${NCCL_DEBUG_SUBSYS:-INIT,NET}
unset NCCL_DEBUG_FILE NCCL_COMM_ID                                    # NCCL's lines go to each run's log

# ---- sizes and iterations --------------------------------------------------------------------------------
to_bytes() {
  local s=$1 n unit
  n=${s%%[!0-9]*}
  unit=${s#"$n"}
  case ${unit:0:1} in
    K|k) echo $((n << 10)) ;; M|m) echo $((n << 20)) ;; G|g) echo $((n << 30)) ;; *) echo "$n" ;;
  esac
}
iters_for() {  # about 256 MiB per repetition, 5..100 all-reduces
  local b=$1 i
  if [ -n "$ITERS" ]; then echo "$ITERS"; return; fi
  i=$(((256 << 20) / b))
  [ "$i" -lt 5 ] && i=5
  [ "$i" -gt 100 ] && i=100
  echo "$i"
}
warmup_for() {
  if [ -n "$WARMUP" ]; then echo "$WARMUP"; return; fi
  local i=$(($1 / 5))
  [ "$i" -lt 2 ] && i=2
  echo "$i"
}

check_transport() {  # LOG: NCCL must have used NET/IB on softnic's mlx5_0
  local log=$1 ibv
  ibv=$(awk -F= '/^libibverbs=/ { print $2; exit }' "$log")
  case $ibv in
    "$SOFTNIC"/*) ;;
    *) fail_transport "NCCL loaded libibverbs from '${ibv:-?}', not softnic's $SOFTNIC (see $log)" ;;
  esac
  if [ "$NCCL_DEBUG" != INFO ] && [ "$NCCL_DEBUG" != TRACE ]; then return 0; fi
  if grep -Eq 'Using network Socket|via NET/Socket|NET/Socket : Using' "$log"; then
    fail_transport "NCCL chose NET/Socket, not NET/IB (see $log)"
  fi
  grep -Eq 'NET/IB.*mlx5_0|Using network IB|via NET/IB' "$log" || fail_transport "no sign of NET/IB on mlx5_0 in NCCL's log (see $log)"
}


bench_setup() {
  rm -rf "$OUT/info" "$OUT/experiments" "$OUT/analysis" "$OUT/summary.md"
  mkdir -p "$OUT/info" "$OUT/experiments"
}

fail_transport() { bench_abort "$*"; return 1; }
last_kind=${KINDS##* }

bench_run() {
  local bytes it wu exp=$run_dir/exp rc line info procs events dropped
  bytes=$(to_bytes "$case_name")
  it=$(iters_for "$bytes")
  wu=$(warmup_for "$it")
  export SOFTNIC_FABRIC="nccl-$$-$RANDOM"
  local cmd=("$BENCH" --ranks "$RANKS" --bytes "$bytes" --warmup "$wu" --reps "$INNER_REPS" --iters "$it" --timeout "$TIMEOUT_S")
  if [ "$kind" = untraced ]; then
    timeout -k 30 "$((TIMEOUT_S + 30))" "${cmd[@]}" > "$run_dir/nccl.log" 2>&1
  else
    timeout -k 30 "$((TIMEOUT_S + 30))" "$S" profile --mode "$kind" --providers "$PROVIDERS" -o "$exp" -- "${cmd[@]}" > "$run_dir/nccl.log" 2>&1
  fi
  rc=$?
  # A rank stopped by a signal leaves its softnic segments behind: this run's fabric is ours alone.
  rm -f "/dev/shm/softnic-$SOFTNIC_FABRIC" "/dev/shm/softnic-$SOFTNIC_FABRIC.lock" "/dev/shm/softnic-$SOFTNIC_FABRIC"-*
  if [ "$rc" = 77 ]; then grep -m1 '^SKIPPED:' "$run_dir/nccl.log"; return 77; fi
  if [ "$rc" != 0 ]; then
    bench_abort "failed with status $rc; last lines of $run_dir/nccl.log:"
    bench_say "$(tail -n 20 "$run_dir/nccl.log")"
    return "$rc"
  fi
  check_transport "$run_dir/nccl.log" || return 1
  line=$(grep -m1 '^median ' "$run_dir/nccl.log") || { bench_abort "no median line in $run_dir/nccl.log"; return 1; }
  bench_record iters "$it"
  bench_record time_us "$(sed -n 's/.* time_us=\([^ ]*\).*/\1/p' <<< "$line")"
  bench_record algbw_GBps "$(sed -n 's/.* algbw_GBps=\([^ ]*\).*/\1/p' <<< "$line")"
  bench_record busbw_GBps "$(sed -n 's/.* busbw_GBps=\([^ ]*\).*/\1/p' <<< "$line")"
  [ "$kind" != untraced ] || return 0
  [ -d "$exp" ] || { bench_abort "the profiler wrote no experiment directory $exp (see $run_dir/nccl.log)"; return 1; }
  bench_record trace_bytes "$(du -sb "$exp" | cut -f1)"
  info=$run_dir/info.txt
  "$S" info "$exp" > "$info" 2>&1 || { bench_abort "sigmatrace info $exp failed: $(head -n1 "$info")"; return 1; }
  # First line: "experiment DIR: P processes, T threads, E events, D dropped"
  read -r procs events dropped < <(awk 'NR == 1 { for (i = 1; i <= NF; i++) { if ($(i + 1) ~ /^processes/) p = $i; if ($(i + 1) ~ /^events/) e = $i; if ($(i + 1) ~ /^dropped/) d = $i } print p, e, d; exit }' "$info")
  bench_record processes "$procs"
  bench_record events "$events"
  bench_record dropped "$dropped"
  if [ "$rep" = 1 ]; then
    cp "$info" "$OUT/info/$case_name-$kind_name-r1.txt"
    if [ "$kind_name" = "$last_kind" ]; then  # kept for the analysis
      mv "$exp" "$OUT/experiments/$case_name-$kind-r1" || { bench_abort "cannot move $exp to $OUT/experiments"; return 1; }
      return 0
    fi
  fi
  rm -rf "$exp"
}

bench_checks() {
  local first_log nccl_version net_line gpu_names
  first_log=$OUT/runs/$(bench_run_name "${SIZES%% *}" "${KINDS%% *}" 1)/nccl.log
  nccl_version=$(sed -n 's/^nccl_version=\([^ ]*\).*/\1/p' "$first_log" 2> /dev/null | head -n1)
  net_line=$(grep -m1 -E 'NET/IB : Using|Using network IB' "$first_log" 2> /dev/null | sed 's/.*NCCL INFO //')
  gpu_names=$(nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null | sort | uniq -c | awk '{ $1 = $1 " x"; print }' | paste -sd, -)
  {
    echo "### NCCL all-reduce over softnic (NET/IB), traced vs untraced"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(hostname), ${gpu_names:-GPUs}, NCCL ${nccl_version:-?} ($NCCL_LIB), $RANKS ranks (one process per GPU), float32 sum, out of place; providers \`$PROVIDERS\`."
    echo "NCCL's network: \`${net_line:-see nccl.log of the runs}\`."
    echo "A run's time_us is the median of $INNER_REPS timed repetitions of ITERS all-reduces; trace_bytes: \`du -b\` of the experiment directory; events and dropped: all processes of the run, the launcher included (\`sigmatrace info\`; by type: \`info/<size>-<kind>-r1.txt\`)."
    echo
    echo "Command: \`bench/nccl/nccl_allreduce_overhead.sh BUILD=$BUILD OUT=$OUT RANKS=$RANKS SIZES='$SIZES' REPS=$REPS KINDS='$KINDS' PROVIDERS=$PROVIDERS\`"
    echo
    tail -n +3 "$OUT/table.md"
  } > "$OUT/summary.md"
  echo
  if have_analyze; then
    analyze_kept || return 1
    echo "analysis of the kept experiments: $OUT/analysis/ (summary.txt, qp_topology.csv, qp_stats.csv, rank_matrix.csv, qp_bandwidth.csv)"
  else
    echo "sigmatrace analyze is not built here (no SQLite): the kept experiments in $OUT/experiments/ are left for later:"
    echo "  copy $OUT to a machine with a full build and run: bench/nccl/nccl_allreduce_overhead.sh BUILD=BUILD_DIR OUT=$OUT ANALYZE_ONLY=1"
  fi
  echo "summary: $OUT/summary.md"
}
bench_main
