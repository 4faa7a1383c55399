#!/usr/bin/env bash
# Runs gda_bench as two PEs (two processes) over softnic on this machine's GPU and checks both
# verified their results. Exit 77 (skip) when there is no usable CUDA device.
# usage: run_gda_pair.sh PROBE BENCH SOFTNIC_LIBDIR TEST WARMUP ITERS [JSON_OUT_DIR]
set -u
probe=$1 bench=$2 libdir=$3 test=$4 warm=$5 iters=$6 outdir=${7:-}
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
j0=() ; j1=()
if [ -n "$outdir" ]; then j0=(--json "$outdir/gda_${test}_pe0.json"); j1=(--json "$outdir/gda_${test}_pe1.json"); fi
p0=; p1=
show() { echo "--- pe 0"; cat "$dir/pe0.log" 2>/dev/null; echo "--- pe 1"; cat "$dir/pe1.log" 2>/dev/null; }
cleanup() { [ -n "$p0" ] && kill "$p0" 2>/dev/null; [ -n "$p1" ] && kill "$p1" 2>/dev/null; }
trap 'cleanup; echo "gda pair $test: INTERRUPTED (timeout?)"; show; exit 1' TERM INT
"$bench" --pe 1 --npes 2 --dir "$dir" --test "$test" --warmup "$warm" --iters "$iters" "${j1[@]}" > "$dir/pe1.log" 2>&1 &
p1=$!
"$bench" --pe 0 --npes 2 --dir "$dir" --test "$test" --warmup "$warm" --iters "$iters" "${j0[@]}" > "$dir/pe0.log" 2>&1 &
p0=$!
# When one PE fails, the other would only notice at its bootstrap or device timeout: stop it.
rc0=; rc1=
while [ -z "$rc0" ] || [ -z "$rc1" ]; do
  if [ -z "$rc0" ] && ! kill -0 "$p0" 2>/dev/null; then wait "$p0"; rc0=$?; fi
  if [ -z "$rc1" ] && ! kill -0 "$p1" 2>/dev/null; then wait "$p1"; rc1=$?; fi
  if [[ ( -n "$rc0" && "$rc0" != 0 && -z "$rc1" ) || ( -n "$rc1" && "$rc1" != 0 && -z "$rc0" ) ]]; then
    sleep 5
    [ -z "$rc0" ] && kill "$p0" 2>/dev/null && { wait "$p0"; rc0=$?; echo "pe 0 stopped: pe 1 failed"; }
    [ -z "$rc1" ] && kill "$p1" 2>/dev/null && { wait "$p1"; rc1=$?; echo "pe 1 stopped: pe 0 failed"; }
  fi
  sleep 0.05
done
p0=; p1=
echo "--- pe 0 (rc $rc0)"; cat "$dir/pe0.log"
echo "--- pe 1 (rc $rc1)"; cat "$dir/pe1.log"
rm -rf "$dir"
if [ $rc0 -eq 0 ] && [ $rc1 -eq 0 ]; then echo "gda pair $test: PASSED"; exit 0; fi
echo "gda pair $test: FAILED"; exit 1
