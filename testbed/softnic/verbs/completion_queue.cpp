// Completion delivery into CQs (overrun -> IBV_EVENT_CQ_ERR), completion-channel
// notification for armed CQs, and the per-context async event queue behind async_fd.
#include <unistd.h>

#include <cerrno>

#include "core/context.hpp"
#include "engine/engine.hpp"

namespace softnic {

void post_async_event(Context* ctx, const ibv_async_event& ev) {
  std::lock_guard<std::mutex> g(ctx->async_mu);
  ctx->async_events.push_back(ev);
  char b = 1;
  // One byte per event: readiness of async_fd mirrors the queue, so poll() works on it.
  ssize_t r = write(ctx->async_write_fd, &b, 1);
  (void)r;
}

void cq_push(Cq* cq, const ibv_wc& wc, bool solicited) {
  if (cq->count == cq->entries.size()) {
    if (!cq->overrun) {
      cq->overrun = true;
      ibv_async_event ev{};
      ev.element.cq = cq->cq();
      ev.event_type = IBV_EVENT_CQ_ERR;
      post_async_event(cq->ctx, ev);
    }
    return;
  }
  cq->entries[(cq->head + cq->count) % cq->entries.size()] = wc;
  cq->count++;
  if (cq->armed && (!cq->solicited_only || solicited || wc.status != IBV_WC_SUCCESS)) {
    cq->armed = false;
    if (cq->cqx.channel) {
      auto* ch = reinterpret_cast<CompChannel*>(cq->cqx.channel);
      ibv_cq* p = cq->cq();
      ssize_t r = write(ch->write_fd, &p, sizeof(p));
      (void)r;
    }
  }
}

}  // namespace softnic
