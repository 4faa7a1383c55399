// What the engine's files share (engine.cpp: thread loop and lifecycle; engine_requester.cpp;
// engine_responder.cpp; engine_qp_state.cpp): wire constants and small helpers. Private to softnic.
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/memory_registry.hpp"
#include "engine/engine.hpp"
#include "mlx5/wqe_parse.hpp"

namespace softnic::engine_detail {
inline constexpr uint32_t kSegment = 64 * 1024;  // payload bytes per packet
inline constexpr uint32_t kPsnMask = 0xffffff;
inline constexpr int kPollBudget = 256;
inline constexpr uint64_t kPeerCheckNs = 20'000'000;  // liveness of peers with outstanding work

// IB encoding of the RNR NAK timer (IBA table 45), in microseconds.
inline constexpr uint32_t kRnrTimerUs[32] = {
    655360, 10,    20,    30,    40,     60,     80,     120,    160,    240,    320,
    480,    640,   960,   1280,  1920,   2560,   3840,   5120,   7680,   10240,  15360,
    20480,  30720, 40960, 61440, 81920,  122880, 163840, 245760, 327680, 491520};

inline ibv_wc_opcode wc_opcode(OpKind k) {
  switch (k) {
    case OpKind::Send:
    case OpKind::SendImm: return IBV_WC_SEND;
    case OpKind::Write:
    case OpKind::WriteImm: return IBV_WC_RDMA_WRITE;
    case OpKind::Read: return IBV_WC_RDMA_READ;
    case OpKind::CmpSwap: return IBV_WC_COMP_SWAP;
    case OpKind::FetchAdd: return IBV_WC_FETCH_ADD;
  }
  return IBV_WC_SEND;
}

inline ibv_wc_status nak_status(NakCode c) {
  switch (c) {
    case NakCode::RemoteAccess: return IBV_WC_REM_ACCESS_ERR;
    case NakCode::InvalidRequest: return IBV_WC_REM_INV_REQ_ERR;
    case NakCode::RemoteOperation: return IBV_WC_REM_OP_ERR;
    case NakCode::Rnr: return IBV_WC_RNR_RETRY_EXC_ERR;
    default: return IBV_WC_RETRY_EXC_ERR;
  }
}

// Copies len bytes starting at message offset off out of (gather) or into (scatter) an
// SGE list. Returns false if a local key does not resolve.
template <bool kGather>
bool sge_copy(const Sge* sges, uint32_t n, uint64_t off, uint8_t* buf, uint64_t len) {
  for (uint32_t i = 0; i < n && len; ++i) {
    if (off >= sges[i].length) {
      off -= sges[i].length;
      continue;
    }
    uint64_t take = std::min<uint64_t>(sges[i].length - off, len);
    Mr* mr = mr_lookup(sges[i].lkey);
    if (!mr) return false;
    if (!(kGather ? mem_read(mr, sges[i].addr + off, buf, take)
                  : mem_write(mr, sges[i].addr + off, buf, take)))
      return false;
    buf += take;
    len -= take;
    off = 0;
  }
  return len == 0;
}

// Local SGEs must name registered memory of the QP's PD, in bounds, writable if data lands there.
inline bool sges_valid(const Pd* pd, const Sge* sges, uint32_t n, bool need_write) {
  for (uint32_t i = 0; i < n; ++i) {
    if (sges[i].length == 0) continue;
    Mr* mr = mr_lookup(sges[i].lkey);
    if (!mr || mr->pd->protection() != pd->protection() || !mr_covers(mr, sges[i].addr, sges[i].length)) return false;
    if (need_write && !(mr->access & IBV_ACCESS_LOCAL_WRITE)) return false;
  }
  return true;
}

// The value an atomic leaves at its target (old: the value before), in the operand's width.
inline uint64_t atomic_new_value(const PacketHeader* h, uint64_t old) {
  const uint64_t width = h->atomic_bytes == 4 ? 0xffffffffull : ~0ull;
  uint64_t v = h->op == WireOp::FetchAdd
                   ? sigmatrace::mlx5::masked_fetch_add(old, h->arg0, h->arg2)
                   : sigmatrace::mlx5::masked_compare_swap(old, h->arg1, h->arg0, h->arg3, h->arg2);
  return v & width;
}

inline void mark_active(std::vector<Qp*>& active, Qp* qp) {
  if (!qp->in_tx_list) {
    qp->in_tx_list = true;
    active.push_back(qp);
  }
}

}  // namespace softnic::engine_detail
