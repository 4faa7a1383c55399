#!/usr/bin/env bash
# Runs gda_bench as two PEs (two processes) over softnic on this machine's GPU and checks both
# verified their results. Exit 77 (skip) when there is no usable CUDA device.
# usage: run_gda_pair.sh PROBE BENCH SOFTNIC_LIBDIR TEST WARMUP ITERS [JSON_OUT_DIR]
# Environment: GDA_PAIR_TIMEOUT_S (default 50: below ctest's 70), GDA_DEVICE_TIMEOUT_S (gda_bench's
# bound on every device-side wait, default its own 10 s), GDA_BARRIER_TIMEOUT_S (bound on a
# barrier's wait for the peer's whole phase, default 15 s below the pair's timeout, so a silent
# peer is named before the pair is stopped), GDA_NIC_BUF (gpu or host: where SQ/CQ/doorbell
# records live, default gda_bench's gpu), GDA_UAR_MAP (driver or runtime: the CUDA API that maps
# the doorbell page, default gda_bench's driver), GDA_WRAP (a command the PEs run under, e.g.
# "sigmatrace profile -o DIR --"), GDA_PE_CPUS ("LIST0 LIST1": each PE, with its softnic engine
# threads, bound to its own CPU list with taskset, so that run-to-run placement leaves the
# timings; pollers then take CPUs outside the list, or SIGMATRACE_DOORBELL_CPUS), GDA_PAIR_TAG (names the JSON
# files and the fabric, for pairs run side by side), SOFTNIC_DEBUG (default 2: the devx engine
# dumps its state when a QP stalls and on SIGUSR2).
#
# A PE that fails, or a pair that outlives its timeout, never lingers to make the next test find
# the GPU busy: the survivors are asked for a state dump and every thread's backtrace (SIGUSR2),
# then stopped with SIGTERM and, after a grace period, SIGKILL.
set -u
probe=$1 bench=$2 libdir=$3 test=$4 warm=$5 iters=$6 outdir=${7:-}
timeout_s=${GDA_PAIR_TIMEOUT_S:-50}
barrier_s=${GDA_BARRIER_TIMEOUT_S:-$(( timeout_s > 25 ? timeout_s - 15 : 10 ))}
tag=${GDA_PAIR_TAG:-$test}
out=$("$probe" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 77 ] && exit 77
[ $rc -ne 0 ] && { echo "gda probe failed (rc $rc)"; exit 1; }
dir=$(mktemp -d /tmp/gda-pair.XXXXXX)
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SOFTNIC_FABRIC="gda-$$"
export SOFTNIC_SPIN_US=${SOFTNIC_SPIN_US:-200000}
export SOFTNIC_DEVX_SPIN_US=${SOFTNIC_DEVX_SPIN_US:-1000000}
export SOFTNIC_DEBUG=${SOFTNIC_DEBUG:-2}
j0=() ; j1=()
if [ -n "$outdir" ]; then j0=(--json "$outdir/gda_${tag}_pe0.json"); j1=(--json "$outdir/gda_${tag}_pe1.json"); fi
declare -A pid=() rc=()
read -r -a pe_cpus <<< "${GDA_PE_CPUS:-}"
start() {  # start PE
  local bind=()
  [ -n "${pe_cpus[$1]:-}" ] && bind=(taskset -c "${pe_cpus[$1]}")
  "${bind[@]}" ${GDA_WRAP:-} "$bench" --pe "$1" --npes 2 --dir "$dir" --test "$test" --warmup "$warm" --iters "$iters" \
    ${GDA_DEVICE_TIMEOUT_S:+--device-timeout "$GDA_DEVICE_TIMEOUT_S"} --barrier-timeout "$barrier_s" \
    ${GDA_NIC_BUF:+--nic-buf "$GDA_NIC_BUF"} ${GDA_UAR_MAP:+--uar-map "$GDA_UAR_MAP"} \
    $([ "$1" = 0 ] && echo "${j0[@]}" || echo "${j1[@]}") > "$dir/pe$1.log" 2>&1 &
  pid[$1]=$!
}
alive() { [ -n "${pid[$1]:-}" ] && [ -z "${rc[$1]:-}" ] && kill -0 "${pid[$1]}" 2>/dev/null; }
reap() { if [ -z "${rc[$1]:-}" ] && ! kill -0 "${pid[$1]}" 2>/dev/null; then wait "${pid[$1]}"; rc[$1]=$?; fi; }
# Dump, then stop, every PE still running; $1 says why.
stop_all() {
  echo "gda pair $tag: $1: asking the running PEs for a state dump, then stopping them"
  for p in 0 1; do alive $p && kill -USR2 "${pid[$p]}" 2>/dev/null; done
  sleep 2
  for p in 0 1; do alive $p && kill -TERM "${pid[$p]}" 2>/dev/null; done
  for _ in $(seq 30); do alive 0 || alive 1 || break; sleep 0.1; done
  for p in 0 1; do alive $p && { kill -KILL "${pid[$p]}" 2>/dev/null; echo "pe $p: SIGKILL after the grace period"; }; done
  for p in 0 1; do [ -z "${rc[$p]:-}" ] && { wait "${pid[$p]}"; rc[$p]=$?; }; done
}
trap 'stop_all "interrupted"; cat "$dir"/pe*.log; rm -rf "$dir"; exit 1' TERM INT
start 1
start 0
deadline=$(( $(date +%s) + timeout_s ))
while [ -z "${rc[0]:-}" ] || [ -z "${rc[1]:-}" ]; do
  reap 0; reap 1
  failed=
  for p in 0 1; do [ -n "${rc[$p]:-}" ] && [ "${rc[$p]}" != 0 ] && failed=$p; done
  if [ -n "$failed" ] && { alive 0 || alive 1; }; then
    sleep 3  # the peer usually reports its own view of the failure within its device timeout
    reap 0; reap 1
    if alive 0 || alive 1; then stop_all "pe $failed failed (rc ${rc[$failed]})"; fi
  elif [ "$(date +%s)" -ge "$deadline" ]; then
    stop_all "timeout after ${timeout_s} s"
  fi
  sleep 0.05
done
for p in 0 1; do echo "--- pe $p (rc ${rc[$p]})"; cat "$dir/pe$p.log"; done
rm -rf "$dir"
if [ "${rc[0]}" -eq 0 ] && [ "${rc[1]}" -eq 0 ]; then echo "gda pair $tag: PASSED"; exit 0; fi
echo "gda pair $tag: FAILED"; exit 1
