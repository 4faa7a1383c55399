// What the test bed's NVSHMEM programs (nvshmem_ops) and the examples (examples/nvshmem) share:
// NVSHMEM initialised from a unique id passed through a file (the programs link no MPI: rank 0
// writes the id, atomically, the others wait for it, bounded), a bounded wait for the GPU, and
// a check of CUDA calls in main.
#pragma once
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <csignal>
#include <thread>
#include <unistd.h>

namespace sigmatrace::nvshmem_testbed {

// OMPI_COMM_WORLD_RANK / _SIZE, else Slurm's; -1 when neither is set.
inline int launcher_int(const char* ompi, const char* slurm) {
  const char* v = std::getenv(ompi);
  if (!v) v = std::getenv(slurm);
  return v ? std::atoi(v) : -1;
}

// prog names the program in its messages. False (with a message) on any failure.
inline bool uid_bootstrap(const char* prog, int rank, int npes, const std::string& uid_file, int timeout_s) {
  nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
  if (rank == 0) {
    if (nvshmemx_get_uniqueid(&id) != 0) return std::fprintf(stderr, "%s: nvshmemx_get_uniqueid failed\n", prog), false;
    const std::string tmp = uid_file + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f || std::fwrite(&id, sizeof id, 1, f) != 1 || std::fclose(f) != 0 || std::rename(tmp.c_str(), uid_file.c_str()) != 0)
      return std::fprintf(stderr, "%s: cannot write %s\n", prog, uid_file.c_str()), false;
  } else {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    FILE* f = nullptr;
    while (!(f = std::fopen(uid_file.c_str(), "rb"))) {
      if (std::chrono::steady_clock::now() > deadline) return std::fprintf(stderr, "%s: no unique id in %s\n", prog, uid_file.c_str()), false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const bool ok = std::fread(&id, sizeof id, 1, f) == 1;
    std::fclose(f);
    if (!ok) return std::fprintf(stderr, "%s: %s is short\n", prog, uid_file.c_str()), false;
  }
  nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
  nvshmemx_set_attr_uniqueid_args(rank, npes, &id, &attr);
  return nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr) == 0;
}

// Waits for the stream, bounded: a GPU that never finishes is reported with what it was doing,
// softnic is asked for a state dump (SIGUSR2: its handler with SOFTNIC_DEBUG=2, ignored
// otherwise) and the process exits with status 3.
inline bool wait_for_stream(const char* prog, int rank, cudaStream_t s, int timeout_s, const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (;;) {
    const cudaError_t e = cudaStreamQuery(s);
    if (e == cudaSuccess) return true;
    if (e != cudaErrorNotReady) {
      std::fprintf(stderr, "%s: PE %d: %s failed: %s\n", prog, rank, what, cudaGetErrorString(e));
      return false;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "%s: PE %d: %s did not finish within %d s; asking softnic for a state dump\n", prog, rank, what, timeout_s);
      std::fflush(stderr);
      std::raise(SIGUSR2);
      sleep(1);
      _exit(3);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

}  // namespace sigmatrace::nvshmem_testbed

// In main(): a CUDA call that fails is said (with the program's name) and main returns 2.
#define NVSHMEM_TESTBED_CHECK_CUDA(prog, x)                                           \
  do {                                                                                \
    const cudaError_t e_ = (x);                                                       \
    if (e_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "%s: %s failed: %s\n", prog, #x, cudaGetErrorString(e_)); \
      return 2;                                                                       \
    }                                                                                 \
  } while (0)
