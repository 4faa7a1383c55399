#!/usr/bin/env bash
# The doorbell hijack's forwarding latency alone (testbed/gda/bench/doorbell_forward_bench.cu):
# untraced and under `sigmatrace profile` in each of MODES, in turn (the order rotating from one
# repetition to the next), REPEAT times, for each burst of BURSTS (1: one doorbell in flight), each
# delay of NIC_DELAYS (us the stand-in NIC waits, spinning, before it answers: a round trip long
# enough for the poller to go idle and ask about kernel markers; 0: none) and each NIC read of
# NIC_READS (bytes the stand-in NIC reads of GPU memory through the driver per doorbell, as
# softnic's engine does; 0: none). A mode is untraced, forward (doorbells forwarded),
# or MODE/VAR=VALUE... (MODE with these variables set, e.g. forward/SIGMATRACE_KERNEL_MARKERS=0).
# Prints each run, then per burst, delay and read the medians over the runs and each mode's paired
# difference to untraced (bench/gda/forward_table.py), then whether each traced run recorded every
# doorbell its GPU rang, and the kernel's end where markers are on (forward_checks.py, from each
# traced run's `sigmatrace info --json`, kept beside its results as OUT/*.json.info).
#   [REPEAT=5] [ITERS=20000] [MODES="untraced forward"] [BURSTS="1 8"] [NIC_DELAYS=0] [NIC_READS=0]
#     bench/gda/doorbell_forward.sh BUILD_DIR OUT
set -u
build=${1:?usage: bench/gda/doorbell_forward.sh BUILD_DIR OUT} out=${2:?OUT}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
bench=$build/bin/doorbell_forward_bench
st=$build/bin/sigmatrace
repeat=${REPEAT:-5} iters=${ITERS:-20000}
read -r -a modes <<< "${MODES:-untraced forward}"
read -r -a bursts <<< "${BURSTS:-1 8}"
read -r -a delays <<< "${NIC_DELAYS:-0}"
read -r -a reads <<< "${NIC_READS:-0}"
export LD_LIBRARY_PATH=$build/softnic${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
. "$here/kinds.sh"
failed=0
for rep in $(seq "$repeat"); do
  n=${#modes[@]}
  for k in $(seq 0 $((n - 1))); do
    name=${modes[$(( (k + rep - 1) % n ))]}
    split_kind "$name"
    for delay in "${delays[@]}"; do for nic in "${reads[@]}"; do
      for burst in "${bursts[@]}"; do
        j=$out/$(kind_tag "$name")_b${burst}_d${delay}_r${nic}_${rep}.json
        args=(--iters "$iters" --burst "$burst" --nic-delay-us "$delay" --nic-read "$nic" --json "$j")
        if [ "$kind" = untraced ]; then
          env "${extra[@]}" timeout 60 "$bench" "${args[@]}" > "$j.log" 2>&1
        else
          e=$out/exp-$(kind_tag "$name")-$burst-$delay-$nic-$rep
          rm -rf "$e"
          env "${extra[@]}" SIGMATRACE_DOORBELLS="$kind" timeout 60 "$st" profile --softnic -o "$e" -- "$bench" "${args[@]}" > "$j.log" 2>&1 &&
            "$st" info --json "$e" > "$j.info" 2>> "$j.log"  # what was recorded: forward_checks.py compares it
        fi || { echo "rep $rep $name burst $burst delay $delay read $nic: FAILED"; failed=1; }
        echo "rep $rep $name burst $burst delay $delay read $nic: $(tail -1 "$j.log")"
      done
    done; done
  done
done
python3 "$here/forward_table.py" "$out" "${modes[@]}" || failed=1
python3 "$here/forward_checks.py" "$out" "${modes[@]}" || failed=1
exit $failed
