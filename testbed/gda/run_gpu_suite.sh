#!/usr/bin/env bash
# The GPU suite of gda + softnic devx, for a fresh GPU machine. Run from the repository root:
#     OUT=DIR testbed/gda/run_gpu_suite.sh
# Everything runs with CUDA_MODULE_LOADING=LAZY (CUDA's default) and under MPS, which is
# restarted before every GPU step so that one failure never leaves the next step a busy device.
# Steps (logs and JSON in $LOGS, packed into $OUT/gpu-logs.tar.gz; summary in $OUT/summary.txt):
#   1. environment; 2. configure; 3. build (softnic, gda_bench, gda_probe, gda_devx_host_test)
#   4. the CPU devx test softnic.devx_host
#   5. rounds 1..GDA_ROUNDS (default 3): each GPU ctest (ctest -L gpu, one test at a time, each with
#      a fresh MPS daemon from ctest's gda_mps fixture) and
#      the four microbenchmarks (1000 warm-up + 5000 measured, every result verified)
#   6. stage times: Put+Quiet with SOFTNIC_DEVX_STATS=1 (where the emulator's time goes)
#   7. the long run: 100 000 iterations of each benchmark
#   8. the four microbenchmarks with the NIC buffers (SQ, CQ, doorbell records) in host memory
#   9. five pairs side by side, GDA_SIDE_REPS times (default 2)
# Exit status: 0 when every step passed.
set -u
ROOT=$(pwd)
if [ ! -f "$ROOT/testbed/gda/run_gpu_suite.sh" ]; then
  echo "run me from the repository root (testbed/gda/run_gpu_suite.sh)"; exit 2
fi
OUT=${OUT:-$ROOT/gpu-results}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOGS=${LOGS:-/tmp/gda-suite-logs}
rm -rf "$LOGS"; mkdir -p "$LOGS"
exec > >(tee "$OUT/suite.log") 2>&1
T0=$(date +%s)
declare -a SUMMARY=()
FAILED=0
export CUDA_MODULE_LOADING=LAZY
note() { echo; echo "=== [$(( $(date +%s) - T0 ))s] $*"; }
record() {  # record STEP STATUS DETAIL
  SUMMARY+=("$(printf '%-40s %-5s %s' "$1" "$2" "$3")")
  [ "$2" = FAIL ] && FAILED=1
  echo ">>> $1: $2 $3"
}
mps_stop() { echo quit | nvidia-cuda-mps-control >/dev/null 2>&1; for _ in $(seq 50); do pgrep -x nvidia-cuda-mps >/dev/null 2>&1 || pgrep -f nvidia-cuda-mps-server >/dev/null 2>&1 || break; sleep 0.1; done; }
finish() {
  [ "${MPS:-0}" = 1 ] && mps_stop
  {
    echo "gda GPU suite summary (total $(( $(date +%s) - T0 )) s, CUDA_MODULE_LOADING=$CUDA_MODULE_LOADING)"
    printf '%s\n' "${SUMMARY[@]}"
    [ $FAILED = 0 ] && echo "OVERALL: PASS" || echo "OVERALL: FAIL"
  } | tee "$OUT/summary.txt"
  tar -C "$LOGS" -czf "$OUT/gpu-logs.tar.gz" . 2>/dev/null
  exit $FAILED
}
trap finish EXIT

note "1. environment"
{
  date -u; uname -a; id
  nvidia-smi 2>&1 | head -20
  nvcc --version 2>&1 | tail -2
  cmake --version | head -1; g++ --version | head -1; nproc
  git -C "$ROOT" log -1 --oneline 2>/dev/null
} > "$LOGS/env.txt" 2>&1
cat "$LOGS/env.txt"

note "2. configure"
B=${BUILD_DIR:-$ROOT/build-gpu}
if timeout 240 cmake -S "$ROOT" -B "$B" -DCMAKE_BUILD_TYPE=Release > "$LOGS/configure.log" 2>&1; then
  record configure PASS "root project in $B"
else
  tail -15 "$LOGS/configure.log"
  echo "root project did not configure here (see configure.log); falling back to testbed/gda standalone"
  B=$ROOT/build-gpu-gda
  if timeout 180 cmake -S "$ROOT/testbed/gda" -B "$B" -DCMAKE_BUILD_TYPE=Release > "$LOGS/configure-gda.log" 2>&1; then
    record configure PASS "root FAILED (configure.log); testbed/gda standalone in $B"
  else
    tail -30 "$LOGS/configure-gda.log"
    record configure FAIL "see configure.log, configure-gda.log"
    exit
  fi
fi

