// Decoding of one mlx5 send WQE into its fields: what softnic executes and what the profiler
// records for a WQE recovered from a GPU-resident send queue. RC WQEs, and DC initiator WQEs
// with their address vector (compact or full). Host-only (reads a linear copy of the WQE; ring
// wrap-around is the caller's concern).
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
  // DC initiator WQEs: the target named by the address vector.
  bool has_av = false;
  bool av_full = false;       // the 48-byte form
  uint32_t dct = 0;           // DCT number
  uint64_t dc_key = 0;
  uint16_t rlid = 0;
  uint8_t sl = 0;
  bool has_raddr = false;
  uint64_t raddr = 0;
  uint32_t rkey = 0;
  bool is_atomic = false;
  uint32_t atomic_bytes = 0;  // operand size: 4 or 8
  // Operands as the WQE gives them (4-byte ones zero-extended). CS: swap, compare; FA: add,
  // and for the masked FA its field boundary in `compare`. Masks only for the masked CS; the
  // plain forms leave them 0 (the NIC compares and swaps every bit).
  uint64_t swap_add = 0;
  uint64_t compare = 0;
  uint64_t swap_mask = 0, compare_mask = 0;
  bool inline_data = false;
  const uint8_t* inline_ptr = nullptr;  // into the caller's buffer
  uint32_t inline_len = 0;
  uint32_t num_sge = 0;
  ParsedSge sge[kMaxParsedSges]{};
  uint64_t length = 0;        // payload bytes (inline or sum of SGEs)
};

inline uint16_t load_be16(const uint8_t* p) { return uint16_t((uint16_t(p[0]) << 8) | p[1]); }
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
// dc_initiator: the WQE belongs to a DCI, so every WQE but NOP and DUMP carries an address
// vector after the control segment and the other segments follow it.
inline uint8_t parse_wqe(const uint8_t* w, uint32_t avail, ParsedWqe* out, bool dc_initiator = false) {
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
  if (p.ctrl.opcode == kOpNop) return 0;  // its other units may hold anything
  if (p.ctrl.opcode == kOpDump) return data(16, false);  // a local flushing read; no AV on a DCI
  // Where the segments after the control segment (and the address vector) begin.
  uint32_t at = 16;
  if (dc_initiator) {
    if (len < 16 + kAvCompactSize) return kSyndLocalQpOpErr;
    const uint32_t dqp = load_be32(w + 24);
    p.has_av = true;
    p.av_full = (dqp & kAvExtended) != 0;
    p.dct = dqp & kDctNumberMask;
    p.dc_key = load_be64(w + 16);
    p.sl = w[28] & 0xf;
    p.rlid = load_be16(w + 30);
    at += p.av_full ? kAvFullSize : kAvCompactSize;
    if (at > len) return kSyndLocalQpOpErr;
  }
  auto raddr = [&](uint32_t a) {
    p.has_raddr = true;
    p.raddr = load_be64(w + a);
    p.rkey = load_be32(w + a + 8);
  };
  switch (p.ctrl.opcode) {
    case kOpRdmaWrite:
    case kOpRdmaWriteImm:
      if (len < at + 16) return kSyndLocalQpOpErr;
      raddr(at);
      return data(at + 16, true);
    case kOpSend:
    case kOpSendImm:
      return data(at, true);
    case kOpRdmaRead:
      if (len < at + 16) return kSyndLocalQpOpErr;
      raddr(at);
      return data(at + 16, false);
    case kOpAtomicCs:
    case kOpAtomicFa:
    case kOpAtomicMaskedCs:
    case kOpAtomicMaskedFa: {
      const bool plain = p.ctrl.opcode == kOpAtomicCs || p.ctrl.opcode == kOpAtomicFa;
      if (plain ? p.ctrl.opmod != 0 : (p.ctrl.opmod != kOpmodExtAtomic4B && p.ctrl.opmod != kOpmodExtAtomic8B))
        return kSyndLocalQpOpErr;
      p.atomic_bytes = (plain || p.ctrl.opmod == kOpmodExtAtomic8B) ? 8 : 4;
      const bool two_segments = p.ctrl.opcode == kOpAtomicMaskedCs && p.atomic_bytes == 8;
      const uint32_t seg = at + 16, data_at = seg + (two_segments ? 32 : 16);
      if (len < data_at + 16) return kSyndLocalQpOpErr;
      raddr(at);
      p.is_atomic = true;
      if (p.atomic_bytes == 4) {
        // One segment of 32-bit fields; the masked FA's second half is never written.
        p.swap_add = load_be32(w + seg);
        p.compare = load_be32(w + seg + 4);
        if (p.ctrl.opcode == kOpAtomicMaskedCs) {
          p.swap_mask = load_be32(w + seg + 8);
          p.compare_mask = load_be32(w + seg + 12);
        }
      } else {
        p.swap_add = load_be64(w + seg);
        // The plain FA has no second operand: what its slot holds is not the WQE's.
        p.compare = p.ctrl.opcode == kOpAtomicFa ? 0 : load_be64(w + seg + 8);
        if (two_segments) {
          p.swap_mask = load_be64(w + seg + 16);
          p.compare_mask = load_be64(w + seg + 24);
        }
      }
      return data(data_at, false);
    }
    default:
      return kSyndLocalQpOpErr;
  }
}

// What a ConnectX leaves at an atomic's target, given its value before (old); callers keep the
// operand's width. The plain forms are the masked ones with every bit compared and swapped
// (CS) and no field boundary (FA).
// Masked compare-and-swap: the compare looks only at compare_mask's bits, the swap writes only
// swap_mask's.
inline uint64_t masked_compare_swap(uint64_t old, uint64_t swap, uint64_t compare, uint64_t swap_mask, uint64_t compare_mask) {
  return ((old ^ compare) & compare_mask) == 0 ? (old & ~swap_mask) | (swap & swap_mask) : old;
}
// Masked fetch-and-add: a set bit of the field boundary marks a field's most significant bit,
// and the carry out of it is dropped (boundary 0: one add; all ones: a bitwise XOR).
inline uint64_t masked_fetch_add(uint64_t old, uint64_t add, uint64_t boundary) {
  return ((old & ~boundary) + (add & ~boundary)) ^ ((old ^ add) & boundary);
}

}  // namespace sigmatrace::mlx5
