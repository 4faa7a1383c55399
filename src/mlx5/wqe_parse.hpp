// Decoding of one mlx5 send WQE (RC, no address vector) into its fields: what softnic executes
// and what the profiler records for a WQE recovered from a GPU-resident send queue.
// Host-only (reads a linear copy of the WQE; ring wrap-around is the caller's concern).
#pragma once
#include <cstdint>
#include <cstring>

#include "mlx5/wqe.hpp"

namespace sigmatrace::mlx5 {

constexpr uint32_t kMaxParsedSges = 30;

struct ParsedSge {
  uint64_t addr;
  uint32_t length;
  uint32_t lkey;
};

struct ParsedWqe {
  CtrlFields ctrl{};          // opcode, opmod, WQE index, QPN, ds, fm_ce_se
  uint32_t bytes = 0;         // ds * 16
  uint32_t wqebbs = 0;        // WQE basic blocks it occupies
  bool signaled = false;      // CQ_UPDATE
  uint32_t imm = 0;           // as stored (big-endian)
  bool has_raddr = false;
  uint64_t raddr = 0;
  uint32_t rkey = 0;
  bool is_atomic = false;
  uint64_t swap_add = 0;      // CS: swap; FA: add (masked: first operand)
  uint64_t compare = 0;       // CS: compare; masked FA: field boundary
  uint64_t swap_mask = 0, compare_mask = 0;  // masked 8-byte CS (second segment)
  bool inline_data = false;
  const uint8_t* inline_ptr = nullptr;  // into the caller's buffer
  uint32_t inline_len = 0;
  uint32_t num_sge = 0;
  ParsedSge sge[kMaxParsedSges]{};
  uint64_t length = 0;        // payload bytes (inline or sum of SGEs)
};

inline uint32_t load_be32(const uint8_t* p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return be32(v);
}
inline uint64_t load_be64(const uint8_t* p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return be64(v);
}

// Returns 0, or the CQE syndrome a ConnectX would report for a malformed or unsupported WQE
// (kSyndLocalQpOpErr, kSyndLocalLengthErr). `avail` = bytes readable at w (>= one WQEBB).
inline uint8_t parse_wqe(const uint8_t* w, uint32_t avail, ParsedWqe* out) {
  ParsedWqe& p = *out;
  CtrlSeg c;
  memcpy(&c, w, sizeof c);
  p.ctrl = decode_ctrl(c);
  p.bytes = uint32_t(p.ctrl.ds) * kDsUnit;
  p.wqebbs = p.ctrl.ds ? (p.bytes + kWqeBbSize - 1) / kWqeBbSize : 1;
  p.signaled = (p.ctrl.fm_ce_se & kCtrlCqUpdate) != 0;
  p.imm = c.imm;
  if (p.ctrl.ds == 0 || p.bytes > avail) return kSyndLocalQpOpErr;
  const uint32_t len = p.bytes;
  auto data = [&](uint32_t at, bool allow_inline) -> uint8_t {
    if (at >= len) return 0;
    uint32_t bc = load_be32(w + at);
    if (bc & kInlineFlag) {
      if (!allow_inline) return kSyndLocalQpOpErr;
      uint32_t n = bc & ~kInlineFlag;
      if (at + 4 + n > len) return kSyndLocalLengthErr;
      p.inline_data = true;
      p.inline_ptr = w + at + 4;
      p.inline_len = n;
      p.length = n;
      return 0;
    }
    for (; at + 16 <= len; at += 16) {
      if (p.num_sge == kMaxParsedSges) return kSyndLocalLengthErr;
      ParsedSge& s = p.sge[p.num_sge++];
      s.length = load_be32(w + at);
      s.lkey = load_be32(w + at + 4);
      s.addr = load_be64(w + at + 8);
      p.length += s.length;
    }
    return 0;
  };
  auto raddr = [&](uint32_t at) {
    p.has_raddr = true;
    p.raddr = load_be64(w + at);
    p.rkey = load_be32(w + at + 8);
  };
  switch (p.ctrl.opcode) {
    case kOpNop:
    case kOpDump:
      return 0;
    case kOpRdmaWrite:
    case kOpRdmaWriteImm:
      if (len < 32) return kSyndLocalQpOpErr;
      raddr(16);
      return data(32, true);
    case kOpSend:
    case kOpSendImm:
      return data(16, true);
    case kOpRdmaRead:
      if (len < 32) return kSyndLocalQpOpErr;
      raddr(16);
      return data(32, false);
    case kOpAtomicCs:
    case kOpAtomicFa:
    case kOpAtomicMaskedCs:
    case kOpAtomicMaskedFa: {
      if (len < 64) return kSyndLocalQpOpErr;
      raddr(16);
      p.is_atomic = true;
      p.swap_add = load_be64(w + 32);
      p.compare = load_be64(w + 40);
      uint32_t data_at = 48;
      bool plain = p.ctrl.opcode == kOpAtomicCs || p.ctrl.opcode == kOpAtomicFa;
      if (plain ? p.ctrl.opmod != 0 : p.ctrl.opmod != kOpmodExtAtomic8B)
        return kSyndLocalQpOpErr;  // 4-byte extended atomics are not decoded
      if (p.ctrl.opcode == kOpAtomicMaskedCs) {
        if (len < 80) return kSyndLocalQpOpErr;
        p.swap_mask = load_be64(w + 48);
        p.compare_mask = load_be64(w + 56);
        data_at = 64;
      }
      return data(data_at, false);
    }
    default:
      return kSyndLocalQpOpErr;
  }
}

}  // namespace sigmatrace::mlx5
