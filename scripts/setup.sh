#!/usr/bin/env bash
# Installs every Debian/Ubuntu package that sigmatrace's build, tests and test-bed programs need.
# Idempotent: quiet and quick when everything is present. Needs root (or sudo) and apt only.
set -euo pipefail

packages=(
  cmake g++ make pkg-config
  libzstd-dev liblz4-dev                      # trace compression (linked statically into the profiler)
  libcli11-dev nlohmann-json3-dev             # command line, JSON outputs
  libsqlite3-0 sqlite3 libsqlite3-dev        # SQL output (the library; the header only checks sqlite_api.h)
  zlib1g-dev libdeflate-dev                   # trace.pftrace compressed packet blocks
  libgtest-dev libgmock-dev libbenchmark-dev  # tests and benchmarks
  protobuf-compiler                           # tests decode the Perfetto output with protoc --decode
  clang                                       # libFuzzer target for the trace reader
  libibverbs-dev ibverbs-utils perftest librdmacm-dev rdmacm-utils  # real verbs programs run on softnic
  libucx-dev ucx-utils libfabric-dev libfabric-bin                  # UCX and libfabric run over TCP/shm
  openmpi-bin libopenmpi-dev                                        # MPI programs and launcher
  procps psmisc binutils
  chromium python3                            # the HTML report's browser test and `report --plots`
  dpkg-dev fakeroot file environment-modules man-db  # the packages (cpack), the modulefile, the man page
  libotf2-trace-dev otf2-tools python3-otf2   # OTF2 export (analyze --otf2), read back by OTF2's own tools
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
echo "setup: installing ${#missing[@]} packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
