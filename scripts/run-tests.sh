#!/usr/bin/env bash
# Installs what is needed, builds everything and runs every test (ctest). CI runs this.
# GPU tests skip with a printed reason on machines without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
cd build
ctest -j"$(nproc)" --output-on-failure --timeout 600
