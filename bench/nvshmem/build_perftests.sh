#!/usr/bin/env bash
# Builds NVSHMEM's own perftests (perftest/device/pt-to-pt of NVSHMEM's source) against the
# installed NVSHMEM, with the MPI bootstrap, for bench/nvshmem/nvshmem_perftests.sh and the
# nvtx.nvshmem_perftest test (docs/nvshmem.md, "NVSHMEM's perftests"):
#   bench/nvshmem/build_perftests.sh NVSHMEM_SOURCE OUT_DIR [TEST...]
# NVSHMEM_SOURCE: the source tree of the release matching the installed library (its perftest/
# directory is enough; the GPU machine has no network, so bring it along). TEST defaults to the five
# tests nvshmem_perftests.sh runs. Environment: NVSHMEM_HOME (default: the nvidia-nvshmem Python
# package), CUDA_ARCH (default: the first GPU's compute capability, else sm_90), NVCC (default nvcc
# on PATH, else /usr/local/cuda/bin/nvcc). Needs Open MPI's mpicc (for MPI's include and library
# directories). Each test is its .cu file and perftest/common/utils.cu, relocatable device code,
# linked with libnvshmem_device.a and libnvshmem_host.so.3 (through -Xlinker: nvcc takes no
# versioned shared library as an input file).
set -u
die() { echo "build_perftests.sh: $*" >&2; exit 2; }
[ $# -ge 2 ] || die "usage: build_perftests.sh NVSHMEM_SOURCE OUT_DIR [TEST...]"
src=$1 out=$2
shift 2
tests=("$@")
. "$(dirname "$0")/perftest_names.sh"
[ ${#tests[@]} -gt 0 ] || tests=("${fig4_perftests[@]}")
common=$src/perftest/common pt=$src/perftest/device/pt-to-pt
[ -f "$common/utils.cu" ] || die "no perftest/common/utils.cu under $src (NVSHMEM_SOURCE must be NVSHMEM's source tree)"
for t in "${tests[@]}"; do [ -f "$pt/$t.cu" ] || die "no perftest/device/pt-to-pt/$t.cu under $src"; done
nv=${NVSHMEM_HOME:-$(python3 -c 'import nvidia.nvshmem as m; print(list(m.__path__)[0])' 2>/dev/null)}
[ -n "$nv" ] || die "no NVSHMEM found (set NVSHMEM_HOME, or install the nvidia-nvshmem Python package)"
for f in include/nvshmem.h lib/libnvshmem_device.a lib/libnvshmem_host.so.3; do
  [ -e "$nv/$f" ] || die "NVSHMEM_HOME=$nv has no $f"
done
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[ -x "$nvcc" ] || die "no nvcc (set NVCC, or put the CUDA toolkit's bin on PATH)"
command -v mpicc > /dev/null || die "no mpicc on PATH (Open MPI's compiler wrapper gives MPI's directories)"
if ! mpi_inc=$(mpicc --showme:incdirs 2>/dev/null) || ! mpi_lib=$(mpicc --showme:libdirs 2>/dev/null); then
  die "mpicc does not answer --showme:incdirs (Open MPI's wrapper is needed)"
fi
# shellcheck source=../../scripts/lib/gpu_arch.sh
. "$(dirname "$0")/../../scripts/lib/gpu_arch.sh"
arch=$(gpu_sm_arch)
mkdir -p "$out" || die "cannot create $out"
out=$(cd "$out" && pwd)
flags=(-std=c++17 -rdc=true -arch="$arch" -O2 -DNVSHMEMTEST_MPI_SUPPORT -I"$nv/include" -I"$common")
for d in $mpi_inc; do flags+=(-I"$d"); done
libs=()
for d in $mpi_lib; do libs+=(-L"$d"); done
echo "building ${tests[*]} for $arch against $nv into $out"
"$nvcc" "${flags[@]}" -c "$common/utils.cu" -o "$out/utils.o" || die "utils.cu did not compile"
failed=0
for t in "${tests[@]}"; do
  if "$nvcc" "${flags[@]}" "$pt/$t.cu" "$out/utils.o" -o "$out/$t" "$nv/lib/libnvshmem_device.a" \
    -Xlinker "$nv/lib/libnvshmem_host.so.3" "${libs[@]}" -lmpi -lcuda -ldl -Xlinker -rpath -Xlinker "$nv/lib"; then
    echo "built $out/$t"
  else
    echo "build_perftests.sh: $t did not build" >&2
    failed=1
  fi
done
rm -f "$out/utils.o"
exit $failed
