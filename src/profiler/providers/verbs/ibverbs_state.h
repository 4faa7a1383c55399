// What the ibverbs provider knows about the verbs objects it has seen: contexts (with the real ops
// it replaced), QPs (real ibv_qp_ex wr_* pointers, endpoint identity, the batch being built between
// wr_start and wr_complete) and extended CQs (real polling pointers).
//
// Read on the data path: every lookup is lock-free (a scan of a tiny array for contexts, an
// open-addressing table keyed by object address for QPs and CQs). Entries are written only when
// objects are created, modified or destroyed (control path); a slot is never freed, only marked.
#pragma once
#pragma GCC visibility push(default)
#include <infiniband/verbs.h>
#pragma GCC visibility pop

#include <atomic>
#include <cerrno>
#include <cstdint>

#include "format/event_types.h"
#include "profiler/providers/provider_kit.h"
#include "profiler/runtime/config.h"
#include "profiler/runtime/hang_watch.h"
#include "profiler/runtime/recorder.h"

namespace sigmatrace::profiler::ibv {

using format::EventType;
using format::IbvCall;

extern std::atomic<bool> g_active;  // the "ibverbs" provider is on
extern TraceMode g_mode;             // fixed at init

inline bool active() { return g_active.load(std::memory_order_relaxed); }

// Bumped whenever a QP's endpoints may change (modify_qp, create, destroy): aggregate mode's
// per-thread memo of the last QP's counters is valid only for the generation it was made in, so
// the data path needs no QP lookup while nothing changes.
extern std::atomic<uint32_t> g_endpoint_generation;
inline void endpoints_changed() { g_endpoint_generation.fetch_add(1, std::memory_order_relaxed); }

using PostSendFn = int (*)(ibv_qp*, ibv_send_wr*, ibv_send_wr**);
using PostRecvFn = int (*)(ibv_qp*, ibv_recv_wr*, ibv_recv_wr**);
using PollCqFn = int (*)(ibv_cq*, int, ibv_wc*);
using PostSrqRecvFn = int (*)(ibv_srq*, ibv_recv_wr*, ibv_recv_wr**);
using ReqNotifyCqFn = int (*)(ibv_cq*, int);
using CreateQpExFn = ibv_qp* (*)(ibv_context*, ibv_qp_init_attr_ex*);
using CreateCqExFn = ibv_cq_ex* (*)(ibv_context*, ibv_cq_init_attr_ex*);
using CreateSrqExFn = ibv_srq* (*)(ibv_context*, ibv_srq_init_attr_ex*);

constexpr uint32_t kMaxContexts = 64;
constexpr uint32_t kMaxPorts = 8;

struct ContextState {
  std::atomic<ibv_context*> ctx;  // published last; null: free slot
  std::atomic<uint8_t> claimed;
  // The functions the context's tables held before they were patched.
  PostSendFn post_send;
  PostRecvFn post_recv;
  PollCqFn poll_cq;
  PostSrqRecvFn post_srq_recv;
  ReqNotifyCqFn req_notify_cq;
  CreateQpExFn create_qp_ex;
  CreateCqExFn create_cq_ex;
  CreateSrqExFn create_srq_ex;
  uint16_t lid[kMaxPorts + 1];  // by port number
};

extern ContextState g_contexts[kMaxContexts];
extern std::atomic<uint32_t> g_context_high_water;

[[gnu::always_inline]] inline ContextState* find_context(const ibv_context* c) {
  uint32_t n = g_context_high_water.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < n; ++i)
    if (g_contexts[i].ctx.load(std::memory_order_acquire) == c) return &g_contexts[i];
  return nullptr;
}

