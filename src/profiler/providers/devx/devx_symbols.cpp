// The "devx" provider: the mlx5 devx calls with which GPU-initiated stacks (NVSHMEM IBGDA, NCCL
// GIN/GDAKI) build their queues without verbs — UAR pages, umem registrations, and the
// CREATE_CQ / CREATE_QP / QP transition commands, decoded from their mailboxes (devx_commands.h).
// These are rare calls, recorded in every mode. The UAR pages are also what the doorbell hijack
// looks for (profiler/doorbell/uar_registry.h). Return values and errno are the real
// function's; a missing real function fails with ENOSYS (logged once).
#pragma GCC visibility push(default)
#include <infiniband/mlx5dv.h>
#pragma GCC visibility pop

#include <mutex>

#include "format/event_types.h"
#include "mlx5/prm.hpp"
#include "profiler/doorbell/hijack.h"
#include "profiler/doorbell/send_queues.h"
#include "profiler/doorbell/uar_registry.h"
#include "profiler/gpu/cuda_driver.h"
#include "profiler/gpu/device_copy.h"
#include "profiler/providers/devx/devx_commands.h"
#include "profiler/providers/dl_resolver_hooks.h"
#include "profiler/providers/provider.h"
#include "profiler/runtime/recorder.h"

namespace sigmatrace::profiler::devx {

std::atomic<bool> g_active{false};

#define SIGMATRACE_DEVX_SYMBOLS(X)                                                                    \
  X(mlx5dv_devx_alloc_uar) X(mlx5dv_devx_free_uar) X(mlx5dv_devx_umem_reg) X(mlx5dv_devx_umem_reg_ex) \
  X(mlx5dv_devx_umem_dereg) X(mlx5dv_devx_obj_create) X(mlx5dv_devx_obj_modify) X(mlx5dv_devx_obj_destroy)

namespace real {
#define SIGMATRACE_REAL_SYMBOL(name) RealSymbol name{#name, "libmlx5.so.1", {}, {}};
SIGMATRACE_DEVX_SYMBOLS(SIGMATRACE_REAL_SYMBOL)
#undef SIGMATRACE_REAL_SYMBOL
}  // namespace real

using Reentry = kit::Reentry<struct DevxCalls>;
using format::EventType;
namespace prm = sigmatrace::mlx5::prm;

inline bool tracing(const Reentry& g) { return g.outer && g_active.load(std::memory_order_relaxed); }

namespace {

// umems (to place a QP's send queue in memory and on its GPU) and the objects created (to name
// what is destroyed). Control path: one mutex.
struct Umem {
  uintptr_t handle;
  uint32_t id;
  uint64_t addr;
  format::MemoryKind kind;
  int64_t gpu;
};
struct Object {
  uintptr_t handle;
  uint16_t command;
  uint32_t id;
  uintptr_t context;  // its device: QP numbers are per device
};
// A fixed table of what devx handed out, keyed by handle (control path, under g_mutex).
template <typename Row, size_t N>
struct HandleTable {
  Row rows[N];
  size_t count = 0;
  void add(const Row& r) {
    if (count < N) rows[count++] = r;
  }
  // The row of handle, removed; fallback when there is none.
  Row take(uintptr_t handle, const Row& fallback) {
    for (size_t i = 0; i < count; ++i)
      if (rows[i].handle == handle) {
        Row r = rows[i];
        rows[i] = rows[--count];
        return r;
      }
    return fallback;
  }
};
std::mutex g_mutex;
HandleTable<Umem, 4096> g_umems;
HandleTable<Object, 8192> g_objects;

void add_umem(const Umem& u) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_umems.add(u);
}
Umem take_umem(uintptr_t handle) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_umems.take(handle, Umem{handle, 0, 0, format::MemoryKind::unknown, -1});
}
bool find_umem(uint32_t id, Umem* out) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (size_t i = 0; i < g_umems.count; ++i)
    if (g_umems.rows[i].id == id) return *out = g_umems.rows[i], true;
  return false;
}
void add_object(const Object& o) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_objects.add(o);
}
Object take_object(uintptr_t handle) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_objects.take(handle, Object{handle, 0, 0, 0});
}

