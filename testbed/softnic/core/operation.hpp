// A send-queue operation as the engine executes it, independent of how it was described
// (classic ibv_send_wr, ibv_qp_ex wr_* calls, or, later, an mlx5 WQE read from a doorbell).
#pragma once
#include <cstdint>

#include "core/packet.hpp"

namespace softnic {

struct Sge {
  uint64_t addr;
  uint32_t length;
  uint32_t lkey;
};

enum class OpKind : uint8_t { Send, SendImm, Write, WriteImm, Read, CmpSwap, FetchAdd };
constexpr uint32_t kOpKinds = 7;

struct SendOp {
  uint64_t wr_id = 0;
  OpKind kind = OpKind::Send;
  bool signaled = false;
  bool solicited = false;
  bool inlined = false;
  uint32_t num_sge = 0;
  uint32_t imm = 0;       // network byte order
  uint32_t rkey = 0;
  uint64_t raddr = 0;
  uint64_t arg0 = 0;      // compare (CmpSwap) or add (FetchAdd)
  uint64_t arg1 = 0;      // swap
  // The masked (extended) atomics; the plain ones compare and swap every bit, add without
  // field boundaries. atomic_bytes: the operand's width (4 or 8).
  uint64_t compare_mask = ~0ull;
  uint64_t swap_mask = ~0ull;
  uint64_t field_boundary = 0;
  uint8_t atomic_bytes = 8;
  bool result_big_endian = false;  // mlx5's 4-byte extended atomics return the old value big-endian
  // DC initiator: the target of this operation (a DCT number) and its access key.
  uint32_t dest_qpn = 0;
  uint64_t dc_key = 0;
  uint64_t length = 0;    // total bytes of the message

  // Transmission state.
  uint64_t sent = 0;        // bytes already put on the wire
  bool started = false;     // first packet sent
  bool validated = false;   // local SGEs checked
  uint32_t first_psn = 0;
  uint32_t msn = 0;
  uint64_t received = 0;    // RDMA_READ bytes scattered so far
  bool data_done = false;   // read/atomic response fully received
  bool dc_connect = false;  // DC: the first message since the initiator had nothing outstanding
  uint64_t ready_ns = 0;    // SOFTNIC_TX_DELAY_US / _TX_STALL: not sent before (0: not yet seen by transmit)
};

inline bool is_read_like(OpKind k) {
  return k == OpKind::Read || k == OpKind::CmpSwap || k == OpKind::FetchAdd;
}

}  // namespace softnic
