#!/usr/bin/env bash
# The paper's two case studies on real NVSHMEM over softnic, from a fresh GPU machine, in one go
# (docs/case-studies.md). From the repository root:
#     examples/nvshmem/run_case_studies.sh OUT
# 1. configures and builds what the studies need (BUILD_DIR, default build-gpu) against the
#    installed NVSHMEM (NVSHMEM_HOME, or the nvidia-nvshmem Python package);
# 2. starts the MPS daemon (4 PEs share the GPU), and for each study (moe, bfs): runs it untraced,
#    then traced with WQE recovery (every WQE softnic executed checked in the trace), analyses it,
#    checks the finding against what the program injected, writes report.html and its figures,
#    and, where `sigmatrace sql` is built (SQLite), runs the study's queries (queries/*.sql);
# 3. stops the daemon.
# Leaves OUT/<study>/{untraced,traced}/ (logs; traced/exp is the experiment, with report.html and
# figures/) and OUT/summary.txt. Exit status 0 when every step passed. MOE_ARGS and BFS_ARGS
# replace each program's arguments (case_study_args.sh: the tests'); STUDIES="bfs" runs one.
set -u
root=$(pwd)
[ -f "$root/examples/nvshmem/run_case_studies.sh" ] || { echo "run me from the repository root"; exit 2; }
out=${1:?usage: run_case_studies.sh OUT}
mkdir -p "$out" && out=$(cd "$out" && pwd)
B=${BUILD_DIR:-$root/build-gpu}
here=$root/examples/nvshmem
source "$here/case_study_args.sh"
failed=0
summary=()
step() { summary+=("$(printf '%-28s %-5s %s' "$1" "$2" "$3")"); [ "$2" = FAIL ] && failed=1; echo ">>> $1: $2 $3"; }
finish() {
  [ -n "${mps_started:-}" ] && bash "$root/tests/gpu/gda/mps.sh" stop >/dev/null 2>&1
  { printf '%s\n' "${summary[@]}"; [ $failed = 0 ] && echo "OVERALL: PASS" || echo "OVERALL: FAIL"; } | tee "$out/summary.txt"
  exit $failed
}
trap finish EXIT

nv=${NVSHMEM_HOME:-$(python3 -c 'import nvidia.nvshmem as m; print(list(m.__path__)[0])' 2>/dev/null)}
cmake -S "$root" -B "$B" -DCMAKE_BUILD_TYPE=Release ${nv:+-DNVSHMEM_HOME=$nv} > "$out/configure.log" 2>&1 || { step configure FAIL "see configure.log"; exit; }
targets="softnic sigmatrace sigmatrace_cli moe_layer bfs_barrier wqe_oracle_check gda_probe"
if cmake --build "$B" -j"$(nproc)" --target $targets > "$out/build.log" 2>&1; then step build PASS "$targets"
else tail -30 "$out/build.log"; step build FAIL "see build.log"; exit; fi
st=$B/bin/sigmatrace

export CUDA_MPS_PIPE_DIRECTORY=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/gda-mps-pipe} CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-/tmp/gda-mps-log}
if bash "$root/tests/gpu/gda/mps.sh" start "$B/bin/gda_probe" > "$out/mps.log" 2>&1; then mps_started=1; step mps PASS ""
else step mps FAIL "$(tail -1 "$out/mps.log")"; exit; fi

for study in ${STUDIES:-moe bfs}; do
  case $study in
    moe) program=moe_layer; read -r -a args <<< "$MOE_ARGS" ;;
    bfs) program=bfs_barrier; read -r -a args <<< "$BFS_ARGS" ;;
  esac
  program=$(find "$B" -name "$program" -type f -perm -u+x | head -1)
  d=$out/$study
  rm -rf "$d" && mkdir -p "$d"
  "$root/testbed/nvshmem/run_nvshmem.sh" --build "$B" --nvshmem "$nv" --timeout 60 --out "$d/untraced" 4 -- "$program" "${args[@]}" > "$d/untraced.log" 2>&1
  rc=$?
  step "$study untraced" "$([ $rc = 0 ] && echo PASS || echo FAIL)" "$(grep -c PASS "$d"/untraced/pe*.log | awk -F: '{n+=$2} END {print n+0}') of 4 PEs PASS"
  SIGMATRACE_DOORBELLS=wqe "$root/testbed/nvshmem/run_nvshmem.sh" --build "$B" --nvshmem "$nv" --timeout 60 --trace --check --out "$d/traced" 4 -- \
    "$program" "${args[@]}" --expected "$d/expected.json" > "$d/traced.log" 2>&1
  rc=$?
  step "$study traced, WQEs checked" "$([ $rc = 0 ] && echo PASS || echo FAIL)" "$(grep -E 'wqe_oracle_check' "$d/traced.log" | tail -1)"
  [ $rc = 0 ] || continue
  exp=$d/traced/exp
  "$st" analyze "$exp" > "$d/analyze.log" 2>&1; rc=$?
  step "$study analyze" "$([ $rc = 0 ] && echo PASS || echo FAIL)" ""
  python3 "$root/tests/gpu/checks/check_${study}_trace.py" "$d/expected.json" "$exp/aggregate.json" > "$d/check.log" 2>&1; rc=$?
  step "$study finding" "$([ $rc = 0 ] && echo PASS || echo FAIL)" "$(tail -1 "$d/check.log")"
  plots=()
  command -v chromium >/dev/null || command -v chromium-browser >/dev/null || command -v google-chrome >/dev/null || [ -n "${SIGMATRACE_CHROMIUM:-}" ] && plots=(--plots "$exp/figures")
  "$st" report "$exp" --html "${plots[@]}" > "$d/report.log" 2>&1; rc=$?
  step "$study report" "$([ $rc = 0 ] && echo PASS || echo FAIL)" "$(tail -1 "$d/report.log")"
  if [ -f "$exp/trace.sqlite" ]; then
    mkdir -p "$d/queries"
    for q in "$here"/queries/*.sql; do "$st" sql "$exp" "$(cat "$q")" > "$d/queries/$(basename "$q" .sql).txt" 2>&1; done
    python3 "$root/tests/gpu/checks/check_case_study_sql.py" "$study" "$st" "$exp" "$d/expected.json" "$here/queries" > "$d/queries/check.log" 2>&1; rc=$?
    step "$study queries" "$([ $rc = 0 ] && echo PASS || echo FAIL)" "$(tail -1 "$d/queries/check.log"); results in $d/queries"
  else
    step "$study queries" SKIP "no trace.sqlite (built without SQLite): run them where the experiment is analysed"
  fi
done