void after_umem_reg(ibv_context* ctx, mlx5dv_devx_umem* umem, void* addr, size_t size, uint32_t access, bool dmabuf, int saved_errno) {
  int64_t gpu = -1;
  const auto a = reinterpret_cast<uint64_t>(addr);
  format::MemoryKind kind = dmabuf ? format::MemoryKind::unknown : cuda::memory_kind(a, &gpu);
  if (umem) add_umem(Umem{reinterpret_cast<uintptr_t>(umem), umem->umem_id, a, kind, gpu});
  record<EventType::devx_umem_reg>(reinterpret_cast<uint64_t>(ctx), reinterpret_cast<uint64_t>(umem), uint64_t{umem ? umem->umem_id : 0}, a,
                                   uint64_t{size}, uint64_t{access}, static_cast<uint64_t>(kind), gpu,
                                   int64_t{umem ? 0 : saved_errno});
}

// Which memory addr of umem u lies in, and for GPU memory the CUDA context that owns it (memory
// of CUDA's virtual memory API belongs to none: the creating thread's reaches it). Unknown stays
// unknown (a dma-buf umem).
void locate(const Umem& u, uint64_t addr, format::SqMemory* memory, uintptr_t* cu_context) {
  if (u.kind == format::MemoryKind::host) *memory = format::SqMemory::host;
  if (u.kind != format::MemoryKind::gpu) return;
  *memory = format::SqMemory::gpu;
  *cu_context = cuda::memory_context(addr);
  if (!*cu_context) *cu_context = cuda::current_context();
}

// Where WQE recovery finds the queue (profiler/doorbell/send_queues.h).
void add_send_queue(ibv_context* ctx, const QpCreate& qp, const Umem& sq, uint64_t sq_addr) {
  doorbell::SendQueue q;
  q.device_context = reinterpret_cast<uintptr_t>(ctx);
  q.qpn = qp.qpn;
  q.dc_initiator = qp.service_type == prm::kQpStDci;
  q.log_wqebbs = qp.log_sq_size;
  q.addr = sq_addr;
  q.gpu = sq.gpu;
  if (sq_addr && qp.log_sq_size <= 16) locate(sq, sq_addr, &q.memory, &q.cu_context);
  q.uar_page = qp.uar_page;
  Umem dbr;
  if (qp.dbr_in_umem && find_umem(qp.dbr_umem_id, &dbr) && dbr.addr) {
    q.dbr_addr = dbr.addr + qp.dbr_offset;
    locate(dbr, q.dbr_addr, &q.dbr_memory, &q.dbr_cu_context);
  }
  doorbell::add_send_queue(q);
}

void after_obj_create(ibv_context* ctx, mlx5dv_devx_obj* obj, const void* in, size_t inlen, const void* out, size_t outlen) {
  const uint16_t cmd = command_of(in, inlen);
  uint32_t status = 0, syndrome = 0;
  output_status(out, outlen, &status, &syndrome);
  const auto h = reinterpret_cast<uint64_t>(obj);
  const auto c = reinterpret_cast<uint64_t>(ctx);
  if (obj) add_object(Object{reinterpret_cast<uintptr_t>(obj), cmd, created_object_id(cmd, out, outlen), reinterpret_cast<uintptr_t>(ctx)});
  CqCreate cq;
  QpCreate qp;
  if (decode_create_cq(in, inlen, out, outlen, &cq)) {
    record<EventType::devx_cq_create>(c, h, uint64_t{cq.cqn}, uint64_t{cq.log_cq_size}, uint64_t{cq.umem_id}, cq.umem_offset,
                                      uint64_t{cq.dbr_umem_id}, cq.dbr_offset, uint64_t{cq.uar_page}, uint64_t{cq.collapsed},
                                      uint64_t{status}, uint64_t{syndrome});
  } else if (decode_create_qp(in, inlen, out, outlen, &qp)) {
    Umem sq{0, 0, 0, format::MemoryKind::unknown, -1};
    uint64_t sq_addr = 0;
    if (qp.sq_in_umem && find_umem(qp.sq_umem_id, &sq)) sq_addr = sq.addr + qp.sq_umem_offset;
    if (obj && status == 0) add_send_queue(ctx, qp, sq, sq_addr);
    record<EventType::devx_qp_create>(c, h, uint64_t{qp.qpn}, uint64_t{qp.service_type}, uint64_t{qp.pd}, uint64_t{qp.log_sq_size},
                                      uint64_t{qp.log_rq_size}, uint64_t{qp.sq_umem_id}, qp.sq_umem_offset, sq_addr,
                                      uint64_t{qp.dbr_umem_id}, qp.dbr_offset, uint64_t{qp.uar_page}, uint64_t{qp.send_cqn},
                                      uint64_t{qp.recv_cqn}, static_cast<uint64_t>(sq.kind), sq.gpu, uint64_t{status},
                                      uint64_t{syndrome});
  } else {
    record<EventType::devx_obj_create>(c, h, uint64_t{cmd}, uint64_t{status}, uint64_t{syndrome});
  }
}

}  // namespace
}  // namespace sigmatrace::profiler::devx

