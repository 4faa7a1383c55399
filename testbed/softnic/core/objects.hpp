// Internal representations of the verbs objects. Each embeds the public rdma-core struct as
// its first member, so the pointers handed to applications are the ones verbs.h's inline
// functions dereference (ctx->ops, verbs_context, ibv_qp_ex, ibv_cq_ex).
#pragma once
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "core/operation.hpp"

namespace softnic {

struct Device;
struct Context;

struct Pd {
  ibv_pd pd;  // must stay first
  int refs = 0;  // MRs, QPs, SRQs, AHs and parent domains created on it
  Pd* parent_of = nullptr;  // a parent domain: the protection domain it stands for
  // The protection domain proper: what MR keys are checked against.
  const Pd* protection() const { return parent_of ? parent_of : this; }
};

struct Mr {
  ibv_mr mr;  // must stay first
  Pd* pd;
  int access;
  bool on_gpu = false;
  void* cu_ctx = nullptr;  // CUcontext owning GPU memory
};

struct Ah {
  ibv_ah ah;  // must stay first
  ibv_ah_attr attr;
  mlx5_wqe_av av;  // what mlx5dv_init_obj hands out: the address vector DC initiators copy
};

struct CompChannel {
  ibv_comp_channel ch;  // must stay first
  int write_fd;
};

struct Cq {
  ibv_cq_ex cqx;  // must stay first; its leading fields are an ibv_cq
  Context* ctx;
  std::vector<ibv_wc> entries;
  uint32_t head = 0, count = 0;
  bool armed = false, solicited_only = false;
  bool overrun = false;
  uint64_t wc_flags = 0;   // fields requested through ibv_create_cq_ex
  ibv_wc cur{};            // entry being read through the cq_ex read_* accessors
  bool polling = false;
  int qp_refs = 0;
  ibv_cq* cq() { return reinterpret_cast<ibv_cq*>(&cqx); }
};

struct RecvQueue {
  uint32_t cap = 0, max_sge = 0;
  std::vector<uint64_t> wr_id;
  std::vector<uint32_t> nsge;
  std::vector<Sge> sges;
  uint32_t head = 0, count = 0;
  void init(uint32_t c, uint32_t s) {
    cap = c;
    max_sge = s ? s : 1;
    wr_id.assign(cap, 0);
    nsge.assign(cap, 0);
    sges.assign(size_t(cap) * max_sge, Sge{});
  }
  Sge* sge(uint32_t idx) { return &sges[size_t(idx) * max_sge]; }
};

struct Srq {
  ibv_srq srq;  // must stay first
  Context* ctx;
  RecvQueue rq;
  uint32_t limit = 0;  // armed low-watermark (0: not armed)
  int qp_refs = 0;
};

// One item of the responder's ordered output (read data, atomic results, acks, naks).
struct RespItem {
  WireOp op;
  uint16_t syndrome = 0;
  uint32_t msn = 0;
  uint32_t psn = 0;
  uint64_t raddr = 0;      // ReadResp: next responder address to send from
  uint64_t remaining = 0;  // ReadResp: bytes still to send
  uint64_t offset = 0;     // ReadResp: offset within the read message
  Mr* mr = nullptr;
  uint64_t value = 0;      // AtomicResp
};

struct SendQueue {
  uint32_t cap = 0, max_sge = 0, max_inline = 0;
  std::vector<SendOp> ops;
  std::vector<Sge> sges;
  std::vector<uint8_t> inl;
  uint32_t head = 0;   // oldest not yet completed
  uint32_t send = 0;   // next to transmit (counted from head: head <= send <= tail)
  uint32_t tail = 0;   // next free slot (monotonic counters; index = n % cap)
  void init(uint32_t c, uint32_t s, uint32_t il) {
    cap = c;
    max_sge = s ? s : 1;
    max_inline = il;
    ops.assign(cap, SendOp{});
    sges.assign(size_t(cap) * max_sge, Sge{});
    inl.assign(size_t(cap) * (il ? il : 1), 0);
  }
  uint32_t size() const { return tail - head; }
  SendOp& at(uint32_t n) { return ops[n % cap]; }
  Sge* sge(uint32_t n) { return &sges[size_t(n % cap) * max_sge]; }
  uint8_t* inline_buf(uint32_t n) { return &inl[size_t(n % cap) * (max_inline ? max_inline : 1)]; }
};

// A WR being built through the ibv_qp_ex wr_* interface (between wr_start and wr_complete).
struct StagedOp {
  SendOp op;
  std::vector<Sge> sges;
  std::vector<uint8_t> inl;
};

// Reliable connected (one peer), DC initiator (a target per operation) or DC target (accepts
// any initiator that presents its key; one responder connection per initiator).
enum class QpKind : uint8_t { rc, dci, dct, dct_connection };

struct Qp {
  ibv_qp_ex qpx;  // must stay first; its first member is the ibv_qp
  QpKind kind = QpKind::rc;
  uint64_t dc_key = 0;               // DCT: the access key initiators must present
  Qp* dct = nullptr;                 // a DCT's responder connection: its DCT
  std::vector<Qp*> dc_connections;   // a DCT: one per initiator (endpoint, QPN) it has heard from
  Context* ctx;
  Pd* pd;
  Cq* scq;
  Cq* rcq;
  Srq* srq;
  ibv_qp_cap cap;
  bool sq_sig_all;
  bool ex_enabled = false;  // created with send_ops_flags: ibv_qp_to_qp_ex() answers
  uint64_t send_ops_flags = 0;
  ibv_qp_attr attr{};       // last applied attributes, for ibv_query_qp
  int attr_mask_seen = 0;

