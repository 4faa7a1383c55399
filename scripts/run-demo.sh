#!/usr/bin/env bash
# The main job, end to end: install, build, then profile a real RDMA program (perftest's
# ib_write_bw, server and client as two processes standing for two hosts) on the emulated NIC,
# analyze the experiment and print the summary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
# Only what this job runs: the command, the profiler and the emulated NIC (the tests and
# benchmarks are scripts/run-tests.sh's).
cmake --build build -j"$(nproc)" --target sigmatrace_cli sigmatrace softnic

st=build/bin/sigmatrace
exp=${1:-build/demo-experiment}
source scripts/lib/ports.sh
port=$(unused_tcp_port)
rm -rf "$exp"
echo "== profiling ib_write_bw over softnic (server on emulated host node-a, client on node-b)"
SOFTNIC_HOST=node-a "$st" profile --softnic --host node-a -o "$exp" -- ib_write_bw -p "$port" -n 2000 -s 65536 >"$exp.server.log" 2>&1 &
server=$!
# Wait until the server listens on its TCP port (perftest exchanges QP numbers over TCP).
wait_tcp_listening "$port" || true  # the client then reports what went wrong
SOFTNIC_HOST=node-b "$st" profile --softnic --host node-b -o "$exp" -- ib_write_bw -p "$port" -n 2000 -s 65536 localhost | tee "$exp.client.log"
wait "$server"
echo "== analysis"
"$st" analyze "$exp"
echo "== report"
# report.html (open it in any browser, no server needed) and every figure as SVG and PNG.
"$st" report "$exp" --html --plots "$exp/plots"
# The page itself as a picture (the README's).
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$exp/.chromium" --window-size=1200,1900 \
  --screenshot="$exp/report.png" "file://$(realpath "$exp")/report.html" >/dev/null 2>&1 && echo "report: $exp/report.png (the page)"
rm -rf "$exp/.chromium"
