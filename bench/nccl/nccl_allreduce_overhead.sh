#!/bin/bash
# NCCL all-reduce between the GPUs of one machine, forced through NCCL's IB transport onto softnic
# (the emulated RDMA NIC), untraced and under `sigmatrace profile` in each mode (issue #8).
#
#   nccl_allreduce_overhead.sh BUILD_DIR OUT_DIR [--ranks N] [--sizes "1M 128M"] [--reps 5]
#       [--modes "aggregate simple full"] [--providers ibverbs,mlx5] [--iters N] [--warmup N]
#       [--inner-reps N] [--timeout S]
#   nccl_allreduce_overhead.sh BUILD_DIR OUT_DIR --analyze-only
#
# For each size and repetition the configurations run one after the other (untraced, then each mode,
# then again), so drift in the machine hits all alike. One run = one launch of nccl_allreduce_bench
# with --ranks N (one process per GPU); its value is the median per-operation time of its inner
# repetitions; a configuration's value is the median over runs. Overhead = that median against the
# untraced median of the same invocation. Writes OUT_DIR/results.csv (one row per run),
# OUT_DIR/summary.md (a table for docs/performance.md), OUT_DIR/logs/ (each run's output, NCCL's INFO
# lines included), OUT_DIR/info/ (`sigmatrace info` of one experiment per size and mode) and keeps one
# experiment directory per size (the last mode's first run) in OUT_DIR/experiments/, analysed into
# OUT_DIR/analysis/ when `sigmatrace analyze` is built (else later, with --analyze-only).
#
# Exit status: 0 done, 1 a run failed or NCCL did not use NET/IB on softnic, 2 bad arguments,
# 77 skipped (no nvidia-smi, fewer GPUs than ranks, no NCCL, a build product missing).
# Documentation: docs/nccl.md.
set -u -o pipefail
# shellcheck source=../../scripts/lib/stats.sh
. "$(cd "$(dirname "$0")/../.." && pwd)/scripts/lib/stats.sh"

prog=$(basename "$0")
usage() {
  echo "usage: $prog BUILD_DIR OUT_DIR [--ranks N] [--sizes \"1M 128M\"] [--reps N] [--modes \"aggregate simple full\"] [--providers LIST] [--iters N] [--warmup N] [--inner-reps N] [--timeout S] [--analyze-only]" >&2
  exit 2
}
bad() { echo "$prog: $*" >&2; exit 2; }
skip() { echo "SKIPPED: $*"; exit 77; }
die() { echo "$prog: $*" >&2; exit 1; }
is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

[ $# -ge 2 ] || usage
case $1 in -*) usage ;; esac
case $2 in -*) usage ;; esac
BUILD=$1 OUT=$2
shift 2
ranks=2 sizes="1M 128M" reps=5 modes="aggregate simple full" providers=ibverbs,mlx5
iters="" warmup="" inner_reps=5 timeout_s=900 analyze_only=0
while [ $# -gt 0 ]; do
  case $1 in
    --ranks|--sizes|--reps|--modes|--providers|--iters|--warmup|--inner-reps|--timeout)
      [ $# -ge 2 ] || bad "$1 needs a value"
      case $1 in
        --ranks) ranks=$2 ;; --sizes) sizes=$2 ;; --reps) reps=$2 ;; --modes) modes=$2 ;;
        --providers) providers=$2 ;; --iters) iters=$2 ;; --warmup) warmup=$2 ;;
        --inner-reps) inner_reps=$2 ;; --timeout) timeout_s=$2 ;;
      esac
      shift 2 ;;
    --analyze-only) analyze_only=1; shift ;;
    -h|--help) usage ;;
    *) bad "unknown argument '$1' (see $prog --help)" ;;
  esac
done
{ is_uint "$ranks" && [ "$ranks" -ge 2 ]; } || bad "--ranks $ranks: expected an integer >= 2"
{ is_uint "$reps" && [ "$reps" -ge 1 ]; } || bad "--reps $reps: expected an integer >= 1"
{ is_uint "$inner_reps" && [ "$inner_reps" -ge 1 ]; } || bad "--inner-reps $inner_reps: expected an integer >= 1"
{ is_uint "$timeout_s" && [ "$timeout_s" -ge 10 ]; } || bad "--timeout $timeout_s: expected seconds >= 10"
[ -z "$iters" ] || { is_uint "$iters" && [ "$iters" -ge 1 ]; } || bad "--iters $iters: expected an integer >= 1"
[ -z "$warmup" ] || is_uint "$warmup" || bad "--warmup $warmup: expected an integer >= 0"
[ -n "$sizes" ] || bad "--sizes: give at least one size"
for s in $sizes; do
  [[ $s =~ ^[0-9]+([KkMmGg]([iI]?[bB])?)?$ ]] || bad "--sizes: '$s' is not a size such as 4096, 1M or 128M"