  // Destination (set at RTR).
  int remote_ep = -1;
  uint32_t remote_gen_bits = 0;

  // Requester.
  SendQueue sq;
  uint32_t next_psn = 0;
  uint32_t next_msn = 1;
  uint32_t acked_msn = 0;
  uint64_t rnr_resume_ns = 0;
  int rnr_retries_left = 0;
  int retries_left = 0;        // transport retries (retry_cnt) for dropped packets
  uint64_t last_progress_ns = 0;
  bool in_tx_list = false;

  // Responder.
  RecvQueue rq;
  uint32_t expected_psn = 0;
  uint32_t resp_msn = 0;        // messages completed as responder
  bool nak_outstanding = false;
  bool recv_active = false;     // a multi-segment SEND is being scattered
  uint64_t recv_wr_id = 0;
  std::vector<Sge> recv_sges;   // copy of the consumed receive WQE
  uint64_t recv_offset = 0;
  Mr* write_mr = nullptr;       // multi-segment WRITE in progress
  std::deque<RespItem> resp_q;
  bool in_resp_list = false;
  // The last RDMA WRITE segments executed as responder (state dumps: where data landed).
  struct LandedWrite {
    uint64_t raddr = 0, first_word = 0;
    uint32_t len = 0, psn = 0;
  };
  static constexpr uint32_t kLandedHistory = 4;
  LandedWrite landed[kLandedHistory];
  uint32_t landed_n = 0;

  // ibv_qp_ex batch: the first staged_n entries; entries are reused so that posting does
  // not allocate once the vectors have grown.
  std::vector<StagedOp> staged;
  size_t staged_n = 0;
  int staged_error = 0;

  // What the requester executed to completion, per operation kind (engine/op_log.hpp: written
  // under SOFTNIC_WQE_LOG). A QP that carries a devx QP's traffic is the devx engine's to report.
  struct OpTally {
    uint64_t wrs = 0, bytes = 0;
  };
  OpTally executed[kOpKinds];
  bool carries_devx_qp = false;
  bool op_log_written = false;

  ibv_qp* qp() { return &qpx.qp_base; }
};

inline Qp* to_qp(ibv_qp* q) { return reinterpret_cast<Qp*>(q); }
inline Qp* to_qp(ibv_qp_ex* q) { return reinterpret_cast<Qp*>(q); }
inline Cq* to_cq(ibv_cq* c) { return reinterpret_cast<Cq*>(c); }
inline Cq* to_cq(ibv_cq_ex* c) { return reinterpret_cast<Cq*>(c); }
inline Srq* to_srq(ibv_srq* s) { return reinterpret_cast<Srq*>(s); }
inline Pd* to_pd(ibv_pd* p) { return reinterpret_cast<Pd*>(p); }
inline Mr* to_mr(ibv_mr* m) { return reinterpret_cast<Mr*>(m); }

}  // namespace softnic
