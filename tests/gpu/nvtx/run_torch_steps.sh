#!/usr/bin/env bash
# The nvtx provider on PyTorch (label gpu): torch_steps.py under `sigmatrace profile`, analysed,
# and checked (check_torch_steps.py); its output must equal the untraced run's.
# usage: run_torch_steps.sh SIGMATRACE [STEPS]   (exit 77: no python3 with torch, or no GPU)
set -u
st=$1 steps=${2:-5}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/run_traced_python.sh"
run_traced_python torch-nvtx "$st" "$here/torch_steps.py" "$steps"
[ -n "${TORCH_NVTX_KEEP:-}" ] && cp -r "$w/exp" "$TORCH_NVTX_KEEP"
"${PYTHON:-python3}" "$here/../checks/check_torch_steps.py" "$w/exp/aggregate.json" "$steps"
