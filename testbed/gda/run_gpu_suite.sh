#!/usr/bin/env bash
# GPU suite for gda + softnic devx, for a fresh GPU machine. Run from the repository root:
#     testbed/gda/run_gpu_suite.sh
# Results (JSON + logs) go to $OUT (default ./gpu-results). Steps:
#   1. record the environment            -> $OUT/env.txt
#   2. configure (root project; if that fails, testbed/gda standalone) -> $OUT/configure*.log
#   3. build only softnic + gda targets (-j16)                          -> $OUT/build.log
#   4. start MPS (two processes' kernels then run concurrently)         -> $OUT/mps.log
#   5. the CPU devx test softnic.devx_host                              -> $OUT/ctest-devx-host.log
#   6. ctest -L gpu                                                     -> $OUT/ctest-gpu.log
#   7. the four microbenchmarks (1000 warm-up + 5000 measured each)     -> $OUT/gda_all_pe*.json, bench.log
#      (if 6/7 fail under MPS, they are retried without MPS into $OUT/no-mps)
#   8. summary: every step PASS/FAIL                                    -> $OUT/summary.txt
# Exit status: 0 when every step passed.
set -u
ROOT=$(pwd)
if [ ! -f "$ROOT/testbed/gda/run_gpu_suite.sh" ]; then
  echo "run me from the repository root (testbed/gda/run_gpu_suite.sh)"; exit 2
