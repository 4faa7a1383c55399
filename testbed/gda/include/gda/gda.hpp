// gda host API: brings up GPU-initiated RDMA the way NVSHMEM IBGDA does — devx UARs, umem
// registration of GPU-resident SQ/CQ/doorbell-record buffers, devx CQ and RC QP creation and
// RST2INIT/INIT2RTR/RTR2RTS, cuMemHostRegister + cuMemHostGetDevicePointer of the doorbell page —
// and hands GPU threads a DeviceState (gda/state.hpp) for the device functions (gda/device.cuh).
// PEs are processes; they exchange QP numbers and heap keys through files in a directory.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gda/state.hpp"

struct ibv_context;
struct ibv_pd;
struct ibv_mr;
struct mlx5dv_devx_uar;
struct mlx5dv_devx_umem;
struct mlx5dv_devx_obj;

namespace gda {

struct Options {
  int pe = 0;
  int npes = 2;
  std::string dir;                 // bootstrap directory shared by the PEs
  size_t heap_bytes = 1 << 20;     // symmetric heap per PE (GPU memory)
  uint32_t log_sq = 10;            // WQEBBs per send queue: 2^log_sq
  int cuda_device = 0;
  bool verbose = false;            // print every setup step
  double bootstrap_timeout_s = 60;
  // Bound on every device-side wait, then an error naming the wait (WaitFailure), not a hang;
  // well below the tests' own timeouts, so a lost completion is reported, not killed.
  double device_timeout_s = 10;
  // Bound on a barrier's wait for its peers. Separate from device_timeout_s: a barrier waits for
  // a peer's whole phase (a PE that only serves a test waits in its closing barrier for as long
  // as the other PE's 6000 iterations take), which under load legitimately exceeds the bound on
  // one operation. Keep it below the test's own timeout so a silent peer is still named.
  double barrier_timeout_s = 60;
  // Where the send queue, CQ and doorbell records live, as NVSHMEM IBGDA's
  // NVSHMEM_IBGDA_FORCE_NIC_BUF_MEMTYPE chooses: GPU memory (its default) or pinned host memory
  // mapped for the GPU.
  enum class NicBuf { kGpu, kHost };
  NicBuf nic_buf = NicBuf::kGpu;
  // How the doorbell page is mapped into the GPU: with the driver API (cuMemHostRegister +
  // cuMemHostGetDevicePointer), or with the runtime API as NVSHMEM and NCCL do
  // (cudaHostRegister + cudaHostGetDevicePointer, which reach the driver through
  // cuGetProcAddress: the path a profiler must catch).
  enum class UarMap { kDriver, kRuntime };
  UarMap uar_map = UarMap::kDriver;
};

// "gpu" / "host" (the names gda_bench and the docs use).
const char* nic_buf_name(Options::NicBuf b);
bool parse_nic_buf(const std::string& s, Options::NicBuf* out);
// "driver" / "runtime".
const char* uar_map_name(Options::UarMap m);
bool parse_uar_map(const std::string& s, Options::UarMap* out);

// Loads the given kernels (host stubs of __global__ functions) now, before any of them runs.
// With CUDA's lazy loading (the default since 12.2) a kernel is loaded at its first launch, and
// loading waits for the kernels already running: a kernel that spins waiting for the NIC (or a
// peer) then blocks the load of the next one, and every copy the NIC emulation queues behind it.
// A GPU-initiated program must load what it will launch before it launches anything that waits.
// 0 on success; -1 with *err set.
int load_kernels(const void* const* kernels, int n, std::string* err);

// Waits for everything queued on stream (a cudaStream_t) by polling it every 100 us: a host
// thread spinning in cudaStreamSynchronize for a whole test takes a core from the NIC
// emulation's threads, and cudaDeviceScheduleBlockingSync would make every CUDA wait of the
// process sleep, the emulator's too. Returns the stream's cudaError_t.
int sleep_until_done(void* stream);

// One line naming a device-side wait that gave up (state.hpp WaitFailure); "" if f.kind == 0.
std::string describe_failure(const WaitFailure& f, int pe);

class Context {
 public:
  // 0 on success; -1 with error() set.
  int init(const Options& o);
  void finalize();
  ~Context() { finalize(); }

  DeviceState* device_state() const { return d_state_; }  // device pointer
  uint8_t* heap() const { return heap_; }                 // device pointer
  const DeviceState& host_state() const { return h_state_; }
  const std::string& error() const { return err_; }
  // Host-side barrier through the bootstrap directory (tag must be unique per use).
  int host_barrier(const std::string& tag);
  // Copies the device's WaitFailure back (after the kernels of a test have finished).
  int read_failure(WaitFailure* f);

 private:
  struct Peer {
    mlx5dv_devx_uar* cq_uar = nullptr;
    mlx5dv_devx_uar* uar = nullptr;
    void* uar_dev = nullptr;       // device pointer of the registered page
    bool uar_registered = false;
    uint8_t* ctrl = nullptr;       // [SQ][CQE][QP DBR][CQ DBR], as registered (GPU or host)
    uint8_t* ctrl_dev = nullptr;   // the same buffer as GPU threads address it
    bool ctrl_host_registered = false;  // host buffers: cudaHostRegister succeeded
    size_t ctrl_bytes = 0;
    mlx5dv_devx_umem* umem = nullptr;
    mlx5dv_devx_obj* cq = nullptr;
    mlx5dv_devx_obj* qp = nullptr;
    uint32_t cqn = 0, qpn = 0, remote_qpn = 0;
  };
  int fail(const std::string& what);
  void step(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
  int query_caps();
  int create_peer(int pe);
  int connect_peer(int pe, uint16_t rlid);
  int publish_and_collect(std::vector<std::vector<uint64_t>>& all);

  Options o_;
  std::string err_;
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  uint32_t pdn_ = 0;
  uint16_t lid_ = 0;
  uint8_t active_mtu_ = 5;
  uint8_t* heap_ = nullptr;
  ibv_mr* mr_ = nullptr;
  std::vector<Peer> peers_;
  DeviceState h_state_{};
  DeviceState* d_state_ = nullptr;
  bool up_ = false;
};

}  // namespace gda
