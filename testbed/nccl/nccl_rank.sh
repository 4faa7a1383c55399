#!/usr/bin/env bash
# One NCCL rank as its own emulated host over softnic, for any launcher (mpirun, srun):
#   mpirun -np N testbed/nccl/nccl_rank.sh [--build DIR] [--nccl-lib DIR] [--profile "OPTIONS"] -- PROGRAM ARGS...
# Rank r (OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID) becomes host node<r> (SOFTNIC_HOST, which
# softnic's platform stand-in also answers to gethostname, and NCCL_HOSTID): NCCL then takes the
# ranks for different hosts even when they share one GPU (its duplicate-GPU check compares host
# hashes) and connects them over its IB transport on softnic. With --profile the rank runs under
# `sigmatrace profile --softnic OPTIONS` (e.g. --profile "--mode full -o EXP"), else on softnic
# alone. --nccl-lib puts that NCCL first (the machine may have an older one on the loader's path).
# NCCL is kept to its IB network (no NVLink, PCIe P2P, shared memory, NVLS, MNNVL or GIN); a
# variable already set in the environment is left as it is. Ranks on one GPU need the MPS daemon
# (nvidia-cuda-mps-control -d): without it their kernels time-slice the GPU.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build nccl_lib="" profile="" have_profile=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=${2:?--build needs a directory}; shift 2 ;;
    --nccl-lib) nccl_lib=${2:?--nccl-lib needs a directory}; shift 2 ;;
    --profile) profile=${2?--profile needs options}; have_profile=1; shift 2 ;;
    --) shift; break ;;
    *) echo "nccl_rank.sh: unknown option $1 (usage: nccl_rank.sh [--build DIR] [--nccl-lib DIR] [--profile OPTIONS] -- PROGRAM ARGS)" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "nccl_rank.sh: no program given (nccl_rank.sh [options] -- PROGRAM ARGS)" >&2; exit 2; }
rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${SLURM_PROCID:-}}}
[ -n "$rank" ] || { echo "nccl_rank.sh: no rank in the environment (OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID): start it with a launcher" >&2; exit 2; }
[ -e "$build/softnic/libibverbs.so.1" ] || { echo "nccl_rank.sh: no softnic in $build/softnic (build the softnic target)" >&2; exit 2; }
[ -z "$nccl_lib" ] || [ -e "$nccl_lib/libnccl.so.2" ] || { echo "nccl_rank.sh: no libnccl.so.2 in $nccl_lib" >&2; exit 2; }

export SOFTNIC_HOST=node$rank NCCL_HOSTID=node$rank
# NCCL_RANK_GPUS=N: the ranks spread over N GPUs of the machine (rank r on GPU r mod N); nccl-tests
# and the like take the first GPU they see, as every rank is its own host.
if [ -n "${NCCL_RANK_GPUS:-}" ] && [ "$NCCL_RANK_GPUS" -gt 1 ] 2>/dev/null; then export CUDA_VISIBLE_DEVICES=$((rank % NCCL_RANK_GPUS)); fi
for kv in NCCL_NET=IB NCCL_IB_HCA=mlx5_0 NCCL_NET_PLUGIN=none NCCL_GIN_TYPE=0 NCCL_SOCKET_IFNAME=lo NCCL_NVLS_ENABLE=0 \
          NCCL_MNNVL_ENABLE=0 NCCL_CUMEM_ENABLE=0 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1; do
  name=${kv%%=*}
  [ -n "${!name:-}" ] || export "${kv?}"
done
[ -n "$nccl_lib" ] && export LD_LIBRARY_PATH=$nccl_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [ $have_profile = 1 ]; then
  # shellcheck disable=SC2086  # the profiler's options, as given
  exec "$build/bin/sigmatrace" profile --softnic --host "node$rank" $profile -- "$@"
fi
export LD_LIBRARY_PATH=$build/softnic${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_PRELOAD=$build/softnic/libsoftnic_platform.so.1${LD_PRELOAD:+:$LD_PRELOAD}
exec "$@"
