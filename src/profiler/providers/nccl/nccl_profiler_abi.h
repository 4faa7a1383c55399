// The part of NCCL's profiler plugin interface (version 5, NCCL 2.28) the profiler implements,
// declared from the layout NCCL's plugin headers document: NCCL dlopens the library
// NCCL_PROFILER_PLUGIN names, takes its `ncclProfiler_v5` object and calls init once per
// communicator, then startEvent/stopEvent/recordEventState for the events init asked for.
// Only the members read here are spelled out; the rest keep their place as padding.
#pragma once
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace sigmatrace::profiler::nccl_abi {

using Result = int;  // ncclResult_t: 0 is ncclSuccess
constexpr Result kSuccess = 0;
using DebugLogger = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

// Event types (ncclProfileColl, ...): bits of the activation mask init returns.
enum : int {
  kGroup = 1 << 0,
  kColl = 1 << 1,
  kP2p = 1 << 2,
  kProxyOp = 1 << 3,
  kProxyStep = 1 << 4,
  kProxyCtrl = 1 << 5,
  kKernelCh = 1 << 6,
  kNetPlugin = 1 << 7,
};

// netPlugin.id: the network plugin's type in the upper 16 bits, its descriptor version below.
constexpr int64_t kNetTypeMask = ~int64_t{0xffff};
constexpr int64_t kNetTypeIb = int64_t{1} << 16;
constexpr int64_t kNetIbVersion1 = 1;
constexpr uint8_t kNetIbQpEvent = 1;  // ncclProfileQp

struct EventDescr {
  uint64_t type;
  void* parent;
  int rank;
  union {
    struct {
      uint64_t seq_number;
      const char* func;
      const void* send_buff;
      void* recv_buff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t channels;
      uint8_t warps;
      const char* algorithm;
      const char* protocol;
      void* parent_group;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t channels;
      void* parent_group;
    } p2p;
    struct {
      pid_t pid;  // the process the parent task belongs to
      uint8_t channel;
      int peer;
      int steps;
      int chunk_size;
      int is_send;
    } proxy_op;
    struct {
      int step;
    } proxy_step;
    struct {
      int64_t id;
      void* data;
    } net_plugin;
  };
};

// NCCL's IB transport's descriptor of one work request (netPlugin.data, version 1).
struct NetIbDescr {
  uint8_t type;
  struct {
    int device;
    uint64_t wr_id;
    int opcode;
    int qp_num;
    size_t length;
  } qp;
};

union EventStateArgs {
  void* reserved[2];
};

struct ProfilerV5 {
  const char* name;
  Result (*init)(void** context, uint64_t comm_id, int* activation_mask, const char* comm_name, int nodes, int ranks,
                 int rank, DebugLogger log);
  Result (*start_event)(void* context, void** handle, EventDescr* descr);
  Result (*stop_event)(void* handle);
  Result (*record_event_state)(void* handle, int state, EventStateArgs* args);
  Result (*finalize)(void* context);
};

static_assert(offsetof(EventDescr, coll) == 24, "NCCL's event descriptor: the union follows type, parent, rank");
static_assert(offsetof(EventDescr, coll.channels) == 80, "NCCL's v5 collective descriptor layout");
static_assert(offsetof(NetIbDescr, qp.qp_num) == 28, "NCCL's IB QP event descriptor layout");

}  // namespace sigmatrace::profiler::nccl_abi