fi
OUT=${OUT:-$ROOT/gpu-results}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
exec > >(tee "$OUT/suite.log") 2>&1
T0=$(date +%s)
declare -a SUMMARY=()
FAILED=0
note() { echo; echo "=== [$(( $(date +%s) - T0 ))s] $*"; }
record() {  # record STEP STATUS DETAIL
  SUMMARY+=("$(printf '%-34s %-5s %s' "$1" "$2" "$3")")
  [ "$2" = FAIL ] && FAILED=1
  echo ">>> $1: $2 $3"
}
finish() {
  if [ "${MPS_STARTED:-0}" = 1 ]; then echo quit | nvidia-cuda-mps-control >/dev/null 2>&1; fi
  {
    echo "gda GPU suite summary (total $(( $(date +%s) - T0 )) s, results in $OUT)"
    printf '%s\n' "${SUMMARY[@]}"
    [ $FAILED = 0 ] && echo "OVERALL: PASS" || echo "OVERALL: FAIL"
  } | tee "$OUT/summary.txt"
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
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

note "2. configure"
B=$ROOT/build-gpu
if timeout 180 cmake -S "$ROOT" -B "$B" -DCMAKE_BUILD_TYPE=Release > "$OUT/configure.log" 2>&1; then
  record configure PASS "root project in build-gpu"
else
  tail -15 "$OUT/configure.log"
  echo "root project did not configure here (see configure.log); falling back to testbed/gda standalone"
  B=$ROOT/build-gpu-gda
  if timeout 180 cmake -S "$ROOT/testbed/gda" -B "$B" -DCMAKE_BUILD_TYPE=Release > "$OUT/configure-gda.log" 2>&1; then
    record configure PASS "root FAILED (configure.log); testbed/gda standalone in build-gpu-gda"
  else
    tail -30 "$OUT/configure-gda.log"
    record configure FAIL "see configure.log, configure-gda.log"
    exit
  fi
fi
grep -E "CUDA|gda" "$OUT"/configure*.log | tail -5

note "3. build (softnic, gda_bench, gda_probe, gda_devx_host_test)"
if timeout 300 cmake --build "$B" -j"${JOBS:-16}" --target softnic gda_bench gda_probe gda_devx_host_test > "$OUT/build.log" 2>&1; then
  record build PASS "$B"
else
  grep -E "error|Error" "$OUT/build.log" | head -30
  record build FAIL "see build.log"
  exit
fi
LIBDIR=$B/softnic
BENCH=$(find "$B" -name gda_bench -type f -perm -u+x | head -1)
PROBE=$(find "$B" -name gda_probe -type f -perm -u+x | head -1)

note "4. MPS"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/gda-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/gda-mps-log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
MPS_STARTED=0
SUDO=""
[ "$(id -u)" != 0 ] && sudo -n true 2>/dev/null && SUDO="sudo -n -E"
if command -v nvidia-cuda-mps-control >/dev/null && $SUDO nvidia-cuda-mps-control -d > "$OUT/mps.log" 2>&1; then
  MPS_STARTED=1
  sleep 1
  record mps PASS "daemon started (pipe $CUDA_MPS_PIPE_DIRECTORY)"
else
  cat "$OUT/mps.log" 2>/dev/null
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
  record mps WARN "not started: the two processes time-slice the GPU (latencies in ms, not us)"
fi

note "5. CPU devx test"
timeout 60 ctest --test-dir "$B" -R '^softnic\.devx_host$' --output-on-failure > "$OUT/ctest-devx-host.log" 2>&1
rc=$?; tail -5 "$OUT/ctest-devx-host.log"
[ $rc = 0 ] && record "ctest softnic.devx_host (CPU)" PASS "" || record "ctest softnic.devx_host (CPU)" FAIL "see ctest-devx-host.log"

# GPU tests and benchmarks; $1 = results subdirectory ("" or no-mps).
gpu_steps() {
  local sub=$1 dir="$OUT${1:+/$1}" tag="${1:+ [$1]}"
  mkdir -p "$dir"
  note "6. ctest -L gpu$tag"
  timeout 150 ctest --test-dir "$B" -L gpu -V > "$dir/ctest-gpu.log" 2>&1
  local rc=$?; tail -8 "$dir/ctest-gpu.log"
  local ok=0
  if grep -q "No tests were found" "$dir/ctest-gpu.log"; then record "ctest -L gpu$tag" FAIL "no test labelled gpu in $B"; ok=1
  elif grep -q "Skipped" "$dir/ctest-gpu.log"; then record "ctest -L gpu$tag" FAIL "tests were skipped: no usable CUDA device (see ctest-gpu.log)"
  elif [ $rc = 0 ]; then record "ctest -L gpu$tag" PASS "$(grep -E 'tests passed' "$dir/ctest-gpu.log")"
  else record "ctest -L gpu$tag" FAIL "see ${sub:+$sub/}ctest-gpu.log"; ok=1; fi
  note "7. microbenchmarks$tag (2 PEs on one GPU; 1000 warm-up + 5000 measured iterations)"
  timeout 180 "$ROOT/testbed/gda/tests/run_gda_pair.sh" "$PROBE" "$BENCH" "$LIBDIR" all 1000 5000 "$dir" > "$dir/bench.log" 2>&1
  rc=$?; cat "$dir/bench.log"
  if [ $rc = 0 ]; then record "benchmarks$tag" PASS "verified; JSON ${sub:+$sub/}gda_all_pe0.json"
  elif [ $rc = 77 ]; then record "benchmarks$tag" FAIL "skipped: no CUDA device"
  else record "benchmarks$tag" FAIL "rc $rc, see ${sub:+$sub/}bench.log"; ok=1; fi
  if [ -f "$dir/gda_all_pe0.json" ]; then
    echo "--- ${sub:+$sub/}gda_all_pe0.json"; cat "$dir/gda_all_pe0.json"
    while read -r line; do SUMMARY+=("  $line"); done < <(grep -o '"label": "[^"]*".*"p99_us": [0-9.]*' "$dir/gda_all_pe0.json" | sed 's/"pes.*"median_us"/median_us/; s/"//g')
  fi
  return $ok
}

if ! gpu_steps "" && [ "$MPS_STARTED" = 1 ] && [ $(( $(date +%s) - T0 )) -lt 200 ]; then
  note "GPU steps failed under MPS: stopping MPS and retrying without it (results in $OUT/no-mps)"
  echo quit | nvidia-cuda-mps-control >/dev/null 2>&1; MPS_STARTED=0; sleep 2
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
  gpu_steps no-mps
fi

# Also record the commands that produced the numbers.
cat > "$OUT/commands.txt" <<CMDS
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release   (fallback: cmake -S testbed/gda -B build-gpu-gda ...)
cmake --build $B -j16 --target softnic gda_bench gda_probe gda_devx_host_test
CUDA_MPS_PIPE_DIRECTORY=/tmp/gda-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/gda-mps-log nvidia-cuda-mps-control -d
ctest --test-dir $B -L gpu --output-on-failure
testbed/gda/tests/run_gda_pair.sh $PROBE $BENCH $LIBDIR all 1000 5000 \$OUT
  = LD_LIBRARY_PATH=$LIBDIR SOFTNIC_SPIN_US=200000 SOFTNIC_DEVX_SPIN_US=1000000 \\
    gda_bench --pe {1,0} --npes 2 --dir <tmp> --test all --warmup 1000 --iters 5000 --json \$OUT/gda_all_pe{1,0}.json
CMDS
