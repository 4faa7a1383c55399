#!/usr/bin/env bash
# The nvtx provider on PyTorch (label gpu): torch_steps.py under `sigmatrace profile`, analysed,
# and checked (check_torch_steps.py); its output must equal the untraced run's.
# usage: run_torch_steps.sh SIGMATRACE [STEPS]   (exit 77: no python3 with torch, or no GPU)
set -u
st=$1 steps=${2:-5}
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}
w=$(mktemp -d /tmp/torch-nvtx.XXXXXX)
trap 'rm -rf "$w"' EXIT
"$py" "$here/torch_steps.py" "$steps" > "$w/plain.out" 2>&1
rc=$?
if [ $rc = 77 ]; then cat "$w/plain.out"; exit 77; fi
[ $rc = 0 ] || { cat "$w/plain.out"; echo "untraced run failed"; exit 1; }
SIGMATRACE_RUN_ID=torch-nvtx-$$ "$st" profile -o "$w/exp" -- "$py" "$here/torch_steps.py" "$steps" > "$w/traced.out" 2>&1 || {
  cat "$w/traced.out"; echo "traced run failed"; exit 1; }
cmp -s "$w/plain.out" "$w/traced.out" || { echo "output changed by tracing:"; diff "$w/plain.out" "$w/traced.out"; exit 1; }
"$st" analyze -q --no-sqlite "$w/exp" || exit 1
"$st" info "$w/exp" | head -3
[ -n "${TORCH_NVTX_KEEP:-}" ] && cp -r "$w/exp" "$TORCH_NVTX_KEEP"
"$py" "$here/check_torch_steps.py" "$w/exp/aggregate.json" "$steps"
