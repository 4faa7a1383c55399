// Progress engine: the process's engine object (start, fork, shutdown, QP numbers), one round of
// progress (wire poll, responses, transmission, dead-peer checks) and the background progress
// thread. The requester, the responder and QP state changes are in the engine_*.cpp files.
#include "engine/engine.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/config.hpp"
#include "core/context.hpp"
#include "core/memory_registry.hpp"
#include "engine/engine_internal.hpp"
#include "engine/op_log.hpp"

namespace softnic {

using namespace engine_detail;

Engine& Engine::get() {
  static Engine* e = [] {
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    return new Engine();  // never destroyed: the exit hook shuts it down instead
  }();
  return *e;
}

// fork() must not happen while another thread holds the engine lock, and a child must not
// act as its parent's endpoint (its exit would otherwise tear down the parent's segments).
void Engine::fork_prepare() { get().mu.lock(); }
void Engine::fork_parent() { get().mu.unlock(); }
void Engine::fork_child() {
  Engine& e = get();
  e.mu.unlock();
  e.thread_ = nullptr;  // the engine thread does not exist in the child
  e.running_ = false;
  e.started_ = false;
  e.owner_pid_ = 0;
  e.active_.clear();
  e.orphans_.clear();
  e.qps_.assign(e.qps_.size(), nullptr);
  e.wire.forget();
}

static void engine_atexit() { Engine::get().shutdown(); }

bool Engine::ensure_started() {
  std::lock_guard<std::mutex> g(mu);
  if (started_) return true;
  if (!wire.join()) return false;
  qps_.assign(1 << 16, nullptr);
  running_ = true;
  thread_ = new std::thread([this] { run(); });
  started_ = true;
  owner_pid_ = getpid();
  static bool hooked = false;
  if (!hooked) atexit(engine_atexit);
  hooked = true;
  return true;
}

void Engine::shutdown() {
  {
    std::lock_guard<std::mutex> g(mu);
    if (!started_ || owner_pid_ != getpid()) return;
    started_ = false;
    running_ = false;
    wire.kick_self();
  }
  if (thread_ && thread_->joinable()) thread_->join();
  delete thread_;
  thread_ = nullptr;
  std::lock_guard<std::mutex> g(mu);
  for (Qp* qp : qps_)
    if (qp) write_op_log(qp);  // QPs the program never destroyed (SOFTNIC_WQE_LOG)
  wire.leave();
}

uint32_t Engine::register_qp(Qp* qp) {
  for (uint32_t i = 16; i < qps_.size(); ++i) {
    if (!qps_[i]) {
      qps_[i] = qp;
      return (uint32_t(wire.slot()) << 18) | ((wire.gen() & 3) << 16) | i;
    }
  }
  return 0;
}

void Engine::unregister_qp(Qp* qp) {
  uint32_t idx = qp->qp()->qp_num & 0xffff;
  if (idx < qps_.size() && qps_[idx] == qp) qps_[idx] = nullptr;
  active_.erase(std::remove(active_.begin(), active_.end(), qp), active_.end());
}

Qp* Engine::find_qp(uint32_t qpn) {
  if (int(qpn >> 18) != wire.slot() || ((qpn >> 16) & 3) != (wire.gen() & 3)) return nullptr;
  return qps_[qpn & 0xffff];
}

int Engine::endpoint_of(uint32_t qpn, uint32_t* gen_bits) const {
  *gen_bits = (qpn >> 16) & 3;
  return int(qpn >> 18) & (kMaxEndpoints - 1);
}


bool Engine::check_peers() {
  bool did = false;
  for (Qp* qp : active_) {
    if (qp->qp()->state != IBV_QPS_RTS && qp->qp()->state != IBV_QPS_SQD) continue;
    if (qp->sq.head == qp->sq.tail) continue;
    // A peer that has gone away may still have ACKs and responses on the wire: those are
    // delivered first, only then is what remains outstanding failed.
    if (!wire.peer_alive(qp->remote_ep, qp->remote_gen_bits) && !wire.pending_from(qp->remote_ep)) {
      // The peer process is gone: what a NIC reports after exhausting transport retries.
      SendQueue& sq = qp->sq;
      if (sq.head == sq.send && sq.send != sq.tail) {
        SendOp& op = sq.at(sq.send);
        op.msn = qp->next_msn;
        sq.send++;
      }
      fail_op(qp, sq.at(sq.head).msn, IBV_WC_RETRY_EXC_ERR);
      did = true;
    }
  }
  return did;
}

bool Engine::progress() {
  bool did = false;
  int n = wire.poll([this](int src, PacketHeader* h) { handle_packet(src, h); }, kPollBudget);
  did |= n > 0;
  if (!orphans_.empty()) {
    size_t k = 0;
    for (; k < orphans_.size(); ++k) {
      const Orphan& o = orphans_[k];
      PacketHeader* h = wire.reserve(o.ep, 0);
      if (!h) {
        tx_blocked_ = true;
        break;
      }
      h->op = WireOp::Nak;
      h->flags = kFirst | kLast;
      h->syndrome = uint16_t(NakCode::QpUnreachable);
      h->dst_qpn = o.qpn;
      h->src_qpn = 0;
      h->msn = o.msn;
      h->psn = o.psn;
      h->payload_len = 0;
      wire.commit(o.ep, h);
    }
    orphans_.erase(orphans_.begin(), orphans_.begin() + k);
    did = true;
  }
  next_deadline_ns_ = 0;
  tx_blocked_ = false;
  for (size_t i = 0; i < active_.size();) {
    Qp* qp = active_[i];
    did |= send_responses(qp);
    did |= transmit(qp);
    bool busy = !qp->resp_q.empty() || qp->sq.head != qp->sq.tail;
    if (!busy) {
      qp->in_tx_list = false;
      active_[i] = active_.back();
      active_.pop_back();
    } else {
      ++i;
    }
  }
  uint64_t now = 0;
  if (!active_.empty()) {
    now = now_ns();
    if (now - last_peer_check_ns_ > kPeerCheckNs) {
      last_peer_check_ns_ = now;
      did |= check_peers();
    }
  }
  wire.flush_doorbells();
  return did;
}

// Responders must run promptly when a packet arrives although the application threads of
// both processes may be spinning on all cores (ib_write_lat spins on memory). A SCHED_FIFO
// engine thread is woken with immediate preemption; it then never busy-spins, so it only
// takes CPU time for real work. Without the privilege (or with SOFTNIC_RT=0) the thread stays
// SCHED_OTHER and spins for SOFTNIC_SPIN_US before sleeping. Measured on the shared 2-CPU
// machine while other builds ran, SCHED_FIFO cut the typical ib_write_lat latency from
// milliseconds (waiting for a scheduler tick) to ~20 us; on an idle machine both are a few us.
static bool try_realtime() {
  const char* v = getenv("SOFTNIC_RT");
  if (v && *v == '0') return false;
  sched_param sp{};
  sp.sched_priority = 1;
  bool ok = sched_setscheduler(0, SCHED_FIFO, &sp) == 0;
  SOFTNIC_LOG("engine thread %s", ok ? "SCHED_FIFO" : "SCHED_OTHER");
  return ok;
}

// Linux >= 6.12 (EEVDF) lets an unprivileged thread ask for a short slice, which gives it an
// early deadline and hence wakeup preemption; older kernels reject the request harmlessly.
static void request_short_slice() {
  struct {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
  } attr{};
  attr.size = sizeof(attr);
  attr.policy = SCHED_OTHER;
  attr.runtime = 100'000;  // 0.1 ms, the smallest slice the kernel accepts
  syscall(SYS_sched_setattr, 0, &attr, 0);
}

void Engine::run() {
  pthread_setname_np(pthread_self(), "softnic-verbs");  // for ps: the GPU experiments log where each thread ran
  realtime_ = try_realtime();
  if (!realtime_) request_short_slice();
  const uint64_t spin_ns = realtime_ ? 0 : uint64_t(config().spin_us) * 1000;
  uint64_t last_work = now_ns();
  while (running_.load(std::memory_order_relaxed)) {
    bool did = false;
    // If an application thread holds the lock it is progressing the engine itself; never
    // spin against it (as SCHED_FIFO that would starve the lock holder).
    if (mu.try_lock()) {
      did = progress();
      mu.unlock();
    }
    uint64_t now = now_ns();
    if (did) {
      last_work = now;
      continue;
    }
    if (now - last_work < spin_ns) {
      sched_yield();
      continue;
    }
    uint32_t seen = wire.doorbell_value();
    wire.set_sleeping(true);
    int timeout_us = 1000000;  // idle: nothing to watch; a doorbell wakes us for work
    {
      std::lock_guard<std::mutex> g(mu);
      did = progress();
      if (tx_blocked_) timeout_us = 50;  // wait for the peer to free ring space
      if (next_deadline_ns_) {
        uint64_t t = now_ns();
        int64_t us = next_deadline_ns_ > t ? int64_t((next_deadline_ns_ - t) / 1000) + 1 : 1;
        if (us < timeout_us) timeout_us = int(us);
      }
      // QPs waiting for their peer: re-check the peer's liveness regularly.
      if (!active_.empty() && timeout_us > 20000) timeout_us = 20000;
      // Producers skip the wake while an application thread polls; if it stops polling
      // without draining, pick the packets up soon anyway.
      if (wire.app_polling() && timeout_us > 1000) timeout_us = 1000;
    }
    if (!did && running_.load()) {
      wire.wait(seen, timeout_us);
      if (config().debug && wire.doorbell_value() == seen) {
        std::lock_guard<std::mutex> g(mu);
        if (progress()) SOFTNIC_LOG("work found after a %d us timeout, not a doorbell", timeout_us);
      }
    }
    wire.set_sleeping(false);
    last_work = now_ns();
  }
}

}  // namespace softnic
