// An opened device: the verbs_context the application sees, plus its async event queue.
#pragma once
#include <infiniband/verbs.h>

#include <cstddef>
#include <deque>
#include <mutex>

#include "core/device_registry.hpp"

namespace softnic {

struct Context {
  verbs_context vctx;  // must stay first; applications get &vctx.context
  Device* dev;
  std::mutex async_mu;
  std::deque<ibv_async_event> async_events;
  int async_write_fd = -1;  // async_fd (read end) is in vctx.context.async_fd
  ibv_context* ibctx() { return &vctx.context; }
};

inline Context* to_ctx(ibv_context* c) {
  return reinterpret_cast<Context*>(reinterpret_cast<char*>(c) - offsetof(verbs_context, context));
}

// Queues an async event on the context and makes async_fd readable.
void post_async_event(Context* ctx, const ibv_async_event& ev);

}  // namespace softnic