done
[ -n "$modes" ] || bad "--modes: give at least one of aggregate, simple, full"
for m in $modes; do
  case $m in aggregate|simple|full) ;; *) bad "--modes: '$m' is not one of aggregate, simple, full" ;; esac
done
[[ $providers =~ ^[a-z0-9,]+$ ]] || bad "--providers '$providers': expected a comma-separated list (all, ibverbs, mlx5, ...)"

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
    echo "$prog: sigmatrace analyze $exp failed (see $dst/summary.txt)" >&2
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
  [ "$n" -gt 0 ] || die "no experiment directory in $OUT/experiments"
}

if [ "$analyze_only" = 1 ]; then
  [ -x "$S" ] || die "no $S"
  have_analyze || die "$S has no 'analyze' command (built without SQLite: run scripts/setup.sh and rebuild)"
  analyze_kept || exit 1
  echo "analysis written to $OUT/analysis/"
  exit 0
fi

# ---- what the runs need: otherwise skip ---------------------------------------------------------------
[ -x "$BENCH" ] || skip "no $BENCH (built where the CUDA toolkit is found: cmake --build $BUILD --target nccl_allreduce_bench)"
[ -x "$S" ] || skip "no $S (cmake --build $BUILD --target sigmatrace_cli)"
[ -e "$BUILD/lib/libsigmatrace.so" ] || skip "no $BUILD/lib/libsigmatrace.so (cmake --build $BUILD --target sigmatrace)"
{ [ -e "$SOFTNIC/libibverbs.so.1" ] && [ -e "$SOFTNIC/libibverbs.so" ]; } || skip "no softnic libraries in $SOFTNIC (cmake --build $BUILD --target softnic)"
command -v nvidia-smi >/dev/null 2>&1 || skip "nvidia-smi not found (no NVIDIA driver)"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
[ "$gpus" -ge "$ranks" ] || skip "$ranks ranks need $ranks GPUs, nvidia-smi lists $gpus"

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
NCCL_LIB=$(find_nccl) || skip "NCCL not found (not in ldconfig, no nvidia-nccl or torch wheel for python3); set NCCL_BENCH_LIB=/path/to/libnccl.so.2"
[ -e "$NCCL_LIB" ] || die "NCCL_BENCH_LIB=$NCCL_LIB does not exist"
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
  if [ -n "$iters" ]; then echo "$iters"; return; fi
  i=$(((256 << 20) / b))
  [ "$i" -lt 5 ] && i=5
  [ "$i" -gt 100 ] && i=100
  echo "$i"
}
warmup_for() {
  if [ -n "$warmup" ]; then echo "$warmup"; return; fi
  local i=$(($1 / 5))
  [ "$i" -lt 2 ] && i=2
  echo "$i"
}

minmax() { sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR) printf "%.1f-%.1f\n", lo, hi; else print "n/a" }'; }
fmt() { awk -v v="$1" -v f="$2" 'BEGIN { if (v == "" || v == "n/a") print "n/a"; else printf f "\n", v }'; }
human() { awk -v b="$1" 'BEGIN { if (b == "" || b == "n/a") { print "n/a"; exit } split("B KiB MiB GiB TiB", u, " "); i = 1; while (b >= 1024 && i < 5) { b /= 1024; i++ } fmt = (i == 1) ? "%d %s\n" : "%.1f %s\n"; printf fmt, b, u[i] }'; }

