// gda host setup; see gda/gda.hpp. The call sequence follows a GPU-initiated stack (NVSHMEM
// IBGDA's transport set-up): PD + mlx5dv_init_obj, QUERY_HCA_CAP
// (general: cqe_version; atomic: CAS/FA, 8-byte), per peer: query_eqn, NC UAR for the CQ,
// GPU (or mapped host) buffers (SQ, CQ filled with 0xFF, doorbell records) registered as umem, CREATE_CQ
// (collapsed), UAR for the QP doorbell mapped into the GPU with cuMemHostRegister +
// cuMemHostGetDevicePointer, CREATE_QP, then RST2INIT/INIT2RTR/RTR2RTS with the peer's QPN.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "gda/gda.hpp"
#include "mlx5/prm.hpp"
#include "mlx5/wqe.hpp"

namespace m5 = sigmatrace::mlx5;
namespace prm = sigmatrace::mlx5::prm;

namespace gda {

const char* nic_buf_name(Options::NicBuf b) { return b == Options::NicBuf::kHost ? "host" : "gpu"; }

bool parse_nic_buf(const std::string& s, Options::NicBuf* out) {
  if (s == "gpu") *out = Options::NicBuf::kGpu;
  else if (s == "host") *out = Options::NicBuf::kHost;
  else return false;
  return true;
}

const char* uar_map_name(Options::UarMap m) { return m == Options::UarMap::kRuntime ? "runtime" : "driver"; }

bool parse_uar_map(const std::string& s, Options::UarMap* out) {
  if (s == "driver") *out = Options::UarMap::kDriver;
  else if (s == "runtime") *out = Options::UarMap::kRuntime;
  else return false;
  return true;
}

int Context::fail(const std::string& what) {
  err_ = "pe " + std::to_string(o_.pe) + ": " + what;
  return -1;
}

void Context::step(const char* fmt, ...) {
  if (!o_.verbose) return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "gda pe %d: ", o_.pe);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
}

static std::string cuda_err(cudaError_t e) { return cudaGetErrorString(e); }
static std::string cu_err(CUresult r) {
  const char* s = nullptr;
  cuGetErrorString(r, &s);
  return s ? s : "unknown CUDA driver error";
}

// Is the page a real device mapping (a NIC UAR through /dev/infiniband)? Then the CUDA driver
// needs CU_MEMHOSTREGISTER_IOMEMORY; ordinary memory (softnic's doorbell page) must not have it.
static bool is_mmio(const void* p) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  while (std::getline(maps, line)) {
    uintptr_t lo = 0, hi = 0;
    if (sscanf(line.c_str(), "%lx-%lx", &lo, &hi) != 2) continue;
    if (a >= lo && a < hi)
      return line.find("/dev/infiniband") != std::string::npos || line.find("uverbs") != std::string::npos;
  }
  return false;
}

int Context::query_caps() {
  uint8_t in[prm::kQueryHcaCapInSize] = {};
  std::vector<uint8_t> out(prm::kQueryHcaCapOutSize);
  prm::set(in, prm::kInOpcode, prm::kQueryHcaCap);
  prm::set(in, prm::kInOpMod, (prm::kCapGeneral << 1) | 1);
  if (mlx5dv_devx_general_cmd(ctx_, in, sizeof in, out.data(), out.size()))
    return fail("QUERY_HCA_CAP(general) failed: the device does not support devx");
  if (prm::get(out.data(), prm::cap::cqe_version) != 1) return fail("hca_cap.cqe_version != 1");
  step("QUERY_HCA_CAP general: cqe_version 1, log_max_qp_sz %u, log_bf_reg_size %u",
       prm::get(out.data(), prm::cap::log_max_qp_sz), prm::get(out.data(), prm::cap::log_bf_reg_size));
  prm::set(in, prm::kInOpMod, (prm::kCapAtomic << 1) | 1);
  if (mlx5dv_devx_general_cmd(ctx_, in, sizeof in, out.data(), out.size()))
    return fail("QUERY_HCA_CAP(atomic) failed");
  uint32_t ops = prm::get(out.data(), prm::cap::atomic_operations);
  uint32_t sizes = prm::get(out.data(), prm::cap::atomic_size_qp);
  if (!(ops & prm::kAtomicOpCas) || !(ops & prm::kAtomicOpFa) || !(sizes & prm::kAtomicSize8))
    return fail("device lacks 8-byte CAS/FA on RC QPs");
  step("QUERY_HCA_CAP atomic: operations 0x%x, sizes 0x%x, 8B endianness mode %u", ops, sizes,
       prm::get(out.data(), prm::cap::atomic_req_8B_endianness_mode));
  return 0;
}

