// What the ucx provider's two halves share: the UCP symbol shims (ucx_ucp_control.cpp, ucx_ucp_data_path.cpp) and the
// UCT ops-table patching (ucx_uct_patch.cpp). The shims record one event per UCP call; the UCT
// wrappers note, per thread, which interface and endpoint (lane) the current UCP call went out on.
// Everything here is read on application threads: no locks, no allocation, no system calls.
#pragma once
#include <atomic>
#include <cerrno>
#include <cstdint>

#include "format/event_types.h"
#include "profiler/providers/provider_kit.h"
#include "profiler/providers/ucx/ucx_abi.h"
#include "profiler/runtime/config.h"
#include "profiler/runtime/recorder.h"

namespace sigmatrace::profiler::ucx {

using format::EventType;
using format::UcxOp;

extern std::atomic<bool> g_active;  // the "ucx" provider is on
extern TraceMode g_mode;             // fixed at init
inline bool active() { return g_active.load(std::memory_order_relaxed); }

// The UCT interface/endpoint of the last UCT data call on this thread. A UCP shim clears it before
// calling UCP and reads it after: non-null means the operation left through that lane during the call.
struct UctLane {
  abi::uct_iface* iface;
  abi::uct_ep* ep;
};
extern thread_local constinit UctLane t_uct_lane __attribute__((tls_model("initial-exec")));

// The outermost traced UCP call on this thread: libucp calls its own exported functions through
// its PLT (ucp_tag_send_nb -> ucp_tag_send_nbx, ucp_ep_flush -> ucp_ep_flush_nbx).
using Reentry = kit::Reentry<struct UcpCalls>;
using kit::ErrnoKeeper;

inline bool control_events() { return g_mode != TraceMode::aggregate; }

inline void record_error(UcxOp call, const void* object, int64_t status) {
  record<EventType::ucx_call_error>(static_cast<uint64_t>(call), reinterpret_cast<uintptr_t>(object), status);
}

}  // namespace sigmatrace::profiler::ucx
