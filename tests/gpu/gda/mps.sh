#!/usr/bin/env bash
# The MPS daemon as a ctest fixture for the GPU tests: two PEs on one GPU must run their kernels
# concurrently (without MPS they time-slice and a round trip takes milliseconds).
#   mps.sh start PROBE   a fresh daemon (a killed GPU process can leave the previous one unusable:
#                        "device busy"); exit 77 (skip) when there is no usable GPU or no MPS
#   mps.sh stop          quit the daemon this fixture started
# The pipe and log directories are CUDA_MPS_PIPE_DIRECTORY / CUDA_MPS_LOG_DIRECTORY (the tests
# get the same ones from ctest), default /tmp/gda-mps-pipe and /tmp/gda-mps-log.
set -u
export CUDA_MPS_PIPE_DIRECTORY=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/gda-mps-pipe}
export CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-/tmp/gda-mps-log}
quit() {
  echo quit | nvidia-cuda-mps-control >/dev/null 2>&1
  for _ in $(seq 50); do pgrep -f nvidia-cuda-mps >/dev/null 2>&1 || return 0; sleep 0.1; done
}
case "${1:-}" in
  start)
    probe=${2:?usage: mps.sh start PROBE}
    if ! out=$("$probe" 2>&1); then echo "$out"; exit 77; fi
    if ! command -v nvidia-cuda-mps-control >/dev/null; then
      echo "skipped: nvidia-cuda-mps-control not installed (the PEs would time-slice the GPU)"; exit 77
    fi
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    quit
    if ! nvidia-cuda-mps-control -d; then
      echo "skipped: nvidia-cuda-mps-control -d failed (not root?): the PEs would time-slice the GPU"; exit 77
    fi
    sleep 0.5
    echo "MPS daemon started (pipes in $CUDA_MPS_PIPE_DIRECTORY)"
    ;;
  stop)
    command -v nvidia-cuda-mps-control >/dev/null || exit 0
    quit
    echo "MPS daemon stopped"
    ;;
  *) echo "usage: mps.sh start PROBE | stop" >&2; exit 2 ;;
esac