// The wr_* pointers of an ibv_qp_ex that the provider wraps (the rest are left alone).
struct QpExReal {
  decltype(ibv_qp_ex::wr_atomic_cmp_swp) atomic_cmp_swp;
  decltype(ibv_qp_ex::wr_atomic_fetch_add) atomic_fetch_add;
  decltype(ibv_qp_ex::wr_rdma_read) rdma_read;
  decltype(ibv_qp_ex::wr_rdma_write) rdma_write;
  decltype(ibv_qp_ex::wr_rdma_write_imm) rdma_write_imm;
  decltype(ibv_qp_ex::wr_send) send;
  decltype(ibv_qp_ex::wr_send_imm) send_imm;
  decltype(ibv_qp_ex::wr_send_inv) send_inv;
  decltype(ibv_qp_ex::wr_set_inline_data) set_inline_data;
  decltype(ibv_qp_ex::wr_set_inline_data_list) set_inline_data_list;
  decltype(ibv_qp_ex::wr_set_sge) set_sge;
  decltype(ibv_qp_ex::wr_set_sge_list) set_sge_list;
  decltype(ibv_qp_ex::wr_start) start;
  decltype(ibv_qp_ex::wr_complete) complete;
  decltype(ibv_qp_ex::wr_abort) abort;
};

// The ibv_wr_opcode values a batch is counted by (the builders' opcodes are all below 16).
inline constexpr uint32_t kBatchOpcodes = 16;

// A work request being built through ibv_qp_ex (opcode set, data not yet).
struct PendingWr {
  uint64_t wr_id;
  uint64_t remote_addr;
  uint64_t bytes;
  uint32_t opcode;
  uint32_t rkey;
  uint32_t send_flags;
  uint32_t imm_data;
  uint32_t num_sge;
  bool open;
};

struct QpState {
  std::atomic<const void*> key;  // the ibv_qp*; null: never used; kTombstone: destroyed
  uint32_t qp_num;
  uint8_t port;
  ContextState* context;
  uint64_t local_endpoint;   // lid << 32 | qp_num
  uint64_t remote_endpoint;  // remote lid << 32 | dest qp_num, 0 until RTR
  ibv_qp_ex* qpx;            // non-null when the wr_* pointers are patched
  QpExReal real;
  // Accessed only between wr_start and wr_complete, when the QP's owner serialises posting.
  // Full mode keeps the whole WR being built (wr) and records it when the next one starts or at
  // wr_complete. Aggregate and Simple modes count the batch per opcode instead: the opcode setter
  // counts the WR, the data setter adds its bytes to the opcode last set, and wr_complete counts
  // the batch. No setter has anything left to do after the real one, so each tail-calls it.
  PendingWr wr;
  uint32_t batch_wrs;
  uint32_t batch_opcode;  // of the WR being built
  uint64_t batch_bytes;
  uint64_t batch_opcode_mask;
  uint32_t batch_wrs_by_opcode[kBatchOpcodes];
  uint64_t batch_bytes_by_opcode[kBatchOpcodes];
};

struct CqState {
  std::atomic<const void*> key;  // the ibv_cq_ex*
  uint64_t wc_flags;             // IBV_WC_EX_WITH_* requested at creation
  decltype(ibv_cq_ex::start_poll) start_poll;
  decltype(ibv_cq_ex::next_poll) next_poll;
  decltype(ibv_cq_ex::read_opcode) read_opcode;
  decltype(ibv_cq_ex::read_vendor_err) read_vendor_err;
  decltype(ibv_cq_ex::read_byte_len) read_byte_len;
  decltype(ibv_cq_ex::read_imm_data) read_imm_data;
  decltype(ibv_cq_ex::read_qp_num) read_qp_num;
  decltype(ibv_cq_ex::read_src_qp) read_src_qp;
  decltype(ibv_cq_ex::read_wc_flags) read_wc_flags;
};

inline const void* const kTombstone = reinterpret_cast<const void*>(uintptr_t{1});

// Open addressing keyed by address. find() is wait-free; insert()/erase() run on control paths.
template <typename State, uint32_t kSlots>
struct ObjectTable {
  static_assert((kSlots & (kSlots - 1)) == 0);
  static constexpr uint32_t kMaxProbe = 64;
  State slots[kSlots];

