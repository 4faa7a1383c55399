// The "nccl" provider: the profiler is NCCL's profiler plugin (NCCL_PROFILER_PLUGIN names
// libsigmatrace.so; `sigmatrace profile` sets it). NCCL tells its plugin which collective or
// point-to-point task each proxy operation and step serves, and, just before its IB transport posts
// a work request for a step, the QP and wr_id it will carry. Recorded as they come, these tie every
// verbs operation NCCL's proxy thread posts to the NCCL call whose data it moves: the analysis
// matches each work request to the latest nccl_net_wr of its thread with its QP and wr_id.
//
// Handles are NCCL's to keep and hand back as parents: a task's is its number; a proxy
// operation's is a slot of a fixed ring (what it serves); a step's packs its operation's slot and
// step number. No lock, no allocation after init, no system call on the event path.
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <new>
#include <string>

#include "profiler/providers/nccl/nccl_profiler_abi.h"
#include "profiler/providers/provider.h"
#include "profiler/runtime/recorder.h"

namespace sigmatrace::profiler {

std::atomic<bool> g_nccl_active{false};

namespace nccl {
namespace {

using format::EventType;
using format::NcclTaskKind;
namespace abi = nccl_abi;

bool g_aggregate = false;
pid_t g_pid = 0;

struct Communicator {
  std::atomic<uint64_t> sends{0}, recvs{0};
};

// What a proxy operation serves. NCCL keeps few operations in flight (its proxy pools are small):
// a slot is reused only after kOpSlots later operations began.
struct OpSlot {
  uint64_t task;
  uint32_t channel;
  int32_t peer;
  uint32_t is_send;
};
constexpr uint32_t kOpSlots = 1u << 16;
OpSlot g_ops[kOpSlots];
std::atomic<uint32_t> g_next_op{0};
std::atomic<uint64_t> g_next_task{1};

uintptr_t step_handle(uint32_t slot, int step) {
  return (uintptr_t{slot + 1} << 32) | static_cast<uint32_t>(step);
}

size_t put_name(char* out, size_t at, size_t cap, const char* s, bool tab) {
  if (tab && at < cap) out[at++] = '\t';
  for (; s && *s && at < cap; ++s) out[at++] = *s;
  return at;
}

void record_task(void* context, uint64_t task, NcclTaskKind kind, uint64_t seq, uint64_t count, int64_t peer, uint64_t channels,
                 uint64_t warps, const char* func, const char* datatype, const char* algo, const char* proto) {
  char names[160];
  size_t n = put_name(names, 0, sizeof names, func, false);
  n = put_name(names, n, sizeof names, datatype, true);
  n = put_name(names, n, sizeof names, algo, true);
  n = put_name(names, n, sizeof names, proto, true);
  const uint64_t words[] = {reinterpret_cast<uintptr_t>(context), task, static_cast<uint64_t>(kind), seq, count,
                            static_cast<uint64_t>(peer), channels, warps};
  record_with_bytes<EventType::nccl_task>(words, names, n);
}

abi::Result init(void** context, uint64_t comm_id, int* mask, const char* name, int nodes, int ranks, int rank, abi::DebugLogger) {
  *mask = 0;
  *context = nullptr;
  if (!g_nccl_active.load(std::memory_order_relaxed) || g_aggregate) return abi::kSuccess;
  auto* comm = new (std::nothrow) Communicator;
  if (!comm) return abi::kSuccess;
  *context = comm;
  *mask = abi::kColl | abi::kP2p | abi::kProxyOp | abi::kProxyStep | abi::kNetPlugin;
  const uint64_t words[] = {reinterpret_cast<uintptr_t>(comm), comm_id, static_cast<uint64_t>(int64_t{rank}),
                            static_cast<uint64_t>(int64_t{ranks}), static_cast<uint64_t>(int64_t{nodes})};
  record_with_bytes<EventType::nccl_comm>(words, name, name ? strnlen(name, 256) : 0);
  return abi::kSuccess;
}

abi::Result start_event(void* context, void** handle, abi::EventDescr* d) {
  *handle = nullptr;
  auto* comm = static_cast<Communicator*>(context);
  if (!comm || !d) return abi::kSuccess;
  switch (d->type) {
    case abi::kColl: {
      const uint64_t task = g_next_task.fetch_add(1, std::memory_order_relaxed);
      record_task(context, task, NcclTaskKind::collective, d->coll.seq_number, d->coll.count, d->coll.root, d->coll.channels,
                  d->coll.warps, d->coll.func, d->coll.datatype, d->coll.algorithm, d->coll.protocol);
      *handle = reinterpret_cast<void*>(static_cast<uintptr_t>(task));
      break;
    }
    case abi::kP2p: {
      const uint64_t task = g_next_task.fetch_add(1, std::memory_order_relaxed);
      const bool send = d->p2p.func && strcmp(d->p2p.func, "Send") == 0;
      const uint64_t seq = (send ? comm->sends : comm->recvs).fetch_add(1, std::memory_order_relaxed);
      record_task(context, task, send ? NcclTaskKind::send : NcclTaskKind::recv, seq, d->p2p.count, d->p2p.peer, d->p2p.channels, 0,
                  d->p2p.func, d->p2p.datatype, "", "");
      *handle = reinterpret_cast<void*>(static_cast<uintptr_t>(task));
      break;
    }
    case abi::kProxyOp: {
      const uint32_t slot = g_next_op.fetch_add(1, std::memory_order_relaxed) % kOpSlots;
      // A parent task of another process (a proxy serving several) is not this process's number.
      const uint64_t task = d->proxy_op.pid == g_pid ? reinterpret_cast<uintptr_t>(d->parent) : 0;
      g_ops[slot] = {task, d->proxy_op.channel, d->proxy_op.peer, d->proxy_op.is_send ? 1u : 0u};
      *handle = &g_ops[slot];
      break;
    }
    case abi::kProxyStep: {
      auto* op = static_cast<OpSlot*>(d->parent);
      if (op >= g_ops && op < g_ops + kOpSlots) *handle = reinterpret_cast<void*>(step_handle(static_cast<uint32_t>(op - g_ops), d->proxy_step.step));
      break;
    }
    case abi::kNetPlugin: {
      if ((d->net_plugin.id & abi::kNetTypeMask) != abi::kNetTypeIb || (d->net_plugin.id & 0xffff) != abi::kNetIbVersion1) break;
      const auto* ib = static_cast<const abi::NetIbDescr*>(d->net_plugin.data);
      if (!ib || ib->type != abi::kNetIbQpEvent) break;
      const uintptr_t step = reinterpret_cast<uintptr_t>(d->parent);
      const uint32_t slot = static_cast<uint32_t>(step >> 32);
      OpSlot op{0, 0, -1, 0};
      if (slot >= 1 && slot <= kOpSlots) op = g_ops[slot - 1];
      record<EventType::nccl_net_wr>(op.task, uint64_t{op.channel}, static_cast<uint64_t>(int64_t{op.peer}), uint64_t{op.is_send},
                                     uint64_t{static_cast<uint32_t>(step)}, static_cast<uint64_t>(static_cast<uint32_t>(ib->qp.qp_num)),
                                     ib->qp.wr_id);
      break;
    }
    default: break;
  }
  return abi::kSuccess;
}

abi::Result stop_event(void*) { return abi::kSuccess; }
abi::Result record_event_state(void*, int, abi::EventStateArgs*) { return abi::kSuccess; }
abi::Result finalize(void* context) {
  delete static_cast<Communicator*>(context);
  return abi::kSuccess;
}

}  // namespace
}  // namespace nccl

namespace {
bool init_nccl(const Config& config, std::string* why) {
  std::string other;
  if (env_names_another_library("NCCL_PROFILER_PLUGIN", &other)) {
    *why = "NCCL_PROFILER_PLUGIN names another profiler plugin (" + other + "): NCCL's operations are not tied to its calls";
    return false;
  }
  nccl::g_aggregate = config.mode == TraceMode::aggregate;
  nccl::g_pid = getpid();
  return true;
}

const char* const kNcclExports[] = {"ncclProfiler_v5"};
}  // namespace

extern const Provider kNcclProvider = {"nccl", "NCCL's tasks, and which task each work request of its IB transport serves, as NCCL's profiler plugin (NCCL_PROFILER_PLUGIN)",
                                       &init_nccl, &g_nccl_active, nullptr, {}, kNcclExports};

}  // namespace sigmatrace::profiler

// What NCCL looks up by name in the library NCCL_PROFILER_PLUGIN names.
extern "C" {
__attribute__((visibility("default"))) sigmatrace::profiler::nccl_abi::ProfilerV5 ncclProfiler_v5 = {
    "sigmatrace",
    &sigmatrace::profiler::nccl::init,
    &sigmatrace::profiler::nccl::start_event,
    &sigmatrace::profiler::nccl::stop_event,
    &sigmatrace::profiler::nccl::record_event_state,
    &sigmatrace::profiler::nccl::finalize,
};
}
