#!/usr/bin/env bash
# An NVSHMEM program over softnic: NPES processes launched by Open MPI's mpirun on this machine's
# GPU (under MPS, which the caller starts: the gda_mps ctest fixture, or tests/gpu/gda/mps.sh),
# each its own emulated host (SOFTNIC_HOST=pe<rank>, which softnic's platform stand-in also gives
# as the host name), so that NVSHMEM takes its remote transport: IBGDA, with GPU-rung doorbells.
#   run_nvshmem.sh [options] NPES -- PROGRAM ARGS...
#     --build DIR     the build tree with softnic and sigmatrace (default: build)
#     --nvshmem DIR   NVSHMEM's install (include/, lib/); default: the nvidia-nvshmem Python package
#     --out DIR       where the run leaves its files (default: a new directory in /tmp): pe<rank>.log,
#                     oracle/ (softnic's own log of the WQEs it executed), exp/ (the trace)
#     --trace         each PE under `sigmatrace profile --softnic -o OUT/exp` (SIGMATRACE_* from the
#                     environment)
#     --check         after a traced run: every WQE softnic executed must be in the trace, exactly
#                     (wqe_oracle_check)
#     --timeout S     for the whole run (default 120); then every PE is asked for a state dump
#                     (SIGUSR2: softnic's, with SOFTNIC_DEBUG=2) and stopped
# nvshmem_ops finds the unique id's file in NVSHMEM_OPS_UID_FILE; NVSHMEM's perftests bootstrap
# through MPI (NVSHMEMTEST_USE_UID_BOOTSTRAP=1). The NVSHMEM_* and SOFTNIC_* settings below are
# defaults: the environment's win.
# Exit: the program's status, the check's, 124 on a timeout, 77 (skip) without a GPU, MPI or NVSHMEM.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$root/build nvshmem="" out="" trace=0 check=0 timeout_s=120
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --nvshmem) nvshmem=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --trace) trace=1; shift ;;
    --check) check=1; shift ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --) shift; break ;;
    -*) echo "run_nvshmem.sh: unknown option $1" >&2; exit 2 ;;
    *) npes=$1; shift ;;
  esac
