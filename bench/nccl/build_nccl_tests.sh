#!/usr/bin/env bash
# Builds NVIDIA's nccl-tests (the public repository NVIDIA/nccl-tests; 2.19.6 builds against NCCL
# 2.28.9) from its source tree against the installed NCCL and Open MPI, for the NCCL GPU tests
# (tests/gpu/nccl) and docs/nccl.md:
#   bench/nccl/build_nccl_tests.sh NCCL_TESTS_SOURCE OUT_DIR
# The GPU machine has no network: bring the source along. Environment: NCCL_HOME (a directory with
# include/nccl.h and lib/libnccl.so.2; default: the nvidia-nccl Python package PyTorch installs,
# not the system's, which may be older), CUDA_HOME (default /usr/local/cuda), CUDA_ARCH (default:
# the first GPU's compute capability, else sm_90), JOBS. Needs Open MPI's mpicc (MPI's include and
# library directories). The binaries (all_reduce_perf, ...) are written to OUT_DIR; they find
# NCCL through LD_LIBRARY_PATH or nccl_rank.sh --nccl-lib (OUT_DIR/nccl-lib names the directory).
set -u
die() { echo "build_nccl_tests.sh: $*" >&2; exit 2; }
[ $# = 2 ] || die "usage: build_nccl_tests.sh NCCL_TESTS_SOURCE OUT_DIR"
src=$1 out=$2
[ -f "$src/src/common.cu" ] && [ -f "$src/src/Makefile" ] || die "no src/common.cu and src/Makefile under $src (NCCL_TESTS_SOURCE must be nccl-tests' source tree)"
nccl=${NCCL_HOME:-$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null)}
[ -n "$nccl" ] || die "no NCCL found (set NCCL_HOME, or install the nvidia-nccl Python package)"
[ -e "$nccl/include/nccl.h" ] && [ -e "$nccl/lib/libnccl.so.2" ] || die "NCCL_HOME=$nccl has no include/nccl.h and lib/libnccl.so.2"
cuda=${CUDA_HOME:-/usr/local/cuda}
[ -x "$cuda/bin/nvcc" ] || die "no $cuda/bin/nvcc (set CUDA_HOME)"
command -v mpicc > /dev/null || die "no mpicc on PATH (Open MPI's compiler wrapper gives MPI's directories)"
mpi_inc=$(mpicc --showme:incdirs 2>/dev/null | awk '{print $1}')
[ -n "$mpi_inc" ] || die "mpicc does not answer --showme:incdirs (Open MPI's wrapper is needed)"
# shellcheck source=../../scripts/lib/gpu_arch.sh
. "$(dirname "$0")/../../scripts/lib/gpu_arch.sh"
arch=$(gpu_sm_arch)
mkdir -p "$out" || die "cannot create $out"
out=$(cd "$out" && pwd)
# nccl-tests links -lnccl: a NCCL home of links, with the unversioned name the wheel lacks.
home=$out/nccl-home
mkdir -p "$home/lib"
ln -sfn "$nccl/include" "$home/include"
ln -sf "$nccl/lib/libnccl.so.2" "$home/lib/libnccl.so"
echo "$nccl/lib" > "$out/nccl-lib"
echo "building nccl-tests for $arch against $nccl and MPI in $(dirname "$mpi_inc") into $out"
make -C "$src/src" -j"${JOBS:-$(nproc)}" MPI=1 MPI_HOME="$(dirname "$mpi_inc")" NCCL_HOME="$home" CUDA_HOME="$cuda" \
  NVCC_GENCODE="-gencode=arch=compute_${arch#sm_},code=$arch" BUILDDIR="$out" > "$out/build.log" 2>&1 ||
  { tail -20 "$out/build.log" >&2; die "make failed (see $out/build.log)"; }
ls "$out"/*_perf > /dev/null 2>&1 || die "make built no *_perf binary (see $out/build.log)"
echo "built $(cd "$out" && ls -- *_perf | tr '\n' ' ')"