# ---- output directory --------------------------------------------------------------------------------
mkdir -p "$OUT" || die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
rm -rf "$OUT/logs" "$OUT/info" "$OUT/experiments" "$OUT/analysis" "$OUT/work" "$OUT/results.csv" "$OUT/summary.md"
mkdir -p "$OUT/logs" "$OUT/info" "$OUT/experiments" "$OUT/work"
CSV=$OUT/results.csv
echo "size,bytes,mode,rep,ranks,iters,time_us,algbw_GBps,busbw_GBps,trace_bytes,processes,events,dropped,log" >"$CSV"
modes_all="untraced $modes"
last_mode=${modes##* }
run_index=0

check_transport() {  # LOG: NCCL must have used NET/IB on softnic's mlx5_0
  local log=$1 ibv
  ibv=$(awk -F= '/^libibverbs=/ { print $2; exit }' "$log")
  case $ibv in
    "$SOFTNIC"/*) ;;
    *) die "NCCL loaded libibverbs from '${ibv:-?}', not softnic's $SOFTNIC (see $log)" ;;
  esac
  if [ "$NCCL_DEBUG" != INFO ] && [ "$NCCL_DEBUG" != TRACE ]; then return 0; fi
  if grep -Eq 'Using network Socket|via NET/Socket|NET/Socket : Using' "$log"; then
    die "NCCL chose NET/Socket, not NET/IB (see $log)"
  fi
  grep -Eq 'NET/IB.*mlx5_0|Using network IB|via NET/IB' "$log" || die "no sign of NET/IB on mlx5_0 in NCCL's log (see $log)"
}

run_one() {  # SIZE MODE REP
  local size=$1 mode=$2 rep=$3 bytes it wu log exp rc line time_us algbw busbw tbytes=n/a procs=n/a events=n/a dropped=n/a
  bytes=$(to_bytes "$size")
  it=$(iters_for "$bytes")
  wu=$(warmup_for "$it")
  run_index=$((run_index + 1))
  export SOFTNIC_FABRIC="nccl-$$-$run_index"
  log=$OUT/logs/$size-$mode-r$rep.log
  exp=$OUT/work/$size-$mode-r$rep
  local cmd=("$BENCH" --ranks "$ranks" --bytes "$bytes" --warmup "$wu" --reps "$inner_reps" --iters "$it" --timeout "$timeout_s")
  if [ "$mode" = untraced ]; then
    timeout -k 30 "$((timeout_s + 30))" "${cmd[@]}" >"$log" 2>&1
  else
    timeout -k 30 "$((timeout_s + 30))" "$S" profile --mode "$mode" --providers "$providers" -o "$exp" -- "${cmd[@]}" >"$log" 2>&1
  fi
  rc=$?
  # A rank stopped by a signal leaves its softnic segments behind: this run's fabric is ours alone.
  rm -f "/dev/shm/softnic-$SOFTNIC_FABRIC" "/dev/shm/softnic-$SOFTNIC_FABRIC.lock" "/dev/shm/softnic-$SOFTNIC_FABRIC"-*
  if [ "$rc" = 77 ]; then
    skip "$(grep -m1 '^SKIPPED:' "$log" | sed 's/^SKIPPED: //')"
  fi
  if [ "$rc" != 0 ]; then
    echo "$prog: $size $mode run $rep failed with status $rc; last lines of $log:" >&2
    tail -n 20 "$log" >&2
    exit 1
  fi
  check_transport "$log"
  line=$(grep -m1 '^median ' "$log") || die "no median line in $log"
  time_us=$(sed -n 's/.* time_us=\([^ ]*\).*/\1/p' <<<"$line")
  algbw=$(sed -n 's/.* algbw_GBps=\([^ ]*\).*/\1/p' <<<"$line")
  busbw=$(sed -n 's/.* busbw_GBps=\([^ ]*\).*/\1/p' <<<"$line")
  if [ "$mode" != untraced ]; then
    [ -d "$exp" ] || die "the profiler wrote no experiment directory $exp (see $log)"
    if [ "$rep" = 1 ] && [ "$mode" = "$last_mode" ]; then  # kept for the analysis
      mv "$exp" "$OUT/experiments/$size-$mode-r$rep" || die "cannot move $exp to $OUT/experiments"
      exp=$OUT/experiments/$size-$mode-r$rep
    fi
    tbytes=$(du -sb "$exp" | cut -f1)
    local info=$OUT/info/$size-$mode-r$rep.txt
    "$S" info "$exp" >"$info" 2>&1 || die "sigmatrace info $exp failed: $(head -n1 "$info")"
    # First line: "experiment DIR: P processes, T threads, E events, D dropped"
    read -r procs events dropped < <(awk 'NR == 1 { for (i = 1; i <= NF; i++) { if ($(i + 1) ~ /^processes/) p = $i; if ($(i + 1) ~ /^events/) e = $i; if ($(i + 1) ~ /^dropped/) d = $i } print p, e, d; exit }' "$info")
    [ "$rep" = 1 ] || rm -f "$info"
    [ "$exp" = "$OUT/work/$size-$mode-r$rep" ] && rm -rf "$exp"
  fi
  echo "$size,$bytes,$mode,$rep,$ranks,$it,$time_us,$algbw,$busbw,$tbytes,$procs,$events,$dropped,logs/$size-$mode-r$rep.log" >>"$CSV"
  printf '  %-5s %-9s run %d: %10s us/op  busbw %7s GB/s  trace %10s  events %10s  dropped %s\n' "$size" "$mode" "$rep" "$time_us" "$busbw" "$tbytes" "$events" "$dropped"
}

echo "NCCL: $NCCL_LIB; softnic: $SOFTNIC; $ranks ranks on $gpus GPUs; sizes: $sizes; modes: $modes_all; $reps runs each"
for size in $sizes; do
  for rep in $(seq 1 "$reps"); do
    for mode in $modes_all; do
      run_one "$size" "$mode" "$rep"
    done
  done
done
rm -rf "$OUT/work"

# ---- summary ------------------------------------------------------------------------------------------
col() {  # SIZE MODE COLUMN -> values of that column
  awk -F, -v s="$1" -v m="$2" -v c="$3" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next } $1 == s && $3 == m && $k != "n/a" { print $k }' "$CSV"
}
first_log=$OUT/logs/$(awk '{ print $1 }' <<<"$sizes")-untraced-r1.log
nccl_version=$(sed -n 's/^nccl_version=\([^ ]*\).*/\1/p' "$first_log" | head -n1)
net_line=$(grep -m1 -E 'NET/IB : Using|Using network IB' "$first_log" | sed 's/.*NCCL INFO //')
gpu_names=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c | awk '{ $1 = $1 " x"; print }' | paste -sd, -)
{
  echo "### NCCL all-reduce over softnic (NET/IB), traced vs untraced"
  echo
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(hostname), ${gpu_names:-GPUs}, NCCL ${nccl_version:-?} ($NCCL_LIB), $ranks ranks (one process per GPU), float32 sum, out of place; providers \`$providers\`."
  echo "NCCL's network: \`${net_line:-see logs}\`."
  echo "Each configuration ran $reps times, interleaved (untraced, then each mode, repeated); a run's value is the median of $inner_reps timed repetitions of --iters all-reduces; the table gives the median over runs (min-max of the runs in brackets); overhead is against the untraced median of this invocation."
  echo
  echo "Command: \`bench/nccl/nccl_allreduce_overhead.sh $BUILD $OUT --ranks $ranks --sizes \"$sizes\" --reps $reps --modes \"$modes\" --providers $providers\`"
  echo
  echo "| size | mode | iters/run | time per all-reduce (us) | busbw (GB/s) | overhead | trace size | events | dropped |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
  for size in $sizes; do
    base=$(col "$size" untraced time_us | median)
    for mode in $modes_all; do
      t=$(col "$size" "$mode" time_us | median)
      range=$(col "$size" "$mode" time_us | minmax)
      bw=$(col "$size" "$mode" busbw_GBps | median)
      it=$(col "$size" "$mode" iters | head -n1)
      if [ "$mode" = untraced ]; then
        ovh="-" tsize="-" ev="-" dr="-"
      else
        ovh=$(awk -v t="$t" -v b="$base" 'BEGIN { if (b + 0 > 0 && t != "n/a") printf "%+.1f %%\n", (t / b - 1) * 100; else print "n/a" }')
        tsize=$(human "$(col "$size" "$mode" trace_bytes | median)")
        ev=$(col "$size" "$mode" events | median)
        dr=$(col "$size" "$mode" dropped | sort -g | tail -n1)
      fi
      echo "| $size | $mode | $it | $(fmt "$t" %.1f) ($range) | $(fmt "$bw" %.2f) | $ovh | $tsize | $ev | ${dr:-n/a} |"
    done
  done
  echo
  echo "Trace size: \`du -b\` of the experiment directory (median over runs); events: all processes of the run, the launcher included (\`sigmatrace info\`, median); dropped: the largest count of any run. Event counts by type: \`info/<size>-<mode>-r1.txt\`."
} >"$OUT/summary.md"

echo
cat "$OUT/summary.md"
echo
if have_analyze; then
  analyze_kept || exit 1
  echo "analysis of the kept experiments: $OUT/analysis/ (summary.txt, qp_topology.csv, qp_stats.csv, rank_matrix.csv, qp_bandwidth.csv)"
else
  echo "sigmatrace analyze is not built here (no SQLite): the kept experiments in $OUT/experiments/ are left for later:"
  echo "  copy $OUT to a machine with a full build and run: bench/nccl/nccl_allreduce_overhead.sh BUILD_DIR $OUT --analyze-only"
fi
echo "results: $CSV, $OUT/summary.md"
