#!/usr/bin/env bash
# The nvtx provider on NCCL's own ranges (label gpu): torch_nccl.py (PyTorch's NCCL process group,
# one rank) under `sigmatrace profile`, analysed, and checked (check_torch_nccl.py); its output must
# equal the untraced run's.
# usage: run_torch_nccl.sh SIGMATRACE [STEPS]   (exit 77: no python3 with torch and NCCL, or no GPU)
# TORCH_NCCL_KEEP=DIR keeps the experiment (the recorded trace CI analyses comes from there).
set -u
st=$1 steps=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/run_traced_python.sh"
run_traced_python torch-nccl "$st" "$here/torch_nccl.py" "$steps"
if [ -n "${TORCH_NCCL_KEEP:-}" ]; then
  mkdir -p "$TORCH_NCCL_KEEP" && cp "$w"/exp/*.sgt "$w"/exp/manifest.json "$TORCH_NCCL_KEEP"/ && cp "$w/plain.out" "$TORCH_NCCL_KEEP/program.out"
fi
"${PYTHON:-python3}" "$here/../checks/check_torch_nccl.py" "$w/exp/aggregate.json" "$w/plain.out"