using namespace sigmatrace::profiler;
using namespace sigmatrace::profiler::devx;

#define SIGMATRACE_DEVX_REAL_OR(name, type, fail) SIGMATRACE_CONTROL_CALL(devx::real::name, type, fail)

SIGMATRACE_EXPORT mlx5dv_devx_uar* mlx5dv_devx_alloc_uar(ibv_context* ctx, uint32_t flags) {
  SIGMATRACE_DEVX_REAL_OR(mlx5dv_devx_alloc_uar, mlx5dv_devx_uar* (*)(ibv_context*, uint32_t), nullptr);
  mlx5dv_devx_uar* uar = fn(ctx, flags);
  if (!tracing(guard)) return uar;
  kit::ErrnoKeeper keep;
  if (uar) {
    doorbell::add_uar({reinterpret_cast<uintptr_t>(uar), reinterpret_cast<uintptr_t>(ctx), reinterpret_cast<uintptr_t>(uar->base_addr),
                       reinterpret_cast<uintptr_t>(uar->reg_addr), uar->page_id, flags});
    record<EventType::devx_uar_alloc>(reinterpret_cast<uint64_t>(ctx), reinterpret_cast<uint64_t>(uar), uint64_t{uar->page_id},
                                      reinterpret_cast<uint64_t>(uar->base_addr), reinterpret_cast<uint64_t>(uar->reg_addr), uint64_t{flags},
                                      int64_t{0});
  } else {
    record<EventType::devx_uar_alloc>(reinterpret_cast<uint64_t>(ctx), uint64_t{0}, uint64_t{0}, uint64_t{0}, uint64_t{0}, uint64_t{flags},
                                      int64_t{keep.saved});
  }
  return uar;
}

SIGMATRACE_EXPORT void mlx5dv_devx_free_uar(mlx5dv_devx_uar* uar) {
  kit::ControlSpan control_span;
  auto fn = real_function<void (*)(mlx5dv_devx_uar*)>(devx::real::mlx5dv_devx_free_uar);
  if (!fn) return;
  Reentry guard;
  const uint64_t page = uar ? uar->page_id : 0;
  if (uar) {
    doorbell::remove_uar(reinterpret_cast<uintptr_t>(uar));
    doorbell::before_uar_free(reinterpret_cast<uintptr_t>(uar->base_addr));
  }
  fn(uar);
  if (!tracing(guard) || !uar) return;
  kit::ErrnoKeeper keep;
  record<EventType::devx_uar_free>(reinterpret_cast<uint64_t>(uar), page);
}

SIGMATRACE_EXPORT mlx5dv_devx_umem* mlx5dv_devx_umem_reg(ibv_context* ctx, void* addr, size_t size, uint32_t access) {
  SIGMATRACE_DEVX_REAL_OR(mlx5dv_devx_umem_reg, mlx5dv_devx_umem* (*)(ibv_context*, void*, size_t, uint32_t), nullptr);
  mlx5dv_devx_umem* umem = fn(ctx, addr, size, access);
  if (!tracing(guard)) return umem;
  kit::ErrnoKeeper keep;
  after_umem_reg(ctx, umem, addr, size, access, false, keep.saved);
  return umem;
}

SIGMATRACE_EXPORT mlx5dv_devx_umem* mlx5dv_devx_umem_reg_ex(ibv_context* ctx, mlx5dv_devx_umem_in* in) {
  SIGMATRACE_DEVX_REAL_OR(mlx5dv_devx_umem_reg_ex, mlx5dv_devx_umem* (*)(ibv_context*, mlx5dv_devx_umem_in*), nullptr);
  mlx5dv_devx_umem* umem = fn(ctx, in);
  if (!tracing(guard) || !in) return umem;
  kit::ErrnoKeeper keep;
  after_umem_reg(ctx, umem, in->addr, in->size, in->access, (in->comp_mask & MLX5DV_UMEM_MASK_DMABUF) != 0, keep.saved);
  return umem;
}