int Context::create_peer(int pe) {
  Peer& p = peers_[pe];
  uint32_t eqn = 0;
  if (mlx5dv_devx_query_eqn(ctx_, 0, &eqn)) return fail("mlx5dv_devx_query_eqn failed");
  p.cq_uar = mlx5dv_devx_alloc_uar(ctx_, MLX5DV_UAR_ALLOC_TYPE_NC);
  if (!p.cq_uar) return fail("mlx5dv_devx_alloc_uar(NC) for the CQ failed");

  // GPU control buffer: [SQ 2^log_sq WQEBBs][collapsed CQ: 1 CQE][QP DBR 8][CQ DBR 8].
  size_t sq_bytes = size_t(m5::kWqeBbSize) << o_.log_sq;
  size_t cq_off = sq_bytes, qdbr_off = cq_off + m5::kCqeSize, cdbr_off = qdbr_off + 8;
  p.ctrl_bytes = cdbr_off + 8;
  if (o_.nic_buf == Options::NicBuf::kHost) {
    // As NVSHMEM's host-memory NIC buffers: 64 KiB aligned, registered Portable|Mapped.
    void* h = nullptr;
    size_t bytes = (p.ctrl_bytes + 65535) & ~size_t(65535);
    if (posix_memalign(&h, 65536, bytes)) return fail("posix_memalign(SQ/CQ/DBR) failed");
    p.ctrl = static_cast<uint8_t*>(h);
    memset(p.ctrl, 0, bytes);
    memset(p.ctrl + cq_off, 0xff, m5::kCqeSize);  // all CQE bytes start as 0xFF
    if (cudaError_t e = cudaHostRegister(p.ctrl, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped))
      return fail("cudaHostRegister(SQ/CQ/DBR): " + cuda_err(e));
    p.ctrl_host_registered = true;
    void* d = nullptr;
    if (cudaError_t e = cudaHostGetDevicePointer(&d, p.ctrl, 0))
      return fail("cudaHostGetDevicePointer(SQ/CQ/DBR): " + cuda_err(e));
    p.ctrl_dev = static_cast<uint8_t*>(d);
  } else {
    if (cudaError_t e = cudaMalloc(reinterpret_cast<void**>(&p.ctrl), p.ctrl_bytes)) return fail("cudaMalloc(SQ/CQ/DBR): " + cuda_err(e));
    cudaMemset(p.ctrl, 0, p.ctrl_bytes);
    cudaMemset(p.ctrl + cq_off, 0xff, m5::kCqeSize);  // all CQE bytes start as 0xFF
    cudaDeviceSynchronize();
    p.ctrl_dev = p.ctrl;
  }
  p.umem = mlx5dv_devx_umem_reg(ctx_, p.ctrl, p.ctrl_bytes, IBV_ACCESS_LOCAL_WRITE);
  if (!p.umem)
    return fail(std::string("mlx5dv_devx_umem_reg of ") + nic_buf_name(o_.nic_buf) + " memory failed: " + strerror(errno));
  step("peer %d: %s SQ/CQ/DBR buffer %p (%zu bytes) = umem %u", pe, nic_buf_name(o_.nic_buf), (void*)p.ctrl,
       p.ctrl_bytes, p.umem->umem_id);

  {
    uint8_t in[prm::kCreateCqInSize] = {}, out[prm::kCreateCqOutSize] = {};
    prm::set(in, prm::kInOpcode, prm::kCreateCq);
    prm::set(in, prm::cq::cq_umem_valid, 1);
    prm::set(in, prm::cq::cq_umem_id, p.umem->umem_id);
    prm::set64(in, prm::cq::cq_umem_offset, cq_off);
    prm::set(in, prm::cq::dbr_umem_valid, 1);
    prm::set(in, prm::cq::dbr_umem_id, p.umem->umem_id);
    prm::set64(in, prm::cq::dbr_addr, cdbr_off);
    prm::set(in, prm::cq::cqe_sz, 0);
    prm::set(in, prm::cq::cc, 1);
    prm::set(in, prm::cq::oi, 1);
    prm::set(in, prm::cq::log_cq_size, o_.log_sq);
    prm::set(in, prm::cq::uar_page, p.cq_uar->page_id);
    prm::set(in, prm::cq::c_eqn, eqn);
    prm::set(in, prm::cq::log_page_size, 16 - 12);
    p.cq = mlx5dv_devx_obj_create(ctx_, in, sizeof in, out, sizeof out);
    if (!p.cq)
      return fail("CREATE_CQ failed: status 0x" + std::to_string(prm::get(out, prm::kOutStatus)) +
                  " syndrome " + std::to_string(prm::get(out, prm::kOutSyndrome)));
    p.cqn = prm::get(out, prm::cq::out_cqn);
  }

  // The QP's doorbell page, mapped for GPU threads.
  p.uar = mlx5dv_devx_alloc_uar(ctx_, prm::kUarAllocNcDedicated);
  if (!p.uar) p.uar = mlx5dv_devx_alloc_uar(ctx_, MLX5DV_UAR_ALLOC_TYPE_NC);
  if (!p.uar) return fail("mlx5dv_devx_alloc_uar for the QP failed");
  void* page = p.uar->base_addr;
  bool mmio = is_mmio(page);
  if (o_.uar_map == Options::UarMap::kRuntime) {
    unsigned flags = cudaHostRegisterPortable | cudaHostRegisterMapped | (mmio ? cudaHostRegisterIoMemory : 0);
    if (cudaError_t e = cudaHostRegister(page, m5::kUarPageSize, flags))
      return fail("cudaHostRegister(doorbell page" + std::string(mmio ? ", IoMemory" : "") + "): " + cuda_err(e));
    p.uar_registered = true;
    void* d = nullptr;
    if (cudaError_t e = cudaHostGetDevicePointer(&d, page, 0))
      return fail("cudaHostGetDevicePointer(doorbell page): " + cuda_err(e));
    p.uar_dev = d;
  } else {
    unsigned flags = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP | (mmio ? CU_MEMHOSTREGISTER_IOMEMORY : 0);
    if (CUresult r = cuMemHostRegister(page, m5::kUarPageSize, flags))
      return fail("cuMemHostRegister(doorbell page" + std::string(mmio ? ", IoMemory" : "") + "): " + cu_err(r));
    p.uar_registered = true;
    CUdeviceptr dptr = 0;
    if (CUresult r = cuMemHostGetDevicePointer(&dptr, page, 0))
      return fail("cuMemHostGetDevicePointer(doorbell page): " + cu_err(r));
    p.uar_dev = reinterpret_cast<void*>(dptr);
  }
  step("peer %d: UAR page %u at %p registered with the %s API (%s), device pointer %p", pe, p.uar->page_id, page,
       uar_map_name(o_.uar_map), mmio ? "MMIO, IoMemory" : "ordinary memory", p.uar_dev);

  {
    namespace q = prm::qp;
    uint8_t in[prm::kCreateQpInSize] = {}, out[prm::kCreateQpOutSize] = {};
    prm::build_create_rc_qp(in, {pdn_, p.uar->page_id, p.cqn, o_.log_sq, uint32_t(pe), p.umem->umem_id, p.umem->umem_id, 0, qdbr_off});
    p.qp = mlx5dv_devx_obj_create(ctx_, in, sizeof in, out, sizeof out);
    if (!p.qp)
      return fail("CREATE_QP failed: status 0x" + std::to_string(prm::get(out, prm::kOutStatus)) +
                  " syndrome " + std::to_string(prm::get(out, prm::kOutSyndrome)));
    p.qpn = prm::get(out, q::out_qpn);
  }
  step("peer %d: CQ 0x%x (collapsed), QP 0x%x (SQ 2^%u WQEBBs in %s memory)", pe, p.cqn, p.qpn, o_.log_sq,
       nic_buf_name(o_.nic_buf));

  QpDev& d = h_state_.qp[pe];
  d.sq = p.ctrl_dev;
  d.nwqes = 1u << o_.log_sq;
  d.qpn = p.qpn;
  d.dbrec = reinterpret_cast<uint32_t*>(p.ctrl_dev + qdbr_off) + m5::kDbrSendIndex;
  d.bf = reinterpret_cast<uint64_t*>(static_cast<uint8_t*>(p.uar_dev) +
                                     (static_cast<uint8_t*>(p.uar->reg_addr) - static_cast<uint8_t*>(page)));
  d.cqe = p.ctrl_dev + cq_off;
  return 0;
}

