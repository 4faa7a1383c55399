// The per-process NIC engine: owns the wire endpoint, the QP number space and the progress
// loop (transmit from send queues, execute incoming requests as responder, deliver
// responses and completions). A background thread spins briefly, then sleeps on the
// endpoint's futex doorbell, so responder work happens even when the application is idle.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <sys/types.h>

#include <thread>
#include <vector>

#include "core/objects.hpp"
#include "wire/wire_shm.hpp"

namespace softnic {

class Engine {
 public:
  static Engine& get();

  // Joins the fabric and starts the progress thread on first use. false + errno on failure.
  bool ensure_started();
  void shutdown();

  // Everything below requires mu to be held.
  std::mutex mu;
  uint32_t register_qp(Qp* qp);  // assigns the QP number
  void unregister_qp(Qp* qp);
  Qp* find_qp(uint32_t qpn);
  int endpoint_of(uint32_t qpn, uint32_t* gen_bits) const;

  void submitted(Qp* qp);        // new send WRs were appended: transmit what fits
  void recv_posted(Qp* qp);      // receive WRs appended (flushes when the QP is in ERR)
  bool progress();               // one round of all work; true if anything happened
  void move_to_error(Qp* qp);    // QP -> ERR and flush outstanding WRs
  void forget_dct(Qp* dct);      // a DCT being destroyed: its responder connections go
  void reset_qp(Qp* qp);         // QP -> RESET: forget all queued work silently
  // Application threads that spin in poll_cq drain the rings themselves; while they do,
  // producers skip waking our engine thread. Returns after re-checking the rings when the
  // flag is cleared, so a packet that raced with the change is not left waiting.
  void app_polling(bool on) {
    if (on) {
      wire.set_app_polling(true);
    } else if (wire.app_polling()) {
      wire.set_app_polling(false);
      progress();
    }
  }

  Wire wire;

 private:
  void run();
  bool transmit(Qp* qp);
  bool send_responses(Qp* qp);
  void handle_packet(int src, PacketHeader* h);
  void handle_request(Qp* qp, int src, PacketHeader* h);
  void handle_response(Qp* qp, PacketHeader* h);
  Qp* dc_connection(Qp* dct, int src, uint32_t src_qpn);
  void retire(Qp* qp);
  void complete_send(Qp* qp, SendOp& op, ibv_wc_status st);
  void fail_op(Qp* qp, uint32_t msn, ibv_wc_status st);
  bool rewind(Qp* qp, uint32_t msn, uint64_t delay_ns);
  void queue_resp(Qp* qp, const RespItem& it);
  void queue_ack(Qp* qp, uint32_t msn);
  bool take_recv(Qp* qp);
  bool check_peers();
  void flush_sq(Qp* qp);
  void flush_rq(Qp* qp);

  struct Orphan {
    int ep;
    uint32_t qpn;
    uint32_t msn;
    uint32_t psn;
  };
  std::vector<Qp*> qps_;  // indexed by the low 16 bits of the QP number
  std::vector<Qp*> active_;  // QPs with send or response work pending
  std::vector<Orphan> orphans_;  // NAKs for packets addressed to QPs that do not exist
  std::thread* thread_ = nullptr;  // leaked, not joined, in a forked child
  pid_t owner_pid_ = 0;
  static void fork_prepare();
  static void fork_parent();
  static void fork_child();
  std::atomic<bool> running_{false};
  bool started_ = false;
  uint64_t last_peer_check_ns_ = 0;
  uint64_t next_deadline_ns_ = 0;
  uint64_t tx_messages_ = 0;  // messages given a departure time (SOFTNIC_TX_DELAY_US / _TX_STALL)
  bool tx_blocked_ = false;  // a ring towards a peer was full
  bool realtime_ = false;    // engine thread runs SCHED_FIFO: never busy-spin
};

// Completion delivery (completion_queue.cpp); caller holds Engine::mu.
void cq_push(Cq* cq, const ibv_wc& wc, bool solicited);

}  // namespace softnic