note "3. build"
TARGETS="softnic gda_bench gda_bench_static gda_probe gda_devx_host_test"
# The root project also has the profiler: the traced GPU tests (gda.doorbells_traced*) need it.
[ "$B" != "$ROOT/build-gpu-gda" ] && TARGETS="$TARGETS sigmatrace sigmatrace_cli doorbell_trace_check"
if timeout 400 cmake --build "$B" -j"${JOBS:-16}" --target $TARGETS > "$LOGS/build.log" 2>&1; then
  record build PASS "$B"
else
  grep -E "error|Error" "$LOGS/build.log" | head -30
  record build FAIL "see build.log"
  exit
fi
LIBDIR=$B/softnic
BENCH=$(find "$B" -name gda_bench -type f -perm -u+x | head -1)
PROBE=$(find "$B" -name gda_probe -type f -perm -u+x | head -1)
PAIR=$ROOT/testbed/gda/tests/run_gda_pair.sh

export CUDA_MPS_PIPE_DIRECTORY=/tmp/gda-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/gda-mps-log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
MPS=0
mps_restart() {  # a fresh MPS daemon for every GPU step
  mps_stop
  if nvidia-cuda-mps-control -d >> "$LOGS/mps.log" 2>&1; then MPS=1; sleep 0.5; return 0; fi
  MPS=0; return 1
}
if mps_restart; then record mps PASS "daemon restarted before every GPU step"
else record mps FAIL "nvidia-cuda-mps-control -d failed (mps.log): the PEs would time-slice the GPU"; fi

note "4. CPU devx test"
timeout 60 ctest --test-dir "$B" -R '^softnic\.devx_host\.' --output-on-failure > "$LOGS/ctest-devx-host.log" 2>&1
rc=$?; tail -3 "$LOGS/ctest-devx-host.log"
[ $rc = 0 ] && record "ctest softnic.devx_host (CPU)" PASS "" || record "ctest softnic.devx_host (CPU)" FAIL "ctest-devx-host.log"

# json_rows FILE: one summary line per benchmark of a gda_bench JSON file.
json_rows() {
  [ -f "$1" ] && python3 - "$1" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1])):
    if not r.get("run", True):
        print(f"  {r['label']:<16} not run: {r['reason']}"); continue
    f = lambda k: "-" if r[k] is None else f"{r[k]:.2f}"
    print(f"  {r['label']:<16} median {f('median_us')} p99 {f('p99_us')} min {f('min_us')} max {f('max_us')} us, "
          f"{r['measured']}/{r['iterations']} measured, verified {r['verified']}")
PY
}
# bench STEP TAG WARMUP ITERS [env...]: one pair running all four benchmarks.
bench() {
  local step=$1 tag=$2 warm=$3 iters=$4; shift 4
  mps_restart
  env "$@" GDA_PAIR_TAG="$tag" timeout 300 "$PAIR" "$PROBE" "$BENCH" "$LIBDIR" all "$warm" "$iters" "$LOGS" > "$LOGS/$tag.log" 2>&1
  local rc=$?
  grep -E "median|not run|measured|gave up|PASSED|FAILED" "$LOGS/$tag.log" | head -20
  if [ $rc = 0 ]; then record "$step" PASS "$LOGS/gda_${tag}_pe0.json"; else record "$step" FAIL "rc $rc, $tag.log"; fi
  while read -r line; do SUMMARY+=("$line"); done < <(json_rows "$LOGS/gda_${tag}_pe0.json")
  return $rc
}

ROUNDS=${GDA_ROUNDS:-3}
for round in $(seq "$ROUNDS"); do
  note "5. round $round of $ROUNDS: ctest -L gpu, one test at a time, then the microbenchmarks"
  round_ok=1
  for t in $(ctest --test-dir "$B" -L '^gpu$' -N | awk '/Test +#/ {print $3}' | grep -v '^gda\.mps_'); do
    # ctest's gda_mps fixture (tests/mps.sh) gives each test a fresh MPS daemon and stops it after.
    timeout 100 ctest --test-dir "$B" -R "^${t//./\\.}\$" -V > "$LOGS/ctest-$t-r$round.log" 2>&1
    rc=$?
    if grep -q "Skipped\|skipped:" "$LOGS/ctest-$t-r$round.log"; then record "r$round ctest $t" FAIL "skipped on a GPU machine"; round_ok=0
    elif [ $rc = 0 ]; then record "r$round ctest $t" PASS ""
    else record "r$round ctest $t" FAIL "ctest-$t-r$round.log"; round_ok=0; fi
  done
  bench "r$round benchmarks 1000+5000" "all_r$round" 1000 5000 || round_ok=0
  if [ $round_ok = 0 ] && [ "${GDA_KEEP_GOING:-0}" != 1 ]; then
    note "round $round failed: the remaining rounds are skipped (GDA_KEEP_GOING=1 runs them)"; break
  fi