SIGMATRACE_EXPORT int mlx5dv_devx_umem_dereg(mlx5dv_devx_umem* umem) {
  SIGMATRACE_DEVX_REAL_OR(mlx5dv_devx_umem_dereg, int (*)(mlx5dv_devx_umem*), ENOSYS);
  const uint64_t id = umem ? umem->umem_id : 0;
  int r = fn(umem);
  if (!tracing(guard)) return r;
  kit::ErrnoKeeper keep;
  if (r == 0) take_umem(reinterpret_cast<uintptr_t>(umem));
  record<EventType::devx_umem_dereg>(reinterpret_cast<uint64_t>(umem), id, int64_t{r});
  return r;
}

SIGMATRACE_EXPORT mlx5dv_devx_obj* mlx5dv_devx_obj_create(ibv_context* ctx, const void* in, size_t inlen, void* out, size_t outlen) {
  SIGMATRACE_DEVX_REAL_OR(mlx5dv_devx_obj_create, mlx5dv_devx_obj* (*)(ibv_context*, const void*, size_t, void*, size_t), nullptr);
  mlx5dv_devx_obj* obj = fn(ctx, in, inlen, out, outlen);
  if (!tracing(guard)) return obj;
  kit::ErrnoKeeper keep;
  after_obj_create(ctx, obj, in, inlen, out, outlen);
  return obj;
}

SIGMATRACE_EXPORT int mlx5dv_devx_obj_modify(mlx5dv_devx_obj* obj, const void* in, size_t inlen, void* out, size_t outlen) {
  SIGMATRACE_DEVX_REAL_OR(mlx5dv_devx_obj_modify, int (*)(mlx5dv_devx_obj*, const void*, size_t, void*, size_t), ENOSYS);
  int r = fn(obj, in, inlen, out, outlen);
  if (!tracing(guard)) return r;
  kit::ErrnoKeeper keep;
  QpModify m;
  if (!decode_modify_qp(in, inlen, &m)) return r;
  uint32_t status = 0, syndrome = 0;
  output_status(out, outlen, &status, &syndrome);
  if (r != 0 && status == 0) status = 0x100 | uint32_t(r & 0xff);  // the call failed before the device answered
  record<EventType::devx_qp_modify>(reinterpret_cast<uint64_t>(obj), uint64_t{m.qpn}, uint64_t{m.command}, uint64_t{m.remote_qpn},
                                    uint64_t{m.remote_lid}, m.remote_gid_hi, m.remote_gid_lo, uint64_t{m.send_psn}, uint64_t{m.recv_psn},
                                    uint64_t{m.mtu}, uint64_t{status}, uint64_t{syndrome});
  return r;
}

SIGMATRACE_EXPORT int mlx5dv_devx_obj_destroy(mlx5dv_devx_obj* obj) {
  SIGMATRACE_DEVX_REAL_OR(mlx5dv_devx_obj_destroy, int (*)(mlx5dv_devx_obj*), ENOSYS);
  int r = fn(obj);
  if (!tracing(guard)) return r;
  kit::ErrnoKeeper keep;
  Object o = take_object(reinterpret_cast<uintptr_t>(obj));
  if (r == 0 && o.command == prm::kCreateQp) doorbell::remove_send_queue(o.context, o.id);
  record<EventType::devx_obj_destroy>(reinterpret_cast<uint64_t>(obj), uint64_t{o.command}, uint64_t{o.id}, int64_t{r});
  return r;
}

namespace sigmatrace::profiler {
namespace {
const InterposedSymbol kDevxSymbols[] = {
#define SIGMATRACE_INTERPOSED(name) {&devx::real::name, reinterpret_cast<void*>(&::name), &devx::g_active},
    SIGMATRACE_DEVX_SYMBOLS(SIGMATRACE_INTERPOSED)
#undef SIGMATRACE_INTERPOSED
};
bool init_devx(const Config&, std::string*) { return true; }
const InterposedSymbolTable kDevxInterposedSymbols = {kDevxSymbols, sizeof kDevxSymbols / sizeof kDevxSymbols[0]};
}  // namespace
extern const Provider kDevxProvider = {"devx", "mlx5 devx: UAR pages, umems, and CQs/QPs created with PRM commands", &init_devx,
                                       &devx::g_active, &kDevxInterposedSymbols};
}  // namespace sigmatrace::profiler
