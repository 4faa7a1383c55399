#!/usr/bin/env bash
# Real NVSHMEM over softnic on a fresh GPU machine, from the repository root (docs/nvshmem.md):
#     OUT=DIR [PERFTESTS=DIR [FIG4=0]] [REPS=3] testbed/nvshmem/run_gpu_suite.sh
# 1. configure and build (softnic, the profiler, nvshmem_ops, the checks, gda), against the
#    installed NVSHMEM (NVSHMEM_HOME, or the nvidia-nvshmem Python package);
# 2. the GPU tests, gda's and NVSHMEM's (ctest -L gpu: each PE count untraced and traced, every
#    WQE checked against softnic's log);
#    with PERFTESTS (NVSHMEM's perftest binaries), nvtx.nvshmem_perftest among them;
# 3. with PERFTESTS, unless FIG4=0: the Fig. 4 table (bench/nvshmem).
# Writes OUT/summary.txt, OUT/logs.tar.gz and, with 3, OUT/fig4.md and OUT/results.tsv.
# Exit status 0 when every step passed.
set -u
root=$(pwd)
[ -f "$root/testbed/nvshmem/run_gpu_suite.sh" ] || { echo "run me from the repository root"; exit 2; }
OUT=${OUT:-$root/nvshmem-results}
mkdir -p "$OUT/logs"
OUT=$(cd "$OUT" && pwd)
L=$OUT/logs
B=${BUILD_DIR:-$root/build-gpu}
T0=$(date +%s)
failed=0
summary=()
step() { summary+=("$(printf '%-32s %-5s %s' "$1" "$2" "$3")"); [ "$2" = FAIL ] && failed=1; echo ">>> [$(( $(date +%s) - T0 ))s] $1: $2 $3"; }
finish() {
  { printf '%s\n' "${summary[@]}"; [ $failed = 0 ] && echo "OVERALL: PASS" || echo "OVERALL: FAIL"; } | tee "$OUT/summary.txt"
  tar -C "$L" -czf "$OUT/logs.tar.gz" . 2>/dev/null
  exit $failed
}
trap finish EXIT

nv=${NVSHMEM_HOME:-$(python3 -c 'import nvidia.nvshmem as m; print(list(m.__path__)[0])' 2>/dev/null)}
if cmake -S "$root" -B "$B" -DCMAKE_BUILD_TYPE=Release ${nv:+-DNVSHMEM_HOME=$nv} -DNVSHMEM_PERFTESTS="${PERFTESTS:-}" \
  > "$L/configure.log" 2>&1; then
  step configure PASS "NVSHMEM in ${nv:-(none found)}"
else
  step configure FAIL "see configure.log"; exit
fi
targets="softnic sigmatrace sigmatrace_cli nvshmem_ops nvshmem_hang moe_layer bfs_barrier wqe_oracle_check gda_bench gda_bench_static gda_probe gda_launch_errors doorbell_trace_check"
if cmake --build "$B" -j"$(nproc)" --target $targets > "$L/build.log" 2>&1; then
  step build PASS "$targets"
else
  tail -30 "$L/build.log"; step build FAIL "see build.log"; exit
fi
(cd "$B" && ctest -L '^gpu$' --output-on-failure --timeout 200 > "$L/ctest-gpu.log" 2>&1)
rc=$?
step "ctest -L gpu" "$([ $rc = 0 ] && echo PASS || echo FAIL)" "$(grep -E 'tests passed' "$L/ctest-gpu.log")"
if [ -n "${PERFTESTS:-}" ] && [ "${FIG4:-1}" != 0 ]; then
  export CUDA_MPS_PIPE_DIRECTORY=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/gda-mps-pipe} CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-/tmp/gda-mps-log}
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  echo quit | nvidia-cuda-mps-control >/dev/null 2>&1
  sleep 0.5
  nvidia-cuda-mps-control -d
  BUILD=$B bash "$root/bench/nvshmem/nvshmem_perftests.sh" OUT="$OUT/fig4" > "$L/fig4.log" 2>&1
  rc=$?
  echo quit | nvidia-cuda-mps-control >/dev/null 2>&1
  cp "$OUT/fig4/fig4.md" "$OUT/fig4/results.tsv" "$OUT/" 2>/dev/null
  step "Fig. 4 (perftests)" "$([ $rc = 0 ] && echo PASS || echo FAIL)" "REPS=${REPS:-3}; table in fig4.md"
else
  step "Fig. 4 (perftests)" SKIP "PERFTESTS not set, or FIG4=0"
fi
