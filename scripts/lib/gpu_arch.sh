# shellcheck shell=bash
# Sourced by the scripts that build CUDA programs on the GPU machine.
# gpu_sm_arch: CUDA_ARCH when set, else the first GPU's compute capability as sm_XY (nvidia-smi),
# else sm_90 (Hopper: the H100 and H200).
gpu_sm_arch() {
  local cc
  if [ -n "${CUDA_ARCH:-}" ]; then echo "$CUDA_ARCH"; return; fi
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1)
  if [[ $cc =~ ^([0-9]+)\.([0-9]+)$ ]]; then echo "sm_${BASH_REMATCH[1]}${BASH_REMATCH[2]}"; else echo sm_90; fi
}
