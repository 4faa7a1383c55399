#!/usr/bin/env bash
# The doorbell hijack's forwarding latency alone (testbed/gda/bench/doorbell_forward_bench.cu):
# untraced and with doorbells forwarded (SIGMATRACE_DOORBELLS=forward), alternated REPEAT times,
# one doorbell in flight and in bursts of 8; prints each run and the medians' differences.
#   [REPEAT=5] [ITERS=20000] bench/gda/doorbell_forward.sh BUILD_DIR OUT
set -u
build=${1:?usage: bench/gda/doorbell_forward.sh BUILD_DIR OUT} out=${2:?OUT}
mkdir -p "$out"
bench=$build/bin/doorbell_forward_bench
st=$build/bin/sigmatrace
repeat=${REPEAT:-5} iters=${ITERS:-20000}
export LD_LIBRARY_PATH=$build/softnic${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for rep in $(seq "$repeat"); do
  for burst in 1 8; do
    for mode in untraced forward; do
      j=$out/$mode-b$burst-$rep.json
      if [ $mode = untraced ]; then
        timeout 60 "$bench" --iters "$iters" --burst "$burst" --json "$j" > "$j.log" 2>&1
      else
        rm -rf "$out/exp-$rep-$burst"
        SIGMATRACE_DOORBELLS=forward timeout 60 "$st" profile --softnic -o "$out/exp-$rep-$burst" -- "$bench" --iters "$iters" --burst "$burst" \
          --json "$j" > "$j.log" 2>&1
      fi
      echo "rep $rep $mode burst $burst: $(tail -1 "$j.log")"
    done
  done
done
python3 - "$out" <<'PY'
import glob, json, os, statistics, sys
out = sys.argv[1]
rows = {}
for f in glob.glob(os.path.join(out, "*.json")):
    mode, b, _ = os.path.basename(f)[:-5].split("-")
    rows.setdefault((mode, b), []).append(json.load(open(f)))
for b in ("b1", "b8"):
    u, f = rows.get(("untraced", b), []), rows.get(("forward", b), [])
    if not u or not f:
        continue
    mu = statistics.median(r["median_us"] for r in u); mf = statistics.median(r["median_us"] for r in f)
    pu = statistics.median(r["p99_us"] for r in u); pf = statistics.median(r["p99_us"] for r in f)
    print(f"burst {b[1:]}: untraced median {mu:.3f} us p99 {pu:.3f} us; forwarded median {mf:.3f} us p99 {pf:.3f} us; "
          f"added {mf - mu:+.3f} us at the median, {pf - pu:+.3f} us at p99 ({len(u)} + {len(f)} runs)")
PY