done

note "6. stage times (Put+Quiet, SOFTNIC_DEVX_STATS=1)"
mps_restart
SOFTNIC_DEVX_STATS=1 GDA_PAIR_TAG=stages timeout 120 "$PAIR" "$PROBE" "$BENCH" "$LIBDIR" put 1000 5000 "$LOGS" > "$LOGS/stages.log" 2>&1
rc=$?
grep -E "median|stage times|engine and GPU|  +[A-Za-z].* mean " "$LOGS/stages.log"
[ $rc = 0 ] && record "stage times" PASS "stages.log" || record "stage times" FAIL "rc $rc, stages.log"

note "7. long run: 1000 warm-up + 100000 measured iterations of each benchmark"
GDA_PAIR_TIMEOUT_S=250 bench "long run 100000" long 1000 100000

note "8. NIC buffers (SQ, CQ, doorbell records) in host memory: 1000 + 5000"
GDA_NIC_BUF=host bench "benchmarks, NIC buffers in host memory" hostbuf 1000 5000

# Ten processes on 16 cores: each pair's whole run may take longer than one pair alone, so the
# pair timeout is the long run's (barriers give up 15 s before it).
SIDE_REPS=${GDA_SIDE_REPS:-2}
for rep in $(seq "$SIDE_REPS"); do
  note "9. five pairs side by side (1000 + 5000 each), repetition $rep of $SIDE_REPS"
  mps_restart
  pids=()
  for k in 1 2 3 4 5; do
    GDA_PAIR_TIMEOUT_S=250 GDA_PAIR_TAG=side${rep}_$k timeout 300 "$PAIR" "$PROBE" "$BENCH" "$LIBDIR" all 1000 5000 "$LOGS" > "$LOGS/side${rep}_$k.log" 2>&1 &
    pids+=($!)
  done
  side_ok=0
  for k in 1 2 3 4 5; do
    wait "${pids[$((k-1))]}" && side_ok=$((side_ok+1))
    while read -r line; do SUMMARY+=("  side${rep}_$k$line"); done < <(json_rows "$LOGS/gda_side${rep}_${k}_pe0.json")
  done
  [ $side_ok = 5 ] && record "five pairs side by side ($rep)" PASS "5 of 5 verified" || record "five pairs side by side ($rep)" FAIL "$side_ok of 5 passed (side${rep}_*.log)"
done

cat > "$LOGS/commands.txt" <<CMDS
export CUDA_MODULE_LOADING=LAZY CUDA_MPS_PIPE_DIRECTORY=/tmp/gda-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/gda-mps-log
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release
cmake --build build-gpu -j16 --target softnic gda_bench gda_bench_static gda_probe gda_devx_host_test sigmatrace sigmatrace_cli doorbell_trace_check
nvidia-cuda-mps-control -d        (restarted before every step: echo quit | nvidia-cuda-mps-control)
ctest --test-dir build-gpu -R '^gda\.put_get_fadd_barrier$' -V ; ctest --test-dir build-gpu -R '^gda\.pingpong$' -V
GDA_PAIR_TAG=all_r1 testbed/gda/tests/run_gda_pair.sh $PROBE $BENCH $LIBDIR all 1000 5000 \$LOGS
  = LD_LIBRARY_PATH=$LIBDIR SOFTNIC_SPIN_US=200000 SOFTNIC_DEVX_SPIN_US=1000000 SOFTNIC_DEBUG=2 \\
    gda_bench --pe {1,0} --npes 2 --dir <tmp> --test all --warmup 1000 --iters 5000 --barrier-timeout 35 --json \$LOGS/gda_all_r1_pe{1,0}.json
SOFTNIC_DEVX_STATS=1 GDA_PAIR_TAG=stages testbed/gda/tests/run_gda_pair.sh ... put 1000 5000 \$LOGS
GDA_PAIR_TIMEOUT_S=250 GDA_PAIR_TAG=long testbed/gda/tests/run_gda_pair.sh ... all 1000 100000 \$LOGS
GDA_NIC_BUF=host GDA_PAIR_TAG=hostbuf testbed/gda/tests/run_gda_pair.sh ... all 1000 5000 \$LOGS
five of, twice: GDA_PAIR_TIMEOUT_S=250 GDA_PAIR_TAG=side\$rep_\$k testbed/gda/tests/run_gda_pair.sh ... all 1000 5000 \$LOGS &
CMDS
