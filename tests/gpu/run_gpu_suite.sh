#!/usr/bin/env bash
# The GPU suite, on a fresh GPU machine, from the repository root:
#     OUT=DIR [ROUNDS=1] [PERFTESTS=DIR [FIG4=0] [REPS=3]] [NCCL_TESTS=DIR] [BUILD_DIR=build-gpu] tests/gpu/run_gpu_suite.sh
# 1. the environment (GPU, driver, toolkits);
# 2. configure the root project against the installed NVSHMEM (NVSHMEM_HOME, or the nvidia-nvshmem
#    Python package) and build everything (the profiler, softnic, gda, the NVSHMEM programs, the
#    examples, the checkers);
# 3. the CPU tests of softnic's devx (softnic.devx_*), the GPU path's CPU stand-in;
# 4. every GPU test (ctest -L gpu) ROUNDS times, one test at a time, each with a fresh MPS daemon
#    from ctest's gda_mps fixture: gda's pairs, NVSHMEM's programs, the case studies, the NVTX
#    tests; a test that skips on a GPU machine counts as failed. With PERFTESTS (NVSHMEM's perftest
#    binaries, bench/nvshmem/build_perftests.sh) nvtx.nvshmem_perftest is among them, with
#    NCCL_TESTS (nccl-tests' binaries, bench/nccl/build_nccl_tests.sh) the nccl.* tests;
# 5. with PERFTESTS, unless FIG4=0: the Fig. 4 table of NVSHMEM's perftests
#    (bench/nvshmem/nvshmem_perftests.sh, REPS paired repetitions).
# The benchmarks themselves (gda's microbenchmarks, forwarding, WQE recovery) are bench/'s
# drivers (docs/performance.md), not part of the suite.
# Writes OUT/summary.txt (one line a step, then OVERALL: PASS or FAIL), OUT/logs.tar.gz, OUT/recorded/
# (the traced runs of nccl.all_reduce_2ranks and nccl.ddp_2ranks, for tests/gpu/recorded/data) and,
# with 5, OUT/fig4/. Exit status 0 when every step passed.
set -u
root=$(pwd)
[ -f "$root/tests/gpu/run_gpu_suite.sh" ] || { echo "run me from the repository root (tests/gpu/run_gpu_suite.sh)"; exit 2; }
OUT=${OUT:-$root/gpu-results}
mkdir -p "$OUT/logs"
OUT=$(cd "$OUT" && pwd)
L=$OUT/logs
B=${BUILD_DIR:-$root/build-gpu}
T0=$(date +%s)
failed=0
summary=()
export CUDA_MODULE_LOADING=LAZY CUDA_MPS_PIPE_DIRECTORY=/tmp/gda-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/gda-mps-log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
step() {  # step NAME PASS|FAIL|SKIP DETAIL
  summary+=("$(printf '%-44s %-5s %s' "$1" "$2" "$3")")
  [ "$2" = FAIL ] && failed=1
  echo ">>> [$(( $(date +%s) - T0 ))s] $1: $2 $3"
}
mps_stop() { echo quit | nvidia-cuda-mps-control >/dev/null 2>&1; sleep 0.5; }
finish() {
  mps_stop
  { echo "GPU suite ($(( $(date +%s) - T0 )) s, $(git -C "$root" log -1 --format=%h 2>/dev/null))"
    printf '%s\n' "${summary[@]}"
    [ $failed = 0 ] && echo "OVERALL: PASS" || echo "OVERALL: FAIL"; } | tee "$OUT/summary.txt"
  tar -C "$L" -czf "$OUT/logs.tar.gz" . 2>/dev/null
  exit $failed
}
trap finish EXIT

{ date -u; uname -a; nvidia-smi 2>&1 | head -15; nvcc --version 2>&1 | tail -2; cmake --version | head -1
  g++ --version | head -1; nproc; git -C "$root" log -1 --oneline 2>/dev/null; } > "$L/env.txt" 2>&1
head -12 "$L/env.txt"