done
if [ -z "${npes:-}" ] || [ $# -eq 0 ]; then
  echo "usage: run_nvshmem.sh [--build DIR] [--nvshmem DIR] [--out DIR] [--trace] [--check] [--timeout S] NPES -- PROGRAM ARGS" >&2
  exit 2
fi
build=$(cd "$build" && pwd)
softnic=$build/softnic
if ! nvidia-smi -L >/dev/null 2>&1; then echo "skipped: no GPU (nvidia-smi -L failed)"; exit 77; fi
if ! command -v mpirun >/dev/null; then echo "skipped: no mpirun (Open MPI) to launch the PEs"; exit 77; fi
[ -n "$nvshmem" ] || nvshmem=$(python3 -c 'import nvidia.nvshmem as m; print(list(m.__path__)[0])' 2>/dev/null)
if [ ! -f "$nvshmem/lib/libnvshmem_host.so.3" ]; then echo "skipped: no NVSHMEM (libnvshmem_host.so.3) in '$nvshmem'"; exit 77; fi
if [ ! -f "$softnic/libsoftnic_platform.so.1" ]; then echo "run_nvshmem.sh: softnic is not built in $softnic" >&2; exit 2; fi
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [ "$npes" -gt "$gpus" ] && ! pgrep -f nvidia-cuda-mps-control >/dev/null 2>&1; then
  echo "run_nvshmem.sh: warning: $npes PEs on $gpus GPU(s) and no MPS daemon: their kernels time-slice the GPU (milliseconds a switch), so PEs that wait on each other crawl and their timings are the scheduler's (tests/gpu/gda/mps.sh start, or ctest's gda_mps fixture, starts one)"
fi
[ -n "$out" ] || out=$(mktemp -d /tmp/nvshmem-run.XXXXXX)
mkdir -p "$out/oracle"
out=$(cd "$out" && pwd)
rm -f "$out"/pe*.log "$out"/oracle/* "$out/nvshmem.uid"
exp=$out/exp

# One wrapper for every rank: the per-rank environment, then the program (traced or not).
wrapper=$out/pe-wrapper.sh
{
  echo '#!/usr/bin/env bash'
  echo 'r=${OMPI_COMM_WORLD_RANK:?not started by mpirun}'
  echo "exec > \"$out/pe\$r.log\" 2>&1"
  echo 'export SOFTNIC_HOST=pe$r'
  echo "export LD_LIBRARY_PATH=$softnic:$nvshmem/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
  echo "export SOFTNIC_WQE_LOG=$out/oracle SOFTNIC_FABRIC=\${SOFTNIC_FABRIC:-nvshmem-$$}"
  echo 'export SOFTNIC_DEVX_SPIN_US=${SOFTNIC_DEVX_SPIN_US:-1000000} SOFTNIC_DEBUG=${SOFTNIC_DEBUG:-2}'
  echo "export NVSHMEM_OPS_UID_FILE=$out/nvshmem.uid NVSHMEMTEST_USE_UID_BOOTSTRAP=\${NVSHMEMTEST_USE_UID_BOOTSTRAP:-1}"
  echo 'export NVSHMEM_DISABLE_P2P=${NVSHMEM_DISABLE_P2P:-1} NVSHMEM_IB_ENABLE_IBGDA=${NVSHMEM_IB_ENABLE_IBGDA:-1}'
  echo 'export NVSHMEM_REMOTE_TRANSPORT=${NVSHMEM_REMOTE_TRANSPORT:-none} NVSHMEM_IBGDA_NIC_HANDLER=${NVSHMEM_IBGDA_NIC_HANDLER:-gpu}'
  echo 'export NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=${NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME:-lo} NVSHMEM_DISABLE_NCCL=1 NVSHMEM_DISABLE_NVLS=1'
  if [ $trace = 1 ]; then
    echo "exec $build/bin/sigmatrace profile --softnic -o $exp -- \"\$@\""
  else
    echo "export LD_PRELOAD=$softnic/libsoftnic_platform.so.1\${LD_PRELOAD:+:\$LD_PRELOAD}"
    echo 'exec "$@"'
  fi
} > "$wrapper"
chmod +x "$wrapper"
[ $trace = 1 ] && rm -rf "$exp"
export SIGMATRACE_RUN_ID=${SIGMATRACE_RUN_ID:-nvshmem-$$}

mpirun --allow-run-as-root --oversubscribe --bind-to none --mca pml ob1 --mca btl self,vader,tcp -np "$npes" "$wrapper" "$@" &
mpi=$!
rc=""
for _ in $(seq $((timeout_s * 10))); do
  if ! kill -0 $mpi 2>/dev/null; then wait $mpi; rc=$?; break; fi
  sleep 0.1
done
if [ -z "$rc" ]; then
  echo "run_nvshmem.sh: the PEs did not finish within $timeout_s s: asking each for a state dump (SIGUSR2), then stopping them"
  pkill -USR2 -f -- "$1" 2>/dev/null
  sleep 3
  kill -TERM $mpi 2>/dev/null
  sleep 3
  kill -KILL $mpi 2>/dev/null
  pkill -KILL -f -- "$1" 2>/dev/null
  wait $mpi 2>/dev/null
  rc=124
fi
for f in "$out"/pe*.log; do
  [ -f "$f" ] || continue
  echo "---- $(basename "$f" .log)"
  cat "$f"
done
echo "---- mpirun: status $rc (files in $out)"
if [ $rc -eq 0 ] && [ $check = 1 ]; then
  "$build/tests/bin/wqe_oracle_check" "$exp" "$out/oracle"
  rc=$?
fi
exit $rc
