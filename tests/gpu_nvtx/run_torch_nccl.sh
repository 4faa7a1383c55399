#!/usr/bin/env bash
# The nvtx provider on NCCL's own ranges (label gpu): torch_nccl.py (PyTorch's NCCL process group,
# one rank) under `sigmatrace profile`, analysed, and checked (check_torch_nccl.py); its output must
# equal the untraced run's.
# usage: run_torch_nccl.sh SIGMATRACE [STEPS]   (exit 77: no python3 with torch and NCCL, or no GPU)
# TORCH_NCCL_KEEP=DIR keeps the experiment (the recorded trace CI analyses comes from there).
set -u
st=$1 steps=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}
w=$(mktemp -d /tmp/torch-nccl.XXXXXX)
trap 'rm -rf "$w"' EXIT
"$py" "$here/torch_nccl.py" "$steps" > "$w/plain.out" 2>&1
rc=$?
if [ $rc = 77 ]; then cat "$w/plain.out"; exit 77; fi
[ $rc = 0 ] || { cat "$w/plain.out"; echo "untraced run failed"; exit 1; }
SIGMATRACE_RUN_ID=torch-nccl-$$ "$st" profile -o "$w/exp" -- "$py" "$here/torch_nccl.py" "$steps" > "$w/traced.out" 2>&1 || {
  cat "$w/traced.out"; echo "traced run failed"; exit 1; }
cmp -s "$w/plain.out" "$w/traced.out" || { echo "output changed by tracing:"; diff "$w/plain.out" "$w/traced.out"; exit 1; }
"$st" analyze -q --no-sqlite "$w/exp" || exit 1
"$st" info "$w/exp" | head -3
if [ -n "${TORCH_NCCL_KEEP:-}" ]; then
  mkdir -p "$TORCH_NCCL_KEEP" && cp "$w"/exp/*.sgt "$w"/exp/manifest.json "$TORCH_NCCL_KEEP"/ && cp "$w/plain.out" "$TORCH_NCCL_KEEP/program.out"
fi
"$py" "$here/check_torch_nccl.py" "$w/exp/aggregate.json" "$w/plain.out"