int Context::connect_peer(int pe, uint16_t rlid) {
  namespace q = prm::qp;
  Peer& p = peers_[pe];
  auto modify = [&](uint16_t op, const char* name, auto&& fill) -> int {
    uint8_t in[prm::kModifyQpInSize] = {}, out[prm::kModifyQpOutSize] = {};
    prm::set(in, prm::kInOpcode, op);
    prm::set(in, q::in_qpn, p.qpn);
    fill(in);
    if (mlx5dv_devx_obj_modify(p.qp, in, sizeof in, out, sizeof out))
      return fail(std::string(name) + " failed: status 0x" + std::to_string(prm::get(out, prm::kOutStatus)) +
                  " syndrome " + std::to_string(prm::get(out, prm::kOutSyndrome)));
    return 0;
  };
  if (modify(prm::kRst2Init, "RST2INIT", [&](uint8_t* in) {
        prm::set(in, q::rwe, 1);
        prm::set(in, q::rre, 1);
        prm::set(in, q::rae, 1);
        prm::set(in, q::atomic_mode, 3);
        prm::set(in, q::vhca_port_num, 1);
        prm::set(in, q::pkey_index, 0);
        prm::set(in, q::pm_state, prm::kPmStateMigrated);
        prm::set(in, q::counter_set_id, 0);
      }))
    return -1;
  if (modify(prm::kInit2Rtr, "INIT2RTR", [&](uint8_t* in) {
        prm::set(in, q::mtu, active_mtu_);
        prm::set(in, q::log_msg_max, 30);
        prm::set(in, q::remote_qpn, p.remote_qpn);
        prm::set(in, q::min_rnr_nak, 12);
        prm::set(in, q::log_rra_max, 4);
        prm::set(in, q::rlid, rlid);
        prm::set(in, q::mlid, 0);
        prm::set(in, q::sl, 0);
        prm::set(in, q::grh, 0);
      }))
    return -1;
  if (modify(prm::kRtr2Rts, "RTR2RTS", [&](uint8_t* in) {
        prm::set(in, q::log_ack_req_freq, 0);
        prm::set(in, q::log_sra_max, 4);
        prm::set(in, q::next_send_psn, 0);
        prm::set(in, q::retry_count, 7);
        prm::set(in, q::rnr_retry, 7);
        prm::set(in, q::ack_timeout, 20);
      }))
    return -1;
  step("peer %d: QP 0x%x connected to remote QP 0x%x (lid %u), RTS", pe, p.qpn, p.remote_qpn, rlid);
  return 0;
}