nv=${NVSHMEM_HOME:-$(python3 -c 'import nvidia.nvshmem as m; print(list(m.__path__)[0])' 2>/dev/null)}
if cmake -S "$root" -B "$B" -DCMAKE_BUILD_TYPE=Release ${nv:+-DNVSHMEM_HOME=$nv} -DNVSHMEM_PERFTESTS="${PERFTESTS:-}" -DNCCL_TESTS="${NCCL_TESTS:-}" \
  > "$L/configure.log" 2>&1; then
  step configure PASS "NVSHMEM in ${nv:-(none found)}"
else
  tail -20 "$L/configure.log"; step configure FAIL "configure.log"; exit
fi
if cmake --build "$B" -j"$(nproc)" > "$L/build.log" 2>&1; then
  step build PASS "$B"
else
  grep -E "error|Error" "$L/build.log" | head -30; step build FAIL "build.log"; exit
fi

(cd "$B" && ctest -R '^softnic\.devx_' --output-on-failure --timeout 120 > "$L/ctest-devx.log" 2>&1)
rc=$?
step "ctest softnic.devx_* (CPU)" "$([ $rc = 0 ] && echo PASS || echo FAIL)" "$(grep -E 'tests passed' "$L/ctest-devx.log")"

ROUNDS=${ROUNDS:-1}
for round in $(seq "$ROUNDS"); do
  passed=0 total=0
  for t in $(cd "$B" && ctest -L '^gpu$' -N | awk '/Test +#/ {print $3}' | grep -v '^gda\.mps_'); do
    if [ "$t" = nvtx.nvshmem_perftest ] && [ -z "${PERFTESTS:-}" ]; then
      step "r$round $t" SKIP "needs NVSHMEM's perftest binaries: PERFTESTS=DIR"; continue
    fi
    if [[ $t == nccl.* ]] && [ -z "${NCCL_TESTS:-}" ]; then
      step "r$round $t" SKIP "needs nccl-tests' binaries: NCCL_TESTS=DIR"; continue
    fi
    log=$L/ctest-$t-r$round.log
    # The traces CI analyses (tests/gpu/recorded/data) are kept from these runs, in OUT/recorded.
    keep=()
    [ "$t" = nccl.all_reduce_2ranks ] && keep=(NCCL_TESTS_KEEP="$OUT/recorded/nccl_all_reduce_2ranks")
    [ "$t" = nccl.ddp_2ranks ] && keep=(DDP_KEEP="$OUT/recorded/nccl_ddp_2ranks")
    (cd "$B" && env "${keep[@]}" timeout 600 ctest -R "^${t//./\\.}\$" --output-on-failure > "$log" 2>&1)
    rc=$?
    total=$((total + 1))
    if grep -qE "\*\*\*Skipped|Not Run" "$log"; then step "r$round $t" FAIL "skipped on a GPU machine: $(grep -m1 -iE 'skipped:|SKIPPED' "$log")"
    elif [ $rc = 0 ]; then passed=$((passed + 1)); step "r$round $t" PASS ""
    else step "r$round $t" FAIL "$(basename "$log")"; fi
  done
  step "round $round of $ROUNDS: ctest -L gpu" "$([ $passed = $total ] && echo PASS || echo FAIL)" "$passed of $total passed"
done

if [ -n "${PERFTESTS:-}" ] && [ "${FIG4:-1}" != 0 ]; then
  nvidia-cuda-mps-control -d
  PERFTESTS=$PERFTESTS bash "$root/bench/nvshmem/nvshmem_perftests.sh" BUILD="$B" OUT="$OUT/fig4" REPS="${REPS:-3}" > "$L/fig4.log" 2>&1
  rc=$?
  mps_stop
  step "Fig. 4 (NVSHMEM perftests)" "$([ $rc = 0 ] && echo PASS || echo FAIL)" "REPS=${REPS:-3}; $OUT/fig4/table.md"
else
  step "Fig. 4 (NVSHMEM perftests)" SKIP "PERFTESTS not set, or FIG4=0"
fi