  static uint32_t home(const void* p) {
    return static_cast<uint32_t>(((reinterpret_cast<uintptr_t>(p) >> 4) * 0x9E3779B97F4A7C15ull) >> 40) & (kSlots - 1);
  }
  [[gnu::always_inline]] State* find(const void* p) {
    uint32_t i = home(p);
    for (uint32_t probe = 0; probe < kMaxProbe; ++probe, i = (i + 1) & (kSlots - 1)) {
      const void* k = slots[i].key.load(std::memory_order_acquire);
      if (k == p) return &slots[i];
      if (k == nullptr) return nullptr;
    }
    return nullptr;
  }
  // Returns the slot for p, claimed but not yet published (the caller fills it, then publish()).
  State* insert(const void* p) {
    if (State* s = find(p)) return s;
    uint32_t i = home(p);
    for (uint32_t probe = 0; probe < kMaxProbe; ++probe, i = (i + 1) & (kSlots - 1)) {
      const void* k = slots[i].key.load(std::memory_order_acquire);
      if ((k == nullptr || k == kTombstone) && slots[i].key.compare_exchange_strong(k, kClaim))
        return &slots[i];
    }
    return nullptr;
  }
  void publish(State* s, const void* p) { s->key.store(p, std::memory_order_release); }
  void erase(const void* p) {
    if (State* s = find(p)) s->key.store(kTombstone, std::memory_order_release);
  }
  static inline const void* const kClaim = reinterpret_cast<const void*>(uintptr_t{2});
};

extern ObjectTable<QpState, 8192> g_qps;
extern ObjectTable<CqState, 1024> g_cqs;

// The QP state for qp, remembered per thread for the next call (most threads drive one QP at a time).
extern thread_local constinit QpState* t_last_qp __attribute__((tls_model("initial-exec")));
[[gnu::always_inline]] inline QpState* find_qp(const void* qp) {
  QpState* s = t_last_qp;
  if (__builtin_expect(s != nullptr && s->key.load(std::memory_order_relaxed) == qp, 1)) return s;
  s = g_qps.find(qp);
  t_last_qp = s;
  return s;
}

// Control-path helpers -----------------------------------------------------------------------

// One depth for libibverbs and mlx5dv: a verbs library that calls its own exported functions
// internally must not produce a second event.
using Reentry = kit::Reentry<struct VerbsCalls>;
using kit::ErrnoKeeper;

// Every failed call, in every mode. error: the errno value (positive) or a negative return.
inline void record_error(IbvCall call, uint64_t object, int64_t error) {
  record<EventType::ibv_call_error>(static_cast<uint64_t>(call), object, error);
}

// Events that are not data path: recorded in simple and full mode (aggregate mode keeps counters only).
inline bool control_events() { return g_mode != TraceMode::aggregate; }

uint64_t gid_subnet_prefix(const ibv_gid& g);
uint64_t gid_interface_id(const ibv_gid& g);

// ibverbs_dispatch_patch.cpp: installs the wrappers in an object's dispatch tables.
ContextState* patch_context(ibv_context* ctx);  // registers the context; null when the table is full
void forget_context(ibv_context* ctx);
QpState* track_qp(ibv_qp* qp);                  // registers the QP (idempotent)
void patch_qp_ex(QpState* s, ibv_qp_ex* qpx);   // (re)applies the wr_* wrappers
void forget_qp(ibv_qp* qp);
void patch_cq_ex(ibv_cq_ex* cq, uint64_t wc_flags);
void forget_cq(const void* cq);

// ibverbs_events.cpp: what is recorded when objects come and go.
void on_device_opened(ibv_context* ctx, ibv_device* dev);
void on_qp_created(ibv_qp* qp, ibv_pd* pd, const ibv_qp_cap& cap, uint32_t qp_type, ibv_cq* send_cq, ibv_cq* recv_cq,
                   ibv_srq* srq, bool extended);
void on_qp_modified(ibv_qp* qp, const ibv_qp_attr* attr, int mask);
void on_cq_created(ibv_context* ctx, ibv_cq* cq, int cqe);
void on_cq_ex_created(ibv_context* ctx, ibv_cq_ex* cq, int cqe, uint64_t wc_flags);
void on_srq_created(ibv_pd* pd, ibv_srq* srq, uint32_t max_wr);

}  // namespace sigmatrace::profiler::ibv