// Each PE publishes one line: lid heap rkey qpn[0..npes). Files are written then renamed.
int Context::publish_and_collect(std::vector<std::vector<uint64_t>>& all) {
  {
    std::string tmp = o_.dir + "/.pe" + std::to_string(o_.pe) + ".tmp";
    std::ofstream f(tmp);
    f << lid_ << ' ' << reinterpret_cast<uint64_t>(heap_) << ' ' << mr_->rkey;
    for (int j = 0; j < o_.npes; ++j) f << ' ' << peers_[j].qpn;
    f << '\n';
    f.close();
    if (!f || rename(tmp.c_str(), (o_.dir + "/pe" + std::to_string(o_.pe) + ".info").c_str()))
      return fail("cannot write to bootstrap directory " + o_.dir);
  }
  all.assign(o_.npes, {});
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(o_.bootstrap_timeout_s);
  for (int j = 0; j < o_.npes; ++j) {
    for (;;) {
      std::ifstream f(o_.dir + "/pe" + std::to_string(j) + ".info");
      std::vector<uint64_t> v;
      uint64_t x;
      while (f >> x) v.push_back(x);
      if (v.size() == size_t(3 + o_.npes)) {
        all[j] = v;
        break;
      }
      if (std::chrono::steady_clock::now() > deadline)
        return fail("bootstrap: PE " + std::to_string(j) + " did not publish in " + o_.dir);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  return 0;
}

int Context::host_barrier(const std::string& tag) {
  std::string mine = o_.dir + "/" + tag + "." + std::to_string(o_.pe);
  std::ofstream(mine) << "1\n";
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(o_.bootstrap_timeout_s);
  for (int j = 0; j < o_.npes; ++j) {
    while (access((o_.dir + "/" + tag + "." + std::to_string(j)).c_str(), F_OK) != 0) {
      if (std::chrono::steady_clock::now() > deadline)
        return fail("host barrier '" + tag + "': PE " + std::to_string(j) + " never arrived");
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  return 0;
}

int Context::init(const Options& o) {
  o_ = o;
  if (o_.npes < 1 || o_.npes > kMaxPes || o_.pe < 0 || o_.pe >= o_.npes) return fail("bad pe/npes");
  if (cudaError_t e = cudaSetDevice(o_.cuda_device)) return fail("cudaSetDevice: " + cuda_err(e));
  cudaFree(nullptr);  // creates the primary context the driver calls below use

  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list || n == 0) return fail("no RDMA device (is softnic's libibverbs on LD_LIBRARY_PATH?)");
  ibv_device* dev = list[0];
  if (!mlx5dv_is_supported(dev)) {
    ibv_free_device_list(list);
    return fail(std::string("device ") + ibv_get_device_name(dev) + " is not an mlx5dv (devx) device");
  }
  ctx_ = ibv_open_device(dev);
  step("opened %s", ibv_get_device_name(dev));
  ibv_free_device_list(list);
  if (!ctx_) return fail("ibv_open_device failed");
  ibv_port_attr pa{};
  if (ibv_query_port(ctx_, 1, &pa)) return fail("ibv_query_port failed");
  lid_ = pa.lid;
  active_mtu_ = uint8_t(pa.active_mtu);
  pd_ = ibv_alloc_pd(ctx_);
  if (!pd_) return fail("ibv_alloc_pd failed");
  mlx5dv_pd dvpd{};
  mlx5dv_obj obj{};
  obj.pd.in = pd_;
  obj.pd.out = &dvpd;
  if (mlx5dv_init_obj(&obj, MLX5DV_OBJ_PD)) return fail("mlx5dv_init_obj(PD) failed");
  pdn_ = dvpd.pdn;
  step("lid %u, pdn 0x%x", lid_, pdn_);
  if (query_caps()) return -1;

  // Symmetric heap in GPU memory, registered for remote access.
  if (cudaError_t e = cudaMalloc(reinterpret_cast<void**>(&heap_), o_.heap_bytes)) return fail("cudaMalloc(heap): " + cuda_err(e));
  cudaMemset(heap_, 0, o_.heap_bytes);
  cudaDeviceSynchronize();
  mr_ = ibv_reg_mr(pd_, heap_, o_.heap_bytes,
                   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                       IBV_ACCESS_REMOTE_ATOMIC);
  if (!mr_) return fail("ibv_reg_mr(GPU heap) failed: " + std::string(strerror(errno)));
  step("heap %p (%zu bytes), lkey 0x%x rkey 0x%x", (void*)heap_, o_.heap_bytes, mr_->lkey, mr_->rkey);

  peers_.assign(o_.npes, Peer{});
  h_state_ = DeviceState{};
  h_state_.pe = o_.pe;
  h_state_.npes = o_.npes;
  h_state_.heap = heap_;
  h_state_.heap_bytes = o_.heap_bytes;
  h_state_.lkey = mr_->lkey;
  h_state_.timeout_ns = uint64_t(o_.device_timeout_s * 1e9);
  h_state_.barrier_timeout_ns = uint64_t(o_.barrier_timeout_s * 1e9);
  for (int j = 0; j < o_.npes; ++j)
    if (j != o_.pe && create_peer(j)) return -1;

  std::vector<std::vector<uint64_t>> all;
  if (publish_and_collect(all)) return -1;
  for (int j = 0; j < o_.npes; ++j) {
    if (j == o_.pe) continue;
    h_state_.remote_heap[j] = all[j][1];
    h_state_.rkey[j] = uint32_t(all[j][2]);
    peers_[j].remote_qpn = uint32_t(all[j][3 + o_.pe]);
    if (connect_peer(j, uint16_t(all[j][0]))) return -1;
  }
  if (cudaError_t e = cudaMalloc(reinterpret_cast<void**>(&d_state_), sizeof(DeviceState))) return fail("cudaMalloc(state): " + cuda_err(e));
  cudaMemcpy(d_state_, &h_state_, sizeof(DeviceState), cudaMemcpyHostToDevice);
  cudaDeviceSynchronize();
  if (host_barrier("connected")) return -1;
  up_ = true;
  step("ready");
  return 0;
}

int sleep_until_done(void* stream) {
  auto st = static_cast<cudaStream_t>(stream);
  cudaError_t e;
  while ((e = cudaStreamQuery(st)) == cudaErrorNotReady) std::this_thread::sleep_for(std::chrono::microseconds(100));
  return int(e);
}

int load_kernels(const void* const* kernels, int n, std::string* err) {
  for (int i = 0; i < n; ++i) {
    cudaFuncAttributes attr{};
    if (cudaError_t e = cudaFuncGetAttributes(&attr, kernels[i])) {
      *err = "loading kernel " + std::to_string(i) + ": " + cuda_err(e);
      return -1;
    }
  }
  return 0;
}

std::string describe_failure(const WaitFailure& f, int pe) {
  if (!f.kind) return "";
  char buf[512];
  double s = double(f.waited_ns) / 1e9;
  m5::CqeTail t = m5::decode_cqe_tail(f.cqe_word);
  char cq[160];
  snprintf(cq, sizeof cq, "its CQ shows wqe_counter %u opcode 0x%x%s", t.wqe_counter, t.opcode,
           t.opcode == m5::kCqeInvalid ? " (no CQE yet)" : "");
  switch (f.kind) {
    case kErrTimeoutCq:
      snprintf(buf, sizeof buf,
               "pe %d: quiet on QP 0x%x towards PE %d gave up after %.1f s: %llu WQEBBs posted, %llu "
               "completed (waiting for WQE index %llu); %s",
               pe, f.qpn, f.peer, s, (unsigned long long)f.prod, (unsigned long long)f.cons,
               (unsigned long long)((f.prod - 1) & 0xffff), cq);
      break;
    case kErrTimeoutSlot:
      snprintf(buf, sizeof buf,
               "pe %d: waiting for send-queue room on QP 0x%x towards PE %d gave up after %.1f s: %llu "
               "posted, %llu completed, needed %llu completed; %s",
               pe, f.qpn, f.peer, s, (unsigned long long)f.prod, (unsigned long long)f.cons,
               (unsigned long long)f.expected, cq);
      break;
    case kErrTimeoutWait:
      snprintf(buf, sizeof buf,
               "pe %d: waiting for the word at heap offset %llu to become %llu gave up after %.1f s: it "
               "holds %llu",
               pe, (unsigned long long)f.heap_off, (unsigned long long)f.expected, s,
               (unsigned long long)f.observed);
      break;
    case kErrTimeoutBarrier:
      snprintf(buf, sizeof buf,
               "pe %d: barrier waiting for PE %d's flag (heap offset %llu) to reach epoch %llu gave up "
               "after %.1f s: it holds %llu",
               pe, f.peer, (unsigned long long)f.heap_off, (unsigned long long)f.expected, s,
               (unsigned long long)f.observed);
      break;
    default:
      snprintf(buf, sizeof buf, "pe %d: device wait failure 0x%x", pe, f.kind);
  }
  return buf;
}

int Context::read_failure(WaitFailure* f) {
  if (cudaError_t e = cudaMemcpy(f, &d_state_->failure, sizeof *f, cudaMemcpyDeviceToHost))
    return fail("reading the device's wait failure: " + cuda_err(e));
  return 0;
}

void Context::finalize() {
  if (!ctx_) return;
  cudaDeviceSynchronize();
  for (Peer& p : peers_) {
    if (p.qp) mlx5dv_devx_obj_destroy(p.qp);
    if (p.cq) mlx5dv_devx_obj_destroy(p.cq);
    if (p.uar_registered && o_.uar_map == Options::UarMap::kRuntime) cudaHostUnregister(p.uar->base_addr);
    else if (p.uar_registered) cuMemHostUnregister(p.uar->base_addr);
    if (p.uar) mlx5dv_devx_free_uar(p.uar);
    if (p.cq_uar) mlx5dv_devx_free_uar(p.cq_uar);
    if (p.umem) mlx5dv_devx_umem_dereg(p.umem);
    if (p.ctrl_host_registered) cudaHostUnregister(p.ctrl);
    if (p.ctrl && o_.nic_buf == Options::NicBuf::kHost) free(p.ctrl);
    else if (p.ctrl) cudaFree(p.ctrl);
  }
  peers_.clear();
  if (mr_) ibv_dereg_mr(mr_);
  if (heap_) cudaFree(heap_);
  if (d_state_) cudaFree(d_state_);
  if (pd_) ibv_dealloc_pd(pd_);
  ibv_close_device(ctx_);
  ctx_ = nullptr;
  mr_ = nullptr;
  heap_ = nullptr;
  d_state_ = nullptr;
  pd_ = nullptr;
  up_ = false;
}

}  // namespace gda
